"""Philly and Pollux jobs as an SMD instance (``mlsched import philly|pollux --problem smd``).

SMD schedules one interval (spec 002 section 1.1: the jobs submitted during an interval are
scheduled together, and the interval is long enough for every admitted job to finish), so the
instance has no time: the trace's submit times only choose the window, which is the interval's
batch of jobs.  ``--slots`` does not apply.  Rules ([OURS] marks our design choices; the
instance's ``source`` repeats them):

* **Capacity.**  SMD reserves capacity by each admitted job's declared limit against the
  cluster's total (C1).  The servers are the real nodes of the import (``--servers`` nodes of
  Alibaba's 1,523, CPU-only ones included, all by default; or ``--set cluster=gavel|pollux``),
  each with its GPUs, cores and memory; the capacity is their total.  No trace gives storage,
  and the catalog's demands have none, so the instance has no storage resource.
* **Workloads.**  The trace's model (Pollux) or a seeded uniform draw among the catalog
  workloads with a size, a typical demand and a measured one-GPU throughput (the generator's
  ``workloads=catalog`` pool); layer times follow from the catalog as the family's view
  derives them (the one-GPU measurement split 1:2 between FP and BP over the catalog's layers,
  pushes of each layer's fp32 bytes over B).  A Pollux model without a catalog size (deepspeech2,
  ncf, yolov3) gets a gradient size drawn from the paper's [30, 575] MB and the same derivation
  written out as one layer (forward_ms, backward_ms, comm_ms).
* **Demand and limit.**  Per worker and per PS: the catalog's ``demand`` (one GPU per worker;
  mlsched design defaults, not measurements).  The trace's GPU count ``g`` is the job's
  declared GPU limit: ``limit = g x (worker + PS demand)``, room for ``g`` workers and ``g`` PSs
  [OURS]; ``g`` is capped so that the limit fits the cluster's total (and the source says how
  many were capped).  Worker and PS ranges follow from the limit as in the generator.  A worker or
  PS that fits on no single server (the instance format refuses it) is a user error.
* **Batch and iterations.**  Philly names no batch: the local batch ``m`` is the catalog
  measurement's and the global ``K = m g``.  Pollux names the global batch ``K``; ``m = ceil(K / g)``.
  ``iterations`` = the samples the job's GPU time processes at the measured one-GPU rate,
  divided by the samples per iteration (``K`` sync, ``m`` async) [OURS]; communication is not
  in this conversion, the speed model adds it.  The GPU time is the trace's GPUs x duration,
  or for Pollux (no duration) the median of its application's Philly GPU-time class
  (:data:`~mlsched_opt.traces.sources.POLLUX_CLASSES`, applied by the shared reader).
* **What no trace has** (the generator's ``workloads=catalog`` draws, with the seed): sync or
  async SGD (option ``sgd``, each job either with probability 1/2 by default), per-iteration
  overheads (worker 3-4 ms, PS 0-0.01 ms), async share in [0, 1], the PS bandwidth where the
  catalog has none (5-20 Gbps), and the paper's utilities (gamma1 in [1, 100], gamma2 in [4, 6],
  gamma3 in [1, 15]) on the generator's time scale (the median completion time at ESW maps to 8).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import OptionError, UserError
from ...io.catalog import Catalog
from ...tolerances import FIT_TOL
from ...traces import ImportSpec, Trace, describe
from ...traces.mapping import assign_models, gpu_seconds, gradient_sizes, usable_models, workload_figures
from ...traces.sources import cluster
from ..base import Option
from .generate import SGD_MIX, _bounds, _calibration
from .view import FP_SHARE

RESOURCES = ("gpu", "cpu", "memory_gb")
PS_BANDWIDTH = (5.0, 20.0)

OPTIONS = (
    Option("sgd", "mix", SGD_MIX, "synchronous, asynchronous, or each job either with probability 1/2 (the generator's default)"),
)


def from_trace(trace: Trace, spec: ImportSpec, catalog: Catalog) -> dict[str, Any]:
    if spec.slots is not None:
        raise OptionError("problem 'smd' schedules one interval and has no slots; drop --slots", field="--slots")
    n = len(trace.jobs)
    nodes = cluster(spec, gpu_only=False)
    servers = [node.server() for node in nodes.nodes]
    total = np.array([sum((s["capacity"][r] or 0) for s in servers) for r in RESOURCES], dtype=float)
    if total[0] <= 0:
        raise UserError(f"the servers of this import ({len(servers)} drawn) have no GPU; raise --servers or change --seed", None,
                        "--servers")

    pool = usable_models(catalog, need_size=not any(j.model for j in trace.jobs))
    models, model_rule = assign_models(trace, pool, spec)
    figures = workload_figures(models, catalog)
    gradient, gradient_notes = gradient_sizes(models, catalog, spec)
    seconds, work_rule = gpu_seconds(trace)

    worker = np.array([[figures[m][1].get(r, 0) for r in RESOURCES] for m in models], dtype=float).reshape(n, len(RESOURCES))
    ps = np.array([[figures[m][2].get(r, 0) for r in RESOURCES] for m in models], dtype=float).reshape(n, len(RESOURCES))
    caps = np.array([[s["capacity"][r] or 0 for r in RESOURCES] for s in servers], dtype=float).reshape(len(servers), len(RESOURCES))
    for what, dem in (("worker", worker), ("PS", ps)):
        # from_document refuses a task that fits on no single server; say so in the trace's terms
        kinds, inverse = np.unique(dem, axis=0, return_inverse=True)
        fits = np.asarray((caps[None, :, :] >= kinds[:, None, :] - FIT_TOL).all(axis=2))  # (kinds, servers)
        hosted = np.asarray(fits.any(axis=1))[inverse.reshape(-1)]
        if not hosted.all():
            i = int(np.argmin(hosted))
            job = trace.jobs[i]
            raise UserError(f"one {what} of job {job.id} ({models[i]}: {', '.join(f'{r} {v:g}' for r, v in zip(RESOURCES, dem[i]) if v)}) "
                            f"fits on none of these {len(servers)} servers; raise --servers or change --seed", trace.file, f"row {job.row}")
    pair = worker + ps
    with np.errstate(divide="ignore"):
        room = np.floor(np.min(np.where(pair > 0, total / np.where(pair > 0, pair, 1), np.inf), axis=1) + FIT_TOL)
    gpus = np.array([max(j.gpus, 1) for j in trace.jobs])
    size = np.minimum(gpus, room).astype(int)
    if np.all(size < 1):
        raise UserError(f"no job of the window fits one worker and one PS in these servers' total "
                        f"({', '.join(f'{r} {v:g}' for r, v in zip(RESOURCES, total))}); raise --servers", None, "--servers")
    capped = int(np.sum((gpus > size) & (size >= 1)))
    stuck = [trace.jobs[i] for i in np.flatnonzero(size < 1)]
    size = np.maximum(size, 1)

    sgd_rule = spec.options.get("sgd", "mix")
    coin = spec.rng("sgd").random(n)
    rng = spec.rng("speed")
    ps_bw = rng.uniform(*PS_BANDWIDTH, size=n)
    w_over = rng.uniform(0.003, 0.004, size=n)
    p_over = rng.uniform(0.0, 0.00001, size=n)
    share = rng.uniform(0.0, 1.0, size=n)
    urng = spec.rng("utility")
    gammas = np.column_stack([urng.uniform(1, 100, n), urng.uniform(4, 6, n), urng.uniform(1, 15, n)])

    jobs: list[dict[str, Any]] = []
    for i, job in enumerate(trace.jobs):
        row, w_dem, p_dem = figures[models[i]]
        sgd = sgd_rule if sgd_rule != "mix" else ("sync" if coin[i] < 0.5 else "async")
        if job.batch_size is not None:
            K = int(job.batch_size)
            m = max(1, math.ceil(K / max(job.gpus, 1)))
        else:
            m = int(row["batch_size"])
            K = m * int(gpus[i])
        rate = row["steps_per_s"] * row["batch_size"]            # samples/s on one GPU
        iterations = max(1, int(round(seconds[i] * rate / (K if sgd == "sync" else m))))
        bandwidth = p_dem.get("bandwidth_gbps") or round(float(ps_bw[i]), 1)
        speed: dict[str, Any] = {"overlap": "wait-free", "gpu_model": row["gpu_model"], "ps_bandwidth_gbps": bandwidth}
        if catalog[models[i]].gradient_mb is None:
            per_sample_ms = 1000.0 / rate
            speed.update(gradient_mb=float(gradient[i]), forward_ms=[round(FP_SHARE * per_sample_ms, 6)],
                         backward_ms=[round((1.0 - FP_SHARE) * per_sample_ms, 6)],
                         comm_ms=[round(float(gradient[i]) * 8.0 / bandwidth, 6)])
        speed.update(worker_overhead_s=round(float(w_over[i]), 5), ps_overhead_s=round(float(p_over[i]), 8),
                     async_share=round(float(share[i]), 3))
        wd = {r: w_dem[r] for r in RESOURCES if r in w_dem}
        pd = {r: p_dem[r] for r in RESOURCES if r in p_dem}
        g = int(size[i])
        limit = {r: _num(g * (wd.get(r, 0) + pd.get(r, 0))) for r in RESOURCES if r in wd or r in pd}
        w_max, p_max = _bounds(wd, pd, limit)
        note = f", capped to {g}" if gpus[i] > g else ""
        what = f"{job.gpus} GPU" + ("" if job.gpus == 1 else "s") + note
        if job.duration_s is not None:
            what += f" x {job.duration_s:g} s"
        jobs.append({
            "id": job.id, "description": f"{models[i]}, trace row {job.row}: {what}",
            "model": models[i], "sgd": sgd, "work": {"iterations": iterations},
            "local_batch_size": m, "global_batch_size": K,
            "demand": {"worker": wd, "ps": pd},
            "speed_model": speed,
            "limit": limit, "workers": {"min": 1, "max": w_max}, "ps": {"min": 1, "max": p_max},
            "utility": {"kind": "sigmoid", "gamma1": round(float(gammas[i, 0]), 2), "gamma2": round(float(gammas[i, 1]), 2),
                        "gamma3": round(float(gammas[i, 2]), 2), "delay_unit": "seconds"},
        })

    ref = sorted({f"{m} {figures[m][0]['gpu_model']}" for m in figures})
    extra = [f"capacity: the servers' total ({', '.join(f'{r} {v:,.6g}' for r, v in zip(RESOURCES, total))}); no storage "
             "(no trace gives it and the catalog's demands have none)",
             "time: SMD schedules one interval; the submit times only choose the window (the interval's batch)",
             model_rule, *gradient_notes,
             "demand: the catalog's per-worker and per-PS demand (mlsched design defaults, not measured)",
             "limit: the trace's GPU count g declares the job's limit g x (worker + PS demand), room for g workers and g PSs "
             "(our design)" + (f"; {capped} of {n} jobs capped so that the limit fits the total" if capped else ""),
             "batch: Pollux's global batch K and m = ceil(K / replicas); without one (Philly) m = the catalog measurement's "
             "batch and K = m g",
             f"{work_rule}; iterations = GPU time x the measured one-GPU samples/s ({', '.join(ref)}) / samples per "
             "iteration (K sync, m async; our design)",
             f"sgd: {'each job sync or async with probability 1/2' if sgd_rule == 'mix' else sgd_rule} (seeded); "
             "overheads, async share, PS bandwidth where the catalog has none, and utilities (gamma1 in [1, 100], gamma2 "
             "in [4, 6], gamma3 in [1, 15]) drawn as the generator's workloads=catalog mode does (Yu et al., INFOCOM 2021, "
             "section V-A); time scale: the median completion time at ESW maps to gamma3 = 8"]
    if stuck:
        names = ", ".join(f"{j.id} (row {j.row})" for j in stuck[:5]) + (", ..." if len(stuck) > 5 else "")
        extra.append(f"{len(stuck)} jobs cannot fit one worker and one PS in the total and can never be admitted: {names}")
        spec.notes.append(f"{len(stuck)} of {n} jobs cannot fit one worker and one PS in the total (see the source)")
    if capped:
        spec.notes.append(f"{capped} of {n} jobs ask for more GPUs than the cluster's total allows; capped (see the source)")
    doc: dict[str, Any] = {
        "format": "mlsched-instance/1",
        "name": f"smd-{trace.source}-{n}j-{len(servers)}s-seed{spec.seed}",
        "source": describe(trace, nodes, spec, extra),
        "problem": "smd",
        "cluster": {"servers": servers},
        "jobs": jobs,
    }
    # the time scale depends on the jobs alone (ESW sizes each job within its limit): calibrate on one
    # server of the total capacity, so that from_document does not pair every job with every node
    scale = _calibration({**doc, "cluster": {"servers": [{"name": "total", "capacity": dict(zip(RESOURCES, total.tolist()))}]}},
                         catalog)
    for entry in jobs:
        entry["utility"]["delay_scale"] = scale
    doc["description"] = (f"{n:,} {trace.source} jobs in one interval on {len(servers):,} servers "
                          f"({int(total[0]):,} GPUs); time scale S = {scale:g} s")
    return doc


def _num(v: float) -> float | int:
    return int(v) if float(v).is_integer() else round(float(v), 6)
