"""An off-the-shelf RL baseline for harmony: sb3-contrib's maskable PPO trained on
:class:`~mlsched_opt.problems.harmony.rl.gym_env.HarmonyEnv`, against our drl policy and the
standalone heuristics, on the held-out test traces (issue 21).

    python benchmarks/harmony_gym.py --world default --timesteps 20000 --seed 0 --out runs/harmony_gym

Needs the ``sb3`` extra (gymnasium, stable-baselines3, sb3-contrib; torch from the ``rl`` extra).
``MaskablePPO("MlpPolicy", env, seed=..., device="cpu")`` with the library's defaults (but ``--gamma``,
1 by default) trains on a stream of training traces (the ``train`` split of
:func:`~mlsched_opt.problems.harmony.rl.train.trace_seed`: 40 jobs, 6 servers, load 0.8), torch on one
thread; it is then run deterministically (argmax over
the valid actions) on the 10 test traces (test seeds 3,000,000 + k), as are our drl policy
(``--model``, default the shipped one), ``standalone`` and ``standalone-defer``, all through the
same simulator with the same deferral rule (``--defer-max``).  The table gives each method's mean
over the traces of the average JCT (intervals); ``harmony_gym-<world>.md`` and ``.csv`` (one row
per method, each trace's average JCT too) are written into ``--out``.  A drl policy that fails to
load (its network changed since it was trained) is reported as an error row, not a crash.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from mlsched_opt.problems.harmony.baselines import make_heuristic
from mlsched_opt.problems.harmony.options import DEFER_MAX
from mlsched_opt.problems.harmony.rl.gym_env import HarmonyEnv
from mlsched_opt.problems.harmony.rl.train import make_trace, trace_seed
from mlsched_opt.problems.harmony.simulate import simulate
from mlsched_opt.problems.harmony.view import HarmonyView

JOBS, SERVERS, LOAD = 40, 6, 0.8
#: training traces are drawn among this many of the seed's train split
TRAIN_POOL = 10_000


def train_ppo(world: str, timesteps: int, seed: int, defer_max: int, gamma: float) -> tuple[Any, float]:
    """Maskable PPO trained for ``timesteps`` env steps; returns the model and its wall time (s)."""
    import torch
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(1)

    def factory(rng: np.random.Generator) -> HarmonyView:
        return make_trace(trace_seed("train", seed, int(rng.integers(TRAIN_POOL))), JOBS, SERVERS, world, LOAD)

    env = HarmonyEnv(factory, defer_max=defer_max)
    start = time.perf_counter()
    model = MaskablePPO("MlpPolicy", env, gamma=gamma, seed=seed, device="cpu", verbose=0)
    model.learn(total_timesteps=timesteps)
    return model, time.perf_counter() - start


#: per trace: (average JCT, deferrals: (job, interval) pairs held back by choice)
Result = list[tuple[float, int]]


def run_ppo(model: Any, views: list[HarmonyView], defer_max: int) -> Result:
    env = HarmonyEnv(views, defer_max=defer_max)
    out = []
    for view in views:
        obs, _ = env.reset(options={"view": view})
        done = False
        info: dict[str, Any] = {}
        while not done:
            action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
            obs, _, done, _, info = env.step(int(action))
        out.append((float(info["avg_jct"]), int(info["run"].deferrals)))
    return out


def run_drl(model: str | None, views: list[HarmonyView], defer_max: int) -> Result:
    from mlsched_opt.problems.harmony.rl.policy import load_policy

    out = []
    for view in views:
        run = simulate(view, load_policy(model, view).chooser(view), defer_max=defer_max)
        out.append((float(run.jct(view).mean()), run.deferrals))
    return out


def run_heuristic(name: str, views: list[HarmonyView], defer_max: int) -> Result:
    out = []
    for view in views:
        run = simulate(view, make_heuristic(name), defer_max=defer_max)
        out.append((float(run.jct(view).mean()), run.deferrals))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", default="default", choices=("default", "hard", "gavel"))
    ap.add_argument("--timesteps", type=int, default=20_000, help="maskable PPO's training env steps")
    ap.add_argument("--seed", type=int, default=0, help="PPO's seed and the training traces' seed")
    ap.add_argument("--out", default="runs/harmony_gym", help="folder for the table (.md) and the CSV")
    ap.add_argument("--model", default=None, help="our drl policy file (default: the shipped models/harmony-drl.pt)")
    ap.add_argument("--defer-max", type=int, default=DEFER_MAX, help="the simulator's deferral rule, for every method")
    ap.add_argument("--gamma", type=float, default=1.0,
                    help="PPO's discount per step (default 1: the return is minus the average JCT; steps are decisions, not "
                         "intervals, so sb3's 0.99 discounts the later intervals' cost by every deferral step and pays for deferring)")
    ap.add_argument("--traces", type=int, default=10, help="held-out test traces (test seeds 3,000,000 + k)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    D = args.defer_max
    views = [make_trace(trace_seed("test", args.seed, k), JOBS, SERVERS, args.world, LOAD) for k in range(args.traces)]

    rows: list[dict[str, Any]] = []

    def add(method: str, fn: Any, train_s: float | None = None, timesteps: int | None = None) -> None:
        start = time.perf_counter()
        try:
            result: Result | None = fn()
            error = ""
        except Exception as exc:  # noqa: BLE001 -- the drl network is changing: report the failure, keep the other rows
            result, error = None, f"{type(exc).__name__}: {exc}"
            print(f"{method}: {error}", file=sys.stderr)
        rows.append({"method": method, "jct": None if result is None else [x[0] for x in result],
                     "deferrals": None if result is None else float(np.mean([x[1] for x in result])),
                     "error": error, "train_s": train_s, "timesteps": timesteps, "eval_s": time.perf_counter() - start})

    model, train_s = train_ppo(args.world, args.timesteps, args.seed, D, args.gamma)
    add(f"maskable PPO (sb3-contrib, gamma={args.gamma:g})", lambda: run_ppo(model, views, D), train_s, args.timesteps)
    add("drl (ours)", lambda: run_drl(args.model, views, D))
    add("standalone", lambda: run_heuristic("standalone", views, D))
    add(f"standalone-defer (defer_max={D})", lambda: run_heuristic("standalone-defer", views, D))

    def fmt(x: float | None, spec: str) -> str:
        return "" if x is None else format(x, spec)

    lines = [f"world {args.world}, {args.traces} test traces ({JOBS} jobs, {SERVERS} servers, load {LOAD}), seed {args.seed}",
             "",
             "| method | mean avg JCT (intervals) | deferrals per trace | training wall (s) | training timesteps |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        mean = "error: " + r["error"].replace("|", "/") if r["jct"] is None else f"{np.mean(r['jct']):.2f}"
        lines.append(f"| {r['method']} | {mean} | {fmt(r['deferrals'], '.1f')} | {fmt(r['train_s'], '.1f')} | {fmt(r['timesteps'], 'd')} |")
    table = "\n".join(lines) + "\n"
    print(table, end="")
    stem = out / f"harmony_gym-{args.world}"
    stem.with_suffix(".md").write_text(table)
    with open(stem.with_suffix(".csv"), "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["world", "seed", "method", "mean_avg_jct", "mean_deferrals", "train_s", "timesteps", "eval_s", "error",
                         *(f"test{k}" for k in range(args.traces))])
        for r in rows:
            per = r["jct"] or [None] * args.traces
            writer.writerow([args.world, args.seed, r["method"], fmt(None if r["jct"] is None else float(np.mean(r["jct"])), ".6f"),
                             fmt(r["deferrals"], ".2f"), fmt(r["train_s"], ".2f"), fmt(r["timesteps"], "d"), f"{r['eval_s']:.2f}",
                             r["error"],
                             *(fmt(x, ".6f") for x in per)])
    print(f"wrote {stem.with_suffix('.md')} and {stem.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
