"""The hetero family's answers: what an allocation (one class-count vector per job) is worth, and the
decision it writes.  Algorithms import this module, never the Pyomo formulation, to write their answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...io.solution import plain
from .timing import batch_split, fair_share_jct, fairness, jct_rows
from .view import HeteroView


def evaluate(view: HeteroView, x: np.ndarray, comm: str, split: str = "proportional") -> np.ndarray:
    """Per-job JCT of the allocation ``x`` (shape (S, G), one class-count vector per job)."""
    return jct_rows(view, np.arange(view.S), np.asarray(x, dtype=np.int64).reshape(view.S, view.G), comm, split)


def decision(view: HeteroView, x: np.ndarray, options: Mapping[str, Any], split: str = "proportional",
             stats: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The shared vocabulary: ``placement`` (job -> workers per server) and ``extra.batch``
    (job -> server -> samples per GPU), plus the JCTs and the fairness measures as claims."""
    x = np.asarray(x, dtype=np.int64)
    if (x.sum(axis=0) > view.counts).any():
        raise ValueError("allocation uses more workers of a class than exist")
    cursor = np.zeros(view.G, dtype=np.int64)
    placement: dict[str, Any] = {}
    batches: dict[str, Any] = {}
    for i, job in enumerate(view.jobs):
        servers: list[str] = []
        rho: list[float] = []
        cap: list[int] = []
        for c in np.flatnonzero(x[i]):
            take = view.members[c][cursor[c]:cursor[c] + x[i, c]]
            cursor[c] += x[i, c]
            servers += take
            rho += [float(job.rho[c])] * len(take)
            cap += [int(job.cap[c])] * len(take)
        b = batch_split(job, np.array(rho), np.array(cap), split)
        workers: dict[str, int] = {}
        per_server: dict[str, list[int]] = {}
        for name, samples in zip(servers, b):
            workers[name] = workers.get(name, 0) + 1
            per_server.setdefault(name, []).append(int(samples))
        placement[job.id] = {"workers": workers}
        batches[job.id] = per_server
    jcts = evaluate(view, x, options["comm"], split)
    extra: dict[str, Any] = {
        "batch": batches,
        "jct_s": {job.id: float(v) for job, v in zip(view.jobs, jcts)},
        "fairness": fairness(jcts, fair_share_jct(view, options["comm"])),
    }
    if stats:
        extra["stats"] = dict(stats)
    return plain({"admitted": [j.id for j in view.jobs], "placement": placement, "extra": extra})
