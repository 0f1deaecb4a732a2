"""Placement heuristics: the schedulers Harmony is compared with (spec 004 section 4, [PROP] set).

Each is a :class:`~.simulate.Chooser` that picks a server for one task; the simulator supplies
the gang rollback.  Scores use capacities normalised per resource, so CPU cores, GPUs and GB
weigh alike.

* ``load-balance`` — the least-loaded feasible server (Mesos/Kubernetes spreading).
* ``packing`` — bin packing: the feasible server with the least free capacity (Borg-style).
* ``tetris`` — multi-resource packing by alignment: the largest dot product of the task's
  demand and the server's free capacity (Grandl et al. 2014; DL2 ``tetris_env.py``).
* ``least-interference`` — LIF-pairwise: the feasible server with the smallest sum of profiled
  pairwise slowdowns between the task's job type and the other jobs' tasks there (the table is
  profiled from the true world, :func:`pair_table`); ties go to the server already holding the
  job's tasks, then to the least loaded.
* ``standalone`` — standalone-first: a server with no other job's task (the job's own first),
  else the least loaded.
* ``random`` — a uniformly random feasible server (seeded).

Deferral variants [our design, issue 21], ``least-interference-defer`` and ``standalone-defer``
(:class:`Deferring`): the same placement, but a queued job is held back ("not now", within the
simulator's deferral rule) while the heuristic would place it now at less than ``threshold`` of
its standalone speed, or while a job at most ``1 / shorter`` as long queues behind it
(shortest-first by deferral; 0 turns that rule off).  The speed it would run at comes from a dry
run of the heuristic at the world's speeds (as ``least-interference``'s profiled table does).
"""

from __future__ import annotations

import math

import numpy as np

from .options import DEFERRING
from .placements import MAX_VECTORS, empty_product, extend_product, job_options, standalone_profile, standalone_speeds
from .simulate import Env, interference_now
from .view import HarmonyView
from .world import Jobs, World, cached_per_world, speeds


class Heuristic:
    """A chooser that scores feasible servers (lower is better; ties to the lowest index)."""

    def start_job(self, env: Env, j: int) -> None:
        pass

    def end_job(self, env: Env, j: int, placed: bool) -> None:
        pass

    def score(self, env: Env, j: int, role: str) -> np.ndarray:
        raise NotImplementedError

    def choose(self, env: Env, j: int, role: str, mask: np.ndarray) -> int:
        score = np.where(mask, self.score(env, j, role), np.inf)
        return int(np.argmin(score))


def _load(env: Env) -> np.ndarray:
    cap = np.maximum(env.view.capacity, 1e-12)
    return ((cap - env.free) / cap).sum(axis=1)


class LoadBalance(Heuristic):
    def score(self, env, j, role):
        return _load(env)


class Planned(LoadBalance):
    """A chooser that places each job by a plan made at its turn, ``(role, server)`` steps taken in any
    order a task's role allows; a task the plan does not cover (or no longer fits) goes where load
    balancing puts it."""

    plan: dict[int, list[tuple[str, int]]]

    def choose(self, env: Env, j: int, role: str, mask: np.ndarray) -> int:
        steps = self.plan.get(j)
        if steps:
            for n, (r, m) in enumerate(steps):
                if r == role and mask[m]:
                    steps.pop(n)
                    return m
        return super().choose(env, j, role, mask)

    def end_job(self, env: Env, j: int, placed: bool) -> None:
        self.plan.pop(j, None)


class Packing(Heuristic):
    def score(self, env, j, role):
        return -_load(env)


class Tetris(Heuristic):
    def score(self, env, j, role):
        cap = np.maximum(env.view.capacity, 1e-12)
        demand = env.view.demand(role)[j] / cap.max(axis=0)
        return -((env.free / cap) @ demand)


class LeastInterference(Heuristic):
    def score(self, env, j, role):
        view = env.view
        table = pair_table(view.world)
        a = view.jobs.kind[j]
        rows = env.rows()
        rows = rows[rows != j]
        # only the jobs holding tasks contribute; np.add.at sums each server's terms in job order,
        # as the dense sum over all jobs did (the other rows were exact zeros): the same floats
        tasks = env.w[rows] + env.p[rows]
        r, m = np.nonzero(tasks)
        kind = view.jobs.kind[rows[r]]
        cost = np.zeros(view.M)
        np.add.at(cost, m, (table[a, kind] + table[kind, a]) * tasks[r, m])
        cost = cost / 2
        own = env.w[j] + env.p[j]
        # ties (typically empty servers) by locality, then load; both < 1e-3 of one pair's cost
        return cost - 1e-4 * own + 1e-6 * _load(env)


