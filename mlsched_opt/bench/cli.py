"""``mlsched bench SUITE --out DIR``: run a benchmark suite, in parallel, resumably.

The main CLI imports this module only when ``bench`` is run or listed (``cli._Commands``); the
heavy imports are made inside the function.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

from ..cli.app import Verb, verb

logger = logging.getLogger(__name__)

EXAMPLES = """
\b
Examples:
  mlsched bench tests/data/bench_packing.toml --out runs/packing
  mlsched bench suite.toml --out runs/s --workers 2 --set reference.time_limit=10
  mlsched bench suite.toml --out runs/s --executor dask --scheduler tcp://10.0.0.5:8786
  mlsched bench suite.toml --out runs/s --resume          # after a crash or Ctrl-C: runs only what is missing
"""


def _summary_table(summary) -> str:
    from .report import _num

    lines = [["method", "setting", "n", "ratios", "median", "p90", "worst", "median s", "errors"]]
    for s in summary:
        lines.append([s["label"], s["setting"], str(s["n"]), str(s["n_ratio"]), _num(s["median_ratio"]), _num(s["p90_ratio"]),
                      _num(s["worst_ratio"]), _num(s["median_wall_s"], 3), str(s["errors"])])
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


class BenchVerb(Verb):
    """``bench`` ends through the interpreter's teardown: its process pools and Dask cluster shut down there,
    and a signal unwinds it (no worker is orphaned)."""

    fast_exit = False

    def invoke(self, ctx: click.Context):
        from ..cli.app import COMMAND
        from ..cli.signals import unwind_instead

        if COMMAND["watchdog"]:  # a process of its own (in-process callers keep their own handlers)
            unwind_instead()
        return super().invoke(ctx)


@verb("bench", cls=BenchVerb, epilog=EXAMPLES)
@click.argument("suite_file", metavar="SUITE")
@click.option("--out", "out", required=True, metavar="DIR", help="Folder of the results (created if missing).")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="local: a process pool on this machine; dask: a Dask LocalCluster, or the cluster at --scheduler.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: this machine's cores); one solver thread each.")
@click.option("--scheduler", default=None, metavar="ADDRESS", help="A running Dask scheduler (tcp://host:8786), with --executor dask.")
@click.option("--resume", is_flag=True, help="Keep the rows already in DIR/results.csv and run only the missing tasks.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a key of the suite: a dotted path and a TOML value, e.g. --set reference.time_limit=5.")
@click.pass_context
def bench(ctx: click.Context, suite_file: str, out: str, executor: str, workers: int | None, scheduler: str | None,
          resume: bool, sets: tuple[str, ...]) -> int:
    """Run the benchmark SUITE (TOML): every method on every instance, checked, with ratios.

    Writes DIR/results.csv (row by row, so that --resume continues after a crash),
    results.parquet (with pyarrow), summary.csv, plots and report.md.  The suite format is
    in docs/reference/suite-format.md.  Exit 0; 1 when a row needs attention (an error, an answer the checker
    rejects, a disputed optimum); 2 for a mistake in the suite or the options.
    """
    import time

    from .. import __version__
    from ..clock import usable_cpus
    from ..errors import OptionError
    from . import executors, tasks as tasks_mod
    from .report import ResultsWriter, dump_suite, finish, is_overall, read_results, write_results
    from .suite import load_suite

    if scheduler and executor != "dask":
        raise OptionError("--scheduler needs --executor dask", field="--scheduler")
    if scheduler and workers:
        raise OptionError("--workers sizes a local pool or LocalCluster; a running cluster has its own workers", field="--workers")
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise OptionError(f"{out} exists and is not a folder", field="--out")
    results = folder / "results.csv"
    if results.exists() and not resume:
        raise OptionError(f"{results} exists: pass --resume to continue that run, or choose another --out", field="--out")
    catalog = (ctx.obj or {}).get("catalog")

    suite = load_suite(suite_file, sets, catalog)
    todo = tasks_mod.expand(suite)
    folder.mkdir(parents=True, exist_ok=True)
    existing = read_results(results) if resume else []
    current = {t.key: t for t in todo}
    done = {r["key"]: r for r in existing if r["key"] in current}
    stale = [r for r in existing if r["key"] not in current]
    notes = []
    if stale:
        stale_path = folder / "results.stale.csv"
        write_results(stale_path, [*read_results(stale_path), *stale])
        notes.append(f"{len(stale)} rows of results.csv belong to no task of this suite (another suite, options or "
                     f"version): moved to results.stale.csv")
    pending = [t for t in todo if t.key not in done]
    dump_suite(folder, suite)

    n_workers = None if scheduler else (workers or usable_cpus())
    where = f"{executor}" + (f" at {scheduler}" if scheduler else f", {n_workers} workers")
    logger.info("bench %s: %d tasks, %d already in %s, running %d (%s)", suite.name, len(todo), len(done), results,
                len(pending), where)
    new_rows: list[dict] = []
    writer = ResultsWriter(results, keep=[r for r in existing if r["key"] in current])
    log = folder / "errors.log"

    def on_row(row: dict) -> None:
        tb = row.pop("_traceback", None)
        writer.write(row)
        new_rows.append(row)
        if tb:
            with log.open("a") as fh:
                fh.write(f"--- {row['instance']} / {row['label']} (key {row['key']})\n{tb}\n")

    start = time.perf_counter()
    try:
        executors.execute(pending, on_row, executor=executor, workers=workers, scheduler=scheduler)
    finally:
        writer.close()
    elapsed = time.perf_counter() - start

    by_key = {**done, **{r["key"]: r for r in new_rows}}
    rows = [by_key[t.key] for t in todo if t.key in by_key]
    meta = {"executor": executor, "workers": n_workers, "scheduler": scheduler, "ran": len(pending),
            "skipped": len(done), "elapsed_s": elapsed, "version": __version__, "notes": notes}
    result = finish(folder, suite, rows, meta)
    click.echo(_summary_table([s for s in result["summary"] if is_overall(s)] or result["summary"]))
    for note in result["notes"]:
        logger.info("note: %s", note)
    click.echo(f"wrote {folder}/results.csv, summary.csv, report.md ({len(rows)} rows, {elapsed:.1f} s)")
    attention = [r for r in rows if r["status"] in ("error", "disputed") or r["check"] == "failed"]
    if attention:
        click.echo(f"{len(attention)} rows need attention (error, failed check or disputed): see {folder}/report.md", err=True)
        return 1
    return 0
