"""State encodings of the policy and of the reward model (numpy; the networks live in :mod:`.policy`).

Policy, one row per server for the task being placed (spec 2.1's blocks, per server so that the
network scores servers and any cluster size works, as in the ToN pointer decoder of 2.4):
free capacity (x3), the other jobs' workers and PSs on it by type (the ``d`` block, 2L), the
job's own workers and PSs already there, and feasibility; plus one context row for the job:
type one-hot (L), architecture, W, P, the workers and PSs left to place (spec 2.1 [PROP]), the
role of the task, its standalone length, and how many jobs are queued and running; and the
deferral block [our design, issue 21]: whether the job may be held back now, how long it has
waited, how many shorter jobs queue behind it and how long the shortest of them is (over the
job's own length: a deferral heuristic's shortest-first ratio can be read off it), the
interference it would meet if placed now (its speed over its standalone speed, and the speed the
jobs already holding servers would lose, under a dry run of a given placement heuristic, at the
world's speeds: the policy's is its teacher's, so the teacher's deferral rule is a function of
the state) and how soon the first running job finishes.  Advice [our design, issue 21]: where
the policy's teacher (a heuristic) would put the task, one more server column, and whether it
would hold the job back, one more context entry (zeros for a policy trained without it).

Reward model (INFOCOM variant of 2.6, per job): for every server hosting the job, its own
workers/PSs there and the other jobs' workers/PSs by type; plus the job's type, architecture, W,
P and how many servers host its workers and its PSs.  Counts are divided by typical maxima
(tasks per server 4, W 4, P 2) so inputs stay near [0, 1] (spec 2.1 normalisation).
"""

from __future__ import annotations

import numpy as np

from ..simulate import Ask, Chooser, Env, holds_back, interference_now
from ..view import HarmonyView
from ..world import sparse_speeds

TASKS_PER_SERVER = 4.0
W_MAX = 4.0
P_MAX = 2.0


def server_width(L: int) -> int:
    return 3 + 2 * L + 4


def context_width(L: int) -> int:
    return L + 10 + DEFER_WIDTH


#: the deferral block of the context row
DEFER_WIDTH = 7


