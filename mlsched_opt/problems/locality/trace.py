"""Philly and Pollux jobs as locality instances (``mlsched import philly|pollux --problem locality``).

The instance has the shape :mod:`.generate` writes (spec ``papers/001_locality_rounding.md``
section 1, a reconstruction implemented as our design); every figure the trace has is the
trace's, every other one is named in the instance's ``source``.  The rules:

* **Machines**: the cluster's GPU nodes (``traces.sources.cluster(spec, gpu_only=True)``: Alibaba's
  real nodes, ``--servers`` of them drawn with the seed, or Gavel's or Pollux's cluster with
  ``--set cluster=``), each with its GPUs, cores and memory, one shared pool (spec section 1.1).
  CPU-only nodes are left out [our design: a locality job's PSs sit beside its workers].
* **Speed**: the locality family has one compute time per job, no per-machine GPU speed, so
  every machine runs at the speed of one reference GPU, ``--set gpu_model`` (``auto``: the
  cluster's GPU model when all its nodes have the same one and the catalog measured it, i.e. T4
  on Pollux's cluster, else V100) [our design; Alibaba's nodes carry 7 GPU models].  One
  iteration computes the catalog's measured 1-GPU batch on that GPU in ``1 / steps_per_s``
  seconds (Gavel, Narayanan et al., OSDI 2020; Pollux, Qiao et al., OSDI 2021) and pushes and
  pulls the catalog's gradient size.
* **Bandwidth**: not in any trace: ``inter_gbps`` (10, a 10 GbE link) between machines and
  ``bandwidth_ratio`` (5) times that inside one, the generator's defaults; ``calibration=pollux``
  sets, per job whose model Pollux measured, the inter-machine bandwidth that reproduces
  Pollux's spread/packed 4-GPU step-time ratio (``pollux/<model>/placements.csv`` of ``--data``).
* **Arrivals** (:func:`~mlsched_opt.traces.mapping.arrival_slots`): ``arrivals=real`` (default)
  puts a job in slot ``floor(submit / slot_s)`` (``slot_s`` 600, the generator's); the horizon is
  ``--slots``, else twice the arrival span and at least 8 slots (the generator's horizon, whose
  arrivals cover its first half) [our design].  ``arrivals=fit`` rescales the window's span onto
  the first half of ``--slots`` (default 8).
* **Workers**: ``w_max`` = the trace's GPU count (Philly ``num_gpus``, Pollux ``num_replicas``),
  capped at ``max_workers`` (8, the generator's largest) and at the machines' GPU total; each
  cap is counted in the ``source``.  A worker needs 1 GPU and the catalog's ``demand.worker``
  cores and memory, a PS the catalog's ``demand.ps`` (the catalog's design defaults, not
  measured); the fan-in ``gamma`` is drawn uniformly in 1..4 with the seed (the generator's
  range; no trace has PS counts).
* **Work**: ``V = w_max x q_in x duration / slot_s`` samples, so the job at its (capped) GPU
  count, co-located, trains exactly as long as it ran [our design: a capped job keeps its
  duration, not its GPU-seconds].  Pollux's durations are the shared reader's
  (:data:`~mlsched_opt.traces.sources.POLLUX_RULE`).
* **Workloads** (:func:`~mlsched_opt.traces.mapping.assign_models`): Philly names none, so each
  job draws uniformly with the seed among the generator's five workloads that have figures on
  the reference GPU; a Pollux job keeps its model when the catalog has its gradient size and a
  1-GPU throughput on the reference GPU (with V100 that is ResNet-18 and ResNet-50, with T4
  BERT too), otherwise it gets the same seeded draw and the ``source`` counts the replacements.
* Weight 1 per job (the generator's).

Everything is numpy or one pass over the jobs; no loop over (job x machine).
"""

from __future__ import annotations

import csv
import math
from typing import Any

import numpy as np

