"""Independent checker for harmony placements (capacity, gang completeness, no migration).

Uses the instance's view (job types, counts, demands, work) and the world's parameters, and
none of the simulator, search or policy code: the spec section 3 speed formulas are written out
again here, task by task with plain loops, and the trace is replayed event by event.

A decision is ``{"placement": {id: {"workers": {server: n}, "ps": {server: n}}}, "start": {id: k}}``:
one placement per job (a job is never migrated: the format has no second placement), which
must hold exactly W workers and P PSs (gang), start no earlier than the job's arrival and keep
every server within capacity at every start (capacity frees when a job finishes; a job
finishing exactly at an interval boundary frees its servers for that interval).  Under the
problem option ``starts=simultaneous`` every job must start in its arrival interval (rule
``simultaneous``).  The objective is the average JCT in intervals, ``finish / slot_s - arrival``.

Any JSON value is answered by a named rule, never an exception: ``decision`` (not an object),
``type`` (a placement, entry or count map of the wrong type), ``missing``, ``domain`` (a start
or count that is not a non-negative integer, or a start past :data:`MAX_START`), ``gang`` (wrong
task counts, including absurdly large ones), ``arrival``, ``simultaneous``, ``capacity``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...checking.core import CheckResult, read_counts, unknown_jobs
from ...io.instance import Instance
from ...tolerances import CHECK_TOL, DONE_TOL
from .view import HarmonyView, view_of

#: latest start interval the checker replays (far past any schedule a method makes; keeps times exact in floats)
MAX_START = 10**9


def check(instance: Instance, decision: Mapping[str, Any], options: Mapping[str, Any], result: CheckResult) -> None:
    view = view_of(instance, options, require_fit=False)
    simultaneous = options.get("starts", "any") == "simultaneous"
    if not isinstance(decision, Mapping):
        result.add("decision", "decision", f"must be an object with placement and start, got {type(decision).__name__}")
        return
    placement = _mapping(result, decision.get("placement"), "placement")
    starts = _mapping(result, decision.get("start"), "start")
    unknown_jobs(result, instance, [k for k in placement if isinstance(k, str)], "placement")
    unknown_jobs(result, instance, [k for k in starts if isinstance(k, str)], "start")
    index = {name: m for m, name in enumerate(view.servers)}
    w = np.zeros((view.J, view.M), int)
    p = np.zeros((view.J, view.M), int)
    start = np.full(view.J, -1)
    for i, job in enumerate(instance.jobs):
        entry = placement.get(job.id)
        where = f"placement.{job.id}"
        if entry is None:
            result.add("missing", where, "every job must be placed")
            continue
        if not isinstance(entry, Mapping):
            result.add("type", where, f"must be an object {{workers, ps}}, got {type(entry).__name__}")
            continue
        k = starts.get(job.id)
        if k is None:
            result.add("missing", f"start.{job.id}", "every placed job needs a start interval")
            continue
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            result.add("domain", f"start.{job.id}", f"must be a non-negative integer interval, got {_show(k)}")
            continue
        if k > MAX_START:
            result.add("domain", f"start.{job.id}", f"starts in interval {_show(k)}, past the latest the checker replays ({MAX_START})")
            continue
        if simultaneous and k != view.arrival[i]:
            result.add("simultaneous", f"start.{job.id}",
                       f"starts=simultaneous: must start in its arrival interval {int(view.arrival[i])}, got {k}")
        elif k < view.arrival[i]:
            result.add("arrival", f"start.{job.id}", f"starts in interval {k} before it arrives ({view.arrival[i]})")
        start[i] = k
        for task, key, arr, want in (("worker", "workers", w, int(view.jobs.W[i])), ("ps", "ps", p, int(view.jobs.P[i]))):
            raw = entry.get(key)
            if raw is not None and not isinstance(raw, Mapping):
                result.add("type", f"{where}.{key}", f"must be an object {{server: count}}, got {type(raw).__name__}")
                continue
            got = 0
            for name, n in read_counts(result, instance, job, task, raw, f"{where}.{key}").items():
                got += n   # Python ints: a count of 2**70 is just a wrong count
                if got <= want:
                    arr[i, index[name]] = n
            if got != want:
                result.add("gang", f"{where}.{key}", f"places {_show(got)} {key}, the job has exactly {want}")
    if not result.feasible:
        return
    finish = _replay(view, w, p, start, result)
    if finish is not None:
        result.objective = float(np.mean(finish / view.slot_s - view.arrival))


def _mapping(result: CheckResult, value: Any, where: str) -> Mapping:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        result.add("type", where, f"must be an object keyed by job id, got {type(value).__name__}")
        return {}
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _replay(view: HarmonyView, w: np.ndarray, p: np.ndarray, start: np.ndarray, result: CheckResult) -> np.ndarray | None:
    remaining = view.samples.astype(float).copy()
    finish = np.full(view.J, np.nan)
    running: set[int] = set()
    t = 0.0
    for k in sorted({int(x) for x in start}):
        t = _run_until(view, w, p, running, remaining, finish, t, k * view.slot_s)
        running |= {j for j in range(view.J) if start[j] == k}
        _capacity(view, w, p, running, k, result)
    _run_until(view, w, p, running, remaining, finish, t, math.inf)
    return finish if result.feasible else None


def _run_until(view, w, p, running, remaining, finish, t, end) -> float:
    while running and t < end:
        load = _pressures(view, w, p, running)
        v = {j: _speed(view, j, w, p, running, load) for j in running}
        dt = min(remaining[j] / v[j] for j in running)
        if dt >= end - t:
            dt, t_next = end - t, end
        else:
            t_next = t + dt
        for j in running:
            remaining[j] -= v[j] * dt
        t = t_next
        for j in [j for j in running if remaining[j] <= DONE_TOL * view.samples[j]]:
            running.discard(j)
            finish[j] = t
    return t if running else max(t, end)


def _capacity(view: HarmonyView, w, p, running, k: int, result: CheckResult) -> None:
    for m in range(view.M):
        for r, name in enumerate(view.resources):
            use = sum(w[j, m] * view.worker_demand[j, r] + p[j, m] * view.ps_demand[j, r] for j in running)
            if use > view.capacity[m, r] * (1 + CHECK_TOL) + CHECK_TOL:
                result.add("capacity", f"interval {k}, {view.servers[m]}, {name}", f"uses {use:g} > capacity {view.capacity[m, r]:g}")


def _pressures(view: HarmonyView, w, p, running) -> list[list[float]]:
    """Total intensity per server and contention dimension of the running tasks (computed once per
    event, so a replay costs O(J^2 M), not O(J^3 M))."""
    world = view.world
    load = [[0.0] * 4 for _ in range(view.M)]
    for k in running:
        kind = view.jobs.kind[k]
        for m in range(view.M):
            if w[k, m] or p[k, m]:
                for r in range(4):
                    load[m][r] += w[k, m] * world.u_worker[kind, r] + p[k, m] * world.u_ps[kind, r]
    return load


def _speed(view: HarmonyView, j: int, w, p, running, load: list[list[float]] | None = None) -> float:
    """Samples/s of job ``j`` (spec section 3), one worker host at a time."""
    world = view.world
    kind, W, P, is_ps = int(view.jobs.kind[j]), int(view.jobs.W[j]), int(view.jobs.P[j]), bool(view.jobs.is_ps[j])
    s = world.s[kind]
    if load is None:
        load = _pressures(view, w, p, running)

    def g(x: float) -> float:
        return x + world.kappa * max(0.0, x - 1.0) ** 2

    def pressure(m: int, r: int) -> float:
        return load[m][r]

    def other_net(m: int) -> float:
        own = w[j, m] * world.u_worker[kind, 3] + p[j, m] * world.u_ps[kind, 3]
        return load[m][3] - own

    hosts = [m for m in range(view.M) if w[j, m] > 0]
    worst = 0.0
    for m in hosts:
        o = [pressure(m, r) - world.u_worker[kind, r] for r in range(4)]
        comp = world.t_comp[kind] * (1 + sum(s[r] * g(o[r]) for r in range(3)))
        if is_ps:
            f_rem = (P - p[j, m]) / P
            remote = sum(w[j, h] * (P - p[j, h]) / P for h in range(view.M))
            fan = math.sqrt(max(1.0, remote / P))
            onet = max([other_net(m)] + [other_net(h) for h in range(view.M) if p[j, h] > 0])
        else:
            f_rem = 1.0 if len(hosts) > 1 else 0.0
            fan = 1.0
            onet = max(other_net(h) for h in hosts)
        comm = ((1 - f_rem) * world.t_loc[kind] * (1 + s[2] * g(o[2]))
                + f_rem * world.t_rem[kind] * fan * (1 + s[3] * g(max(onet, 0.0))))
        worst = max(worst, comp + comm)
    return W * world.batch[kind] / worst
