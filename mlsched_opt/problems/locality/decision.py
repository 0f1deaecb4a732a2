"""The locality family's answers: the decision a method writes (slots up to each job's completion),
when a job's work is done at the true rates, and what a decision is worth.  Algorithms import this
module, never the Pyomo formulation, to write their answer."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...io.instance import Instance
from ...tolerances import work_done_threshold
from .view import LocalityView, locality_view, o3_ps, total_delay

#: the largest exact model (job, slot, machine, workers patterns) :func:`.formulation.build_model` builds
MAX_EXACT_CELLS = 50_000
#: (slot, machine, workers): one task of a schedule
Task = tuple[int, int, int]
Placement = Mapping[int, Mapping[int, tuple[Mapping[int, int], Mapping[int, int]]]]


def model_cells(view: LocalityView) -> int:
    """The exact model's (job, slot, machine, workers) patterns, the size :data:`MAX_EXACT_CELLS` caps."""
    return sum((view.slots - job.arrival) * job.w_max for job in view.jobs) * view.H


def decision(view: LocalityView, placement: Placement, completion: Mapping[int, int],
             extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Slots up to each job's completion (unfinished jobs: none); ``placement``: job -> slot -> (workers, PSs) per machine."""
    schedule: dict[str, list[dict[str, Any]]] = {}
    migrations: dict[str, int] = {}
    for i, job in enumerate(view.jobs):
        if i not in completion:
            continue
        by_slot = {t: here for t, here in placement.get(i, {}).items() if t <= completion[i]}
        entries = []
        for t in sorted(by_slot):
            workers, ps = by_slot[t]
            entries.append({"slot": int(t),
                            "workers": {view.servers[h]: int(n) for h, n in sorted(workers.items()) if n},
                            "ps": {view.servers[h]: int(n) for h, n in sorted(ps.items()) if n}})
        schedule[job.id] = entries
        machines = [frozenset(h for h, n in {**by_slot[t][0], **by_slot[t][1]}.items() if n) for t in sorted(by_slot)]
        migrations[job.id] = sum(a != b for a, b in itertools.pairwise(machines))
    done = sorted(completion)
    return {
        "admitted": [view.jobs[i].id for i in done],
        "schedule": schedule,
        "extra": {
            "completion": {view.jobs[i].id: int(completion[i]) for i in done},
            "unfinished": [j.id for i, j in enumerate(view.jobs) if i not in completion],
            "migrations": migrations,
            **dict(extra or {}),
        },
    }


def executed(view: LocalityView, i: int, by_slot: Mapping[int, tuple[Mapping[int, int], Mapping[int, int]]],
             locality: str = "job") -> int | None:
    """First slot whose cumulative work at the true rates (as the checker counts it) reaches ``V``."""
    done = 0.0
    for t in sorted(by_slot):
        w, s = np.zeros(view.H), np.zeros(view.H)
        for h, n in by_slot[t][0].items():
            w[h] += n
        for h, n in by_slot[t][1].items():
            s[h] += n
        done += view.slot_work(i, w, s, locality)
        if done >= work_done_threshold(view.jobs[i].work):  # the checker's rule
            return t
    return None


def rescore(instance: Instance, options: Mapping[str, Any], decision: Mapping[str, Any]) -> float:
    view = locality_view(instance)
    index = {job.id: i for i, job in enumerate(view.jobs)}
    return total_delay(view, {index[j]: t for j, t in decision["extra"]["completion"].items()})


def o3_placement(view: LocalityView, tasks: Mapping[int, list[Task]]) -> dict[int, dict[int, tuple[dict[int, int], dict[int, int]]]]:
    """``(slot, machine, workers)`` triples -> per slot workers and PSs, PSs beside their workers (observation O3)."""
    out: dict[int, dict[int, tuple[dict[int, int], dict[int, int]]]] = {}
    for i, triples in tasks.items():
        for t, h, n in triples:
            workers, ps = out.setdefault(i, {}).setdefault(t, ({}, {}))
            workers[h] = workers.get(h, 0) + n
            ps[h] = o3_ps(workers[h], view.jobs[i].gamma)
    return out
