"""SMD instances: the paper's simulation setting (spec 002 section 4.1), or catalog workloads.

``--servers U`` is the cluster capacity in the paper's units; one unit is
(vCPU 3400, GPU 600, memory 1400 GB, storage 1200 GB), or with ``unit=instance`` one virtual
instance (the unit of the paper's Fig. 11, "1000 x one instance").  Ranges are the paper's; the parts it
leaves open are our design [PROP]: the "virtual instance" is (GPU 4, vCPU 36, memory 60 GB,
storage 100 GB) and a job's limit is ``max(theta x instance, O + G)`` with ``theta`` in 1..20, so
one worker and one PS always fit (P3); the utility's time unit is calibrated per instance so
that the median completion time at ESW's allocation is the median ``gamma3`` (= 8), and the
scale ``S`` is written into each utility as ``delay_scale`` (P2: the paper's units do not fit
together, so only ratios between methods are comparable with its figures).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import UserError
from ...io.catalog import Catalog
from ...io.instance import from_document
from ..base import GenerateSpec, Option
from .view import smd_view

UNIT = {"gpu": 600, "cpu": 3400, "memory_gb": 1400, "storage_gb": 1200}
UNIT_SOURCE = "Yu et al., INFOCOM 2021, section V-A: one unit of cluster capacity"
VIRTUAL_INSTANCE = {"gpu": 4, "cpu": 36, "memory_gb": 60, "storage_gb": 100}
INSTANCE_SOURCE = "mlsched design (spec 002 P3): one virtual instance, GPU 4, vCPU 36, memory 60 GB, storage 100 GB"
MEDIAN_GAMMA3 = 8.0
SGD_MIX = ("mix", "sync", "async")
WORKLOADS = ("paper", "catalog")
UNITS = ("paper", "instance")

OPTIONS = (
    Option("sgd", "mix", SGD_MIX, "synchronous, asynchronous, or each job either with probability 1/2"),
    Option("workloads", "paper", WORKLOADS, "paper: random layer profiles from the paper's ranges; catalog: real workloads from models/"),
    Option("unit", "paper", UNITS, "what one --servers unit is: the paper's cluster unit, or one virtual instance (Fig. 11 uses 1000)"),
)


def _u(rng: np.random.Generator, lo: float, hi: float, digits: int = 1) -> float:
    return round(float(rng.uniform(lo, hi)), digits)


def _i(rng: np.random.Generator, lo: int, hi: int) -> int:
    return int(rng.integers(lo, hi + 1))


def _bounds(worker: dict[str, float], ps: dict[str, float], limit: dict[str, float]) -> tuple[int, int]:
    w = min(int((limit[r] - ps.get(r, 0)) // a) for r, a in worker.items() if a > 0)
    p = min(int((limit[r] - worker.get(r, 0)) // a) for r, a in ps.items() if a > 0)
    return max(w, 1), max(p, 1)


def _limit(rng: np.random.Generator, worker: dict[str, float], ps: dict[str, float]) -> dict[str, float]:
    theta = _i(rng, 1, 20)
    keys = [r for r in VIRTUAL_INSTANCE if r in worker or r in ps]
    return {r: max(theta * VIRTUAL_INSTANCE[r], worker.get(r, 0) + ps.get(r, 0)) for r in keys}


def _paper_job(rng: np.random.Generator, sgd: str) -> dict[str, Any]:
    worker = {"gpu": _i(rng, 0, 4), "cpu": _i(rng, 1, 10), "memory_gb": _i(rng, 2, 32), "storage_gb": _i(rng, 5, 10)}
    ps = {"cpu": _i(rng, 1, 10), "memory_gb": _i(rng, 2, 32), "storage_gb": _i(rng, 5, 10)}
    layers = _i(rng, 10, 100)
    m = _i(rng, 10, 100)
    job: dict[str, Any] = {
        "sgd": sgd, "work": {"iterations": _i(rng, 50, 200)},
        "local_batch_size": m, "global_batch_size": _i(rng, 1, 100) * m,
        "demand": {"worker": worker, "ps": ps},
        "speed_model": {
            "overlap": "wait-free",
            "forward_ms": [_u(rng, 1, 500) for _ in range(layers)],
            "backward_ms": [_u(rng, 1, 300) for _ in range(layers)],
            "comm_ms": [_u(rng, 80, 500) for _ in range(layers)],
            "gradient_mb": _u(rng, 30, 575),
            "ps_bandwidth_gbps": _u(rng, 5, 20),
            "worker_overhead_s": _u(rng, 3, 4, 3),
            "ps_overhead_s": _u(rng, 0, 0.01, 5),
            "async_share": _u(rng, 0, 1, 3),
        },
    }
    return job


def _catalog_job(rng: np.random.Generator, sgd: str, catalog: Catalog, models: list[str]) -> dict[str, Any]:
    name = models[int(rng.integers(len(models)))]
    data = catalog[name].data
    demand = data["demand"]
    # SMD models the network through B, not as a reserved resource
    worker = {k: v for k, v in demand["worker"].items() if k in VIRTUAL_INSTANCE}
    ps = {k: v for k, v in demand.get("ps", {"cpu": 4, "memory_gb": 16}).items() if k in VIRTUAL_INSTANCE}
    row = _one_gpu(data)
    assert row is not None, name  # models come from catalog_models, which have a row
    m = row["batch_size"]
    return {
        "model": name, "sgd": sgd, "work": {"iterations": _i(rng, 500, 5000)},
        "local_batch_size": m, "global_batch_size": m * _i(rng, 1, 32),
        "demand": {"worker": worker, "ps": ps},
        "speed_model": {
            "overlap": "wait-free", "gpu_model": row["gpu_model"],
            "ps_bandwidth_gbps": _u(rng, 5, 20),
            "worker_overhead_s": _u(rng, 0.003, 0.004, 5),
            "ps_overhead_s": _u(rng, 0, 0.00001, 8),
            "async_share": _u(rng, 0, 1, 3),
        },
    }


def catalog_models(catalog: Catalog) -> list[str]:
    """Workloads with a size, a typical demand and a measured one-GPU throughput."""
    return [n for n in catalog if {"demand", "size"} <= set(catalog[n].data) and _one_gpu(catalog[n].data)]


def _one_gpu(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The one-GPU throughput row to time the workload with: V100 when measured, else the first."""
    rows = [r for r in data.get("throughput", []) if r["gpus"] == 1 and r.get("placement", "consolidated") == "consolidated"]
    return next((r for r in rows if r["gpu_model"] == "V100"), rows[0] if rows else None)