class Standalone(Heuristic):
    def score(self, env, j, role):
        rows = env.rows()
        others = (env.w[rows] + env.p[rows]).sum(axis=0) - env.w[j] - env.p[j]
        own = env.w[j] + env.p[j]
        return np.where(others > 0, 10.0, 0.0) - 1.0 * (own > 0) + 0.01 * _load(env)


class RandomFeasible(Heuristic):
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def choose(self, env, j, role, mask):
        return int(self.rng.choice(np.flatnonzero(mask)))


class Delegating:
    """A chooser that places every task as ``inner`` does; subclasses add a deferral rule or a log."""

    def __init__(self, inner):
        self.inner = inner

    def start_job(self, env: Env, j: int) -> None:
        self.inner.start_job(env, j)

    def end_job(self, env: Env, j: int, placed: bool) -> None:
        self.inner.end_job(env, j, placed)

    def choose(self, env: Env, j: int, role: str, mask: np.ndarray) -> int:
        return self.inner.choose(env, j, role, mask)


class Deferring(Delegating):
    """A heuristic with a deferral rule (see the module docstring)."""

    def __init__(self, inner: Heuristic, threshold: float, shorter: float = 0.0):
        super().__init__(inner)
        self.threshold, self.shorter = threshold, shorter
        self.alone: np.ndarray | None = None
        self.lengths: np.ndarray | None = None

    def defer(self, env: Env, j: int) -> bool:
        if self.alone is None:
            self.alone, self.lengths = standalone_profile(env.view)
        assert self.lengths is not None
        if self.shorter > 0:
            behind = env.queue[env.queue.index(j) + 1:]
            if any(self.lengths[k] * self.shorter <= self.lengths[j] for k in behind):
                return True
        own, _ = interference_now(env, j, self.alone, self.inner)
        return 0.0 < own < self.threshold


HEURISTICS = {
    "load-balance": LoadBalance,
    "packing": Packing,
    "tetris": Tetris,
    "least-interference": LeastInterference,
    "standalone": Standalone,
}


def make_heuristic(name: str, seed: int = 0) -> Heuristic | Deferring:
    if name in DEFERRING:
        inner, threshold, shorter = DEFERRING[name]
        return Deferring(HEURISTICS[inner](), threshold, shorter)
    return RandomFeasible(seed) if name == "random" else HEURISTICS[name]()


def _profile_pairs(world: World) -> np.ndarray:
    L = len(world.types)
    table = np.zeros((L, L))
    one = np.ones((1, 1), int)
    for a in range(L):
        alone = speeds(world, Jobs.of([a], [True], [1], [1]), one, one)[0]
        for b in range(L):
            pair = speeds(world, Jobs.of([a, b], [True, True], [1, 1], [1, 1]), np.ones((2, 1), int), np.ones((2, 1), int))
            table[a, b] = 1.0 - pair[0] / alone
    return table


def pair_table(world: World) -> np.ndarray:
    """Slowdown (1 - speed ratio) of type ``a`` when 1 worker + 1 PS of it share a server with 1 + 1
    of type ``b`` (the profiled table of LIF-pairwise; spec section 3's "pair-wise slowdown")."""
    return cached_per_world(world, "pair_table", lambda: _profile_pairs(world))


