"""``mlsched check FILE SOLUTION``: the independent checker's verdict on a solution file."""

from __future__ import annotations

import json

import click

from .app import catalog_of, verb
from .params import PROBLEM, load, parse_sets


@verb("check")
@click.argument("file")
@click.argument("solution")
@click.option("--problem", type=PROBLEM, default=None, help="Problem family (default: the solution's).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Problem option (default: the instance's options, else the family's defaults; never the solution's).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.pass_context
def check(ctx, file, solution, problem, sets, as_json) -> int:
    """Check SOLUTION (JSON) against the instance FILE, trusting nothing but the decision.

    The problem is the instance's with its options and --set: a solution that records other
    problem options breaks the rule `problem-options`.  Exit 0 when the decision is feasible
    and the stated objective is right; 1 otherwise, with every violation listed.

    \b
    Example:
      mlsched solve demo --method ffd --out ffd.sol.json
      mlsched check demo ffd.sol.json
    """
    from ..pipeline import check as check_file

    result = check_file(load(file, catalog_of(ctx)), solution, problem=problem, options=parse_sets(sets))
    if as_json:
        click.echo(json.dumps(result.to_dict()))
    elif result.feasible:
        click.echo(f"ok: feasible, objective {result.objective:g} as stated")
    else:
        click.echo(f"{len(result.violations)} violation(s):")
        for v in result.violations:
            click.echo(f"  {v}")
    return 0 if result.feasible else 1
