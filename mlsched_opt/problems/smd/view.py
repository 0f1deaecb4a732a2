"""The SMD family's view of an instance: per-job completion-time coefficients, limits, capacity.

Problem (P) of Yu et al. (INFOCOM 2021), spec 002 section 1.5: choose admitted jobs ``x`` and
integer workers ``w >= 1`` and PSs ``p >= 1`` per job to maximise ``sum_i mu_i(tau_i(w, p)) x_i``
subject to (C1) the admitted jobs' declared limits ``v[i]`` fitting the cluster's total
capacity and (C2) each job's allocation ``O w + G p`` fitting its own limit.

Completion time (spec eqs (9)-(10)), seconds:

* sync:  ``tau = t1 w + t2 p + t3 + t4 w/p + t5/w`` with ``t1 = E b1``, ``t2 = E b2``,
  ``t3 = E eta2 t_b``, ``t4 = 2 E eta3 g/B``, ``t5 = eta1 E K t_f``;
* async: ``tau = t1 + t2 p/w + t3/w + t4/p`` with ``t1 = E b1``, ``t2 = E b2``,
  ``t3 = E (eta1 m t_f + eta2 t_b)``, ``t4 = 2 E alpha eta3 g/B``.

``g`` is converted from MB to Gbit (x 8/1000) because ``B`` is in Gbit/s (spec P19).  A job
gives ``speed_model.theta`` directly, or its layer profile and link parameters.  Layer times
not in the file come from the catalog [PROP, our design]: the measured per-sample time on one
GPU (``speed_model.gpu_model``, V100 by default) split 1:2 between FP and BP (the usual
estimate that a backward pass costs two forward passes) and evenly over the catalog's layers
(per-layer compute is not measured anywhere we can cite); each layer's push time is its fp32
bytes over ``B``.  A workload without a layer list is one layer (no overlap possible).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ...errors import InstanceError
from ...io.instance import Instance, Job, Utility
from ...tolerances import core_capacity_limit
from .layered import iteration_timing

DEFAULT_GPU = "V100"
FP_SHARE = 1.0 / 3.0


@dataclass(frozen=True)
class SmdJob:
    """One job as SMD sees it.

    ``theta`` has 5 entries (sync) or 4 (async), see the module docstring.  ``worker``,
    ``ps`` and ``limit`` are vectors over :attr:`SmdView.resources`; ``w_range``/``p_range``
    are the instance's bounds (at least 1).  ``admissible`` is False when even one worker and
    one PS break the limit (spec P17).
    """

    index: int
    id: str
    sgd: str
    theta: np.ndarray
    worker: np.ndarray
    ps: np.ndarray
    limit: np.ndarray
    w_range: tuple[int, int]
    p_range: tuple[int, int]
    utility: Utility
    eta: tuple[float, float, float] | None = None

    def completion_time(self, w, p) -> np.ndarray | float:
        """``tau(w, p)`` in seconds, elementwise."""
        w = np.asarray(w, dtype=float)
        p = np.asarray(p, dtype=float)
        th = self.theta
        if self.sgd == "sync":
            out = th[0] * w + th[1] * p + th[2] + th[3] * w / p + th[4] / w
        else:
            out = th[0] + th[1] * p / w + th[2] / w + th[3] / p
        return float(out) if np.ndim(out) == 0 else out

    def utility_of(self, w, p):
        return self.utility(self.completion_time(w, p))

    def fits(self, w, p) -> np.ndarray | bool:
        """(C2) and the instance's ranges, elementwise."""
        w = np.asarray(w)
        p = np.asarray(p)
        use = w[..., None] * self.worker + p[..., None] * self.ps
        # the checker's (C2) rule, so that the exact enumeration accepts exactly what it accepts
        ok = np.all(use <= core_capacity_limit(self.limit), axis=-1)
        ok &= (w >= self.w_range[0]) & (w <= self.w_range[1]) & (p >= self.p_range[0]) & (p <= self.p_range[1])
        return bool(ok) if np.ndim(ok) == 0 else ok

    @property
    def admissible(self) -> bool:
        return bool(self.fits(self.w_range[0], self.p_range[0]))

    def box(self) -> tuple[int, int, int, int]:
        """Integer bounds on ``w`` and ``p`` implied by the ranges and the limit."""
        w_hi, p_hi = self.w_range[1], self.p_range[1]
        for k in range(len(self.limit)):
            room = core_capacity_limit(float(self.limit[k]))
            if self.worker[k] > 0:
                w_hi = min(w_hi, int(np.floor((room - self.ps[k] * self.p_range[0]) / self.worker[k] + 1e-9)))
            if self.ps[k] > 0:
                p_hi = min(p_hi, int(np.floor((room - self.worker[k] * self.w_range[0]) / self.ps[k] + 1e-9)))
        return self.w_range[0], max(w_hi, self.w_range[0] - 1), self.p_range[0], max(p_hi, self.p_range[0] - 1)


