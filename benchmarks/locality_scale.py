"""Wall time per arriving job at 50 machines x 100 slots (spec 001 section 5.3), and what the fast path buys.

    python benchmarks/locality_scale.py --jobs 200 --out locality_scale.csv

One instance from ``mlsched generate --problem locality --servers 50 --slots 100`` (arrivals over
the whole horizon, ``--set arrival_share=1``).  For ``greedy-rr``, ``pd-rr`` and ``greedy-ilp``:
the mean, 95th percentile and largest decision time per arriving job, LPs solved, and the
checker's verdict.

Before/after, as ratios in one run, on the first ``--sample`` jobs' PC-ILPs (empty cluster,
each at its first LP-feasible deadline + 2):
* the LP with K1 written per (slot, machine) for every co-located pattern (``O(size H)``
  nonzeros) against the compact form with one co-located mass per slot (what ``solve_lp`` uses);
* the deadline scan starting at the LP-free frontier against a scan that solves one LP per
  deadline from the arrival slot (the number of LPs per job).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from mlsched_opt.bench.files import write_rows
from mlsched_opt.checking import check_solution
from mlsched_opt.io import from_document
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.problems.locality.methods import timings
from mlsched_opt.problems.locality.pcilp import earliest_deadline, patterns, solve_lp
from mlsched_opt.problems.locality.view import locality_view
from mlsched_opt.solvers import SolveOptions
from mlsched_opt.solvers.highs_lp import ArrayLP

FAMILY = get_family("locality")
METHODS = ("greedy-rr", "pd-rr", "greedy-ilp")
FIELDS = ["method", "jobs", "machines", "slots", "objective", "finished", "lps", "ms_mean", "ms_p95", "ms_max", "wall_s", "feasible"]


def full_k1_lp(p) -> float:
    """Time of the LP with the K1 rows written out per machine (the form before the compact one)."""
    a, lo, hi = p.rows(compact=False)
    start = time.perf_counter()
    ArrayLP(p.cost, a, lo, hi, np.zeros(p.size), np.ones(p.size), time_limit=300, gap=0.0).solve()
    return time.perf_counter() - start


def fast_path(view, sample: int) -> None:
    residual = np.repeat(view.capacity[:, :, None], view.slots, axis=2)
    full, compact, lps_scan, lps_frontier = [], [], [], []
    for job in view.jobs[:sample]:
        first = earliest_deadline(job, job.arrival, residual)
        if first is None:
            continue
        deadline = min(first + 2, view.slots - 1)
        p = patterns(job, job.arrival, deadline, residual)
        start = time.perf_counter()
        solve_lp(p)
        compact.append(time.perf_counter() - start)
        full.append(full_k1_lp(p))
        lps_scan.append(first - job.arrival + 1)
        lps_frontier.append(1)
    if not full:
        return
    print(f"\nfast path on {len(full)} PC-ILPs (patterns up to {p.size}):")
    print(f"  LP, K1 per machine vs compact: {statistics.fmean(full) * 1000:.1f} ms vs {statistics.fmean(compact) * 1000:.1f} ms "
          f"per LP, ratio {statistics.fmean(full) / statistics.fmean(compact):.1f}x")
    print(f"  deadline scan from the arrival slot vs from the LP-free frontier: {statistics.fmean(lps_scan):.1f} vs "
          f"{statistics.fmean(lps_frontier):.1f} LPs to reach the first feasible deadline")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--machines", type=int, default=50)
    ap.add_argument("--slots", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sample", type=int, default=10)
    ap.add_argument("--out", default="locality_scale.csv")
    args = ap.parse_args()
    spec = GenerateSpec(jobs=args.jobs, servers=args.machines, seed=args.seed, slots=args.slots,
                        options=FAMILY.parse_generate_options({"arrival_share": 1.0}))
    inst = from_document(FAMILY.generate(spec))
    rows = []
    print(f"{args.jobs} jobs, {args.machines} machines, {args.slots} slots")
    print(f"{'method':<11} {'objective':>10} {'finished':>9} {'LPs':>6} {'ms/job mean':>12} {'p95':>8} {'max':>8} {'wall s':>8}  check")
    for method in METHODS:
        sol = FAMILY.run(inst, method, SolveOptions(seed=args.seed))
        check = check_solution(inst, sol)
        extra = sol.decision["extra"]
        ms = timings(sol.report.message)  # wall-clock figures are in the report's message, never in the decision
        row = {"method": method, "jobs": args.jobs, "machines": args.machines, "slots": args.slots,
               "objective": sol.report.objective, "finished": len(sol.decision["admitted"]), "lps": extra["lps"],
               "ms_mean": ms["mean"], "ms_p95": ms["p95"],
               "ms_max": ms["max"], "wall_s": sol.report.wall_s, "feasible": check.feasible}
        rows.append(row)
        print(f"{method:<11} {row['objective']:>10g} {row['finished']:>9} {row['lps']:>6} {row['ms_mean']:>12.1f} {row['ms_p95']:>8.1f} "
              f"{row['ms_max']:>8.1f} {row['wall_s']:>8.1f}  {'ok' if check.feasible else 'FAILED'}", flush=True)
    write_rows(Path(args.out), FIELDS, rows)
    fast_path(locality_view(inst), args.sample)


if __name__ == "__main__":
    main()
