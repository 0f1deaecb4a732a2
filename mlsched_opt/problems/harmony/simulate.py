"""Event-driven cluster simulation with interval-batched, gang, never-migrating placement.

Spec 004 sections 1.3 and 6a.  At the start of every scheduling interval the queued jobs (those
that arrived and have not started, in arrival order; a job rolled back stays at the head) are
placed one task at a time by a :class:`Chooser` (PSs first, then workers, spec 2.4).  When a task
fits on no server the job's partial placement is rolled back and the next queued job is tried
(gang semantics, spec 2.2).  Between placements, time advances from event to event: speeds are
recomputed whenever a job finishes.  A placed job keeps its servers until it finishes.

The reward of interval t is Harmony's (DL2's ``_progress``): the sum over running jobs of the
fraction of their total work trained in the interval (spec 1.5).

Cost at scale: speeds change only when the set of running jobs changes (a start or a finish),
so they are computed once per change, from the running jobs' non-zero placement entries
(:func:`~.world.sparse_speeds`, the same numbers as the dense formula), not once per interval
over every (job, server) pair.  :meth:`Env.rows` lists the jobs holding tasks, so choosers
aggregate over those rows only.

Anytime: ``simulate(..., fallback=F, switch_s=s)`` hands every job still unplaced after ``s``
seconds to the chooser ``F`` (a fast heuristic), so a slow policy cut short still returns a
complete schedule; the run records how many jobs ``F`` placed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ...clock import progress as report_progress
from ...tolerances import DONE_TOL
from .view import HarmonyView, empty_cluster_placement
from .world import sparse_speeds

ROLES = ("ps", "worker")

SpeedFn = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


class TimeLimitReached(Exception):
    """The simulation passed its deadline before every job finished (no complete decision)."""

    def __init__(self, interval: int, finished: int):
        super().__init__(f"time limit in interval {interval} with {finished} jobs finished")
        self.interval = interval
        self.finished = finished


class Chooser(Protocol):
    """Places one task at a time: ``choose`` returns a server index among ``mask``'s true entries."""

    def start_job(self, env: Env, j: int) -> None: ...

    def choose(self, env: Env, j: int, role: str, mask: np.ndarray) -> int: ...

    def end_job(self, env: Env, j: int, placed: bool) -> None: ...


@dataclass
class Env:
    """The cluster at one instant: free capacity, every job's placement and remaining samples."""

    view: HarmonyView
    free: np.ndarray
    w: np.ndarray
    p: np.ndarray
    remaining: np.ndarray
    running: np.ndarray
    done: np.ndarray
    start: np.ndarray
    finish_s: np.ndarray
    interval: int = 0
    queue: list[int] = field(default_factory=list)
    # placements as started (w, p above hold only running jobs and the job being placed)
    placed_w: np.ndarray | None = None
    placed_p: np.ndarray | None = None
    # the job being placed: tasks still to place, per role
    left: dict[str, int] = field(default_factory=dict)
    # jobs with tasks in w, p (running, placed this interval, being placed): the rows choosers sum over
    live: np.ndarray | None = None
    # speeds of the running jobs while the running set is unchanged: (running jobs, samples/s)
    speed_cache: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def empty(cls, view: HarmonyView) -> Env:
        J, M = view.J, view.M
        return cls(view=view, free=view.capacity.astype(float).copy(), w=np.zeros((J, M), int), p=np.zeros((J, M), int),
                   remaining=view.samples.astype(float).copy(), running=np.zeros(J, bool), done=np.zeros(J, bool),
                   start=np.full(J, -1), finish_s=np.full(J, np.nan), placed_w=np.zeros((J, M), int), placed_p=np.zeros((J, M), int),
                   live=np.zeros(J, bool))

    def rows(self) -> np.ndarray:
        """The jobs holding tasks now, ascending (every other row of ``w``, ``p`` is zero)."""
        if self.live is None:   # an Env built by hand: every row may hold tasks
            return np.arange(self.view.J)
        return np.flatnonzero(self.live)

    def feasible(self, j: int, role: str) -> np.ndarray:
        return np.all(self.free >= self.view.demand(role)[j] - 1e-9, axis=1)

    def put(self, j: int, role: str, m: int, sign: int = 1) -> None:
        (self.w if role == "worker" else self.p)[j, m] += sign
        self.free[m] -= sign * self.view.demand(role)[j]
        if sign > 0 and self.live is not None:
            self.live[j] = True


