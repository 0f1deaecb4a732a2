"""The hetero family's view of an instance: GPU workers grouped into classes, and per-job speed.

Spec ``papers/003_hetero_sampling.md`` section 1 (a reconstruction; implemented as our design).
A worker is one GPU.  Workers with the same GPU model and link bandwidth are interchangeable
for every job, so they form a *class*; ``counts[c]`` workers of class ``c`` exist.  A job sees:

* ``rho[c]``: samples/s of the job alone on one GPU of class ``c`` (0 = the job cannot use it),
  from ``jobs[i].data_parallel.samples_per_s`` or the catalog's measured 1-GPU throughput;
* ``batch`` (``global_batch_size``, Pi) and ``iterations`` (``work.iterations``, T);
* ``comm_gbit`` (D, from ``gradient_mb``) or ``comm_s`` (D / r given directly);
* ``cap[c]``: the memory cap (C4) in samples per GPU (``max_local_batch``), or a huge number;
* ``k_range``: the job-size range (C2) from ``jobs[i].workers``.

A worker's link bandwidth ``r_k`` is its server's ``capacity.bandwidth_gbps`` when given, else
the cluster's ``inter_server_bandwidth_gbps`` [our design: the spec has one ``r_k`` per worker
and no topology].
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...errors import InstanceError
from ...io.instance import MIN_MAGNITUDE, Instance, Job
from ...io.schema import MAX_NUMBER

NO_CAP = 1 << 40
#: Most GPUs hetero places (our design): each GPU is a worker with an entry in ``members`` and
#: in every worker-indexed array, so the count is bounded before anything is expanded.  Far
#: above any real cluster (the Alibaba trace has 6,212 GPUs; the generator at most 1,024 per server).
MAX_GPUS = 1_000_000
#: Throughputs hetero takes, samples/s on one GPU: no GPU trains a trillion samples a second, and
#: a billionth of a sample a second is no training (the loader's floor).  Within them a JCT
#: ``T Pi / rho`` (each at most 2**53) stays finite.  The schema holds ``samples_per_s`` to the
#: same range; this checks the figures taken from the catalog.
MIN_RATE, MAX_RATE = MIN_MAGNITUDE, 1e12


@dataclass(frozen=True)
class WorkerClass:
    gpu_model: str
    bandwidth_gbps: float

    @property
    def label(self) -> str:
        return self.gpu_model if not np.isfinite(self.bandwidth_gbps) else f"{self.gpu_model}@{self.bandwidth_gbps:g}G"


@dataclass(frozen=True)
class HeteroJob:
    index: int
    id: str
    rho: np.ndarray
    batch: int
    iterations: float
    comm_gbit: float | None
    comm_s: float | None
    cap: np.ndarray
    k_range: tuple[int, int]

    @property
    def weight(self) -> float:
        """``T Pi``: the job's JCT is ``weight / X`` plus communication."""
        return self.iterations * self.batch


