"""A job's placements on the servers and its speed alone: the primitives every harmony search and
heuristic stands on (count vectors, the placements of one job that fit, their joint product, the
standalone speed and run, whether co-location can only slow a job down, and why a job fits no
empty cluster).  They read the world and a view only: no simulator, no method."""

from __future__ import annotations

import math
import time
from functools import cache

import numpy as np

from ...errors import OptionError
from ...tolerances import capacity_limit
from .view import HarmonyView
from .world import Jobs, World, cached_per_world, speeds

#: rows of a joint product built or evaluated at once
CHUNK = 20000


#: The most ways to spread one job's tasks over the servers that the search enumerates.
MAX_VECTORS = 10**6


@cache
def count_vectors(n: int, M: int) -> np.ndarray:
    """Every way to spread ``n`` identical tasks over ``M`` servers, shape (C(n+M-1, M-1), M), the
    first server's count descending, then the next's (reverse lexicographic order).

    Built server by server from the last one (no recursion: a cluster of 1,000 servers is just a
    long loop), after checking the count against :data:`MAX_VECTORS`."""
    total = math.comb(n + M - 1, M - 1)
    if total > MAX_VECTORS:
        raise OptionError(f"{n} tasks spread over {M} servers in {total:.3g} ways, beyond the exhaustive search's "
                          f"{MAX_VECTORS:.0g} (use --method surrogate or a heuristic)", field="--method")
    # tails[r]: every vector of the last m servers holding r tasks, for r = 0..n.  One more server in
    # front: the vectors of r tasks are tails[0], tails[1], ..., tails[r] (a prefix of them all stacked)
    # behind a first count r, r-1, ..., 0, so each r is one slice (1,000 tasks took 500,000 small arrays)
    tails = [np.array([[r]], int) for r in range(n + 1)]
    for step in range(M - 1):
        stacked = np.concatenate(tails)
        lengths = np.array([len(t) for t in tails])
        source, ends = np.repeat(np.arange(n + 1), lengths), np.cumsum(lengths)
        # the last server added needs only the vectors of all n tasks
        wanted = range(n, n + 1) if step == M - 2 else range(n + 1)
        tails = [np.concatenate([(r - source[:ends[r]])[:, None], stacked[:ends[r]]], axis=1) if r in wanted else stacked[:0]
                 for r in range(n + 1)]
    out = tails[n]
    out.setflags(write=False)
    return out


