"""Exact and reference placements in the true interference world (spec 004 section 6).

* :func:`exhaustive` — the optimum of a static batch (every job arrives in interval 0 and starts
  at once, spec 6a): every job's worker and PS count vectors over the servers, their Cartesian
  product built job by job with capacity pruning after each job and server-permutation
  canonicalization (identical servers: a placement is kept once, its servers sorted by their
  column of counts), then the average JCT of every survivor by a batched event-driven
  simulation.  Optimal by exhaustion over placements that start every job at interval 0.
* :func:`standalone_speed` — a job's speed alone on the empty cluster (its best placement), the
  denominator of normalised speed.
* :class:`Myopic` — the online reference of 6b(1): at each interval, the joint placement of up to
  ``group`` queued jobs that maximises the sum of normalised speeds of all running jobs, by
  exhaustive search in the true world.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...errors import OptionError
from .baselines import LoadBalance
from .simulate import Env
from .view import HarmonyView
from .world import Jobs, World, cached_per_world, speeds

#: joint placements we agree to enumerate before pruning (about a minute of numpy at worst)
MAX_PRODUCT = 2e8
_CHUNK = 20000


@lru_cache(maxsize=None)
def count_vectors(n: int, M: int) -> np.ndarray:
    """Every way to spread ``n`` identical tasks over ``M`` servers, shape (C(n+M-1, M-1), M)."""
    if M == 1:
        return np.array([[n]], int)
    rows = [np.concatenate([[k], rest]) for k in range(n, -1, -1) for rest in count_vectors(n - k, M - 1)]
    out = np.array(rows, int)
    out.setflags(write=False)
    return out


def job_options(W: int, P: int, M: int, cap: np.ndarray, wd: np.ndarray, pd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Worker and PS count vectors of one job that fit the empty servers, shapes (O, M) each."""
    wv, pv = count_vectors(W, M), count_vectors(P, M)
    w = np.repeat(wv, len(pv), axis=0)
    p = np.tile(pv, (len(wv), 1))
    use = w[..., None] * wd + p[..., None] * pd
    ok = np.all(use <= cap + 1e-9, axis=(1, 2))   # cap: (K,) for empty servers or (M, K) for free capacity
    return w[ok], p[ok]


def standalone_speed(world: World, kind: int, is_ps: bool, W: int, P: int, M: int,
                     cap: np.ndarray, wd: np.ndarray, pd: np.ndarray) -> float:
    """Samples/s of the job alone on ``M`` empty identical servers, at its best placement."""
    M = min(M, W + P)
    cap_t, wd_t, pd_t = (tuple(float(x) for x in np.asarray(a, float).ravel()[:len(wd)]) for a in (cap, wd, pd))

    def best() -> float:
        w, p = job_options(int(W), int(P), M, np.array(cap_t), np.array(wd_t), np.array(pd_t))
        return float(speeds(world, Jobs.of([kind], [is_ps], [W], [P]), w[:, None, :], p[:, None, :])[:, 0].max())

    return cached_per_world(world, ("standalone", int(kind), bool(is_ps), int(W), int(P), M, cap_t, wd_t, pd_t), best)


def standalone_speeds(view: HarmonyView) -> np.ndarray:
    """Every job's standalone speed (samples/s), shape (J,)."""
    j = view.jobs
    return np.array([standalone_speed(view.world, int(j.kind[i]), bool(j.is_ps[i]), int(j.W[i]), int(j.P[i]), view.M,
                                      view.capacity[0], view.worker_demand[i], view.ps_demand[i]) for i in range(view.J)])


def standalone_intervals(view: HarmonyView) -> np.ndarray:
    """Every job's length alone on the empty cluster, in intervals (a policy feature)."""
    return view.samples / (standalone_speeds(view) * view.slot_s)


@dataclass(frozen=True)
class ExactResult:
    """The best static placement (counts (J, M)), its average JCT (intervals), and search statistics."""

    w: np.ndarray | None
    p: np.ndarray | None
    avg_jct: float | None
    product: int
    canonical: int
    complete: bool
    elapsed_s: float


def search_size(view: HarmonyView) -> int:
    """The size of the raw Cartesian product (before pruning and symmetry)."""
    return int(np.prod([len(job_options(int(view.jobs.W[i]), int(view.jobs.P[i]), view.M, view.capacity,
                                        view.worker_demand[i], view.ps_demand[i])[0]) for i in range(view.J)], dtype=float))


