"""Proven lower bounds on the locality objective at any scale (our design; not in spec 001, whose
offline MILP (:mod:`.formulation`) only builds for small sizes).

* :func:`standalone_bound` (issue 18): every job alone from its arrival.  It ignores the capacity
  jobs share, so it is loose under load (2,000 Philly jobs on 15 servers: 9,742 against answers
  near 28,300).
* :func:`capacity_bound` (issue 32), the family's ``relaxation`` (the CLI prints an approximation's
  certified ratio against it): the Lagrangian relaxation of the per-slot capacity of the pooled
  cluster, :func:`lagrangian`, whose prices come from a time-indexed LP (:func:`price_lp`) and a
  column generation (:class:`Generation`).  The bound is computed by our code from the prices, so it
  is valid whatever the LP solver returns; each job's subproblem is solved exactly when it has one
  way to run (:func:`price_job`).  On the instance above it is 28,268 (greedy-rr's certified ratio
  4.42 -> 1.52; srpt 1.004).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...io.instance import Instance
from ...report import SolveReport
from ...solvers import SolveOptions
from ...tolerances import capacity_limit, work_done_threshold
from .pcilp import largest_fit
from .priority import srpt_plan
from .rates import slot_rate_bound, spread_rate
from .view import LocalityView, locality_view

NAME = "standalone lower bound"




def standalone_delay(view: LocalityView, i: int, locality: str = "job") -> int:
    """Least ``C_i - a_i + 1`` of job ``i`` in any accepted schedule: ``ceil(need / rate)`` slots of work
    from its arrival (``need``: the checker's completion threshold), at least 1, and ``T - a_i + 1``
    when that many slots do not fit in the horizon (the charge of a job that does not finish)."""
    job = view.jobs[i]
    penalty = view.penalty_delay(i)
    rate = slot_rate_bound(view, i, locality)
    need = work_done_threshold(job.work)
    if rate <= 0:
        return penalty
    x = need / rate
    slots = max(1, math.ceil(x - 1e-9 * max(1.0, x)))  # never above the true ceiling when x is an integer up to rounding
    return min(slots, penalty)


def standalone_bound(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """A proven lower bound on ``sum_i w_i (C_i - a_i + 1)`` over every schedule the checker accepts.

    Why it holds: a job's work accumulates only in slots from its arrival (C6), and in one slot
    it trains at most :func:`slot_rate_bound` samples whatever else runs (other jobs only take
    capacity away; the checker's rates do not depend on them).  So its completion slot is at
    least ``a_i + ceil(need / rate) - 1``, and a job that cannot reach ``V`` by the last slot is
    charged ``T - a_i + 1`` (more than any finishing delay, ``<= T - a_i``).  Weights are
    positive, so the weighted sum of the per-job minima bounds the optimum.  It ignores the
    capacity that jobs share, so it is loose under load.  ``O(jobs x machines)``; it stops with
    no bound (status ``time-limit-no-solution``) when ``solve_options.time_limit`` passes first.
    """
    start = time.perf_counter()
    stop_at = start + float(solve_options.time_limit)
    view = locality_view(instance)
    locality = str(options.get("locality", "job"))
    total = 0.0
    for i, job in enumerate(view.jobs):
        if time.perf_counter() > stop_at:
            return SolveReport("time-limit-no-solution", None, None, "min", NAME, "mlsched-opt", dict(options),
                               solve_s=time.perf_counter() - start,
                               message=f"time limit after {i} of {len(view.jobs)} jobs: no bound")
        total += job.weight * standalone_delay(view, i, locality)
    return SolveReport("optimal", total, total, "min", NAME, "mlsched-opt", dict(options), solve_s=time.perf_counter() - start,
                       message="every job alone on the empty cluster from its arrival at its fastest placement "
                               "(a lower bound, not a schedule)")


def standalone_delays(view: LocalityView, locality: str = "job") -> np.ndarray:
    """Every job's :func:`standalone_delay` (for tests and comparisons)."""
    return np.array([standalone_delay(view, i, locality) for i in range(len(view.jobs))], dtype=np.int64)


# --- the pooled-capacity Lagrangian bound (issue 32) ------------------------------------------------

LAGRANGE_NAME = "pooled-capacity Lagrangian bound"
#: Most pricing rounds of the column generation (a work limit: the bound is then the same on every machine).  From
#: the price LP's prices it converges in 14-22 rounds on 2,000 Philly jobs over 216 slots; over 1,360 slots (seed 2)
#: a round takes 5-10 s and the wall clock stops it first (the message says so).
MAX_ROUNDS = 40
#: Wentges smoothing: the prices of a round are this share of the best prices so far plus the rest of the master's.
SMOOTHING = 0.5
#: Relative gap between the master LP and the best Lagrangian value at which the generation stops.
CONVERGED = 1e-7
#: Most blocks of slots of the price LP (:func:`price_lp`): the size of a 2,000-job LP solved in seconds.
PRICE_BLOCKS = 250
#: Share of the bound's time the price LP may take (its safety stop; 9-15 s at 2,000 jobs).
LP_SHARE = 0.6
#: Most (job, slot) pairs the pooled bound prices (every round costs O(jobs x slots)); beyond it the bound is
#: every job alone.  2,000 jobs over 1,360 slots are 2.7 million.
POOLED_CELLS = 20_000_000


@dataclass(frozen=True)
class Modes:
    """Job ``i``'s ways to run in one slot, none dominated by another: ``work[m]`` samples at most and
    ``use[m]`` resources (R,) at least (``n`` workers with the ``ceil(n / gamma)`` PSs (C3) asks for),
    by increasing work."""

    work: np.ndarray
    use: np.ndarray


def job_modes(view: LocalityView, i: int, locality: str = "job") -> Modes:
    """Every (work, usage) a slot of job ``i`` can have, reduced to the undominated ones.

    ``n`` workers on one machine (``n <= n_co``, the most that fit beside their PSs within the
    checker's capacity limit on some machine) train at most ``n q_in``; on two or more machines
    ``n <= w_max`` workers train at most ``n q_spread`` (``q_ex``; with ``pair`` the rate of the least
    communication time, see :func:`slot_rate_bound`).  Any of them uses at least ``n alpha +
    ceil(n / gamma) beta`` of the pooled cluster.  A mode with no more work and no less usage than
    another is dropped: replacing it by the other keeps a schedule's work and lowers its priced usage.
    """
    job = view.jobs[i]
    n_co = int(largest_fit(job, capacity_limit(view.capacity)[:, :, None])[:, 0].max(initial=0))
    n = np.arange(1, job.w_max + 1)
    demand = job.demand(n)
    work = np.concatenate([job.q_in * n[:n_co], spread_rate(view, i, locality) * n])
    use = np.concatenate([demand[:n_co], demand])
    keep = [m for m in range(len(work))
            if not any(work[o] >= work[m] and (use[o] <= use[m]).all() and (work[o] > work[m] or (use[o] < use[m]).any() or o < m)
                       for o in range(len(work)) if o != m)]
    order = np.array(keep, dtype=np.int64)[np.argsort(work[keep], kind="stable")]
    return Modes(work[order], use[order])


@dataclass(frozen=True)
class Pricing:
    """What every job's Lagrangian subproblem needs, computed once per instance."""

    modes: list[Modes]
    need: np.ndarray
    #: least ``C - a`` of each job (its standalone delay minus 1): no schedule finishes it sooner
    first: np.ndarray
    #: a single-mode job's slots of work ``k = ceil(need / work)`` (0 for a multi-mode job)
    slots: np.ndarray
    #: the pooled capacity the checker accepts per resource, ``sum_h capacity_limit(cap[h])``
    cap: np.ndarray
    #: jobs that cannot finish even alone (their subproblem is their charge ``T - a + 1``)
    hopeless: np.ndarray


def pricing(view: LocalityView, locality: str = "job") -> Pricing:
    modes = [job_modes(view, i, locality) for i in range(len(view.jobs))]
    need = np.array([work_done_threshold(job.work) for job in view.jobs])
    delay = standalone_delays(view, locality)
    penalty = np.array([view.penalty_delay(i) for i in range(len(view.jobs))])
    slots = np.zeros(len(view.jobs), dtype=np.int64)
    for i, m in enumerate(modes):
        if len(m.work) == 1:
            x = need[i] / m.work[0]
            slots[i] = max(1, math.ceil(x - 1e-9 * max(1.0, x)))  # never above the true ceiling (as standalone_delay)
    return Pricing(modes, need, delay - 1, slots, capacity_limit(view.capacity).sum(axis=0), delay >= penalty)


@dataclass(frozen=True)
class Column:
    """One schedule of one job in the master: its cost ``w (C - a + 1)`` (the unfinished charge when it
    runs nowhere), its pooled usage (flat index ``t R + r`` and amount), and ``slots``, the slots it runs
    in when it is a schedule of whole slots (``None`` for a fractional mix of modes, which only bounds)."""

    job: int
    cost: float
    flat: np.ndarray
    amount: np.ndarray
    slots: tuple[int, ...] | None


def _k_smallest_sums(cost: np.ndarray, k: int, weight: float = 0.0, first: int = 0, best: float = math.inf) -> np.ndarray:
    """``out[j]``: the sum of the ``k`` smallest of ``cost[:j + 1]`` (``inf`` while ``j + 1 < k``).  With a
    ``weight``, from the first ``j`` with ``weight (j + 1)`` at or above the least ``weight (j' + 1) +
    out[j']`` so far (``j' >= first``, and ``best``) on, ``inf``: no later ``j`` can do better (costs >= 0)."""
    out = np.full(len(cost), np.inf)
    if k == 1:
        out[:] = np.minimum.accumulate(cost)
        return out
    heap: list[float] = []
    total = 0.0
    for j, x in enumerate(cost.tolist()):
        if weight > 0 and weight * (j + 1) >= best:
            break
        if len(heap) < k:
            heapq.heappush(heap, -x)
            total += x
        elif x < -heap[0]:
            total += x + heapq.heapreplace(heap, -x)
        if len(heap) == k:
            out[j] = total
            if j >= first:
                best = min(best, weight * (j + 1) + total)
    return out


def _segments(work: np.ndarray, cost: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per slot (rows of ``cost`` (L, M)), the lower convex hull of ``(0, 0)`` and ``(work[m], cost[l, m])``
    as segments ``(slot, from mode, to mode, slope)`` (mode -1: idle), ordered by slot, then by slope
    (increasing along a hull).  From each vertex the next is the point of least slope (the farthest of
    equal slopes), for all slots at once: at most ``M`` numpy steps.

    The LP relaxation of choosing one mode per slot to cover a work target at least cost (a
    multiple-choice knapsack) takes whole segments by increasing slope, across slots, and a
    fraction of the last one (Sinha and Zoltners, Oper. Res. 1979)."""
    order = np.argsort(work, kind="stable")
    x = np.concatenate([[0.0], work[order].astype(float)])                     # vertex 0: idle
    y = np.concatenate([np.zeros((cost.shape[0], 1)), cost[:, order]], axis=1)  # (L, M + 1)
    L, V = y.shape
    rows = np.arange(L)
    cur = np.zeros(L, dtype=np.int64)
    live = np.ones(L, dtype=bool)
    parts: list[tuple[np.ndarray, ...]] = []
    for step in range(V - 1):
        dx = x[None, :] - x[cur][:, None]
        ok = live[:, None] & (dx > 0)
        slope = np.where(ok, (y - y[rows, cur][:, None]) / np.where(ok, dx, 1.0), np.inf)
        least = slope.min(axis=1)
        go = live & np.isfinite(least)
        if not go.any():
            break
        ties = ok & (slope == least[:, None])
        nxt = V - 1 - np.argmax(ties[:, ::-1], axis=1)
        parts.append((rows[go], cur[go], nxt[go], least[go], np.full(int(go.sum()), step)))
        cur = np.where(go, nxt, cur)
        live = go & (cur < V - 1)
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, np.zeros(0)
    slot, frm, to, slope, order_in_hull = (np.concatenate([q[k] for q in parts]) for k in range(5))
    by = np.lexsort((order_in_hull, slot))
    mode = np.concatenate([[-1], order])                                       # vertex -> mode index
    return slot[by], mode[frm[by]], mode[to[by]], slope[by].astype(float)


def cover_costs(work: np.ndarray, cost: np.ndarray, need: float, weight: float = 0.0, first: int = 0,
                best: float = math.inf) -> tuple[np.ndarray, Any]:
    """Per last slot ``j`` (of the rows of ``cost`` (L, M)), the least cost of covering ``need`` with slots
    ``0..j``, each slot a convex combination of its modes (``work[m]`` at ``cost[slot, m]``) and idle:
    the LP relaxation of the multiple-choice covering knapsack (:func:`_segments` by increasing slope
    across the slots; ``inf`` where even every mode of every slot falls short, and, pruned as in
    :func:`_k_smallest_sums`, past the last ``j`` that can beat ``best``).  Slots are added one by one, the cheapest-slope segments
    covering ``need`` kept in a heap: ``O(S log S)`` for ``S`` segments.  Also ``parts(j)``: the
    segments taken for last slot ``j`` and the share of each (slot, from mode, to mode, share).
    """
    seg_slot, seg_from, seg_to, slope = _segments(work, cost)
    L = cost.shape[0]
    seg_work = work[seg_to] - np.where(seg_from >= 0, work[np.maximum(seg_from, 0)], 0.0)
    seg_cost = seg_work * slope
    need = need - 1e-9 * max(1.0, need)              # a float sum a few ulps short still counts: never above the LP
    out = np.full(L, np.inf)
    starts = np.searchsorted(seg_slot, np.arange(L + 1))
    taken: list[tuple[float, int]] = []              # max-heap on slope (negated): the segments covering need
    spare: list[tuple[float, int]] = []              # min-heap on slope: the others
    have = spent = 0.0
    sw, sc, sl = seg_work.tolist(), seg_cost.tolist(), slope.tolist()
    for j in range(L):
        if weight > 0 and weight * (j + 1) >= best:
            break
        for g in range(int(starts[j]), int(starts[j + 1])):
            if have < need or sl[g] < -taken[0][0]:
                heapq.heappush(taken, (-sl[g], g))
                have += sw[g]
                spent += sc[g]
                while taken and have - sw[taken[0][1]] >= need:      # the dearest is not needed any more
                    _, top = heapq.heappop(taken)
                    have -= sw[top]
                    spent -= sc[top]
                    heapq.heappush(spare, (sl[top], top))
            else:
                heapq.heappush(spare, (sl[g], g))
        if have >= need:
            out[j] = spent - (have - need) * -taken[0][0]
            if j >= first:
                best = min(best, weight * (j + 1) + out[j])

    def parts(j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        inside = np.flatnonzero(seg_slot <= j)
        inside = inside[np.lexsort((inside, slope[inside]))]
        reach = np.cumsum(seg_work[inside])
        last = int(np.argmax(reach >= need))
        share = np.zeros(len(seg_slot))
        share[inside[:last]] = 1.0
        share[inside[last]] = np.clip((need - (reach[last - 1] if last else 0.0)) / seg_work[inside[last]], 0.0, 1.0)
        return seg_slot, seg_from, seg_to, share

    return out, parts


def price_job(view: LocalityView, p: Pricing, i: int, prices: np.ndarray) -> tuple[float, Column | None]:
    """Job ``i``'s Lagrangian subproblem at ``prices`` (T, R) >= 0: a lower bound on ``w_i (C_i - a_i + 1)
    + sum_{t,r} prices[t, r] U_i[t, r]`` over every schedule of job ``i`` alone, ``U_i`` its usage of the
    pooled cluster (an unfinished job counted with none), and the column reaching it (``None``: the
    job's charge ``T - a + 1`` unfinished, which uses nothing).

    Finished in slot ``C``, the job ran in slots ``a..C`` (C6), each slot in at most one of its
    :class:`Modes` (or dominated by one), and covered ``need`` (the checker's threshold) by then;
    ``C - a >= first`` (its standalone delay).  With one mode of work ``q`` that is ``k = ceil(need /
    q)`` slots, the ``k`` cheapest of ``a..C``: exact.  With several, the LP relaxation of the mode
    choice (:func:`cover_costs`), a lower bound.  Minimized over ``C`` and the unfinished charge.
    """
    job = view.jobs[i]
    a, w, T = job.arrival, job.weight, view.slots
    charge = w * view.penalty_delay(i)
    if p.hopeless[i]:
        return charge, None
    modes = p.modes[i]
    R = modes.use.shape[1]
    cost = prices[a:T] @ modes.use.T                                                  # (L, M)
    first = int(p.first[i])
    if len(modes.work) == 1:
        k = int(p.slots[i])
        value = w * (np.arange(T - a) + 1.0) + _k_smallest_sums(cost[:, 0], k, w, max(first, k - 1), charge)
        value[:max(first, k - 1)] = np.inf
        j = int(np.argmin(value))
        if not value[j] < charge:
            return charge, None
        chosen = np.sort(np.argpartition(cost[:j + 1, 0], k - 1)[:k]) if k <= j else np.arange(j + 1)
        used = np.flatnonzero(modes.use[0] > 0)
        flat = ((a + chosen)[:, None] * R + used[None, :]).ravel()
        column = Column(i, float(w * (j + 1)), flat, np.tile(modes.use[0, used], len(chosen)), tuple((a + chosen).tolist()))
        return float(value[j]), column
    covered, parts = cover_costs(modes.work, cost, float(p.need[i]), w, first, charge)
    value = w * (np.arange(T - a) + 1.0) + covered
    value[:first] = np.inf
    j = int(np.argmin(value))
    if not value[j] < charge:
        return charge, None
    seg_slot, seg_from, seg_to, share = parts(j)
    use = np.concatenate([modes.use, np.zeros((1, R))])                                # index -1: idle
    usage = np.zeros((T - a, R))
    np.add.at(usage, seg_slot, share[:, None] * (use[seg_to] - use[seg_from]))
    flat = np.flatnonzero(usage.ravel() > 0)
    return float(value[j]), Column(i, float(w * (j + 1)), a * R + flat, usage.ravel()[flat], None)


def lagrangian(view: LocalityView, p: Pricing, prices: np.ndarray) -> tuple[float, list[Column]]:
    """``L(prices) = sum_i g_i(prices) - sum_{t,r} prices[t, r] Cap_r``, a lower bound on every schedule's
    objective for any ``prices >= 0``, and the columns reaching each ``g_i`` (:func:`price_job`).

    Why: for a schedule the checker accepts, let ``U_i`` be job ``i``'s usage (none when it does not
    finish: dropping it keeps the sum below the load).  The load of every machine is within its
    capacity limit, so ``sum_i U_i[t] <= Cap``, and ``objective >= objective + sum prices (sum_i U_i -
    Cap) = sum_i (cost_i + prices . U_i) - prices . Cap >= sum_i g_i - prices . Cap`` (``g_i`` bounds
    each job's term, :func:`price_job`).  The Lagrangian relaxation of the pooled capacity rows
    (Geoffrion, Math. Prog. Study 1974); computed by our code from the prices alone, so no LP
    solver's tolerance enters the bound.
    """
    total = -float((prices * p.cap[None, :]).sum())
    columns = []
    for i in range(len(view.jobs)):
        g, column = price_job(view, p, i, prices)
        total += g
        if column is not None:
            columns.append(column)
    return total, columns


def schedule_columns(view: LocalityView, tasks: Mapping[int, Sequence[tuple[int, int, int]]],
                     completion: Mapping[int, int]) -> list[Column]:
    """The columns of a schedule's finished jobs: their true cost and pooled usage (``(slot, machine,
    workers)`` tasks with ``ceil(n / gamma)`` PSs beside each machine's ``n`` workers, O3)."""
    R = len(view.resources)
    out = []
    for i, c in completion.items():
        job = view.jobs[i]
        usage = np.zeros((view.slots, R))
        for t, _h, n in tasks[i]:
            usage[t] += job.demand(n)
        flat = np.flatnonzero(usage.ravel() > 0)
        out.append(Column(i, float(job.weight * (c - job.arrival + 1)), flat, usage.ravel()[flat],
                          tuple(sorted({t for t, _h, _n in tasks[i]}))))
    return out


def price_lp(view: LocalityView, p: Pricing, deadline: float | None = None) -> tuple[np.ndarray | None, str]:
    """Capacity prices (T, R) from the duals of a time-indexed LP of the pooled capacity: the start of
    :meth:`Generation.run` (any prices give a proven bound, :func:`lagrangian`; these are good ones, so the
    column generation starts near its end).  ``None`` and why when HiGHS gives no duals in time.

    Per job and block of slots (consecutive slots merged into :data:`PRICE_BLOCKS` blocks at most) the
    slots it runs there (one mode) or per mode (several, the one of most work and the one of least
    pooled share per sample), a row making it finish (``k`` slots, or its work) or stay unfinished, and
    per block and resource the pooled capacity of the block's slots.  A job finished in slot ``C`` after
    ``k`` slots has ``C - a + 1 >= mean slot - a + 1 + (k - 1) / 2``, the LP's cost (our design, after
    the time-indexed relaxations of min-sum scheduling).
    """
    import highspy
    from scipy import sparse

    from ...solvers.highs_lp import sparse_lp, use_threads

    T, R = view.slots, len(view.resources)
    size = max(1, math.ceil(T / PRICE_BLOCKS))
    blocks = math.ceil(T / size)
    length = np.minimum(np.arange(1, blocks + 1) * size, T) - np.arange(blocks) * size
    share = 1.0 / np.where(p.cap > 0, p.cap, 1.0)
    cap_rows = blocks * R
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    cost: list[np.ndarray] = []
    upper: list[np.ndarray] = []
    job_rhs: list[float] = []
    slot_cap: list[np.ndarray] = []
    const, col = 0.0, 0
    for i, job in enumerate(view.jobs):
        if p.hopeless[i]:
            continue
        a, w, r = job.arrival, job.weight, len(job_rhs)
        modes = p.modes[i]
        b = np.arange(a // size, blocks)
        avail = (np.minimum((b + 1) * size, T) - np.maximum(b * size, a)).astype(float)
        mid = np.maximum(b * size, a) + (avail - 1.0) / 2.0
        if len(modes.work) == 1:
            keep, per, rhs = np.zeros(1, dtype=np.int64), np.ones(1), float(p.slots[i])
            tail = (rhs - 1.0) / 2.0
        else:
            keep = np.unique([int(np.argmax(modes.work)), int(np.argmin((modes.use * share).max(axis=1) / modes.work))])
            per, rhs = modes.work[keep] / p.need[i], 1.0
            rho = float(modes.work.max() / p.need[i])
            whole = math.floor(1.0 / rho)
            tail = rho * whole * (whole - 1) / 2.0 + whole * max(1.0 - whole * rho, 0.0)
        m, n = len(keep), len(b)
        here = col + np.arange(n * m)                                                  # column (block, mode), block-major
        blk, mode = np.repeat(b, m), np.tile(keep, n)
        use = modes.use[mode]                                                           # (n m, R)
        rows.append(np.full(n * m, r, dtype=np.int64))
        cols.append(here)
        vals.append(np.tile(per, n))
        nz = np.nonzero(use > 0)
        rows.append(-1 - (blk[nz[0]] * R + nz[1]))                                      # capacity rows, offset later
        cols.append(here[nz[0]])
        vals.append(use[nz])
        if m > 1:                                                                       # at most one mode per slot
            rows.append(-1 - cap_rows - (sum(len(x) for x in slot_cap) + np.repeat(np.arange(n), m)))
            cols.append(here)
            vals.append(np.ones(n * m))
            slot_cap.append(avail)
        cost.append(w * (np.repeat(mid, m) - a + 1.0) * np.tile(per, n) / rhs)
        upper.append(np.repeat(avail, m))
        col += n * m
        rows.append(np.array([r]))                                                      # unfinished share u in [0, 1]
        cols.append(np.array([col]))
        vals.append(np.array([rhs]))
        cost.append(np.array([w * (view.penalty_delay(i) - tail)]))
        upper.append(np.ones(1))
        col += 1
        const += w * tail
        job_rhs.append(rhs)
    if not job_rhs:
        return None, "no job can finish"
    n_jobs = len(job_rhs)
    row = np.concatenate(rows)
    row = np.where(row >= 0, row, n_jobs - 1 - row)                                    # capacity and slot rows after the jobs'
    n_rows = n_jobs + cap_rows + sum(len(x) for x in slot_cap)
    a_matrix = sparse.csc_matrix((np.concatenate(vals), (row, np.concatenate(cols))), shape=(n_rows, col))
    lp = sparse_lp(np.concatenate(cost), a_matrix, np.zeros(col), np.concatenate(upper),
                   np.concatenate([job_rhs, np.full(n_rows - n_jobs, -highspy.kHighsInf)]),
                   np.concatenate([job_rhs, (length[:, None] * p.cap[None, :]).ravel(), *slot_cap]))
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    h.setOptionValue("time_limit", max(60.0 if deadline is None else deadline - time.perf_counter(), 0.01))
    use_threads(h, 1)
    h.run()
    solution = h.getSolution()
    status = h.modelStatusToString(h.getModelStatus())
    if not solution.dual_valid:
        return None, f"the price LP ended {status} without duals"
    dual = np.asarray(solution.row_dual, dtype=float)[n_jobs:n_jobs + cap_rows].reshape(blocks, R)
    prices = np.repeat(np.maximum(-dual, 0.0), size, axis=0)[:T]
    return prices, (f"price LP ({blocks} blocks of {size} slot(s), {col:,} columns, {status}, "
                    f"value {h.getInfo().objective_function_value + const:.6g})")


def _rounded(value: float) -> float:
    """An integral objective's least value at or above a proven bound ``value`` (float round-off aside)."""
    return float(math.ceil(value - 1e-9 * max(1.0, abs(value))))


@dataclass
class LagrangeBound:
    """The best :func:`lagrangian` value found (a proven bound), and how the generation ended."""

    value: float = -math.inf
    rounds: int = 0
    master: float | None = None
    stopped: str = ""


class Generation:
    """Column generation on the Dantzig-Wolfe master of the pooled capacity (our design, issue 32).

    The master LP: per job a convex combination of its columns (:class:`Column`, schedules of the job
    alone; first the unfinished charge of every job, then any :meth:`add`-ed ones, e.g. a heuristic
    schedule's, so the master is near its optimum from the first round), and ``sum usage <= Cap`` per
    (slot, resource).  :meth:`run` prices every job (:func:`price_job`) at a smoothed mix of the
    master's prices and the best prices so far (Wentges, ITOR 1997) and adds the columns that improve
    the master; every round's :func:`lagrangian` value is a proven bound and the best is kept; at
    convergence it equals the master (the Lagrangian dual).  :meth:`integer_plan` solves the master
    restricted to the whole-slot columns as a MIP: a pooled schedule for :func:`.priority.follow`.
    HiGHS with one thread and round and node limits: the same answer on every machine, unless the
    wall clock (the safety stop) cuts it short.
    """

    def __init__(self, view: LocalityView, locality: str = "job"):
        import highspy

        self.view = view
        self.p = pricing(view, locality)
        self.n, self.T, self.R = len(view.jobs), view.slots, len(view.resources)
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("simplex_strategy", 4)    # primal simplex: columns added keep the basis primal feasible
        none = np.array([], dtype=np.int32)
        self.h.addRows(self.n, np.ones(self.n), np.ones(self.n), 0, none, none, np.array([]))
        self.h.addRows(self.T * self.R, np.full(self.T * self.R, -highspy.kHighsInf), np.tile(self.p.cap, self.T), 0, none, none,
                       np.array([]))
        self.columns: list[Column] = []
        self.add([Column(i, float(job.weight * view.penalty_delay(i)), np.array([], dtype=np.int64), np.array([]), ())
                  for i, job in enumerate(view.jobs)])
        self.bound = LagrangeBound()
        self.integral = all(float(job.weight).is_integer() for job in view.jobs)

    def add(self, columns: Sequence[Column]) -> None:
        if not columns:
            return
        import highspy

        starts = np.cumsum([0] + [1 + len(c.flat) for c in columns[:-1]])
        index = np.concatenate([np.concatenate([[c.job], self.n + c.flat]) for c in columns])
        value = np.concatenate([np.concatenate([[1.0], c.amount]) for c in columns])
        self.h.addCols(len(columns), np.array([c.cost for c in columns], dtype=float), np.zeros(len(columns)),
                       np.full(len(columns), highspy.kHighsInf), len(index), starts.astype(np.int32), index.astype(np.int32),
                       value.astype(float))
        self.columns += columns

    def _solve(self, deadline: float | None) -> tuple[float, np.ndarray, np.ndarray] | None:
        """The master's optimum, its capacity prices (T, R) >= 0 and per-job duals; ``None`` if not solved in time."""
        import highspy

        from ...solvers.highs_lp import use_threads

        # HiGHS counts its time limit from the object's first run: the limit is the time run so far plus what is left
        left = 60.0 if deadline is None else deadline - time.perf_counter()
        self.h.setOptionValue("time_limit", self.h.getRunTime() + max(left, 0.01))
        use_threads(self.h, 1)
        self.h.run()
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        dual = np.asarray(self.h.getSolution().row_dual, dtype=float)
        return (float(self.h.getInfo().objective_function_value), np.maximum(-dual[self.n:].reshape(self.T, self.R), 0.0),
                dual[:self.n])

    def run(self, deadline: float | None = None, max_rounds: int = MAX_ROUNDS, center: np.ndarray | None = None) -> LagrangeBound:
        """Generate columns until converged, ``max_rounds`` rounds (a work limit) or ``deadline``, from prices
        ``center`` (e.g. :func:`price_lp`'s; zero by default); the bound is ``self.bound`` (also returned)."""
        from ...clock import past

        best = self.bound
        center = np.zeros((self.T, self.R)) if center is None else center
        solved: tuple[float, np.ndarray, np.ndarray] | None = None
        smoothing = 0.0
        best.stopped = f"after {max_rounds} rounds (the work limit)"
        for _ in range(max_rounds):
            prices = center if solved is None else smoothing * center + (1.0 - smoothing) * solved[1]
            value, columns = lagrangian(self.view, self.p, prices)
            best.rounds += 1
            if value > best.value:
                best.value, center = value, prices
            improving = columns if solved is None else [
                c for c in columns if c.cost + float(solved[1].ravel()[c.flat] @ c.amount) - solved[2][c.job] < -1e-9 * max(1.0, c.cost)]
            if solved is not None and not improving and smoothing == 0.0:
                best.stopped = "converged (no column improves the master)"
                break
            self.add(improving)
            if past(deadline):
                best.stopped = "at the time limit"
                break
            solved = self._solve(deadline)
            if solved is None:
                best.stopped = "the master LP did not solve in the time left"
                break
            best.master = solved[0]
            if solved[0] - best.value <= CONVERGED * max(1.0, abs(solved[0])) or (
                    self.integral and _rounded(best.value) >= solved[0] - 1e-6):
                best.stopped = "converged (the master meets the bound)"
                break
            # smoothed prices that found nothing for the master's: the next round prices at the master's own
            smoothing = SMOOTHING if improving else 0.0
        return best

    def bound_from_prices(self, deadline: float | None = None, max_rounds: int = MAX_ROUNDS) -> tuple[LagrangeBound, str]:
        """:func:`price_lp`'s prices (in :data:`LP_SHARE` of the time to ``deadline``), then :meth:`run` from them."""
        lp_deadline = None if deadline is None else time.perf_counter() + LP_SHARE * (deadline - time.perf_counter())
        prices, note = price_lp(self.view, self.p, lp_deadline)
        return self.run(deadline, max_rounds, prices), note

    def integer_plan(self, deadline: float | None, max_nodes: int,
                     start: Mapping[int, int] | None = None) -> tuple[dict[int, tuple[int, ...]], str]:
        """The master over its whole-slot columns as a MIP (each job one column, pooled capacity): per job
        the slots of its chosen column (none: unfinished), and HiGHS's status; ``start``: per job the
        index of a column of a feasible choice (e.g. the heuristic's), handed to HiGHS as its incumbent."""
        import highspy

        from ...solvers.highs_lp import use_threads

        lp = self.h.getLp()
        mip = highspy.Highs()
        mip.setOptionValue("output_flag", False)
        mip.passModel(lp)
        k = len(self.columns)
        cols = np.arange(k, dtype=np.int32)
        whole = np.array([c.slots is not None for c in self.columns])
        mip.changeColsBounds(k, cols, np.zeros(k), np.where(whole, 1.0, 0.0))
        mip.changeColsIntegrality(k, cols, np.full(k, highspy.HighsVarType.kInteger))
        mip.setOptionValue("mip_rel_gap", 1e-6)
        mip.setOptionValue("mip_max_nodes", int(max_nodes))
        mip.setOptionValue("time_limit", max(60.0 if deadline is None else deadline - time.perf_counter(), 0.01))
        if start is not None:
            x = np.zeros(k)
            x[list(start.values())] = 1.0
            mip.setSolution(_solution(x))
        use_threads(mip, 1)
        mip.run()
        status = mip.getModelStatus().name if hasattr(mip.getModelStatus(), "name") else str(mip.getModelStatus())
        if mip.getInfo().primal_solution_status != 2:
            return {}, status
        x = np.asarray(mip.getSolution().col_value)
        return {self.columns[c].job: tuple(self.columns[c].slots or ()) for c in np.flatnonzero(x > 0.5)}, status


def _solution(x: np.ndarray) -> Any:
    import highspy

    sol = highspy.HighsSolution()
    sol.col_value = x.tolist()
    sol.value_valid = True
    return sol


def capacity_bound(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """The family's proven lower bound: the pooled-capacity Lagrangian (:class:`Generation`), never below
    :func:`standalone_bound` (prices 0 give each job at most its standalone delay), rounded up to an
    integer when every weight is an integer (the objective is then an integer).

    The master starts with the ``srpt`` schedule's columns, the prices with :func:`price_lp`'s.  Deterministic at a given instance (a
    round limit, one HiGHS thread); the time limit only cuts it short (the best bound so far
    stands, and the message says so).  Our design (issue 32).
    """
    start = time.perf_counter()
    deadline = start + float(solve_options.time_limit)
    view = locality_view(instance)
    locality = str(options.get("locality", "job"))
    if too_large(view):
        alone = standalone_bound(instance, options, solve_options)
        return dataclasses.replace(alone, message=f"{alone.message}; {too_large(view)}")
    plan, _cut = srpt_plan(view, locality, deadline, instance.sha256)
    gen = Generation(view, locality)
    gen.add(schedule_columns(view, plan.tasks, plan.completion))
    result, lp_note = gen.bound_from_prices(deadline)
    value, note = pooled_bound(view, locality, result)
    # "optimal": the Lagrangian dual reached (the master meets it); "feasible": a proven bound short of it
    return SolveReport("optimal" if result.stopped.startswith("converged") else "feasible", value, value, "min", LAGRANGE_NAME,
                       "mlsched-opt", dict(options), solve_s=time.perf_counter() - start, message=f"{note}; {lp_note}")


def too_large(view: LocalityView) -> str:
    """Why the pooled bound is not computed on ``view`` (more than :data:`POOLED_CELLS` (job, slot) pairs), or ``""``."""
    cells = sum(view.slots - job.arrival for job in view.jobs)
    return "" if cells <= POOLED_CELLS else (f"the pooled-capacity bound would price {cells:,} (job, slot) pairs, more than "
                                            f"{POOLED_CELLS:,}: the bound is every job alone")


def pooled_bound(view: LocalityView, locality: str, result: LagrangeBound) -> tuple[float, str]:
    """The bound to report from a generation's result (at least the standalone bound, integral when the
    objective is), and a sentence on how it was found."""
    standalone = float(sum(job.weight * d for job, d in zip(view.jobs, standalone_delays(view, locality))))
    value = max(result.value, standalone)
    if all(float(job.weight).is_integer() for job in view.jobs):
        value = _rounded(value)
    note = (f"Lagrangian relaxation of the pooled capacity: {result.rounds} column-generation rounds, stopped {result.stopped}"
            + ("" if result.master is None else f" (master LP {result.master:.6g})") + f"; standalone bound {standalone:g}")
    return value, note
