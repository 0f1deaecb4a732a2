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

import numpy as np

from .features import interference_now
from .options import DEFERRING
from .simulate import Env
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
            from .exact import standalone_profile  # exact imports this module

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
