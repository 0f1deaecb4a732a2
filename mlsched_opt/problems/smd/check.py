"""Independent checker for SMD decisions.

Uses only the instance's performance model (:func:`.view.smd_view`: completion time, limits,
capacity) and none of the enumeration, grid, rounding or knapsack code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

import numpy as np

from ...checking.core import CheckResult, admitted_jobs, unknown_jobs
from ...io.instance import Instance
from ...tolerances import CHECK_TOL
from .view import smd_view


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def check(instance: Instance, decision: Mapping[str, Any], options: Mapping[str, Any], result: CheckResult) -> None:
    view = smd_view(instance, options["overlap"])
    allocation = (decision.get("extra") or {}).get("allocation", {})
    if decision.get("placement") or decision.get("schedule"):
        result.add("decision", "placement", "SMD decides counts only; give extra.allocation = {job: {workers, ps}}")
    chosen = admitted_jobs(result, instance, decision)
    unknown_jobs(result, instance, allocation, "extra.allocation")
    for job_id in allocation:
        if job_id not in chosen and instance.job(job_id) is not None:
            result.add("allocation", f"extra.allocation.{job_id}", "job is not admitted but has an allocation")
    reserved = np.zeros(len(view.resources))
    objective = 0.0
    for job in view.jobs:
        if job.id not in chosen:
            continue
        reserved += job.limit
        where = f"extra.allocation.{job.id}"
        alloc = allocation.get(job.id)
        if not isinstance(alloc, Mapping):
            result.add("allocation", where, "an admitted job needs {workers = w, ps = p}")
            continue
        w, p = alloc.get("workers"), alloc.get("ps")
        if not (_is_int(w) and _is_int(p)):
            result.add("domain", where, f"workers and ps must be integers, got {w!r} and {p!r}")
            continue
        if w < 1 or p < 1:
            result.add("domain", where, f"needs at least one worker and one PS, got w={w}, p={p}")
            continue
        lo_w, hi_w = job.w_range
        lo_p, hi_p = job.p_range
        if not (lo_w <= w <= hi_w and lo_p <= p <= hi_p):
            result.add("range", where, f"w={w}, p={p} outside workers [{lo_w}, {hi_w}] / ps [{lo_p}, {hi_p}]")
        use = w * job.worker + p * job.ps
        for k, r in enumerate(view.resources):
            if use[k] > job.limit[k] + CHECK_TOL * max(1.0, job.limit[k]):
                result.add("limit", f"{job.id}, {r}", f"{w} workers and {p} PSs use {use[k]:g} > declared limit {job.limit[k]:g}")
        weight = instance.jobs[job.index].weight
        objective += weight * float(job.utility(job.completion_time(w, p)))
    for k, r in enumerate(view.resources):
        if reserved[k] > view.capacity[k] + CHECK_TOL * max(1.0, view.capacity[k]):
            result.add("capacity", r, f"admitted limits reserve {reserved[k]:g} > cluster capacity {view.capacity[k]:g}")
    result.objective = objective
