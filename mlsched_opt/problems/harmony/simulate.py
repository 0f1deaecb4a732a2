"""Event-driven cluster simulation with interval-batched, gang, never-migrating placement.

Spec 004 sections 1.3 and 6a.  At the start of every scheduling interval the queued jobs (those
that arrived and have not started, in arrival order; a job rolled back stays at the head) are
placed one task at a time by a :class:`Chooser` (PSs first, then workers, spec 2.4).  When a task
fits on no server the job's partial placement is rolled back and the next queued job is tried
(gang semantics, spec 2.2).  Between placements, time advances from event to event: speeds are
recomputed whenever a job finishes.  A placed job keeps its servers until it finishes.

Deferral [our design, issue 21]: before a queued job's first task the chooser may hold it back
this interval ("not now", ``Chooser.defer``), only while :meth:`Env.may_defer` holds: within
``defer_max`` intervals of its arrival and while some job holds servers, so no job waits by
choice for longer than that.

The simulation is a generator (:func:`run_steps`) that yields every decision as an :class:`Ask`
and takes the answer by ``send``; :func:`simulate` answers with a chooser, the Gymnasium
environment (:mod:`.rl.gym_env`) with an agent's actions: one simulator for both.

The reward of interval t is Harmony's (DL2's ``_progress``): the sum over running jobs of the
fraction of their total work trained in the interval (spec 1.5); :attr:`Env.occupancy` is the
JCT-shaped signal (jobs in the system during the interval).

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
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ...clock import progress as report_progress
from ...tolerances import DONE_TOL
from .decision import placement_decision
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
    """Places one task at a time: ``choose`` returns a server index among ``mask``'s true entries.

    A chooser may also define ``defer(env, j) -> bool``: asked before a queued job's first task
    while :meth:`Env.may_defer` holds, true holds the job back this interval ("not now")."""

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
    # deferral: a queued job may be held back by choice within this many intervals of its arrival
    defer_max: int = 0
    # the queued jobs held back by choice in the current interval
    held: list[int] = field(default_factory=list)
    # jobs in the system during the last interval run (arrived, unfinished; a finishing one for its fraction)
    occupancy: float = 0.0

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

    def may_defer(self, j: int) -> bool:
        """Whether job ``j`` may be held back now: within ``defer_max`` intervals of its arrival,
        and only while some job holds servers (on an idle cluster waiting cannot pay)."""
        if self.interval >= self.view.arrival[j] + self.defer_max:
            return False
        return bool(self.running.any()) if self.live is None else bool(self.live.any())

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
    # (job, interval) pairs in which a queued job was held back by choice
    deferrals: int = 0
    #: seconds spent deciding about each job that was asked about (summed over the intervals it was
    #: tried in, in the order first asked): the report's ``decision_ms``; wall clock, never a decision input
    decision_s: list[float] = field(default_factory=list)

    def jct(self, view: HarmonyView) -> np.ndarray:
        return self.finish_s / view.slot_s - view.arrival

    def decision(self, view: HarmonyView) -> dict:
        return placement_decision(view, self.start, self.w, self.p)


def holds_back(chooser: Any, env: Env, j: int) -> bool:
    """Whether ``chooser`` holds job ``j`` back now by its own rule (one without ``defer`` never does)."""
    defer = getattr(chooser, "defer", None)
    return defer is not None and bool(defer(env, j))




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


@dataclass
class Ask:
    """A decision the simulation waits for (see :func:`run_steps`).

    ``kind``: ``"defer"`` (answer true to hold job ``j`` back this interval), ``"start"`` (job
    ``j``'s first task comes next; answer ignored), ``"task"`` (answer a server index among
    ``mask``'s true entries for one ``role`` task of job ``j``) or ``"end"`` (job ``j`` is placed,
    or rolled back when ``placed`` is false; answer ignored)."""

    kind: str
    env: Env
    j: int
    role: str = ""
    mask: np.ndarray | None = None
    placed: bool = False


#: the simulation as a generator: it yields every :class:`Ask` and returns the run
Steps = Generator[Ask, Any, HarmonyRun]


def _place_queue(env: Env, queue: list[int]) -> Generator[Ask, Any, list[int]]:
    """Place the queued jobs in order with gang rollback; returns the jobs placed."""
    placed = []
    env.queue = list(queue)
    env.held = []
    for j in queue:
        if env.may_defer(j) and (yield Ask("defer", env, j)):
            env.held.append(j)
            continue
        yield Ask("start", env, j)
        ok = yield from _place_job(env, j)
        yield Ask("end", env, j, placed=ok)
        if ok:
            placed.append(j)
    return placed


def _place_job(env: Env, j: int) -> Generator[Ask, Any, bool]:
    """Place job ``j``'s tasks one at a time (PSs first); all or none: a task that fits nowhere
    rolls the job back and returns false."""
    env.left = {"ps": int(env.view.jobs.P[j]), "worker": int(env.view.jobs.W[j])}
    for role in ROLES:
        while env.left[role] > 0:
            mask = env.feasible(j, role)
            if not mask.any():
                rollback(env, j)
                return False
            m = int((yield Ask("task", env, j, role, mask)))
            if not 0 <= m < len(mask) or not mask[m]:
                raise RuntimeError(f"chooser picked infeasible server {m} for a {role} of job {j}")
            env.put(j, role, m)
            env.left[role] -= 1
    return True


def place_job(env: Env, j: int, chooser: Chooser) -> bool:
    """:func:`_place_job` with ``chooser`` answering (a dry run's tool: no start or end hooks)."""
    steps = _place_job(env, j)
    answer = None
    try:
        while True:
            ask = steps.send(answer)
            assert ask.mask is not None  # _place_job asks for tasks only
            answer = chooser.choose(env, j, ask.role, ask.mask)
    except StopIteration as stop:
        return bool(stop.value)


def rollback(env: Env, j: int) -> None:
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
             fallback: Chooser | None = None, switch_s: float | None = None, defer_max: int = 0,
             priority: np.ndarray | None = None, skip_quiet: bool = False) -> HarmonyRun:
    """Run the whole trace under ``chooser``; speeds from ``speed_fn`` (default: the true world).

    ``on_interval(env, reward)`` is called after each interval in which something ran (training
    hooks use it); intervals with nothing to do are skipped (spec pitfall P9).  With
    ``time_limit`` (seconds of wall clock) the run raises :class:`TimeLimitReached` once past it:
    the loop advances one interval at a time, so huge work must never run unbounded.  With
    ``fallback`` and ``switch_s`` (seconds, below ``time_limit``), the jobs still unplaced after
    ``switch_s`` are placed by ``fallback`` (anytime: a fast heuristic finishes the schedule).
    ``defer_max``: the deferral rule (:meth:`Env.may_defer`); 0 never asks the chooser to defer.
    ``priority`` and ``skip_quiet``: see :func:`run_steps`.
    """
    began = time.perf_counter()
    deadline = None if time_limit is None else began + time_limit
    handover = None if fallback is None or switch_s is None else Handover(fallback, began + switch_s)
    steps = run_steps(view, speed_fn, on_interval, deadline, defer_max, priority, skip_quiet)

    def decider(env: Env) -> Chooser:
        # who decides a job is settled at its turn: the handover switches between jobs
        return chooser if handover is None else handover.chooser(env, chooser)

    current = chooser
    answer: Any = None
    spent: dict[int, float] = {}   # job -> seconds deciding about it (insertion order: first asked)
    since: float | None = None     # when the decision about the job now asked about began
    try:
        while True:
            ask = steps.send(answer)
            answer = None
            if ask.kind == "task":
                assert ask.mask is not None  # a task ask carries its mask
                answer = current.choose(ask.env, ask.j, ask.role, ask.mask)
            elif ask.kind == "defer":
                since = time.perf_counter()
                current = decider(ask.env)
                answer = holds_back(current, ask.env, ask.j)
                if answer:
                    spent[ask.j] = spent.get(ask.j, 0.0) + time.perf_counter() - since
                    since = None
            elif ask.kind == "start":
                since = time.perf_counter() if since is None else since
                current = decider(ask.env)
                current.start_job(ask.env, ask.j)
            else:
                current.end_job(ask.env, ask.j, ask.placed)
                if ask.placed and handover is not None and current is handover.fallback:
                    handover.placed += 1
                if since is not None:
                    spent[ask.j] = spent.get(ask.j, 0.0) + time.perf_counter() - since
                since = None
    except StopIteration as stop:
        run: HarmonyRun = stop.value
    if handover is not None:
        run.cut_interval, run.cut_placed = handover.interval, handover.placed
    run.decision_s = list(spent.values())
    return run


