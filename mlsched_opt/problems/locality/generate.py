"""Locality instances after spec 001 section 5 [our design; the paper's setting is unknown].

``--servers M`` machines of one shape (4 GPUs, 16 vCPU; ``--set gpus=``), one shared pool.
Workers need 1 GPU and 1-4 vCPU, PSs 1-4 vCPU and no GPU (SMD's ranges, section 5.2, cut to fit).
Jobs are drawn from the catalog's workloads with a measured 1-GPU V100 throughput (Gavel) and a
gradient size: one iteration computes the catalog batch in ``1 / steps_per_s`` seconds and
pushes and pulls the gradient.  The inter-machine bandwidth is ``inter_gbps`` (default 10, a
10 GbE link) and the intra-machine one ``bandwidth_ratio`` times that (the sweep of section 5.3:
1, 2, 5, 10).  With ``calibration=pollux`` a job whose model Pollux measured gets the
inter-machine bandwidth that reproduces Pollux's spread/packed step-time ratio at 4 GPUs
(:mod:`.calibration`) instead.

Work: ``V`` = a draw from [``work_min``, ``work_max``] worker-slots at the co-located rate
(expressed in samples); fan-in ``gamma`` 1-4; ``w_max`` 1-8; weights 1; arrivals uniform over
the first ``arrival_share`` of the horizon (load grows with the jobs per slot).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UserError
from ...io.catalog import Catalog, load_catalog
from ...io.files import limits
from ..base import GenerateSpec, Option
from ..generation import generate_command
from .calibration import POLLUX_TRACE, inter_bandwidth, pollux_ratio
from .view import MB_TO_GBIT

GPU_MODEL = "V100"
WORKLOADS = ("lm", "recommendation", "resnet18", "resnet50", "transformer")

OPTIONS = (
    Option("bandwidth_ratio", 5.0, None, "intra-machine bandwidth / inter-machine bandwidth (spec 5.3 sweeps 1, 2, 5, 10)",
           minimum=1.0, maximum=1e4),
    Option("inter_gbps", 10.0, None, "inter-machine bandwidth per worker, Gbit/s", minimum=1e-3, maximum=1e5),
    Option("calibration", "none", ("none", "pollux"), "pollux: per job, b_ex from Pollux's measured spread/packed step times"),
    Option("gpus", 4, None, "GPUs per machine", minimum=1, maximum=1024),
    Option("work_min", 4.0, None, "smallest job, in worker-slots at the co-located rate", minimum=0.01, maximum=1e4),
    Option("work_max", 24.0, None, "largest job, in worker-slots at the co-located rate", minimum=0.01, maximum=1e4),
    Option("arrival_share", 0.5, None, "jobs arrive uniformly over this share of the horizon", minimum=1e-3, maximum=1.0),
    Option("slot_s", 600.0, None, "slot length, seconds", minimum=1e-3, maximum=1e7),
)


def generate(spec: GenerateSpec, catalog: Catalog | None = None) -> dict[str, Any]:
    opts = {o.name: spec.options.get(o.name, o.default) for o in OPTIONS}
    bound = limits()
    for what, value, limit in (("--jobs", spec.jobs, "jobs"), ("--servers", spec.servers, "servers"),
                               ("--slots", spec.slots or 8, "slots")):
        if not 1 <= value <= bound[limit]:  # refuse before drawing anything: the loops below run this many times
            raise UserError(f"{what} must be in [1, {bound[limit]}] (the limit {limit}), got {value}", field=what)
    if opts["bandwidth_ratio"] < 1:
        raise UserError(f"bandwidth_ratio must be >= 1 (b_in >= b_ex), got {opts['bandwidth_ratio']}", field="--set bandwidth_ratio")
    if not 0 < opts["work_min"] <= opts["work_max"]:
        raise UserError(f"need 0 < work_min <= work_max, got {opts['work_min']} and {opts['work_max']}", field="--set work_min")
    if not 0 < opts["arrival_share"] <= 1:
        raise UserError(f"arrival_share must be in (0, 1], got {opts['arrival_share']}", field="--set arrival_share")
    if opts["gpus"] < 1 or opts["inter_gbps"] <= 0 or opts["slot_s"] <= 0:
        raise UserError("gpus, inter_gbps and slot_s must be positive", field="--set")
    catalog = catalog or load_catalog()
    rng = np.random.default_rng(spec.seed)
    T = spec.slots or 8
    b_ex = float(opts["inter_gbps"])
    b_in = b_ex * float(opts["bandwidth_ratio"])
    servers = [{"name": "m", "count": spec.servers, "capacity": {"gpu": int(opts["gpus"]), "cpu": 4 * int(opts["gpus"])}}]
    horizon = max(1, int(round(opts["arrival_share"] * T)))
    arrivals = sorted(int(a) for a in rng.integers(0, horizon, size=spec.jobs))
    jobs = [_job(rng, n, a, catalog, opts, b_in) for n, a in enumerate(arrivals)]
    return {
        "format": "mlsched-instance/1",
        "name": f"locality-{spec.jobs}j-{spec.servers}m-{T}t-seed{spec.seed}",
        "description": f"locality setting: b_in/b_ex = {opts['bandwidth_ratio']:g}, calibration {opts['calibration']}",
        "source": f"{generate_command('locality', spec, OPTIONS, T)}; spec papers/001_locality_rounding.md section 5 (our design); "
                  "compute times: Gavel 1-GPU V100 throughputs in models/; gradient sizes: models/",
        "problem": "locality",
        "time": {"slots": T, "slot_s": float(opts["slot_s"])},
        "cluster": {"intra_server_bandwidth_gbps": b_in, "inter_server_bandwidth_gbps": b_ex, "servers": servers},
        "jobs": jobs,
    }


def _job(rng: np.random.Generator, n: int, arrival: int, catalog: Catalog, opts: dict[str, Any], b_in: float) -> dict[str, Any]:
    name = WORKLOADS[int(rng.integers(len(WORKLOADS)))]
    workload = catalog[name]
    row = next(r for r in workload.data["throughput"]
               if (r["gpu_model"], r["gpus"], r.get("placement", "consolidated")) == (GPU_MODEL, 1, "consolidated"))
    batch = int(row["batch_size"])
    compute_s = round(1.0 / float(row["steps_per_s"]), 6)
    assert workload.gradient_mb is not None, name  # WORKLOADS are catalog entries with a gradient size
    gradient_mb = float(workload.gradient_mb)
    comm_gbit = 2.0 * gradient_mb * MB_TO_GBIT
    q_in = float(opts["slot_s"]) * batch / (compute_s + comm_gbit / b_in)
    worker_slots = float(rng.uniform(opts["work_min"], opts["work_max"]))
    step: dict[str, Any] = {"compute_s": compute_s, "ps_fan_in": int(rng.integers(1, 5))}
    if opts["calibration"] == "pollux" and name in POLLUX_TRACE:
        ratio = pollux_ratio(POLLUX_TRACE[name])
        if ratio is not None:
            step["inter_bandwidth_gbps"] = round(inter_bandwidth(compute_s, comm_gbit, b_in, ratio), 4)
    return {
        "id": f"j{n}",
        "model": name,
        "description": f"{workload.data.get('title', name)}: {worker_slots:.1f} worker-slots at the co-located rate",
        "arrival_slot": arrival,
        "work": {"epochs": 1, "samples_per_epoch": max(1, int(round(worker_slots * q_in)))},
        "local_batch_size": batch,
        "step": step,
        "workers": {"min": 1, "max": int(rng.integers(1, 9))},
        "demand": {"worker": {"gpu": 1, "cpu": int(rng.integers(1, 5))}, "ps": {"cpu": int(rng.integers(1, 5))}},
    }