from ...errors import UserError
from ...io.catalog import Catalog
from ...io.files import limits
from ...traces import ImportSpec, Trace, describe
from ...traces.mapping import ARRIVALS, arrival_slots, assign_models
from ...traces.sources import cluster
from ...traces.table import bounded_lines, too_many_rows
from ..base import Option
from .calibration import POLLUX_TRACE, inter_bandwidth
from .generate import OPTIONS as GENERATE_OPTIONS, WORKLOADS
from .view import MB_TO_GBIT

_GEN = {o.name: o for o in GENERATE_OPTIONS}
#: Reference GPUs the catalog has 1-GPU throughputs for.
GPU_MODELS = ("auto", "V100", "P100", "K80", "T4")
DEFAULT_SLOTS = 8
FAN_IN = (1, 4)

OPTIONS = (
    ARRIVALS,
    _GEN["slot_s"],
    Option("max_workers", 8, None, "cap on a job's workers (w_max = the trace's GPU count, capped; the generator's largest is 8)",
           minimum=1, maximum=1024),
    Option("gpu_model", "auto", GPU_MODELS,
           "reference GPU whose measured throughput every machine runs at (auto: the cluster's one GPU model if the catalog "
           "measured it, else V100)"),
    _GEN["bandwidth_ratio"],
    _GEN["inter_gbps"],
    _GEN["calibration"],
)