def run_steps(view: HarmonyView, speed_fn: SpeedFn | None = None, on_interval: Callable[[Env, float], None] | None = None,
              deadline: float | None = None, defer_max: int = 0, priority: np.ndarray | None = None,
              skip_quiet: bool = False) -> Steps:
    """The simulation of :func:`simulate` as a generator: every decision is yielded as an
    :class:`Ask` and answered by ``send`` (so an RL environment can step it one action at a time);
    returns the :class:`HarmonyRun`.  ``deadline``: a ``time.perf_counter`` value.

    ``priority``: the queue order, ascending ``(priority[j], j)`` at every interval (``None``: arrival
    order, a job rolled back staying at the head).  ``skip_quiet``: no placement round in an interval
    where nothing changed since the last one (no job placed in it, none finished since, none arrived,
    no deferral window closed), which asks the chooser exactly what it was asked before; only for a
    chooser whose answers depend on the cluster's state alone (deterministic, no interval count), whose
    answers it leaves unchanged (our design: 2,000-job traces queue for thousands of intervals)."""
    # only the true world's speeds are reused while the running set is unchanged: a given speed_fn
    # may record each call (training logs reward samples per interval)
    reuse = speed_fn is None
    speed_fn = speed_fn or true_speeds(view)
    env = Env.empty(view)
    env.defer_max = int(defer_max)
    order = np.lexsort((np.arange(view.J), view.arrival))
    # a deque: popping the head of a list moves every later job, quadratic over a whole trace
    pending = deque(int(j) for j in order)
    queue: list[int] = []
    rewards: list[float] = []
    fallbacks = decisions = deferrals = 0
    k = 0
    changed = True   # whether the cluster or the queue changed since the last placement round
    while pending or queue or env.running.any():
        report_progress(int(env.done.sum()), view.J)
        if deadline is not None and time.perf_counter() > deadline:
            raise TimeLimitReached(k, int(env.done.sum()))
        if not env.running.any() and not queue:
            k = max(k, int(view.arrival[pending[0]]))
        while pending and view.arrival[pending[0]] <= k:
            queue.append(pending.popleft())
            changed = True
        env.interval = k
        if priority is not None and changed:
            queue.sort(key=lambda j: (priority[j], j))
        if queue and (changed or not skip_quiet or _window_closes(view, queue, k, env.defer_max)):
            env.held = []
            placed = yield from _place_queue(env, queue)
        else:
            placed = []
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
        deferrals += len(env.held)
        assert env.placed_w is not None and env.placed_p is not None  # Env.empty sets them
        for j in placed:
            queue.remove(j)
            env.running[j] = True
            env.start[j] = k
            env.placed_w[j], env.placed_p[j] = env.w[j], env.p[j]
        finished = int(env.done.sum())
        reward = _advance(env, k, speed_fn, reuse)
        changed = bool(placed) or int(env.done.sum()) > finished
        rewards.append(reward)
        if on_interval is not None:
            on_interval(env, reward)
        k += 1
    assert env.placed_w is not None and env.placed_p is not None  # Env.empty sets them
    return HarmonyRun(env.start.copy(), env.placed_w.copy(), env.placed_p.copy(), env.finish_s.copy(), rewards, fallbacks, decisions,
                      deferrals=deferrals)


