"""Harmony's learned policy against the heuristics and the exact placement (spec 004 sections 4 and 6).

    python benchmarks/harmony_drl.py --traces 10 --out harmony_drl.csv

Online: ``--traces`` held-out test traces per world (test seed range of
:func:`~mlsched_opt.problems.harmony.train.trace_seed`, 40 jobs, 6 servers, load 0.8), in the
default, hard and Gavel-fitted worlds; methods ``drl`` (argmax), the six heuristics and the myopic
reference; the average JCT of every run (intervals), each placement checked.  The default world
uses the shipped policy (``models/harmony-drl.pt``); the other worlds, and the static batches, get
a policy trained here with the same settings (``--episodes``; saved under ``--model-dir`` and
reused when present).

Static batches (spec 6a): ``--static`` instances for each of M in {3, 4} servers and N in {3, 4}
jobs; the exhaustive optimum, the surrogate (CP-SAT) scored in the true world, ``drl`` with a
policy trained on static batches, the heuristics and myopic; the gap ``JCT / JCT* - 1``.

One CSV row per (setting, instance, method); the summary gives the mean JCT per method and
world, Harmony's reduction against each heuristic and the best one, and the median gap to the
optimum per method; plots (learning curves, JCT per method, gap to exact) go next to the CSV.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from mlsched_opt.bench.files import read_rows, save_figure, subplots, write_rows
from mlsched_opt.checking import check_solution
from mlsched_opt.errors import OptionError
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.problems.base import TrainSpec
from mlsched_opt.problems.harmony.policy import DEFAULT_MODEL
from mlsched_opt.problems.harmony.train import trace_seed
from mlsched_opt.solvers import SolveOptions

FAMILY = get_family("harmony")
HEURISTICS = ("load-balance", "tetris", "least-interference", "packing", "standalone", "random")
WORLDS = ("default", "hard", "gavel")
FIELDS = ["setting", "world", "instance", "jobs", "servers", "method", "avg_jct", "optimum", "gap", "check", "wall_s"]


def policy_for(name: str, options: dict, episodes: int, model_dir: Path) -> Path:
    if name == "default" and DEFAULT_MODEL.is_file():
        return DEFAULT_MODEL
    path = model_dir / f"harmony-{name}.pt"
    if not path.is_file():
        print(f"training the {name} policy ({episodes} episodes) ...", file=sys.stderr)
        every = max(1, episodes // 10)
        FAMILY.train(TrainSpec(episodes, 0, str(path), options,
                               lambda e, msg: e % every == 0 and print(f"  episode {e}: {msg}", file=sys.stderr)))
    return path


def instance(seed: int, jobs: int, servers: int, options: dict):
    catalog = load_catalog()
    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed, options=FAMILY.parse_generate_options(options))
    return from_document(FAMILY.generate(spec, catalog), catalog=catalog)


def run(inst, method: str, options: dict, solver: str = "highs"):
    start = time.perf_counter()
    sol = FAMILY.run(inst, method, SolveOptions(solver=solver, time_limit=120, gap=0.0), options)
    # the checker takes the problem options (world, starts) from us, never from the solution
    problem = {o.name for o in FAMILY.options if o.problem}
    check = check_solution(inst, sol, options={k: v for k, v in options.items() if k in problem})
    return sol.report.objective, check.feasible, time.perf_counter() - start


def online(args, policies: dict[str, Path]) -> list[dict]:
    rows = []
    for world in WORLDS:
        gen_world = "gavel" if world == "gavel" else "default"
        for k in range(args.traces):
            inst = instance(trace_seed("test", 0, k), 40, 6, {"world": gen_world})
            for method in ("drl", *HEURISTICS, "myopic"):
                value, ok, wall = run(inst, method, {"world": world, "model": str(policies[world])})
                rows.append({"setting": "online", "world": world, "instance": k, "jobs": 40, "servers": 6, "method": method,
                             "avg_jct": value, "optimum": "", "gap": "", "check": ok, "wall_s": round(wall, 4)})
            best = min(r["avg_jct"] for r in rows[-8:] if r["method"] != "drl")
            drl = rows[-8]["avg_jct"]
            print(f"{world} trace {k}: drl {drl:.2f}, best other {best:.2f}", file=sys.stderr)
    return rows


def static(args, policy: Path) -> list[dict]:
    rows = []
    for servers in (3, 4):
        for jobs in (3, 4):
            for k in range(args.static):
                inst = instance(trace_seed("test", 0, 1000 * servers + 100 * jobs + k), jobs, servers, {"static": True})
                try:
                    opt, _, wall = run(inst, "exact", {})
                except OptionError as exc:   # the starts=any search refuses batches past its size limit
                    print(f"static M={servers} N={jobs} #{k}: skipped ({exc})", file=sys.stderr)
                    continue
                for method in ("exact", "surrogate", "drl", *HEURISTICS, "myopic"):
                    value, ok, wall = run(inst, method, {"model": str(policy)}, solver="cpsat")
                    rows.append({"setting": "static", "world": "default", "instance": k, "jobs": jobs, "servers": servers,
                                 "method": method, "avg_jct": value, "optimum": opt, "gap": value / opt - 1, "check": ok,
                                 "wall_s": round(wall, 4)})
            print(f"static M={servers} N={jobs}: done", file=sys.stderr)
    return rows


def summarize(rows: list[dict], policies: dict[str, Path], out: Path) -> None:
    for r in rows:
        r["avg_jct"] = float(r["avg_jct"])
    bad = [r for r in rows if str(r["check"]) != "True"]
    print(f"\n{len(rows)} runs, {len(bad)} failing the checker")
    methods = ("drl", *HEURISTICS, "myopic")
    mean = {}
    for world in WORLDS:
        sel = [r for r in rows if r["setting"] == "online" and r["world"] == world]
        if not sel:
            continue
        mean[world] = {m: statistics.mean(r["avg_jct"] for r in sel if r["method"] == m) for m in methods}
        best = min(HEURISTICS, key=lambda m: mean[world][m])
        print(f"\nonline, {world} world, {len({r['instance'] for r in sel})} test traces (mean average JCT, intervals):")
        for m in methods:
            red = 1 - mean[world]["drl"] / mean[world][m]
            print(f"  {m:20s} {mean[world][m]:8.2f}   drl {'below' if red >= 0 else 'above'} it by {abs(red):.1%}")
        print(f"  best heuristic: {best}; drl vs it: {1 - mean[world]['drl'] / mean[world][best]:+.1%}")
    gaps = {}
    sel = [r for r in rows if r["setting"] == "static"]
    if sel:
        print(f"\nstatic batches ({len(sel) // (len(methods) + 2)} instances, M, N in {{3, 4}}): gap to the exhaustive optimum")
        for m in ("surrogate", *methods):
            g = [float(r["gap"]) for r in sel if r["method"] == m]
            gaps[m] = statistics.median(g)
            print(f"  {m:20s} median {gaps[m]:7.2%}   worst {max(g):7.2%}   optimal in {sum(x < 1e-9 for x in g)}/{len(g)}")
    figure = subplots(3, figsize=(16, 4.5))
    if figure is None:
        return
    import torch

    fig, (ax1, ax2, ax3) = figure
    for name, path in policies.items():
        curve = torch.load(path, weights_only=True)["meta"]["curve"]
        ax1.plot([c[0] for c in curve], [c[1] for c in curve], marker="o", label=name)
    ax1.set(xlabel="episode", ylabel="validation average JCT (intervals)", title="learning curves")
    ax1.legend()
    width = 0.25
    for i, world in enumerate(mean):
        ax2.bar([x + i * width for x in range(len(methods))], [mean[world][m] for m in methods], width, label=world)
    ax2.set_xticks([x + width for x in range(len(methods))], methods, rotation=45, ha="right")
    ax2.set(ylabel="mean average JCT (intervals)", title="online test traces")
    ax2.legend()
    if gaps:
        ax3.bar(list(gaps), [100 * v for v in gaps.values()])
        ax3.set_xticks(range(len(gaps)), list(gaps), rotation=45, ha="right")
        ax3.set(ylabel="median gap to exact (%)", title="static batches")
    save_figure(fig, out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=10, help="online test traces per world")
    ap.add_argument("--static", type=int, default=5, help="static instances per (M, N) cell")
    ap.add_argument("--episodes", type=int, default=200, help="episodes for the policies trained here")
    ap.add_argument("--model-dir", type=Path, default=Path("harmony_models"))
    ap.add_argument("--out", type=Path, default=Path("harmony_drl.csv"))
    ap.add_argument("--summarize", action="store_true", help="only summarize an existing CSV")
    args = ap.parse_args()
    args.model_dir.mkdir(parents=True, exist_ok=True)
    policies = {
        "default": policy_for("default", {}, args.episodes, args.model_dir),
        "hard": policy_for("hard", {"world": "hard"}, args.episodes, args.model_dir),
        "gavel": policy_for("gavel", {"world": "gavel"}, args.episodes, args.model_dir),
        "static": policy_for("static", {"static": "true", "servers": "4", "jobs_min": "3", "jobs_max": "4"},
                             args.episodes, args.model_dir),
    }
    if args.summarize:
        summarize(read_rows(args.out), policies, args.out)
        return 0
    rows = online(args, policies) + static(args, policies["static"])
    write_rows(args.out, FIELDS, rows)
    summarize(rows, policies, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
