"""The online wrappers of spec 001 section 3.3: V-Greedy and V-PD (our design; the paper's wrapper is unknown).

**V-Greedy.**  Slot by slot, the jobs arriving in the slot are taken smallest estimated work
first (``sjf``: ``V_i`` over the job's best single-slot throughput on the empty cluster) or in
arrival order (``fifo``).  Each job scans deadlines from the first one whose LP relaxation is
feasible (:func:`.pcilp.earliest_deadline`, computed without an LP) upward, linearly (pitfall
P15: rounding success is not monotone in the deadline).  The first deadline whose rounding
(RR-PC with repair, or the exact per-job 0-1 program with ``solver="ilp"``) covers ``V`` is
committed irrevocably; its patterns use up residual capacity.  A job without any deadline is
rejected.

**V-PD.**  Prices ``p[h, r, t] = L (U_r / L) ** (load / capacity)`` on the one shared pool, kept
by OASiS's :class:`~mlsched_opt.problems.pricing.PricedPool`.  For every deadline the
PC-ILP is solved with costs ``kappa = p`` (LP + RR-PC) and the payoff is
``u_i(t_hat - a_i + 1) - cost``; the job takes the best deadline if its payoff is positive, else
it is rejected, and its workers and PSs raise the prices.

Baselines (section 5.3): ``plan="unaware"`` plans with ``q_in := q_ex``; ``kinds`` restricts the
program to co-located or to spread patterns.  Execution always uses the true rates (``work_of``:
the view's job-level or per-pair locality).  Completion is the first slot whose cumulative work
reaches ``V`` (pitfall P3).

Covering inflation (pitfall P6): each LP + RR-PC step takes a tuple of ``eps`` values, solves
the LP for each target ``(1 + eps) V`` and keeps the cheapest plan that covers ``V``.

Scale [our design, issue 18]: V-Greedy's program for a job keeps, per slot, only its ``w_max``
best machines (:func:`.pcilp.host_patterns`; exact for the 0-1 program, whose costs and work do
not depend on the machine), so an LP has ``O(slots w_max^2)`` columns whatever the cluster's size.
The largest fitting counts are computed per job in growing chunks of slots (:class:`Window`), only
as far as the deadline scan reaches.  A cluster with at most ``w_max`` machines keeps every
machine, i.e. the program of the spec, pattern for pattern.  V-PD's prices differ per machine, so
it keeps the full program.

Time limit (anytime): with ``stop_at`` (a ``time.perf_counter()`` instant) both wrappers stop
planning by LP once it passes (V-Greedy earlier by twice its mean scan time per job for each job
left, so the fallback ends near ``stop_at``); every job not yet planned, in the same online order, then gets the
earliest-fit plan (:func:`earliest_fit`: per slot the better of all on one machine or spread on
the best machines, from its arrival until its work is covered), which needs no LP and is linear
in the slots it scans.  ``Schedule.cut_short`` and ``Schedule.fallback`` say so.  Every loop here
is bounded by the horizon, the arriving jobs and the deadlines, and each LP gets at most the time
left.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...clock import progress as report_progress
from ...tolerances import work_done_threshold
from ..online import arrivals_by_slot
from ..pricing import PricedPool
from .decision import Task
from .options import ORDERS
from .pcilp import (
    CO_LOCATED,
    SPREAD,
    LocalityJob,
    Patterns,
    Plan,
    fit_capacity_work,
    host_order,
    host_patterns,
    largest_fit,
    patterns,
    plan_of,
    solve_lp,
    solve_lps,
)
from .rounding import rr_pc

BOTH = (CO_LOCATED, SPREAD)



@dataclass
class Schedule:
    """Per job: ``(slot, machine, workers)`` triples, the completion slot, and counters."""

    tasks: dict[int, list[Task]] = field(default_factory=dict)
    completion: dict[int, int] = field(default_factory=dict)
    rejected: list[int] = field(default_factory=list)
    lps: int = 0
    attempts: int = 0
    repairs: int = 0
    decision_s: list[float] = field(default_factory=list)
    cut_short: bool = False
    #: jobs planned by :func:`earliest_fit` because the time limit passed before their turn
    fallback: list[int] = field(default_factory=list)

    def total_delay(self, jobs: Sequence[LocalityJob]) -> float:
        """``sum_i w_i (C_i - a_i + 1)`` over the completed jobs."""
        return float(sum(jobs[i].weight * (c - jobs[i].arrival + 1) for i, c in self.completion.items()))


def best_slot_rate(job: LocalityJob, capacity: np.ndarray) -> float:
    """The most work one slot can give the job on the empty cluster (co-located or spread)."""
    per_machine = largest_fit(job, capacity[:, :, None])[:, 0]
    return max(job.q_in * per_machine.max(), job.q_ex * min(per_machine.sum(), job.w_max))


def job_level_work(job: LocalityJob, here: list[tuple[int, int]]) -> float:
    """Work of one slot at the job-level rates: ``q_in`` on one machine, else ``q_ex``."""
    rate = job.q_in if len({h for h, _ in here}) == 1 else job.q_ex
    return rate * sum(n for _, n in here)


def executed_completion(job: LocalityJob, tasks: list[Task],
                        work_of: Callable[[list[tuple[int, int]]], float] | None = None) -> int | None:
    """First slot whose cumulative work at the true rates reaches ``V``."""
    by_slot: dict[int, list[tuple[int, int]]] = {}
    for s, h, n in tasks:
        by_slot.setdefault(s, []).append((h, n))
    done = 0.0
    for t in sorted(by_slot):
        here = by_slot[t]
        done += job_level_work(job, here) if work_of is None else work_of(here)
        if done >= work_done_threshold(job.work):  # the checker's rule
            return t
    return None


def arrival_order(jobs: Sequence[LocalityJob], capacity: np.ndarray, t: int, order: str,
                  by_slot: dict[int, list[int]] | None = None) -> list[int]:
    """The jobs arriving in slot ``t``: file order (``fifo``), or smallest estimated work first (``sjf``)."""
    arriving = list((arrivals_by_slot(j.arrival for j in jobs) if by_slot is None else by_slot).get(t, []))
    if order == "sjf":
        rate = {i: best_slot_rate(jobs[i], capacity) for i in arriving}  # 0: fits nowhere beside its PSs, goes last
        arriving.sort(key=lambda i: (jobs[i].work / rate[i] if rate[i] > 0 else np.inf, i))
    return arriving


def online_order(jobs: Sequence[LocalityJob], capacity: np.ndarray, slots: int, order: str) -> list[tuple[int, int]]:
    """``(slot, job)`` in the order the online wrappers see them (it depends on the empty cluster only)."""
    by_slot = arrivals_by_slot(j.arrival for j in jobs)
    return [(t, i) for t in sorted(k for k in by_slot if 0 <= k < slots) for i in arrival_order(jobs, capacity, t, order, by_slot)]


class Window:
    """One job's largest fitting counts ``fit`` and best-fit slack per (machine, slot) from ``start``,
    computed in doubling chunks of slots only as far as the scan reaches (``residual`` must not
    change while the window is in use)."""

    def __init__(self, job: LocalityJob, start: int, residual: np.ndarray, scale: np.ndarray):
        self.job, self.start, self.residual, self.scale = job, start, residual, scale
        self.slots = residual.shape[2]
        self.fit = np.zeros((residual.shape[0], 0), dtype=np.int64)
        self.slack = np.zeros((residual.shape[0], 0))
        self._hosts = np.zeros((0, 0), dtype=np.int64)
        #: seconds spent computing ``fit`` and ``slack`` (the bulk of an earliest-fit plan's cost)
        self.spent = 0.0

    @property
    def end(self) -> int:
        """One past the last slot computed."""
        return self.start + self.fit.shape[1]

    def extend_to(self, last: int) -> None:
        """Make slots ``start..last`` (at most the horizon's last) available."""
        if last < self.end or self.end >= self.slots:
            return
        began = time.perf_counter()
        stop = min(self.slots, max(last + 1, self.start + 2 * self.fit.shape[1], self.start + 8))
        chunk = self.residual[:, :, self.end:stop]
        self.fit = np.concatenate([self.fit, largest_fit(self.job, chunk)], axis=1)
        self.slack = np.concatenate([self.slack, (chunk / self.scale[None, :, None]).sum(axis=1)], axis=1)
        self.spent += time.perf_counter() - began

    def hosts(self, count: int, k: int) -> np.ndarray:
        """:func:`.pcilp.host_order` of the first ``count`` slots, ``(count, k)``."""
        self.extend_to(self.start + count - 1)
        have = self._hosts.shape[0]
        if have < count:
            more = host_order(self.fit[:, have:count], self.slack[:, have:count], k)
            self._hosts = more if have == 0 else np.concatenate([self._hosts, more])
        return self._hosts[:count]

    def earliest_deadline(self, eps: float, kinds: tuple[int, ...], top: int | None) -> int | None:
        """:func:`.pcilp.earliest_deadline` (on each slot's ``top`` best machines), scanning chunk by chunk."""
        target = (1.0 + eps) * self.job.work - 1e-9
        done, t = 0.0, self.start
        while t < self.slots:
            self.extend_to(t)
            cap = fit_capacity_work(self.job, self.fit[:, t - self.start:], kinds, top)
            reach = np.cumsum(np.concatenate([[done], cap]))[1:]  # one running sum, as over the whole horizon at once
            hit = np.flatnonzero(reach >= target)
            if hit.size:
                return t + int(hit[0])
            done, t = float(reach[-1]), self.end
        return None


def scale_of(capacity: np.ndarray) -> np.ndarray:
    """Per resource the largest machine's capacity (1 where none has any): the unit of best-fit slack."""
    top = capacity.max(axis=0)
    return np.where(top > 0, top, 1.0)


def earliest_fit(job: LocalityJob, window: Window, kinds: tuple[int, ...] = BOTH) -> list[Task] | None:
    """The no-LP fallback: from the window's start, each slot takes the better of all workers on its
    best machine (``q_in``) or the most workers on its best ``w_max`` machines (``q_ex``), until the
    work counted that way covers ``V``; ``None`` if it does not within the horizon.  Feasible by
    construction (every count fits the residual, at most ``w_max`` workers per slot); no guarantee.
    Vectorized per chunk of slots; the running sum is the slot-by-slot one."""
    tasks: list[Task] = []
    done, t = 0.0, window.start
    k = min(job.w_max, window.residual.shape[0])
    while t < window.slots:
        window.extend_to(t)
        first, count = t - window.start, window.end - window.start
        hosts = window.hosts(count, k)[first:]                                         # (S, k)
        n = window.fit[hosts, np.arange(first, count)[:, None]]
        order = np.argsort(-n, axis=1, kind="stable")
        hosts, n = np.take_along_axis(hosts, order, axis=1), np.take_along_axis(n, order, axis=1)   # most workers first
        before = np.cumsum(n, axis=1) - n
        take = np.minimum(n, np.maximum(job.w_max - before, 0))
        co = job.q_in * n[:, 0] if CO_LOCATED in kinds else np.zeros(len(n))
        spread = job.q_ex * take.sum(axis=1) if SPREAD in kinds else np.zeros(len(n))
        use_co = (co >= spread) & (co > 0)
        gain = np.where(use_co, co, spread)
        reach = np.cumsum(np.concatenate([[done], gain]))[1:]
        hit = np.flatnonzero(reach >= job.work - 1e-9)
        last = int(hit[0]) if hit.size else len(gain) - 1
        for j in np.flatnonzero(gain[:last + 1] > 0):
            if use_co[j]:
                tasks.append((t + int(j), int(hosts[j, 0]), int(n[j, 0])))
            else:
                tasks += [(t + int(j), int(h), int(m)) for h, m in zip(hosts[j], take[j]) if m > 0]
        if hit.size:
            return tasks
        done, t = float(reach[-1]), window.end
    return None


@dataclass(frozen=True)
class Rounding:
    """How a PC-ILP becomes a plan: ``rr`` (LP + RR-PC with repair, cheapest over ``eps``) or ``ilp`` (exact 0-1 program)."""

    solver: str = "rr"
    eps: tuple[float, ...] = (0.0,)
    attempts: int = 5
    kinds: tuple[int, ...] = BOTH
    stop_at: float | None = None

    def time_left(self) -> float:
        return 30.0 if self.stop_at is None else max(0.1, min(30.0, self.stop_at - time.perf_counter()))

    def plan(self, p: Patterns, rng: np.random.Generator, out: Schedule) -> np.ndarray | None:
        """The cheapest plan covering ``V`` over the ``eps`` tried (``p`` built with target ``V``), or ``None``."""
        if self.solver == "ilp":
            out.lps += 1
            z = solve_lp(p, time_limit=self.time_left(), integer=True)
            return None if z is None else plan_of(p, z).chosen
        best: Plan | None = None
        targets = tuple((1.0 + eps) * p.job.work for eps in self.eps)
        out.lps += len(targets)
        for eps, z in zip(self.eps, solve_lps(p, targets, time_limit=self.time_left())):
            if z is None:
                continue
            inflated = dataclasses.replace(p, target=(1.0 + eps) * p.job.work)
            rounded = rr_pc(inflated, z, rng, self.attempts)
            out.attempts += rounded.attempts
            out.repairs += int(rounded.repaired)
            if rounded.plan is not None and (best is None or rounded.plan.cost < best.cost - 1e-9):
                best = rounded.plan
        return None if best is None else best.chosen


def _out_of_time(stop_at: float | None, out: Schedule) -> bool:
    if stop_at is not None and time.perf_counter() > stop_at:
        out.cut_short = True
    return out.cut_short


def v_greedy(jobs: Sequence[LocalityJob], capacity: np.ndarray, slots: int, order: str = "sjf", solver: str = "rr",
             eps: float | tuple[float, ...] = 0.0, attempts: int = 5, seed: int = 0, plan: str = "aware",
             kinds: tuple[int, ...] = BOTH, work_of: Callable[[int, list[tuple[int, int]]], float] | None = None,
             stop_at: float | None = None) -> Schedule:
    """V-Greedy on ``jobs`` over machines ``capacity`` (H, R) and slots ``0..slots-1``."""
    residual = np.repeat(capacity[:, :, None], slots, axis=2).astype(float)
    scale = scale_of(capacity)
    rng = np.random.default_rng(seed)
    rounding = Rounding(solver, _eps_tuple(eps), attempts, kinds, stop_at)
    out = Schedule()
    sequence = online_order(jobs, capacity, slots, order)
    scan = 0.0  # seconds of Window scans so far: twice their mean per job is the fallback's budget per job left
    for k, (t, i) in enumerate(sequence):
        report_progress(k, len(sequence))
        began = time.perf_counter()
        reserve = 2.0 * scan / k * (len(sequence) - k) if k else 0.0
        if out.cut_short or _out_of_time(None if stop_at is None else stop_at - reserve, out):
            _fall_back(jobs, i, t, residual, scale, kinds, out, work_of)
            continue
        planned = dataclasses.replace(jobs[i], q_in=jobs[i].q_ex) if plan == "unaware" else jobs[i]
        window = Window(planned, t, residual, scale)
        chosen = _first_deadline(planned, t, slots, residual, rounding, rng, out, window)
        scan += window.spent
        if out.cut_short:
            _fall_back(jobs, i, t, residual, scale, kinds, out, work_of)
            continue
        if chosen is None:
            out.rejected.append(i)
        else:
            _commit(jobs, i, chosen, residual, out, work_of)
        out.decision_s.append(time.perf_counter() - began)
    return out


def _fall_back(jobs: Sequence[LocalityJob], i: int, t: int, residual: np.ndarray, scale: np.ndarray, kinds: tuple[int, ...],
               out: Schedule, work_of: Callable[[int, list[tuple[int, int]]], float] | None, pool: PricedPool | None = None) -> None:
    out.fallback.append(i)
    tasks = earliest_fit(jobs[i], Window(jobs[i], t, residual, scale), kinds)
    if tasks is None:
        out.rejected.append(i)
    else:
        _commit_tasks(jobs, i, sorted(tasks), residual, out, work_of, pool)


def _eps_tuple(eps: float | tuple[float, ...]) -> tuple[float, ...]:
    return tuple(float(e) for e in eps) if isinstance(eps, (tuple, list)) else (float(eps),)


def _first_deadline(job: LocalityJob, start: int, slots: int, residual: np.ndarray, rounding: Rounding,
                    rng: np.random.Generator, out: Schedule, window: Window) -> tuple[Patterns, np.ndarray] | None:
    # at most w_max machines: every machine is a host, and the spec's program is kept as it is
    top = job.w_max if residual.shape[0] > job.w_max else None
    first = window.earliest_deadline(min(rounding.eps), rounding.kinds, top)
    if first is None:
        return None
    for deadline in range(first, slots):
        if _out_of_time(rounding.stop_at, out):
            return None
        if top is None:
            p = patterns(job, start, deadline, residual, kinds=rounding.kinds)
        else:
            count = deadline - start + 1
            hosts = window.hosts(count, top)  # extends the window: read ``fit`` only after it
            p = host_patterns(job, start, window.fit[:, :count], hosts, kinds=rounding.kinds)
        chosen = rounding.plan(p, rng, out)
        if chosen is not None:
            return p, chosen
    return None


def _commit(jobs: Sequence[LocalityJob], i: int, chosen: tuple[Patterns, np.ndarray], residual: np.ndarray, out: Schedule,
            work_of: Callable[[int, list[tuple[int, int]]], float] | None, pool: PricedPool | None = None) -> None:
    p, idx = chosen
    tasks = sorted((int(p.slot[v]), p.global_machine(int(v)), int(p.workers[v])) for v in idx)
    _commit_tasks(jobs, i, tasks, residual, out, work_of, pool)


def _commit_tasks(jobs: Sequence[LocalityJob], i: int, tasks: list[Task], residual: np.ndarray, out: Schedule,
                  work_of: Callable[[int, list[tuple[int, int]]], float] | None, pool: PricedPool | None = None) -> None:
    job = jobs[i]
    for s, h, n in tasks:
        residual[h, :, s] -= job.demand(n)
    if pool is not None:
        # sparse: dense (machines x slots) tables per job made V-PD quadratic over a trace; the cells
        # without tasks keep their load and price, as the dense update left them
        workers: dict[tuple[int, int], int] = {}
        ps: dict[tuple[int, int], int] = {}
        for s, h, n in tasks:
            workers[h, s] = workers.get((h, s), 0) + n
            ps[h, s] = ps.get((h, s), 0) + int(np.ceil(n / job.gamma))
        pool.reserve_counts(_Cells(workers), job.alpha)
        pool.reserve_counts(_Cells(ps), job.beta)
    out.tasks[i] = tasks
    done = executed_completion(job, tasks, None if work_of is None else (lambda here: work_of(i, here)))
    if done is not None:
        out.completion[i] = done


class _Cells:
    """(machine, slot) -> count as :class:`~mlsched_opt.problems.pricing.SparseCounts` (nonzero counts only)."""

    def __init__(self, cells: dict[tuple[int, int], int]):
        self.cells = {key: n for key, n in cells.items() if n}

    def coo(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        keys = sorted(self.cells)
        server = np.array([h for h, _ in keys], dtype=np.int64)
        slot = np.array([t for _, t in keys], dtype=np.int64)
        return server, slot, np.array([self.cells[k] for k in keys], dtype=np.int64)


@dataclass(frozen=True)
class Prices:
    """``L`` and ``U_r`` of V-PD's price function, and each job's utility of its delay in slots."""

    L: float
    U: np.ndarray
    utility: Callable[[int, int], float]


def v_pd(jobs: Sequence[LocalityJob], capacity: np.ndarray, slots: int, prices: Prices, order: str = "sjf",
         eps: float | tuple[float, ...] = 0.0, attempts: int = 5, seed: int = 0,
         work_of: Callable[[int, list[tuple[int, int]]], float] | None = None,
         stop_at: float | None = None) -> tuple[Schedule, dict[int, float]]:
    """V-PD; returns the schedule and each job's best payoff (admitted iff positive)."""
    pool = PricedPool(capacity, slots, prices.L, prices.U)
    rng = np.random.default_rng(seed)
    rounding = Rounding("rr", _eps_tuple(eps), attempts, stop_at=stop_at)
    out = Schedule()
    payoffs: dict[int, float] = {}
    scale = scale_of(capacity)
    for t, i in online_order(jobs, capacity, slots, order):
        if out.cut_short or _out_of_time(stop_at, out):
            _fall_back(jobs, i, t, pool.free(), scale, BOTH, out, work_of, pool)
            continue
        began = time.perf_counter()
        residual = pool.free()
        best: tuple[float, tuple[Patterns, np.ndarray]] | None = None
        # chunk by chunk from the arrival (the same running sum): the whole horizon per job was quadratic
        first = Window(jobs[i], t, residual, scale).earliest_deadline(min(rounding.eps), BOTH, None)
        for deadline in range(first if first is not None else slots, slots):
            if _out_of_time(stop_at, out):
                break
            value = prices.utility(i, deadline - t + 1)
            if not value > (0.0 if best is None else best[0]):
                break  # the utility only falls with the deadline and costs are positive
            p = patterns(jobs[i], t, deadline, residual, kappa=pool.price)
            chosen = rounding.plan(p, rng, out)
            if chosen is None:
                continue
            payoff = value - float(p.cost[chosen].sum())
            if best is None or payoff > best[0]:
                best = (payoff, (p, chosen))
        if out.cut_short:
            _fall_back(jobs, i, t, residual, scale, BOTH, out, work_of, pool)
            continue
        payoffs[i] = best[0] if best is not None else -np.inf
        if best is None or best[0] <= 0:
            out.rejected.append(i)
        else:
            _commit(jobs, i, best[1], residual, out, work_of, pool)
        out.decision_s.append(time.perf_counter() - began)
    return out, payoffs


__all__ = ["BOTH", "ORDERS", "Prices", "Rounding", "Schedule", "Window", "best_slot_rate", "earliest_fit", "executed_completion",
           "online_order", "v_greedy", "v_pd"]
