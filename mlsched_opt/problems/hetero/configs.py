"""Configurations (class-count vectors): counting, enumerating and tabulating them per job."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import ModelTooLarge
from ...io.instance import Instance
from .timing import jct, jct_rows
from .view import HeteroView, hetero_view

#: Refuse to enumerate more configurations per job than this (the exact model would not build).
MAX_CONFIGS = 2_000_000


def magnitude(n: int) -> str:
    """``n`` for a message: exact below 10^15, else its order of magnitude (``str`` of an int of
    more than 4300 digits raises, and ``C(K, S)`` reaches that at a few thousand jobs)."""
    return f"{n:,}" if n < 10**15 else f"about 10^{int((n.bit_length() - 1) * math.log10(2))}"


def vector_count(counts: np.ndarray) -> int:
    """``prod(counts + 1)`` in Python integers (numpy's int64 product wraps around silently)."""
    return math.prod(int(c) + 1 for c in counts)


def all_vectors(counts: np.ndarray) -> np.ndarray:
    """Every ``n`` with ``0 <= n <= counts``, shape (prod(counts + 1), G), mixed-radix order."""
    size = vector_count(counts)
    if size > MAX_CONFIGS:
        # a size refusal, not a plain option error: an anytime exact method then answers without this model
        raise ModelTooLarge(f"{magnitude(size)} worker-count vectors per job: too many to enumerate for the configuration ILP "
                            "and the oracles; --method exact (with HiGHS) answers by column generation, or use --method "
                            "sampling", field="--method")
    grids = np.indices(tuple(int(c) + 1 for c in counts)).reshape(len(counts), -1).T
    return np.ascontiguousarray(grids, dtype=np.int64)


def radix(counts: np.ndarray) -> np.ndarray:
    """Weights that turn a vector into its row of :func:`all_vectors` (C order: the last class varies fastest)."""
    return np.concatenate([np.cumprod((np.asarray(counts) + 1)[::-1])[::-1][1:], [1]]).astype(np.int64)


def ranged_table(view: HeteroView, comm: str, split: str = "proportional") -> tuple[np.ndarray, np.ndarray]:
    """Every class-count vector (:func:`all_vectors` order) and each job's JCT on it, shape (S, V):
    ``inf`` outside the job's size range and where it cannot run (a GPU model it has no
    throughput for, memory caps that cannot hold its batch)."""
    vectors = all_vectors(view.counts)
    k = vectors.sum(axis=1)
    table = np.full((view.S, len(vectors)), np.inf)
    for i, job in enumerate(view.jobs):
        ok = (k >= job.k_range[0]) & (k <= job.k_range[1])
        table[i, ok] = jct(view, job, vectors[ok], comm, split)
    return vectors, table


class JctTable:
    """``J_i(n)`` for every job and every class-count vector, computed once (vectorized) when the
    cluster has at most :data:`TABLE_LIMIT` vectors, else per call, vectorized, for the jobs whose
    vector differs from the previous call's."""

    TABLE_LIMIT = 200_000

    def __init__(self, view: HeteroView, comm: str, split: str = "proportional"):
        self.view, self.comm, self.split = view, comm, split
        size = vector_count(view.counts)
        self.radix = radix(view.counts)
        self.table: np.ndarray | None = None
        self._last: tuple[np.ndarray, np.ndarray] | None = None
        if size <= self.TABLE_LIMIT:
            vectors = all_vectors(view.counts)
            self.table = np.vstack([jct(view, job, vectors, comm, split) for job in view.jobs])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Per-job JCT of ``x`` (shape (S, G))."""
        if self.table is not None:
            return self.table[np.arange(self.view.S), x @ self.radix]
        # one batched pass over the jobs whose vector changed since the last call: successive
        # markets of a local search differ in a few jobs, and a pass over all 1,686 costs 5 ms
        x = np.asarray(x, dtype=np.int64)
        if self._last is None:
            changed = np.arange(self.view.S)
            values = np.empty(self.view.S)
        else:
            last_x, last_values = self._last
            changed = np.flatnonzero((x != last_x).any(axis=1))
            values = last_values.copy()
        values[changed] = jct_rows(self.view, changed, x[changed], self.comm, self.split)
        self._last = (x.copy(), values)
        return values.copy()


def config_table(view: HeteroView, comm: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per job: the configurations it can run on and their JCTs (the ILP's columns)."""
    vectors, table = ranged_table(view, comm)
    return [(vectors[np.isfinite(row)], row[np.isfinite(row)]) for row in table]


def diagnose(instance: Instance, options: Mapping[str, Any]) -> str | None:
    """Why the instance is infeasible (called once a solve or an exhaustive search proved it is)."""
    view = hetero_view(instance)
    need = sum(j.k_range[0] for j in view.jobs)
    if need > view.K:
        return f"the jobs need at least {need} GPUs together (workers.min), the cluster has {view.K}"
    table = config_table(view, options["comm"])
    for job, (configs, _) in zip(view.jobs, table):
        if len(configs) == 0:
            return f"job {job.id} has no feasible worker set (memory caps, GPU models, or workers range)"
    fewest = [int(configs.sum(axis=1).min()) for configs, _ in table]
    if sum(fewest) > view.K:
        return (f"with their memory caps, GPU models and ranges the jobs need at least {sum(fewest)} GPUs together, "
                f"the cluster has {view.K}")
    return "no combination of the jobs' feasible worker sets (memory caps, GPU models, ranges) fits the cluster together"
