"""State encodings of the policy and of the reward model (numpy; the networks live in :mod:`.policy`).

Policy, one row per server for the task being placed (spec 2.1's blocks, per server so that the
network scores servers and any cluster size works, as in the ToN pointer decoder of 2.4):
free capacity (x3), the other jobs' workers and PSs on it by type (the ``d`` block, 2L), the
job's own workers and PSs already there, and feasibility; plus one context row for the job:
type one-hot (L), architecture, W, P, the workers and PSs left to place (spec 2.1 [PROP]), the
role of the task, its standalone length, and how many jobs are queued and running.

Reward model (INFOCOM variant of 2.6, per job): for every server hosting the job, its own
workers/PSs there and the other jobs' workers/PSs by type; plus the job's type, architecture, W,
P and how many servers host its workers and its PSs.  Counts are divided by typical maxima
(tasks per server 4, W 4, P 2) so inputs stay near [0, 1] (spec 2.1 normalisation).
"""

from __future__ import annotations

import numpy as np

from .simulate import Env
from .view import HarmonyView

TASKS_PER_SERVER = 4.0
W_MAX = 4.0
P_MAX = 2.0


def server_width(L: int) -> int:
    return 3 + 2 * L + 3


def context_width(L: int) -> int:
    return L + 9


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


def policy_state(env: Env, j: int, role: str, mask: np.ndarray, length: float) -> tuple[np.ndarray, np.ndarray]:
    """``(servers (M, F_s), context (F_c,))`` for placing one ``role`` task of job ``j``."""
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
    ], axis=1)
    context = np.concatenate([
        np.eye(L)[view.jobs.kind[j]],
        [float(view.jobs.is_ps[j]), view.jobs.W[j] / W_MAX, view.jobs.P[j] / P_MAX,
         env.left.get("worker", 0) / W_MAX, env.left.get("ps", 0) / P_MAX, float(role == "worker"),
         length / 60.0, len(env.queue) / 4.0, env.running.sum() / 12.0],
    ])
    return servers, context


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
