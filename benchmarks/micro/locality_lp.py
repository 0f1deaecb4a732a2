"""What locality's LP fast path buys, as ratios in one run (spec 001 section 5.3): internal
functions timed against each other, not methods against a reference (that is the suite
``benchmarks/locality_scale.toml``).

    python benchmarks/micro/locality_lp.py --jobs 200 --machines 50 --slots 100 --sample 10

On the first ``--sample`` jobs' PC-ILPs of a generated instance (arrivals over the whole
horizon; empty cluster, each at its first LP-feasible deadline + 2):
* the LP with K1 written per (slot, machine) for every co-located pattern (``O(size H)``
  nonzeros) against the compact form with one co-located mass per slot (what ``solve_lp`` uses);
* the deadline scan starting at the LP-free frontier against a scan that solves one LP per
  deadline from the arrival slot (the number of LPs per job).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from mlsched_opt.io import from_document
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.problems.locality.pcilp import earliest_deadline, patterns, solve_lp
from mlsched_opt.problems.locality.view import locality_view
from mlsched_opt.solvers.highs_lp import ArrayLP

FAMILY = get_family("locality")


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
    args = ap.parse_args()
    spec = GenerateSpec(jobs=args.jobs, servers=args.machines, seed=args.seed, slots=args.slots,
                        options=FAMILY.parse_generate_options({"arrival_share": 1.0}))
    fast_path(locality_view(from_document(FAMILY.generate(spec))), args.sample)


if __name__ == "__main__":
    main()
