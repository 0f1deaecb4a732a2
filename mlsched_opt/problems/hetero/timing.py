"""Iteration time and JCT of a job on a multiset of workers, vectorized over many multisets.

A multiset is a class-count vector ``n`` (spec 003 section 2: a *configuration*).  Spec
section 1 (a reconstruction; our design):

* compute: with proportional assignment (Lemma 1) the continuous optimum is ``Pi / X`` with
  ``X = sum_c n_c rho_c``.  Batches are integers (P2), so we use the best *integer* split: the
  smallest ``t`` with ``sum_c n_c min(cap_c, floor(t rho_c)) >= Pi``.  That is exact for the
  integer problem (filling workers up to ``t`` is the only way to stay under ``t``), includes
  the memory cap's water-filling (P3), and equals ``Pi / X`` whenever the proportional split is
  integral.  With ``split="equal"`` (the no-load-balancing baseline) each worker gets
  ``Pi / K`` (the remainder to the fastest) and compute is ``max_k b_k / rho_k``.
* communication (pluggable, P5): ``ring`` all-reduce ``2 (K-1)/K D / r_min``; ``ps``, one
  parameter server whose link carries every worker's push and pull, ``2 K D / r_min``
  [our design]; ``none``.
* JCT ``J = T (compute + communication)`` (no overlap, [REIMPL]).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .options import COMM_NAMES
from .view import NO_CAP, HeteroJob, HeteroView

SPLITS = ("proportional", "equal")


def _ring(k: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.where(k > 1, 2.0 * (k - 1) / np.maximum(k, 1) * c, 0.0)


def _ps(k: np.ndarray, c: np.ndarray) -> np.ndarray:
    return 2.0 * k * c


def _none(k: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.zeros_like(c, dtype=float)


#: ``(job size K, D / r_min) -> seconds per iteration``, elementwise.
COMM_MODELS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {"ring": _ring, "ps": _ps, "none": _none}
assert tuple(COMM_MODELS) == COMM_NAMES


def comm_constant(job: HeteroJob, r_min: np.ndarray) -> np.ndarray:
    """``D / r_min`` in seconds (``comm_s`` when the job gives it directly)."""
    if job.comm_s is not None:
        return np.full(np.shape(r_min), job.comm_s, dtype=float)
    return job.comm_gbit / r_min


def r_min(view: HeteroView, n: np.ndarray) -> np.ndarray:
    bw = np.broadcast_to(view.bandwidth, n.shape)
    return np.where(n > 0, bw, np.inf).min(axis=-1)


def compute_time(job: HeteroJob, n: np.ndarray, split: str = "proportional") -> np.ndarray:
    """Seconds of computation per iteration for each row of ``n`` (shape (M, G)); ``inf`` when
    ``n`` uses a class the job cannot run on, or the memory caps cannot hold ``Pi``."""
    n = np.atleast_2d(np.asarray(n, dtype=np.int64))
    rho, cap, pi = job.rho, job.cap, job.batch
    used = n > 0
    bad = (used & (rho <= 0)).any(axis=1) | ~used.any(axis=1)
    bad |= (n * np.minimum(cap, pi)).sum(axis=1) < pi
    safe_rho = np.where(rho > 0, rho, 1.0)
    if split == "equal":
        out = _equal_split_time(job, n, safe_rho)
    else:
        out = _proportional_time(job, n, safe_rho, used)
    return np.where(bad, np.inf, out)


def _proportional_time(job: HeteroJob, n: np.ndarray, rho: np.ndarray, used: np.ndarray) -> np.ndarray:
    pi = job.batch
    capped = np.minimum(job.cap, pi)
    x = (n * rho).sum(axis=1)
    lo = pi / np.where(x > 0, x, np.inf)  # empty rows get 0 here and inf from the caller
    # floor(Pi rho / X) per worker, then the remaining r < K samples one by one to the worker
    # whose time grows least: the r-th smallest of the candidates (base_c + j) / rho_c (n_c copies
    # each).  Exact, and no candidate level beyond ceil(rho_max / rho_min) + 1 can be needed.  A
    # class the row does not use gets 0: Pi rho_c / X is no sample count there and may pass int64.
    base = np.floor(np.where(used, lo[:, None] * rho * (1 + 1e-12), 0.0)).astype(np.int64)
    r = pi - (n * base).sum(axis=1)
    eligible = job.rho[job.rho > 0]
    # Pi levels always suffice (fewer than Pi samples remain): rho_max / rho_min alone may be beyond int64
    levels = int(min(np.ceil(eligible.max() / eligible.min()), pi)) + 2
    binding = ((n > 0) & (job.cap < pi) & (base + levels > capped)).any(axis=1)
    out = _level_time(n, np.broadcast_to(rho, n.shape), base, r, used, levels)
    if binding.any():
        out[binding] = _capped_time(pi, n[binding], rho, capped.astype(float), used[binding], lo[binding])
    return out


def _capped_time(pi: int, n: np.ndarray, rho: np.ndarray, capped: np.ndarray, used: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Water-filling under memory caps (P3): the smallest ``t`` with ``sum n min(cap, floor(t rho)) >= Pi``, by bisection."""
    def filled(t: np.ndarray) -> np.ndarray:
        return (n * np.minimum(capped, np.floor(t[:, None] * rho * (1 + 1e-12)))).sum(axis=1)

    # f(lo + 1/rho_min) >= Pi unless caps bind; f(max cap/rho) = sum n cap >= Pi always (when feasible)
    near = lo + np.where(used, 1.0 / rho, 0.0).max(axis=1)
    hi = np.where(filled(near) >= pi, near, np.where(used, capped / rho, 0.0).max(axis=1))
    hi = np.maximum(hi, lo)
    lo = lo * (1 - 1e-12)
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        ok = filled(mid) >= pi
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    # snap to the breakpoint: the largest per-worker time at hi is the exact integer optimum
    per = np.minimum(capped, np.floor(hi[:, None] * rho * (1 + 1e-12))) / rho
    return np.where(used, per, 0.0).max(axis=1)


