"""The locality family's view of an instance: one shared machine pool, slotted time, PS jobs.

Spec ``papers/001_locality_rounding.md`` section 1 (a reconstruction; implemented as our design).
Workers and PSs share every server (``role`` must be ``any``: a locality-aware model needs both
on one machine, section 1.1).  Per job (section 1.2):

* ``V`` samples from ``work = {epochs, samples_per_epoch}``;
* one worker iteration of ``m = local_batch_size`` samples takes
  ``theta_c = step.compute_s + 2 g / b_c`` seconds (1.3; ``g`` = ``step.gradient_mb`` or the catalog
  model's gradient size, converted MB -> Gbit, pitfall P13), with ``b_in`` =
  ``step.intra_bandwidth_gbps`` or the cluster's ``intra_server_bandwidth_gbps`` and ``b_ex`` =
  ``step.inter_bandwidth_gbps`` or the cluster's ``inter_server_bandwidth_gbps``;
* a worker trains ``q_c = slot_s m / theta_c`` samples per slot;
* ``n`` workers need ``ceil(n / gamma)`` PSs, ``gamma = step.ps_fan_in`` (section 1.2);
* ``alpha`` / ``beta`` = ``demand.worker`` / ``demand.ps``; ``w_max`` = ``workers.max``; ``weight``.

Locality (pitfall P2) is behind the ``locality`` option: ``job`` (default, section 1.3) charges
every worker ``q_in`` when the job's workers and PSs sit on one machine and ``q_ex`` otherwise;
``pair`` lets a worker on machine ``h`` holding a share ``f_h`` of the job's PSs spend
``max(f_h 2g/b_in, (1 - f_h) 2g/b_ex)`` communicating, never slower than ``job``.

PS placement is behind the ``ps_placement`` problem option: ``free`` (default; spec section 1.4,
P-ORIG: any machine may host any of the job's PSs, ``gamma`` times the PS count covering the
workers) or ``with-workers`` (observation O3 as a rule: every machine hosting ``n`` workers of a
job hosts exactly ``ceil(n/gamma)`` of its PSs, and no machine hosts PSs alone).  O3 is a
restriction, not "without loss of generality" (see :mod:`.formulation` for a tiny counterexample).
The online methods always place by O3, which is feasible under both values.

A job's ``w_max`` is cut to the most workers that fit on the whole cluster (K2 can never bind
above it); a job that could still run more than :data:`MAX_WORKERS` workers in a slot, or a
horizon beyond :data:`MAX_SLOTS`, is refused up front (:func:`check_size`) so that no loop or
array of the pattern model is driven by a hostile number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...errors import InstanceError
from ...io.instance import Instance, Job
from ...tolerances import capacity_limit
from .options import LOCALITY, PS_PLACEMENT

if TYPE_CHECKING:  # the per-job programs (SciPy, HiGHS) load when a job is built, not with the generator
    from .pcilp import LocalityJob

MB_TO_GBIT = 8.0 / 1000.0
#: Largest horizon and largest per-slot worker count of one job the methods and the exact model accept.
MAX_SLOTS = 100_000
MAX_WORKERS = 10_000


def o3_ps(workers: int, gamma: int) -> int:
    """PSs observation O3 puts beside ``workers`` workers on one machine: ``ceil(workers / gamma)``."""
    return -(-int(workers) // int(gamma))


def check_size(view: LocalityView, file: str | None = None) -> None:
    """Refuse an instance whose horizon or per-slot worker count is beyond :data:`MAX_SLOTS` / :data:`MAX_WORKERS`."""
    if view.slots > MAX_SLOTS:
        raise InstanceError(f"problem 'locality' handles at most {MAX_SLOTS} slots, got {view.slots}", file, "time.slots")
    for k, job in enumerate(view.jobs):
        if job.w_max > MAX_WORKERS:
            raise InstanceError(f"job {job.id} can run {job.w_max} workers in a slot; problem 'locality' handles at most {MAX_WORKERS}",
                                file, f"jobs[{k}].workers.max")


@dataclass(frozen=True)
class JobTiming:
    """Seconds per worker iteration: compute, and push + pull inside one machine / across machines."""

    compute_s: float
    comm_in_s: float
    comm_ex_s: float
    batch: int
    slot_s: float

    def rate(self, comm_s: float | np.ndarray) -> float | np.ndarray:
        """Samples per slot per worker when one iteration communicates for ``comm_s``."""
        return self.slot_s * self.batch / (self.compute_s + comm_s)


@dataclass(frozen=True)
class LocalityView:
    """Servers ``(H, R)`` over slots ``0..T-1``; ``jobs[i]`` as the PC-ILP sees them."""

    slots: int
    resources: list[str]
    servers: list[str]
    capacity: np.ndarray
    jobs: list[LocalityJob]
    timing: list[JobTiming]

    @property
    def H(self) -> int:
        return len(self.servers)

    def penalty_delay(self, i: int) -> int:
        """Delay charged to a job that does not finish in the horizon: as if it finished in slot ``T``."""
        return self.slots - self.jobs[i].arrival + 1

    def slot_work(self, i: int, workers: np.ndarray, ps: np.ndarray, locality: str = "job") -> float:
        """Samples job ``i`` trains in one slot with ``workers[h]`` workers and ``ps[h]`` PSs per machine."""
        workers = np.asarray(workers, dtype=float)
        ps = np.asarray(ps, dtype=float)
        job, timing = self.jobs[i], self.timing[i]
        if workers.sum() == 0:
            return 0.0
        if np.count_nonzero((workers + ps) > 0) <= 1:
            return float(job.q_in * workers.sum())
        if locality == "job":
            return float(job.q_ex * workers.sum())
        share = ps / ps.sum() if ps.sum() > 0 else np.zeros_like(ps)
        comm = np.maximum(share * timing.comm_in_s, (1.0 - share) * timing.comm_ex_s)
        return float((workers * timing.rate(comm)).sum())

    def sparse_slot_work(self, i: int, workers: Mapping[int, int], ps: Mapping[int, int], locality: str = "job") -> float:
        """:meth:`slot_work` from ``{machine: count}`` maps, over the machines they name only (in index
        order), so the cost is the placement's size, not the cluster's; the checker and the methods
        both count work this way, so they agree to the last bit."""
        machines = sorted(set(workers) | set(ps))
        return self.slot_work(i, np.array([workers.get(h, 0) for h in machines], dtype=float),
                              np.array([ps.get(h, 0) for h in machines], dtype=float), locality)


def locality_view(instance: Instance) -> LocalityView:
    """Read the instance as the locality family needs it; a missing or inconsistent field is an :class:`InstanceError`."""
    file = instance.file
    if instance.slots is None:
        raise InstanceError("problem 'locality' is slotted; set time.slots", file, "time.slots")
    for server in instance.servers:
        if server.role != "any":
            raise InstanceError("problem 'locality' puts workers and PSs on one shared pool; remove role or set role = 'any'",
                                file, f"{server.field_path}.role")
    resources = instance.resource_names()
    capacity = instance.capacity_matrix(resources)
    jobs, timing = [], []
    for job in instance.jobs:
        lj, jt = _job(instance, job, resources, capacity)
        jobs.append(lj)
        timing.append(jt)
    return LocalityView(instance.slots, resources, [s.name for s in instance.servers], capacity, jobs, timing)


def _job(instance: Instance, job: Job, resources: list[str], capacity: np.ndarray) -> tuple[LocalityJob, JobTiming]:
    from .pcilp import LocalityJob

    file = instance.file

    def need(what: str, field: str) -> InstanceError:
        return InstanceError(f"problem 'locality' needs {what}", file, f"{job.path}.{field}")

    if job.architecture != "ps":
        raise InstanceError("problem 'locality' schedules parameter-server jobs; this one is all-reduce", file, f"{job.path}.architecture")
    if job.work is None or "samples_per_epoch" not in job.work:
        raise need("work = {epochs, samples_per_epoch} (the workload V in samples)", "work")
    if job.local_batch_size is None:
        raise need("local_batch_size (samples per worker iteration, m)", "local_batch_size")
    step = job.step
    if step is None:
        raise need("step = {compute_s, ps_fan_in, ...} (one worker iteration)", "step")
    if "ps_fan_in" not in step:
        raise need("step.ps_fan_in (at most this many workers per PS, gamma)", "step.ps_fan_in")
    gradient_mb = step.get("gradient_mb", job.workload.gradient_mb if job.workload is not None else None)
    if gradient_mb is None:
        raise need("step.gradient_mb (or a catalog model with a gradient size)", "step.gradient_mb")
    b_in = step.get("intra_bandwidth_gbps", instance.intra_server_bandwidth_gbps)
    if b_in is None:
        raise need("step.intra_bandwidth_gbps or cluster.intra_server_bandwidth_gbps", "step.intra_bandwidth_gbps")
    b_ex = step.get("inter_bandwidth_gbps", instance.inter_server_bandwidth_gbps)
    if b_ex is None:
        raise need("step.inter_bandwidth_gbps or cluster.inter_server_bandwidth_gbps", "step.inter_bandwidth_gbps")
    if b_in < b_ex:
        raise InstanceError(f"intra-machine bandwidth {b_in:g} Gbps is below the inter-machine {b_ex:g} Gbps "
                            "(the model needs b_in >= b_ex)",
                            file, f"{job.path}.step.intra_bandwidth_gbps")
    if job.ps.hi == 0:
        raise InstanceError("a locality job needs parameter servers; remove ps = {count = 0}", file, f"{job.path}.ps")
    timing = JobTiming(float(step["compute_s"]), 2.0 * gradient_mb * MB_TO_GBIT / b_in, 2.0 * gradient_mb * MB_TO_GBIT / b_ex,
                       int(job.local_batch_size), instance.slot_s)
    alpha = np.array([job.worker_demand.get(r, 0.0) for r in resources], dtype=float)
    # counted on the capacities the checker accepts: a size it accepts is no size the model may lose
    w_max = int(min(job.workers.hi, _cluster_fit(alpha, capacity_limit(capacity), job.workers.hi)))
    lj = LocalityJob(
        id=job.id, arrival=job.arrival_slot, work=float(job.work["epochs"]) * float(job.work["samples_per_epoch"]),
        q_in=float(timing.rate(timing.comm_in_s)), q_ex=float(timing.rate(timing.comm_ex_s)),
        alpha=alpha,
        beta=np.array([job.ps_demand.get(r, 0.0) for r in resources], dtype=float),
        gamma=int(step["ps_fan_in"]), w_max=w_max, weight=job.weight,
    )
    # a job whose worker or PS fits nowhere can never run under any placement; one whose worker and PS
    # fit only on different machines is fine (ps_placement=free), it just never runs under O3
    for task, need_r in (("worker", lj.alpha), ("ps", lj.beta)):
        if not (need_r[None, :] <= capacity + 1e-9).all(axis=1).any():
            raise InstanceError(f"one {task} of this job fits on no server", file, f"{job.path}.demand.{task}")
    return lj, timing


def _cluster_fit(alpha: np.ndarray, capacity: np.ndarray, cap: int) -> int:
    """Most workers of per-worker demand ``alpha`` the whole cluster holds (PSs aside), at most ``cap``."""
    used = alpha > 0
    if not used.any():
        return int(cap)
    per_machine = np.floor(np.min(capacity[:, used] / alpha[used], axis=1) + 1e-9)
    return int(min(cap, per_machine.sum()))


def total_delay(view: LocalityView, completion: dict[int, int]) -> float:
    """The family's objective: ``sum_i w_i (C_i - a_i + 1)``, a job that does not finish in the horizon counted at ``C_i = T``."""
    return float(sum(job.weight * ((completion[i] - job.arrival + 1) if i in completion else view.penalty_delay(i))
                     for i, job in enumerate(view.jobs)))
__all__ = ["LOCALITY", "MAX_SLOTS", "MAX_WORKERS", "PS_PLACEMENT", "JobTiming", "LocalityView", "check_size", "locality_view", "o3_ps",
           "total_delay"]
