"""``srpt``: slot by slot, the arrived jobs with the least remaining resource volume per weight first.

Our design (issue 32), not in spec 001.  V-Greedy (:mod:`.online`) commits each arriving job's
whole plan at arrival, so under load a short job waits behind every longer one that arrived before
it (first come, first served in effect).  Here every slot is planned anew:

1. the *active* jobs (arrived, not finished, and still able to finish by the horizon's last slot
   at their best rate) are sorted by their remaining *volume* per weight, ``rem / r_best x
   max_r (alpha_r + beta_r / gamma) / Cap_r / w``: the worker-slots they still need at their best
   per-worker rate, times their dominant share of the pooled capacity ``Cap_r = sum_h cap[h, r]``
   (Smith's ratio rule on the pooled cluster; with equal shapes it is shortest remaining
   processing time first);
2. in that order each job takes, in the slot's residual capacity, all its workers and
   ``ceil(n / gamma)`` PSs on its best-fitting machine (``q_in``) or its workers over the
   machines that hold the most (``q_ex``), whichever trains more, and no more workers than it
   needs to finish in this slot; PSs sit beside their workers (observation O3), which both
   ``ps_placement`` values accept.

A job may change machines between slots (the checker counts these ``migrations``; the objective
does not charge them).  A job that can no longer finish by the last slot is not run (it is
charged ``T - a + 1`` whatever it runs).  It decides with what has arrived only (an online,
clairvoyant policy: it knows each arrived job's work, as V-Greedy does).  ``O(T x active jobs)``
small numpy steps.  Guarantee: none proven here (preemptive shortest remaining processing time is
optimal for one machine without weights, 1|r_j, pmtn|sum C_j, Schrage 1968; this is a list
heuristic on many multi-resource machines).

:func:`simulate` plans any subset of jobs on a residual capacity: the exact method
(:mod:`mlsched_opt.problems.locality.exact`) plans with it the jobs its master's plan leaves out.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...clock import past, progress
from ...io.instance import Instance
from ...solvers import SolveOptions
from ...tolerances import FIT_TOL, work_done_threshold
from ..base import MethodResult, heuristic_report
from .decision import decision, o3_placement
from .rates import slot_rate_bound, spread_rate
from .view import LocalityView, check_size, locality_view, o3_ps, total_delay

Task = tuple[int, int, int]  # (slot, machine, workers)


@dataclass(frozen=True)
class Rates:
    """Per job: the checker's work threshold, the best per-worker rate, the most work of one slot
    (:func:`.rates.slot_rate_bound`) and the pooled share of one worker with its PSs; ``typical``:
    the mean demand of one worker with its share of a PS over the jobs (R,)."""

    need: np.ndarray
    best: np.ndarray
    slot_most: np.ndarray
    unit_volume: np.ndarray
    weight: np.ndarray
    typical: np.ndarray
    #: per job, ``demand(n)`` of ``n = 1..w_max`` workers with their PSs, ``(w_max, R)``
    demand: tuple[np.ndarray, ...]




def rates(view: LocalityView, locality: str) -> Rates:
    pooled = view.capacity.sum(axis=0)
    share = np.where(pooled > 0, 1.0 / np.where(pooled > 0, pooled, 1.0), 0.0)
    q_sp = np.array([spread_rate(view, i, locality) for i in range(len(view.jobs))])
    return Rates(need=np.array([work_done_threshold(j.work) for j in view.jobs]),
                 best=np.maximum(np.array([j.q_in for j in view.jobs]), q_sp),
                 slot_most=np.array([slot_rate_bound(view, i, locality) for i in range(len(view.jobs))]),
                 unit_volume=np.array([float(((j.alpha + j.beta / j.gamma) * share).max(initial=0.0)) for j in view.jobs]),
                 weight=np.array([j.weight for j in view.jobs], dtype=float),
                 typical=np.mean([j.alpha + j.beta / j.gamma for j in view.jobs], axis=0),
                 demand=tuple(j.demand(np.arange(1, j.w_max + 1)) for j in view.jobs))


@dataclass
class Plan:
    """A schedule being built: per job its ``(slot, machine, workers)`` tasks and completion slot, and
    the residual capacity ``(H, R, T)`` they leave."""

    residual: np.ndarray
    tasks: dict[int, list[Task]] = field(default_factory=dict)
    completion: dict[int, int] = field(default_factory=dict)

    def release(self, view: LocalityView, jobs: Sequence[int]) -> None:
        """Take ``jobs`` out of the plan, giving their capacity back."""
        for i in jobs:
            for t, h, n in self.tasks.pop(i, []):
                self.residual[h, :, t] += view.jobs[i].demand(n)
            self.completion.pop(i, None)

    def copy(self) -> Plan:
        return Plan(self.residual.copy(), {i: list(tasks) for i, tasks in self.tasks.items()}, dict(self.completion))

    def value(self, view: LocalityView, jobs: Sequence[int]) -> float:
        """``sum w (C - a + 1)`` over ``jobs`` (an unfinished one at ``C = T``)."""
        return float(sum(view.jobs[i].weight * ((self.completion[i] - view.jobs[i].arrival + 1) if i in self.completion
                                                else view.penalty_delay(i)) for i in jobs))


def _fits(demand: np.ndarray, res: np.ndarray) -> np.ndarray:
    """Most workers (each machine's with their O3 PSs; ``demand`` (N, R) of 1..N of them) that fit on each
    machine of ``res`` (H, R)."""
    return (demand[None, :, :] <= res[:, None, :] + FIT_TOL).all(axis=2).sum(axis=1)


def stranded(res: np.ndarray, typical: np.ndarray) -> np.ndarray:
    """Per machine (rows of ``res`` (H, R)), the free capacity no typical task can use: per resource,
    in typical tasks, what is left beyond the machine's scarcest resource."""
    used = typical > 0
    units = res[:, used] / typical[used]
    return (units - units.min(axis=1, keepdims=True)).sum(axis=1)


def _place(view: LocalityView, i: int, res: np.ndarray, left: float, locality: str, rate: Rates) -> list[tuple[int, int]]:
    """Job ``i``'s placement in one slot with free capacity ``res`` (H, R): ``[(machine, workers)]``,
    the better of co-located and spread (no more workers than finish ``left`` samples), or ``[]``.

    Co-located, it takes the machine whose capacity it strands least (:func:`stranded` after minus
    before: a machine short of cores for the typical job keeps its GPUs for the jobs that need few
    cores), so that the machines' GPUs stay usable together with their cores and memory."""
    job, demand, typical = view.jobs[i], rate.demand[i], rate.typical
    n = _fits(demand, res)
    if not n.any():
        return []
    n_co = int(min(n.max(), job.w_max))
    co_work = job.q_in * n_co
    order = np.argsort(-n, kind="stable")
    take: list[tuple[int, int]] = []
    room = job.w_max
    for h in order:
        if room <= 0 or n[h] <= 0:
            break
        k = int(min(n[h], room))
        take.append((int(h), k))
        room -= k
    spread = _work(view, i, take, locality) if len(take) > 1 else 0.0
    if co_work >= spread or co_work >= left:
        need_n = n_co if co_work < left else max(1, min(n_co, math.ceil(left / job.q_in - 1e-9)))
        while need_n > 1 and job.q_in * (need_n - 1) >= left:      # the float ceiling may be one too many
            need_n -= 1
        while need_n < n_co and job.q_in * need_n < left:            # or one too few
            need_n += 1
        cand = np.flatnonzero(n >= need_n)
        waste = stranded(res[cand] - demand[need_n - 1][None, :], typical) - stranded(res[cand], typical)
        room = (res[cand] / np.where(typical > 0, typical, 1.0)).sum(axis=1)      # ties: the fullest machine (best fit)
        return [(int(cand[np.lexsort((room, np.round(waste, 9)))[0]]), need_n)]
    # spread: drop workers from the smallest shares while the rest still finishes ``left``
    while spread > left and take:
        h, k = take[-1]
        fewer = take[:-1] + ([(h, k - 1)] if k > 1 else [])
        if len(fewer) < 2 or _work(view, i, fewer, locality) < left:
            break
        take = fewer
        spread = _work(view, i, take, locality)
    return take


def _work(view: LocalityView, i: int, here: Sequence[tuple[int, int]], locality: str) -> float:
    """Samples job ``i`` trains in a slot with ``here`` = ``[(machine, workers)]`` and O3 PSs, as the checker counts
    them (:meth:`~.view.LocalityView.slot_work`; at job level its product, to the last bit, without the arrays)."""
    if locality == "job":
        job = view.jobs[i]
        return float((job.q_in if len(here) == 1 else job.q_ex) * float(sum(n for _h, n in here)))
    workers = dict(here)
    return view.sparse_slot_work(i, workers, {h: o3_ps(n, view.jobs[i].gamma) for h, n in workers.items()}, locality)


def simulate(view: LocalityView, jobs: Sequence[int], plan: Plan, locality: str, rate: Rates,
             key: np.ndarray | None = None, deadline: float | None = None) -> bool:
    """Plan ``jobs`` (none of them in ``plan``) slot by slot into ``plan``'s residual capacity, highest
    priority first: the least ``key x remaining volume per weight`` (``key`` per job, 1 by default;
    the search perturbs it).  Deterministic: ties go to the lower job index.  Past ``deadline``
    (:func:`~mlsched_opt.clock.past`) no further slot is planned (the jobs not finished by then stay
    unfinished); returns whether that happened."""
    if not jobs:
        return False
    T = view.slots
    cut = False
    idx = np.asarray(sorted(jobs), dtype=np.int64)
    arrival = np.array([view.jobs[i].arrival for i in idx])
    factor = (rate.unit_volume[idx] / np.where(rate.best[idx] > 0, rate.best[idx], 1.0) / rate.weight[idx]
              * (1.0 if key is None else key[idx]))
    smallest = np.min([view.jobs[i].demand(1) for i in idx], axis=0)
    done = np.zeros(len(idx))
    alive = np.ones(len(idx), dtype=bool)
    work_of: dict[int, dict[int, list[tuple[int, int]]]] = {}
    for t in range(int(arrival.min()), T):
        if past(deadline):
            cut = True
            break
        left = rate.need[idx] - done
        most = rate.slot_most[idx]
        slots_left = np.ceil(np.divide(left, most, out=np.full(len(idx), np.inf), where=most > 0) - 1e-9)
        alive &= slots_left <= T - t                                 # cannot finish any more: never run again
        active = np.flatnonzero(alive & (arrival <= t))
        if active.size == 0:
            if not alive.any():
                break
            continue
        res = plan.residual[:, :, t]
        for k in active[np.lexsort((idx[active], factor[active] * left[active]))]:
            if not (smallest[None, :] <= res + FIT_TOL).all(axis=1).any():
                break                                                # the slot is full for every job
            i = int(idx[k])
            here = _place(view, i, res, float(left[k]), locality, rate)
            if not here:
                continue
            for h, n in here:
                res[h] -= rate.demand[i][n - 1]
            work_of.setdefault(i, {})[t] = here
            done[k] += _work(view, i, here, locality)
            if done[k] >= rate.need[i]:
                alive[k] = False
                plan.completion[i] = t
    _keep_finished(view, plan, work_of)                             # one that ran but never finished gives its capacity back
    return cut


def follow(view: LocalityView, planned: Mapping[int, Sequence[int]], plan: Plan, locality: str, rate: Rates,
           deadline: float | None = None) -> int:
    """Realize a pooled plan (per job the slots it runs in, e.g. the column the restricted master
    picked, :mod:`.exact`) on the machines of ``plan`` (none of the jobs in it yet), slot by slot:
    a job runs in its planned slots and, once a planned slot found no room, in the next slots until it
    has caught up; in each slot the job due to finish first goes first (ties: the lower index), placed
    as :func:`simulate` places it.  Jobs that do not finish are left out (their capacity given back).
    Returns how many planned job-slots found no room."""
    T = view.slots
    due = {i: max(slots) for i, slots in planned.items() if slots}
    by_slot: dict[int, list[int]] = {}
    for i, slots in planned.items():
        for t in slots:
            by_slot.setdefault(int(t), []).append(i)
    done = dict.fromkeys(due, 0.0)
    behind = dict.fromkeys(due, 0)
    late: set[int] = set()                                             # jobs with a missed planned slot
    missed = 0
    work_of: dict[int, dict[int, list[tuple[int, int]]]] = {}
    for t in range(min((view.jobs[i].arrival for i in due), default=T), T):
        if past(deadline):
            break
        here_now = {i for i in by_slot.get(t, ()) if i not in plan.completion} | {i for i in late if i not in plan.completion}
        res = plan.residual[:, :, t]
        for i in sorted(here_now, key=lambda j: (due[j], j)):
            if view.jobs[i].arrival > t:
                continue
            planned_here = t in planned[i]
            place = _place(view, i, res, rate.need[i] - done[i], locality, rate)
            if not place:
                if planned_here:
                    behind[i] += 1
                    late.add(i)
                    missed += 1
                continue
            for h, n in place:
                res[h] -= rate.demand[i][n - 1]
            work_of.setdefault(i, {})[t] = place
            done[i] += _work(view, i, place, locality)
            if not planned_here:
                behind[i] -= 1
                if behind[i] <= 0:
                    late.discard(i)
            if done[i] >= rate.need[i]:
                plan.completion[i] = t
                late.discard(i)
    _keep_finished(view, plan, work_of)
    return missed


def _keep_finished(view: LocalityView, plan: Plan, work_of: Mapping[int, Mapping[int, list[tuple[int, int]]]]) -> None:
    """The tasks of the jobs that finished into ``plan``; the capacity of those that did not, back."""
    for i, by_slot in work_of.items():
        tasks = [(t, h, n) for t, place in sorted(by_slot.items()) for h, n in place]
        if i in plan.completion:
            plan.tasks[i] = tasks
        else:
            for t, h, n in tasks:
                plan.residual[h, :, t] += view.jobs[i].demand(n)


def empty_plan(view: LocalityView) -> Plan:
    return Plan(np.repeat(view.capacity[:, :, None], view.slots, axis=2).astype(float))


#: The last complete ``srpt`` plan, by (instance hash, locality): ``--method exact`` runs srpt as its quick start
#: and again in its search, and an approximation's certified ratio runs the bound, which starts from it.
_LAST: dict[tuple[str, str], Plan] = {}


def srpt_plan(view: LocalityView, locality: str, deadline: float | None = None, key: str | None = None) -> tuple[Plan, bool]:
    """The ``srpt`` schedule of every job on the empty cluster, and whether ``deadline`` cut it short; with
    ``key`` (the instance's hash) the last complete one of the same instance is reused (a copy)."""
    cached = None if key is None else _LAST.get((key, locality))   # one look-up: a bench thread may replace it meanwhile
    if cached is not None:
        return cached.copy(), False
    plan = empty_plan(view)
    cut = simulate(view, range(len(view.jobs)), plan, locality, rates(view, locality), deadline=deadline)
    if key is not None and not cut:
        _LAST.clear()
        _LAST[key, locality] = plan.copy()
    return plan, cut


def plan_decision(view: LocalityView, plan: Plan, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The decision of ``plan``: each finished job's tasks with O3 PSs beside its workers."""
    return decision(view, o3_placement(view, {i: plan.tasks[i] for i in plan.completion}), plan.completion, extra)


def run_srpt(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    started = time.perf_counter()
    view = locality_view(instance)
    check_size(view, instance.file)
    progress(0, 1, "schedules")
    plan, cut = srpt_plan(view, options["locality"], started + float(solve_options.time_limit), instance.sha256)
    progress(1, 1, "schedules")
    value = total_delay(view, plan.completion)
    message = f"{len(plan.completion)}/{len(view.jobs)} jobs finish"
    if cut:
        message += "; cut short at the time limit: the jobs not finished by then are left unfinished"
    report = heuristic_report("min", value, time.perf_counter() - started, "srpt", dict(options), message)
    return MethodResult(report, plan_decision(view, plan))
