"""hetero on capacity-binding instances (issue 32): the paper's ``sampling``, the new ``sampling-ls``
and the anytime ``exact``, each certified against the proven bound, from 200 to 2,000 jobs.

    python benchmarks/hetero_hard.py --out runs/hetero_hard [--time-limit 240] [--points alibaba:2000,philly:2000]

Every point is ``mlsched import`` then one ``mlsched solve --json --time-limit L`` process per
method, as a user runs them (:func:`scale.solve_point`: wall time and peak memory of the whole
process).  ``sampling`` and ``sampling-ls`` are certified by the family's bound (the configuration
LP by column generation, reported by ``solve``), ``exact`` by its own proven bound: the ratio is the
bracket.  Each row also gives ``alone``, the bound "each job at its best" (every job priced at zero
GPU prices: what the bound would be if capacity did not bind), computed in this process, and
``lp / alone``: how much capacity binds.

Instances: Alibaba's multi-GPU pods on the whole cluster, every job allowed every GPU (the issue's
``--set pods=multigpu50 --set workers=cluster``; at 200 and 500 jobs on the whole cluster capacity
hardly binds, so also on nodes in proportion to the jobs, 1,213 x jobs / 2,000), and Philly jobs
(mostly one GPU each) on about one GPU per job (``--servers`` = jobs / 5, the least that holds them
with the default seed; 450 servers instead of 400 already make the bound "each job at its best"
within 0.8 % of the LP at 2,000 jobs).  Needs the data sets (``../shared/data`` or
``$MLSCHED_SHARED_DATA``).  Writes ``hetero_hard.csv`` and ``hetero_hard.md``.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

#: label -> (jobs, import arguments after ``mlsched import``)
POINTS = {
    "alibaba:200": (200, ["alibaba", "--set", "pods=multigpu50", "--set", "workers=cluster"]),
    "alibaba:500": (500, ["alibaba", "--set", "pods=multigpu50", "--set", "workers=cluster"]),
    "alibaba:2000": (2000, ["alibaba", "--set", "pods=multigpu50", "--set", "workers=cluster"]),
    "alibaba-121:200": (200, ["alibaba", "--servers", "121", "--set", "pods=multigpu50", "--set", "workers=cluster"]),
    "alibaba-303:500": (500, ["alibaba", "--servers", "303", "--set", "pods=multigpu50", "--set", "workers=cluster"]),
    "philly:200": (200, ["philly", "--servers", "42"]),
    "philly:500": (500, ["philly", "--servers", "100"]),
    "philly:2000": (2000, ["philly", "--servers", "400"]),
}
METHODS = ("sampling", "sampling-ls", "exact")
KEYS = ["point", "method", "servers", "gpus", "jobs", "alone", "lp_over_alone", "time_limit", "wall_s", "within_limit", "peak_mb",
        "status", "objective", "bound", "ratio_bound", "check", "method_s", "message"]


def _scale():
    """``benchmarks/scale.py`` (its process runner and instance sizes)."""
    spec = importlib.util.spec_from_file_location("scale", Path(__file__).with_name("scale.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def alone_bound(path: Path) -> float:
    """``sum_i min_n J_i(n) / S``: every job at its best with the cluster to itself (a lower bound:
    jobs the pricing leaves undecided count by their interval bounds)."""
    import numpy as np

    from mlsched_opt.io import load_instance
    from mlsched_opt.problems.hetero.pricing import Pricer
    from mlsched_opt.problems.hetero.view import hetero_view

    view = hetero_view(load_instance(path))
    priced = Pricer(view, "ring").price(np.zeros(view.G))
    assert priced is not None
    return float(priced.bound.sum())


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table; the ratio to 8 decimals (the exact brackets are within 1e-6)."""
    lines = ["| instance | GPUs | jobs | LP / alone | method | wall s (limit) | peak MB | objective | bound | ratio <= (certified) "
             "| check |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        fmt = lambda v, d=6: "-" if v is None or v == "" else f"{v:.{d}g}" if isinstance(v, float) else str(v)  # noqa: E731
        objective, bound = r.get("objective"), r.get("bound")
        ratio = max(objective / bound, 1.0) if objective and bound else None
        lines.append(f"| {r['point']} | {r.get('gpus', '-')} | {r.get('jobs', '-')} | {fmt(r.get('lp_over_alone'), 4)} | {r['method']} | "
                     f"{r.get('wall_s', '-')} ({r['time_limit']:g}) | {r.get('peak_mb', '-')} | {fmt(objective, 7)} | "
                     f"{fmt(bound, 7)} | {'-' if ratio is None else f'{ratio:.8f}'} | {r.get('check', '-')} |")
    return "\n".join(lines) + "\n"


def read_rows(path: Path) -> list[dict]:
    """The rows of a ``hetero_hard.csv`` with their numbers back (to redraw the table)."""
    rows = []
    with open(path, newline="") as fh:
        for raw in csv.DictReader(fh):
            row: dict = dict(raw)
            for key in ("time_limit", "wall_s", "objective", "bound", "lp_over_alone", "alone"):
                row[key] = float(raw[key]) if raw.get(key) else None
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/hetero_hard")
    ap.add_argument("--time-limit", type=float, default=240.0)
    ap.add_argument("--points", default=",".join(POINTS), help=f"of: {', '.join(POINTS)}")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--redraw", action="store_true", help="only redraw the table from the run's hetero_hard.csv")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.redraw:
        (out / "hetero_hard.md").write_text(table(read_rows(out / "hetero_hard.csv")))
        print((out / "hetero_hard.md").read_text())
        return
    scale = _scale()
    rows: list[dict] = []
    for point in args.points.split(","):
        if point not in POINTS:
            sys.exit(f"unknown point {point!r} (known: {', '.join(POINTS)})")
        jobs, source = POINTS[point]
        path = out / f"{point.replace(':', '-')}.json"
        if not path.exists():
            done = subprocess.run([sys.executable, "-m", "mlsched_opt", "import", *source, "--problem", "hetero", "--jobs", str(jobs),
                                   "-o", str(path)], capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{point}: import failed: {done.stderr.strip()[-300:]}")
        meta = scale._size(path)
        alone = alone_bound(path)
        lp = None
        for method in args.methods.split(","):
            row = {"point": point, "method": method, "time_limit": args.time_limit, "alone": round(alone, 4), **meta}
            row.update(scale.solve_point(path, method, args.time_limit))
            lp = lp if lp is not None or method == "exact" else row.get("bound")
            rows.append(row)
            print({k: row.get(k) for k in KEYS if k != "message"}, file=sys.stderr, flush=True)
        for row in rows:
            if row["point"] == point and lp:
                row["lp_over_alone"] = round(lp / alone, 4)
    with open(out / "hetero_hard.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=KEYS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    (out / "hetero_hard.md").write_text(table(rows))
    print(table(rows))


if __name__ == "__main__":
    main()
