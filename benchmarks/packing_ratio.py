"""Sweep job counts for the packing family: FFD's ratio to the proven optimum, and solver times.

    python benchmarks/packing_ratio.py --jobs 8,16,32 --seeds 5 --out packing_ratio.csv

Writes one CSV row per (jobs, seed, objective) with the optimum (HiGHS and CP-SAT), FFD's
value and ratio, the LP bound, and wall times; prints progress and a summary per size.
Times are compared within one run only (CP-SAT time / HiGHS time), never against fixed numbers.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys

from mlsched_opt.bench import approximation_ratio
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.solvers import SolveOptions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", default="8,16,32")
    ap.add_argument("--servers-per-job", type=float, default=0.4)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--out", default="packing_ratio.csv")
    args = ap.parse_args()
    family, catalog = get_family("packing"), load_catalog()
    fields = ["jobs", "servers", "seed", "objective", "status", "opt", "ffd", "ratio", "lp", "highs_s", "cpsat_s", "cpsat_over_highs"]
    rows = []
    sizes = [int(x) for x in args.jobs.split(",")]
    total = len(sizes) * args.seeds * 2
    for n in sizes:
        servers = max(1, round(n * args.servers_per_job))
        for seed in range(args.seeds):
            inst = from_document(family.generate(GenerateSpec(jobs=n, servers=servers, seed=seed), catalog), catalog=catalog)
            for objective in ("weight", "servers"):
                opts = {"objective": objective}
                exact = {s: family.run(inst, "exact", SolveOptions(solver=s, gap=0.0, time_limit=args.time_limit), opts).report
                         for s in ("highs", "cpsat")}
                ffd = family.run(inst, "ffd", SolveOptions(), opts).report
                lp = family.lp_bound(inst, family.parse_options(opts), SolveOptions())
                h = exact["highs"]
                ratio = approximation_ratio(ffd.objective, h.objective, family.sense(family.parse_options(opts))) \
                    if h.status == "optimal" and ffd.objective is not None else None
                rows.append({"jobs": n, "servers": servers, "seed": seed, "objective": objective, "status": h.status,
                             "opt": h.objective, "ffd": ffd.objective, "ratio": ratio, "lp": lp.objective,
                             "highs_s": round(h.wall_s, 4), "cpsat_s": round(exact["cpsat"].wall_s, 4),
                             "cpsat_over_highs": round(exact["cpsat"].wall_s / max(h.wall_s, 1e-9), 3)})
                print(f"[{len(rows)}/{total}] jobs={n} seed={seed} {objective}: {h.status} opt={h.objective} ffd={ffd.objective}",
                      file=sys.stderr)
    with open(args.out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    for n in sizes:
        ratios = [r["ratio"] for r in rows if r["jobs"] == n and r["ratio"] is not None]
        speed = [r["cpsat_over_highs"] for r in rows if r["jobs"] == n]
        if ratios:
            print(f"jobs={n}: FFD ratio mean {statistics.mean(ratios):.3f} max {max(ratios):.3f} over {len(ratios)} proven optima; "
                  f"CP-SAT/HiGHS time median {statistics.median(speed):.2f}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
