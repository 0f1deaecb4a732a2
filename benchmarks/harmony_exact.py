"""How fast the exhaustive static search is, and what pruning, symmetry and numpy buy (spec 004 6a).

    python benchmarks/harmony_exact.py --instances 3 --out harmony_exact.csv

For M in {2, 3, 4} servers and N in {2, 3, 4} jobs (static batches from ``mlsched generate
--problem harmony --set static=true``): the raw Cartesian product of the jobs' count vectors, the
placements left after capacity pruning and server-permutation canonicalization, the time to
enumerate them and to evaluate every one (batched event simulation in numpy), and in the same
run the time of the checker's plain-Python speed model on a sample of those placements,
extrapolated to all of them: the ratio is what vectorizing buys.  Also the surrogate's CP-SAT
solve time and its true-world gap to the optimum.

The default problem (``starts=any``) lets a job wait: the search over placements *and* start
intervals (:func:`exhaustive_any`, within its proven delay bound) runs too, with ``--any-limit``
seconds per instance; its columns say whether it finished (``optimal``), stopped at the limit
(``feasible``) or refused the instance as too large (``refused``), and how much waiting gains over
the best simultaneous start (``waiting_gain``, a fraction of the simultaneous optimum).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from mlsched_opt.bench.files import read_rows, write_rows
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.problems.harmony.check import _speed
from mlsched_opt.errors import OptionError
from mlsched_opt.problems.harmony.exact import exhaustive, exhaustive_any, static_placements
from mlsched_opt.problems.harmony.view import view_of
from mlsched_opt.solvers import SolveOptions

FAMILY = get_family("harmony")
FIELDS = ["servers", "jobs", "seed", "product", "canonical", "enumerate_s", "evaluate_s", "python_eval_s_est", "speedup",
          "optimum", "surrogate_jct", "surrogate_gap", "surrogate_s", "any_status", "any_optimum", "any_s", "waiting_gain"]


def python_time(view, w, p, sample: int = 200) -> float:
    """Seconds the checker's loops take per placement to compute every job's speed once."""
    idx = np.linspace(0, len(w) - 1, min(sample, len(w))).astype(int)
    start = time.perf_counter()
    for b in idx:
        running = set(range(view.J))
        for j in range(view.J):
            _speed(view, j, w[b], p[b], running)
    return (time.perf_counter() - start) / len(idx)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=3, help="static batches per (M, N)")
    ap.add_argument("--out", type=Path, default=Path("harmony_exact.csv"))
    ap.add_argument("--summarize", action="store_true")
    ap.add_argument("--any-limit", type=float, default=20.0, help="seconds per instance for the starts=any search")
    args = ap.parse_args()
    if not args.summarize:
        rows = []
        catalog = load_catalog()
        for M in (2, 3, 4):
            for N in (2, 3, 4):
                for seed in range(args.instances):
                    spec = GenerateSpec(jobs=N, servers=M, seed=seed, options=FAMILY.parse_generate_options({"static": True}))
                    try:
                        inst = from_document(FAMILY.generate(spec, catalog), catalog=catalog)
                    except Exception as exc:  # too many jobs for the servers: not a static batch
                        print(f"M={M} N={N} seed={seed}: skipped ({exc})", file=sys.stderr)
                        continue
                    view = view_of(inst, {})
                    t0 = time.perf_counter()
                    w, p, product, _ = static_placements(view, 600)
                    t1 = time.perf_counter()
                    res = exhaustive(view, 600)
                    evaluate = res.elapsed_s - (t1 - t0)
                    # J speed evaluations per event and at most J events per placement
                    py = python_time(view, w, p) * view.J * len(w)
                    sur = FAMILY.run(inst, "surrogate", SolveOptions(solver="cpsat", time_limit=120, gap=0.0))
                    try:
                        anyr = exhaustive_any(view, args.any_limit)
                        any_row = {"any_status": "optimal" if anyr.complete else "feasible", "any_optimum": anyr.avg_jct,
                                   "any_s": round(anyr.elapsed_s, 3), "waiting_gain": 1 - anyr.avg_jct / res.avg_jct}
                    except OptionError:
                        any_row = {"any_status": "refused", "any_optimum": "", "any_s": "", "waiting_gain": ""}
                    rows.append({"servers": M, "jobs": N, "seed": seed, "product": product, "canonical": len(w),
                                 "enumerate_s": round(t1 - t0, 4), "evaluate_s": round(max(evaluate, 1e-6), 4),
                                 "python_eval_s_est": round(py, 3), "speedup": round(py / max(evaluate, 1e-6), 1),
                                 "optimum": res.avg_jct, "surrogate_jct": sur.report.objective,
                                 "surrogate_gap": sur.report.objective / res.avg_jct - 1, "surrogate_s": round(sur.report.wall_s, 3),
                                 **any_row})
                    print(f"M={M} N={N} seed={seed}: {product} -> {len(w)} placements, {res.elapsed_s:.3f} s", file=sys.stderr)
        write_rows(args.out, FIELDS, rows)
    rows = read_rows(args.out)
    print(f"\n{'M':>2} {'N':>2} {'product (max)':>14} {'kept (max)':>11} {'search s (max)':>15} {'numpy speedup':>14} {'surrogate gap':>14}")
    for M in (2, 3, 4):
        for N in (2, 3, 4):
            sel = [r for r in rows if int(r["servers"]) == M and int(r["jobs"]) == N]
            if not sel:
                continue
            search = max(float(r["enumerate_s"]) + float(r["evaluate_s"]) for r in sel)
            print(f"{M:>2} {N:>2} {max(int(r['product']) for r in sel):>14} {max(int(r['canonical']) for r in sel):>11} "
                  f"{search:>15.3f} {statistics.median(float(r['speedup']) for r in sel):>13.0f}x "
                  f"{statistics.median(float(r['surrogate_gap']) for r in sel):>13.1%}")
    gaps = [float(r["surrogate_gap"]) for r in rows]
    print(f"\nsurrogate (CP-SAT, proven on its own model) true-world gap to the simultaneous optimum: median "
          f"{statistics.median(gaps):.1%}, worst {max(gaps):.1%}, optimal in {sum(g < 1e-9 for g in gaps)}/{len(gaps)}")
    status = [r.get("any_status", "") for r in rows]
    done = [r for r in rows if r.get("any_status") == "optimal"]
    gains = [float(r["waiting_gain"]) for r in done]
    print(f"starts=any search: optimal {status.count('optimal')}, stopped at the limit {status.count('feasible')}, "
          f"refused {status.count('refused')} of {len(rows)}; waiting pays in {sum(g > 1e-9 for g in gains)}/{len(gains)} "
          f"proven cases (best gain {max(gains, default=0):.1%}); search time max "
          f"{max((float(r['any_s']) for r in done), default=0):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