def _equal_split_time(job: HeteroJob, n: np.ndarray, rho: np.ndarray) -> np.ndarray:
    k = n.sum(axis=1)
    base, extra = np.divmod(job.batch, np.maximum(k, 1))
    order = np.argsort(-job.rho, kind="stable")
    before = np.concatenate([np.zeros((len(n), 1), np.int64), np.cumsum(n[:, order], axis=1)[:, :-1]], axis=1)
    plus = np.empty_like(n)
    plus[:, order] = np.clip(extra[:, None] - before, 0, n[:, order])
    over_cap = ((n > 0) & ((base[:, None] + (plus > 0)) > job.cap)).any(axis=1)
    t = np.where(n > 0, (base[:, None] + (plus > 0)) / rho, 0.0).max(axis=1)
    return np.where(over_cap, np.inf, t)


def jct(view: HeteroView, job: HeteroJob, n: np.ndarray, comm: str = "ring", split: str = "proportional") -> np.ndarray:
    """``J = T (compute + communication)`` in seconds for each row of ``n``."""
    n = np.atleast_2d(np.asarray(n, dtype=np.int64))
    if len(n) == 0:  # no vector in a job's size range (its minimum exceeds the cluster)
        return np.zeros(0)
    k = n.sum(axis=1)
    c = COMM_MODELS[comm](k, comm_constant(job, r_min(view, n)))
    return job.iterations * (compute_time(job, n, split) + c)


