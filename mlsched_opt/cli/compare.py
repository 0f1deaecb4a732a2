"""``mlsched compare FILE``: every method on one instance, checked, with ratios to the proven optimum."""

from __future__ import annotations

import json
import logging

import click

from .app import catalog_of, verb
from .params import METHODS, PROBLEM, SOLVERS, LazyHelp, family_for, load, methods_help, parse_sets, solver_options

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
      mlsched compare instances/demo.toml
      mlsched compare instances/demo.toml --set objective=servers --solvers highs
    """
    from ..bench import compare as run_compare, format_table
    from ..pipeline import solve_options
    from ..render import fmt

    inst = load(file, catalog_of(ctx))
    family = family_for(inst, problem)
    # oracles (exhaustive enumeration) run only when asked for: they are for tiny instances
    names = methods.split(",") if methods else [m.name for m in family.methods.values() if m.kind != "oracle" and m.available]
    if not methods and not as_json:
        for m in family.methods.values():
            if not m.available:
                log.info("skipping %s: needs %s (pip install -e '.[rl]')", m.name, m.requires)
    solver_list = [s.strip() for s in solvers.split(",") if s.strip()]
    pairs = []
    for name in names:
        m = family.method(name.strip())
        pairs += [(m.name, s) for s in solver_list] if m.kind == "exact" else [(m.name, solver)]
    for _, s in pairs:
        solve_options(s, time_limit, gap, threads, seed)
    options = family.resolve_options(inst, parse_sets(sets))
    base = solve_options(solver, time_limit, gap, threads, seed, certify)
    progress = None if as_json else log.info
    rows = run_compare(inst, family, pairs, options, base, progress=progress)
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in rows]))
    else:
        opts = options
        click.echo(f"{family.name} on {inst.name} ({len(inst.jobs)} jobs, {len(inst.servers)} servers; "
                   f"{', '.join(f'{k}={fmt(v)}' for k, v in opts.items())}; sense {family.sense(opts)}; gap {gap:g})")
        click.echo(format_table(rows))
        click.echo("ratio: how far from the proven optimum (1 = optimal); '<=' when only a bound is proven")
        for r in rows:
            if r.report.status == "disputed":
                click.echo(f"DISPUTED {r.label}: {r.report.message}", err=True)
    bad = [r for r in rows if (r.check is not None and not r.check.feasible) or r.report.status == "disputed"]
    return 1 if bad else 0
