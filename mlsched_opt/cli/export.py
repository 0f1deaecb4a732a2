"""``mlsched export FILE -o MODEL``: the family's Pyomo model as MPS or LP."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import OptionError
from .app import catalog_of, verb
from .params import PROBLEM, catalog_files, family_for, load, parse_sets


@verb("export")
@click.argument("file")
@click.option("--problem", type=PROBLEM, default=None, help="Problem family (default: the instance's `problem`).")
@click.option("--format", "fmt", type=click.Choice(["mps", "lp"]), default=None, help="Default: from the output's extension.")
@click.option("-o", "--output", required=True, metavar="PATH", help="Where to write the model.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Problem option.")
@click.pass_context
def export(ctx, file, problem, fmt, output, sets) -> int:
    """Write the family's Pyomo model of FILE as MPS or LP, with readable names.

    That model is the exact formulation where the family's exact method solves it; where the exact
    method is something else (an oracle: an exhaustive search), the model is a surrogate of the
    problem, and the message says so.

    \b
    Example:
      mlsched export demo --format lp -o demo.lp
    """
    from ..io.files import atomic_path, check_writable
    from ..solvers import EXPORT_FORMATS, export_model

    inst = load(file, catalog_of(ctx))
    family = family_for(inst, problem)
    options = family.resolve_options(inst, parse_sets(sets))
    fmt = fmt or Path(output).suffix.lstrip(".").lower()
    if fmt not in EXPORT_FORMATS:
        raise OptionError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r} (use --format or a .mps/.lp name)",
                          field="--format")
    inputs = (file, *catalog_files(inst.catalog))
    check_writable(output, inputs)  # before building the model
    family.check_model_size(inst, "the exported model")
    model = family.build_model(inst, options)
    with atomic_path(output, inputs) as tmp:
        export_model(model, tmp, fmt)
    size = f"{model.nvariables()} variables, {model.nconstraints()} constraints"
    exact = family.methods.get("exact")
    if exact is not None and exact.kind == "exact":
        what = "the exact formulation, as --method exact solves it"
    elif exact is not None:  # the exact answer comes from a search, not from this model: say it is a stand-in
        what = f"the surrogate model, not the exact problem (--method exact is an {exact.kind}: {exact.summary})"
    else:
        what = "the family's model (it has no exact method)"
    click.echo(f"wrote {output} ({fmt}, {size}): {what}")
    return 0
