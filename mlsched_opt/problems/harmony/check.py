"""Independent checker for harmony placements (capacity, gang completeness, no migration).

Uses the instance's view (job types, counts, demands, work) and the world's parameters, and
none of the simulator, search or policy code: the spec section 3 speed formulas are written out
again here, host by host with plain loops, and the trace is replayed event by event.

The replay costs O(size log size): placements are kept sparse (a job's servers only), every
server keeps the set of jobs running on it, an event (a start interval or a finish) recomputes
the speeds of the jobs sharing a server with the jobs that started or finished only, and the next
finish comes from a heap of projected finish times (stale entries carry an old version and are
skipped).  Capacity is checked at each start interval on the servers a job started on and the
servers over capacity at the previous check: a server's use only grows when a job starts there.

A decision is ``{"placement": {id: {"workers": {server: n}, "ps": {server: n}}}, "start": {id: k}}``:
one placement per job (a job is never migrated: the format has no second placement), which
must hold exactly W workers and P PSs (gang), start no earlier than the job's arrival and keep
every server within capacity at every start (capacity frees when a job finishes; a job
finishing exactly at an interval boundary frees its servers for that interval).  Under the
problem option ``starts=simultaneous`` every job must start in its arrival interval (rule
``simultaneous``).  The objective is the average JCT in intervals, ``finish / slot_s - arrival``.

Any JSON value is answered by a named rule, never an exception: ``decision`` (not an object, or
a part other than ``placement`` and ``start``, or a key of an entry other than ``workers`` and
``ps``, that is not absent or empty: ``admitted``, ``schedule``, ``extra``),
``type`` (a placement, entry or count map of the wrong type), ``missing``, ``domain`` (a start
or count that is not a non-negative integer, or a start past :data:`MAX_START`), ``gang`` (wrong
task counts, including absurdly large ones), ``arrival``, ``simultaneous``, ``capacity``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...checking.core import CheckResult, read_counts, unknown_jobs
from ...checking.parts import unread_parts
from ...io.instance import Instance
from ...tolerances import DONE_TOL, capacity_limit
from .view import HarmonyView, view_of

#: latest start interval the checker replays (far past any schedule a method makes; keeps times exact in floats)
MAX_START = 10**9
#: why the parts a harmony decision does not have must be absent or empty
WHY = {"admitted": "harmony places every job; there is no admission",
       "schedule": "harmony placements are static (one per job, held from its start); use placement and start",
       "extra": "harmony decisions carry no claims"}


def check(instance: Instance, decision: Mapping[str, Any], options: Mapping[str, Any], result: CheckResult) -> None:
    view = view_of(instance, options, require_fit=False)
    simultaneous = options.get("starts", "any") == "simultaneous"
    if not isinstance(decision, Mapping):
        result.add("decision", "decision", f"must be an object with placement and start, got {type(decision).__name__}")
        return
    unread_parts(result, decision, ("placement", "start"), "harmony", why=WHY)
    placement = _mapping(result, decision.get("placement"), "placement")
    starts = _mapping(result, decision.get("start"), "start")
    unknown_jobs(result, instance, [k for k in placement if isinstance(k, str)], "placement")
    unknown_jobs(result, instance, [k for k in starts if isinstance(k, str)], "start")
    index = {name: m for m, name in enumerate(view.servers)}
    # sparse placements: per job {server index: count}, per role
    w: list[dict[int, int]] = [{} for _ in range(view.J)]
    p: list[dict[int, int]] = [{} for _ in range(view.J)]
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
        unread_parts(result, entry, ("workers", "ps"), "harmony", where)
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
        for task, key, counts, want in (("worker", "workers", w[i], int(view.jobs.W[i])), ("ps", "ps", p[i], int(view.jobs.P[i]))):
            raw = entry.get(key)
            if raw is not None and not isinstance(raw, Mapping):
                result.add("type", f"{where}.{key}", f"must be an object {{server: count}}, got {type(raw).__name__}")
                continue
            got = 0
            for name, n in read_counts(result, instance, job, task, raw, f"{where}.{key}").items():
                got += n   # Python ints: a count of 2**70 is just a wrong count
                if got <= want:
                    counts[index[name]] = n
            if got != want:
                result.add("gang", f"{where}.{key}", f"places {_show(got)} {key}, the job has exactly {want}")
    if not result.feasible:
        return
    finish = _Replay(view, w, p).run(start, result)
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


class _Replay:
    """The trace under a fixed placement, event by event (see the module docstring for the cost).

    ``w[j]``, ``p[j]``: job ``j``'s workers and PSs per server index (non-zero entries only).
    A job's progress is kept as (remaining samples at ``since``, speed since then); only a change
    of its co-runners moves ``since``.
    """

    def __init__(self, view: HarmonyView, w: list[dict[int, int]], p: list[dict[int, int]]):
        self.view = view
        self.w, self.p = w, p
        self.hosts = [sorted(set(w[j]) | set(p[j])) for j in range(view.J)]
        self.on: dict[int, set[int]] = {}          # server -> running jobs with a task there
        self.loads: dict[int, list[float]] = {}    # server -> pressure per dimension (valid while its jobs are unchanged)
        self.remaining = view.samples.astype(float).copy()
        self.since = np.zeros(view.J)
        self.speed = np.zeros(view.J)
        self.version = np.zeros(view.J, int)
        self.running: set[int] = set()
        self.finish = np.full(view.J, np.nan)
        self.zero: list[tuple[float, int, int]] = []   # (time remaining reaches 0, version, job)
        self.done: list[tuple[float, int, int]] = []   # (time remaining reaches DONE_TOL * samples, version, job)

    def run(self, start: np.ndarray, result: CheckResult) -> np.ndarray | None:
        slot = self.view.slot_s
        order = np.argsort(start, kind="stable")
        over: set[int] = set()
        t, n = 0.0, 0
        while n < len(order):
            k = int(start[order[n]])
            group = []
            while n < len(order) and start[order[n]] == k:
                group.append(int(order[n]))
                n += 1
            t = self._run_until(t, k * slot)
            touched = self._add(group, t)
            over = self._capacity(sorted(touched | over), k, result)
        self._run_until(t, math.inf)
        return self.finish if result.feasible else None

    # --- events ------------------------------------------------------------------------------------------

    def _add(self, group: list[int], t: float) -> set[int]:
        touched: set[int] = set()
        for j in group:
            self.running.add(j)
            for m in self.hosts[j]:
                self.on.setdefault(m, set()).add(j)
                touched.add(m)
        self._changed(touched, t)
        return touched

    def _changed(self, servers: set[int], t: float) -> None:
        """The jobs on ``servers`` changed at time ``t``: new speeds for every job running there."""
        for m in servers:
            self.loads.pop(m, None)
        affected = sorted({j for m in servers for j in self.on.get(m, ())})
        for j in affected:
            self.remaining[j] -= self.speed[j] * (t - self.since[j])
            self.since[j] = t
            v = self.speed[j] = self._speed(j)
            self.version[j] += 1
            heapq.heappush(self.zero, (t + self.remaining[j] / v, int(self.version[j]), j))
            heapq.heappush(self.done, (t + (self.remaining[j] - DONE_TOL * self.view.samples[j]) / v, int(self.version[j]), j))

    def _run_until(self, t: float, end: float) -> float:
        while self.running and t < end:
            z = self._peek(self.zero)
            t = z if z < end else end
            finished = []
            while self.done and self.done[0][0] <= t:
                _, version, j = heapq.heappop(self.done)
                if version == self.version[j] and j in self.running:
                    finished.append(j)
            touched: set[int] = set()
            for j in finished:
                self.running.discard(j)
                self.finish[j] = t
                self.version[j] += 1   # its heap entries are stale now
                for m in self.hosts[j]:
                    self.on[m].discard(j)
                    touched.add(m)
            self._changed(touched, t)
        return t if self.running else max(t, end)

    def _peek(self, heap: list[tuple[float, int, int]]) -> float:
        while heap:
            time_, version, j = heap[0]
            if version == self.version[j] and j in self.running:
                return time_
            heapq.heappop(heap)
        return math.inf

    # --- capacity and speeds -------------------------------------------------------------------------------

    def _capacity(self, servers: list[int], k: int, result: CheckResult) -> set[int]:
        view = self.view
        over = set()
        for m in servers:
            jobs = sorted(self.on.get(m, ()))
            for r, name in enumerate(view.resources):
                use = sum(self.w[j].get(m, 0) * view.worker_demand[j, r] + self.p[j].get(m, 0) * view.ps_demand[j, r]
                          for j in jobs)
                if use > capacity_limit(view.capacity[m, r]):
                    result.add("capacity", f"interval {k}, {view.servers[m]}, {name}", f"uses {use:g} > capacity {view.capacity[m, r]:g}")
                    over.add(m)
        return over

    def _load(self, m: int) -> list[float]:
        """Total intensity per contention dimension of the tasks running on server ``m``."""
        load = self.loads.get(m)
        if load is None:
            world, kind = self.view.world, self.view.jobs.kind
            load = [0.0] * 4
            for k in sorted(self.on.get(m, ())):
                wk, pk = self.w[k].get(m, 0), self.p[k].get(m, 0)
                for r in range(4):
                    load[r] += wk * world.u_worker[kind[k], r] + pk * world.u_ps[kind[k], r]
            self.loads[m] = load
        return load

    def _speed(self, j: int) -> float:
        return job_speed(self.view, j, self.w[j], self.p[j], self._load)


def job_speed(view: HarmonyView, j: int, w: Mapping[int, int], p: Mapping[int, int], load: Callable[[int], list[float]]) -> float:
    """Samples/s of job ``j`` (spec section 3), one worker host at a time; ``w``, ``p``: its tasks
    per server, ``load(m)``: the total intensity per dimension of every running task on ``m``."""
    world = view.world
    kind, W, P, is_ps = int(view.jobs.kind[j]), int(view.jobs.W[j]), int(view.jobs.P[j]), bool(view.jobs.is_ps[j])
    s = world.s[kind]

    def g(x: float) -> float:
        return x + world.kappa * max(0.0, x - 1.0) ** 2

    def other_net(m: int) -> float:
        own = w.get(m, 0) * world.u_worker[kind, 3] + p.get(m, 0) * world.u_ps[kind, 3]
        return load(m)[3] - own

    hosts = sorted(m for m, n in w.items() if n > 0)
    ps_hosts = sorted(m for m, n in p.items() if n > 0)
    worst = 0.0
    for m in hosts:
        pressure = load(m)
        o = [pressure[r] - world.u_worker[kind, r] for r in range(4)]
        comp = world.t_comp[kind] * (1 + sum(s[r] * g(o[r]) for r in range(3)))
        if is_ps:
            f_rem = (P - p.get(m, 0)) / P
            remote = sum(w[h] * (P - p.get(h, 0)) / P for h in hosts)
            fan = math.sqrt(max(1.0, remote / P))
            onet = max([other_net(m)] + [other_net(h) for h in ps_hosts])
        else:
            f_rem = 1.0 if len(hosts) > 1 else 0.0
            fan = 1.0
            onet = max(other_net(h) for h in hosts)
        comm = ((1 - f_rem) * world.t_loc[kind] * (1 + s[2] * g(o[2]))
                + f_rem * world.t_rem[kind] * fan * (1 + s[3] * g(max(onet, 0.0))))
        worst = max(worst, comp + comm)
    return W * world.batch[kind] / worst
