"""``mlsched generate``: a random instance of a family; the same seed gives the same file."""

from __future__ import annotations

import click

from ..errors import OptionError
from .app import catalog_of, verb
from .params import PROBLEM, catalog_files, parse_sets


def instance_output(ctx: click.Context, problem: str, output: str, sizes: dict[str, int | None]):
    """What ``generate`` and ``import`` check before any work: the sizes asked for against the
    limits, the output's format and writability (never over a catalog file); returns the family,
    the catalog and the input files."""
    from ..facade import check_sizes
    from ..io import load_catalog
    from ..io.files import check_writable, format_of
    from ..problems import get_family

    check_sizes(sizes, "--")
    format_of(output)
    family = get_family(problem)
    catalog = load_catalog(catalog_of(ctx))
    inputs = catalog_files(catalog)
    check_writable(output, inputs)
    return family, catalog, inputs


@verb("generate")
@click.option("--problem", type=PROBLEM, required=True, help="Problem family.")
@click.option("--jobs", type=click.IntRange(min=1), required=True)
@click.option("--servers", type=click.IntRange(min=1), required=True)
@click.option("--slots", type=click.IntRange(min=1), default=None, help="Time slots (slotted problems).")
@click.option("--seed", type=int, required=True)
@click.option("-o", "--output", required=True, metavar="FILE", help="Instance file to write (.toml or .json).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Generator option (see `mlsched info`).")
@click.pass_context
def generate(ctx, problem, jobs, servers, slots, seed, output, sets) -> int:
    """Write a random instance; the same seed gives the same file.

    \b
    Examples:
      mlsched generate --problem packing --jobs 12 --servers 4 --seed 7 -o my.toml
      mlsched generate --problem smd --jobs 30 --servers 2 --seed 1 --set sgd=sync -o smd.toml
    """
    from ..facade import generated_document
    from ..io import write_document

    if seed < 0:
        raise OptionError(f"seed must be >= 0, got {seed}", field="--seed")
    # the sizes a generator would draw are refused before it draws them, like a file's would be
    _family, catalog, inputs = instance_output(ctx, problem, output, {"jobs": jobs, "servers": servers, "slots": slots})
    doc = generated_document(problem, jobs, servers, seed, slots, parse_sets(sets), catalog, prefix="--")
    write_document(doc, output, inputs)
    click.echo(f"wrote {output}")
    return 0
