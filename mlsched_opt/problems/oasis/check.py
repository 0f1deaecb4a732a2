"""Independent checker for OASiS schedules (constraints (2)-(10) of spec 000 section 1.5).

Uses the instance's job model (:func:`.view.oasis_view`: work, caps, bandwidths, demands) and
none of the pricing, dynamic-programming, simulation or MILP code.  A decision lists the
``admitted`` jobs (they must finish within the horizon and earn ``f(completion - arrival)``)
and a ``schedule``; jobs a baseline started but could not finish go in ``extra.unfinished``:
their slots must still respect every per-slot rule, and they earn nothing.

Size ranges (our reading, stated in :mod:`.view`): in every slot in which a job has at least one
worker, its worker count is in ``[workers.min, min(N, workers.max)]`` (rules ``worker-min``,
``worker-cap``) and its PS count in ``[ps.min, ps.max]`` (``ps-min``, ``ps-max``).

Claims in ``extra``: ``completion`` (job -> slot) must be the last slot with workers of an
admitted job that completes its work (rule ``completion``); ``rejected`` lists jobs that earn
nothing, so none of them may be admitted (rule ``admitted``).  ``payoff``, ``prices``,
``bound_2alpha`` and ``policy`` are the method's own figures (prices and statistics the checker
cannot recompute) and are not read.  Any other part (``placement``, ``start``, another key of
``extra`` or of a schedule entry) must be absent or empty (rule ``decision``).

Any JSON value is read without crashing: a value of the wrong type or size is a ``domain`` (or
``decision``) violation, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...checking.core import CheckResult, decision_part, job_ids, read_counts, unknown_jobs
from ...checking.parts import claim_map, extra_part, unread_parts
from ...io.instance import Instance
from ...tolerances import capacity_limit, work_done_threshold
from .view import oasis_view

#: the claims of ``extra`` the checker reads; the method figures it cannot recompute and ignores
CLAIMS = ("unfinished", "completion", "rejected")
NOTES = ("payoff", "prices", "bound_2alpha", "policy")
#: the keys of a schedule entry
ENTRY = ("slot", "workers", "ps")


def check(instance: Instance, decision: Mapping[str, Any], options: Mapping[str, Any], result: CheckResult) -> None:
    ranged = options.get("ranges", "instance") == "instance"
    view = oasis_view(instance, "instance" if ranged else "paper")
    schedule = decision_part(result, decision, "schedule", "OASiS")
    if schedule is None:
        return
    unread_parts(result, decision, ("admitted", "schedule", "extra"), "OASiS", reported=("placement",))
    admitted = set(job_ids(result, instance, decision.get("admitted"), "admitted"))
    extra = extra_part(result, decision, CLAIMS, NOTES, "OASiS")
    unfinished = set(job_ids(result, instance, extra.get("unfinished"), "extra.unfinished"))
    rejected = set(job_ids(result, instance, extra.get("rejected"), "extra.rejected"))
    claimed = claim_map(result, extra, "completion")
    unknown_jobs(result, instance, claimed, "extra.completion")
    for job_id in schedule:
        if not isinstance(job_id, str) or instance.job(job_id) is None:
            result.add("unknown-job", f"schedule.{job_id}", "no such job in the instance")
    for job_id in sorted(admitted & unfinished):
        result.add("admitted", job_id, "listed as both admitted and unfinished")
    for job_id in sorted(admitted & rejected):
        result.add("admitted", job_id, "listed as both admitted and rejected")
    servers = {name: ("worker", h) for h, name in enumerate(view.worker_servers)}
    servers.update({name: ("ps", k) for k, name in enumerate(view.ps_servers)})
    load = {"worker": np.zeros((view.H, len(view.resources), view.slots)),
            "ps": np.zeros((view.K, len(view.resources), view.slots))}
    objective = 0.0
    for job in view.jobs:
        entries = schedule.get(job.id)
        if entries is None:
            entries = []
        if not isinstance(entries, list):
            result.add("domain", f"schedule.{job.id}", f"must be a list of slots, got {type(entries).__name__}")
            entries = []
        if job.id not in admitted and job.id not in unfinished:
            if entries:
                result.add("schedule", f"schedule.{job.id}", "job is neither admitted nor unfinished but has a schedule")
            _completion(result, claimed, job.id, None)
            continue
        ijob = instance.jobs[job.index]
        done = 0
        last = None
        seen: set[int] = set()
        for n, entry in enumerate(entries):
            where = f"schedule.{job.id}[{n}]"
            if not isinstance(entry, Mapping):
                result.add("domain", where, f"must be a mapping {{slot, workers, ps}}, got {type(entry).__name__}")
                continue
            unread_parts(result, entry, ENTRY, "OASiS", where)
            t = entry.get("slot")
            if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < view.slots:
                result.add("domain", where, f"slot must be an integer in [0, {view.slots - 1}], got {t!r:.60}")
                continue
            if t in seen:
                result.add("schedule", where, f"slot {t} appears twice")
                continue
            seen.add(t)
            y = read_counts(result, instance, ijob, "worker", entry.get("workers"), f"{where}.workers")
            z = read_counts(result, instance, ijob, "ps", entry.get("ps"), f"{where}.ps")
            Y, Z = sum(y.values()), sum(z.values())
            if (Y or Z) and t < job.arrival:
                result.add("arrival", where, f"runs in slot {t} before its arrival slot {job.arrival}")
            if job.cap < Y:
                result.add("worker-cap", where, f"{Y} workers > cap {job.cap}")
            if ranged and Y and ijob.workers.lo > Y:
                result.add("worker-min", where, f"{Y} workers < workers.min {ijob.workers.lo}")
            if ranged and Y and ijob.ps.lo > Z:
                result.add("ps-min", where, f"{Z} PSs < ps.min {ijob.ps.lo}")
            if ranged and ijob.ps.hi < Z:
                result.add("ps-max", where, f"{Z} PSs > ps.max {ijob.ps.hi}")
            if Y * job.b > capacity_limit(Z * job.B):
                result.add("ps-bandwidth", where, f"{Y} workers x {job.b:g} Gbps > {Z} PSs x {job.B:g} Gbps")
            if Z > Y:
                result.add("ps-count", where, f"{Z} PSs > {Y} workers")
            for counts, demand in ((y, job.worker), (z, job.ps)):
                for name, count in counts.items():
                    kind, s = servers[name]
                    load[kind][s, :, t] += count * demand
            done += Y
            if Y:
                last = t if last is None else max(last, t)
        finished = None
        if job.id in admitted:
            if done < work_done_threshold(job.work):
                result.add("work", job.id, f"{done} worker-slots < the {job.work:g} the job needs")
            elif last is not None:
                objective += float(job.value(last))
                finished = last
        _completion(result, claimed, job.id, finished)
    for kind, names, cap in (("worker", view.worker_servers, view.worker_capacity), ("ps", view.ps_servers, view.ps_capacity)):
        over = load[kind] > capacity_limit(cap[:, :, None])
        for s, r, t in zip(*np.nonzero(over)):
            result.add("capacity", f"slot {t}, {names[s]}, {view.resources[r]}", f"uses {load[kind][s, r, t]:g} > capacity {cap[s, r]:g}")
    result.objective = objective


def _completion(result: CheckResult, claimed: Mapping[str, Any], job_id: str, finished: int | None) -> None:
    """Compare a claimed completion slot with the recomputed one (``None``: the job earns nothing)."""
    if job_id not in claimed:
        return
    stated = claimed[job_id]
    if finished is None or not isinstance(stated, int) or isinstance(stated, bool) or stated != finished:
        got = "the job does not complete (not admitted, or short of work)" if finished is None else f"it completes in slot {finished}"
        result.add("completion", f"extra.completion.{job_id}", f"claims slot {stated!r:.60}, {got}")
