"""Building blocks for random instances, shared by the families' generators.

Server shapes are public instance specifications (one figure each, cited); job demands come
from the workload catalog's ``demand`` section.  Everything draws from one
``numpy.random.Generator`` seeded by the caller, so the same seed gives the same file.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..io.catalog import Catalog
from .base import GenerateSpec, Option

#: name -> (GPU model, capacity, source).  memory_gb is 10^9 bytes (GiB figures converted).
SERVER_SHAPES: dict[str, tuple[str, dict[str, float], str]] = {
    "p3-8xlarge": ("V100", {"gpu": 4, "cpu": 32, "memory_gb": 262, "bandwidth_gbps": 10},
                   "AWS EC2 p3.8xlarge: 4 V100, 32 vCPU, 244 GiB, 10 Gbps"),
    "p2-8xlarge": ("K80", {"gpu": 8, "cpu": 32, "memory_gb": 524, "bandwidth_gbps": 10},
                   "AWS EC2 p2.8xlarge: 8 K80, 32 vCPU, 488 GiB, 10 Gbps"),
    "openb-p100": ("P100", {"gpu": 2, "cpu": 64, "memory_gb": 275, "bandwidth_gbps": 25},
                   "Alibaba openb node list: P100 node, cpu_milli 64000, memory_mib 262144; bandwidth is our assumption"),
    "g4dn-12xlarge": ("T4", {"gpu": 4, "cpu": 48, "memory_gb": 206, "bandwidth_gbps": 50},
                      "AWS EC2 g4dn.12xlarge: 4 T4, 48 vCPU, 192 GiB, 50 Gbps"),
}


def random_cluster(rng: np.random.Generator, servers: int, shapes: list[str] | None = None) -> list[dict[str, Any]]:
    """``servers`` servers in groups of identical shapes (1 to 3 shapes, drawn at random)."""
    names = shapes or sorted(SERVER_SHAPES)
    k = int(rng.integers(1, min(3, servers, len(names)) + 1))
    chosen = [names[i] for i in sorted(rng.choice(len(names), size=k, replace=False))]
    cuts = np.sort(rng.choice(np.arange(1, servers), size=k - 1, replace=False)) if k > 1 else np.array([], int)
    counts = np.diff(np.concatenate([[0], cuts, [servers]]))
    groups = []
    for shape, count in zip(chosen, counts):
        gpu, cap, _ = SERVER_SHAPES[shape]
        groups.append({"name": shape, "count": int(count), "role": "any", "gpu_model": gpu, "capacity": dict(cap)})
    return groups


def catalog_models_with_demand(catalog: Catalog) -> list[str]:
    return [name for name in catalog if "demand" in catalog[name].data]


def random_job(rng: np.random.Generator, index: int, catalog: Catalog, models: list[str],
               worker_choices: tuple[int, ...] = (1, 1, 2, 2, 4, 8)) -> dict[str, Any]:
    """One job drawn from the catalog: its typical demand, a fixed worker count, and a PS count
    (one PS per four workers) for parameter-server jobs, all-reduce for a third of the jobs."""
    model = models[int(rng.integers(len(models)))]
    demand = catalog[model].data["demand"]
    workers = int(rng.choice(worker_choices))
    allreduce = bool(rng.random() < 1 / 3)
    weight = int(rng.integers(1, 11))
    job: dict[str, Any] = {"id": f"j{index}", "model": model, "architecture": "allreduce" if allreduce else "ps",
                           "workers": {"count": workers}}
    if not allreduce:
        job["ps"] = {"count": max(1, workers // 4)}
    job["demand"] = {"worker": dict(demand["worker"])}
    if not allreduce:
        job["demand"]["ps"] = dict(demand["ps"])
    job["weight"] = weight
    return job


def generate_command(problem: str, spec: GenerateSpec, options: tuple[Option, ...], slots: int | None = None) -> str:
    """The ``mlsched generate`` command that reproduces an instance (it opens the instance's ``source``)."""
    sets = "".join(f" --set {o.name}={_plain(spec.options[o.name])}" for o in options
                   if o.name in spec.options and spec.options[o.name] != o.default)
    window = "" if slots is None else f" --slots {slots}"
    return f"mlsched generate --problem {problem} --jobs {spec.jobs} --servers {spec.servers}{window} --seed {spec.seed}{sets}"


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)
