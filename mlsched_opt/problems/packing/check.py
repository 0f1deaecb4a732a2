"""Independent checker for packing decisions (uses only the instance and the checker core)."""

from __future__ import annotations

from typing import Any, Mapping

from ...checking.core import CheckResult, Usage, admitted_jobs, read_counts, unknown_jobs
from ...io.instance import Instance


def check(instance: Instance, decision: Mapping[str, Any], options: Mapping[str, Any], result: CheckResult) -> None:
    placement = decision.get("placement", {})
    if decision.get("schedule"):
        result.add("decision", "schedule", "packing decisions are static; use placement")
    admitted_set = admitted_jobs(result, instance, decision)
    unknown_jobs(result, instance, placement, "placement")
    usage = Usage(instance, instance.resource_names())
    used: set[str] = set()
    for job in instance.jobs:
        tasks = placement.get(job.id, {})
        if job.id not in admitted_set:
            if any(n for part in tasks.values() for n in part.values()):
                result.add("placement", f"placement.{job.id}", "job is not admitted but has tasks placed")
            if options["objective"] == "servers":
                result.add("admission", job.id, "servers mode places every job, but this one is not admitted")
            continue
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
    usage.check(result)
    if options["objective"] == "servers":
        result.objective = float(len(used))
    else:
        result.objective = float(sum(instance.job(j).weight for j in admitted_set if instance.job(j) is not None))
