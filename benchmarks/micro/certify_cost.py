"""What certification costs: the exact method with and without an independent referee, in one run.

    python benchmarks/micro/certify_cost.py --repeats 3 --out certify_cost.csv

For each shipped instance whose exact method is a Pyomo model, solves it with HiGHS and with
CP-SAT, certified and not (``--no-certify``), and reports the median wall time of each and their
ratio (certified / uncertified, same run, same machine load), with the status and the referee.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path
from typing import Any

from mlsched_opt.io import load_instance
from mlsched_opt.problems import get_family
from mlsched_opt.solvers import SolveOptions

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = ["demo.toml", "smd-12jobs.toml", "oasis-toy.toml", "oasis-10jobs.toml", "hetero-toy.toml", "hetero-12gpus.toml",
             "locality-toy.toml"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=120)
    ap.add_argument("--out", default="certify_cost.csv")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for name in INSTANCES:
        inst = load_instance(ROOT / "instances" / name)
        assert inst.default_problem, name  # each listed instance names its problem
        family = get_family(inst.default_problem)
        options = family.resolve_options(inst, {})
        for solver in ("highs", "cpsat"):
            times: dict[bool, list[float]] = {True: [], False: []}
            last = {}
            for _ in range(args.repeats):
                for certify in (False, True):
                    sol = family.run(inst, "exact", SolveOptions(solver=solver, gap=0.0, time_limit=args.time_limit, certify=certify),
                                     options)
                    times[certify].append(sol.report.wall_s)
                    last[certify] = sol.report
            plain, cert = statistics.median(times[False]), statistics.median(times[True])
            row = {"instance": name, "solver": solver, "status": last[True].status, "objective": last[True].objective,
                   "referee": last[True].certified_by, "uncertified_s": round(plain, 4), "certified_s": round(cert, 4),
                   "ratio": round(cert / plain, 2) if plain > 0 else None}
            rows.append(row)
            print(f"{name:22} {solver:6} {row['status']:9} {row['uncertified_s']:8.3f} s -> {row['certified_s']:8.3f} s "
                  f"(x{row['ratio']})  {row['referee']}", file=sys.stderr)
    with open(args.out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    print(f"certified / uncertified wall time: median x{statistics.median(ratios):.2f}, max x{max(ratios):.2f} over {len(ratios)} solves")


if __name__ == "__main__":
    main()
