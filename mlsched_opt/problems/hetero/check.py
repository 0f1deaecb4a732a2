"""Independent checker for hetero placements.

Uses the instance's data (:func:`.view.hetero_view`: throughputs, batch, iterations, caps,
bandwidths) and the communication formula, and none of the split, configuration, market or
ILP code.  Rules: every job is placed with a size in its range, on GPUs of servers that may
host its workers and that it has a throughput for; no server's GPUs are used twice; each
worker's samples are a non-negative integer within the memory cap, one list entry per GPU,
and a job's samples sum to its global batch (a server entry with no worker and no samples, a count
of 0 beside an empty list, is no entry).  The objective is recomputed per job as
``T (max_k b_k / rho_k + comm(K, D / r_min))`` and averaged; the claimed JCTs and fairness
measures are compared with the recomputed ones when the placement is feasible (rules ``jct``,
``fairness``; a claim about an unknown job or measure, or one that is not a number, breaks them
too).  A decision is ``admitted``, ``placement`` (job -> ``{workers}``) and ``extra`` with
``batch``, ``jct_s``, ``fairness`` and the method's ``stats`` (not read); any other part
(``schedule``, ``start``, a job's ``ps``, another key of ``extra``) must be absent or empty
(rule ``decision``), and every claim container must be a mapping (rule ``domain``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...checking.core import CheckResult, admitted_jobs, decision_part, read_counts, unknown_jobs
from ...checking.parts import claim_map, extra_part, is_number, unread_parts
from ...io.instance import Instance
from ...tolerances import CHECK_TOL
from .timing import COMM_MODELS, comm_constant, fair_share_jct, fairness
from .view import hetero_view

#: the parts of ``extra`` the checker reads (the batch splits and the claims it recomputes); the
#: method's own figures (``stats``: search counters) are not read
CLAIMS = ("batch", "jct_s", "fairness")
NOTES = ("stats",)
WHY = {"ps": "hetero places workers only (the comm option's model accounts for any parameter server)"}


def check(instance: Instance, decision: Mapping[str, Any], options: Mapping[str, Any], result: CheckResult) -> None:
    view = hetero_view(instance)
    placement = decision_part(result, decision, "placement", "hetero")
    if placement is None:
        return
    unread_parts(result, decision, ("admitted", "placement", "extra"), "hetero", reported=("schedule",))
    extra = extra_part(result, decision, CLAIMS, NOTES, "hetero")
    batches = claim_map(result, extra, "batch")
    unknown_jobs(result, instance, batches, "extra.batch")
    admitted = admitted_jobs(result, instance, decision)
    unknown_jobs(result, instance, placement, "placement")
    cls_of = {name: c for c in range(view.G) for name in view.members[c]}
    used: dict[str, int] = {}
    jcts: list[float] = []
    for hj, job in zip(view.jobs, instance.jobs):
        if job.id not in admitted:
            result.add("admission", job.id, "every job must be placed (C2)")
            continue
        entry = placement.get(job.id)
        if entry is not None and not isinstance(entry, Mapping):
            result.add("domain", f"placement.{job.id}", f"must be a mapping {{workers}}, got {type(entry).__name__}")
            entry = None
        unread_parts(result, entry or {}, ("workers",), "hetero", f"placement.{job.id}", why=WHY)
        workers = read_counts(result, instance, job, "worker", (entry or {}).get("workers"), f"placement.{job.id}.workers")
        split = batches.get(job.id)
        if split is not None and not isinstance(split, Mapping):
            result.add("domain", f"extra.batch.{job.id}", f"must be a mapping of server -> samples per GPU, got {type(split).__name__}")
            split = None
        split = split or {}
        k = sum(workers.values())
        if not hj.k_range[0] <= k <= hj.k_range[1]:
            result.add("job-size", job.id, f"{k} workers, the job allows {hj.k_range[0]}..{hj.k_range[1]}")
        times, bandwidths, total, ok = [], [], 0, k > 0
        for name in set(split) - set(workers):
            if split[name] == [] and instance.server(name) is not None:
                continue  # an empty entry (no worker, no samples: e.g. a count of 0 beside []) says nothing
            result.add("batch", f"extra.batch.{job.id}.{name}", "samples on a server with no worker of this job")
            ok = False
        for name, count in workers.items():
            used[name] = used.get(name, 0) + count
            c = cls_of.get(name)
            if c is None or hj.rho[c] <= 0:
                result.add("throughput", f"placement.{job.id}.workers.{name}", "the job has no throughput on this server's GPUs")
                ok = False
                continue
            samples = split.get(name)
            if not isinstance(samples, list) or len(samples) != count:
                result.add("batch", f"extra.batch.{job.id}.{name}", f"needs one sample count per GPU ({count}), got {samples!r}")
                ok = False
                continue
            for b in samples:
                if not isinstance(b, int) or isinstance(b, bool) or b < 0:
                    result.add("batch", f"extra.batch.{job.id}.{name}", f"samples must be non-negative integers, got {b!r}")
                    ok = False
                elif b > hj.cap[c]:
                    result.add("memory", f"extra.batch.{job.id}.{name}", f"{b} samples > max_local_batch {hj.cap[c]}")
                else:
                    times.append(b / hj.rho[c])
                    total += b
            bandwidths.append(view.classes[c].bandwidth_gbps)
        if ok and total != hj.batch:
            result.add("batch", f"extra.batch.{job.id}", f"samples sum to {total}, the global batch is {hj.batch}")
        if ok and times:
            comm = COMM_MODELS[options["comm"]](np.array([k]), comm_constant(hj, np.array([min(bandwidths)])))
            jcts.append(hj.iterations * (max(times) + float(comm[0])))
    for name, count in used.items():
        server = instance.server(name)
        assert server is not None, name  # read_counts keeps this instance's servers only
        cap = server.capacity.get("gpu", 0.0)
        if count > cap:
            result.add("capacity", f"{name}, gpu", f"uses {count} GPUs > capacity {cap:g}")
    claimed = claim_map(result, extra, "jct_s")
    unknown_jobs(result, instance, claimed, "extra.jct_s")
    stated = claim_map(result, extra, "fairness", "fairness measure")
    if result.feasible and len(jcts) == view.S:
        result.objective = float(np.mean(jcts))
        _claims(result, view, claimed, stated, np.array(jcts), options)


def _claims(result: CheckResult, view, claimed: Mapping[str, Any], stated: Mapping[str, Any], jcts: np.ndarray,
            options: Mapping[str, Any]) -> None:
    for job, value in zip(view.jobs, jcts):
        if job.id in claimed and _differs(claimed[job.id], value):
            result.add("jct", f"extra.jct_s.{job.id}", f"stated {_show(claimed[job.id])} s but the placement gives {value:g} s")
    measures = fairness(jcts, fair_share_jct(view, options["comm"]))
    for key, value in measures.items():
        if key in stated and _differs(stated[key], value):
            result.add("fairness", f"extra.fairness.{key}", f"stated {_show(stated[key])} but the placement gives {value:g}")
    for key in stated:
        if key not in measures:
            result.add("fairness", f"extra.fairness.{key}", f"no such fairness measure (the checker computes {', '.join(measures)})")


def _differs(stated: Any, value: float) -> bool:
    """Whether a claimed figure is not the recomputed ``value`` (anything but a finite number is)."""
    return not is_number(stated) or abs(stated - value) > CHECK_TOL * max(1.0, value)


def _show(value: Any) -> str:
    return f"{value:g}" if is_number(value) else f"{value!r:.60}"
