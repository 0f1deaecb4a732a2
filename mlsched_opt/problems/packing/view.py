"""The packing family's view of an instance: fixed-size jobs, servers, and who may go where."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InstanceError
from ...io.instance import Instance, Job
from ...tolerances import core_capacity_limit


@dataclass(frozen=True)
class PackingView:
    """Arrays for one packing instance.

    ``tasks[j] = (workers, ps)``; ``demand[task]`` has shape (jobs, resources);
    ``eligible[task]`` is a boolean (jobs, servers) mask: the server may host one such task of
    the job by role, GPU model and size.
    """

    instance: Instance
    resources: list[str]
    capacity: np.ndarray
    workers: np.ndarray
    ps: np.ndarray
    demand: dict[str, np.ndarray]
    eligible: dict[str, np.ndarray]

    @property
    def jobs(self) -> tuple[Job, ...]:
        return self.instance.jobs

    def count(self, task: str) -> np.ndarray:
        return self.workers if task == "worker" else self.ps

    def pairs(self) -> int:
        """How many (task kind, job, server) columns the exact model has: eligible pairs of jobs with such tasks."""
        return sum(int(self.eligible[t][self.count(t) > 0].sum()) for t in ("worker", "ps"))

    def size(self) -> np.ndarray:
        """Each job's total demand as a fraction of the cluster, summed over resources (FFD's sort key)."""
        total = self.capacity.sum(axis=0)
        share = np.divide(1.0, total, out=np.zeros_like(total), where=total > 0)
        return (self.workers[:, None] * self.demand["worker"] + self.ps[:, None] * self.demand["ps"]) @ share


def packing_view(instance: Instance) -> PackingView:
    """Build the view; every job needs a fixed worker count and a fixed PS count."""
    for job in instance.jobs:
        for task, rng in (("workers", job.workers), ("ps", job.ps)):
            if not rng.fixed:
                raise InstanceError(
                    f"problem 'packing' needs a fixed {task} count ({task} = {{count = n}}); got min {rng.lo}, max {rng.hi}",
                    instance.file, f"{job.path}.{task}")
    resources = instance.resource_names()
    capacity = instance.capacity_matrix(resources)
    demand = {task: instance.demand_matrix(task, resources) for task in ("worker", "ps")}
    eligible = {task: _fits(demand[task], capacity) & _may_run(instance, task) for task in ("worker", "ps")}
    return PackingView(
        instance=instance, resources=resources, capacity=capacity,
        workers=np.array([j.workers.lo for j in instance.jobs], dtype=int),
        ps=np.array([j.ps.lo for j in instance.jobs], dtype=int),
        demand=demand, eligible=eligible,
    )


def _fits(demand: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """(jobs, servers): one task fits on the empty server; per distinct server capacity, so the
    work is jobs x shapes x resources (a real cluster has a handful of shapes), not jobs x servers."""
    shapes, which = np.unique(capacity, axis=0, return_inverse=True)
    fits = np.all(demand[:, None, :] <= shapes[None, :, :] + 1e-9, axis=2)
    return fits[:, which.ravel()]


def _may_run(instance: Instance, task: str) -> np.ndarray:
    """(jobs, servers): :meth:`Job.may_run_on` by role and GPU model, per distinct ``gpu_models``."""
    servers = instance.servers
    role = np.array([s.hosts(task) for s in servers], dtype=bool)
    out = np.broadcast_to(role, (len(instance.jobs), len(servers))).copy()
    if task == "ps":
        return out
    models = np.array([s.gpu_model or "" for s in servers], dtype=object)
    masks: dict[tuple[str, ...], np.ndarray] = {}
    for i, job in enumerate(instance.jobs):
        if job.gpu_models is not None:
            if job.gpu_models not in masks:
                masks[job.gpu_models] = np.isin(models, list(job.gpu_models)) & np.array([s.gpu_model is not None for s in servers])
            out[i] &= masks[job.gpu_models]
    return out


def diagnose(instance: Instance, options: Mapping[str, Any]) -> str | None:
    """An obvious reason why every job cannot be placed: a resource demanded beyond the cluster's total."""
    if options.get("objective") != "servers":
        return None  # admitting nothing is always feasible
    view = packing_view(instance)
    need = view.workers @ view.demand["worker"] + view.ps @ view.demand["ps"]
    have = view.capacity.sum(axis=0)
    short = [f"{r} {need[i]:g} > {have[i]:g}" for i, r in enumerate(view.resources) if need[i] > have[i] + 1e-9]
    if short:
        return "all jobs together need more than the cluster has: " + ", ".join(short)
    return None


def checker_limits(view: PackingView) -> PackingView:
    """``view`` with every capacity replaced by the largest load the checker accepts
    (:func:`.tolerances.core_capacity_limit`: ``cap + CHECK_TOL max(1, cap)``) and the eligibility
    recomputed on it, for the exact models (Pyomo and arrays) and their relaxations: on integer
    counts they then accept exactly the placements the checker accepts.  The heuristics keep the
    view's strict capacities (their answers stay within the limits)."""
    limit = core_capacity_limit(view.capacity)
    eligible = {task: _fits(view.demand[task], limit) & _may_run(view.instance, task) for task in ("worker", "ps")}
    return dataclasses.replace(view, capacity=limit, eligible=eligible)
