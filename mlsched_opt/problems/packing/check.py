"""Independent checker for packing decisions (uses only the instance and the checker core).

Any JSON value is read without crashing: a value of the wrong type or size is a ``domain`` (or
``decision``) violation, never an exception.  A packing decision is ``admitted`` and a static
``placement`` of ``{workers, ps}`` per job; any other part (``start``, ``schedule``, ``extra``,
another key of a job's entry) must be absent or empty (rule ``decision``).  Under ``gpus =
"per-gpu"`` the decision's part ``gpus`` names each task's GPUs and every GPU holds at most 1
(:func:`.pergpu.check_gpus`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...checking.core import CheckResult, Usage, decision_part, job_ids, read_counts
from ...checking.parts import unread_parts
from ...io.instance import Instance
from .pergpu import check_gpus, per_gpu


def _placed_anything(tasks: Any) -> bool:
    """Whether a (possibly malformed) placement entry names a non-zero count anywhere."""
    if not isinstance(tasks, Mapping):
        return bool(tasks)
    return any(not isinstance(part, Mapping) or any(n != 0 for n in part.values()) for part in tasks.values() if part)


def check(instance: Instance, decision: Mapping[str, Any], options: Mapping[str, Any], result: CheckResult) -> None:
    placement = decision_part(result, decision, "placement", "packing")
    if placement is None:
        return
    gpu_by_gpu = per_gpu(options)
    unread_parts(result, decision, ("admitted", "placement", "gpus") if gpu_by_gpu else ("admitted", "placement"), "packing",
                 reported=("schedule",))
    admitted_set = set(job_ids(result, instance, decision.get("admitted"), "admitted"))
    for job_id in placement:
        if not isinstance(job_id, str) or instance.job(job_id) is None:
            result.add("unknown-job", f"placement.{job_id}", "no such job in the instance")
    usage = Usage(instance, instance.resource_names())
    used: set[str] = set()
    placed: dict[str, dict[str, dict[str, int]]] = {}  # admitted jobs' counts, for the per-GPU rules
    for job in instance.jobs:
        tasks = placement.get(job.id)
        if job.id not in admitted_set:
            if _placed_anything(tasks):
                result.add("placement", f"placement.{job.id}", "job is not admitted but has tasks placed")
            if options["objective"] == "servers":
                result.add("admission", job.id, "servers mode places every job, but this one is not admitted")
            continue
        if tasks is None:
            tasks = {}
        if not isinstance(tasks, Mapping):
            result.add("domain", f"placement.{job.id}", f"must be a mapping {{workers, ps}}, got {type(tasks).__name__}")
            tasks = {}
        unread_parts(result, tasks, ("workers", "ps"), "packing", f"placement.{job.id}")
        if not (job.workers.fixed and job.ps.fixed):
            result.add("instance", job.path, "packing needs fixed worker and PS counts")
            continue
        for task, key, want in (("worker", "workers", job.workers.lo), ("ps", "ps", job.ps.lo)):
            counts = read_counts(result, instance, job, task, tasks.get(key), f"placement.{job.id}.{key}")
            used.update(counts)
            got = sum(counts.values())
            if got != want:
                result.add("task-count", f"{job.id}.{key}", f"placed {got}, the job needs exactly {want}")
            usage.add(job, task, counts)
            placed.setdefault(job.id, {})[task] = counts
    usage.check(result)
    if gpu_by_gpu:
        check_gpus(result, instance, decision, placed)
    if options["objective"] == "servers":
        result.objective = float(len(used))
    else:
        admitted_jobs = [instance.job(j) for j in admitted_set]  # job_ids keeps known ids only
        result.objective = float(sum(job.weight for job in admitted_jobs if job is not None))
