"""``mlsched compare FILE``: every method on one instance, checked, with ratios to the proven optimum."""

from __future__ import annotations

import json
import logging

import click

from .app import catalog_of, verb
from .params import METHODS, PROBLEM, SOLVERS, LazyHelp, load, methods_help, parse_sets, solver_options

log = logging.getLogger("mlsched_opt.cli")


@verb("compare")
@click.argument("file")
@click.option("--problem", type=PROBLEM, default=None, help="Problem family (default: the instance's `problem`).")
@click.option("--methods", type=METHODS, default=None, metavar="METHOD,...", cls=LazyHelp, help_from=methods_help)
@click.option("--solvers", "solvers", type=SOLVERS, default="highs,cpsat", show_default=True, help="Solvers for the exact method.")
@solver_options
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@click.pass_context
def compare(ctx, file, problem, methods, solvers, sets, certify, solver, time_limit, gap, threads, seed, as_json) -> int:
    """Run methods on FILE, check every answer, and print ratios to the proven optimum.

    The exact method runs once per solver in --solvers; the LP relaxation adds a bound.

    \b
    Example:
      mlsched compare demo
      mlsched compare demo --set objective=servers --solvers highs
    """
    from ..comparison import compare as run_compare

    solver_list = [s.strip() for s in solvers.split(",") if s.strip()]
    names = [m.strip() for m in methods.split(",")] if methods else None
    inst = load(file, catalog_of(ctx))
    if names is None and not as_json:
        from ..pipeline import family_for

        for m in family_for(inst, problem).methods.values():
            if not m.available:
                log.info("skipping %s: needs %s (pip install -e '.[rl]')", m.name, m.requires)
    cmp = run_compare(inst, names, problem=problem, solvers=solver_list, solver=solver,
                      time_limit=time_limit, gap=gap, threads=threads, seed=seed, certify=certify, options=parse_sets(sets),
                      progress=None if as_json else log.info)
    if as_json:
        click.echo(json.dumps(cmp.to_dict()))
    else:
        click.echo(str(cmp))
        for r in cmp.disputed:
            click.echo(f"DISPUTED {r.label}: {r.report.message}", err=True)
    return 1 if cmp.failed else 0
