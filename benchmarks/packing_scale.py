"""Packing on the hard (capacity-binding) Alibaba instances, every method, before and after, in one run (issue 32).

    python benchmarks/packing_scale.py --out runs/packing_scale [--jobs 200,500,2000] [--before ../main]

Instances (``mlsched import``, seed 0, ``pods=multigpu50``):

* ``servers``: N pods on all 1,523 nodes, solved with ``--set objective=servers`` (every pod
  placed, as few nodes as possible: the issue's hard instance);
* ``weight``: N pods on N/8 nodes (the default objective, most pods admitted): at that ratio the
  nodes hold about 70 % of the pods, so capacity binds (on all nodes every pod fits and the bound
  is met at once).

Each point is ``mlsched solve --json`` in a process of its own (``benchmarks/scale.py``'s
``solve_point``: wall time and peak memory of the process); heuristics get ``--time-limit``, the
exact method ``--exact-limit`` (the issue's 240 s).  ``--before DIR`` runs the same commands with
``PYTHONPATH=DIR`` too (a checkout of the code before the change: its methods ``ffd``, ``pop``,
``exact``), so the two come from one run on one machine.  Each row gives the method's certified
ratio against its own run's bound and against the best bound any run proved on the instance.
Writes ``packing_scale.csv`` and ``packing_scale.md``.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import solve_point  # a sibling script, not a package

AFTER = ("ffd", "ffd-large", "bfd", "lns", "pop", "exact")
BEFORE = ("ffd", "pop", "exact")
KEYS = ["code", "objective_kind", "jobs", "servers", "method", "status", "objective", "bound", "ratio_own", "best_bound",
        "ratio_best", "check", "wall_s", "peak_mb", "within_limit", "message"]


def instance(folder: Path, kind: str, jobs: int) -> Path:
    """Import the instance once (not timed)."""
    servers = jobs // 8 if kind == "weight" else 0
    path = folder / f"packing-{kind}-{jobs}.json"
    if not path.exists():
        args = [sys.executable, "-m", "mlsched_opt", "--quiet", "import", "alibaba", "--problem", "packing", "--jobs", str(jobs),
                "--set", "pods=multigpu50", "-o", str(path)]
        if servers:
            args[args.index("--jobs"):args.index("--jobs")] = ["--servers", str(servers)]
        subprocess.run(args, check=True)
    return path


def ratio(objective: float | None, bound: float | None, kind: str) -> float | None:
    if not objective or not bound or objective <= 0 or bound <= 0:
        return None
    return round(max(objective / bound if kind == "servers" else bound / objective, 1.0), 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--jobs", default="200,500,2000")
    ap.add_argument("--objectives", default="servers,weight")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per heuristic solve")
    ap.add_argument("--exact-limit", type=float, default=240.0, help="seconds per exact solve")
    ap.add_argument("--before", type=Path, help="a checkout of the code before the change (runs ffd, pop, exact)")
    ap.add_argument("--methods", default=",".join(AFTER))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    codes = [("after", Path(__file__).resolve().parents[1], tuple(args.methods.split(",")))]
    if args.before:
        codes.insert(0, ("before", args.before.resolve(), BEFORE))
    rows = []
    for kind in args.objectives.split(","):
        for jobs in map(int, args.jobs.split(",")):
            path = instance(args.out, kind, jobs)
            extra = ("--set", "objective=servers") if kind == "servers" else ()
            mine = []
            for code, root, methods in codes:
                os.environ["PYTHONPATH"] = str(root)
                for method in methods:
                    limit = args.exact_limit if method == "exact" else args.time_limit
                    point = solve_point(path, method, limit, extra)
                    os.replace(path.with_name(f"{path.stem}-{method}.out"), args.out / f"{path.stem}-{code}-{method}.out")
                    os.replace(path.with_name(f"{path.stem}-{method}.err"), args.out / f"{path.stem}-{code}-{method}.err")
                    row = {"code": code, "objective_kind": kind, "jobs": jobs, "servers": jobs // 8 if kind == "weight" else 1523,
                           "method": method, **{k: point[k] for k in ("status", "objective", "bound", "check", "wall_s", "peak_mb",
                                                                       "within_limit", "message")}}
                    row["ratio_own"] = ratio(row["objective"], row["bound"], kind)
                    mine.append(row)
                    print(f"{code:6} {kind:7} {jobs:5} {method:10} {row['status']:9} {row['objective']} bound {row['bound']} "
                          f"ratio {row['ratio_own']} {row['wall_s']} s", flush=True)
            bounds = [r["bound"] for r in mine if r["bound"]]
            best = (max(bounds) if kind == "servers" else min(bounds)) if bounds else None
            for r in mine:
                r["best_bound"] = best
                r["ratio_best"] = ratio(r["objective"], best, kind)
            rows += mine
    with open(args.out / "packing_scale.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=KEYS)
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| code | objective | jobs | nodes | method | status | answer | own bound | ratio | best bound | to best | wall s | check |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['code']} | {r['objective_kind']} | {r['jobs']:,} | {r['servers']:,} | `{r['method']}` | {r['status']} | "
              f"{r['objective'] if r['objective'] is not None else '-'} | {r['bound'] if r['bound'] is not None else '-'} | "
              f"{r['ratio_own'] or '-'} | {r['best_bound'] or '-'} | {r['ratio_best'] or '-'} | {r['wall_s']} | {r['check']} |"
              for r in rows]
    (args.out / "packing_scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
