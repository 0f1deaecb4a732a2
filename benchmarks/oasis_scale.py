"""OASiS against the baselines at the paper's scale (spec 000 Fig. 3) and its decision time per job.

    python benchmarks/oasis_scale.py --jobs 100,200,300,400 --servers 50 --slots 300 --out oasis_scale.csv

Instances from ``mlsched generate --problem oasis`` (calibrated setting, uniform arrivals, or
``--arrivals philly``), M worker + M PS servers.  Methods: OASiS with the formula's U and L
(``oasis``, the guarantee's parameters), OASiS with prices estimated from the jobs' value
densities (``oasis-est``, [PROP] see ``prices.estimated_params``), and FIFO, DRF, RRH, Dorm.
Every answer goes through the checker.  One CSV row per (jobs, seed, method): total utility,
jobs completed, wall time, and OASiS's mean and max decision time per arriving job; a table like
Fig. 3 is printed and plotted.  No optimum at this scale: the comparison is between methods.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from mlsched_opt.bench.files import pyplot, read_rows, write_rows
from mlsched_opt.checking import check_solution
from mlsched_opt.io import from_document
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.solvers import SolveOptions

FAMILY = get_family("oasis")
METHODS = {"oasis": {}, "oasis-est": {"prices": "estimated"}, "fifo": {}, "drf": {}, "rrh": {}, "dorm": {}}
FIELDS = ["jobs", "servers", "slots", "seed", "method", "utility", "completed", "wall_s", "decision_ms_mean", "decision_ms_max"]


def run(jobs: int, servers: int, slots: int, seed: int, arrivals: str, methods: list[str]) -> list[dict]:
    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed, slots=slots, options=FAMILY.parse_generate_options({"arrivals": arrivals}))
    inst = from_document(FAMILY.generate(spec))
    rows = []
    for name in methods:
        start = time.perf_counter()
        sol = FAMILY.run(inst, name.split("-")[0], SolveOptions(seed=seed), METHODS[name])
        check = check_solution(inst, sol)
        if not check.feasible:
            raise AssertionError(f"{name}: {check.violations[:3]}")
        # OASiS reports its decision times in the message (timings never go into a decision)
        timing = re.search(r"([0-9.]+) ms per job \(max ([0-9.]+) ms\)", sol.report.message or "")
        rows.append({"jobs": jobs, "servers": servers, "slots": slots, "seed": seed, "method": name,
                     "utility": sol.report.objective, "completed": len(sol.decision["admitted"]),
                     "wall_s": round(time.perf_counter() - start, 3),
                     "decision_ms_mean": float(timing.group(1)) if timing else "",
                     "decision_ms_max": float(timing.group(2)) if timing else ""})
        print(f"  {name:<10} utility {sol.report.objective:10.1f}  completed {rows[-1]['completed']:>4}  "
              f"{rows[-1]['wall_s']:.1f} s", file=sys.stderr)
    return rows


def summarize(rows: list[dict]) -> None:
    names = list(dict.fromkeys(r["method"] for r in rows))
    counts = sorted({int(r["jobs"]) for r in rows})
    mean = lambda n, j, key: sum(float(r[key]) for r in rows if r["method"] == n and int(r["jobs"]) == j) / \
        max(1, sum(1 for r in rows if r["method"] == n and int(r["jobs"]) == j))
    print("\ntotal utility (mean over seeds)")
    print(f"{'jobs':>5} " + " ".join(f"{n:>10}" for n in names) + f" {'est/best':>9} {'ms/job':>7}")
    for j in counts:
        vals = {n: mean(n, j, "utility") for n in names}
        base = max((v for n, v in vals.items() if not n.startswith("oasis")), default=0.0)
        ratio = vals.get("oasis-est", 0.0) / base if base else float("inf")
        ms = [float(r["decision_ms_mean"]) for r in rows if r["method"] == "oasis" and int(r["jobs"]) == j]
        print(f"{j:>5} " + " ".join(f"{vals[n]:>10.0f}" for n in names) + f" {ratio:>9.2f} {sum(ms) / max(1, len(ms)):>7.1f}")


def plot(rows: list[dict], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = list(dict.fromkeys(r["method"] for r in rows))
    counts = sorted({int(r["jobs"]) for r in rows})
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        vals = [sum(float(r["utility"]) for r in rows if r["method"] == name and int(r["jobs"]) == j) /
                max(1, sum(1 for r in rows if r["method"] == name and int(r["jobs"]) == j)) for j in counts]
        ax.bar([i + k * width for i in range(len(counts))], vals, width, label=name, color=f"C{k}")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(counts))], [str(j) for j in counts])
    ax.set_xlabel("jobs")
    ax.set_ylabel("total utility")
    ax.set_title("OASiS vs baselines (cf. Fig. 3 of Bao et al. 2018)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"figure: {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", default="100,200,300,400")
    ap.add_argument("--servers", type=int, default=50, help="worker servers (and as many PS servers)")
    ap.add_argument("--slots", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--arrivals", default="uniform", choices=["uniform", "philly"])
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--out", default="oasis_scale.csv")
    ap.add_argument("--summarize", metavar="CSV", help="only print the table and plot of an earlier run")
    args = ap.parse_args()
    if args.summarize:
        rows = read_rows(args.summarize)
        summarize(rows)
        plot(rows, Path(args.summarize).with_suffix(".png"))
        return
    methods = args.methods.split(",")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        ap.error(f"unknown methods {unknown}; choose from {', '.join(METHODS)}")
    rows: list[dict] = []
    start = time.perf_counter()
    for jobs in (int(j) for j in args.jobs.split(",")):
        for seed in range(args.seeds):
            print(f"{jobs} jobs, seed {seed} ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
            rows.extend(run(jobs, args.servers, args.slots, seed, args.arrivals, methods))
    out = Path(args.out)
    write_rows(out, FIELDS, rows)
    summarize(rows)
    plot(rows, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
