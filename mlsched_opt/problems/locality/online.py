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
by OASiS's :class:`~mlsched_opt.problems.oasis.prices.PricedPool`.  For every deadline the
PC-ILP is solved with costs ``kappa = p`` (LP + RR-PC) and the payoff is
``u_i(t_hat - a_i + 1) - cost``; the job takes the best deadline if its payoff is positive, else
it is rejected, and its workers and PSs raise the prices.

Baselines (section 5.3): ``plan="unaware"`` plans with ``q_in := q_ex``; ``kinds`` restricts the
program to co-located or to spread patterns.  Execution always uses the true rates (``work_of``:
the view's job-level or per-pair locality).  Completion is the first slot whose cumulative work
reaches ``V`` (pitfall P3).

Covering inflation (pitfall P6): each LP + RR-PC step takes a tuple of ``eps`` values, solves
the LP for each target ``(1 + eps) V`` and keeps the cheapest plan that covers ``V``.

Time limit: with ``stop_at`` (a ``time.perf_counter()`` instant) both wrappers stop considering
jobs once it passes and return what they committed so far (``Schedule.cut_short``); every loop
here is bounded by the horizon, the arriving jobs and the deadlines, and each LP gets at most the
time left.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...tolerances import CHECK_TOL
from ..oasis.prices import PricedPool
from ..online import arrivals_by_slot
from .pcilp import CO_LOCATED, SPREAD, LocalityJob, Patterns, Plan, earliest_deadline, largest_fit, patterns, plan_of, solve_lp
from .rounding import rr_pc

ORDERS = ("sjf", "fifo")
BOTH = (CO_LOCATED, SPREAD)
Task = tuple[int, int, int]  # (slot, machine, workers)


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
    done = 0.0
    for t in sorted({s for s, _, _ in tasks}):
        here = [(h, n) for s, h, n in tasks if s == t]
        done += job_level_work(job, here) if work_of is None else work_of(here)
        if done >= job.work * (1 - CHECK_TOL) - CHECK_TOL:  # the checker's rule
            return t
    return None


def arrival_order(jobs: Sequence[LocalityJob], capacity: np.ndarray, t: int, order: str) -> list[int]:
    """The jobs arriving in slot ``t``: file order (``fifo``), or smallest estimated work first (``sjf``)."""
    arriving = arrivals_by_slot(j.arrival for j in jobs).get(t, [])
    if order == "sjf":
        rate = {i: best_slot_rate(jobs[i], capacity) for i in arriving}  # 0: fits nowhere beside its PSs, goes last
        arriving.sort(key=lambda i: (jobs[i].work / rate[i] if rate[i] > 0 else np.inf, i))
    return arriving


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
        for eps in self.eps:
            inflated = dataclasses.replace(p, target=(1.0 + eps) * p.job.work)
            out.lps += 1
            z = solve_lp(inflated, time_limit=self.time_left())
            if z is None:
                continue
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
    rng = np.random.default_rng(seed)
    rounding = Rounding(solver, _eps_tuple(eps), attempts, kinds, stop_at)
    out = Schedule()
    for t in range(slots):
        for i in arrival_order(jobs, capacity, t, order):
            if _out_of_time(stop_at, out):
                return out
            began = time.perf_counter()
            planned = dataclasses.replace(jobs[i], q_in=jobs[i].q_ex) if plan == "unaware" else jobs[i]
            chosen = _first_deadline(planned, t, slots, residual, rounding, rng, out)
            if out.cut_short:
                return out
            if chosen is None:
                out.rejected.append(i)
            else:
                _commit(jobs, i, chosen, residual, out, work_of)
            out.decision_s.append(time.perf_counter() - began)
    return out


def _eps_tuple(eps: float | tuple[float, ...]) -> tuple[float, ...]:
    return tuple(float(e) for e in eps) if isinstance(eps, (tuple, list)) else (float(eps),)


def _first_deadline(job: LocalityJob, start: int, slots: int, residual: np.ndarray, rounding: Rounding,
                    rng: np.random.Generator, out: Schedule) -> tuple[Patterns, np.ndarray] | None:
    first = earliest_deadline(job, start, residual, min(rounding.eps), rounding.kinds)
    if first is None:
        return None
    for deadline in range(first, slots):
        if _out_of_time(rounding.stop_at, out):
            return None
        p = patterns(job, start, deadline, residual, kinds=rounding.kinds)
        chosen = rounding.plan(p, rng, out)
        if chosen is not None:
            return p, chosen
    return None


def _commit(jobs: Sequence[LocalityJob], i: int, chosen: tuple[Patterns, np.ndarray], residual: np.ndarray, out: Schedule,
            work_of: Callable[[int, list[tuple[int, int]]], float] | None, pool: PricedPool | None = None) -> None:
    p, idx = chosen
    tasks = sorted((int(p.slot[v]), int(p.machine[v]), int(p.workers[v])) for v in idx)
    job = jobs[i]
    for s, h, n in tasks:
        residual[h, :, s] -= job.demand(n)
    if pool is not None:
        workers = np.zeros((residual.shape[0], residual.shape[2]))
        ps = np.zeros_like(workers)
        for s, h, n in tasks:
            workers[h, s] += n
            ps[h, s] += int(np.ceil(n / job.gamma))
        pool.reserve(workers, job.alpha)
        pool.reserve(ps, job.beta)
    out.tasks[i] = tasks
    done = executed_completion(job, tasks, None if work_of is None else (lambda here: work_of(i, here)))
    if done is not None:
        out.completion[i] = done


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
    for t in range(slots):
        for i in arrival_order(jobs, capacity, t, order):
            if _out_of_time(stop_at, out):
                return out, payoffs
            began = time.perf_counter()
            residual = pool.free()
            best: tuple[float, tuple[Patterns, np.ndarray]] | None = None
            first = earliest_deadline(jobs[i], t, residual, min(rounding.eps))
            for deadline in range(first if first is not None else slots, slots):
                if _out_of_time(stop_at, out):
                    return out, payoffs
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
            payoffs[i] = best[0] if best is not None else -np.inf
            if best is None or best[0] <= 0:
                out.rejected.append(i)
            else:
                _commit(jobs, i, best[1], residual, out, work_of, pool)
            out.decision_s.append(time.perf_counter() - began)
    return out, payoffs


__all__ = ["BOTH", "ORDERS", "Prices", "Rounding", "Schedule", "best_slot_rate", "executed_completion", "v_greedy", "v_pd"]
