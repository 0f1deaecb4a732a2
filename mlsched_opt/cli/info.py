"""``mlsched info``: problems, methods, options, trace sources, solvers, the catalog and the bundled instances."""

from __future__ import annotations

import click

from ..errors import UserError
from .app import catalog_of, verb


@verb("info")
@click.pass_context
def info(ctx) -> int:
    """List problems, their methods and options, solvers on this machine, the workload catalog and the bundled instances."""
    from ..io import load_catalog
    from ..problems import REGISTRY
    from ..solvers import available_solvers
    from ..traces import source_table

    click.echo("problems:")
    for fam in REGISTRY.values():
        click.echo(f"  {fam.name}: {fam.summary}")
        for m in fam.methods.values():
            g = f" [guarantee: {m.guarantee}]" if m.guarantee else ""
            click.echo(f"    --method {m.name} ({m.kind}): {m.summary}{g}")
        for o in fam.options:
            kind = " [problem]" if o.problem else ""
            short = f" (solve {o.flag})" if o.flag else ""
            default = o.default if o.default not in ("", None) else "none"
            click.echo(f"    --set {o.name}=<{o.describe()}> (default {default}){kind}{short}: {o.help}")
        for command, opts in (("generate", fam.generate_options), ("train", fam.train_options)):
            for o in opts:
                click.echo(f"    {command} --set {o.name}=<{o.describe()}> (default {o.default}): {o.help}")
        if fam.trace is not None:
            click.echo(f"    import from: {', '.join(fam.trace.sources)}")
            for o in fam.trace.options:
                click.echo(f"    import --set {o.name}=<{o.describe()}> (default {o.default}): {o.help}")
    click.echo("trace sources (mlsched import SOURCE):")
    for src in source_table().values():
        click.echo(f"  {src.name}: {src.summary}")
        for o in src.options:
            click.echo(f"    import --set {o.name}=<{o.describe()}> (default {o.default}): {o.help}")
    click.echo("  gavel: the workload catalog from Gavel's throughput file (mlsched import gavel -o models/)")
    click.echo("solvers:")
    for name, version in available_solvers().items():
        click.echo(f"  {name}: {version or 'not installed'}")
    try:
        cat = load_catalog(catalog_of(ctx))
        click.echo(f"workload catalog ({' over '.join(str(d) for d in reversed(cat.directories))}): {', '.join(cat)}")
    except UserError as exc:
        click.echo(f"workload catalog: unavailable ({exc.message()})")
    from ..facade import examples

    bundled = examples()
    where = next(iter(bundled.values())).parent if bundled else "none installed"
    click.echo(f"bundled instances, by name (mlsched solve demo; ms.load(\"demo\")) ({where}): {', '.join(bundled)}")
    return 0
