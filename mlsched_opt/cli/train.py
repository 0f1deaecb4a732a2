"""``mlsched train``: a family's learned policy from generated traces; the same seed, the same policy."""

from __future__ import annotations

import logging
import sys

import click

from ..errors import OptionError
from .app import verb
from .params import PROBLEM, parse_sets

log = logging.getLogger("mlsched_opt.cli")


@verb("train")
@click.option("--problem", type=PROBLEM, required=True, help="Problem family with a learned method (harmony).")
@click.option("--episodes", type=click.IntRange(min=1), required=True, help="Reinforcement-learning episodes (one generated trace each).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seeds the traces, the networks and the exploration.")
@click.option("-o", "--output", required=True, metavar="MODEL", help="Where to write the trained policy (e.g. models/harmony-drl.pt).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Training option (see `mlsched info`).")
def train(problem, episodes, seed, output, sets) -> int:
    """Train a family's learned policy on generated traces; the same seed gives the same policy.

    \b
    Example:
      mlsched train --problem harmony --episodes 200 --seed 0 -o models/harmony-drl.pt
    """
    from ..io.files import check_writable
    from ..problems import get_family
    from ..problems.base import TrainSpec

    family = get_family(problem)
    if family.train is None:
        raise OptionError(f"problem {family.name} has no learned method to train", field="--problem")
    check_writable(output)  # before the training, not after it
    spec = TrainSpec(episodes=episodes, seed=seed, output=output, options=parse_sets(sets))
    if not log.isEnabledFor(logging.INFO):  # --quiet
        path = family.train(spec)
    elif sys.stderr.isatty():
        with click.progressbar(length=episodes, label=f"training {family.name}", file=sys.stderr,
                               item_show_func=lambda msg: msg) as bar:
            spec.progress = lambda episode, message: bar.update(episode - bar.pos, message)
            path = family.train(spec)
    else:  # a log file gets a line every 5% instead of a bar it cannot show
        every = max(1, episodes // 20)

        def progress(episode: int, message: str) -> None:
            if episode % every == 0 or episode == episodes:
                log.info("episode %d/%d: %s", episode, episodes, message)

        spec.progress = progress
        log.info("training %s: reward model, warm-up, then %d episodes", family.name, episodes)
        path = family.train(spec)
    click.echo(f"wrote {path}")
    return 0
