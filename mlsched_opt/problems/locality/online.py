"""V-Greedy: the online wrapper of spec 001 section 3.3 (our design; the paper's wrapper is unknown).

Slot by slot, the jobs arriving in the slot are taken smallest estimated work first (``sjf``:
``V_i`` over the job's best single-slot throughput on the empty cluster) or in arrival order
(``fifo``).  Each job scans deadlines ``t_hat = t, t + 1, ...``: the first deadline whose PC-ILP
has a feasible LP (target ``(1 + eps) V``) and whose rounding (RR-PC with repair, or the exact
per-job 0-1 program with ``solver="ilp"``) covers ``V`` is committed irrevocably; its patterns
use up residual capacity.  A job without any deadline is rejected.

``plan="unaware"`` plans with ``q_in := q_ex`` (the locality-unaware baseline); execution always
uses the true rates: a slot in which the job occupies one machine runs at ``q_in``, any other
at ``q_ex``.  Completion is the first slot whose cumulative work reaches ``V`` (pitfall P3).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .pcilp import LocalityJob, Patterns, patterns, plan_of, solve_lp
from .rounding import rr_pc

ORDERS = ("sjf", "fifo")


@dataclass
class Schedule:
    """Per job: ``(slot, machine, workers)`` triples, the completion slot, and counters."""

    tasks: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)
    completion: dict[int, int] = field(default_factory=dict)
    rejected: list[int] = field(default_factory=list)
    lps: int = 0
    attempts: int = 0
    repairs: int = 0

    def total_delay(self, jobs: Sequence[LocalityJob]) -> float:
        """``sum_i w_i (C_i - a_i + 1)`` over the completed jobs."""
        return float(sum(jobs[i].weight * (c - jobs[i].arrival + 1) for i, c in self.completion.items()))


def best_slot_rate(job: LocalityJob, capacity: np.ndarray) -> float:
    """The most work one slot can give the job on the empty cluster (co-located or spread)."""
    n = np.arange(1, job.w_max + 1)
    fits = (job.demand(n)[None] <= capacity[:, None, :] + 1e-9).all(axis=2)      # (H, N)
    per_machine = np.where(fits, n[None], 0).max(axis=1)
    return max(job.q_in * per_machine.max(), job.q_ex * min(per_machine.sum(), job.w_max))


def executed_completion(job: LocalityJob, tasks: list[tuple[int, int, int]]) -> int | None:
    """First slot whose cumulative work at the true rates reaches ``V``."""
    done = 0.0
    for t in sorted({s for s, _, _ in tasks}):
        here = [(h, n) for s, h, n in tasks if s == t]
        rate = job.q_in if len({h for h, _ in here}) == 1 else job.q_ex
        done += rate * sum(n for _, n in here)
        if done >= job.work - 1e-9:
            return t
    return None


def v_greedy(jobs: Sequence[LocalityJob], capacity: np.ndarray, slots: int, order: str = "sjf", solver: str = "rr",
             eps: float = 0.0, attempts: int = 5, seed: int = 0, plan: str = "aware") -> Schedule:
    residual = np.repeat(capacity[:, :, None], slots, axis=2).astype(float)
    rng = np.random.default_rng(seed)
    out = Schedule()
    for t in range(slots):
        arriving = [i for i, j in enumerate(jobs) if j.arrival == t]
        if order == "sjf":
            arriving.sort(key=lambda i: (jobs[i].work / best_slot_rate(jobs[i], capacity), i))
        for i in arriving:
            planned = dataclasses.replace(jobs[i], q_in=jobs[i].q_ex) if plan == "unaware" else jobs[i]
            chosen = _first_deadline(planned, t, slots, residual, solver, eps, attempts, rng, out)
            if chosen is None:
                out.rejected.append(i)
                continue
            p, idx = chosen
            tasks = [(int(p.slot[v]), int(p.machine[v]), int(p.workers[v])) for v in idx]
            for s, h, n in tasks:
                residual[h, :, s] -= planned.demand(n)
            out.tasks[i] = tasks
            done = executed_completion(jobs[i], tasks)
            if done is not None:
                out.completion[i] = done
    return out


def _first_deadline(job: LocalityJob, start: int, slots: int, residual: np.ndarray, solver: str, eps: float,
                    attempts: int, rng: np.random.Generator, out: Schedule) -> tuple[Patterns, np.ndarray] | None:
    for deadline in range(start, slots):
        p = patterns(job, start, deadline, residual, eps=eps)
        out.lps += 1
        z = solve_lp(p, integer=solver == "ilp")
        if z is None:
            continue
        if solver == "ilp":
            return p, plan_of(p, z).chosen
        rounded = rr_pc(p, z, rng, attempts)
        out.attempts += rounded.attempts
        out.repairs += int(rounded.repaired)
        if rounded.plan is not None:
            return p, rounded.plan.chosen
    return None


__all__ = ["ORDERS", "Schedule", "best_slot_rate", "executed_completion", "v_greedy"]
