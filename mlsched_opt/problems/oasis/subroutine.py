"""OASiS's best-schedule subroutine (spec 000 section 3.4, Algorithm 2): the job's dual problem.

At fixed prices, find the schedule that maximises ``f(completion - a) - cost``:

1. loop over the completion slot (deadline) ``t = a .. T-1``, keep the first strictly best;
2. a dynamic program over how much work goes into each slot, evaluated forward once per job
   so one table answers every deadline;
3. per slot, the cheapest way to run ``y`` workers: fill the cheapest worker servers, then
   ``ceil(y b/B)`` PSs on the cheapest PS servers (Theorem 1: greedy is exact because the cost
   is linear at the pre-admission price).

Work is counted in ``units``: ``"chunks"`` is the paper's DP over chunk-trainings (``d`` chunks
need ``ceil(d rho)`` workers in the slot); ``"worker-slots"`` is the variant of pitfall 8 whose
state is the remaining worker-slots, exact for constraints (2)+(3).  The chunk DP is a
restriction of (2) when ``rho`` is not ``1/k``: its per-slot ceilings can cost more.

Speed: a slot's cost is a vector over ``y`` built with one sort and cumulative sums; the DP
step only tries the largest chunk count each worker count can train (a smaller ``d`` at the
same ``y`` costs the same and leaves more to do), i.e. the ``d_max`` bound of section 3.4,
vectorised over the whole table.  Ties follow the paper (pitfall 10): ``d`` is taken smallest
among equal costs, servers are sorted stably by price (index breaks ties).  Prices and room are
computed only for the slots the search reaches (:class:`_Horizon`), plans are sparse
(:class:`.view.TaskCounts`), and :func:`_step` skips what cannot change the table; every shortcut
evaluates the same floating-point sums, so plans are bit for bit those of the dense version
(``tests/test_oasis_scale.py`` keeps it as the reference).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ...errors import InstanceError
from ..pricing import PricedPool
from ..rounding import ceil, floor
from .view import OasisJob, TaskCounts

#: Relative tolerance for "equal cost" when the DP is unwound.
TIE = 1e-12
_BLOCK = 1 << 20
#: Table length from which :func:`_step` shifts slices per candidate instead of gathering blocks.
_SHIFT_MIN = 256
#: Largest DP table (work units + 1) planned; a job needing more is refused up front (our design).
MAX_TABLE = 10_000_000


@dataclass
class Plan:
    """The best schedule found for one job: worker counts ``[h, t]`` and PS counts ``[k, t]`` over the
    whole horizon, sparse (:class:`.view.TaskCounts`; ``.dense()`` gives the table).

    ``completion`` is None (and ``payoff`` 0) when no schedule has a positive payoff.
    """

    completion: int | None
    payoff: float
    cost: float
    workers: TaskCounts
    ps: TaskCounts
    deadlines: int = 0
    cut_short: bool = False

    @property
    def admitted(self) -> bool:
        return self.completion is not None


@dataclass
class _Slot:
    """One slot's greedy fill: cost of ``y = 0..len(cost)-1`` workers and the sorted servers to unwind it."""

    cost: np.ndarray
    w_order: np.ndarray
    w_caps: np.ndarray
    p_order: np.ndarray
    p_caps: np.ndarray


