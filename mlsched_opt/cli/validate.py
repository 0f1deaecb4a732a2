"""``mlsched validate FILE``: read an instance as every command does, and summarize it."""

from __future__ import annotations

import click

from .app import catalog_of, verb
from .params import load


@verb("validate")
@click.argument("file")
@click.pass_context
def validate(ctx: click.Context, file: str) -> int:
    """Validate an instance FILE (.json or .toml) and summarize it.

    The file's `problem`, when it names one, must be a known problem family.

    \b
    Example:
      mlsched validate demo
    """
    from ..problems import known_problem

    inst = load(file, catalog_of(ctx))
    if inst.default_problem is not None:
        known_problem(inst.default_problem, file)
    gpus = sum(s.capacity.get("gpu", 0) for s in inst.servers)
    click.echo(f"{file}: valid ({inst.name})")
    click.echo(f"  servers: {len(inst.servers)} ({gpus:g} GPUs), jobs: {len(inst.jobs)}, resources: {', '.join(inst.resource_names())}")
    if inst.slots:
        click.echo(f"  time: {inst.slots} slots of {inst.slot_s:g} s")
    click.echo(f"  sha256: {inst.sha256}")
    return 0
