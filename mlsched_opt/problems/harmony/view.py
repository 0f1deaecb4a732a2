"""The harmony family's view of an instance: identical servers, fixed-size jobs, an interference world.

Spec ``papers/004_harmony.md`` section 1 (our design where the spec says [PROP]).  Per job:

* ``model``: a workload type of the chosen world (``default``/``hard``: catalog entries with an
  ``[interference]`` section; ``gavel``: the types Gavel measured in pairs);
* ``architecture``: ``ps`` or ``allreduce``; ``workers`` and ``ps`` fixed counts (Harmony does not
  size jobs: ``min`` must equal ``max``);
* ``work = {epochs, samples_per_epoch}``; ``arrival_slot``: the scheduling interval it arrives in;
* ``demand.worker`` / ``demand.ps`` per task.

Time is in scheduling intervals of ``time.slot_s`` seconds; ``time.slots`` bounds the arrivals
only (the simulation runs until every job has finished).  The objective is the average JCT,
finish - arrival, in intervals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np

from ...errors import InstanceError, OptionError
from ...io.catalog import Catalog, load_catalog
from ...io.instance import Instance
from .options import WORLDS
from .world import Jobs, World, interference_types, world_from_catalog


def make_world(name: str, catalog: Catalog | None = None) -> World:
    """The world called ``name`` (``default``, ``hard`` or ``gavel``)."""
    if name not in WORLDS:
        raise OptionError(f"world must be one of {', '.join(WORLDS)}, got {name!r}", field="--set world")
    return _world(name, str((catalog or load_catalog()).directory))


@cache
def _world(name: str, directory: str) -> World:
    catalog = load_catalog(directory)
    if name == "gavel":
        from .gavel_fit import fitted_world

        return fitted_world(catalog).world
    base = world_from_catalog(catalog, interference_types(catalog))
    return base.harder() if name == "hard" else base


@dataclass(frozen=True)
class HarmonyView:
    """Arrays over jobs (J) and servers (M) for the simulator, the baselines and the exact search."""

    world: World
    ids: tuple[str, ...]
    servers: tuple[str, ...]
    resources: tuple[str, ...]
    capacity: np.ndarray      # (M, K)
    jobs: Jobs
    worker_demand: np.ndarray  # (J, K)
    ps_demand: np.ndarray      # (J, K)
    samples: np.ndarray        # (J,) total samples to train
    arrival: np.ndarray        # (J,) interval of arrival
    slot_s: float

    @property
    def J(self) -> int:
        return len(self.ids)

    @property
    def M(self) -> int:
        return len(self.servers)

    @property
    def static(self) -> bool:
        """All jobs arrive in interval 0 (a static batch, spec section 6a)."""
        return bool((self.arrival == 0).all())

    def demand(self, role: str) -> np.ndarray:
        return self.worker_demand if role == "worker" else self.ps_demand


def view_of(instance: Instance, options: Mapping, require_fit: bool = True) -> HarmonyView:
    """Validate ``instance`` for the harmony family and build its arrays (errors name the field).

    With ``require_fit`` (the simulating methods) a job that fits no empty cluster is an
    :class:`InstanceError`; the exact search (which answers ``infeasible``) and the checker (which
    reports violations) pass ``False``.
    """
    world = make_world(options.get("world", "default"), instance.catalog)
    file = instance.file
    resources = tuple(instance.resource_names())
    cap = instance.capacity_matrix(list(resources))
    for s in instance.servers:
        if s.role != "any":
            raise InstanceError(f"harmony places workers and PSs on any server; server {s.name!r} has role {s.role!r}",
                                file, "cluster.servers")
    kinds, is_ps, W, P, samples = [], [], [], [], []
    for job in instance.jobs:
        if job.model is None:
            raise InstanceError("harmony jobs name a workload type (model) of the interference world", file, f"{job.path}.model")
        if job.model not in world.types:
            raise InstanceError(f"model {job.model!r} is not a type of the {world.name!r} world (types: {', '.join(world.types)})",
                                file, f"{job.path}.model")
        if job.workers.lo != job.workers.hi:
            raise InstanceError("Harmony does not size jobs: give a fixed worker count (workers = {count = W})", file,
                                f"{job.path}.workers")
        if job.ps.lo != job.ps.hi:
            raise InstanceError("Harmony does not size jobs: give a fixed PS count (ps = {count = P})", file, f"{job.path}.ps")
        if job.architecture == "ps" and job.ps.hi == 0:
            raise InstanceError("a parameter-server job needs at least one PS (or architecture = 'allreduce')", file, f"{job.path}.ps")
        work = job.work or {}
        if "epochs" not in work or "samples_per_epoch" not in work:
            raise InstanceError("harmony needs work = {epochs, samples_per_epoch}", file, f"{job.path}.work")
        kinds.append(world.index(job.model))
        is_ps.append(job.architecture == "ps")
        W.append(job.workers.hi)
        P.append(job.ps.hi)
        samples.append(float(work["epochs"]) * float(work["samples_per_epoch"]))
    wd = instance.demand_matrix("worker", list(resources))
    pd = instance.demand_matrix("ps", list(resources))
    view = HarmonyView(
        world=world, ids=tuple(j.id for j in instance.jobs), servers=tuple(s.name for s in instance.servers),
        resources=resources, capacity=cap, jobs=Jobs.of(kinds, is_ps, W, P), worker_demand=wd, ps_demand=pd,
        samples=np.array(samples), arrival=np.array([j.arrival_slot for j in instance.jobs]), slot_s=instance.slot_s,
    )
    for i, job in enumerate(instance.jobs):
        reason = gang_misfit(view, i) if require_fit else None
        if reason:
            raise InstanceError(f"the job can never start: {reason}", file, f"{job.path}.workers")
    return view




def gang_misfit(view: HarmonyView, i: int) -> str | None:
    return None if empty_cluster_placement(view, i) is not None else (
        f"{int(view.jobs.W[i])} workers and {int(view.jobs.P[i])} PSs exceed the empty cluster's capacity")


def empty_cluster_placement(view: HarmonyView, i: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Job ``i``'s workers and PSs per server on the empty cluster, or ``None`` when they do not fit.

    Greedy (:func:`greedy_gang`): each task goes to the server with the most free capacity.  The
    simulator uses the same placement as its fallback when a policy cannot start a job on an
    empty cluster, so every accepted job is sure to run.
    """
    return greedy_gang(view.capacity, view.demand("worker")[i], int(view.jobs.W[i]),
                       view.demand("ps")[i], int(view.jobs.P[i]))


def greedy_gang(capacity: np.ndarray, worker: np.ndarray, W: int, ps: np.ndarray, P: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``W`` workers then ``P`` PSs on servers of ``capacity`` (servers x resources), each task on
    the server with the most free capacity (shares of the largest server's) where it fits: the
    counts per server, or ``None`` when a task fits nowhere."""
    free = np.array(capacity, dtype=float)
    scale = np.maximum(free.max(axis=0), 1e-12)
    counts = (np.zeros(len(free), int), np.zeros(len(free), int))
    for d, count, placed in ((worker, W, counts[0]), (ps, P, counts[1])):
        for _ in range(count):
            fits = np.all(free >= d - 1e-9, axis=1)
            if not fits.any():
                return None
            m = int(np.argmax(np.where(fits, (free / scale).sum(axis=1), -np.inf)))
            free[m] -= d
            placed[m] += 1
    return counts