def _fill_costs(unit: np.ndarray, caps: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cumulative cost of 0..n tasks on the cheapest servers first (n = min(limit, sum caps)).

    Servers without room are left out before sorting: they take no task wherever they sort, and a
    stable sort of the rest keeps their relative (price, index) order, so the fill is the same."""
    room = np.flatnonzero(caps > 0)
    order = room[np.argsort(unit[room], kind="stable")]
    caps = caps[order]
    caps = np.minimum(caps, np.maximum(limit - np.concatenate([[0], np.cumsum(caps)[:-1]]), 0))
    steps = np.repeat(unit[order], caps)
    return np.concatenate([[0.0], np.cumsum(steps)]), order, caps


def slot_cost(job: OasisJob, w_unit: np.ndarray, w_caps: np.ndarray, p_unit: np.ndarray, p_caps: np.ndarray) -> _Slot:
    """COST_t for every worker count: ``cost[y]`` for ``y = 0..Y``, ``Y`` the largest count the slot can host
    (with its PSs); ``inf`` for a count outside the job's size range (``0 < y < lo``, :mod:`.view`).
    ``w_unit[h]``/``p_unit[k]`` are the prices of one task, ``*_caps`` how many fit."""
    w_cost, w_order, w_caps = _fill_costs(w_unit, w_caps, max(job.hi, 0))
    y = np.arange(len(w_cost))
    need = np.asarray(job.ps_needed(y))
    p_cost, p_order, p_caps = _fill_costs(p_unit, p_caps, int(need.max()) if len(need) else 0)
    ok = (need <= len(p_cost) - 1) & ((y == 0) | (y >= job.lo))
    top = int(np.flatnonzero(ok)[-1]) + 1 if ok.any() else 1
    cost = np.where(ok[:top], w_cost[:top] + p_cost[np.minimum(need[:top], len(p_cost) - 1)], np.inf)
    return _Slot(cost, w_order, w_caps, p_order, p_caps)


def _spread(count: int, order: np.ndarray, caps: np.ndarray, n: int) -> np.ndarray:
    """Place ``count`` tasks greedily on ``order`` (cheapest first) within ``caps``."""
    out = np.zeros(n, dtype=np.int64)
    taken = np.minimum(caps, np.maximum(count - np.concatenate([[0], np.cumsum(caps)[:-1]]), 0))
    out[order] = taken
    return out


def _step(old: np.ndarray, d: np.ndarray, c: np.ndarray, deadline: float | None = None) -> tuple[np.ndarray, bool]:
    """``new[D] = min_j c[j] + old[max(D - d[j], 0)]`` (candidates that overshoot D cost what exact D costs).

    Past ``deadline`` the remaining candidates are skipped (returned flag True): every entry is then
    still the cost of a real schedule, only perhaps not the cheapest.

    A long table is done in two parts (``d`` is sorted and distinct).  Where a candidate overshoots
    (``D <= d[j]``) it costs ``c[j] + old[0]``, and the cheapest such for every ``D`` is a suffix
    minimum over the candidates: one ``O(size)`` pass instead of one per candidate.  Elsewhere each
    candidate takes one shifted slice, and only as far as ``old`` is finite (``c + inf`` never wins):
    early slots, where little work is reachable yet, cost little.  A short table takes blocks of
    candidates at once (one gather), so a job with many candidates and a small table does not pay
    per-candidate overhead.  Every path evaluates the same sums ``c[j] + old[.]`` and minima are
    exact, so the table is the same whichever path computes it."""
    size = old.size
    new = np.full(size, np.inf)
    if size >= _SHIFT_MIN:
        top = min(int(d[-1]), size - 1)
        over = np.minimum.accumulate((c + old[0])[::-1])[::-1]  # cheapest candidate with d[j] >= D
        reach = np.minimum(d, size - 1)
        new[: top + 1] = np.repeat(over, np.diff(reach, prepend=-1))
        finite = np.flatnonzero(np.isfinite(old))
        last = int(finite[-1]) if finite.size else -1  # old[D'] is inf beyond this
        for j in range(d.size):
            if j % 64 == 63 and deadline is not None and time.perf_counter() > deadline:
                return new, True
            k = int(reach[j])
            stop = min(size, k + last + 1)
            if stop > k + 1:
                np.minimum(new[k + 1:stop], c[j] + old[1:stop - k], out=new[k + 1:stop])
        return new, False
    ar = np.arange(size)
    rows = max(1, _BLOCK // size)
    for s in range(0, d.size, rows):
        if s and deadline is not None and time.perf_counter() > deadline:
            return new, True
        idx = np.maximum(ar[None, :] - d[s:s + rows, None], 0)
        new = np.minimum(new, (c[s:s + rows, None] + old[idx]).min(axis=0))
    return new, False


class _Horizon:
    """A job's unit prices and room per server and slot from its arrival on, computed in growing blocks of
    slots as the search reaches them: the search stops soon after the earliest completion when the utility
    falls, so most slots of a long horizon are never read.  Column ``t - a`` is slot ``t``; columns from
    :attr:`end` on are not computed yet.  Values are those of the whole-horizon arrays, element by element."""

    FIRST = 4

    def __init__(self, job: OasisJob, workers: PricedPool, ps: PricedPool, per: float):
        self.job, self.workers, self.ps, self.per = job, workers, ps, per
        self.a = job.arrival
        self.T = workers.slots
        width = self.T - self.a
        self.w_caps = np.empty((workers.capacity.shape[0], width), np.int64)
        self.p_caps = np.empty((ps.capacity.shape[0], width), np.int64)
        self.w_unit = np.empty((workers.capacity.shape[0], width))
        self.p_unit = np.empty((ps.capacity.shape[0], width))
        self.end = self.a
        #: work units the computed slots could hold at most (fewest workers allowed, the job's cap)
        self.reachable = 0

    def extend(self) -> None:
        job, start = self.job, self.end
        stop = min(self.T, start + max(self.FIRST, start - self.a))
        cols = slice(start - self.a, stop - self.a)
        self.w_caps[:, cols] = np.minimum(np.where(job.worker_ok[:, None], self.workers.fit(job.worker, start, stop), 0), job.hi)
        self.p_caps[:, cols] = np.minimum(np.where(job.ps_ok[:, None], self.ps.fit(job.ps, start, stop), 0), job.hi)
        self.w_unit[:, cols] = self.workers.unit_price(job.worker, start, stop)
        self.p_unit[:, cols] = self.ps.unit_price(job.ps, start, stop)
        most = np.minimum(self.w_caps[:, cols].sum(axis=0), job.hi)  # workers per slot, an upper bound
        self.reachable += int(np.sum(np.where(most >= job.lo, floor(most / self.per), 0)))
        self.end = stop


def best_schedule(job: OasisJob, workers: PricedPool, ps: PricedPool, units: str = "chunks",
                  deadline: float | None = None) -> Plan:
    """Algorithm 2 at the pools' current prices and residual capacities; see the module docstring.

    Returns the schedule with the largest strictly positive payoff (the earliest deadline among
    equals) or an empty plan with payoff 0 when none is positive (the job is rejected).  A job that
    cannot finish even on every free worker it may use is rejected without a DP; a DP table beyond
    :data:`MAX_TABLE` is an :class:`InstanceError`.  Past ``deadline`` (``time.perf_counter()``) the
    completion slots not yet tried are skipped: the best plan so far is returned, ``cut_short`` set.
    """
    T = workers.slots
    H, K = workers.capacity.shape[0], ps.capacity.shape[0]
    empty = Plan(None, 0.0, 0.0, TaskCounts(H, T), TaskCounts(K, T))
    a = job.arrival
    if units == "chunks":
        total, per = job.chunks, job.rho
    else:
        total, per = job.work_slots, 1.0
    if total == 0 or not job.runnable:
        return empty
    view = _Horizon(job, workers, ps, per)
    # the work every slot could hold at most, summed until it covers the job (the rest can only add)
    while view.reachable < total and view.end < T:
        view.extend()
    if total > view.reachable:
        return empty  # no schedule finishes, whatever the prices
    if total + 1 > MAX_TABLE:
        raise InstanceError(f"job {job.id} needs {total} {units} of work; OASiS's DP handles at most {MAX_TABLE - 1} "
                            "(try --set units=worker-slots, or fewer epochs/chunks)", None, f"jobs[{job.index}].work")
    w_unit, w_caps, p_unit, p_caps = view.w_unit, view.w_caps, view.p_unit, view.p_caps

    table = np.full(total + 1, np.inf)
    table[0] = 0.0
    tables: list[np.ndarray] = []
    slots: list[_Slot] = []
    best, best_t = 0.0, None
    cut = False
    for t in range(a, T):
        if deadline is not None and time.perf_counter() > deadline:
            cut = True
            break
        f = float(job.value(t))
        if f <= best:
            break  # the cost is >= 0 and f never rises, so no later deadline can do strictly better
        while view.end <= t:
            view.extend()
        slot = slot_cost(job, w_unit[:, t - a], w_caps[:, t - a], p_unit[:, t - a], p_caps[:, t - a])
        ys = np.flatnonzero(np.isfinite(slot.cost))  # the counts the size range allows (0 always)
        d = np.minimum(floor(ys / per), total)
        d, first = np.unique(d, return_index=True)  # the fewest workers that train each chunk count
        if d[-1] > 0:
            table, late = _step(table, d, slot.cost[ys[first]], deadline)
            cut = cut or late
        else:
            table = table.copy()
        tables.append(table)
        slots.append(slot)
        if f - table[total] > best:
            best, best_t = f - table[total], t
    if best_t is None:
        return Plan(None, 0.0, 0.0, empty.workers, empty.ps, deadlines=len(tables), cut_short=cut)
    y = _unwind(tables[: best_t - a + 1], slots, total, per, job.lo)
    plan_w, plan_p = TaskCounts(H, T), TaskCounts(K, T)
    for offset, count in enumerate(y):
        if count:
            slot = slots[offset]
            plan_w.put(a + offset, _spread(count, slot.w_order, slot.w_caps, H))
            plan_p.put(a + offset, _spread(int(job.ps_needed(count)), slot.p_order, slot.p_caps, K))
    cost = float(tables[best_t - a][total])
    return Plan(best_t, best, cost, plan_w, plan_p, deadlines=len(tables), cut_short=cut)


def _unwind(tables: list[np.ndarray], slots: list[_Slot], total: int, per: float, lo: int = 1) -> list[int]:
    """Worker counts per slot of the DP optimum, latest slot first, taking the smallest ``d`` among equal costs.

    ``d`` chunks take ``max(ceil(d per), lo)`` workers (at least the size range's ``lo``; more chunks
    than ``d`` may then be trained, which the forward pass counts the same way)."""
    remaining = total
    y = [0] * len(tables)
    for offset in range(len(tables) - 1, -1, -1):
        target = tables[offset][remaining]
        d = np.arange(remaining + 1)
        workers = np.where(d > 0, np.maximum(ceil(d * per), lo), 0)
        cost = slots[offset].cost
        ok = workers < cost.size
        prev = tables[offset - 1][remaining - d] if offset else np.where(d == remaining, 0.0, np.inf)
        total_cost = np.where(ok, cost[np.minimum(workers, cost.size - 1)], np.inf) + prev
        pick = int(np.flatnonzero(total_cost <= target + TIE * max(1.0, abs(target)))[0])
        y[offset] = int(workers[pick])
        remaining -= pick
    assert remaining == 0
    return y
