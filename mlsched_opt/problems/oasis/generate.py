"""OASiS instances after the paper's simulation settings (spec 000 section 5.1 and pitfalls 5-7).

``--servers M`` gives M worker servers (EC2 GPU instances P2/G3 at random, pitfall 5) and M
PS servers (c4.8xlarge); server bandwidth is drawn from [20, 50] Gbps and storage is 1 TB.
Per-worker demand: GPU 0-4, vCPU 1-10, memory 2-32 GB, storage 5-10 GB, bandwidth b 0.1-5
Gbps (GPUs capped at the largest worker server's, so every job fits somewhere); per PS: vCPU
1-10, memory 2-32 GB, storage 5-10 GB, bandwidth B 5-20 Gbps.  Jobs:
E 50-200 epochs, N 5-100 chunks, M 10-100 mini-batches per chunk, gradients e 30-575 MB,
sigmoid utilities with gamma1 in [1, 100], gamma3 in [1, 15] and the 10/55/35 mix of
time-insensitive (gamma2 = 0) / sensitive ([0.01, 1]) / critical ([4, 6]) jobs.  Draws are
uniform [PROP]; 1 slot = 1 hour (pitfall 6).

Two settings of tau (pitfall 7):

* ``literal``: tau in [0.001, 0.1] slots per mini-batch, as printed.  The shortest possible
  run then has a median of about 270 slots, so many jobs cannot finish in the horizon at all;
* ``calibrated`` (default): the same range is the compute time of a whole *chunk*
  (tau = draw / M per mini-batch), and the gradient push/pull happens once per chunk's worth of
  compute the same way, so ``ceil(E rho)`` lands in about [1, 25] slots, matching gamma3.
  Concretely the gradient size per mini-batch is e / M: a chunk moves e MB each way [PROP].

Arrivals: ``uniform`` slots over the horizon, or ``philly``: the submission times of N
consecutive jobs of the Microsoft Philly trace (a random window, ``philly/philly_jobs.csv`` of
the shared data), rescaled so the window spans the horizon, which keeps the trace's bursts.
"""

from __future__ import annotations

import csv
from datetime import datetime
from typing import Any

import numpy as np

from ...errors import UserError
from ...io.catalog import Catalog
from ...io.shared_data import shared_file
from ..base import GenerateSpec, Option
from ..generation import generate_command

GIB = 1.073741824
#: name -> (capacity, source); memory converted from GiB to GB.
WORKER_SHAPES = {
    "p2-8xlarge": ({"gpu": 8, "cpu": 32, "memory_gb": round(488 * GIB)}, "AWS EC2 p2.8xlarge: 8 K80, 32 vCPU, 488 GiB"),
    "p2-16xlarge": ({"gpu": 16, "cpu": 64, "memory_gb": round(732 * GIB)}, "AWS EC2 p2.16xlarge: 16 K80, 64 vCPU, 732 GiB"),
    "g3-8xlarge": ({"gpu": 2, "cpu": 32, "memory_gb": round(244 * GIB)}, "AWS EC2 g3.8xlarge: 2 M60, 32 vCPU, 244 GiB"),
    "g3-16xlarge": ({"gpu": 4, "cpu": 64, "memory_gb": round(488 * GIB)}, "AWS EC2 g3.16xlarge: 4 M60, 64 vCPU, 488 GiB"),
}
PS_SHAPE = ({"cpu": 36, "memory_gb": round(60 * GIB)}, "AWS EC2 c4.8xlarge: 36 vCPU, 60 GiB")
STORAGE_GB = 1000
SLOT_S = 3600.0
PHILLY = "philly/philly_jobs.csv"
CLASSES = (("insensitive", 0.10), ("sensitive", 0.55), ("critical", 0.35))
#: Generator sizes refused up front (our design): far beyond the paper's (400 jobs, 50 + 50 servers, T = 300, E <= 200).
MAX_EPOCHS = 10_000
MAX_JOBS, MAX_SERVERS, MAX_SLOTS = 100_000, 10_000, 100_000

OPTIONS = (
    Option("setting", "calibrated", ("calibrated", "literal"),
           "tau per chunk (calibrated) or per mini-batch as printed (literal; many jobs cannot finish)"),
    Option("arrivals", "uniform", ("uniform", "philly"),
           "arrival slots: uniform, or the Philly trace's submission times rescaled to the horizon"),
    Option("gamma1_min", 1.0, None, "lower end of the priority range gamma1 (Fig. 5 uses 1, 25, 50, 75)", minimum=0.0, maximum=100.0),
    Option("epochs_min", 50, None, "fewest epochs E (paper 50; small ratio instances use fewer)", minimum=1, maximum=MAX_EPOCHS),
    Option("epochs_max", 200, None, "most epochs E (paper 200)", minimum=1, maximum=MAX_EPOCHS),
)


