"""Algorithm 1's two exact LP engines on the same jobs, in one run: HiGHS (Charnes-Cooper LP
re-solved in place) against batched 2-D vertex enumeration.

    python benchmarks/smd_lp_engines.py --jobs 12 --seed 0 --epsilon1 0.1

Prints per job the grid size, LPs solved, the two times and their ratio, and checks the two
engines reach the same score psi (they solve the same LPs exactly).
"""

from __future__ import annotations

import argparse
import statistics
import time

from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.problems.smd.inner import algorithm1
from mlsched_opt.problems.smd.view import smd_view


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epsilon1", type=float, default=0.1)
    args = ap.parse_args()
    family, catalog = get_family("smd"), load_catalog()
    spec = GenerateSpec(jobs=args.jobs, servers=1000, seed=args.seed, options=family.parse_generate_options({"unit": "instance"}))
    view = smd_view(from_document(family.generate(spec, catalog), catalog=catalog))
    ratios = []
    print(f"{'job':5} {'sgd':5} {'grid':>8} {'LPs':>7} {'highs s':>8} {'vertex s':>9} {'ratio':>6}")
    for job in view.jobs:
        t = time.perf_counter()
        h = algorithm1(job, args.epsilon1, "highs")
        th = time.perf_counter() - t
        t = time.perf_counter()
        v = algorithm1(job, args.epsilon1, "vertex")
        tv = time.perf_counter() - t
        assert abs(h.psi - v.psi) <= 1e-7 * max(1.0, abs(h.psi)), (job.id, h.psi, v.psi)
        ratios.append(th / tv)
        print(f"{job.id:5} {job.sgd:5} {h.grid_points:8d} {h.lps:7d} {th:8.3f} {tv:9.3f} {th / tv:6.1f}")
    print(f"HiGHS time / vertex time: median {statistics.median(ratios):.1f}, min {min(ratios):.1f}, max {max(ratios):.1f}; same psi on every job")


if __name__ == "__main__":
    main()
