"""The OASiS family's view of an instance: two server pools, slotted time, jobs in worker-slots.

Model of Bao, Peng, Wu, Li (INFOCOM 2018), spec ``papers/000_oasis.md`` section 1.  Workers
run only on ``role = "worker"`` servers and parameter servers only on ``role = "ps"``
servers (the two pools are disjoint, section 1.1).  A job's work is
``E N M (tau + 2e/b)`` worker-slots (asynchronous SGD: each worker adds one worker-slot of
work per slot, so speed is linear in the worker count); it runs at most ``N`` workers per slot
(the instance's ``workers.max`` when smaller than ``chunks``), needs ``ceil(y b / B)`` PSs for
``y`` workers and never more PSs than workers.

Instance fields (section 1.2): ``work = {epochs, chunks, minibatches_per_chunk}`` gives E, N,
M; ``step.compute_s`` is tau in seconds, ``step.gradient_mb`` is e (default: the catalog
model's gradient size), b and B are ``step.worker_bandwidth_gbps`` / ``step.ps_bandwidth_gbps``
or else the worker's and the PS's ``demand.*.bandwidth_gbps``.  Push and pull each move e
over b, so one mini-batch takes ``tau + 2 e 8/1000 / b`` seconds (MB to Gbit).

Size ranges (our reading of the instance's ``workers = {min, max}`` and ``ps = {min, max}``; the
paper has only the cap (3) and the PS rules (6)-(7)): in every slot in which a job runs (has at
least one worker), its worker count ``Y`` lies in ``[workers.min, cap]`` with
``cap = min(N, workers.max)`` and its PS count ``Z`` in ``[ps.min, ps.max]``, besides
``Y b <= Z B`` (6) and ``Z <= Y`` (7); a slot without workers has no PSs (7).  So the worker counts
a job can run at form the interval ``[lo, hi]`` with ``lo = max(1, workers.min, ps.min)`` and
``hi = min(cap, floor(ps.max B / b))`` (empty when ``lo > hi``: such a job can never run and is never
admitted), and ``y`` workers need ``max(ps.min, ceil(y b / B))`` PSs at the fewest.  With the
defaults (``min = 1``, ``ps.max = workers.max``) the rule adds nothing to the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InstanceError
from ...io.instance import Instance, Job, Server, Utility
from ...tolerances import capacity_limit
from ..rounding import ceil, floor

#: Sizes refused up front (our design, so that no loop or array is driven by an unbounded input):
#: the horizon, the per-slot arrays ``slots x servers x resources`` (load and price of every pool,
#: the checker's load) every method keeps, and the worker count one job can reach in a slot (``hi``).
#: Schedules are sparse (a job's slots and servers with tasks), so the job count is not in the cells;
#: the exact model, which does grow with jobs x slots x servers, has its own limit
#: (:data:`.decision.MAX_VARIABLES`).  The paper's largest setting (T = 300, 100 servers,
#: 400 jobs, N <= 100) and the Alibaba cluster (1,523 servers, 51 slots, 5 resources) are far inside.
MAX_SLOTS = 100_000
MAX_CELLS = 50_000_000
MAX_TASKS = 100_000
MAX_WORK = 1e15




@dataclass(frozen=True)
class OasisJob:
    """One job in OASiS's terms.

    ``rho`` is the worker-slots needed to train one chunk once (``M (tau + 2e/b)`` in slots);
    ``chunks`` is ``D = E N`` chunk-trainings and ``work`` the ``E N rho`` worker-slots of (2).
    ``worker``/``ps`` are demand vectors over :attr:`OasisView.resources`; ``worker_ok`` and
    ``ps_ok`` mark the worker and PS servers this job may use.
    """

    index: int
    id: str
    arrival: int
    epochs: int
    chunks: int
    cap: int
    rho: float
    b: float
    B: float
    worker: np.ndarray
    ps: np.ndarray
    worker_ok: np.ndarray
    ps_ok: np.ndarray
    utility: Utility
    workers_min: int = 1
    ps_min: int = 1
    ps_max: int | None = None
    fit: int | None = None

    @property
    def work(self) -> float:
        return self.chunks * self.rho

    @property
    def work_slots(self) -> int:
        """Whole worker-slots needed: (2) with integer worker counts.  At least one for any work:
        a job whose work is below the rounding guard (a tiny step over a long slot) still has to
        run to complete, and a job that never runs completes in no slot and earns nothing."""
        return max(ceil(self.work), 1 if self.work > 0 else 0)

    @property
    def min_duration(self) -> int:
        """Fewest slots the job can take at the most workers its sizes allow (``ceil(E rho)`` when that is N);
        the cluster's capacity is not considered, as in the paper's (23)."""
        return ceil(self.work_slots / max(self.size_hi, 1))

    @property
    def lo(self) -> int:
        """Fewest workers in a slot the job runs in (module docstring: the size ranges)."""
        return max(1, self.workers_min, self.ps_min)

    @property
    def size_hi(self) -> int:
        """Most workers the size ranges allow in a slot: the cap, and no more than ``ps.max`` PSs can serve (6)."""
        if self.ps_max is None:
            return self.cap
        # the most workers the checker's bandwidth rule lets ps.max PSs serve (its float test, stepped
        # from the estimate, so that no rounding of the quotient decides a count)
        limit = capacity_limit(self.ps_max * self.B)
        y = floor(limit / self.b)
        while y > 0 and y * self.b > limit:
            y -= 1
        while (y + 1) * self.b <= limit and y < self.cap:
            y += 1
        return int(min(self.cap, y))

    @property
    def hi(self) -> int:
        """Most workers in a slot: :attr:`size_hi`, and no more than the empty eligible worker servers hold
        (``fit``: a capacity bound, so no feasible count is lost)."""
        return self.size_hi if self.fit is None else min(self.size_hi, self.fit)

    @property
    def runnable(self) -> bool:
        return self.lo <= self.hi

    def ps_needed(self, workers):
        """Fewest PSs for ``workers`` workers: enough bandwidth (6), ``ps.min``, never more than the workers (7).

        0 for 0 workers; meaningful for ``lo <= workers <= hi`` (elsewhere no PS count is allowed)."""
        y = np.asarray(workers)
        need = np.minimum(np.maximum(ceil(y * self.b / self.B), self.ps_min), y)
        return np.where(y > 0, need, 0) if need.ndim else (int(need) if y > 0 else 0)

    def value(self, completion_slot):
        """Utility of finishing in ``completion_slot`` (delay counted from the arrival slot)."""
        return self.utility(np.asarray(completion_slot) - self.arrival)


@dataclass(frozen=True)
class OasisView:
    """Slots ``0..T-1``; worker servers ``H`` and PS servers ``K`` with capacities ``(n, R)``."""

    slots: int
    resources: list[str]
    worker_servers: list[str]
    ps_servers: list[str]
    worker_capacity: np.ndarray
    ps_capacity: np.ndarray
    jobs: list[OasisJob]

    @property
    def H(self) -> int:
        return len(self.worker_servers)

    @property
    def K(self) -> int:
        return len(self.ps_servers)

    def job(self, job_id: str) -> OasisJob:
        return next(j for j in self.jobs if j.id == job_id)


def oasis_view(instance: Instance, ranges: str = "instance") -> OasisView:
    """Read the instance as OASiS needs it; a missing or inconsistent field is an :class:`InstanceError`.

    ``ranges="paper"`` drops ``workers.min``, ``ps.min`` and ``ps.max`` (they read as 1, 1, none)."""
    file = instance.file
    if instance.slots is None:
        raise InstanceError("problem 'oasis' is slotted; set time.slots", file, "time.slots")
    if instance.slots > MAX_SLOTS:
        raise InstanceError(f"problem 'oasis' handles at most {MAX_SLOTS} slots, got {instance.slots}", file, "time.slots")
    for server in instance.servers:
        if server.role == "any":
            raise InstanceError("problem 'oasis' keeps workers and parameter servers on disjoint pools; set role = 'worker' or 'ps'",
                                file, f"{server.field_path}.role")
    workers = [s for s in instance.servers if s.role == "worker"]
    ps = [s for s in instance.servers if s.role == "ps"]
    if not workers:
        raise InstanceError("problem 'oasis' needs at least one server with role = 'worker'", file, "cluster.servers")
    resources = instance.resource_names()
    cells = instance.slots * len(instance.servers) * len(resources)
    if cells > MAX_CELLS:
        raise InstanceError(f"problem 'oasis' keeps slots x servers x resources = {cells} per-slot cells, "
                            f"more than its limit {MAX_CELLS}; use fewer slots or servers", file, "time.slots")
    pools = _Pools(_capacity(workers, resources), np.array([s.gpu_model for s in workers], dtype=object), len(ps))
    jobs = [_job(instance, job, resources, pools, ranges == "instance") for job in instance.jobs]
    if not ps and any(j.work > 0 for j in jobs):
        raise InstanceError("problem 'oasis' needs at least one server with role = 'ps'", file, "cluster.servers")
    for j in jobs:
        if j.hi > MAX_TASKS:
            raise InstanceError(f"job {j.id} could run {j.hi} workers in one slot; problem 'oasis' handles at most {MAX_TASKS} "
                                "(lower workers.max)", file, f"jobs[{j.index}].workers")
    return OasisView(instance.slots, resources, [s.name for s in workers], [s.name for s in ps], pools.worker_capacity,
                     _capacity(ps, resources), jobs)


def _capacity(servers: list[Server], resources: list[str]) -> np.ndarray:
    return np.array([[s.capacity.get(r, 0.0) for r in resources] for s in servers], dtype=float).reshape(len(servers), len(resources))


class _Pools:
    """What every job's eligibility and fit are computed from, once per instance: the worker servers'
    capacities and GPU models (PS servers host any job's PSs).  Jobs share few distinct demands and
    GPU-model lists, so masks and fits are cached per distinct value instead of looping per (job, server)."""

    def __init__(self, worker_capacity: np.ndarray, gpu_model: np.ndarray, ps_count: int):
        self.worker_capacity = worker_capacity
        self.gpu_model = gpu_model
        self.ps_ok = np.ones(ps_count, dtype=bool)
        self.ps_ok.flags.writeable = False
        self._masks: dict[tuple[str, ...] | None, np.ndarray] = {}
        self._fits: dict[tuple[bytes, tuple[str, ...] | None], int | None] = {}

    def worker_ok(self, gpu_models: tuple[str, ...] | None) -> np.ndarray:
        """Workers may use the worker servers of the job's GPU models (any when it names none), as
        :meth:`Job.may_run_on` says for a ``role = "worker"`` server."""
        if gpu_models not in self._masks:
            ok = np.array([gpu_models is None or m in gpu_models for m in self.gpu_model], dtype=bool)
            ok.flags.writeable = False  # shared by every job with these GPU models
            self._masks[gpu_models] = ok
        return self._masks[gpu_models]

    def fit(self, demand: np.ndarray, gpu_models: tuple[str, ...] | None) -> int | None:
        """Workers of ``demand`` that fit on the empty eligible servers (None when a worker demands nothing)."""
        key = (demand.tobytes(), gpu_models)
        if key not in self._fits:
            ok = self.worker_ok(gpu_models)
            self._fits[key] = None if not (demand > 0).any() else int(np.sum(np.where(ok, fit_counts(self.worker_capacity, demand), 0)))
        return self._fits[key]


def _job(instance: Instance, job: Job, resources: list[str], pools: _Pools, ranged: bool = True) -> OasisJob:
    file = instance.file

    def need(what: str, field: str) -> InstanceError:
        return InstanceError(f"problem 'oasis' needs {what}", file, f"{job.path}.{field}")

    if job.architecture != "ps":
        raise InstanceError("problem 'oasis' schedules parameter-server jobs; this one is all-reduce", file, f"{job.path}.architecture")
    if job.work is None or "chunks" not in job.work:
        raise need("work = {epochs, chunks, minibatches_per_chunk}", "work")
    if job.step is None:
        raise need("step = {compute_s = ...} (gradient time of one mini-batch on one worker)", "step")
    if job.utility is None:
        raise need("a utility of the completion delay", "utility")
    if job.utility.delay_unit != "slots":
        raise InstanceError("OASiS utilities are functions of the delay in slots; set delay_unit = 'slots'", file,
                            f"{job.path}.utility.delay_unit")
    step = job.step
    gradient_mb = step.get("gradient_mb", job.workload.gradient_mb if job.workload is not None else None)
    if gradient_mb is None:
        raise need("step.gradient_mb (or a catalog model with a gradient size)", "step.gradient_mb")
    b = step.get("worker_bandwidth_gbps", job.worker_demand.get("bandwidth_gbps"))
    if not b:
        raise need("the worker's bandwidth: step.worker_bandwidth_gbps or demand.worker.bandwidth_gbps > 0", "step.worker_bandwidth_gbps")
    B = step.get("ps_bandwidth_gbps", job.ps_demand.get("bandwidth_gbps"))
    if not B:
        raise need("the PS's bandwidth: step.ps_bandwidth_gbps or demand.ps.bandwidth_gbps > 0", "step.ps_bandwidth_gbps")
    if b > B:
        # (7) caps PSs at the worker count, so ceil(y b/B) <= y needs B >= b (spec pitfall 12)
        raise InstanceError(f"PS bandwidth {B:g} Gbps is below the worker's {b:g} Gbps, so no PS count can serve the workers "
                            "(needs B >= b)",
                            file, f"{job.path}.step.ps_bandwidth_gbps")
    if job.ps.hi == 0:
        raise InstanceError("an OASiS job needs parameter servers; remove ps = {count = 0}", file, f"{job.path}.ps")
    w = job.work
    worker_vec = np.array([job.worker_demand.get(r, 0.0) for r in resources])
    minibatch_s = float(step["compute_s"]) + 2.0 * float(gradient_mb) * 8.0 / 1000.0 / float(b)
    rho = w["minibatches_per_chunk"] * minibatch_s / instance.slot_s
    work = rho * w["epochs"] * w["chunks"]
    if not (np.isfinite(work) and 0 <= work <= MAX_WORK):
        # every count derived from it (ceil, DP sizes) must stay an exact integer
        raise InstanceError(f"job {job.id} needs {work:g} worker-slots; problem 'oasis' handles at most {MAX_WORK:g} "
                            "(check work, step and time.slot_s)", file, f"{job.path}.work")
    return OasisJob(
        index=job.index, id=job.id, arrival=job.arrival_slot,
        epochs=int(w["epochs"]), chunks=int(w["epochs"] * w["chunks"]), cap=min(job.workers.hi, int(w["chunks"])),
        rho=rho, b=float(b), B=float(B),
        worker=worker_vec,
        ps=np.array([job.ps_demand.get(r, 0.0) for r in resources]),
        worker_ok=pools.worker_ok(job.gpu_models),
        ps_ok=pools.ps_ok,
        utility=job.utility,
        workers_min=int(job.workers.lo) if ranged else 1, ps_min=int(job.ps.lo) if ranged else 1,
        ps_max=int(job.ps.hi) if ranged else None, fit=pools.fit(worker_vec, job.gpu_models),
    )


def fit_counts(free: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """How many tasks of ``demand`` fit in each row of ``free`` (``(..., R)``), resources with demand 0 skipped.

    A task that demands nothing fits without limit; callers cap the count by the job's own caps.
    """
    used = demand > 0
    if not used.any():
        return np.full(free.shape[:-1], np.iinfo(np.int32).max, dtype=np.int64)
    return np.maximum(floor(np.min(free[..., used] / demand[used], axis=-1)), 0).astype(np.int64)


class TaskCounts:
    """One job's task counts over ``servers x slots``, kept sparse: per slot, the servers with tasks and
    how many.  A job runs in a few slots on a few servers, so a dense ``(servers, slots)`` table per job
    (0.5 MB on the Alibaba cluster, 1 GB for 2,000 jobs) would store almost nothing but zeros."""

    __slots__ = ("entries", "servers", "slots")

    def __init__(self, servers: int, slots: int):
        self.servers = servers
        self.slots = slots
        self.entries: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    @classmethod
    def from_dense(cls, counts: np.ndarray) -> TaskCounts:
        out = cls(*counts.shape)
        for t in np.flatnonzero(counts.any(axis=0)):
            out.put(int(t), counts[:, t])
        return out

    def put(self, slot: int, counts: np.ndarray) -> None:
        """Set slot ``slot`` to the per-server ``counts`` (a dense vector over the servers)."""
        where = np.flatnonzero(counts)
        if where.size:
            self.entries[slot] = (where, np.asarray(counts, dtype=np.int64)[where])
        else:
            self.entries.pop(slot, None)

    def at(self, slot: int) -> np.ndarray:
        """The dense per-server counts of one slot."""
        out = np.zeros(self.servers, np.int64)
        if slot in self.entries:
            where, count = self.entries[slot]
            out[where] = count
        return out

    def used_slots(self) -> list[int]:
        return sorted(self.entries)

    def per_slot(self) -> np.ndarray:
        """Tasks in each slot, ``(slots,)``."""
        out = np.zeros(self.slots, np.int64)
        for t, (_, count) in self.entries.items():
            out[t] = count.sum()
        return out

    def coo(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(server, slot, count)`` arrays of every nonzero entry, slot-major."""
        slots = self.used_slots()
        if not slots:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        server = np.concatenate([self.entries[t][0] for t in slots])
        slot = np.concatenate([np.full(self.entries[t][0].size, t, np.int64) for t in slots])
        count = np.concatenate([self.entries[t][1] for t in slots])
        return server, slot, count

    def dense(self) -> np.ndarray:
        out = np.zeros((self.servers, self.slots), np.int64)
        server, slot, count = self.coo()
        out[server, slot] = count
        return out

    def total(self) -> int:
        return int(sum(int(c.sum()) for _, c in self.entries.values()))
