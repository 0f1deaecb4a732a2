"""Harmony traces after spec 004 section 3's job generator [PROP, following DL2 ``trace.py``].

``--servers M`` identical servers of the spec's small-scale shape (8 cores, 2 GPUs, 48 GB); a
worker needs (2 cores, 1 GPU, 4 GB), a PS (2 cores, 4 GB).  Per job: a type uniform over the
world's types; all-reduce with probability ``allreduce_share``; W uniform in 1..4 and, for PS jobs,
P uniform in 1..2.  The standalone duration is ``Weibull(2) x max_intervals / 3`` clipped to
[``min_intervals``, ``max_intervals``]; the work is that many epochs of one interval each at the
job's standalone speed (its best placement on the empty cluster).  Arrivals are Poisson with the
rate that puts the expected GPU load at ``load``, at most ``max_new`` per interval.  With
``static=true`` every job arrives in interval 0 and the batch is drawn so that all jobs fit at
once (spec section 6a; the exact search needs that).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UserError
from ...io.catalog import Catalog, load_catalog
from ..base import GenerateSpec, Option
from ..generation import generate_command
from .placements import standalone_speed
from .view import make_world

CAPACITY = {"cpu": 8, "gpu": 2, "memory_gb": 48}
WORKER = {"cpu": 2, "gpu": 1, "memory_gb": 4}
PS = {"cpu": 2, "memory_gb": 4}

OPTIONS = (
    Option("world", "default", ("default", "gavel"), "job types: the spec's six (default/hard worlds) or Gavel's measured ones"),
    Option("load", 0.8, None, "expected GPU load the arrival rate is set for (spec: 0.6-0.9)", minimum=0.01, maximum=2.0),
    Option("allreduce_share", 0.4, None, "share of all-reduce jobs (spec: 0.3-0.5)", minimum=0.0, maximum=1.0),
    Option("static", False, None, "every job arrives in interval 0 and all fit at once (exact search)"),
    Option("min_intervals", 5.0, None, "shortest standalone duration, intervals", minimum=0.01, maximum=10_000.0),
    Option("max_intervals", 60.0, None, "longest standalone duration, intervals", minimum=0.01, maximum=10_000.0),
    Option("max_new", 4, None, "N': at most this many arrivals per interval", minimum=1, maximum=1000),
    Option("slot_s", 300.0, None, "scheduling interval, seconds", minimum=1.0, maximum=86_400.0),
    Option("max_workers", 4, None, "largest W", minimum=1, maximum=64),
)


def generate(spec: GenerateSpec, catalog: Catalog | None = None) -> dict[str, Any]:
    opts = {o.name: spec.options.get(o.name, o.default) for o in OPTIONS}
    if not 0 < opts["load"] <= 2:
        raise UserError(f"load must be in (0, 2], got {opts['load']}", field="--set load")
    if not 0 <= opts["allreduce_share"] <= 1:
        raise UserError(f"allreduce_share must be in [0, 1], got {opts['allreduce_share']}", field="--set allreduce_share")
    if not 0 < opts["min_intervals"] <= opts["max_intervals"]:
        raise UserError("need 0 < min_intervals <= max_intervals", field="--set min_intervals")
    if opts["max_new"] < 1 or opts["slot_s"] <= 0 or opts["max_workers"] < 1:
        raise UserError("max_new, slot_s and max_workers must be positive", field="--set")
    catalog = catalog or load_catalog()
    world = make_world(opts["world"], catalog)
    rng = np.random.default_rng(spec.seed)
    M = spec.servers
    cap = np.array([CAPACITY[r] for r in ("cpu", "gpu", "memory_gb")], float)
    wd = np.array([WORKER.get(r, 0) for r in ("cpu", "gpu", "memory_gb")], float)
    pd = np.array([PS.get(r, 0) for r in ("cpu", "gpu", "memory_gb")], float)
    draws: list[list[Any]] = []  # [kind, allreduce, W, P, d], shrunk in place below
    for _ in range(spec.jobs):
        kind = int(rng.integers(len(world.types)))
        allreduce = bool(rng.random() < opts["allreduce_share"])
        W = min(int(rng.integers(1, opts["max_workers"] + 1)), int(M * cap[1] // wd[1]))
        P = 0 if allreduce else int(rng.integers(1, 3))
        d = float(np.clip(rng.weibull(2.0) * opts["max_intervals"] / 3, opts["min_intervals"], opts["max_intervals"]))
        draws.append([kind, allreduce, W, P, d])
    if opts["static"]:
        _shrink_to_fit(draws, M * cap, wd, pd, spec.jobs)
    jobs = []
    for i, (kind, allreduce, W, P, d) in enumerate(draws):
        v = standalone_speed(world, kind, not allreduce, W, P, M, cap, wd, pd)
        job: dict[str, Any] = {"id": f"j{i}", "model": world.types[kind], "architecture": "allreduce" if allreduce else "ps",
                               "workers": {"count": W}}
        if not allreduce:
            job["ps"] = {"count": P}
        job["work"] = {"epochs": max(1, round(d)), "samples_per_epoch": max(1, round(v * opts["slot_s"]))}
        job["demand"] = {"worker": dict(WORKER), **({} if allreduce else {"ps": dict(PS)})}
        jobs.append(job)
    arrivals = [0] * spec.jobs if opts["static"] else _arrivals(rng, spec.jobs, M, opts)
    for job, a in zip(jobs, arrivals):
        job["arrival_slot"] = int(a)
    cmd = generate_command("harmony", spec, OPTIONS)
    return {
        "format": "mlsched-instance/1",
        "name": f"harmony-{spec.jobs}jobs-{M}servers-seed{spec.seed}",
        "source": cmd,
        "description": f"Harmony trace, {opts['world']} world types, spec 004 section 3 generator [PROP]",
        "problem": "harmony",
        "time": {"slots": int(max(arrivals)) + 1, "slot_s": float(opts["slot_s"])},
        "cluster": {"servers": [{"name": "s", "count": M, "capacity": dict(CAPACITY)}]},
        "jobs": jobs,
    }


def _shrink_to_fit(draws: list[list], total: np.ndarray, wd: np.ndarray, pd: np.ndarray, n: int) -> None:
    """Take tasks from the largest jobs (PSs before workers) until the whole batch fits at once;
    identical servers and equal task shapes make the aggregate check exact here."""
    def use() -> np.ndarray:
        return sum(W * wd + P * pd for _, _, W, P, _ in draws)

    while not np.all(use() <= total + 1e-9):
        shrinkable = [i for i, (_, allreduce, W, P, _) in enumerate(draws) if (1 if allreduce else 2) < W + P]
        if not shrinkable:
            raise UserError(f"{n} jobs cannot all start at once on these servers; use fewer jobs or more servers", field="--jobs")
        big = max(shrinkable, key=lambda i: (draws[i][2] + draws[i][3], -i))
        P = draws[big][3]
        if P > 1:
            draws[big][3] -= 1
        else:
            draws[big][2] -= 1


def _arrivals(rng: np.random.Generator, n: int, M: int, opts: dict[str, Any]) -> list[int]:
    """Poisson arrivals at the rate giving ``load`` x GPUs in expectation, capped at ``max_new``."""
    draws = np.random.default_rng(0).weibull(2.0, 20000) * opts["max_intervals"] / 3
    mean_d = float(np.clip(draws, opts["min_intervals"], opts["max_intervals"]).mean())
    mean_w = (opts["max_workers"] + 1) / 2
    rate = opts["load"] * M * CAPACITY["gpu"] / (mean_w * mean_d)
    out: list[int] = []
    k = 0
    while len(out) < n:
        out += [k] * min(int(rng.poisson(rate)), opts["max_new"], n - len(out))
        k += 1
    return out