@dataclass
class HarmonyRun:
    """What a simulated run decided and how it went (JCT in intervals)."""

    start: np.ndarray
    w: np.ndarray
    p: np.ndarray
    finish_s: np.ndarray
    rewards: list[float]
    fallbacks: int
    decisions: int
    # anytime: the interval in which the fallback chooser took over (None: never) and the jobs it placed
    cut_interval: int | None = None
    cut_placed: int = 0

    def jct(self, view: HarmonyView) -> np.ndarray:
        return self.finish_s / view.slot_s - view.arrival

    def decision(self, view: HarmonyView) -> dict:
        return placement_decision(view, self.start, self.w, self.p)


def placement_decision(view: HarmonyView, start: np.ndarray, w: np.ndarray, p: np.ndarray) -> dict:
    """The solution format: ``placement`` (job -> tasks per server) and ``start`` (job -> interval)."""
    placement = {}
    for j, job_id in enumerate(view.ids):
        placement[job_id] = {"workers": {view.servers[m]: int(w[j, m]) for m in np.flatnonzero(w[j])},
                             "ps": {view.servers[m]: int(p[j, m]) for m in np.flatnonzero(p[j])}}
    return {"placement": placement, "start": {job_id: int(start[j]) for j, job_id in enumerate(view.ids)}}


def true_speeds(view: HarmonyView) -> SpeedFn:
    """The ground-truth speed oracle: samples/s of jobs ``idx`` under placement ``(w, p)`` (all jobs' rows)."""
    def fn(idx: np.ndarray, w: np.ndarray, p: np.ndarray) -> np.ndarray:
        return sparse_speeds(view.world, view.jobs.take(idx), w[idx], p[idx])
    return fn


@dataclass
class Handover:
    """Anytime placement: from ``switch_at`` (a ``time.perf_counter`` value) on, every job is
    placed by ``fallback`` instead of the run's chooser; ``placed`` counts the jobs it placed."""

    fallback: Chooser
    switch_at: float
    interval: int | None = None
    placed: int = 0

    def chooser(self, env: Env, chooser: Chooser) -> Chooser:
        if self.interval is None and time.perf_counter() >= self.switch_at:
            self.interval = env.interval
        return chooser if self.interval is None else self.fallback


def place_queue(env: Env, queue: list[int], chooser: Chooser, handover: Handover | None = None) -> list[int]:
    """Place the queued jobs in order with gang rollback; returns the jobs placed.  With
    ``handover``, its fallback places every job once its switch time has passed."""
    placed = []
    env.queue = list(queue)
    base = chooser
    for j in queue:
        chooser = base if handover is None else handover.chooser(env, base)
        chooser.start_job(env, j)
        env.left = {"ps": int(env.view.jobs.P[j]), "worker": int(env.view.jobs.W[j])}
        ok = True
        for role in ROLES:
            while env.left[role] > 0:
                mask = env.feasible(j, role)
                if not mask.any():
                    ok = False
                    break
                m = int(chooser.choose(env, j, role, mask))
                if not mask[m]:
                    raise RuntimeError(f"chooser picked infeasible server {m} for a {role} of job {j}")
                env.put(j, role, m)
                env.left[role] -= 1
            if not ok:
                break
        if not ok:
            _rollback(env, j)
        chooser.end_job(env, j, ok)
        if ok:
            placed.append(j)
            if handover is not None and chooser is handover.fallback:
                handover.placed += 1
    return placed


def _rollback(env: Env, j: int) -> None:
    # task by task, server by server, as placed in reverse: free capacity returns to the same floats
    for m in map(int, np.flatnonzero((env.w[j] != 0) | (env.p[j] != 0))):
        while env.w[j, m]:
            env.put(j, "worker", m, -1)
        while env.p[j, m]:
            env.put(j, "ps", m, -1)
    if env.live is not None:
        env.live[j] = False


