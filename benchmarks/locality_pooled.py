"""Locality under load (issue 32): certified ratios before and after the pooled-capacity bound, and the
bracket of ``--method exact``, on Philly jobs on few servers, in one run through the CLI.

    python benchmarks/locality_pooled.py --out runs/locality_pooled [--points 2000:15:1,2000:15:2] [--time-limit 240]

Per point ``jobs:servers:seed``: ``mlsched import philly --problem locality --jobs J --servers S --seed X``
(not timed), then one ``mlsched solve --json --time-limit L`` process per method (:func:`scale.solve_point`:
wall time and peak memory of the whole process).  Each solve reports the family's bound, the
pooled-capacity Lagrangian: its ratio is the certified ratio *after*.  *Before* is the same answer
against the bound the family reported before issue 32, every job alone (``bound.standalone_bound``,
computed here).  ``exact``'s row is its bracket (its answer over its own proven bound).  Points run one
at a time.  Needs the data sets (``../shared/data`` or ``$MLSCHED_SHARED_DATA``).  Writes
``locality_pooled.csv`` and ``locality_pooled.md``.

Why these points: on 15 servers (84-90 GPUs) the 2,000 jobs of Philly's window offer 2-4 times the
GPU-slots the cluster has while they arrive, so capacity binds (standalone bound 9,742 against
answers near 28,000 for seed 1); 40 servers bind less; the 200- and 500-job windows span a few slots.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import solve_point  # a sibling script, not a package

POINTS = [(200, 15, 1), (500, 15, 1), (2000, 15, 1), (2000, 15, 2), (2000, 40, 1)]
METHODS = ("greedy-rr", "srpt", "exact")
KEYS = ["jobs", "servers", "seed", "method", "status", "objective", "bound", "standalone", "before", "after", "wall_s", "peak_mb",
        "check", "message"]


def standalone(path: Path) -> float:
    """The family's bound before issue 32: every job alone from its arrival."""
    from mlsched_opt.io import load_instance
    from mlsched_opt.problems import REGISTRY
    from mlsched_opt.problems.locality.bound import standalone_bound
    from mlsched_opt.solvers import SolveOptions

    inst = load_instance(path)
    report = standalone_bound(inst, REGISTRY["locality"].resolve_options(inst, {}), SolveOptions(time_limit=600))
    assert report.bound is not None
    return report.bound


def run_point(folder: Path, jobs: int, servers: int, seed: int, limit: float) -> list[dict]:
    path = folder / f"philly-{jobs}j-{servers}s-seed{seed}.json"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "mlsched_opt", "--quiet", "import", "philly", "--problem", "locality", "--jobs",
                        str(jobs), "--servers", str(servers), "--seed", str(seed), "-o", str(path)], check=True)
    alone = standalone(path)
    rows = []
    for method in METHODS:
        row = {"jobs": jobs, "servers": servers, "seed": seed, "method": method, "standalone": alone,
               **solve_point(path, method, limit)}
        value = row["objective"]
        row["before"] = None if not value else round(value / alone, 4)
        row["after"] = row.pop("ratio_bound")
        rows.append(row)
        print(f"{jobs} jobs, {servers} servers, seed {seed}, {method}: {row['status']} {value} bound {row['bound']} "
              f"(standalone {alone:g}): before {row['before']}, after {row['after']}, {row['wall_s']} s", flush=True)
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| jobs | servers | seed | method | objective | pooled bound | standalone | ratio before | ratio after | wall s | peak MB "
             "| check |",
             "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        fmt = lambda v: "-" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v)  # noqa: E731
        lines.append(f"| {r['jobs']} | {r['servers']} | {r['seed']} | {r['method']} | {fmt(r['objective'])} | {fmt(r['bound'])} | "
                     f"{fmt(r['standalone'])} | {fmt(r['before'])} | {fmt(r['after'])} | {r['wall_s']} | {r['peak_mb']} | {r['check']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/locality_pooled")
    ap.add_argument("--points", default=",".join(f"{j}:{s}:{x}" for j, s, x in POINTS), help="jobs:servers:seed,...")
    ap.add_argument("--time-limit", type=float, default=240.0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for point in args.points.split(","):
        jobs, servers, seed = (int(x) for x in point.split(":"))
        rows += run_point(out, jobs, servers, seed, args.time_limit)
        with open(out / "locality_pooled.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=KEYS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        (out / "locality_pooled.md").write_text(table(rows))
    print(table(rows))


if __name__ == "__main__":
    main()
