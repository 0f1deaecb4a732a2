"""Arrival-driven simulation of an online policy, and OASiS itself (spec 000 Algorithm 1).

:func:`simulate` walks the slots; in each slot it first hands the jobs arriving then to the
policy (a :class:`~mlsched_opt.problems.online.SlotPolicy`) one at a time (in file order, pitfall
10), then asks the policy which workers and PSs
every job runs in that slot, adds the work done, and tells the policy which jobs completed.
It records everything a decision needs; whatever the policy does, the result goes through the
independent checker.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...clock import progress as report_progress
from ..online import SlotPolicy, arrivals_by_slot
from ..pricing import PricedPool
from .prices import PriceParams
from .subroutine import best_schedule
from .view import OasisJob, OasisView, TaskCounts


@dataclass
class SlotRun:
    """Per-job worker ``[h, t]`` and PS ``[k, t]`` counts (sparse), completion slots and the policy's statistics."""

    workers: dict[int, TaskCounts]
    ps: dict[int, TaskCounts]
    completion: dict[int, int]
    admitted: list[int]
    stats: dict[str, Any] = field(default_factory=dict)
    #: the slot at which the run stopped for the time limit (None: it ran the whole horizon)
    cut_at: int | None = None

    def utility(self, view: OasisView) -> float:
        return float(sum(view.jobs[i].value(t) for i, t in self.completion.items()))


def simulate(view: OasisView, policy: SlotPolicy, progress=None, deadline: float | None = None) -> SlotRun:
    """Run ``policy`` over the horizon (``progress(slot)`` is called once per slot, for long runs).

    Past ``deadline`` (``time.perf_counter()``) the run stops before the next slot: what ran so far
    is a valid (partial) schedule, jobs not finished by then earn nothing, ``cut_at`` says where."""
    T = view.slots
    work = {j.index: 0 for j in view.jobs}
    workers: dict[int, TaskCounts] = {}
    ps: dict[int, TaskCounts] = {}
    completion: dict[int, int] = {}
    arrivals = arrivals_by_slot(job.arrival for job in view.jobs)
    active: list[OasisJob] = []
    cut_at = None
    for t in range(T):
        if deadline is not None and time.perf_counter() > deadline:
            cut_at = t
            break
        for i in arrivals.get(t, []):
            job = view.jobs[i]
            policy.arrive(job, t)
            # a job the policy will never run stays out of the per-slot scans: kept, the rejected jobs of a
            # congested trace made every later slot pay for them (quadratic over a whole trace); a job of no
            # work still goes in, since it completes at once whatever the policy does
            if job.work_slots > 0 and getattr(policy, "never_runs", _no)(job):
                continue
            active.append(job)
        for i, (y, z) in policy.run(t, active).items():
            if y.any() or z.any():
                workers.setdefault(i, TaskCounts(view.H, T)).put(t, y)
                ps.setdefault(i, TaskCounts(view.K, T)).put(t, z)
                work[i] += int(y.sum())
        done = [job for job in active if work[job.index] >= job.work_slots]
        if done:
            finished = {job.index for job in done}
            active = [job for job in active if job.index not in finished]
            for job in done:
                completion[job.index] = t
                policy.completed(job, t)
        if progress is not None:
            progress(t)
        report_progress(t + 1, T, "slots")
    admitted = sorted(getattr(policy, "admitted", set()) | set(completion))
    return SlotRun(workers, ps, completion, admitted, dict(getattr(policy, "stats", {})), cut_at)


def _no(job: OasisJob) -> bool:
    return False


class Oasis:
    """OASiS (Algorithm 1): price, plan the best schedule, admit on a strictly positive payoff, reserve.

    Guarantee (Theorem 4, Bao et al. 2018): ``OPT / OASiS <= 2 alpha`` with
    ``alpha = max(1, ln(U1/L1), ln(U2/L2))`` when U and L are the exact values of eqs (23)-(26)
    and demands are small next to capacities.
    """

    def __init__(self, view: OasisView, params: PriceParams, units: str = "chunks", deadline: float | None = None):
        self.view = view
        self.units = units
        self.deadline = deadline
        self.cut_short = 0
        self.workers = PricedPool(view.worker_capacity, view.slots, params.L1, params.U1)
        self.pss = PricedPool(view.ps_capacity, view.slots, params.L2, params.U2)
        self.plans: dict[int, tuple[TaskCounts, TaskCounts]] = {}
        self.admitted: set[int] = set()
        self.payoff: dict[int, float] = {}
        self.decision_s: list[float] = []
        self.stats: dict[str, Any] = {}

    def arrive(self, job: OasisJob, slot: int) -> None:
        start = time.perf_counter()
        if self.deadline is not None and start > self.deadline:
            self.cut_short += 1  # out of time: the job is rejected unplanned, the admitted keep their plans
            return
        plan = best_schedule(job, self.workers, self.pss, self.units, self.deadline)
        self.cut_short += plan.cut_short
        if plan.payoff > 0:
            self.workers.reserve_counts(plan.workers, job.worker)
            self.pss.reserve_counts(plan.ps, job.ps)
            self.plans[job.index] = (plan.workers, plan.ps)
            self.admitted.add(job.index)
            self.payoff[job.index] = plan.payoff
        took = time.perf_counter() - start
        self.decision_s.append(took)
        # running figures: recomputing them over every decision so far would be quadratic in the jobs
        count = len(self.decision_s)
        mean = self.stats.get("decision_s_mean", 0.0)
        self.stats.update(decision_s_mean=mean + (took - mean) / count,
                          decision_s_max=max(self.stats.get("decision_s_max", took), took))

    def never_runs(self, job: OasisJob) -> bool:
        """Whether ``job``, just arrived, is rejected: OASiS decides once, at arrival, and never revisits it."""
        return job.index not in self.plans

    def run(self, slot: int, active: list[OasisJob]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        return {j.index: (self.plans[j.index][0].at(slot), self.plans[j.index][1].at(slot))
                for j in active if j.index in self.plans}

    def completed(self, job: OasisJob, slot: int) -> None:
        pass