class Myopic(Planned):
    """Myopic-optimal online reference (spec 6b(1)): per interval, the joint placement of the next
    ``group`` queued jobs maximising the sum of normalised speeds of everything running, found by
    exhaustive search in the true world; jobs past the group are planned in the next group."""

    def __init__(self, view: HarmonyView, group: int = 3, max_product: float = 2e6):
        self.view = view
        self.group = group
        self.max_product = max_product
        self.alone = standalone_speeds(view)
        self.plan: dict[int, list[tuple[str, int]]] = {}

    def start_job(self, env: Env, j: int) -> None:
        if j not in self.plan:
            queue = [k for k in env.queue if k not in self.plan]
            self._plan(env, queue[queue.index(j):][: self.group])

    def _plan(self, env: Env, group: list[int]) -> None:
        while group:
            found = self._search(env, group)
            if found is not None:
                servers, best = found
                for j, (wj, pj) in zip(group, best):
                    self.plan[j] = [("ps", int(m)) for m in np.repeat(servers, pj)] + \
                                   [("worker", int(m)) for m in np.repeat(servers, wj)]
                return
            group = group[:-1]

    def _search(self, env: Env, group: list[int]):
        """The best joint placement of ``group`` as ``(servers, [(w, p) per job over servers])``, or
        ``None`` when the search is too large.  Every server takes part while each job's count
        vectors are few; on a large cluster the candidates are the occupied servers and, per
        capacity, as many empty servers as the group has tasks (empty servers of one capacity are
        interchangeable: the same speeds and the same fit), which loses no score."""
        view = self.view
        servers = np.arange(view.M)
        if not self._enumerable(group, len(servers)):
            servers = _candidate_servers(view, env, sum(int(view.jobs.W[j] + view.jobs.P[j]) for j in group))
            if not self._enumerable(group, len(servers)):
                return None
        free = env.free[servers]
        opts = []
        size = 1.0
        for j in group:
            ow, op = job_options(int(view.jobs.W[j]), int(view.jobs.P[j]), len(servers), free, view.worker_demand[j], view.ps_demand[j])
            opts.append((ow, op))
            size *= len(ow)
        if size == 0 or size > self.max_product or size * len(group) * len(servers) > MYOPIC_WORK:
            return None
        M = len(servers)
        w, p, used = empty_product(M, view.capacity.shape[1])
        for j, (ow, op) in zip(group, opts):
            w, p, used = extend_product(w, p, used, ow, op, view.worker_demand[j], view.ps_demand[j], free)
        if len(w) == 0:
            return None
        running = np.flatnonzero(env.running)
        if len(w) * (len(running) + len(group)) * M > MYOPIC_WORK:
            return None
        idx = np.concatenate([running, group]).astype(int)
        # running tasks sit on occupied servers only, all of them candidates: the dropped columns are zero
        run_w, run_p = env.w[running][:, servers], env.p[running][:, servers]
        chunk = max(1, int(MYOPIC_CELLS // ((len(running) + len(group)) * M)))
        best_k, best = 0, -np.inf
        for lo in range(0, len(w), chunk):   # bounded memory; strict > keeps the first maximum, as one argmax
            hi = min(len(w), lo + chunk)
            W = np.concatenate([np.broadcast_to(run_w, (hi - lo, len(running), M)), w[lo:hi]], axis=1)
            P = np.concatenate([np.broadcast_to(run_p, (hi - lo, len(running), M)), p[lo:hi]], axis=1)
            score = (speeds(view.world, view.jobs.take(idx), W, P) / self.alone[idx]).sum(axis=1)
            k = int(np.argmax(score))
            if score[k] > best:
                best_k, best = lo + k, float(score[k])
        return servers, list(zip(w[best_k], p[best_k]))

    def _enumerable(self, group: list[int], M: int) -> bool:
        """Whether every job's raw count vectors over ``M`` servers stay small (memory of :func:`job_options`)."""
        view = self.view
        for j in group:
            nw = math.comb(int(view.jobs.W[j]) + M - 1, M - 1)
            npv = math.comb(int(view.jobs.P[j]) + M - 1, M - 1)
            if max(nw, npv) > MAX_VECTORS or nw * npv * M > MYOPIC_CELLS:
                return False
        return True


#: myopic: (placements x jobs x servers) evaluated at once (about 250 bytes each in the speed formula)
MYOPIC_CELLS = 2e6


#: myopic: the most (placements x jobs x servers) one search may build or evaluate in all (memory and
#: time: about a second); a larger search is skipped (a smaller group, else load balancing)
MYOPIC_WORK = 2e7


def _candidate_servers(view: HarmonyView, env: Env, tasks: int) -> np.ndarray:
    """The servers with any task on them, and the first ``tasks`` empty servers of each capacity (ascending)."""
    empty = np.all(np.abs(env.free - view.capacity) <= 0, axis=1)
    keep = ~empty
    _, cls = np.unique(view.capacity, axis=0, return_inverse=True)
    cls = np.asarray(cls).ravel()
    for c in np.unique(cls[empty]):
        keep[np.flatnonzero(empty & (cls == c))[:tasks]] = True
    return np.flatnonzero(keep)
