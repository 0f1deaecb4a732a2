"""``mlsched import SOURCE``: a real public trace as an instance (or Gavel's file as the catalog)."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from ..errors import OptionError
from .app import catalog_of, verb
from .generate import instance_output
from .params import COUNT_OR_ALL, PROBLEM, parse_sets

log = logging.getLogger("mlsched_opt.cli")


@verb("import")
@click.argument("source", metavar="SOURCE")
@click.option("--problem", type=PROBLEM, default=None, help="Problem family to import into (see `mlsched info`); not for gavel.")
@click.option("-o", "--output", required=True, metavar="FILE",
              help="Instance file to write (.toml or .json); for gavel, the catalog directory.")
@click.option("--jobs", type=COUNT_OR_ALL, default=None,
              help="Jobs in the window, or `all` (the default): the whole trace, up to the jobs limit (1,000,000).")
@click.option("--servers", type=click.IntRange(min=1), default=None, help="Servers of the cluster (default: all).")
@click.option("--slots", type=click.IntRange(min=1), default=None, help="Time slots (default: the family's, or what the arrivals need).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of every draw (window, servers, workloads).")
@click.option("--data", default=None, metavar="DIR",
              help="Folder of the data sets (layout of ../shared/data); default $MLSCHED_SHARED_DATA, else ../shared/data.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Source or family option (see below).")
@click.pass_context
def import_(ctx, source, problem, output, jobs, servers, slots, seed, data, sets) -> int:
    """Turn a real trace SOURCE into an instance: alibaba, philly, pollux (jobs) or gavel (the catalog).

    Same arguments, same file.  The instance's `source` names the file, the rows, the seed and
    every assumption.

    \b
    Examples:
      mlsched import alibaba --problem packing --jobs 200 -o pods.toml
      mlsched import alibaba --problem hetero --jobs 100 --set pods=gpuspec33 -o hetero.toml
      mlsched import philly --problem oasis --jobs 50 --servers 20 --seed 3 -o philly.toml
      mlsched import philly --problem locality --jobs all --servers 120 -o philly-all.json
      mlsched import pollux --problem locality --set workload=2 --set cluster=pollux -o pollux.toml
      mlsched import gavel -o models/
    """
    from ..io import from_document, write_document
    from ..io.shared_data import use_data
    from ..traces import SOURCES, data_dir, import_instance

    if source not in SOURCES:
        raise OptionError(f"unknown source {source!r}; choose from {', '.join(SOURCES)}", field="SOURCE")
    folder = data_dir(data)
    if source == "gavel":
        from ..traces.gavel import import_catalog

        if problem or jobs or servers or slots or sets:
            raise OptionError("gavel writes the workload catalog: it takes only -o DIR (and --data)", field="SOURCE")
        layer = catalog_of(ctx)
        base = Path(layer) if layer else None  # entries kept are the catalog's in use
        for line in import_catalog(folder, Path(output), base):
            click.echo(line)
        return 0
    if not problem:
        raise OptionError(f"importing {source} needs --problem (see `mlsched info`)", field="--problem")
    family, catalog, inputs = instance_output(ctx, problem, output, {"jobs": jobs, "servers": servers, "slots": slots})
    with use_data(folder):  # the files a family reads itself (Pollux placements) come from --data too
        doc, notes = import_instance(source, family, folder, jobs, servers, slots, seed, parse_sets(sets), catalog)
    inst = from_document(doc, file=output, catalog=catalog)  # an importer bug must not produce an invalid file
    write_document(doc, output, inputs)
    for note in notes:
        log.info("note: %s", note)
    gpus = sum(s.capacity.get("gpu", 0) for s in inst.servers)
    click.echo(f"wrote {output} ({len(inst.jobs):,} jobs, {len(inst.servers):,} servers, {gpus:,g} GPUs)")
    return 0