@dataclass(frozen=True)
class HeteroView:
    """Classes, their workers (server names, one entry per GPU) and the jobs."""

    instance: Instance
    classes: tuple[WorkerClass, ...]
    counts: np.ndarray
    members: tuple[tuple[str, ...], ...]
    jobs: tuple[HeteroJob, ...]

    @property
    def G(self) -> int:
        return len(self.classes)

    @property
    def K(self) -> int:
        return int(self.counts.sum())

    @property
    def S(self) -> int:
        return len(self.jobs)

    @property
    def bandwidth(self) -> np.ndarray:
        return np.array([c.bandwidth_gbps for c in self.classes])

    def rho(self) -> np.ndarray:
        """Throughputs, shape (jobs, classes)."""
        return np.array([j.rho for j in self.jobs]).reshape(self.S, self.G)

    @cached_property
    def arrays(self) -> dict[str, np.ndarray]:
        """Per-job parameters as arrays, one row per job (the batched JCT's inputs); ``levels`` is
        the number of candidate sample levels the integer split can need (``timing``)."""
        rho = self.rho()
        eligible = np.where(rho > 0, rho, np.nan)
        batch = np.array([j.batch for j in self.jobs], dtype=float)
        # no split needs more levels than Pi (the samples left after the floor split are fewer):
        # capped before the cast, since rho_max / rho_min may be beyond int64
        levels = np.minimum(np.ceil(np.nanmax(eligible, axis=1) / np.nanmin(eligible, axis=1)), batch).astype(np.int64) + 2
        return {
            "rho": rho,
            "cap": np.array([j.cap for j in self.jobs], dtype=np.int64).reshape(self.S, self.G),
            "batch": np.array([j.batch for j in self.jobs], dtype=np.int64),
            "iterations": np.array([j.iterations for j in self.jobs], dtype=float),
            "comm_s": np.array([np.nan if j.comm_s is None else j.comm_s for j in self.jobs], dtype=float),
            "comm_gbit": np.array([np.nan if j.comm_gbit is None else j.comm_gbit for j in self.jobs], dtype=float),
            "levels": levels,
        }

    def worker_class(self) -> np.ndarray:
        """Class of each worker, workers ordered class by class."""
        return np.repeat(np.arange(self.G), self.counts)


#: The slowest GPU link hetero takes (1 kbit/s): slower ones make every multi-GPU JCT overflow.
MIN_LINK_GBPS = 1e-6


def hetero_view(instance: Instance) -> HeteroView:
    """Build the view; names the file and field of anything missing."""
    file = instance.file
    default_bw = instance.inter_server_bandwidth_gbps
    total = 0.0
    for s in instance.servers:
        if s.hosts("worker"):
            total += s.capacity.get("gpu", 0.0)
        if total > MAX_GPUS:
            raise InstanceError(f"problem 'hetero' places at most {MAX_GPUS:,} GPUs (one worker each); the servers up to this one "
                                f"have {total:,.0f}", file, f"{s.field_path}.capacity.gpu")
    members: dict[WorkerClass, list[str]] = {}
    for s in instance.servers:
        gpus = s.capacity.get("gpu", 0.0)
        if gpus <= 0 or not s.hosts("worker"):
            continue
        where = s.field_path
        if gpus != int(gpus):
            raise InstanceError(f"problem 'hetero' places whole GPUs; capacity.gpu = {gpus:g} is fractional", file, f"{where}.capacity.gpu")
        if s.gpu_model is None:
            raise InstanceError("problem 'hetero' needs each GPU server's gpu_model (K80, P100, V100, ...)", file, f"{where}.gpu_model")
        bw = s.capacity.get("bandwidth_gbps", default_bw)
        if bw is None:
            bw = float("inf")
        elif bw < MIN_LINK_GBPS:
            # a GPU's link is the divisor of every all-reduce: 0 (or 1e-300) makes every JCT infinite
            field = f"{where}.capacity.bandwidth_gbps" if "bandwidth_gbps" in s.capacity else "cluster.inter_server_bandwidth_gbps"
            raise InstanceError(f"problem 'hetero' needs a GPU link of at least {MIN_LINK_GBPS:g} Gbit/s, got {bw:g}", file, field)
        members.setdefault(WorkerClass(s.gpu_model, float(bw)), []).extend([s.name] * int(gpus))
    if not members:
        raise InstanceError("problem 'hetero' needs servers with GPUs (capacity.gpu) that may host workers", file, "cluster.servers")
    classes = tuple(sorted(members, key=lambda c: (c.gpu_model, c.bandwidth_gbps)))
    counts = np.array([len(members[c]) for c in classes], dtype=np.int64)
    # once, not per job: a per-job scan of every server was a (jobs x servers) loop
    unlinked = instance.inter_server_bandwidth_gbps is None and any(
        "bandwidth_gbps" not in s.capacity for s in instance.servers if s.capacity.get("gpu", 0) > 0)
    jobs = tuple(_job(instance, job, classes, int(counts.sum()), unlinked) for job in instance.jobs)
    return HeteroView(instance, classes, counts, tuple(tuple(members[c]) for c in classes), jobs)


