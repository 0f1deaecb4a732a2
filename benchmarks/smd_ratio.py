"""SMD against the exact optimum and the paper's baselines (spec 002 section 4, Figs 7-11).

    python benchmarks/smd_ratio.py --experiments fig11,capacity,jobs --seeds 6 --out smd_ratio.csv

Experiments (instances from `mlsched generate --problem smd`, the paper's ranges):

* ``fig11``: 10-50 jobs, capacity 1000 virtual instances (admission is trivial, so the ratio
  isolates the inner loss, spec P22), sync and async separately; SMD with F = 10 and F = 1.
* ``capacity`` (Figs 7-8): 50 jobs, 1-5 paper units of capacity (admission is tight).
* ``jobs`` (Figs 9-10): 40-200 jobs on 2 paper units; also SMD's wall time against the exact
  reference's as the job count grows.

One CSV row per (instance, method): total utility, its ratio to the proven optimum, the
median per-job completion-time ratio tau(method)/tau(optimal) over the admitted jobs (a more
sensitive measure than utility, which saturates), and wall time.  A summary per experiment is
printed and a figure with one panel per experiment is written next to the CSV (needs the
``plot`` extra).  Times are compared within one run only.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.problems.smd.formulation import exact_inner
from mlsched_opt.problems.smd.view import smd_view
from mlsched_opt.solvers import SolveOptions

FAMILY = get_family("smd")
METHODS = {"smd": {}, "smd-F1": {"attempts": 1}, "esw": {}, "optimus": {}}
SETTINGS = {
    "fig11": {"jobs": [10, 20, 30, 40, 50], "units": [1000], "unit": "instance", "methods": ["smd", "smd-F1", "esw", "optimus"]},
    "capacity": {"jobs": [50], "units": [1, 2, 3, 4, 5], "unit": "paper", "methods": ["smd", "esw", "optimus"]},
    "jobs": {"jobs": [40, 80, 120, 160, 200], "units": [2], "unit": "paper", "methods": ["smd", "esw", "optimus"]},
}
#: fixed colour and marker per method, so panels agree (optimus often lies on top of smd)
STYLE = {"smd": ("C0", "o"), "smd-F1": ("C1", "s"), "esw": ("C2", "^"), "optimus": ("C3", "x")}
FIELDS = ["experiment", "sgd", "jobs", "units", "seed", "method", "utility", "optimum", "ratio", "tau_ratio_median",
          "admitted", "wall_s", "exact_wall_s"]


def run_instance(experiment: str, sgd: str, jobs: int, units: int, seed: int, catalog, methods: list[str], time_limit: float) -> list[dict]:
    setting = SETTINGS[experiment]
    spec = GenerateSpec(jobs=jobs, servers=units, seed=seed,
                        options=FAMILY.parse_generate_options({"sgd": sgd, "unit": setting["unit"]}))
    inst = from_document(FAMILY.generate(spec, catalog), catalog=catalog)
    exact = FAMILY.run(inst, "exact", SolveOptions(gap=0.0, time_limit=time_limit))
    if exact.report.status != "optimal":
        print(f"  no proven optimum ({exact.report.status}); skipped", file=sys.stderr)
        return []
    jobs_view = smd_view(inst)
    best_tau = {j.id: a.tau for j, a in zip(jobs_view.jobs, exact_inner(jobs_view))}
    view = {j.id: j for j in jobs_view.jobs}
    rows = []
    opt = exact.report.objective
    for name in ["exact", *methods]:
        if name == "exact":
            sol = exact
        else:
            sol = FAMILY.run(inst, name.split("-")[0], SolveOptions(seed=seed, time_limit=time_limit), METHODS[name])
        alloc = sol.decision["extra"]["allocation"]
        taus = [view[j].completion_time(a["workers"], a["ps"]) / best_tau[j] for j, a in alloc.items()]
        rows.append({"experiment": experiment, "sgd": sgd, "jobs": jobs, "units": units, "seed": seed, "method": name,
                     "utility": round(sol.report.objective, 6), "optimum": round(opt, 6),
                     "ratio": round(sol.report.objective / opt, 6) if opt > 0 else None,
                     "tau_ratio_median": round(float(np.median(taus)), 6) if taus else None,
                     "admitted": len(alloc), "wall_s": round(sol.report.wall_s, 4), "exact_wall_s": round(exact.report.wall_s, 4)})
    return rows


def summarize(rows: list[dict]) -> None:
    for experiment in dict.fromkeys(r["experiment"] for r in rows):
        sub = [r for r in rows if r["experiment"] == experiment]
        for sgd in ("sync", "async"):
            for method in dict.fromkeys(r["method"] for r in sub):
                rs = [r for r in sub if r["sgd"] == sgd and r["method"] == method and r["ratio"] is not None]
                if not rs or method == "exact":
                    continue
                ratios = [r["ratio"] for r in rs]
                taus = [r["tau_ratio_median"] for r in rs if r["tau_ratio_median"] is not None]
                q = np.quantile(ratios, [0, 0.25, 0.5, 0.75, 1])
                time_ratio = statistics.median(r["wall_s"] / max(r["exact_wall_s"], 1e-9) for r in rs)
                print(f"{experiment:8} {sgd:5} {method:8} n={len(rs):3}  utility/OPT min {q[0]:.4f} q25 {q[1]:.4f} median {q[2]:.4f} "
                      f"q75 {q[3]:.4f} max {q[4]:.4f}  median tau/tau* {statistics.median(taus):.4f}  time/exact time {time_ratio:.1f}")
        if experiment == "jobs":
            for n in sorted({r["jobs"] for r in sub}):
                rs = [r for r in sub if r["jobs"] == n and r["method"] == "smd"]
                print(f"{experiment:8} jobs={n:4}: SMD wall {statistics.median(r['wall_s'] for r in rs):.2f}s, "
                      f"exact wall {statistics.median(r['exact_wall_s'] for r in rs):.3f}s (medians over {len(rs)})")
        smd = {(r["sgd"], r["jobs"], r["units"], r["seed"]): r["utility"] for r in sub if r["method"] == "smd"}
        for base in ("esw", "optimus"):
            pairs = [smd[k] / r["utility"] for r in sub if r["method"] == base
                     for k in [(r["sgd"], r["jobs"], r["units"], r["seed"])] if r["utility"] > 0 and k in smd]
            if pairs:
                print(f"{experiment:8} SMD/{base}: median {statistics.median(pairs):.3f}, range {min(pairs):.3f}-{max(pairs):.3f}")


def plot(rows: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install '.[plot]'); no figure", file=sys.stderr)
        return
    experiments = list(dict.fromkeys(r["experiment"] for r in rows))
    fig, axes = plt.subplots(1, len(experiments), figsize=(5 * len(experiments), 3.6), squeeze=False)
    for ax, experiment in zip(axes[0], experiments):
        sub = [r for r in rows if r["experiment"] == experiment and r["method"] != "exact"]
        x_key = "units" if experiment == "capacity" else "jobs"
        for sgd, style in (("sync", "-"), ("async", "--")):
            for method in dict.fromkeys(r["method"] for r in sub):
                pts = sorted({r[x_key] for r in sub})
                ys = [statistics.mean(r["ratio"] for r in sub if r[x_key] == x and r["sgd"] == sgd and r["method"] == method) for x in pts
                      if any(r[x_key] == x and r["sgd"] == sgd and r["method"] == method for r in sub)]
                if ys:
                    color, marker = STYLE.get(method, ("C4", "o"))
                    ax.plot(pts[:len(ys)], ys, style, color=color, marker=marker, label=f"{method} {sgd}")
        ax.set_title(experiment)
        ax.set_xlabel("capacity units" if x_key == "units" else "jobs")
        ax.set_ylabel("utility / optimum")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def _number(text: str):
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", default="fig11,capacity,jobs")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--jobs", default=None, help="override the job counts of every experiment, e.g. 10,20")
    ap.add_argument("--time-limit", type=float, default=120)
    ap.add_argument("--out", default="smd_ratio.csv")
    ap.add_argument("--summarize", metavar="CSV", help="only print the summary and plot of an earlier run")
    args = ap.parse_args()
    if args.summarize:
        with open(args.summarize, newline="") as fh:
            rows = [{k: _number(v) for k, v in r.items()} for r in csv.DictReader(fh)]
        summarize(rows)
        plot(rows, Path(args.summarize).with_suffix(".png"))
        return
    catalog = load_catalog()
    plan = []
    for experiment in args.experiments.split(","):
        setting = SETTINGS[experiment]
        sizes = [int(x) for x in args.jobs.split(",")] if args.jobs else setting["jobs"]
        seeds = args.seeds if experiment != "jobs" else max(1, args.seeds // 3)
        plan += [(experiment, sgd, n, u, s) for sgd in ("sync", "async") for n in sizes for u in setting["units"] for s in range(seeds)]
    rows: list[dict] = []
    start = time.perf_counter()
    for k, (experiment, sgd, n, units, seed) in enumerate(plan, 1):
        print(f"[{k}/{len(plan)} {time.perf_counter() - start:.0f}s] {experiment} {sgd} jobs={n} units={units} seed={seed}", file=sys.stderr)
        rows += run_instance(experiment, sgd, n, units, seed, catalog, SETTINGS[experiment]["methods"], args.time_limit)
    with open(args.out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out}")
    summarize(rows)
    plot(rows, Path(args.out).with_suffix(".png"))


if __name__ == "__main__":
    main()
