"""A heterogeneous cluster from Alibaba's production GPU node list (``alibaba_openb`` in the shared data).

The node list (Weng et al., "Beware of Fragmentation", USENIX ATC 2023; alibaba/clusterdata,
cluster-trace-gpu-v2023) gives each node's CPU (milli-cores), memory (MiB), GPU count and GPU
model: 1,213 GPU nodes with 6,212 GPUs of 7 models (G2 4,392, T4 842, G3 312, P100 265,
V100M32 204, V100M16 195, A10 2).  The throughput catalog measures K80, P100, V100 (Gavel) and,
for some workloads, T4 (Pollux).  Every GPU model gets a speed relative to a V100
(:data:`SPEEDS`), so that every node is usable: a workload's samples/s on a model it was not
measured on is its measured figure on a reference model (the first of :data:`REFERENCES` it
was measured on) times ``speed[model] / speed[reference]``.  Measured figures always win.

How each speed was chosen (our design; each row of :data:`SPEEDS` names its source):

* V100M16, V100M32: the same GV100 GPU as Gavel's V100 (memory size only): 1.
* T4, P100, K80 (one FP32 operation per CUDA core and clock): the ratio of datasheet peak FP32
  to the V100 SXM2's 15.7 TFLOPS.  T4's 8.1 / 15.7 = 0.516 agrees with its FP16 tensor-core
  ratio (65 / 125 = 0.52) and, roughly, with the catalog's measured ResNet-50 (Pollux T4 158
  vs Gavel V100 281 samples/s: 0.56).
* A10 (Ampere): the ratio of dense FP16 tensor-core peaks, 125 TFLOPS (NVIDIA A10 datasheet)
  over 125 TFLOPS (V100 SXM2 datasheet) = 1.  Its FP32 peak (31.2 TFLOPS) is not comparable:
  Ampere's GA10x SMs issue two FP32 operations per clock, which training seldom reaches; its
  memory bandwidth (600 vs 900 GB/s) suggests memory-bound models run slower, so 1 is, if
  anything, generous.  Only 2 of the cluster's GPUs are A10s.
* G2, G3: anonymized by the trace; no figure can be attributed.  **Assumption**: 1 (a V100).
  ``mlsched import ... --set speed_G2=... / speed_G3=...`` (and ``speed_<model>`` for every
  other model) change it; the instance's ``source`` states the values used.

The trace has no network figures; every node gets :data:`BANDWIDTH_GBPS` (our assumption, the
spec's 10 Gb/s).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import UserError
from ...io.catalog import Workload
from ...io.shared_data import shared_file

NODE_LIST = "alibaba_openb/openb_node_list_gpu_node.csv"
BANDWIDTH_GBPS = 10.0

_V100 = "NVIDIA V100 SXM2 datasheet 15.7 TFLOPS FP32, 125 TFLOPS FP16 tensor"
#: GPU model -> (speed relative to a V100, whether it is an assumption rather than a cited ratio, source).
SPEEDS: dict[str, tuple[float, bool, str]] = {
    "V100": (1.0, False, "the unit (Gavel's V100)"),
    "V100M16": (1.0, False, "Tesla V100 16 GB: the same GV100 GPU as Gavel's V100 (NVIDIA V100 datasheet); memory size only"),
    "V100M32": (1.0, False, "Tesla V100 32 GB: the same GV100 GPU as Gavel's V100 (NVIDIA V100 datasheet); memory size only"),
    "T4": (8.1 / 15.7, False, f"peak FP32, NVIDIA T4 datasheet 8.1 TFLOPS over {_V100} (FP16 tensor 65/125 = 0.52 agrees; "
                              "the catalog's ResNet-50, Pollux T4 158 vs Gavel V100 281 samples/s, gives 0.56)"),
    "P100": (9.3 / 15.7, False, f"peak FP32, NVIDIA Tesla P100 PCIe datasheet 9.3 TFLOPS over {_V100}"),
    "K80": (8.73 / 2 / 15.7, False, f"peak FP32 of one of a Tesla K80 board's two GPUs, NVIDIA K80 datasheet 8.73/2 TFLOPS "
                                   f"(boost) over {_V100}"),
    "A10": (125.0 / 125.0, False, f"dense FP16 tensor-core peak, NVIDIA A10 datasheet 125 TFLOPS over {_V100} (A10's FP32 "
                                  "peak of 31.2 TFLOPS counts Ampere's dual-issue FP32, not comparable; its 600 vs 900 GB/s "
                                  "memory bandwidth makes 1 generous for memory-bound models)"),
    "G2": (1.0, True, "ASSUMPTION: an anonymized GPU model of the trace, no figure can be attributed; taken as a V100"),
    "G3": (1.0, True, "ASSUMPTION: an anonymized GPU model of the trace, no figure can be attributed; taken as a V100"),
}
#: measured models a mapped figure is scaled from, in order of preference
REFERENCES = ("V100", "T4", "P100", "K80")


def speed_table(overrides: Mapping[str, float] | None = None) -> dict[str, float]:
    """Speed relative to a V100 of every known GPU model, with ``overrides`` (``--set speed_<model>``)."""
    table = {m: s for m, (s, _, _) in SPEEDS.items()}
    table.update(overrides or {})
    return table


def speed_note(models: Sequence[str], overrides: Mapping[str, float] | None = None, settable: bool = True) -> str:
    """One sentence: the speed used for each of ``models`` (a cluster's), with its source;
    ``settable``: say that ``--set speed_<model>`` changes an assumed one (``mlsched import``)."""
    overrides = overrides or {}
    parts = []
    for m in sorted(models):
        if m not in SPEEDS:
            continue
        if m == "V100":
            parts.append("V100 = 1 (the unit)")
            continue
        value, assumed, source = SPEEDS[m]
        if m in overrides:
            parts.append(f"{m} = {overrides[m]:.4g} x V100 (set by --set speed_{m}; default {value:.4g}: {source})")
        else:
            parts.append(f"{m} = {value:.4g} x V100 ({source}{'; --set speed_' + m + ' changes it' if assumed and settable else ''})")
    if not parts:
        return ""
    return ("GPU speeds relative to a V100, used only where the catalog has no measurement of the workload on the model "
            f"(samples/s = the workload's measured figure on the first of {', '.join(REFERENCES)} it was measured on x "
            "speed ratio): " + "; ".join(parts))


def read_nodes() -> list[dict[str, Any]]:
    with open(shared_file(NODE_LIST), newline="") as fh:
        return list(csv.DictReader(fh))


def alibaba_servers(count: int, rng: np.random.Generator) -> tuple[list[dict[str, Any]], str]:
    """``count`` nodes drawn without replacement among the GPU nodes (every GPU model has a
    speed, :data:`SPEEDS`), and a note naming the speeds and what was assumed."""
    nodes = read_nodes()
    usable = [n for n in nodes if int(n["gpu"]) > 0 and n["model"] in SPEEDS]
    dropped: dict[str, int] = {}
    for n in nodes:
        if int(n["gpu"]) > 0 and n["model"] not in SPEEDS:
            dropped[n["model"]] = dropped.get(n["model"], 0) + int(n["gpu"])
    if count > len(usable):
        raise UserError(f"the Alibaba node list has {len(usable)} GPU nodes, fewer than {count}", field="--servers")
    pick = sorted(int(i) for i in rng.choice(len(usable), size=count, replace=False))
    servers = []
    for i in pick:
        n = usable[i]
        servers.append({"name": n["sn"], "gpu_model": n["model"], "capacity": {
            "gpu": int(n["gpu"]), "cpu": int(n["cpu_milli"]) / 1000.0,
            "memory_gb": round(int(n["memory_mib"]) * 1.048576 / 1000.0, 3), "bandwidth_gbps": BANDWIDTH_GBPS}})
    left = "; left out (no speed): " + "; ".join(f"{m} ({g} GPUs)" for m, g in sorted(dropped.items())) if dropped else ""
    models = sorted({s["gpu_model"] for s in servers})
    speeds = speed_note(models, settable=False)
    note = (f"; nodes: Alibaba openb node list ({NODE_LIST}, Weng et al., USENIX ATC 2023), {count} drawn of its "
            f"{len(usable)} GPU nodes{left}" + (f"; {speeds}" if speeds else "") +
            f"; bandwidth {BANDWIDTH_GBPS:g} Gb/s assumed")
    return servers, note


def reference_of(workload: Workload) -> str | None:
    """The measured model a workload's mapped figures are scaled from: the first of :data:`REFERENCES`."""
    return next((r for r in REFERENCES if workload.throughput_samples_per_s(r) is not None), None)


def mapped_throughputs(workload: Workload, gpu_models: Sequence[str],
                       speeds: Mapping[str, float] | None = None) -> dict[str, float]:
    """Samples/s for the cluster's GPU models the workload has no measurement for, by the speed
    table (:func:`speed_table` with ``speeds`` as overrides); a model of unknown speed, or a
    workload measured on none of :data:`REFERENCES`, gets no figure."""
    table = speed_table(speeds)
    ref = reference_of(workload)
    out: dict[str, float] = {}
    if ref is None:
        return out
    base = workload.throughput_samples_per_s(ref)
    assert base is not None, ref  # reference_of names a model the workload was measured on
    for model in gpu_models:
        if workload.throughput_samples_per_s(model) is not None or model not in table:
            continue
        value = base * table[model] / table[ref]
        out[model] = round(value, 4) or float(f"{value:.4g}")  # 4 decimals, or 4 digits below 0.0001
    return out