def exhaustive(view: HarmonyView, time_limit: float) -> ExactResult:
    """The optimal static placement by enumeration (see the module docstring).

    Raises
    ------
    OptionError
        When the batch is not static, servers differ, or the product exceeds :data:`MAX_PRODUCT`.
    """
    start = time.perf_counter()
    w, p, size, complete = static_placements(view, time_limit)
    if not complete or len(w) == 0:
        return ExactResult(None, None, None, size, len(w), complete, time.perf_counter() - start)
    best_val, best_idx = math.inf, -1
    for lo in range(0, len(w), _CHUNK):
        jct = static_jct(view, w[lo:lo + _CHUNK], p[lo:lo + _CHUNK]).mean(axis=1)
        k = int(np.argmin(jct))
        if jct[k] < best_val - 1e-12:
            best_val, best_idx = float(jct[k]), lo + k
        if time.perf_counter() - start > time_limit and lo + _CHUNK < len(w):
            return ExactResult(w[best_idx], p[best_idx], best_val, size, len(w), False, time.perf_counter() - start)
    return ExactResult(w[best_idx], p[best_idx], best_val, size, len(w), True, time.perf_counter() - start)


def static_placements(view: HarmonyView, time_limit: float) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """Every placement of a static batch that fits, one per server permutation class.

    Returns ``(w, p, raw_product, complete)`` with ``w``, ``p`` of shape (B, J, M).
    """
    if not view.static:
        raise OptionError("exact search needs a static batch (every job arriving in interval 0); "
                          "for online traces use --method myopic (the myopic-optimal reference)", field="--method")
    if not np.allclose(view.capacity, view.capacity[0]):
        raise OptionError("exact search canonicalizes over identical servers; this cluster's servers differ", field="--method")
    size = search_size(view)
    if size > MAX_PRODUCT:
        raise OptionError(f"{size:.3g} joint placements exceed the exact search's limit ({MAX_PRODUCT:.0g}); "
                          "spec 6a sizes: M <= 4 servers, N <= 4 jobs, W <= 4, P <= 2 (use --method surrogate beyond)",
                          field="--method")
    start = time.perf_counter()
    w, p, used = _empty_product(view.M, view.capacity.shape[1])
    for i in range(view.J):
        ow, op = job_options(int(view.jobs.W[i]), int(view.jobs.P[i]), view.M, view.capacity, view.worker_demand[i], view.ps_demand[i])
        w, p, used = _canonical(*_extend(w, p, used, ow, op, view.worker_demand[i], view.ps_demand[i], view.capacity))
        if time.perf_counter() - start > time_limit:
            return w, p, size, False
    return w, p, size, True


