"""Independent checker for SMD decisions.

Uses only the instance's performance model (:func:`.view.smd_view`: completion time, limits,
capacity) and none of the enumeration, grid, rounding or knapsack code.  A decision is
``admitted`` and ``extra.allocation = {job: {workers, ps}}``; ``extra.stats`` (a method's own
figures) is not read, and any other part (``placement``, ``schedule``, ``start``, another key of
``extra`` or of an allocation) must be absent or empty (rule ``decision``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

import numpy as np

from ...checking.core import CheckResult, admitted_jobs, unknown_jobs
from ...checking.parts import claim_map, extra_part, unread_parts
from ...io.instance import Instance
from ...tolerances import core_capacity_limit
from .view import SmdJob, SmdView, smd_view


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def check(instance: Instance, decision: Mapping[str, Any], options: Mapping[str, Any], result: CheckResult) -> None:
    """Every rule in O(jobs x resources): the per-job rules in one pass over the admitted jobs,
    the limits (C2) and the capacity (C1) as array comparisons."""
    if not isinstance(decision, Mapping):
        result.add("decision", "decision", f"must be a mapping, got {type(decision).__name__}")
        return
    view = smd_view(instance, options["overlap"])
    if decision.get("placement") or decision.get("schedule"):
        result.add("decision", "placement", "SMD decides counts only; give extra.allocation = {job: {workers, ps}}")
    unread_parts(result, decision, ("admitted", "extra"), "smd", reported=("placement", "schedule"))
    allocation = claim_map(result, extra_part(result, decision, ("allocation",), ("stats",), "smd"), "allocation")
    chosen = admitted_jobs(result, instance, decision)
    unknown_jobs(result, instance, allocation, "extra.allocation")
    for job_id in allocation:
        if job_id not in chosen and instance.job(job_id) is not None:
            result.add("allocation", f"extra.allocation.{job_id}", "job is not admitted but has an allocation")
    admitted = [job for job in view.jobs if job.id in chosen]
    sized: list[tuple[SmdJob, int, int]] = []
    for job in admitted:
        counts = _counts(result, job, allocation.get(job.id))
        if counts is not None:
            sized.append((job, *counts))
    _limits(result, view, sized)
    reserved = view.limits()[[job.index for job in admitted]].sum(axis=0)
    for k, r in enumerate(view.resources):
        if reserved[k] > core_capacity_limit(view.capacity[k]):
            result.add("capacity", r, f"admitted limits reserve {reserved[k]:g} > cluster capacity {view.capacity[k]:g}")
    result.objective = float(sum(instance.jobs[job.index].weight * float(job.utility(job.completion_time(w, p)))
                                 for job, w, p in sized))


def _counts(result: CheckResult, job: SmdJob, alloc: Any) -> tuple[int, int] | None:
    """An admitted job's ``(workers, ps)`` when they are integers >= 1 (a range breach is reported
    and the counts still score, as the limit and capacity rules judge them)."""
    where = f"extra.allocation.{job.id}"
    if not isinstance(alloc, Mapping):
        result.add("allocation", where, "an admitted job needs {workers = w, ps = p}")
        return None
    unread_parts(result, alloc, ("workers", "ps"), "smd", where)
    w, p = alloc.get("workers"), alloc.get("ps")
    if not (_is_int(w) and _is_int(p)):
        result.add("domain", where, f"workers and ps must be integers, got {w!r} and {p!r}")
        return None
    if w < 1 or p < 1:
        result.add("domain", where, f"needs at least one worker and one PS, got w={w}, p={p}")
        return None
    lo_w, hi_w = job.w_range
    lo_p, hi_p = job.p_range
    if not (lo_w <= w <= hi_w and lo_p <= p <= hi_p):
        result.add("range", where, f"w={w}, p={p} outside workers [{lo_w}, {hi_w}] / ps [{lo_p}, {hi_p}]")
    return w, p


def _limits(result: CheckResult, view: SmdView, sized: list[tuple[SmdJob, int, int]]) -> None:
    """(C2): each job's ``w O + p G`` within its declared limit, every job and resource at once."""
    if not sized:
        return
    # Python ints of any size stay exact as floats up to 2^53; larger counts break every limit anyway
    w = np.array([float(x[1]) for x in sized])[:, None]
    p = np.array([float(x[2]) for x in sized])[:, None]
    worker = np.array([x[0].worker for x in sized])
    ps = np.array([x[0].ps for x in sized])
    limit = np.array([x[0].limit for x in sized])
    with np.errstate(over="ignore", invalid="ignore"):
        use = w * worker + p * ps
    over = use > core_capacity_limit(limit)
    for i, k in zip(*np.nonzero(over)):
        job, wi, pi = sized[i]
        result.add("limit", f"{job.id}, {view.resources[k]}",
                   f"{wi} workers and {pi} PSs use {use[i, k]:g} > declared limit {limit[i, k]:g}")
