"""Independent checker for locality schedules (constraints (C1)-(C8) of spec 001 section 1.6).

Uses the instance's job model (:func:`.view.locality_view`: work, rates, demands, fan-in) and
none of the pattern, LP, rounding, online or MILP code.  It does not assume the algorithms'
placement rule (PSs beside their workers, observation O3): any placement of workers and PSs is
checked as written.  A decision lists per job and slot ``{"slot", "workers": {server: n},
"ps": {server: k}}``; the checker recomputes each slot's work at the true rates (job-level or
per-pair locality, the ``locality`` option), each job's completion slot (the first whose
cumulative work reaches ``V``) and the objective ``sum_i w_i (C_i - a_i + 1)``, a job that
does not finish counted at ``C_i = T``.  Jobs listed as ``admitted`` must finish.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ...checking.core import TOL, CheckResult, admitted_jobs, read_counts, unknown_jobs
from ...io.instance import Instance
from .view import locality_view, total_delay


def check(instance: Instance, decision: Mapping[str, Any], options: Mapping[str, Any], result: CheckResult) -> None:
    view = locality_view(instance)
    locality = options.get("locality", "job")
    schedule = decision.get("schedule") or {}
    if decision.get("placement"):
        result.add("decision", "placement", "locality decisions are slotted; use schedule")
    admitted = admitted_jobs(result, instance, decision)
    unknown_jobs(result, instance, schedule, "schedule")
    claimed = (decision.get("extra") or {}).get("completion") or {}
    machine = {name: h for h, name in enumerate(view.servers)}
    load = np.zeros((view.H, len(view.resources), view.slots))
    completion: dict[int, int] = {}
    for i, job in enumerate(view.jobs):
        ijob = instance.jobs[i]
        per_slot: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for k, entry in enumerate(schedule.get(job.id, [])):
            where = f"schedule.{job.id}[{k}]"
            t = entry.get("slot")
            if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < view.slots:
                result.add("domain", where, f"slot must be an integer in [0, {view.slots - 1}], got {t!r}")
                continue
            if t in per_slot:
                result.add("schedule", where, f"slot {t} appears twice")
                continue
            w = np.zeros(view.H, dtype=np.int64)
            s = np.zeros(view.H, dtype=np.int64)
            for counts, vec, task in ((entry.get("workers"), w, "worker"), (entry.get("ps"), s, "ps")):
                for name, n in read_counts(result, instance, ijob, task, counts, f"{where}.{task if task == 'ps' else 'workers'}").items():
                    vec[machine[name]] = n
            W, S = int(w.sum()), int(s.sum())
            if (W or S) and t < job.arrival:
                result.add("arrival", where, f"runs in slot {t} before its arrival slot {job.arrival}")      # (C6)
            if W > job.w_max:
                result.add("worker-cap", where, f"{W} workers > cap {job.w_max}")                          # (C5)
            if job.gamma * S < W:
                result.add("ps-count", where, f"{S} PSs serve at most {job.gamma * S} workers, not {W}")  # (C3)
            if S and not W:
                result.add("idle-ps", where, f"{S} PSs but no workers")                                    # (C4)
            load[:, :, t] += w[:, None] * job.alpha[None, :] + s[:, None] * job.beta[None, :]
            per_slot[t] = (w, s)
        done = 0.0
        for t in sorted(per_slot):
            done += view.slot_work(i, *per_slot[t], locality=locality)
            if done >= job.work * (1 - TOL) - TOL:
                completion[i] = t
                break
        if job.id in admitted and i not in completion:
            result.add("work", job.id, f"trains {done:g} samples < the {job.work:g} the job needs within the horizon")
        if job.id in claimed and claimed[job.id] != completion.get(i, view.slots):
            result.add("completion", f"extra.completion.{job.id}",
                       f"claims slot {claimed[job.id]}, the work reaches V in slot {completion.get(i, 'none')}")
    over = load > view.capacity[:, :, None] * (1 + TOL) + TOL                                            # (C1)
    for h, r, t in zip(*np.nonzero(over)):
        result.add("capacity", f"slot {t}, {view.servers[h]}, {view.resources[r]}",
                   f"uses {load[h, r, t]:g} > capacity {view.capacity[h, r]:g}")
    result.objective = total_delay(view, completion)