def _by_type(view: HarmonyView, counts: np.ndarray, exclude: int | np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Per server, the task counts of the other jobs summed by type: (M, L), or (n, M, L) for many
    ``exclude``; ``rows``: the jobs that may hold tasks (the others' rows are zero), default all."""
    L = len(view.world.types)
    onehot = np.eye(L)[view.jobs.kind]                     # (J, L)
    # integer counts: the sum is exact whichever rows it runs over
    total = counts.T @ onehot if rows is None else counts[rows].T @ onehot[rows]   # (M, L)
    if np.ndim(exclude) == 0:
        return total - np.outer(counts[exclude], onehot[exclude])
    ex = np.asarray(exclude)
    return total[None] - counts[ex][:, :, None] * onehot[ex][:, None, :]


def policy_state(env: Env, j: int, role: str, mask: np.ndarray, length: float,
                 defer: np.ndarray | None = None, advice: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(servers (M, F_s), context (F_c,))`` for placing one ``role`` task of job ``j``;
    ``defer``: the deferral block (:func:`defer_block`; zeros when the job may not be held back);
    ``advice``: the adviser's answer (:func:`advice_of`; a server, M for "not now", None: none)."""
    view = env.view
    L = len(view.world.types)
    cap = np.maximum(view.capacity, 1e-12)
    rows = env.rows()
    servers = np.concatenate([
        env.free / cap,
        _by_type(view, env.w, j, rows) / TASKS_PER_SERVER,
        _by_type(view, env.p, j, rows) / TASKS_PER_SERVER,
        env.w[j][:, None] / W_MAX,
        env.p[j][:, None] / P_MAX,
        mask[:, None].astype(float),
        (np.arange(view.M) == advice)[:, None].astype(float),
    ], axis=1)
    context = np.concatenate([
        np.eye(L)[view.jobs.kind[j]],
        [float(view.jobs.is_ps[j]), view.jobs.W[j] / W_MAX, view.jobs.P[j] / P_MAX,
         env.left.get("worker", 0) / W_MAX, env.left.get("ps", 0) / P_MAX, float(role == "worker"),
         length / 60.0, len(env.queue) / 4.0, env.running.sum() / 12.0, float(advice == view.M)],
        np.zeros(DEFER_WIDTH) if defer is None else defer,
    ])
    return servers, context


def first_role(view: HarmonyView, j: int) -> str:
    """The role of a job's first task (PSs are placed first)."""
    return "ps" if view.jobs.P[j] > 0 else "worker"


def advice_of(adviser: Chooser, ask: Ask) -> int | None:
    """What ``adviser`` (a heuristic, maybe with a deferral rule) would answer to a ``"defer"`` or
    ``"task"`` ask: a server, ``M`` for "not now", or None (at a job's turn, when no task of it
    fits now).  Asked before :func:`decision_state`, which resets the tasks left to place."""
    env, j = ask.env, ask.j
    if ask.kind != "defer":
        assert ask.mask is not None
        return int(adviser.choose(env, j, ask.role, ask.mask))
    if holds_back(adviser, env, j):
        return env.view.M
    role = first_role(env.view, j)
    mask = env.feasible(j, role)
    return int(adviser.choose(env, j, role, mask)) if mask.any() else None


def decision_state(ask: Ask, lengths: np.ndarray, alone: np.ndarray, dry_run: Chooser,
                   advice: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The policy's input for a ``"defer"`` or ``"task"`` ask: ``(servers, context, mask (M + 1,))``.

    A defer ask is shown as the job's first task with one more action, index M, "not now"; a
    server chosen there places the job now (that server takes its first task).  ``lengths``,
    ``alone``: every job's standalone length (intervals) and speed; ``dry_run``: the chooser of
    the would-be placement behind the interference features; ``advice``: :func:`advice_of`'s answer
    (shown as one more server column and context entry)."""
    env, j = ask.env, ask.j
    if ask.kind == "defer":
        role = first_role(env.view, j)
        mask = env.feasible(j, role)
        block = defer_block(env, j, lengths, alone, dry_run)
        # shown as the job's first task: every task still to place
        env.left = {"ps": int(env.view.jobs.P[j]), "worker": int(env.view.jobs.W[j])}
    else:
        assert ask.mask is not None
        role, mask, block = ask.role, ask.mask, None
    servers, context = policy_state(env, j, role, mask, float(lengths[j]), block, advice)
    return servers, context, np.append(mask, ask.kind == "defer")


def defer_block(env: Env, j: int, lengths: np.ndarray, alone: np.ndarray, dry_run: Chooser) -> np.ndarray:
    """The deferral block of job ``j``'s context (see the module docstring)."""
    view = env.view
    behind = env.queue[env.queue.index(j) + 1:] if j in env.queue else []
    shorter = sum(1 for k in behind if lengths[k] < lengths[j])
    # none behind reads as twice as long: no shortest-first rule holds a job back for a longer one
    shortest = min((lengths[k] for k in behind), default=2.0 * lengths[j]) / max(lengths[j], 1e-9)
    own, lost = interference_now(env, j, alone, dry_run)
    running = np.flatnonzero(env.running)
    soonest = 0.0
    if len(running):
        cache = env.speed_cache   # the running set's speeds since its last change, when the simulator kept them
        if cache is not None and np.array_equal(cache[0], running):
            v = cache[1]
        else:
            v = sparse_speeds(view.world, view.jobs.take(running), env.w[running], env.p[running])
        soonest = float((env.remaining[running] / (v * view.slot_s)).min())
    waited = env.interval - view.arrival[j]
    return np.array([1.0, waited / max(1, env.defer_max), shorter / 4.0, min(shortest, 2.0), own, lost, soonest / 60.0])




def host_width(L: int) -> int:
    return 2 + 2 * L


def job_width(L: int) -> int:
    return L + 5


def reward_inputs(view: HarmonyView, idx: np.ndarray, w: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(hosts (n, M, F_h), host mask (n, M), jobs (n, F_j))`` for the running jobs ``idx``;
    ``w``, ``p`` are every job's rows with only running jobs non-zero."""
    L = len(view.world.types)
    hosts = np.concatenate([
        w[idx][:, :, None] / W_MAX,
        p[idx][:, :, None] / P_MAX,
        _by_type(view, w, idx) / TASKS_PER_SERVER,
        _by_type(view, p, idx) / TASKS_PER_SERVER,
    ], axis=2)
    mask = (w[idx] + p[idx]) > 0
    jobs = np.concatenate([
        np.eye(L)[view.jobs.kind[idx]],
        np.stack([view.jobs.is_ps[idx].astype(float), view.jobs.W[idx] / W_MAX, view.jobs.P[idx] / P_MAX,
                  (w[idx] > 0).sum(axis=1) / view.M, (p[idx] > 0).sum(axis=1) / view.M], axis=1),
    ], axis=1)
    return hosts, mask, jobs