def from_trace(trace: Trace, spec: ImportSpec, catalog: Catalog) -> dict[str, Any]:
    opts = {o.name: spec.options.get(o.name, o.default) for o in OPTIONS}
    nodes = cluster(spec, gpu_only=True)
    machines = nodes.gpu_nodes
    if not machines:
        raise UserError("the cluster has no GPU node for the locality family's workers", field="--servers")
    gpu = _reference_gpu(opts["gpu_model"], machines, catalog)
    slot_s = float(opts["slot_s"])
    n = len(trace.jobs)
    notes: list[str] = []

    # arrivals and horizon
    if opts["arrivals"] == "fit":
        T = spec.slots or DEFAULT_SLOTS
        at, _, said = arrival_slots(trace, slot_s, max(1, T // 2), "fit", DEFAULT_SLOTS)
        said += f", the first half of a {T}-slot horizon"
    else:
        at, _, said = arrival_slots(trace, slot_s, spec.slots, "real", DEFAULT_SLOTS)
        last = int(at.max()) if n else 0
        T = spec.slots if spec.slots is not None else max(DEFAULT_SLOTS, 2 * (last + 1))
        said += f"; horizon {T} slots" + ("" if spec.slots is not None else " (twice the arrival span, at least 8)")
    notes.append(said)

    # workloads
    known = {name: f for name in catalog if (f := _figures(catalog, name, gpu)) is not None}
    usable = set(known)
    pool = [w for w in WORKLOADS if w in usable]
    if not pool:
        raise UserError(f"no workload of the generator's ({', '.join(WORKLOADS)}) has a 1-GPU {gpu} throughput in the catalog",
                        field="--set gpu_model")
    models, said = assign_models(trace, pool, spec, redraw=True, keep=usable)
    notes.append(f"{said} (usable: a gradient size and a 1-GPU {gpu} throughput in the catalog)")

    # workers
    gpus = np.array([j.gpus for j in trace.jobs], dtype=int)
    total_gpus = int(sum(m.gpus for m in machines))
    cap = min(int(opts["max_workers"]), total_gpus)
    w_max = np.clip(gpus, 1, cap)
    zero, over = int((gpus < 1).sum()), int((gpus > cap).sum())
    rule = (f"w_max: the trace's GPU count, capped at {cap} (max_workers {opts['max_workers']}, "
            f"{total_gpus} GPUs in the cluster): {over} of {n} jobs capped")
    if zero:
        rule += f"; {zero} jobs with 0 GPUs get 1 worker"
    notes.append(rule)
    fan_in = spec.rng("fan_in").integers(FAN_IN[0], FAN_IN[1] + 1, size=n)
    notes.append("PS fan-in drawn uniformly in 1..4 with the seed (the generator's range; the trace has no PS counts); "
                 "worker and PS cores and memory: the catalog's demand (design defaults, not measured), 1 GPU per worker")

    # rates and work
    b_ex = float(opts["inter_gbps"])
    b_in = b_ex * float(opts["bandwidth_ratio"])
    figures = {m: known[m] for m in set(models)}
    batch = np.array([figures[m][0] for m in models], dtype=float)
    compute = np.array([figures[m][1] for m in models], dtype=float)
    comm = np.array([2.0 * figures[m][2] * MB_TO_GBIT for m in models], dtype=float)
    q_in = slot_s * batch / (compute + comm / b_in)
    V = w_max * q_in * _durations(trace) / slot_s
    notes.append(f"work: V = w_max x q_in x duration / slot_s samples (the job at its capped GPU count, co-located "
                 f"on {gpu}, trains for its real duration)")
    samples = np.maximum(1, np.rint(V)).astype(np.int64)

    calibrated = _calibration(spec, models, compute, comm, b_in) if opts["calibration"] == "pollux" else {}
    if opts["calibration"] == "pollux":
        notes.append(f"calibration=pollux: {len(calibrated)} of {n} jobs get the inter-machine bandwidth reproducing Pollux's "
                     "spread/packed 4-GPU step-time ratio")

    servers: list[dict[str, Any]] = []
    for m in machines:
        capacity = {"gpu": m.gpus, "cpu": m.cpu}
        if m.memory_gb is not None:
            capacity["memory_gb"] = m.memory_gb
        servers.append({"name": m.name, "gpu_model": m.gpu_model, "capacity": capacity})
    jobs: list[dict[str, Any]] = []
    for k, job in enumerate(trace.jobs):
        name = models[k]
        demand = catalog[name].data.get("demand", {})
        worker = {"gpu": 1, **{r: demand.get("worker", {}).get(r) for r in ("cpu", "memory_gb") if demand.get("worker", {}).get(r)}}
        ps = {r: demand.get("ps", {}).get(r) for r in ("cpu", "memory_gb") if demand.get("ps", {}).get(r)}
        step: dict[str, Any] = {"compute_s": round(float(compute[k]), 6), "ps_fan_in": int(fan_in[k])}
        if k in calibrated:
            step["inter_bandwidth_gbps"] = calibrated[k]
        real = "" if job.duration_s is None else f", ran {job.duration_s:g} s"
        jobs.append({
            "id": job.id,
            "model": name,
            "description": f"{trace.source} row {job.row}: {job.gpus} GPU(s){real}",
            "arrival_slot": int(at[k]),
            "work": {"epochs": 1, "samples_per_epoch": int(samples[k])},
            "local_batch_size": int(batch[k]),
            "step": step,
            "workers": {"min": 1, "max": int(w_max[k])},
            "demand": {"worker": worker, "ps": ps or {"cpu": 1}},
        })
    seen: dict[str, dict[str, Any]] = {}
    for j in jobs:
        seen.setdefault(j["model"], j["demand"])
    for m_name, demand in sorted(seen.items()):
        if not catalog[m_name].data.get("demand", {}).get("ps"):
            notes.append(f"{m_name}: the catalog has no PS demand; a PS needs 1 core")
        for task in ("worker", "ps"):
            if not any(all(s["capacity"].get(r, 0) + 1e-9 >= v for r, v in demand[task].items()) for s in servers):
                raise UserError(f"a {m_name} {task} ({', '.join(f'{v:g} {r}' for r, v in demand[task].items())}) fits on no "
                                f"machine of this cluster; draw other servers (--seed, --servers) or use --set cluster=gavel|pollux",
                                field="--servers")
    extra = [f"speed: every machine runs at the catalog's 1-GPU {gpu} throughput (the locality family has no per-machine "
             f"GPU speed; the nodes' own GPU models are kept as gpu_model for reference)",
             f"bandwidth: {b_ex:g} Gbit/s between machines, {b_in:g} inside one (the generator's defaults; no trace has them)",
             *notes, "weight 1 per job"]
    return {
        "format": "mlsched-instance/1",
        "name": f"{trace.source}-locality-{n}j-{len(servers)}m-{T}t-seed{spec.seed}",
        "description": f"{n} {trace.source} jobs on {len(servers)} real machines ({total_gpus} GPUs), slots of {slot_s:g} s, "
                       f"compute at {gpu} speed",
        "source": describe(trace, nodes, spec, extra),
        "problem": "locality",
        "time": {"slots": int(T), "slot_s": slot_s},
        "cluster": {"intra_server_bandwidth_gbps": b_in, "inter_server_bandwidth_gbps": b_ex, "servers": servers},
        "jobs": jobs,
    }


def _reference_gpu(choice: str, machines: tuple, catalog: Catalog) -> str:
    if choice != "auto":
        return choice
    models = {m.gpu_model for m in machines}
    if len(models) == 1:
        (only,) = models
        if any(_figures(catalog, w, only) for w in WORKLOADS):
            return str(only)
    return "V100"


def _figures(catalog: Catalog, name: str, gpu: str) -> tuple[int, float, float] | None:
    """``(batch, seconds per iteration, gradient MB)`` of a workload on one ``gpu``, or ``None``."""
    workload = catalog[name]
    gradient = workload.gradient_mb
    if gradient is None:
        return None
    for row in workload.data.get("throughput", []):
        if (row["gpu_model"], row["gpus"], row.get("placement", "consolidated")) == (gpu, 1, "consolidated"):
            return int(row["batch_size"]), round(1.0 / float(row["steps_per_s"]), 6), float(gradient)
    return None


def _calibration(spec: ImportSpec, models: list[str], compute: np.ndarray, comm: np.ndarray, b_in: float) -> dict[int, float]:
    """Job index -> inter-machine bandwidth reproducing Pollux's measured ratio, for the models Pollux measured."""
    ratios = {m: _pollux_ratio(spec, POLLUX_TRACE[m]) for m in sorted(set(models)) if m in POLLUX_TRACE}
    out = {}
    for k, m in enumerate(models):
        ratio = ratios.get(m)
        if ratio is not None:
            out[k] = round(inter_bandwidth(float(compute[k]), float(comm[k]), b_in, ratio), 4)
    return out


def _pollux_ratio(spec: ImportSpec, trace: str, gpus: int = 4) -> float | None:
    """Median spread/packed step-time ratio at ``gpus`` GPUs in ``--data``'s ``pollux/<trace>/placements.csv``."""
    path = spec.data / "pollux" / trace / "placements.csv"
    if not path.is_file():
        raise UserError("calibration=pollux needs Pollux's placement measurements", file=str(path), field="--set calibration")
    packed: dict[int, float] = {}
    spread: dict[int, float] = {}
    most = limits()["trace_rows"] + 1  # the header is row 1
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            for row, rec in enumerate(csv.DictReader(bounded_lines(fh, str(path))), start=2):
                if row > most:
                    raise too_many_rows(str(path), row)
                place = rec.get("placement")
                if place not in (str(gpus), "1" * gpus):
                    continue
                try:
                    bsz, t = int(rec["local_bsz"]), float(rec["step_time"])
                except (KeyError, TypeError, ValueError):
                    raise UserError("local_bsz and step_time must be numbers", file=str(path), field=f"row {row}") from None
                if not (math.isfinite(t) and t > 0):
                    raise UserError(f"step_time must be positive, got {t}", file=str(path), field=f"row {row}, column step_time")
                (packed if place == str(gpus) else spread)[bsz] = t
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read Pollux's placements ({exc})", file=str(path)) from None
    common = sorted(set(packed) & set(spread))
    if not common:
        return None
    return float(np.median([spread[b] / packed[b] for b in common]))


def _durations(trace: Trace) -> np.ndarray:
    """The trace's durations (Philly's, or Pollux's by the shared reader's rule), seconds."""
    missing = [j for j in trace.jobs if j.duration_s is None]
    if missing:
        raise UserError("the locality importer needs a duration for every job", trace.file, f"row {missing[0].row}")
    return np.array([j.duration_s for j in trace.jobs], dtype=float)
