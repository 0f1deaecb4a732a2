"""How fast harmony's exhaustive static search is, and what pruning, symmetry and numpy buy
(spec 004 6a): internal functions timed against each other in one run, not methods against a
reference (the exhaustive optimum as the reference of every method is the suite
``benchmarks/harmony_exact.toml``).

    python benchmarks/micro/harmony_search.py --instances 3

For M in {2, 3, 4} servers and N in {2, 3, 4} jobs (static batches from ``mlsched generate
--problem harmony --set static=true``), under ``starts=simultaneous``: the raw Cartesian product
of the jobs' count vectors, the placements left after capacity pruning and server-permutation
canonicalization, the time to enumerate them and to evaluate every one (batched event
simulation in numpy), and in the same run the time of the checker's plain-Python speed model on
a sample of those placements, extrapolated to all of them: the ratio is what vectorizing buys.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time

import numpy as np

from mlsched_opt.errors import UserError
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.problems.harmony.check import job_speed
from mlsched_opt.problems.harmony.exact import exhaustive, static_placements
from mlsched_opt.problems.harmony.view import view_of

FAMILY = get_family("harmony")


def _row(load: np.ndarray, m: int) -> list[float]:
    return list(load[m])


def python_time(view, w, p, sample: int = 200) -> float:
    """Seconds the checker's loops take per placement to compute every job's speed once."""
    idx = np.linspace(0, len(w) - 1, min(sample, len(w))).astype(int)
    start = time.perf_counter()
    kind = view.jobs.kind.astype(int)
    for b in idx:
        wb, pb = np.asarray(w[b]), np.asarray(p[b])
        # every job runs: the intensity per server and dimension of all their tasks
        load = wb.T @ view.world.u_worker[kind] + pb.T @ view.world.u_ps[kind]
        for j in range(view.J):
            tasks_w = {int(m): int(c) for m, c in enumerate(wb[j]) if c}
            tasks_p = {int(m): int(c) for m, c in enumerate(pb[j]) if c}
            job_speed(view, j, tasks_w, tasks_p, functools.partial(_row, load))
    return (time.perf_counter() - start) / len(idx)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=3, help="static batches per (M, N)")
    args = ap.parse_args()
    catalog = load_catalog()
    print(f"{'M':>2} {'N':>2} {'seed':>4} {'product':>9} {'kept':>6} {'enumerate s':>12} {'evaluate s':>11} "
          f"{'python s (est)':>15} {'numpy speedup':>14}")
    for M in (2, 3, 4):
        for N in (2, 3, 4):
            for seed in range(args.instances):
                spec = GenerateSpec(jobs=N, servers=M, seed=seed, options=FAMILY.parse_generate_options({"static": True}))
                try:
                    inst = from_document(FAMILY.generate(spec, catalog), catalog=catalog)
                except UserError as exc:  # too many jobs for the servers: not a static batch
                    print(f"M={M} N={N} seed={seed}: skipped ({exc})", file=sys.stderr)
                    continue
                view = view_of(inst, {})
                t0 = time.perf_counter()
                w, p, product, _ = static_placements(view, 600)
                t1 = time.perf_counter()
                res = exhaustive(view, 600)
                evaluate = max(res.elapsed_s - (t1 - t0), 1e-6)
                # J speed evaluations per event and at most J events per placement
                py = python_time(view, w, p) * view.J * len(w)
                print(f"{M:>2} {N:>2} {seed:>4} {product:>9} {len(w):>6} {t1 - t0:>12.4f} {evaluate:>11.4f} "
                      f"{py:>15.3f} {py / evaluate:>13.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
