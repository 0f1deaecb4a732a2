"""Philly and Pollux jobs as an OASiS instance (``mlsched import philly|pollux --problem oasis``).

Rules (every instance's ``source`` repeats the ones it used; [OURS] marks our design choices):

* **Servers.**  On Alibaba's cluster (the default, Weng et al., USENIX ATC 2023) the worker
  servers are ``--servers`` GPU nodes and the PS servers ``--servers`` CPU-only nodes (all
  1,213 and all 310 by default), each with its real GPUs, cores and memory: OASiS keeps
  workers on GPU machines and PSs on machines without GPUs (spec 000 section 1.1), and this
  production cluster has exactly those two kinds.  With ``--set cluster=gavel|pollux`` the
  worker servers are that paper's GPU servers and the PS servers as many c4.8xlarge (the
  generator's PS shape, spec pitfall 5) [OURS].  No trace gives storage or NIC bandwidth: every
  server gets the generator's 1 TB and a bandwidth drawn from the paper's [20, 50] Gbps.
* **Time.**  ``slot_s`` (default 3600 s, the generator's 1 h, spec pitfall 6); arrivals by
  :func:`~mlsched_opt.traces.mapping.arrival_slots` (``arrivals=real`` by default).  Without
  ``--slots`` the horizon is the last arrival slot + 10 (the generator's default horizon), so
  every job has at least 10 slots to run in [OURS].
* **Workloads.**  The trace's model (Pollux) or a seeded uniform draw among the catalog
  workloads with a size, a typical demand and a measured one-GPU throughput
  (:func:`~mlsched_opt.traces.mapping.assign_models`).  ``step.compute_s`` (tau) is one step of
  that one-GPU measurement (V100 where measured, else the first listed), ``step.gradient_mb``
  (e) the catalog's fp32 gradient size, or for a model without one (Pollux's deepspeech2, ncf,
  yolov3) a seeded draw from the paper's [30, 575] MB.
* **Demand.**  Per worker and per PS: the catalog's ``demand`` (one GPU per worker, CPU,
  memory, bandwidth b and B: mlsched design defaults, not measurements); storage per task
  drawn from the paper's 5-10 GB.
* **Size and work.**  One worker is one GPU, so the trace's GPU count ``g`` is the job's
  worker cap: ``chunks = workers.max = ps.max = g`` (the cap (3) is N) [OURS].  ``g`` is
  capped at the most workers the empty pools can host for the job (its workers on the worker
  servers and ``ceil(y b / B)`` PSs on the PS servers), and the source says how many were capped;
  a job of which not even one worker and one PS fit is a user error (raise ``--servers``).
  The work is the trace's GPU time ``g x duration``: at the (capped) ``N`` workers it takes
  ``d = g x duration / N`` seconds; ``epochs = ceil(d / slot_s)`` (an "epoch" is a stretch of at
  most one slot, so a chunk is shorter than a slot as the chunk DP assumes, pitfall 8) and
  ``minibatches_per_chunk = round(d / (epochs x (tau + 2 e / b)))`` (at least 1), so running
  at ``N`` workers takes the real duration (to a mini-batch) and the shortest run is
  ``ceil(epochs x rho)`` slots [OURS].
* **Pollux's durations.**  A Pollux workload names no duration; the shared reader gives each
  job its application's class-median Philly GPU time over its replicas
  (:data:`mlsched_opt.traces.sources.POLLUX_RULE`), so every family reads the same durations.
* **Utilities.**  The trace has no deadlines or priorities: the generator's sigmoid with the
  paper's classes (10/55/35 % time-insensitive/sensitive/critical), gamma1 in [1, 100], gamma3
  in 1..15 slots (spec 000 section 1.4), drawn with the seed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import UserError
from ...io.catalog import Catalog
from ...tolerances import FIT_TOL
from ...traces import ImportSpec, Trace, TraceJob, describe
from ...traces.mapping import ARRIVALS, arrival_slots, assign_models, gpu_seconds, gradient_sizes, usable_models, workload_figures
from ...traces.model import Node, pick_nodes
from ...traces.sources import alibaba_nodes, cluster
from ..base import Option
from .generate import CLASSES, PS_SHAPE, SLOT_S, STORAGE_GB
from .view import MAX_CELLS, MAX_SLOTS

#: Pollux application class -> (catalog workloads, class, median GPU-hours of the class's Philly jobs).
#: Median of ``gpu_time`` over ``philly/philly_jobs.csv`` rows with ``duration >= 60`` and
#: ``gpu_time < 1000 h`` (Pollux's filters) in the class's GPU-time range (tests recompute them).
TASK_STORAGE = (5, 10)
SERVER_BANDWIDTH = (20.0, 50.0)
DEFAULT_SLOTS = 10
RESOURCES = ("gpu", "cpu", "memory_gb", "storage_gb", "bandwidth_gbps")

OPTIONS = (
    ARRIVALS,
    Option("slot_s", SLOT_S, None, "slot length in seconds (default 1 h, the generator's)", minimum=60.0, maximum=7 * 86400.0),
)


# ---- the importer --------------------------------------------------------------------------------

def from_trace(trace: Trace, spec: ImportSpec, catalog: Catalog) -> dict[str, Any]:
    n = len(trace.jobs)
    slot_s = float(spec.options.get("slot_s", SLOT_S))
    workers, ps, where = _servers(spec)
    H, K = len(workers), len(ps)

    at, T, arrival_rule = arrival_slots(trace, slot_s, spec.slots, spec.options.get("arrivals", "real"), DEFAULT_SLOTS)
    horizon_rule = f"horizon: {T} slots of {slot_s:g} s"
    if spec.slots is None and spec.options.get("arrivals", "real") == "real":
        T = max(T, int(at.max()) + DEFAULT_SLOTS)
        horizon_rule = f"horizon: {T} slots of {slot_s:g} s (the last arrival slot + {DEFAULT_SLOTS}, our design)"
    if T > MAX_SLOTS:
        raise UserError(f"the window needs {T:,} slots of {slot_s:g} s; problem 'oasis' handles at most {MAX_SLOTS:,} "
                        "(raise --set slot_s or take fewer --jobs)", None, "--set slot_s")
    # the view's rule (slots x servers x resources): schedules are sparse, so the job count is not in it
    cells = T * (H + K) * len(RESOURCES)
    if cells > MAX_CELLS:
        raise UserError(f"{H + K:,} servers over {T:,} slots make {cells:,} per-slot cells, more than problem "
                        f"'oasis' handles ({MAX_CELLS:,}); take fewer --servers or --jobs, or raise --set slot_s", None, "--servers")

    # a trace that names its models may use workloads without a catalog size; draws only take sized ones
    pool = usable_models(catalog, need_size=not any(j.model for j in trace.jobs))
    models, model_rule = assign_models(trace, pool, spec)
    figures = workload_figures(models, catalog)
    gradient, gradient_notes = gradient_sizes(models, catalog, spec)
    seconds, work_rule = gpu_seconds(trace)

    storage = spec.rng("storage").integers(TASK_STORAGE[0], TASK_STORAGE[1] + 1, size=(n, 2))
    worker_dem = np.zeros((n, len(RESOURCES)))
    ps_dem = np.zeros((n, len(RESOURCES)))
    for i, m in enumerate(models):
        _, w, s = figures[m]
        worker_dem[i] = [w.get("gpu", 1), w.get("cpu", 0), w.get("memory_gb", 0), storage[i, 0], w.get("bandwidth_gbps", 1)]
        ps_dem[i] = [0, s.get("cpu", 0), s.get("memory_gb", 0), storage[i, 1], s.get("bandwidth_gbps", 5)]
    b, B = worker_dem[:, 4], ps_dem[:, 4]
    if np.any(b > B):
        bad = int(np.argmax(b > B))
        raise UserError(f"catalog model {models[bad]!r} gives a PS less bandwidth than a worker ({B[bad]:g} < {b[bad]:g} Gbps); "
                        "OASiS needs B >= b", None, f"models/{models[bad]}.toml demand")

    bandwidth = spec.rng("bandwidth").uniform(*SERVER_BANDWIDTH, size=H + K).round(3)
    room = _room(worker_dem, ps_dem, _caps(workers, bandwidth[:H]), _caps(ps, bandwidth[H:]))
    gpus = np.array([max(j.gpus, 1) for j in trace.jobs])
    N = np.maximum(np.minimum(gpus, room), 1)
    capped = int(np.sum(gpus > N))
    if np.any(room == 0):
        i = int(np.argmax(room == 0))
        job = trace.jobs[i]
        raise UserError(f"job {job.id} ({models[i]}) cannot place one worker on these {H} worker servers and one PS on these {K} "
                        f"PS servers (worker {_demand(worker_dem[i])}; PS {_demand(ps_dem[i])}); raise --servers or change --seed",
                        trace.file, f"row {job.row}")

    rows = {m: figures[m][0] for m in figures}
    tau = np.array([1.0 / rows[m]["steps_per_s"] for m in models])
    minibatch_s = tau + 2.0 * gradient * 8.0 / 1000.0 / b
    d = seconds / N
    epochs = np.maximum(np.ceil(d / slot_s - FIT_TOL), 1).astype(int)
    minibatches = np.maximum(np.rint(d / (epochs * minibatch_s)), 1).astype(int)

    rng = spec.rng("utility")
    kind = rng.choice(len(CLASSES), size=n, p=[p for _, p in CLASSES])
    gamma1 = rng.uniform(1.0, 100.0, size=n)
    g_sens = rng.uniform(0.01, 1.0, size=n)
    g_crit = rng.uniform(4.0, 6.0, size=n)
    gamma3 = rng.integers(1, 16, size=n)

    servers = []
    for h, node in enumerate(workers):
        cap = {"gpu": node.gpus, "cpu": node.cpu, "memory_gb": node.memory_gb, "storage_gb": STORAGE_GB,
               "bandwidth_gbps": float(bandwidth[h])}
        servers.append({"name": node.name, "role": "worker", "gpu_model": node.gpu_model, "capacity": cap})
    for k, node in enumerate(ps):
        cap = {"cpu": node.cpu, "memory_gb": node.memory_gb, "storage_gb": STORAGE_GB,
               "bandwidth_gbps": float(bandwidth[H + k])}
        servers.append({"name": node.name, "role": "ps", "capacity": cap})

    jobs = []
    for i, job in enumerate(trace.jobs):
        w, s = worker_dem[i], ps_dem[i]
        gamma2 = 0.0 if kind[i] == 0 else round(float(g_sens[i] if kind[i] == 1 else g_crit[i]), 3)
        label = CLASSES[int(kind[i])][0]
        size = int(N[i])
        jobs.append({
            "id": job.id,
            "description": f"{models[i]}, trace row {job.row}: {_gpus(job.gpus)}" + _duration_text(job)
                           + (f", capped to {size} workers" if gpus[i] > size else "")
                           + f"; time-{label}",
            "model": models[i],
            "arrival_slot": int(at[i]),
            "work": {"epochs": int(epochs[i]), "chunks": size, "minibatches_per_chunk": int(minibatches[i])},
            "step": {"compute_s": round(float(tau[i]), 6), "gradient_mb": float(gradient[i])},
            "workers": {"min": 1, "max": size},
            "ps": {"min": 1, "max": size},
            "demand": {"worker": {r: _num(v) for r, v in zip(RESOURCES, w) if v or r == "gpu"},
                       "ps": {r: _num(v) for r, v in zip(RESOURCES, s) if v}},
            "utility": {"kind": "sigmoid", "gamma1": round(float(gamma1[i]), 2), "gamma2": gamma2, "gamma3": int(gamma3[i])},
        })

    ref = sorted({f"{m} {rows[m]['gpu_model']}" for m in figures})
    extra = [where, arrival_rule, horizon_rule, model_rule, *gradient_notes,
             "size: one worker per GPU, so the trace's GPU count is the job's worker cap "
             "(chunks = workers.max = ps.max, our design)"
             + (f"; {capped} of {n} jobs capped to the most workers the empty pools host for them, keeping their GPU time"
                if capped else ""),
             f"{work_rule}; at its worker cap a job takes its GPU time / cap: epochs = ceil(that / slot_s), "
             f"minibatches_per_chunk = round(that / (epochs x (tau + 2 e / b))) (our design); tau = one step of the "
             f"catalog's one-GPU measurement ({', '.join(ref)})",
             "demand: the catalog's per-worker and per-PS demand (mlsched design defaults, not measured); storage per task "
             f"drawn from the paper's {TASK_STORAGE[0]}-{TASK_STORAGE[1]} GB",
             f"servers: no trace gives storage or bandwidth: {STORAGE_GB} GB storage and a bandwidth drawn "
             f"from the paper's [{SERVER_BANDWIDTH[0]:g}, {SERVER_BANDWIDTH[1]:g}] Gbps (the generator's figures)",
             "utilities: the trace has none; sigmoids with the paper's classes 10/55/35 % time-insensitive/sensitive/critical, "
             "gamma1 in [1, 100], gamma2 0 / [0.01, 1] / [4, 6], gamma3 in 1..15 slots (Bao et al., INFOCOM 2018, section V-A)"]
    if capped:
        spec.notes.append(f"{capped} of {n} jobs ask for more GPUs than the servers host at once; capped (see the source)")
    cluster_name = spec.options.get("cluster", "alibaba")
    return {
        "format": "mlsched-instance/1",
        "name": f"oasis-{trace.source}-{n}j-{H}+{K}s-{T}t-seed{spec.seed}",
        "description": f"{n:,} {trace.source} jobs on {H:,} worker and {K:,} PS servers ({cluster_name}), "
                       f"{T} slots of {slot_s:g} s",
        "source": describe(trace, None, spec, extra),
        "problem": "oasis",
        "time": {"slots": T, "slot_s": slot_s},
        "cluster": {"servers": servers},
        "jobs": jobs,
    }


def _demand(vector: np.ndarray) -> str:
    return ", ".join(f"{r} {v:g}" for r, v in zip(RESOURCES, vector) if v)


def _gpus(count: int) -> str:
    return f"{count} GPU" + ("" if count == 1 else "s")


def _duration_text(job: TraceJob) -> str:
    return f" x {job.duration_s:g} s" if job.duration_s is not None else ""


def _num(v: float) -> float | int:
    return int(v) if float(v).is_integer() else float(v)


def _servers(spec: ImportSpec) -> tuple[list[Node], list[Node], str]:
    """Worker servers (GPU nodes), PS servers, and a sentence saying where they come from."""
    gpu = cluster(spec, gpu_only=True)
    workers = list(gpu.nodes)
    if gpu.name == "alibaba":
        cpu_only = [n for n in alibaba_nodes(spec.data) if n.gpus == 0]
        ps = pick_nodes(cpu_only, spec.servers, spec.rng("ps servers"), "CPU-only nodes", spec.notes)
        how = "all" if len(ps) == len(cpu_only) else f"{len(ps):,} drawn with seed {spec.seed}"
        where = (f"worker servers: {gpu.provenance.removeprefix('cluster: ')}; PS servers: {how} of the same cluster's "
                 f"{len(cpu_only):,} CPU-only nodes (OASiS keeps PSs on machines without GPUs, and this cluster has both kinds)")
        return workers, ps, where
    cap, what = PS_SHAPE
    ps = [Node(f"ps{k}", None, 0, float(cap["cpu"]), float(cap["memory_gb"])) for k in range(len(workers))]
    spec.notes.append(f"oasis: {len(ps)} PS servers beside the {len(workers)} worker servers (--servers counts each, as in "
                      f"`mlsched generate --problem oasis`)")
    where = (f"worker servers: {gpu.provenance.removeprefix('cluster: ')}; PS servers: {len(ps)} of the generator's PS shape "
             f"({what}; the paper's cluster has no CPU-only servers, our design)")
    return workers, ps, where


def _caps(nodes: list[Node], bandwidth: np.ndarray) -> np.ndarray:
    """Capacities over :data:`RESOURCES`, as written into the instance."""
    return np.array([[n.gpus, n.cpu or 0.0, n.memory_gb or 0.0, STORAGE_GB, bw] for n, bw in zip(nodes, bandwidth)],
                    dtype=float).reshape(len(nodes), len(RESOURCES))


def _room(worker: np.ndarray, ps: np.ndarray, wcap: np.ndarray, pcap: np.ndarray) -> np.ndarray:
    """Most workers each job can run at once on the empty pools: its workers fit the worker servers and
    ``ceil(y b / B)`` of its PSs fit the PS servers.  Computed once per distinct demand pair."""
    pairs, inverse = np.unique(np.hstack([worker, ps]), axis=0, return_inverse=True)
    R = worker.shape[1]
    out = np.zeros(len(pairs), dtype=np.int64)
    for u, row in enumerate(pairs):
        w, s = row[:R], row[R:]
        wfit = _fit(wcap, w)
        pfit = _fit(pcap, s)
        b, B = w[4], s[4]
        out[u] = min(wfit, math.floor(pfit * B / b + FIT_TOL)) if b > 0 else wfit
    return out[inverse.reshape(-1)]


def _fit(caps: np.ndarray, demand: np.ndarray) -> int:
    used = demand > 0
    if not len(caps):
        return 0
    if not used.any():
        return 10**9
    return int(np.sum(np.floor(np.min(caps[:, used] / demand[used], axis=1) + FIT_TOL)))