def job_options(W: int, P: int, M: int, cap: np.ndarray, wd: np.ndarray, pd: np.ndarray,
                slack: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Worker and PS count vectors of one job that fit the empty servers, shapes (O, M) each (within ``cap + slack``:
    the exact searches pass the checker's limits, :func:`.tolerances.capacity_limit`, and no slack)."""
    wv, pv = count_vectors(W, M), count_vectors(P, M)
    if len(wv) * len(pv) > MAX_VECTORS:   # each list within the limit, their pairs not (4 workers, 2 PSs, 40 servers: 1e8)
        raise OptionError(f"{W} workers and {P} PSs spread over {M} servers in {len(wv) * len(pv):.3g} ways, beyond the "
                          f"exhaustive search's {MAX_VECTORS:.0g} (use --method surrogate or a heuristic)", field="--method")
    w = np.repeat(wv, len(pv), axis=0)
    p = np.tile(pv, (len(wv), 1))
    use = w[..., None] * wd + p[..., None] * pd
    ok = np.all(use <= cap + slack, axis=(1, 2))   # cap: (K,) for empty servers or (M, K) for free capacity
    return w[ok], p[ok]


def standalone_speed(world: World, kind: int, is_ps: bool, W: int, P: int, M: int,
                     cap: np.ndarray, wd: np.ndarray, pd: np.ndarray) -> float:
    """Samples/s of the job alone on ``M`` empty identical servers, at its best placement."""
    M = min(M, W + P)
    cap_t, wd_t, pd_t = (tuple(float(x) for x in np.asarray(a, float).ravel()[:len(wd)]) for a in (cap, wd, pd))

    def best() -> float:
        w, p = job_options(int(W), int(P), M, capacity_limit(np.array(cap_t)), np.array(wd_t), np.array(pd_t), slack=0.0)
        return float(speeds(world, Jobs.of([kind], [is_ps], [W], [P]), w[:, None, :], p[:, None, :])[:, 0].max())

    return cached_per_world(world, ("standalone", int(kind), bool(is_ps), int(W), int(P), M, cap_t, wd_t, pd_t), best)


def standalone_speeds(view: HarmonyView) -> np.ndarray:
    """Every job's standalone speed (samples/s), shape (J,)."""
    j = view.jobs
    return np.array([standalone_speed(view.world, int(j.kind[i]), bool(j.is_ps[i]), int(j.W[i]), int(j.P[i]), view.M,
                                      view.capacity[0], view.worker_demand[i], view.ps_demand[i]) for i in range(view.J)])


def standalone_profile(view: HarmonyView) -> tuple[np.ndarray, np.ndarray]:
    """Every job's standalone speed (samples/s) and its length alone on the empty cluster
    (intervals), shapes (J,): the pair the policy's features and the deferral rules read."""
    alone = standalone_speeds(view)
    return alone, view.samples / (alone * view.slot_s)


def standalone_intervals(view: HarmonyView) -> np.ndarray:
    """Every job's length alone on the empty cluster, in intervals (a policy feature)."""
    return standalone_profile(view)[1]


def empty_product(M: int, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The product of no jobs: one placement with no job columns and nothing used."""
    return np.zeros((1, 0, M), int), np.zeros((1, 0, M), int), np.zeros((1, M, K))


def extend_product(w: np.ndarray, p: np.ndarray, used: np.ndarray, ow: np.ndarray, op: np.ndarray,
            wd: np.ndarray, pd: np.ndarray, cap: np.ndarray, slack: float = 1e-9) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every placement ``(w, p)`` (B, J, M) joined with every option ``(ow, op)`` of one more job that
    keeps ``used + its demand`` within ``cap``; in chunks, so memory stays bounded."""
    add = ow[..., None] * wd + op[..., None] * pd                                   # (O, M, K)
    step = max(1, CHUNK * 10 // max(1, len(ow)))
    B, J, M = w.shape
    parts = [(np.zeros((0, J + 1, M), int), np.zeros((0, J + 1, M), int), np.zeros((0, *used.shape[1:])))]
    for lo in range(0, B, step):
        new_used = used[lo:lo + step, None] + add[None]                                # (b, O, M, K)
        b, o = np.nonzero(np.all(new_used <= cap + slack, axis=(2, 3)))
        parts.append((np.concatenate([w[lo + b], ow[o][:, None, :]], axis=1),
                      np.concatenate([p[lo + b], op[o][:, None, :]], axis=1), new_used[b, o]))
    new_w, new_p, new_u = (np.concatenate(x) for x in zip(*parts))
    return new_w, new_p, new_u


def min_intervals(view: HarmonyView) -> np.ndarray:
    """Every job's shortest possible run, in intervals: its work at its standalone speed (its best
    placement on the empty cluster).  No co-located task makes a job faster (all intensities u and
    sensitivities s are >= 0 and g is increasing on [0, inf), so every pressure term only grows),
    hence this is a lower bound on the job's run under any schedule."""
    return standalone_intervals(view)


def monotone_world(world: World) -> bool:
    """Whether co-location can only slow a job down (every interference and communication term >= 0)."""
    arrays = (world.u_worker, world.u_ps, world.s, world.t_comp, world.t_loc, world.t_rem)
    return world.kappa >= 0 and all(np.all(a >= 0) for a in arrays)


def best_speeds(view: HarmonyView, deadline: float) -> np.ndarray:
    """Every job's speed alone at its best placement on servers of the componentwise largest
    capacity (cached per job shape: a few enumerations however many jobs)."""
    cap = view.capacity.max(axis=0)
    j = view.jobs
    speed = np.empty(view.J)
    for i in range(view.J):
        if time.perf_counter() > deadline:
            raise TimeoutError
        speed[i] = standalone_speed(view.world, int(j.kind[i]), bool(j.is_ps[i]), int(j.W[i]), int(j.P[i]), view.M,
                                    cap, view.worker_demand[i], view.ps_demand[i])
    return speed


def misfit_reason(view: HarmonyView, deadline: float | None = None) -> str | None:
    """Why some job fits no placement on the empty cluster (exact enumeration of its count vectors), or ``None``.

    Exact on a reduced cluster: a job's W + P tasks use at most W + P servers, and servers of the
    same capacity are interchangeable on the empty cluster, so keeping min(count, W + P) servers
    of each capacity loses no placement.  One enumeration per job shape (W, P, demands)."""
    caps, counts = np.unique(view.capacity, axis=0, return_counts=True)
    seen: dict[tuple, bool] = {}
    for i in range(view.J):
        if deadline is not None and time.perf_counter() > deadline:
            raise TimeoutError
        W, P = int(view.jobs.W[i]), int(view.jobs.P[i])
        key = (W, P, view.worker_demand[i].tobytes(), view.ps_demand[i].tobytes())
        if key not in seen:
            reduced = np.repeat(caps, np.minimum(counts, W + P), axis=0)
            # within the checker's limits (a job the checker would accept placed is no misfit)
            ow, _ = job_options(W, P, len(reduced), capacity_limit(reduced), view.worker_demand[i], view.ps_demand[i], slack=0.0)
            seen[key] = len(ow) > 0
        if not seen[key]:
            return f"job {view.ids[i]}: {W} workers and {P} PSs fit no placement on the empty cluster"
    return None