def _window_closes(view: HarmonyView, queue: list[int], k: int, defer_max: int) -> bool:
    """Whether a queued job's deferral window closes at interval ``k`` (it may no longer be held back)."""
    return defer_max > 0 and bool(np.any(view.arrival[queue] + defer_max == k))


def _advance(env: Env, k: int, speed_fn: SpeedFn, reuse: bool = False) -> float:
    """Run interval ``k`` event by event; returns its reward (sum of fractions of work trained).
    ``reuse``: keep the speeds while the running set is unchanged (``speed_fn`` is pure)."""
    view = env.view
    t, end = k * view.slot_s, (k + 1) * view.slot_s
    before = env.remaining.copy()
    present = np.flatnonzero((view.arrival <= k) & ~env.done)
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
    # jobs in the system during the interval (a finishing job for its fraction): summed over the
    # intervals it is the total JCT (Little's law), the JCT-shaped reward's signal
    stay = np.where(env.done[present], env.finish_s[present] / view.slot_s - k, 1.0)
    env.occupancy = float(np.clip(stay, 0.0, 1.0).sum())
    return float(((before - env.remaining) / view.samples).sum())


def interference_now(env: Env, j: int, alone: np.ndarray, dry_run: Chooser) -> tuple[float, float]:
    """If job ``j`` were placed now by ``dry_run``: its speed over its standalone speed, and the
    normalised speed the jobs already holding servers (running or placed this interval) would
    lose; ``(0, 0)`` when it does not fit.  The state is restored (the job is rolled back and the
    tasks left to place are put back).  Speeds are the world's (the same model the profiled
    pair table of ``least-interference`` is read from), not a learned reward model's."""
    view = env.view
    rows = env.rows()
    before = sparse_speeds(view.world, view.jobs.take(rows), env.w[rows], env.p[rows]) if len(rows) else np.zeros(0)
    left = dict(env.left)
    try:
        if not place_job(env, j, dry_run):
            return 0.0, 0.0
        after_rows = env.rows()
        v = sparse_speeds(view.world, view.jobs.take(after_rows), env.w[after_rows], env.p[after_rows])
    finally:
        rollback(env, j)
        env.left = left
    at = np.searchsorted(after_rows, j)
    others = np.delete(v, at)
    lost = float(((before - others) / alone[rows]).sum()) if len(rows) else 0.0
    return float(v[at] / alone[j]), lost
