"""Alibaba's production pods as a packing instance (``mlsched import alibaba --problem packing``).

Each pod of the window is a job of one task (``architecture = "allreduce"``, so no parameter
server) with the pod's own demand: CPU (``cpu_milli / 1000`` cores), memory (MiB as GB), and
``num_gpu x gpu_milli / 1000`` GPUs; a ``gpu_spec`` becomes the job's ``gpu_models``.  The
servers are the real nodes (all 1,523 by default, CPU-only ones included), each with its CPU,
memory, GPU count and model.  Every pod weighs 1, so the default objective admits as many
pods as fit.

One simplification, stated in every instance's ``source``: a node's GPUs are one pool, so
fractional shares are packed against the node's GPU total rather than GPU by GPU (on a 2-GPU
node, shares of 0.6, 0.6 and 0.8 fit the pool of 2 although no GPU-by-GPU assignment exists).
That is the fragmentation the source paper studies; modelling it exactly needs a GPU index per
share.  ``--set gpus=per-gpu`` models it (:mod:`.pergpu`): the instance then states ``options.gpus
= "per-gpu"``, its ``source`` says so, and every GPU holds shares of at most 1, whole-GPU pods
on GPUs of their own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...io.catalog import Catalog
from ...traces import ImportSpec, Trace, TraceError, describe
from ...traces.model import Cluster
from ...traces.sources import cluster

POOLED = ("a node's GPUs are one pool: fractional GPU shares are packed against the node's GPU total, "
          "not GPU by GPU (option gpus = pooled)")
PER_GPU = ("GPU by GPU (option gpus = per-gpu): each GPU holds at most 1; a fractional pod takes its share of one GPU, "
           "a multi-GPU pod whole GPUs of one node that no other pod shares")


def from_trace(trace: Trace, spec: ImportSpec, catalog: Catalog) -> dict[str, Any]:
    nodes = cluster(spec, gpu_only=False)
    servers = [n.server() for n in nodes.nodes]
    fits = _fits_somewhere(trace, nodes)
    jobs = []
    for j, ok in zip(trace.jobs, fits):
        if not ok:
            continue
        demand = {"gpu": round(j.gpus * j.gpu_share, 3), "cpu": j.cpu, "memory_gb": j.memory_gb}
        job: dict[str, Any] = {"id": j.id, "architecture": "allreduce", "workers": {"count": 1},
                               "demand": {"worker": demand}, "weight": 1}
        if j.gpu_models:
            job["gpu_models"] = list(j.gpu_models)
        jobs.append(job)
    gpus = sum(n.gpus for n in nodes.nodes)
    dropped = len(trace.jobs) - len(jobs)
    per_gpu = spec.options.get("gpus", "pooled") == "per-gpu"
    extra = ["weight 1 per pod", PER_GPU if per_gpu else POOLED]
    if dropped:
        rows = ", ".join(str(j.row) for j, ok in zip(trace.jobs, fits) if not ok)
        extra.append(f"{dropped} pods fit on no node of this cluster (by GPU model, GPUs, CPU or memory) and are left out "
                     f"(rows {rows})")
        spec.notes.append(f"{dropped} of {len(trace.jobs)} pods fit on no node of the cluster and are left out (see the source)")
    if not jobs:
        raise TraceError("no pod of the window fits on any node of the cluster; take more --servers", trace.file, "--servers")
    doc: dict[str, Any] = {
        "format": "mlsched-instance/1",
        "name": f"alibaba-{spec.options['pods']}-{len(jobs)}pods-{len(servers)}nodes-seed{spec.seed}",
        "description": f"{len(jobs):,} Alibaba production pods on {len(servers):,} real nodes ({gpus:,} GPUs)",
        "source": describe(trace, nodes, spec, extra),
        "problem": "packing",
        "cluster": {"servers": servers},
        "jobs": jobs,
    }
    if per_gpu:
        doc["options"] = {"gpus": "per-gpu"}
    return doc


def _fits_somewhere(trace: Trace, nodes: Cluster) -> np.ndarray:
    """Whether each pod fits on one node of an allowed GPU model, by node shape (a real cluster has
    a handful of shapes, so this is pods x shapes, not pods x nodes)."""
    shapes = sorted({(n.gpu_model or "", n.gpus, n.cpu or 0.0, n.memory_gb or 0.0) for n in nodes.nodes})
    cap = np.array([s[1:] for s in shapes], dtype=float)
    need = np.array([(j.gpus * j.gpu_share, j.cpu or 0.0, j.memory_gb or 0.0) for j in trace.jobs], dtype=float)
    fits = np.all(need[:, None, :] <= cap[None, :, :] + 1e-9, axis=2)
    for i, j in enumerate(trace.jobs):
        if j.gpu_models:
            fits[i] &= np.array([s[0] in j.gpu_models for s in shapes])
    return fits.any(axis=1)