def generate(spec: GenerateSpec, catalog: Catalog | None = None) -> dict[str, Any]:
    rng = np.random.default_rng(spec.seed)
    opts = dict(spec.options)
    if not 1 <= opts.get("epochs_min", 50) <= opts.get("epochs_max", 200):
        raise UserError(f"need 1 <= epochs_min <= epochs_max, got {opts.get('epochs_min')} and {opts.get('epochs_max')}",
                        field="--set epochs_min")
    for name, value, top in (("--jobs", spec.jobs, MAX_JOBS), ("--servers", spec.servers, MAX_SERVERS),
                             ("--slots", spec.slots or 10, MAX_SLOTS)):
        if not 1 <= value <= top:
            raise UserError(f"the oasis generator takes 1 <= {name.lstrip('-')} <= {top}, got {value}", field=name)
    T = spec.slots or 10
    M = spec.servers
    servers: list[dict[str, Any]] = []
    shapes = sorted(WORKER_SHAPES)
    for h in range(M):
        name = shapes[int(rng.integers(len(shapes)))]
        cap = dict(WORKER_SHAPES[name][0], storage_gb=STORAGE_GB, bandwidth_gbps=_u(rng, 20, 50))
        servers.append({"name": f"w{h}-{name}", "role": "worker", "capacity": cap})
    for k in range(M):
        cap = dict(PS_SHAPE[0], storage_gb=STORAGE_GB, bandwidth_gbps=_u(rng, 20, 50))
        servers.append({"name": f"ps{k}", "role": "ps", "capacity": cap})
    arrivals = _arrivals(rng, spec.jobs, T, opts.get("arrivals", "uniform"))
    max_gpu = max(s["capacity"]["gpu"] for s in servers if s["role"] == "worker")
    jobs = [_job(rng, n, int(a), opts, max_gpu) for n, a in enumerate(arrivals)]
    sources = sorted({src for _, src in WORKER_SHAPES.values()} | {PS_SHAPE[1]})
    return {
        "format": "mlsched-instance/1",
        "name": f"oasis-{spec.jobs}j-{M}+{M}s-{T}t-seed{spec.seed}",
        "description": f"OASiS simulation setting ({opts.get('setting', 'calibrated')} tau, {opts.get('arrivals', 'uniform')} arrivals)",
        "source": f"{generate_command('oasis', spec, OPTIONS, T)}; setting of Bao et al., INFOCOM 2018, section V-A "
                  "(spec papers/000_oasis.md 5.1); "
                  "server shapes: " + "; ".join(sources),
        "problem": "oasis",
        "time": {"slots": T, "slot_s": SLOT_S},
        "cluster": {"servers": servers},
        "jobs": jobs,
    }


def _u(rng: np.random.Generator, lo: float, hi: float, digits: int = 3) -> float:
    return round(float(rng.uniform(lo, hi)), digits)


def _i(rng: np.random.Generator, lo: int, hi: int) -> int:
    return int(rng.integers(lo, hi + 1))


def _arrivals(rng: np.random.Generator, n: int, T: int, how: str) -> list[int]:
    if how == "uniform":
        return sorted(int(a) for a in rng.integers(0, T, size=n))
    times = philly_submissions()
    if n > len(times):
        raise UserError(f"the Philly trace has {len(times)} jobs, fewer than the {n} asked for", field="--jobs")
    start = int(rng.integers(0, len(times) - n + 1))
    window = times[start:start + n] - times[start]
    span = window[-1] if window[-1] > 0 else 1.0
    return [min(int(w / span * T), T - 1) for w in window]


def philly_submissions() -> np.ndarray:
    """Submission times (seconds, sorted) of the Philly trace in the shared data."""
    with open(shared_file(PHILLY), newline="") as fh:
        stamps = [datetime.strptime(row["timestamp"], "%Y-%m-%d %H:%M:%S").timestamp() for row in csv.DictReader(fh)]
    return np.sort(np.array(stamps))


def _job(rng: np.random.Generator, n: int, arrival: int, opts: dict[str, Any], max_gpu: int) -> dict[str, Any]:
    E, N, M = _i(rng, int(opts.get("epochs_min", 50)), int(opts.get("epochs_max", 200))), _i(rng, 5, 100), _i(rng, 10, 100)
    tau = _u(rng, 0.001, 0.1, 4)
    e = _u(rng, 30, 575, 1)
    b = _u(rng, 0.1, 5, 2)
    B = _u(rng, 5, 20, 2)
    calibrated = opts.get("setting", "calibrated") == "calibrated"
    compute_s = tau * SLOT_S / M if calibrated else tau * SLOT_S
    gradient_mb = e / M if calibrated else e
    worker = {"gpu": min(_i(rng, 0, 4), max_gpu), "cpu": _i(rng, 1, 10), "memory_gb": _i(rng, 2, 32), "storage_gb": _i(rng, 5, 10),
              "bandwidth_gbps": b}
    ps = {"cpu": _i(rng, 1, 10), "memory_gb": _i(rng, 2, 32), "storage_gb": _i(rng, 5, 10), "bandwidth_gbps": B}
    kind = rng.choice(len(CLASSES), p=[p for _, p in CLASSES])
    gamma2 = 0.0 if kind == 0 else (_u(rng, 0.01, 1) if kind == 1 else _u(rng, 4, 6))
    utility = {"kind": "sigmoid", "gamma1": _u(rng, float(opts.get("gamma1_min", 1.0)), 100, 2), "gamma2": gamma2, "gamma3": _i(rng, 1, 15)}
    return {
        "id": f"j{n}",
        "description": f"time-{CLASSES[kind][0]}" if kind else "time-insensitive",
        "arrival_slot": arrival,
        "work": {"epochs": E, "chunks": N, "minibatches_per_chunk": M},
        "step": {"compute_s": round(compute_s, 6), "gradient_mb": round(gradient_mb, 6)},
        "workers": {"min": 1, "max": N},
        "ps": {"min": 1, "max": N},
        "demand": {"worker": worker, "ps": ps},
        "utility": utility,
    }
