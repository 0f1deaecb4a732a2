"""The oasis family's answers: the decision a method writes (admitted jobs and their schedules),
the fewest worker-slots the checker accepts as a job's work, and the exact model's size (computed
without building it).  Algorithms import this module, never the Pyomo formulation, to write their answer."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...tolerances import capacity_limit, work_done_threshold
from .online import SlotRun
from .view import OasisJob, OasisView, TaskCounts, fit_counts

#: Largest offline model built (our design): Pyomo takes minutes to build one of this size.
MAX_VARIABLES = 2_000_000


def worker_slots_needed(job: OasisJob) -> int:
    """Fewest whole worker-slots of ``job`` the checker accepts as its work (2), for the exact model.

    The checker counts a job's integer worker-slots ``done`` and accepts ``done >=
    work_done_threshold(work)`` (the shared formula and tolerance), so the least integer is the
    exact ceiling of that float: no rounding guard, which would only ever demand a worker-slot
    more (``ceil(work - 1e-9)`` was 3 for ``work = 2.0000005`` where the checker accepts 2).  At least
    one for any work: a completion needs a worker in its slot (the checker scores only a job that ran),
    which ``runs_at_completion`` asks anyway.  (:attr:`.view.OasisJob.work_slots`, which the OASiS
    heuristics plan with, may be one more: a restriction of theirs, never the exact model's.)
    """
    return max(math.ceil(work_done_threshold(job.work)), 1 if job.work > 0 else 0)


def _task_bound(job: OasisJob, capacity: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Most tasks of ``demand`` per server within the load the checker accepts (:func:`capacity_limit`)."""
    return np.minimum(fit_counts(capacity_limit(capacity), demand), job.hi if job.runnable else 0)


def _bounds(view: OasisView) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Most workers per worker server and PSs per PS server of every job (0: no variable)."""
    jobs = exact_jobs(view)
    return ({j.index: _task_bound(j, view.worker_capacity, j.worker) * j.worker_ok for j in jobs},
            {j.index: _task_bound(j, view.ps_capacity, j.ps) * j.ps_ok for j in jobs})


def model_size(view: OasisView, wbound: dict[int, np.ndarray] | None = None, pbound: dict[int, np.ndarray] | None = None) -> int:
    """Variables of the offline MILP (worker, PS and completion variables), without building it."""
    if wbound is None or pbound is None:
        wbound, pbound = _bounds(view)
    return sum((int(np.count_nonzero(wbound[j.index])) + int(np.count_nonzero(pbound[j.index])) + 1) * (view.slots - j.arrival)
               for j in view.jobs)


def decision(view: OasisView, outcome: SlotRun, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The shared solution vocabulary: completed jobs are ``admitted``; started but unfinished jobs
    are listed in ``extra.unfinished`` with their schedules (they used capacity and earn nothing)."""
    schedule: dict[str, list[dict[str, Any]]] = {}
    nothing = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    for i in sorted(set(outcome.workers) | set(outcome.ps)):
        w = outcome.workers.get(i, TaskCounts(view.H, view.slots)).entries
        z = outcome.ps.get(i, TaskCounts(view.K, view.slots)).entries
        entries = []
        for t in sorted(set(w) | set(z)):
            (wh, wc), (zk, zc) = w.get(t, nothing), z.get(t, nothing)
            entries.append({"slot": int(t),
                            "workers": {view.worker_servers[h]: int(c) for h, c in zip(wh, wc)},
                            "ps": {view.ps_servers[k]: int(c) for k, c in zip(zk, zc)}})
        schedule[view.jobs[i].id] = entries
    done = sorted(outcome.completion)
    started = sorted((set(outcome.workers) | set(outcome.ps)) - set(done))
    rejected = sorted(j.index for j in view.jobs if j.index not in outcome.admitted)
    return {
        "admitted": [view.jobs[i].id for i in done],
        "schedule": schedule,
        "extra": {
            "completion": {view.jobs[i].id: int(outcome.completion[i]) for i in done},
            "unfinished": [view.jobs[i].id for i in started],
            "rejected": [view.jobs[i].id for i in rejected],
            **dict(extra or {}),
        },
    }


def exact_jobs(view: OasisView) -> list[OasisJob]:
    """The view's jobs with ``fit`` (hence ``hi`` and ``runnable``) recomputed on the checker's capacity
    limits (:func:`capacity_limit`): the view's ``fit`` counts the workers within the strict capacity, a
    restriction the heuristics may keep but the exact model must not (it would lose accepted counts)."""
    limit = capacity_limit(view.worker_capacity)
    out = []
    for job in view.jobs:
        fit = None if not (job.worker > 0).any() else int(np.sum(np.where(job.worker_ok, fit_counts(limit, job.worker), 0)))
        out.append(dataclasses.replace(job, fit=fit))
    return out