def batch_split(job: HeteroJob, rho_per_worker: np.ndarray, cap_per_worker: np.ndarray, split: str = "proportional") -> np.ndarray:
    """Integer samples per worker attaining :func:`compute_time` (workers given by their ``rho``)."""
    rho = np.asarray(rho_per_worker, dtype=float)
    cap = np.minimum(np.asarray(cap_per_worker, dtype=np.int64), job.batch)
    k = len(rho)
    if split == "equal":
        base, extra = divmod(job.batch, k)
        b = np.full(k, base, dtype=np.int64)
        b[np.argsort(-rho, kind="stable")[:extra]] += 1
        return b
    # the class-count form gives the optimal time; fill every worker up to it, then take back the excess
    fake = HeteroJob(job.index, job.id, rho, job.batch, job.iterations, job.comm_gbit, job.comm_s, cap, (1, k))
    t = float(compute_time(fake, np.ones((1, k), np.int64))[0])
    b = np.minimum(cap, np.floor(t * rho * (1 + 1e-12))).astype(np.int64)
    excess = int(b.sum() - job.batch)
    for w in np.argsort(-(b / rho), kind="stable")[:max(excess, 0)]:
        b[w] -= 1
    return b


def fair_share_jct(view: HeteroView, comm: str = "ring") -> np.ndarray:
    """``J_i^fair`` (spec 3.6): job ``i`` on an equal fractional ``1/S`` share of every class,
    ``K/S`` workers, continuous Lemma 1 (the Themis-style finish-time-fairness reference)."""
    s = view.S
    out = np.empty(s)
    share = view.counts / s
    for i, job in enumerate(view.jobs):
        eligible = job.rho > 0
        x = float((share * job.rho).sum())
        r = float(np.where(eligible, view.bandwidth, np.inf).min())
        k = np.array([max(float(share[eligible].sum()), 1.0)])
        c = COMM_MODELS[comm](k, comm_constant(job, np.array([r])))
        out[i] = job.iterations * (job.batch / x + float(c[0]))
    return out


def fairness(jcts: np.ndarray, fair: np.ndarray) -> dict[str, float]:
    """The three measures of spec 3.6: Jain over slowdowns, Jain over raw JCT, max slowdown."""
    slow = np.asarray(jcts) / fair
    return {"jain_slowdown": _jain(slow), "jain_jct": _jain(np.asarray(jcts)), "max_slowdown": float(slow.max())}


def _jain(x: np.ndarray) -> float:
    return float(x.sum() ** 2 / (len(x) * (x ** 2).sum()))


# ----- many jobs at once ------------------------------------------------------------------------

def jct_rows(view: HeteroView, rows: np.ndarray, n: np.ndarray, comm: str = "ring", split: str = "proportional") -> np.ndarray:
    """:func:`jct` of job ``rows[r]`` on vector ``n[r]``, for many (job, vector) pairs in one
    vectorized pass: the same formulas, row by row (the market evaluates every job of a
    category at once, so per-job calls were the hot loop at a thousand jobs)."""
    rows = np.asarray(rows, dtype=np.int64)
    n = np.atleast_2d(np.asarray(n, dtype=np.int64))
    if len(rows) == 0:
        return np.zeros(0)
    a = view.arrays
    rho, cap, pi = a["rho"][rows], a["cap"][rows], a["batch"][rows]
    used = n > 0
    bad = (used & (rho <= 0)).any(axis=1) | ~used.any(axis=1)
    bad |= (n * np.minimum(cap, pi[:, None])).sum(axis=1) < pi
    safe = np.where(rho > 0, rho, 1.0)
    if split == "equal":
        compute = np.where(bad, np.inf, _equal_rows(n, rho, safe, cap, pi))
    else:
        compute = np.where(bad, np.inf, _proportional_rows(n, safe, cap, pi, a["levels"][rows], used))
    k = n.sum(axis=1)
    bw = np.where(used, view.bandwidth[None, :], np.inf).min(axis=1)
    given = a["comm_s"][rows]
    constant = np.where(np.isnan(given), a["comm_gbit"][rows] / bw, given)
    return a["iterations"][rows] * (compute + COMM_MODELS[comm](k, constant))


#: Most candidates (rows x classes x levels) :func:`_level_time` holds at once; more rows go in chunks.
LEVEL_BLOCK = 1 << 22