def _job(instance: Instance, job: Job, classes: tuple[WorkerClass, ...], total: int, unlinked: bool) -> HeteroJob:
    file, path = instance.file, job.path
    spec = job.data_parallel or {}
    if job.global_batch_size is None:
        raise InstanceError("problem 'hetero' needs the global batch Pi (samples per iteration)", file, f"{path}.global_batch_size")
    iterations = job.iterations
    if iterations is None:
        raise InstanceError("problem 'hetero' needs the number of iterations T (work = {iterations = T})", file, f"{path}.work")
    if job.worker_demand.get("gpu", 1.0) != 1.0:
        raise InstanceError("problem 'hetero' runs one worker per GPU; set demand.worker.gpu = 1", file, f"{path}.demand.worker.gpu")
    given = spec.get("samples_per_s", {})
    overrides = instance.document["jobs"][job.index].get("overrides", {})
    rho = np.zeros(len(classes))
    for c, cls in enumerate(classes):
        if job.gpu_models is not None and cls.gpu_model not in job.gpu_models:
            continue
        if cls.gpu_model in given:
            rho[c] = float(given[cls.gpu_model])
        elif job.workload is not None:
            rho[c] = job.workload.throughput_samples_per_s(cls.gpu_model) or 0.0
            if rho[c] and not MIN_RATE <= rho[c] <= MAX_RATE:  # the file's own figures are held to this by the schema
                raise InstanceError(f"the catalog model's throughput on {cls.gpu_model} is {rho[c]:g} samples/s, outside "
                                    f"[{MIN_RATE:g}, {MAX_RATE:g}]; give data_parallel.samples_per_s.{cls.gpu_model}", file,
                                    f"{path}.overrides.throughput" if "throughput" in overrides else f"{path}.model")
    if not rho.any():
        models = sorted({c.gpu_model for c in classes})
        raise InstanceError(f"no throughput for any GPU model of the cluster ({', '.join(models)}): give data_parallel.samples_per_s "
                            "or a catalog model measured on them", file, f"{path}.data_parallel.samples_per_s")
    comm_s = spec.get("comm_s")
    comm_gbit = None
    if comm_s is None:
        gradient = spec.get("gradient_mb") or (job.workload.gradient_mb if job.workload else None)
        if gradient is None:
            raise InstanceError("problem 'hetero' needs the gradient size (data_parallel.gradient_mb, a catalog model with size, "
                                "or data_parallel.comm_s)", file, f"{path}.data_parallel.gradient_mb")
        comm_gbit = float(gradient) * 8.0 / 1000.0
        if unlinked:
            raise InstanceError("the ring all-reduce term needs each GPU server's link bandwidth (capacity.bandwidth_gbps) "
                                "or cluster.inter_server_bandwidth_gbps, or data_parallel.comm_s per job", file,
                                "cluster.inter_server_bandwidth_gbps")
    if job.global_batch_size * total > MAX_NUMBER:
        # the integer split counts samples per iteration over up to every GPU in int64 and float64
        raise InstanceError(f"a global batch of {job.global_batch_size} samples over the cluster's {total} GPUs is beyond "
                            "2**53 samples per iteration", file, f"{path}.global_batch_size")
    caps = spec.get("max_local_batch", {})
    cap = np.array([caps.get(c.gpu_model, NO_CAP) for c in classes], dtype=np.int64)
    hi = min(job.workers.hi, total)
    return HeteroJob(job.index, job.id, rho, int(job.global_batch_size), float(iterations), comm_gbit,
                     None if comm_s is None else float(comm_s), cap, (max(1, job.workers.lo), hi))