#: Largest --jobs / --servers the generator writes (a file, not a stress test).
MAX_JOBS = 100_000
MAX_SERVERS = 10**9


def generate(spec: GenerateSpec, catalog: Catalog) -> dict[str, Any]:
    """``spec.jobs`` jobs on ``spec.servers`` units of capacity; the same seed gives the same file."""
    if not 1 <= spec.jobs <= MAX_JOBS:
        raise UserError(f"the smd generator writes 1 to {MAX_JOBS:,} jobs, got {spec.jobs}", field="--jobs")
    if not 1 <= spec.servers <= MAX_SERVERS:
        raise UserError(f"the smd generator takes 1 to {MAX_SERVERS:,} capacity units, got {spec.servers}", field="--servers")
    opts = {o.name: o.default for o in OPTIONS} | dict(spec.options)
    rng = np.random.default_rng(spec.seed)
    models = catalog_models(catalog) if opts["workloads"] == "catalog" else []
    jobs = []
    for i in range(spec.jobs):
        sgd = opts["sgd"] if opts["sgd"] != "mix" else ("sync" if rng.random() < 0.5 else "async")
        job = _paper_job(rng, sgd) if opts["workloads"] == "paper" else _catalog_job(rng, sgd, catalog, models)
        limit = _limit(rng, job["demand"]["worker"], job["demand"]["ps"])
        w_max, p_max = _bounds(job["demand"]["worker"], job["demand"]["ps"], limit)
        gamma = (_u(rng, 1, 100, 2), _u(rng, 4, 6, 2), _u(rng, 1, 15, 2))
        jobs.append({"id": f"j{i}", **job, "limit": limit, "workers": {"min": 1, "max": w_max}, "ps": {"min": 1, "max": p_max},
                     "utility": {"kind": "sigmoid", "gamma1": gamma[0], "gamma2": gamma[1], "gamma3": gamma[2], "delay_unit": "seconds"}})
    flag = "".join(f" --set {o.name}={opts[o.name]}" for o in OPTIONS if opts[o.name] != o.default)
    unit, unit_source = (UNIT, UNIT_SOURCE) if opts["unit"] == "paper" else (VIRTUAL_INSTANCE, INSTANCE_SOURCE)
    doc: dict[str, Any] = {
        "format": "mlsched-instance/1",
        "name": f"smd-{opts['workloads']}-{opts['sgd']}-j{spec.jobs}-{opts['unit']}{spec.servers}-seed{spec.seed}",
        "source": f"mlsched generate --problem smd --jobs {spec.jobs} --servers {spec.servers} --seed {spec.seed}{flag}; "
                  f"setting of Yu et al. INFOCOM 2021 section V-A (spec 002 section 4.1); capacity unit: {unit_source}",
        "problem": "smd",
        "cluster": {"servers": [{"name": "unit", "count": spec.servers, "capacity": dict(unit)}]},
        "jobs": jobs,
    }
    scale = _calibration(doc, catalog)
    for job in jobs:
        job["utility"]["delay_scale"] = scale
    doc["description"] = f"time scale S = {scale:g} s: utilities take completion time / S (median ESW time maps to {MEDIAN_GAMMA3:g})"
    return doc


def _calibration(doc: dict[str, Any], catalog: Catalog) -> float:
    """``S`` such that the median completion time at ESW-max equals the median ``gamma3`` (spec P2)."""
    view = smd_view(from_document(doc, catalog=catalog))
    from .baselines import esw  # the inner solvers load only when a generator needs them

    taus = [a.tau for a in (esw(j) for j in view.jobs) if a.feasible]
    return float(f"{np.median(taus) / MEDIAN_GAMMA3:.6g}") if taus else 1.0