def _level_time(n: np.ndarray, rho: np.ndarray, base: np.ndarray, r: np.ndarray, used: np.ndarray, levels: int) -> np.ndarray:
    """The iteration time per row once ``base`` samples per worker are placed and the ``r``
    remaining ones go, one by one, to the worker whose time grows least: the ``r``-th smallest
    candidate ``(base_c + j) / rho_c`` (``n_c`` copies each, ``j`` up to ``levels``), or the floor
    time when nothing remains.  ``rho`` has a row per row of ``n``."""
    # a candidate at level j > r has at least r smaller ones (its class's levels below it), so r
    # levels suffice: the candidate table is bounded by the samples left, not by rho_max / rho_min
    # (a row without workers is refused by the caller; its r = Pi must not size the table)
    levels = max(1, min(levels, int(np.where(used.any(axis=1), r, 1).max(initial=1))))
    step = max(1, LEVEL_BLOCK // (n.shape[1] * levels))
    if len(n) > step:
        return np.concatenate([_level_time(n[i:i + step], rho[i:i + step], base[i:i + step], r[i:i + step], used[i:i + step], levels)
                               for i in range(0, len(n), step)])
    j = np.arange(1, levels + 1)
    value = (base[:, :, None] + j) / rho[:, :, None]                          # (M, G, J)
    weight = np.broadcast_to(n[:, :, None], value.shape)
    flat_v, flat_w = value.reshape(len(n), -1), weight.reshape(len(n), -1)
    order = np.argsort(flat_v, axis=1, kind="stable")
    cum = np.cumsum(np.take_along_axis(flat_w, order, axis=1), axis=1)
    pick = np.minimum((cum < np.maximum(r, 1)[:, None]).sum(axis=1), flat_v.shape[1] - 1)
    v_r = np.take_along_axis(flat_v, order, axis=1)[np.arange(len(n)), pick]
    floor_time = np.where(used, base / rho, 0.0).max(axis=1)
    return np.where(r > 0, np.maximum(floor_time, v_r), floor_time)

def _equal_rows(n: np.ndarray, rho: np.ndarray, safe: np.ndarray, cap: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """:func:`_equal_split_time` with a job per row: ``Pi / K`` each, the remainder to the fastest."""
    k = n.sum(axis=1)
    base, extra = np.divmod(pi, np.maximum(k, 1))
    order = np.argsort(-rho, axis=1, kind="stable")
    ranked = np.take_along_axis(n, order, axis=1)
    before = np.cumsum(ranked, axis=1) - ranked
    plus = np.empty_like(n)
    np.put_along_axis(plus, order, np.clip(extra[:, None] - before, 0, ranked), axis=1)
    per = base[:, None] + (plus > 0)
    over_cap = ((n > 0) & (per > cap)).any(axis=1)
    t = np.where(n > 0, per / safe, 0.0).max(axis=1)
    return np.where(over_cap, np.inf, t)


def _proportional_rows(n: np.ndarray, rho: np.ndarray, cap: np.ndarray, pi: np.ndarray, levels: np.ndarray,
                       used: np.ndarray) -> np.ndarray:
    """:func:`_proportional_time` with a job per row (see there for why it is exact)."""
    capped = np.minimum(cap, pi[:, None])
    x = (n * rho).sum(axis=1)
    lo = pi / np.where(x > 0, x, np.inf)
    base = np.floor(np.where(used, lo[:, None] * rho * (1 + 1e-12), 0.0)).astype(np.int64)
    r = pi - (n * base).sum(axis=1)
    # more candidate levels than a row needs only add values above its answer (see _proportional_time)
    binding = ((n > 0) & (cap < pi[:, None]) & (base + levels[:, None] > capped)).any(axis=1)
    out = _level_time(n, rho, base, r, used, int(levels.max()))
    for row in np.flatnonzero(binding):  # memory caps bind: rare, water-filling by bisection per row
        out[row] = _capped_time(int(pi[row]), n[row:row + 1], rho[row], capped[row].astype(float), used[row:row + 1],
                                lo[row:row + 1])[0]
    return out


__all__ = ["COMM_MODELS", "NO_CAP", "SPLITS", "batch_split", "compute_time", "fair_share_jct", "fairness", "jct", "jct_rows"]
