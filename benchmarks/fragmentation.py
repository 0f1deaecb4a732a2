"""The fragmentation experiment of Weng et al., "Beware of Fragmentation" (USENIX ATC 2023), GPU by
GPU, with a certified upper bound (issue 40).

On each openb pod list in the data folder, pods arrive one by one, in the trace's order (``order =
trace``) or in a seeded shuffle of it (``order = shuffle-K``); when the list is exhausted, pods are
drawn from it again (seeded, with replacement, as the paper samples its trace) until the arrived GPU
demand is ``--arrive`` times the cluster's GPUs.  Every online method of the packing family
(:mod:`mlsched_opt.problems.packing.fragmentation`) places them under ``gpus = per-gpu``; a pod that
does not fit is turned away and the next one comes.  Reported: the GPUs allocated against the GPU
demand arrived (both as shares of the cluster's GPUs), the unallocated GPUs at the end (saturation),
and an upper bound on the GPUs ANY per-GPU placement of a subset of the same arrivals allocates.

The bound is an LP, solved by HiGHS (scipy): pods are aggregated by type (CPU, memory, GPU demand,
GPU models) and nodes by shape (CPU, memory, GPUs, model); ``x[t, h]`` pods of type ``t`` on nodes
of shape ``h``, at most the arrived count of ``t``, within each shape's total CPU, memory and GPUs,
and, per GPU, within the counting rows that hold GPU by GPU and not pooled: a GPU holds at most
``k`` shares above ``1/(k+1)`` and none once it is whole-allocated, so ``sum_{d_t > 1/(k+1)} x +
k * sum_{whole t} D_t x <= k * GPUs(h)`` for k = 1, 2, 3.  Every placement's aggregate satisfies
these rows, so the LP's value bounds every placement (the ``pooled_bound`` column drops the
counting rows: the pooled relaxation's bound, for comparison).

The optimum lies between that bound and the best offline placement of the same arrivals
(:func:`offline_best`: the online methods fed the pods largest GPU demand first, a checked
placement, so a lower bound on it); the table reports each method's distance from both.  Where the
exact optimum fits (``--exact-nodes``: small samples of nodes, five seeds each), the per-GPU exact
model (weight = GPU demand) is solved and certified, and each method is set against it.

    python benchmarks/fragmentation.py --scale 0.2 --orders 5 --out docs/results/data/fragmentation

``--scale`` samples that share of the 1,523 nodes (seeded), so the run fits in minutes on 2 shared
cores; the paper's runs use the whole cluster.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

METHODS = ("fgd", "best-fit", "dot-product", "gpu-packing", "gpu-clustering", "random-fit")
VARIANTS = ("default", "gpuspec33", "multigpu50")
#: The paper's headline (abstract): FGD "reduces unallocated GPUs by up to 49%" against the baselines
PAPER_HEADLINE = 0.49


def _data() -> Path:
    from mlsched_opt.traces import data_dir

    return data_dir(None) / "alibaba_openb"


def read_nodes(folder: Path, scale: float, seed: int) -> list[dict]:
    rows = list(csv.DictReader((folder / "openb_node_list_all_node.csv").read_text(encoding="utf-8").splitlines()))
    if scale < 1:
        rng = np.random.default_rng(seed)
        keep = np.sort(rng.choice(len(rows), size=max(1, round(scale * len(rows))), replace=False))
        rows = [rows[i] for i in keep]
    out = []
    for r in rows:
        server = {"name": r["sn"], "capacity": {"gpu": int(r["gpu"]), "cpu": int(r["cpu_milli"]) / 1000,
                                                "memory_gb": int(r["memory_mib"]) / 1024}}
        if r["model"]:
            server["gpu_model"] = r["model"]
        out.append(server)
    return out


def read_pods(folder: Path, variant: str) -> list[dict]:
    out = []
    for r in csv.DictReader((folder / f"openb_pod_list_{variant}.csv").read_text(encoding="utf-8").splitlines()):
        gpu = int(r["num_gpu"]) * int(r["gpu_milli"]) / 1000
        demand = {"gpu": round(gpu, 3), "cpu": int(r["cpu_milli"]) / 1000, "memory_gb": int(r["memory_mib"]) / 1024}
        pod = {"name": r["name"], "demand": demand, "models": tuple(sorted(r["gpu_spec"].split("|"))) if r.get("gpu_spec") else None}
        out.append(pod)
    return out


def _fits(pod: dict, servers: list[dict]) -> bool:
    return any(all(pod["demand"][k] <= s["capacity"][k] + 1e-9 for k in pod["demand"])
               and (pod["models"] is None or s.get("gpu_model") in pod["models"]) for s in servers)


def arrivals(pods: list[dict], servers: list[dict], order: str, seed: int, arrive: float) -> list[dict]:
    """The pods that arrive: the list in ``order``, then seeded draws from it, until ``arrive`` x the GPUs;
    pods that fit on no node of this cluster are left out (the importer's rule)."""
    rng = np.random.default_rng(seed)
    shapes = {json.dumps([s["capacity"], s.get("gpu_model")], sort_keys=True): s for s in servers}
    pool = [p for p in pods if _fits(p, list(shapes.values()))]
    if order != "trace":
        pool = [pool[i] for i in rng.permutation(len(pool))]
    target = arrive * sum(s["capacity"]["gpu"] for s in servers)
    out, total = [], 0.0
    for p in pool:
        if total >= target:
            break
        out.append(p)
        total += p["demand"]["gpu"]
    while total < target:
        p = pool[int(rng.integers(len(pool)))]
        out.append(p)
        total += p["demand"]["gpu"]
    return out


def instance_doc(servers: list[dict], pods: list[dict], name: str, weights: bool = False) -> dict:
    """The packing instance of ``pods`` arriving on ``servers`` under ``gpus = per-gpu``; each pod's
    weight is 1, or its GPU demand (``weights``: the objective is then the GPUs allocated)."""
    jobs = []
    for i, p in enumerate(pods):
        job = {"id": f"a{i:05d}-{p['name']}", "architecture": "allreduce", "workers": {"count": 1},
               "demand": {"worker": p["demand"]},
               "weight": p["demand"]["gpu"] if weights else 1}
        if p["models"]:
            job["gpu_models"] = list(p["models"])
        jobs.append(job)
    return {"format": "mlsched-instance/1", "name": name, "problem": "packing", "source": "benchmarks/fragmentation.py",
            "options": {"gpus": "per-gpu"}, "cluster": {"servers": servers}, "jobs": jobs}


def gpu_bound(servers: list[dict], pods: list[dict], per_gpu: bool = True, value: str = "gpus") -> float:
    """The LP bound of the module docstring on what any placement of a subset of ``pods`` achieves:
    the GPUs it allocates (``value = "gpus"``) or the pods it admits (``"pods"``); ``per_gpu`` adds
    the counting rows (without them: the pooled relaxation's bound)."""
    from scipy.optimize import linprog

    def key3(d: dict) -> tuple[float, float, float]:
        return d.get("gpu", 0.0), d.get("cpu", 0.0), d.get("memory_gb", 0.0)

    shapes: dict[tuple, int] = {}
    for s in servers:
        key = (*key3(s["capacity"]), s.get("gpu_model"))
        shapes[key] = shapes.get(key, 0) + 1
    types: dict[tuple, int] = {}
    for p in pods:
        key = (*key3(p["demand"]), p["models"])
        types[key] = types.get(key, 0) + 1
    tl, hl = list(types), list(shapes)
    cols = [(t, h) for t, tk in enumerate(tl) for h, hk in enumerate(hl)
            if tk[0] <= hk[0] + 1e-9 and tk[1] <= hk[1] + 1e-9 and tk[2] <= hk[2] + 1e-9 and (tk[3] is None or hk[3] in tk[3])]
    if not cols:
        return 0.0
    rows: list[list[tuple[int, float]]] = []
    rhs: list[float] = []
    for t, tk in enumerate(tl):
        rows.append([(k, 1.0) for k, (tt, _h) in enumerate(cols) if tt == t])
        rhs.append(types[tk])
    for h, hk in enumerate(hl):
        mine = [(k, tl[t]) for k, (t, hh) in enumerate(cols) if hh == h]
        n = shapes[hk]
        for r in range(3):
            rows.append([(k, tk[r]) for k, tk in mine])
            rhs.append(n * hk[r])
        if per_gpu:
            for kk in (1, 2, 3):
                row = []
                for k, tk in mine:
                    g = tk[0]
                    if g >= 1 - 1e-9:
                        row.append((k, kk * g))
                    elif g > 1 / (kk + 1) + 1e-9:
                        row.append((k, 1.0))
                rows.append(row)
                rhs.append(kk * n * hk[0])
    a = np.zeros((len(rows), len(cols)))
    for i, row in enumerate(rows):
        for k, v in row:
            a[i, k] = v
    c = -np.array([tl[t][0] if value == "gpus" else 1.0 for t, _h in cols])
    res = linprog(c, A_ub=a, b_ub=np.array(rhs), bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return float(-res.fun)


def _instance(servers: list[dict], pods: list[dict], name: str, weights: bool = False):
    """:func:`instance_doc` read and validated as the library reads a file."""
    from mlsched_opt.io import from_document

    return from_document(instance_doc(servers, pods, name, weights))


#: the methods that place the arrivals offline, largest GPU demand first (a lower bound on the optimum)
OFFLINE = ("best-fit", "fgd", "gpu-packing")


def offline_best(servers: list[dict], pods: list[dict], seed: int) -> tuple[float, str]:
    """The most GPUs a placement of the same arrivals is known to allocate, and by what: each of
    :data:`OFFLINE` placing them offline, largest GPU demand first (whole GPUs, then shares), solved
    and checked through the facade (weight = GPU demand, so the checked objective is the GPUs
    allocated).  A checked placement of a subset of the arrivals, so a lower bound on the optimum;
    where it meets :func:`gpu_bound`, the optimum is certified."""
    import mlsched_opt as ms

    ranked = sorted(pods, key=lambda p: -p["demand"]["gpu"])
    inst = _instance(servers, ranked, "offline", weights=True)
    best, by = 0.0, ""
    for method in OFFLINE:
        run = ms.solve(inst, method, seed=seed, bound=False, options={"objective": "weight"})
        assert run.check is not None and run.check.feasible and run.check.objective is not None, (method, run.check)
        if run.check.objective > best + 1e-9:
            best, by = float(run.check.objective), method
    return best, by


def run_one(servers: list[dict], pods: list[dict], method: str, seed: int) -> tuple[list[float], list[float]]:
    """Cumulative arrived and allocated GPUs after each arrival."""
    from mlsched_opt.problems.packing.fragmentation import online
    from mlsched_opt.problems.packing.view import packing_view

    view = packing_view(_instance(servers, pods, "fragmentation"))
    gpu = np.array([p["demand"]["gpu"] for p in pods])
    placed = np.zeros(len(pods), dtype=bool)

    def seen(j: int, ok: bool) -> None:
        placed[j] = ok

    online(view, method, "weight", True, seed=seed, on_job=seen)
    return list(np.cumsum(gpu)), list(np.cumsum(gpu * placed))


def small_clusters(folder: Path, sizes: list[int], seeds: int, arrive: float, methods: list[str], limit: float) -> list[dict]:
    """Where the exact optimum fits: ``seeds`` samples of each size of nodes (seeded), the default pod
    list shuffled (seeded) until ``arrive`` x their GPUs; the per-GPU exact model (weight = GPU
    demand, so its objective is the GPUs allocated; HiGHS, confirmed by SCIP, ``limit`` seconds as a
    safety net), the LP bound and the offline placements, then every method online against the
    optimum when one of them certifies it (a lower bound meets an upper bound)."""
    import mlsched_opt as ms

    nodes = read_nodes(folder, 1.0, 0)
    pods = read_pods(folder, "default")
    rows = []
    for size in sizes:
        for seed in range(seeds):
            rng = np.random.default_rng(1000 * size + seed)
            servers = [nodes[i] for i in np.sort(rng.choice(len(nodes), size=size, replace=False))]
            total = sum(s["capacity"]["gpu"] for s in servers)
            arrived = arrivals(pods, servers, f"shuffle-{seed}", seed, arrive)
            bound = gpu_bound(servers, arrived)
            offline, by = offline_best(servers, arrived, seed)
            run = ms.solve(_instance(servers, arrived, "small", weights=True), "exact", time_limit=limit,
                           seed=seed, options={"objective": "weight"})
            exact = run.check.objective if run.check is not None and run.check.feasible else None
            low = max(offline, exact or 0.0)
            high = min(bound, run.bound if run.bound is not None else bound)
            tol = 1e-6 * max(1.0, high)
            # a checked answer above a bound would make one of them wrong: refuse to certify anything
            assert low <= high + tol, f"{size} nodes, seed {seed}: checked {low} above the bound {high}"
            optimum = low if high - low <= tol else None
            row = {"nodes": size, "seed": seed, "cluster_gpus": total, "pods": len(arrived), "lp_bound_gpus": round(bound, 3),
                   "offline_gpus": round(offline, 3), "offline_by": by, "exact_status": run.status,
                   "exact_gpus": None if exact is None else round(exact, 3),
                   "exact_bound_gpus": None if run.bound is None else round(run.bound, 3),
                   "optimum_gpus": None if optimum is None else round(optimum, 3)}
            for method in methods:
                alloc = run_one(servers, arrived, method, seed)[1][-1]
                row[f"{method}_gpus"] = round(alloc, 3)
            rows.append(row)
            print(f"{size} nodes, seed {seed}: {total} GPUs; LP {bound:.2f}, offline {offline:.2f} ({by}), exact {run.status} "
                  f"{exact} (bound {run.bound}); optimum {optimum}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.125, help="share of the nodes sampled (seeded)")
    parser.add_argument("--orders", type=int, default=2, help="orders per pod list: the trace's, then seeded shuffles")
    parser.add_argument("--arrive", type=float, default=1.3, help="arrived GPU demand, in cluster GPUs")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--exact-nodes", default="8,12", help="cluster sizes (nodes) of the exact part; empty: none")
    parser.add_argument("--exact-seeds", type=int, default=5, help="samples of each size")
    parser.add_argument("--exact-limit", type=float, default=60.0, help="seconds per exact solve (a safety net)")
    parser.add_argument("--out", default="docs/results/data/fragmentation")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    folder = _data()
    servers = read_nodes(folder, args.scale, args.seed)
    total = sum(s["capacity"]["gpu"] for s in servers)
    summary, curves = [], []
    started = time.perf_counter()
    for variant in args.variants.split(","):
        if not (folder / f"openb_pod_list_{variant}.csv").exists():
            continue
        pods = read_pods(folder, variant)
        for k in range(args.orders):
            order = "trace" if k == 0 else f"shuffle-{k}"
            arrived = arrivals(pods, servers, order, args.seed + k, args.arrive)
            bound = gpu_bound(servers, arrived)
            pooled = gpu_bound(servers, arrived, per_gpu=False)
            offline, by = offline_best(servers, arrived, args.seed + k)
            marks = sorted({min(len(arrived), int(np.searchsorted(np.cumsum([p["demand"]["gpu"] for p in arrived]), f * total)) + 1)
                            for f in np.arange(0.1, args.arrive + 1e-9, 0.1)})
            bounds = {m: gpu_bound(servers, arrived[:m]) for m in marks}
            for method in args.methods.split(","):
                t0 = time.perf_counter()
                arr, alloc = run_one(servers, arrived, method, args.seed + k)
                wall = time.perf_counter() - t0
                summary.append({"variant": variant, "order": order, "method": method, "pods": len(arrived),
                                "cluster_gpus": total, "arrived_gpus": round(arr[-1], 3), "allocated_gpus": round(alloc[-1], 3),
                                "unallocated_gpus": round(total - alloc[-1], 3), "bound_gpus": round(bound, 3),
                                "pooled_bound_gpus": round(pooled, 3), "offline_gpus": round(offline, 3), "offline_by": by,
                                "from_bound_gpus": round(bound - alloc[-1], 3), "from_offline_gpus": round(offline - alloc[-1], 3),
                                "wall_s": round(wall, 2)})
                step = max(1, len(arr) // 60)
                for i in list(range(0, len(arr), step)) + [len(arr) - 1]:
                    curves.append({"variant": variant, "order": order, "method": method, "arrived_pct": round(100 * arr[i] / total, 3),
                                   "allocated_pct": round(100 * alloc[i] / total, 3)})
                print(f"{variant} {order} {method}: allocated {alloc[-1]:.1f} of {total} GPUs (arrived {arr[-1]:.1f}), "
                      f"bound {bound:.1f} (pooled {pooled:.1f}), {wall:.1f} s", flush=True)
            for m in marks:
                curves.append({"variant": variant, "order": order, "method": "bound",
                               "arrived_pct": round(100 * sum(p["demand"]["gpu"] for p in arrived[:m]) / total, 3),
                               "allocated_pct": round(100 * bounds[m] / total, 3)})
    small = small_clusters(folder, [int(n) for n in args.exact_nodes.split(",") if n], args.exact_seeds, args.arrive,
                           args.methods.split(","), args.exact_limit)
    for name, rows in (("summary.csv", summary), ("curves.csv", curves), ("exact.csv", small)):
        if not rows:  # no stale file from an earlier run beside the new ones
            (out / name).unlink(missing_ok=True)
            continue
        with open(out / name, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    plot(out)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    (out / "source.json").write_text(json.dumps({
        "command": "python benchmarks/fragmentation.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "commit": commit, "date": date.today().isoformat(), "machine": f"{platform.machine()}, 2 shared cores",
        "transcribed": f"{len(servers)} of 1,523 openb nodes sampled (seed {args.seed}, {total} GPUs); "
                       f"{time.perf_counter() - started:.0f} s in all."},
        indent=2) + "\n", encoding="utf-8")
    return 0


def plot(out: Path) -> None:
    """The paper's figure: GPU allocation against arrived GPU demand, one line per method, the bound
    dashed; one panel per pod list (the trace's order)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader((out / "curves.csv").read_text(encoding="utf-8").splitlines()))
    variants = sorted({r["variant"] for r in rows}, key=lambda v: VARIANTS.index(v) if v in VARIANTS else 99)
    fig, axes = plt.subplots(1, len(variants), figsize=(4.4 * len(variants), 3.6), squeeze=False)
    for ax, variant in zip(axes[0], variants):
        for method in (*METHODS, "bound"):
            pts = [(float(r["arrived_pct"]), float(r["allocated_pct"])) for r in rows
                   if r["variant"] == variant and r["order"] == "trace" and r["method"] == method]
            if pts:
                x, y = zip(*pts)
                ax.plot(x, y, "k--" if method == "bound" else "-", lw=1.4 if method in ("fgd", "bound") else 1,
                        label="upper bound (LP)" if method == "bound" else method)
        ax.set_title(f"openb {variant}, trace order")
        ax.set_xlabel("arrived GPU demand (% of cluster GPUs)")
        ax.set_ylabel("GPUs allocated (% of cluster GPUs)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "fragmentation.png", dpi=110)


if __name__ == "__main__":
    sys.exit(main())
