"""How much faster a packed placement trains than a spread one, measured (spec 001 section 1.3).

Two public measurements give the ratio ``theta_ex / theta_in`` of an iteration's time spread over
machines to its time inside one machine:

* Pollux (Qiao et al., OSDI 2021), ``pollux/<model>/placements.csv`` of the shared data: step time
  (compute + synchronization) of each placement string (GPUs per node) and local batch size.  The
  ratio compares ``"1" * g`` (g nodes of one GPU) with ``"g"`` (one node of g GPUs) at the same
  local batch, median over the batch sizes both were measured at;
* Gavel (Narayanan et al., OSDI 2020): the catalog's 4-GPU V100 throughput, consolidated against
  ``v100_unconsolidated`` (``placement = "spread"``); for some models spread is *faster*
  (ResNet-50: 9.45 vs 11.14 steps/s), which the model cannot express (it needs ``b_in >= b_ex``).

:func:`inter_bandwidth` turns a measured ratio into the ``b_ex`` that makes the model's
``(compute + 2g/b_ex) / (compute + 2g/b_in)`` equal to it [our design].
"""

from __future__ import annotations

import csv
from collections import defaultdict

import numpy as np

from ...io.catalog import Workload
from ...io.shared_data import shared_file

#: catalog workload -> Pollux trace of the same model (ResNet-18 is Pollux's CIFAR-10 model).
POLLUX_TRACE = {"resnet50": "imagenet", "resnet18": "cifar10", "bert": "bert", "deepspeech2": "deepspeech2",
                "ncf": "ncf", "yolov3": "yolov3"}


def pollux_ratio(trace: str, gpus: int = 4) -> float | None:
    """Median spread/packed step-time ratio of a Pollux trace for ``gpus`` GPUs, or ``None`` if not measured."""
    times: dict[str, dict[int, float]] = defaultdict(dict)
    with open(shared_file(f"pollux/{trace}/placements.csv"), newline="") as fh:
        for row in csv.DictReader(fh):
            times[row["placement"]][int(row["local_bsz"])] = float(row["step_time"])
    packed, spread = times.get(str(gpus), {}), times.get("1" * gpus, {})
    common = sorted(set(packed) & set(spread))
    if not common:
        return None
    return float(np.median([spread[b] / packed[b] for b in common]))


def gavel_ratio(workload: Workload, gpu_model: str = "V100", gpus: int = 4) -> float | None:
    """Consolidated/spread throughput ratio from the catalog's Gavel figures, or ``None``."""
    packed = workload.throughput_samples_per_s(gpu_model, gpus, "consolidated")
    spread = workload.throughput_samples_per_s(gpu_model, gpus, "spread")
    return None if not packed or not spread else packed / spread


def inter_bandwidth(compute_s: float, comm_gbit: float, b_in: float, ratio: float) -> float:
    """``b_ex`` with ``(compute + comm/b_ex) = ratio (compute + comm/b_in)``; ``b_in`` when ``ratio <= 1``."""
    if ratio <= 1.0 or comm_gbit <= 0:
        return b_in
    return comm_gbit / (ratio * (compute_s + comm_gbit / b_in) - compute_s)
