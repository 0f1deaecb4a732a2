"""Sampling against the exact configuration ILP as the cluster grows (spec 003 section 2, P11).

    python benchmarks/hetero_scale.py --servers 3,6,9,12,18,24 --jobs 8 --seeds 2 --out hetero_scale.csv

For each cluster (servers of 4 GPUs of random K80/P100/V100 type, ``--jobs`` Gavel jobs, the
generator of ``mlsched generate --problem hetero``): the configuration ILP with HiGHS under
``--time-limit`` (Pyomo build + solve, both timed), its LP relaxation, and the sampling scheme
at its defaults (wall time = median of ``--repeats`` runs with the same seed; the answer is
the same every time).  When the ILP proves its optimum the gap is exact; beyond that the
answer is certified against the ILP's best bound and against the LP relaxation:
``gap <= sampling / bound - 1``.  Ratios of wall times are measured in one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from mlsched_opt.bench.files import read_rows, save_figure, subplots, write_rows
from mlsched_opt.checking import check_solution
from mlsched_opt.io import from_document
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.solvers import SolveOptions

FAMILY = get_family("hetero")
FIELDS = ["servers", "gpus", "jobs", "seed", "ilp_status", "ilp_objective", "ilp_bound", "ilp_build_s", "ilp_solve_s", "ilp_wall_s",
          "lp_bound", "lp_wall_s", "sampling_objective", "sampling_wall_s", "speedup", "gap_to_opt", "gap_certified_ilp_bound",
          "gap_certified_lp", "market_solves"]


def run_instance(servers: int, jobs: int, seed: int, time_limit: float, repeats: int) -> dict:
    inst = from_document(FAMILY.generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed, options=FAMILY.parse_generate_options({}))))
    gpus = sum(int(s.capacity.get("gpu", 0)) for s in inst.servers)
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        sol = FAMILY.run(inst, "sampling", SolveOptions(seed=seed))
        walls.append(time.perf_counter() - start)
    if not check_solution(inst, sol).feasible:
        raise AssertionError(f"sampling failed the checker on servers={servers} seed={seed}")
    value = sol.report.objective
    start = time.perf_counter()
    exact = FAMILY.run(inst, "exact", SolveOptions(gap=0.0, time_limit=time_limit)).report
    ilp_wall = time.perf_counter() - start
    lp = FAMILY.lp_bound(inst, FAMILY.parse_options({}), SolveOptions(time_limit=time_limit))
    wall = statistics.median(walls)
    bound = exact.bound
    return {
        "servers": servers, "gpus": gpus, "jobs": jobs, "seed": seed, "ilp_status": exact.status,
        "ilp_objective": exact.objective, "ilp_bound": bound, "ilp_build_s": round(exact.build_s, 3),
        "ilp_solve_s": round(exact.solve_s, 3), "ilp_wall_s": round(ilp_wall, 3),
        "lp_bound": lp.objective if lp.status == "optimal" else "", "lp_wall_s": round(lp.wall_s, 3),
        "sampling_objective": value, "sampling_wall_s": round(wall, 4), "speedup": round(ilp_wall / wall, 1),
        "gap_to_opt": value / exact.objective - 1 if exact.status == "optimal" else "",
        "gap_certified_ilp_bound": value / bound - 1 if bound else "",
        "gap_certified_lp": value / lp.objective - 1 if lp.status == "optimal" else "",
        "market_solves": sol.decision["extra"]["stats"]["market_solves"],
    }


def summarize(rows: list[dict]) -> None:
    print(f"\n{'GPUs':>5} {'seed':>4} {'ILP status':>11} {'ILP wall s':>10} {'sampling s':>10} {'speed-up':>9} "
          f"{'gap to OPT':>10} {'<= vs bound':>11} {'<= vs LP':>9}")
    pct = lambda v: "-" if v in ("", None) else f"{max(0.0, 100 * float(v)):.2f}%"  # noqa: E731  (-1e-16 is rounding)
    for r in rows:
        print(f"{r['gpus']:>5} {r['seed']:>4} {r['ilp_status']:>11} {float(r['ilp_wall_s']):>10.2f} {float(r['sampling_wall_s']):>10.3f} "
              f"{float(r['speedup']):>8.0f}x {pct(r['gap_to_opt']):>10} {pct(r['gap_certified_ilp_bound']):>11} {pct(r['gap_certified_lp']):>9}")
    slow = [r for r in rows if float(r["ilp_wall_s"]) >= 10]
    if slow:
        first = min(int(r["gpus"]) for r in slow)
        sel = [r for r in rows if int(r["gpus"]) == first]
        print(f"\nsmallest cluster where the ILP needed >= 10 s: {first} GPUs; there sampling is "
              f"{min(float(r['speedup']) for r in sel):.0f}x to {max(float(r['speedup']) for r in sel):.0f}x faster")


def plot(rows: list[dict], out: Path) -> None:
    made = subplots()
    if made is None:
        return
    fig, (a, b) = made
    gpus = sorted({int(r["gpus"]) for r in rows})
    med = lambda key, g: statistics.median(float(r[key]) for r in rows if int(r["gpus"]) == g)  # noqa: E731
    a.plot(gpus, [med("ilp_wall_s", g) for g in gpus], marker="o", label="configuration ILP (HiGHS, build + solve)")
    a.plot(gpus, [med("sampling_wall_s", g) for g in gpus], marker="s", label="sampling + local search")
    a.set_yscale("log")
    a.set_xlabel("GPUs")
    a.set_ylabel("wall time (s)")
    a.legend(fontsize=8)
    for key, label in (("gap_certified_ilp_bound", "vs ILP best bound"), ("gap_certified_lp", "vs LP relaxation"), ("gap_to_opt", "vs OPT (proven)")):
        pts = [(int(r["gpus"]), 100 * float(r[key])) for r in rows if r[key] not in ("", None)]
        if pts:
            b.scatter(*zip(*pts), label=label, s=18)
    b.set_xlabel("GPUs")
    b.set_ylabel("sampling's gap, at most (%)")
    b.legend(fontsize=8)
    save_figure(fig, out)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", default="3,6,9,12,18,24")
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--time-limit", type=float, default=300.0)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=Path("hetero_scale.csv"))
    p.add_argument("--summarize", type=Path, default=None, help="only summarize an existing CSV")
    args = p.parse_args(argv)
    if args.summarize:
        rows = read_rows(args.summarize)
    else:
        rows = []
        for servers in (int(s) for s in args.servers.split(",")):
            for seed in range(args.seeds):
                print(f"servers={servers} seed={seed}", file=sys.stderr, flush=True)
                rows.append(run_instance(servers, args.jobs, seed, args.time_limit, args.repeats))
                write_rows(args.out, FIELDS, rows)  # keep what is done if a later size is interrupted
    summarize(rows)
    plot(rows, args.out)


if __name__ == "__main__":
    main()
