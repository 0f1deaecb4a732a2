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

    python benchmarks/fragmentation.py --scale 0.125 --orders 2 --out docs/results/data/fragmentation

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


def instance_doc(servers: list[dict], pods: list[dict], name: str) -> dict:
    jobs = []
    for i, p in enumerate(pods):
        job = {"id": f"a{i:05d}-{p['name']}", "architecture": "allreduce", "workers": {"count": 1},
               "demand": {"worker": p["demand"]}, "weight": 1}
        if p["models"]:
            job["gpu_models"] = list(p["models"])
        jobs.append(job)
    return {"format": "mlsched-instance/1", "name": name, "problem": "packing", "source": "benchmarks/fragmentation.py",
            "options": {"gpus": "per-gpu"}, "cluster": {"servers": servers}, "jobs": jobs}


def gpu_bound(servers: list[dict], pods: list[dict], per_gpu: bool = True) -> float:
    """The LP bound of the module docstring on the GPUs any placement of a subset of ``pods`` allocates."""
    from scipy.optimize import linprog

    shapes: dict[tuple, int] = {}
    for s in servers:
        c = s["capacity"]
        key = (c["gpu"], c["cpu"], c["memory_gb"], s.get("gpu_model"))
        shapes[key] = shapes.get(key, 0) + 1
    types: dict[tuple, int] = {}
    for p in pods:
        d = p["demand"]
        key = (d["gpu"], d["cpu"], d["memory_gb"], p["models"])
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
    c = -np.array([tl[t][0] for t, _h in cols])
    res = linprog(c, A_ub=a, b_ub=np.array(rhs), bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return float(-res.fun)


def run_one(servers: list[dict], pods: list[dict], method: str, seed: int) -> tuple[list[float], list[float]]:
    """Cumulative arrived and allocated GPUs after each arrival."""
    from mlsched_opt.io import from_document
    from mlsched_opt.problems.packing.fragmentation import online
    from mlsched_opt.problems.packing.view import packing_view

    view = packing_view(from_document(instance_doc(servers, pods, "fragmentation")))
    gpu = np.array([p["demand"]["gpu"] for p in pods])
    placed = np.zeros(len(pods), dtype=bool)

    def seen(j: int, ok: bool) -> None:
        placed[j] = ok

    online(view, method, "weight", True, seed=seed, on_job=seen)
    return list(np.cumsum(gpu)), list(np.cumsum(gpu * placed))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.125, help="share of the nodes sampled (seeded)")
    parser.add_argument("--orders", type=int, default=2, help="orders per pod list: the trace's, then seeded shuffles")
    parser.add_argument("--arrive", type=float, default=1.3, help="arrived GPU demand, in cluster GPUs")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seed", type=int, default=0)
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
                                "pooled_bound_gpus": round(pooled, 3), "from_bound_gpus": round(bound - alloc[-1], 3),
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
    for name, rows in (("summary.csv", summary), ("curves.csv", curves)):
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
