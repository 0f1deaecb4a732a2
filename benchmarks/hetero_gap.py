"""Sampling, the full market scheme and the baselines against the proven optimum (spec 003 section 4).

    python benchmarks/hetero_gap.py --seeds 10 --out hetero_gap.csv

Instances from ``mlsched generate --problem hetero`` (Gavel throughputs via the catalog, 10 Gb/s
ring all-reduce): servers of 4 GPUs of random K80/P100/V100 type, ``(servers, jobs)`` in
{(3, 4), (6, 6), (9, 8)} by default, i.e. 12, 24 and 36 GPUs.  OPT is the configuration ILP
solved by HiGHS at gap 0; instances without a proof within the time limit are skipped and
counted.  Methods: sampling at its defaults (M = min(50, 10 % of the categories) + local
search), pure sampling (no local search) at several M, the market with Gamma = rho, the full
scheme where it is affordable, and the baselines.

One CSV row per (instance, method): average JCT, OPT, gap, the three fairness measures, market
solves and wall time.  The summary gives median / mean / worst gap per method and setting;
plots (``plot`` extra): gap against M, and Jain's index over slowdowns per method.
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
PURE_M = (10, 50, 200)
BASELINES = {"greedy": {}, "random": {}, "equal-share": {}, "no-balance": {}, "market-rho": {"valuation": "rho"}}
FULL_MAX_CATEGORIES = 5000
FIELDS = ["servers", "gpus", "jobs", "seed", "method", "samples", "avg_jct_s", "optimum", "gap", "jain_slowdown", "jain_jct",
          "max_slowdown", "market_solves", "wall_s", "exact_wall_s"]


def methods_for(categories: int) -> dict[str, tuple[str, dict]]:
    out = {"sampling": ("sampling", {})}
    out.update({f"sampling-M{m}": ("sampling", {"samples": m, "budget": 0}) for m in PURE_M})
    out["market-rho"] = ("sampling", {"valuation": "rho"})
    if categories <= FULL_MAX_CATEGORIES:
        out["market"] = ("market", {})
    out.update({name: (name, {}) for name in BASELINES if name != "market-rho"})
    return out


def run_instance(servers: int, jobs: int, seed: int, time_limit: float) -> list[dict]:
    inst = from_document(FAMILY.generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed, options=FAMILY.parse_generate_options({}))))
    exact = FAMILY.run(inst, "exact", SolveOptions(gap=0.0, time_limit=time_limit))
    if exact.report.status != "optimal":
        print(f"  no proven optimum ({exact.report.status}); skipped", file=sys.stderr)
        return []
    opt = exact.report.objective
    gpus = sum(int(s.capacity.get("gpu", 0)) for s in inst.servers)
    from math import comb
    rows = []
    for label, (method, options) in methods_for(comb(gpus, jobs)).items():
        start = time.perf_counter()
        sol = FAMILY.run(inst, method, SolveOptions(seed=seed), options)
        wall = time.perf_counter() - start
        check = check_solution(inst, sol)
        if not check.feasible:
            raise AssertionError(f"{label} failed the checker on servers={servers} seed={seed}: {check.violations[:3]}")
        extra = sol.decision["extra"]
        stats = extra.get("stats", {})
        rows.append({"servers": servers, "gpus": gpus, "jobs": jobs, "seed": seed, "method": label,
                     "samples": stats.get("samples", ""), "avg_jct_s": sol.report.objective, "optimum": opt,
                     "gap": sol.report.objective / opt - 1, **extra["fairness"],
                     "market_solves": stats.get("market_solves", stats.get("categories", "")),
                     "wall_s": round(wall, 4), "exact_wall_s": round(exact.report.wall_s, 4)})
    return rows


def summarize(rows: list[dict]) -> None:
    settings = sorted({(int(r["gpus"]), int(r["jobs"])) for r in rows})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    print("\ngap to OPT (average JCT / OPT - 1), per cluster size")
    print(f"{'method':<16}" + "".join(f"{f'{g} GPUs, {s} jobs':>36}" for g, s in settings))
    print(f"{'':<16}" + "".join(f"{'median':>10}{'mean':>7}{'worst':>8}{'(n)':>5} {'Jain':>5}" for _ in settings))
    for m in methods:
        line = f"{m:<16}"
        for g, s in settings:
            sel = [r for r in rows if r["method"] == m and int(r["gpus"]) == g]
            if not sel:
                line += f"{'-':>36}"
                continue
            gaps = [float(r["gap"]) for r in sel]
            jain = statistics.mean(float(r["jain_slowdown"]) for r in sel)
            line += f"{100 * statistics.median(gaps):>9.2f}%{100 * statistics.mean(gaps):>6.2f}%{100 * max(gaps):>7.2f}% ({len(sel):>2}) {jain:.3f}"
        print(line)
    sampling = [float(r["gap"]) for r in rows if r["method"] == "sampling"]
    if sampling:
        print(f"\nsampling (defaults) over all {len(sampling)} instances: median {100 * statistics.median(sampling):.2f}%, "
              f"mean {100 * statistics.mean(sampling):.2f}%, worst {100 * max(sampling):.2f}%")


def plot(rows: list[dict], out: Path) -> None:
    made = subplots()
    if made is None:
        return
    fig, (a, b) = made
    for g in sorted({int(r["gpus"]) for r in rows}):
        xs, ys = [], []
        for m in PURE_M:
            sel = [float(r["gap"]) for r in rows if r["method"] == f"sampling-M{m}" and int(r["gpus"]) == g]
            if sel:
                xs.append(m)
                ys.append(100 * statistics.mean(sel))
        a.plot(xs, ys, marker="o", label=f"{g} GPUs, pure sampling")
        local = [float(r["gap"]) for r in rows if r["method"] == "sampling" and int(r["gpus"]) == g]
        if local:
            a.axhline(100 * statistics.mean(local), ls="--", lw=1, color=a.lines[-1].get_color(), label=f"{g} GPUs, + local search")
    a.set_xscale("log")
    a.set_xlabel("M (sampled categories)")
    a.set_ylabel("mean gap to OPT (%)")
    a.legend(fontsize=7)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    b.bar(range(len(methods)), [statistics.mean(float(r["jain_slowdown"]) for r in rows if r["method"] == m) for m in methods])
    b.set_xticks(range(len(methods)), methods, rotation=45, ha="right", fontsize=7)
    b.set_ylabel("mean Jain index over slowdowns")
    b.set_ylim(0, 1)
    save_figure(fig, out)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--settings", default="3:4,6:6,9:8", help="servers:jobs pairs")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument("--out", type=Path, default=Path("hetero_gap.csv"))
    p.add_argument("--summarize", type=Path, default=None, help="only summarize an existing CSV")
    args = p.parse_args(argv)
    if args.summarize:
        rows = read_rows(args.summarize)
    else:
        rows = []
        for pair in args.settings.split(","):
            servers, jobs = (int(v) for v in pair.split(":"))
            for seed in range(args.seeds):
                print(f"servers={servers} jobs={jobs} seed={seed}", file=sys.stderr, flush=True)
                rows += run_instance(servers, jobs, seed, args.time_limit)
        write_rows(args.out, FIELDS, rows)
    summarize(rows)
    plot(rows, args.out)


if __name__ == "__main__":
    main()