def simulate(view: HarmonyView, chooser: Chooser, speed_fn: SpeedFn | None = None,
             on_interval: Callable[[Env, float], None] | None = None, time_limit: float | None = None,
             fallback: Chooser | None = None, switch_s: float | None = None) -> HarmonyRun:
    """Run the whole trace under ``chooser``; speeds from ``speed_fn`` (default: the true world).

    ``on_interval(env, reward)`` is called after each interval in which something ran (training
    hooks use it); intervals with nothing to do are skipped (spec pitfall P9).  With
    ``time_limit`` (seconds of wall clock) the run raises :class:`TimeLimitReached` once past it:
    the loop advances one interval at a time, so huge work must never run unbounded.  With
    ``fallback`` and ``switch_s`` (seconds, below ``time_limit``), the jobs still unplaced after
    ``switch_s`` are placed by ``fallback`` (anytime: a fast heuristic finishes the schedule).
    """
    began = time.perf_counter()
    deadline = None if time_limit is None else began + time_limit
    handover = None if fallback is None or switch_s is None else Handover(fallback, began + switch_s)
    # only the true world's speeds are reused while the running set is unchanged: a given speed_fn
    # may record each call (training logs reward samples per interval)
    reuse = speed_fn is None
    speed_fn = speed_fn or true_speeds(view)
    env = Env.empty(view)
    order = np.lexsort((np.arange(view.J), view.arrival))
    pending = list(order)
    queue: list[int] = []
    rewards: list[float] = []
    fallbacks = decisions = 0
    k = 0
    while pending or queue or env.running.any():
        report_progress(int(env.done.sum()), view.J)
        if deadline is not None and time.perf_counter() > deadline:
            raise TimeLimitReached(k, int(env.done.sum()))
        if not env.running.any() and not queue:
            k = max(k, int(view.arrival[pending[0]]))
        while pending and view.arrival[pending[0]] <= k:
            queue.append(pending.pop(0))
        env.interval = k
        placed = place_queue(env, queue, chooser, handover) if queue else []
        if queue and not placed and not env.running.any():
            # a chooser that fragments the empty cluster must not stall the trace
            j = queue[0]
            empty = empty_cluster_placement(view, j)
            assert empty is not None, j  # every accepted job fits on the empty cluster
            env.w[j], env.p[j] = empty
            env.free = view.capacity - env.w[j][:, None] * view.worker_demand[j] - env.p[j][:, None] * view.ps_demand[j]
            if env.live is not None:
                env.live[j] = True
            placed = [j]
            fallbacks += 1
        decisions += len(placed)
        assert env.placed_w is not None and env.placed_p is not None  # Env.empty sets them
        for j in placed:
            queue.remove(j)
            env.running[j] = True
            env.start[j] = k
            env.placed_w[j], env.placed_p[j] = env.w[j], env.p[j]
        reward = _advance(env, k, speed_fn, reuse)
        rewards.append(reward)
        if on_interval is not None:
            on_interval(env, reward)
        k += 1
    assert env.placed_w is not None and env.placed_p is not None  # Env.empty sets them
    cut = (None, 0) if handover is None else (handover.interval, handover.placed)
    return HarmonyRun(env.start.copy(), env.placed_w.copy(), env.placed_p.copy(), env.finish_s.copy(), rewards, fallbacks, decisions,
                      *cut)


def _advance(env: Env, k: int, speed_fn: SpeedFn, reuse: bool = False) -> float:
    """Run interval ``k`` event by event; returns its reward (sum of fractions of work trained).
    ``reuse``: keep the speeds while the running set is unchanged (``speed_fn`` is pure)."""
    view = env.view
    t, end = k * view.slot_s, (k + 1) * view.slot_s
    before = env.remaining.copy()
    while env.running.any() and t < end:
        idx = np.flatnonzero(env.running)
        # placements never change while a job runs: the same running set has the same speeds
        if reuse and env.speed_cache is not None and np.array_equal(env.speed_cache[0], idx):
            v = env.speed_cache[1]
        else:
            v = speed_fn(idx, env.w, env.p)
            env.speed_cache = (idx, v) if reuse else None
        dt_finish = env.remaining[idx] / v
        dt = float(dt_finish.min())
        if dt >= end - t:
            dt, t_next = end - t, end
        else:
            t_next = t + dt
        env.remaining[idx] -= v * dt
        t = t_next
        for j in idx[env.remaining[idx] <= DONE_TOL * view.samples[idx]]:
            env.remaining[j] = 0.0
            env.running[j] = False
            env.done[j] = True
            env.finish_s[j] = t
            env.free += env.w[j][:, None] * view.worker_demand[j] + env.p[j][:, None] * view.ps_demand[j]
            env.w[j] = 0   # a finished job leaves its servers: policies and heuristics see only running jobs
            env.p[j] = 0
            if env.live is not None:
                env.live[j] = False
    return float(((before - env.remaining) / view.samples).sum())
