"""A heterogeneous cluster from Alibaba's production GPU node list (``alibaba_openb`` in the shared data).

The node list (Weng et al., "Beware of Fragmentation", USENIX ATC 2023; alibaba/clusterdata,
cluster-trace-gpu-v2023) gives each node's CPU (milli-cores), memory (MiB), GPU count and GPU
model.  The throughput catalog measures K80, P100, V100 (Gavel) and, for some workloads, T4
(Pollux).  A model the catalog does not measure for a workload is mapped to a measured one by
a relative-speed factor (:data:`SPEED_MAP`), each with its source; models without a citable
factor are left out, and the generator says so in the instance's ``source``.

The trace has no network figures; every node gets :data:`BANDWIDTH_GBPS` (our assumption, the
spec's 10 Gb/s).
"""

from __future__ import annotations

import csv
from typing import Any, Sequence

import numpy as np

from ...errors import UserError
from ...io.catalog import Workload
from ...io.shared_data import shared_file

NODE_LIST = "alibaba_openb/openb_node_list_gpu_node.csv"
BANDWIDTH_GBPS = 10.0

#: trace model -> (measured catalog model, factor, source).
SPEED_MAP: dict[str, tuple[str, float, str]] = {
    "V100M16": ("V100", 1.0, "Tesla V100 16 GB: the same GV100 GPU as Gavel's V100 (NVIDIA V100 datasheet); memory size only"),
    "V100M32": ("V100", 1.0, "Tesla V100 32 GB: the same GV100 GPU as Gavel's V100 (NVIDIA V100 datasheet); memory size only"),
    "T4": ("V100", 8.1 / 15.7, "peak FP32 ratio, NVIDIA T4 datasheet 8.1 TFLOPS over NVIDIA V100 SXM2 datasheet 15.7 TFLOPS "
                               "(the catalog's ResNet-50 figures, Pollux T4 158 vs Gavel V100 281 samples/s, give 0.56)"),
}
#: trace models left out, and why.
LEFT_OUT = {
    "G2": "an anonymized GPU model: no throughput can be attributed",
    "G3": "an anonymized GPU model: no throughput can be attributed",
    "A10": "no citable training-speed factor (its datasheet FP32 peak counts Ampere's dual-issue FP32, which training does not reach)",
}


def read_nodes() -> list[dict[str, Any]]:
    with open(shared_file(NODE_LIST), newline="") as fh:
        return list(csv.DictReader(fh))


def alibaba_servers(count: int, rng: np.random.Generator) -> tuple[list[dict[str, Any]], str]:
    """``count`` nodes drawn without replacement among those with a usable GPU model, and a note
    naming what was left out."""
    nodes = read_nodes()
    usable = [n for n in nodes if n["model"] in ("P100", *SPEED_MAP)]
    dropped: dict[str, int] = {}
    for n in nodes:
        if n not in usable:
            dropped[n["model"]] = dropped.get(n["model"], 0) + int(n["gpu"])
    if count > len(usable):
        raise UserError(f"the Alibaba node list has {len(usable)} nodes with a usable GPU model, fewer than {count}", field="--servers")
    pick = sorted(int(i) for i in rng.choice(len(usable), size=count, replace=False))
    servers = []
    for i in pick:
        n = usable[i]
        servers.append({"name": n["sn"], "gpu_model": n["model"], "capacity": {
            "gpu": int(n["gpu"]), "cpu": int(n["cpu_milli"]) / 1000.0,
            "memory_gb": round(int(n["memory_mib"]) * 1.048576 / 1000.0, 3), "bandwidth_gbps": BANDWIDTH_GBPS}})
    left = "; ".join(f"{m} ({g} GPUs): {LEFT_OUT.get(m, 'not in the speed map')}" for m, g in sorted(dropped.items()))
    maps = "; ".join(f"{m} = {f:.3g} x {ref} ({src})" for m, (ref, f, src) in SPEED_MAP.items())
    note = (f"; nodes: Alibaba openb node list ({NODE_LIST}, Weng et al., USENIX ATC 2023), {count} drawn; "
            f"left out: {left}; speed map: {maps}; bandwidth {BANDWIDTH_GBPS:g} Gb/s assumed")
    return servers, note


def mapped_throughputs(workload: Workload, gpu_models: Sequence[str]) -> dict[str, float]:
    """Samples/s for the cluster's GPU models the workload has no measurement for, by :data:`SPEED_MAP`."""
    out = {}
    for model in gpu_models:
        if workload.throughput_samples_per_s(model) is not None or model not in SPEED_MAP:
            continue
        ref, factor, _ = SPEED_MAP[model]
        base = workload.throughput_samples_per_s(ref)
        if base is not None:
            out[model] = round(base * factor, 4)
    return out