@dataclass(frozen=True)
class SmdView:
    instance: Instance
    resources: list[str]
    capacity: np.ndarray
    jobs: tuple[SmdJob, ...]

    def limits(self) -> np.ndarray:
        """Declared limits, shape (jobs, resources): the outer knapsack's weights."""
        return np.array([j.limit for j in self.jobs]).reshape(len(self.jobs), len(self.resources))


def smd_view(instance: Instance, overlap: str = "instance") -> SmdView:
    """Build the view; names the file and field of anything SMD needs that is missing."""
    resources = instance.resource_names()
    for job in instance.jobs:
        if job.limit:
            resources += [r for r in job.limit if r not in resources]
    capacity = instance.capacity_matrix(resources).sum(axis=0)
    jobs = tuple(_job(instance, job, resources, overlap) for job in instance.jobs)
    return SmdView(instance, resources, capacity, jobs)


def _need(instance: Instance, job: Job, value: Any, field: str, what: str) -> Any:
    if value is None:
        raise InstanceError(f"problem 'smd' needs {what}", instance.file, f"{job.path}.{field}")
    return value


def _job(instance: Instance, job: Job, resources: list[str], overlap: str) -> SmdJob:
    file = instance.file
    if job.architecture != "ps":
        raise InstanceError("problem 'smd' schedules parameter-server jobs; this one is all-reduce", file, f"{job.path}.architecture")
    limit = _need(instance, job, job.limit, "limit", "each job's declared resource limit (limit = {gpu = .., cpu = ..})")
    utility = _need(instance, job, job.utility, "utility", "a utility of the completion time")
    if utility.delay_unit != "seconds":
        raise InstanceError("SMD utilities are functions of the completion time in seconds; set delay_unit = 'seconds' "
                            "(and delay_scale if the gammas use another unit)",
                            file, f"{job.path}.utility.delay_unit")
    speed = _need(instance, job, job.speed_model, "speed_model",
                  "a speed model (speed_model.theta, or the layer profile and ps_bandwidth_gbps)")
    theta, eta = _theta(instance, job, speed, overlap)
    vec = lambda m: np.array([m.get(r, 0.0) for r in resources], dtype=float)  # noqa: E731
    return SmdJob(
        index=job.index, id=job.id, sgd=job.sgd, theta=theta,
        worker=vec(job.worker_demand), ps=vec(job.ps_demand), limit=vec(limit),
        w_range=(max(1, job.workers.lo), job.workers.hi), p_range=(max(1, job.ps.lo), job.ps.hi),
        utility=utility, eta=eta,
    )