def _empty_product(M: int, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The product of no jobs: one placement with no job columns and nothing used."""
    return np.zeros((1, 0, M), int), np.zeros((1, 0, M), int), np.zeros((1, M, K))


def _extend(w: np.ndarray, p: np.ndarray, used: np.ndarray, ow: np.ndarray, op: np.ndarray,
            wd: np.ndarray, pd: np.ndarray, cap: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every placement ``(w, p)`` (B, J, M) joined with every option ``(ow, op)`` of one more job that
    keeps ``used + its demand`` within ``cap``; in chunks, so memory stays bounded."""
    add = ow[..., None] * wd + op[..., None] * pd                                   # (O, M, K)
    step = max(1, _CHUNK * 10 // max(1, len(ow)))
    B, J, M = w.shape
    parts = [(np.zeros((0, J + 1, M), int), np.zeros((0, J + 1, M), int), np.zeros((0, *used.shape[1:])))]
    for lo in range(0, B, step):
        new_used = used[lo:lo + step, None] + add[None]                                # (b, O, M, K)
        b, o = np.nonzero(np.all(new_used <= cap + 1e-9, axis=(2, 3)))
        parts.append((np.concatenate([w[lo + b], ow[o][:, None, :]], axis=1),
                      np.concatenate([p[lo + b], op[o][:, None, :]], axis=1), new_used[b, o]))
    return tuple(np.concatenate(x) for x in zip(*parts))


def _canonical(w: np.ndarray, p: np.ndarray, used: np.ndarray):
    """Sort each placement's servers by their column of counts and drop duplicates."""
    J = w.shape[1]
    base = int(max(w.max(initial=0), p.max(initial=0))) + 1
    key = np.zeros(w.shape[0:1] + w.shape[2:], np.int64)
    for j in range(J):
        key = key * base * base + w[:, j, :] * base + p[:, j, :]
    order = np.argsort(-key, axis=1, kind="stable")
    rows = np.arange(len(w))[:, None]
    key = key[rows, order]
    w = np.take_along_axis(w, order[:, None, :], axis=2)
    p = np.take_along_axis(p, order[:, None, :], axis=2)
    used = used[rows, order]
    _, first = np.unique(key, axis=0, return_index=True)
    first.sort()
    return w[first], p[first], used[first]


def static_jct(view: HarmonyView, w: np.ndarray, p: np.ndarray) -> np.ndarray:
    """JCT in intervals of every job when all start at time 0 with placements ``(B, J, M)``."""
    B, J = w.shape[:2]
    remaining = np.broadcast_to(view.samples, (B, J)).astype(float).copy()
    alive = np.ones((B, J), bool)
    finish = np.zeros((B, J))
    t = np.zeros(B)
    for _ in range(J):
        rows = alive.any(axis=1)
        if not rows.any():
            break
        a = alive[rows]
        v = speeds(view.world, view.jobs, w[rows] * a[..., None], p[rows] * a[..., None])
        with np.errstate(divide="ignore", invalid="ignore"):
            dt_all = np.where(a, remaining[rows] / v, np.inf)
        dt = dt_all.min(axis=1)
        t[rows] += dt
        remaining[rows] = np.where(a, remaining[rows] - v * dt[:, None], 0.0)
        done = a & (dt_all <= dt[:, None] * (1 + 1e-12))
        sub_finish = finish[rows]
        sub_finish[done] = np.broadcast_to(t[rows][:, None], done.shape)[done]
        finish[rows] = sub_finish
        a = a & ~done
        alive[rows] = a
    return finish / view.slot_s


class Myopic(LoadBalance):
    """Myopic-optimal online reference (spec 6b(1)): per interval, the joint placement of the next
    ``group`` queued jobs maximising the sum of normalised speeds of everything running, found by
    exhaustive search in the true world; jobs past the group are planned in the next group."""

    def __init__(self, view: HarmonyView, group: int = 3, max_product: float = 2e6):
        self.view = view
        self.group = group
        self.max_product = max_product
        self.alone = standalone_speeds(view)
        self.plan: dict[int, list[tuple[str, int]]] = {}

    def start_job(self, env: Env, j: int) -> None:
        if j not in self.plan:
            queue = [k for k in env.queue if k not in self.plan]
            self._plan(env, queue[queue.index(j):][: self.group])

    def choose(self, env: Env, j: int, role: str, mask: np.ndarray) -> int:
        steps = self.plan.get(j)
        if steps:
            for n, (r, m) in enumerate(steps):
                if r == role and mask[m]:
                    steps.pop(n)
                    return m
        return super().choose(env, j, role, mask)

    def end_job(self, env: Env, j: int, placed: bool) -> None:
        self.plan.pop(j, None)

    def _plan(self, env: Env, group: list[int]) -> None:
        view = self.view
        while group:
            best = self._search(env, group)
            if best is not None:
                for j, (wj, pj) in zip(group, best):
                    self.plan[j] = [("ps", m) for m in np.repeat(np.arange(view.M), pj)] + \
                                   [("worker", m) for m in np.repeat(np.arange(view.M), wj)]
                return
            group = group[:-1]

    def _search(self, env: Env, group: list[int]):
        view = self.view
        opts = []
        size = 1.0
        for j in group:
            ow, op = job_options(int(view.jobs.W[j]), int(view.jobs.P[j]), view.M, env.free, view.worker_demand[j], view.ps_demand[j])
            opts.append((ow, op))
            size *= len(ow)
        if size == 0 or size > self.max_product:
            return None
        M = view.M
        w, p, used = _empty_product(M, view.capacity.shape[1])
        for j, (ow, op) in zip(group, opts):
            w, p, used = _extend(w, p, used, ow, op, view.worker_demand[j], view.ps_demand[j], env.free)
        if len(w) == 0:
            return None
        running = np.flatnonzero(env.running)
        idx = np.concatenate([running, group]).astype(int)
        W = np.concatenate([np.broadcast_to(env.w[running], (len(w), len(running), M)), w], axis=1)
        P = np.concatenate([np.broadcast_to(env.p[running], (len(w), len(running), M)), p], axis=1)
        score = (speeds(view.world, view.jobs.take(idx), W, P) / self.alone[idx]).sum(axis=1)
        k = int(np.argmax(score))
        return list(zip(w[k], p[k]))
