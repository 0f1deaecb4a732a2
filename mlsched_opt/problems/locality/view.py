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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InstanceError
from ...io.instance import Instance, Job
from .pcilp import LocalityJob

LOCALITY = ("job", "pair")
MB_TO_GBIT = 8.0 / 1000.0


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


def locality_view(instance: Instance) -> LocalityView:
    """Read the instance as the locality family needs it; a missing or inconsistent field is an :class:`InstanceError`."""
    file = instance.file
    if instance.slots is None:
        raise InstanceError("problem 'locality' is slotted; set time.slots", file, "time.slots")
    for g_index, group in enumerate(instance.document["cluster"]["servers"]):
        if group.get("role", "any") != "any":
            raise InstanceError("problem 'locality' puts workers and PSs on one shared pool; remove role or set role = 'any'",
                                file, f"cluster.servers[{g_index}].role")
    resources = instance.resource_names()
    capacity = instance.capacity_matrix(resources)
    jobs, timing = [], []
    for job in instance.jobs:
        lj, jt = _job(instance, job, resources, capacity)
        jobs.append(lj)
        timing.append(jt)
    return LocalityView(instance.slots, resources, [s.name for s in instance.servers], capacity, jobs, timing)


def _job(instance: Instance, job: Job, resources: list[str], capacity: np.ndarray) -> tuple[LocalityJob, JobTiming]:
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
        raise InstanceError(f"intra-machine bandwidth {b_in:g} Gbps is below the inter-machine {b_ex:g} Gbps (the model needs b_in >= b_ex)",
                            file, f"{job.path}.step.intra_bandwidth_gbps")
    if job.ps.hi == 0:
        raise InstanceError("a locality job needs parameter servers; remove ps = {count = 0}", file, f"{job.path}.ps")
    timing = JobTiming(float(step["compute_s"]), 2.0 * gradient_mb * MB_TO_GBIT / b_in, 2.0 * gradient_mb * MB_TO_GBIT / b_ex,
                       int(job.local_batch_size), instance.slot_s)
    lj = LocalityJob(
        id=job.id, arrival=job.arrival_slot, work=float(job.work["epochs"]) * float(job.work["samples_per_epoch"]),
        q_in=float(timing.rate(timing.comm_in_s)), q_ex=float(timing.rate(timing.comm_ex_s)),
        alpha=np.array([job.worker_demand.get(r, 0.0) for r in resources], dtype=float),
        beta=np.array([job.ps_demand.get(r, 0.0) for r in resources], dtype=float),
        gamma=int(step["ps_fan_in"]), w_max=int(job.workers.hi), weight=job.weight,
    )
    if not (lj.demand(1)[None, :] <= capacity + 1e-9).all(axis=1).any():
        raise InstanceError("one worker with its PS fits on no server (the model keeps a job's PSs on its workers' machines)",
                            file, f"{job.path}.demand")
    return lj, timing





def total_delay(view: LocalityView, completion: dict[int, int]) -> float:
    """The family's objective: ``sum_i w_i (C_i - a_i + 1)``, a job that does not finish in the horizon counted at ``C_i = T``."""
    return float(sum(job.weight * ((completion[i] - job.arrival + 1) if i in completion else view.penalty_delay(i))
                     for i, job in enumerate(view.jobs)))
__all__ = ["LOCALITY", "JobTiming", "LocalityView", "locality_view", "total_delay"]