def _theta(instance: Instance, job: Job, speed: Mapping[str, Any], overlap: str) -> tuple[np.ndarray, tuple[float, float, float] | None]:
    file, path = instance.file, f"{job.path}.speed_model"
    want = 5 if job.sgd == "sync" else 4
    if "theta" in speed:
        theta = np.asarray(speed["theta"], dtype=float)
        if theta.size != want:
            form = ("[t1, t2, t3, t4, t5] for t1 w + t2 p + t3 + t4 w/p + t5/w" if want == 5
                    else "[t1, t2, t3, t4] for t1 + t2 p/w + t3/w + t4/p")
            raise InstanceError(f"a {job.sgd} job needs {want} coefficients {form}; got {theta.size}", file, f"{path}.theta")
        return theta, None
    iterations = _need(instance, job, job.iterations, "work", "the number of iterations (work = {iterations = E})")
    gradient = speed.get("gradient_mb") or (job.workload.gradient_mb if job.workload else None)
    gradient = _need(instance, job, gradient, "speed_model.gradient_mb", "the model size g (speed_model.gradient_mb or a catalog model)")
    bandwidth = _need(instance, job, speed.get("ps_bandwidth_gbps"), "speed_model.ps_bandwidth_gbps", "the PS bandwidth B")
    f, b, r = _layers(instance, job, speed, bandwidth)
    if "eta" in speed:
        eta = tuple(float(x) for x in speed["eta"])
        if len(eta) != 3:
            raise InstanceError(f"eta has three entries (eta1, eta2, eta3); got {len(eta)}", file, f"{path}.eta")
    else:
        scheme = speed.get("overlap", "wait-free") if overlap == "instance" else overlap
        eta = _eta(scheme, f.tobytes(), b.tobytes(), r.tobytes(), float(speed.get("slice_ms", 0.0)))
    t_f, t_b = f.sum() / 1000.0, b.sum() / 1000.0
    comm = 2.0 * iterations * eta[2] * gradient * 8.0 / 1000.0 / bandwidth
    beta1 = iterations * speed.get("worker_overhead_s", 0.0)
    beta2 = iterations * speed.get("ps_overhead_s", 0.0)
    if job.sgd == "sync":
        batch = _need(instance, job, job.global_batch_size, "global_batch_size", "the global batch size K of a sync job")
        coefficients = [beta1, beta2, iterations * eta[1] * t_b, comm, eta[0] * iterations * batch * t_f]
    else:
        batch = _need(instance, job, job.local_batch_size, "local_batch_size", "the per-worker mini-batch m of an async job")
        coefficients = [beta1, beta2, iterations * (eta[0] * batch * t_f + eta[1] * t_b), speed.get("async_share", 1.0) * comm]
    return np.array(coefficients, dtype=float), eta


@lru_cache(maxsize=4096)
def _eta(scheme: str, f: bytes, b: bytes, r: bytes, phi: float) -> tuple[float, float, float]:
    """``eta`` of a layer profile, once per distinct profile: thousands of trace jobs share a
    few catalog models, and the overlap schemes walk their layers in Python."""
    f_ms, b_ms, r_ms = (np.frombuffer(x, dtype=float) for x in (f, b, r))
    return iteration_timing(scheme, f_ms, b_ms, r_ms, phi).eta


def _layers(instance: Instance, job: Job, speed: Mapping[str, Any], bandwidth: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-layer FP, BP and push times in ms: from the file, else derived from the catalog."""
    file, path = instance.file, f"{job.path}.speed_model"
    given = {k: np.asarray(speed[k], dtype=float) for k in ("forward_ms", "backward_ms", "comm_ms") if k in speed}
    if len(given) == 3:
        sizes = {len(v) for v in given.values()}
        if len(sizes) != 1:
            raise InstanceError("forward_ms, backward_ms and comm_ms need one entry per layer each", file, path)
        return given["forward_ms"], given["backward_ms"], given["comm_ms"]
    workload = job.workload
    if workload is None:
        missing = [k for k in ("forward_ms", "backward_ms", "comm_ms") if k not in given]
        raise InstanceError(f"without a catalog model the layer profile is needed: {', '.join(missing)} missing", file,
                            f"{path}.{missing[0]}")
    layers = workload.data.get("layers", {})
    params = np.asarray(layers.get("parameters") or [workload.data["size"]["parameters_m"] * 1e6], dtype=float)
    n = len(params)
    if "forward_ms" in given or "forward_ms" in layers:
        f = given.get("forward_ms", np.asarray(layers.get("forward_ms", []), dtype=float))
        b = given.get("backward_ms", np.asarray(layers.get("backward_ms", []), dtype=float))
    else:
        gpu = speed.get("gpu_model", DEFAULT_GPU)
        rate = workload.throughput_samples_per_s(gpu, 1)
        if rate is None:
            raise InstanceError(f"catalog model {workload.data['name']!r} has no measured one-GPU throughput on {gpu}; "
                                "give forward_ms and backward_ms or another gpu_model",
                                file, f"{path}.gpu_model")
        per_sample_ms = 1000.0 / rate
        f = np.full(n, FP_SHARE * per_sample_ms / n)
        b = np.full(n, (1.0 - FP_SHARE) * per_sample_ms / n)
    r = given.get("comm_ms", params * 4.0 * 8.0 / (bandwidth * 1e9) * 1000.0)
    if not (len(f) == len(b) == len(r)):
        raise InstanceError(f"layer lists disagree in length (forward {len(f)}, backward {len(b)}, comm {len(r)})", file, path)
    return f, b, r
