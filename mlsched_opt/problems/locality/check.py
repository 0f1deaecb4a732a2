"""Independent checker for locality schedules (constraints (C1)-(C8) of spec 001 section 1.6).

Uses the instance's job model (:func:`.view.locality_view`: work, rates, demands, fan-in) and
none of the pattern, LP, rounding, online or MILP code.  A decision lists per job and slot
``{"slot", "workers": {server: n}, "ps": {server: k}}``; the checker recomputes each slot's work
at the true rates (job-level or per-pair locality, the ``locality`` option), each job's
completion slot (the first whose cumulative work reaches ``V``) and the objective
``sum_i w_i (C_i - a_i + 1)``, a job that does not finish counted at ``C_i = T``.  Jobs listed
as ``admitted`` must finish.

Rules (each violation is named by its rule):

* ``domain`` / ``decision`` / ``unknown-job`` / ``unknown-server`` / ``eligibility``: any JSON
  value where a count, slot, list or mapping is expected (a string, a float, a bool, a negative
  or huge integer, nested junk) is reported, never raised;
* ``arrival`` (C6): work before the job's arrival slot; ``after-completion`` (C6): workers or
  PSs in a slot after the one in which the job's work reaches ``V``;
* ``worker-cap`` (C5), ``ps-count`` (C3), ``idle-ps`` (C4), ``capacity`` (C1);
* ``ps-placement``: with ``ps_placement=with-workers`` (observation O3 as a rule) a machine
  hosting ``n`` workers of a job must host exactly ``ceil(n/gamma)`` of its PSs, and no machine
  hosts PSs alone; with ``free`` (default) any placement passing C3/C4 is accepted;
* ``work``, ``completion``: an admitted job that does not finish; a claimed completion slot that
  differs from the recomputed one;
* ``unfinished``, ``rejected``: a job listed in ``extra.unfinished`` or ``extra.rejected`` whose
  work reaches ``V``; ``migrations``: a claimed count of changes of the job's set of machines
  between consecutive slot entries (up to its completion) that differs from the schedule's;
* ``decision``: a part the checker does not read that is not absent or empty (``placement``,
  ``start``, another key of a slot entry, a key of ``extra`` other than the claims above and
  the method figures ``lps``, ``rounding_attempts``, ``repairs``, ``prices`` and ``payoff``,
  which are not read); ``extra`` and its claim containers must be mappings/lists (``domain``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, TypeGuard

import numpy as np

from ...checking.core import MAX_COUNT, CheckResult, decision_part, job_ids, unknown_jobs
from ...checking.parts import claim_map, extra_part, unread_parts
from ...io.instance import Instance
from ...tolerances import capacity_limit, work_done_threshold
from .view import LocalityView, locality_view, o3_ps, total_delay

#: the claims of ``extra`` the checker recomputes; the method figures it cannot and ignores
CLAIMS = ("completion", "unfinished", "rejected", "migrations")
NOTES = ("lps", "rounding_attempts", "repairs", "prices", "payoff")
#: the keys of a schedule entry
ENTRY = ("slot", "workers", "ps")


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def check(instance: Instance, decision: Mapping[str, Any], options: Mapping[str, Any], result: CheckResult) -> None:
    view = locality_view(instance)
    locality = options.get("locality", "job")
    placement = options.get("ps_placement", "free")
    schedule = decision_part(result, decision, "schedule", "locality")
    if schedule is None:
        result.objective = None
        return
    unread_parts(result, decision, ("admitted", "schedule", "extra"), "locality", reported=("placement",))
    ids = {job.id for job in view.jobs}
    admitted = set(job_ids(result, instance, decision.get("admitted"), "admitted"))
    for key in schedule:
        if key not in ids:
            result.add("unknown-job", f"schedule.{_short(key)}", "no such job in the instance")
    extra = extra_part(result, decision, CLAIMS, NOTES, "locality")
    claimed = claim_map(result, extra, "completion")
    moves = claim_map(result, extra, "migrations")
    unknown_jobs(result, instance, claimed, "extra.completion")
    unknown_jobs(result, instance, moves, "extra.migrations")
    listed = {key: job_ids(result, instance, extra.get(key), f"extra.{key}") for key in ("unfinished", "rejected")}
    machine = {name: h for h, name in enumerate(view.servers)}
    # every (job, slot, machine) with a task, for (C1) at the end: O(size log size), never (slots x machines)
    cells_t: list[int] = []
    cells_h: list[int] = []
    cells_w: list[int] = []
    cells_s: list[int] = []
    cells_i: list[int] = []
    completion: dict[int, int] = {}
    for i, job in enumerate(view.jobs):
        ijob = instance.jobs[i]
        entries = schedule.get(job.id, [])
        if not isinstance(entries, list):
            result.add("domain", f"schedule.{job.id}", f"must be a list of slot entries, got {_short(entries)}")
            entries = []
        per_slot: dict[int, tuple[dict[int, int], dict[int, int]]] = {}
        for k, entry in enumerate(entries):
            where = f"schedule.{job.id}[{k}]"
            if not isinstance(entry, Mapping):
                result.add("domain", where, f"a slot entry is a mapping {{slot, workers, ps}}, got {_short(entry)}")
                continue
            unread_parts(result, entry, ENTRY, "locality", where)
            t = entry.get("slot")
            if not _is_int(t) or not 0 <= t < view.slots:
                result.add("domain", where, f"slot must be an integer in [0, {view.slots - 1}], got {_short(t)}")
                continue
            if t in per_slot:
                result.add("schedule", where, f"slot {t} appears twice")
                continue
            w: dict[int, int] = {}
            s: dict[int, int] = {}
            counts_ok = True
            for field, into, task in (("workers", w, "worker"), ("ps", s, "ps")):
                counts_ok &= _read(result, instance, ijob, task, entry.get(field), f"{where}.{field}", machine, into)
            W, S = sum(w.values()), sum(s.values())
            if (W or S) and t < job.arrival:
                result.add("arrival", where, f"runs in slot {t} before its arrival slot {job.arrival}")      # (C6)
            if ijob.workers.hi < W:
                result.add("worker-cap", where, f"{W} workers > cap {ijob.workers.hi}")                   # (C5)
            if job.gamma * S < W:
                result.add("ps-count", where, f"{S} PSs serve at most {job.gamma * S} workers, not {W}")  # (C3)
            if S and not W:
                result.add("idle-ps", where, f"{S} PSs but no workers")                                    # (C4)
            if placement == "with-workers" and counts_ok:
                for h in sorted(h for h in set(w) | set(s) if w.get(h, 0) or s.get(h, 0)):
                    need = o3_ps(w.get(h, 0), job.gamma)
                    if s.get(h, 0) != need:
                        result.add("ps-placement", f"{where}.ps.{view.servers[h]}",
                                   f"O3 (ps_placement=with-workers): {w.get(h, 0)} workers here need exactly {need} PSs beside them "
                                   f"(ceil(n/{job.gamma})), got {s.get(h, 0)}")
            for h in set(w) | set(s):
                cells_t.append(t)
                cells_h.append(h)
                cells_w.append(w.get(h, 0))
                cells_s.append(s.get(h, 0))
                cells_i.append(i)
            per_slot[t] = ({h: n for h, n in w.items() if n}, {h: n for h, n in s.items() if n})
        done = 0.0
        for t in sorted(per_slot):
            if i in completion:
                if per_slot[t][0] or per_slot[t][1]:                                                       # (C6)
                    result.add("after-completion", f"schedule.{job.id} slot {t}",
                               f"workers or PSs after the job's work reached V in slot {completion[i]}")
                continue
            done += view.sparse_slot_work(i, *per_slot[t], locality=locality)
            if done >= work_done_threshold(job.work):
                completion[i] = t
        if job.id in admitted and i not in completion:
            result.add("work", job.id, f"trains {done:g} samples < the {job.work:g} the job needs within the horizon")
        if job.id in claimed and (not _is_int(claimed[job.id]) or claimed[job.id] != completion.get(i, view.slots)):
            result.add("completion", f"extra.completion.{job.id}",
                       f"claims slot {_short(claimed[job.id])}, the work reaches V in slot {completion.get(i, 'none')}")
        if job.id in moves:
            last = completion.get(i, view.slots)
            hosts = [set(per_slot[t][0]) | set(per_slot[t][1]) for t in sorted(per_slot) if t <= last]
            moved = sum(a != b for a, b in itertools.pairwise(hosts))
            if not _is_int(moves[job.id]) or moves[job.id] != moved:
                result.add("migrations", f"extra.migrations.{job.id}",
                           f"claims {_short(moves[job.id])}, the schedule changes the job's machines {moved} times")
    index = {job.id: i for i, job in enumerate(view.jobs)}
    for key, jobs in listed.items():
        for job_id in jobs:
            if index[job_id] in completion:
                result.add(key, f"extra.{key}.{job_id}", f"listed as {key}, but its work reaches V in slot {completion[index[job_id]]}")
    _capacity(result, view, cells_t, cells_h, cells_w, cells_s, cells_i)                                 # (C1)
    result.objective = total_delay(view, completion)


def _capacity(result: CheckResult, view: LocalityView, t: list[int], h: list[int], w: list[int], s: list[int], i: list[int]) -> None:
    """(C1): the load of every (slot, machine) that hosts a task, summed in job order, against its capacity."""
    if not t:
        return
    alpha = np.array([job.alpha for job in view.jobs])
    beta = np.array([job.beta for job in view.jobs])
    idx = np.array(i)
    use = np.array(w, dtype=float)[:, None] * alpha[idx] + np.array(s, dtype=float)[:, None] * beta[idx]
    cell = np.array(t, dtype=np.int64) * view.H + np.array(h, dtype=np.int64)
    keys, which = np.unique(cell, return_inverse=True)
    load = np.zeros((len(keys), len(view.resources)))
    np.add.at(load, which, use)                                                                        # in entry (job) order
    host = keys % view.H
    over = load > capacity_limit(view.capacity[host])
    for k, r in zip(*np.nonzero(over)):                                                                # by slot, machine, resource
        result.add("capacity", f"slot {int(keys[k] // view.H)}, {view.servers[host[k]]}, {view.resources[r]}",
                   f"uses {load[k, r]:g} > capacity {view.capacity[host[k], r]:g}")


def _read(result: CheckResult, instance: Instance, job: Any, task: str, counts: Any, where: str,
          machine: Mapping[str, int], into: dict[int, int]) -> bool:
    """Add ``{server: count}`` into ``into``; report every entry that is not a usable count.  True if all were."""
    if counts is None:
        return True
    if not isinstance(counts, Mapping):
        result.add("domain", where, f"must map server names to counts, got {_short(counts)}")
        return False
    ok = True
    for name, count in counts.items():
        if not isinstance(name, str) or name not in machine:
            result.add("unknown-server", f"{where}.{_short(name)}", "no such server in the instance")
            ok = False
            continue
        if not _is_int(count) or not 0 <= count <= MAX_COUNT:
            result.add("domain", f"{where}.{name}", f"count must be an integer in [0, 2**53], got {_short(count)}")
            ok = False
            continue
        if count and not job.may_run_on(instance.server(name), task):
            result.add("eligibility", f"{where}.{name}", f"{task} of job {job.id} may not run on {name}")
            ok = False
            continue
        into[machine[name]] = into.get(machine[name], 0) + count
    return ok
