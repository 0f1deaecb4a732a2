"""The packing MILP aggregated by task type, on a window of jobs and servers (our design).

Tasks of one type (:mod:`.bound`: same kind, demand and eligible shapes) are interchangeable
for the checker, which counts a job's tasks per server and adds demands: any placement of
``x[t, s]`` tasks of type ``t`` on server ``s`` with ``sum_s x[t, s]`` equal to the tasks of type
``t`` of the admitted jobs is a decision, whichever job each task is taken from.  So the
exact model needs one integer per (type, server), not per (job, server):

* variables ``y[c]`` (jobs of class ``c`` admitted: same tasks and weight; ``weight`` mode),
  ``x[t, s]`` (``0 <= x <= fit``) and ``used[s]`` (``servers`` mode);
* ``sum_s x[t, s] = sum_c b[c, t] y[c]`` (``servers``: ``= `` the window's tasks of type ``t``);
* ``sum_t d[t, r] x[t, s] <= room[s, r]`` (``room[s, r] used[s]`` in ``servers`` mode), with
  ``x[t, s] <= fit[t, s] used[s]`` and ``used[s] >= used[s']`` for identical servers in a row.

Its optimum on the whole instance is the optimum of :mod:`.formulation` (same feasible
decisions, up to which job gives a task), with far fewer columns (Alibaba's 2,000 pods: 89
types) and none of the jobs' symmetry.  ``room`` is the checker's capacity limit less the load
of jobs outside the window (large-neighbourhood search, :mod:`.lns`); POP solves its parts with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import arrays
from .bound import TASK_KINDS, Configs, server_shapes
from .view import PackingView

INF = arrays.INF
_FIT_TOL = 1e-9


@dataclass(frozen=True)
class Window(arrays.ModelArrays):
    """The aggregated MILP of ``jobs`` on ``servers`` (instance indices): ``y`` per job class (``weight``,
    columns from 0; ``classes[i]`` is the class of ``jobs[i]``, ``class_jobs[c]`` its jobs), then ``x``
    per (type ``pair_t``, position ``pair_s`` in ``servers``) from ``first_x``, then ``used`` per server
    from ``first_used`` (``servers``)."""

    jobs: np.ndarray
    servers: np.ndarray
    classes: np.ndarray
    class_jobs: tuple[np.ndarray, ...]
    pair_t: np.ndarray
    pair_s: np.ndarray
    first_x: int
    first_used: int


def build_window(cfg: Configs, objective: str, jobs: np.ndarray, servers: np.ndarray, room: np.ndarray,
                 busy: np.ndarray | None = None) -> Window:
    """The aggregated MILP of ``jobs`` on ``servers`` with ``room[i]`` left on ``servers[i]`` (the
    checker's limit less what other jobs hold there); ``busy[i]``: the server holds other jobs
    (``servers`` mode: it is used whatever the window does)."""
    servers_mode = objective == "servers"
    jobs = np.asarray(jobs, dtype=np.int64)
    servers = np.asarray(servers, dtype=np.int64)
    nS = len(servers)
    busy = np.zeros(nS, dtype=bool) if busy is None else np.asarray(busy, dtype=bool)
    # job classes: same tasks and weight
    key = np.hstack([cfg.job_type[jobs], cfg.job_count[jobs], cfg.weight[jobs, None]])
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    nC = len(uniq)
    class_jobs = tuple(jobs[inverse == c] for c in range(nC))
    # the types the window's jobs have, and the (type, server) pairs that fit in the room
    b = np.zeros((nC, cfg.types))
    for i in range(len(TASK_KINDS)):
        has = uniq[:, i] >= 0
        np.add.at(b, (np.flatnonzero(has), uniq[has, i].astype(np.int64)), uniq[has, len(TASK_KINDS) + i])
    mult = np.array([len(m) for m in class_jobs], dtype=float)
    need = mult @ b
    types = np.flatnonzero(need > 0)
    shape = server_shapes(cfg.view)[servers]
    fit = _fit(cfg.demand[types], room) * (cfg.fit[types][:, shape] > 0)
    fit = np.minimum(fit, need[types][:, None]).astype(np.int64)
    pt, ps = np.nonzero(fit > 0)   # type-major
    nP = len(pt)
    first_x = nC if not servers_mode else 0
    first_used = first_x + nP
    ncol = first_used + (nS if servers_mode else 0)
    out = arrays.Rows()
    add = out.add

    # coverage: sum_s x[t, s] (- sum_c b[c, t] y[c]) = need
    T = len(types)
    if servers_mode:
        add(pt, first_x + np.arange(nP), np.ones(nP), T, need[types], need[types])
    else:
        cb, tb = np.nonzero(b[:, types])
        add(np.concatenate([pt, tb]), np.concatenate([first_x + np.arange(nP), cb]),
            np.concatenate([np.ones(nP), -b[:, types][cb, tb]]), T, np.zeros(T), np.zeros(T))
    # capacity per (server, resource) some pair loads
    R = cfg.demand.shape[1]
    d = cfg.demand[types][pt]
    p, r = np.nonzero(d > 0)
    keys = ps[p] * R + r
    present, row_of = np.unique(keys, return_inverse=True)
    cap = room[present // R, present % R]
    if servers_mode:
        add(np.concatenate([row_of.ravel(), np.arange(len(present))]),
            np.concatenate([first_x + p, first_used + present // R]),
            np.concatenate([d[p, r], -cap]), len(present), np.full(len(present), -INF), np.zeros(len(present)))
        # x[t, s] <= fit used[s]
        add(np.concatenate([np.arange(nP), np.arange(nP)]), np.concatenate([first_x + np.arange(nP), first_used + ps]),
            np.concatenate([np.ones(nP), -fit[pt, ps].astype(float)]), nP, np.full(nP, -INF), np.zeros(nP))
        # identical idle servers in a row open in order
        same = _identical_neighbours(cfg, servers, room, busy)
        n = len(same)
        add(np.concatenate([np.arange(n), np.arange(n)]), np.concatenate([first_used + same, first_used + same + 1]),
            np.concatenate([np.ones(n), -np.ones(n)]), n, np.zeros(n), np.full(n, INF))
    else:
        add(row_of.ravel(), first_x + p, d[p, r], len(present), np.full(len(present), -INF), cap)
    a, row_lo, row_hi = out.matrix(ncol)
    cost = np.zeros(ncol)
    col_lo = np.zeros(ncol)
    col_hi = np.zeros(ncol)
    col_hi[first_x:first_used] = fit[pt, ps]
    if servers_mode:
        cost[first_used:] = 1.0
        col_hi[first_used:] = 1.0
        col_lo[first_used:] = busy.astype(float)
    else:
        cost[:nC] = uniq[:, -1]
        col_hi[:nC] = mult
    return Window(objective=objective, cost=cost, col_lo=col_lo, col_hi=col_hi, a=a, row_lo=row_lo, row_hi=row_hi,
                  jobs=jobs, servers=servers, classes=inverse, class_jobs=class_jobs, pair_t=types[pt], pair_s=ps,
                  first_x=first_x, first_used=first_used)


def _fit(demand: np.ndarray, room: np.ndarray) -> np.ndarray:
    """(types, servers): how many tasks of each type the room of each server holds alone."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(demand[:, None, :] > 0, (room[None, :, :] + _FIT_TOL) / np.where(demand > 0, demand, 1.0)[:, None, :], np.inf)
    most = np.floor(q.min(axis=2)) if demand.shape[1] else np.full((len(demand), len(room)), np.inf)
    return np.clip(np.nan_to_num(most, posinf=2**31 - 1), 0, 2**31 - 1)


def _identical_neighbours(cfg: Configs, servers: np.ndarray, room: np.ndarray, busy: np.ndarray) -> np.ndarray:
    """Positions ``i`` with servers ``i`` and ``i + 1`` of one shape, idle, with the same room."""
    if len(servers) < 2:
        return np.zeros(0, dtype=np.int64)
    shape = server_shapes(cfg.view)[servers]
    same = (shape[:-1] == shape[1:]) & ~busy[:-1] & ~busy[1:] & np.all(room[:-1] == room[1:], axis=1)
    return np.flatnonzero(same)


def x_from_loads(win: Window, loads: np.ndarray, admitted: np.ndarray | None = None) -> np.ndarray | None:
    """The window's solution vector for ``loads[t, i]`` tasks of type ``t`` on ``servers[i]`` (and, in
    ``weight`` mode, the window jobs ``admitted``, a mask); ``None`` if a load has no column."""
    x = np.zeros(win.num_col)
    if win.objective != "servers":
        mask = np.zeros(len(win.jobs), dtype=bool) if admitted is None else admitted
        np.add.at(x, win.classes[mask], 1.0)
    want = loads.copy()
    x[win.first_x:win.first_used] = want[win.pair_t, win.pair_s]
    want[win.pair_t, win.pair_s] = 0
    if want.any():
        return None
    if win.objective == "servers":
        x[win.first_used:] = np.maximum(loads.sum(axis=0) > 0, win.col_lo[win.first_used:] > 0)
    return x


def decide(cfg: Configs, win: Window, x: np.ndarray) -> tuple[np.ndarray, dict[int, list[tuple[int, int, int]]]]:
    """The window's admitted jobs (a mask over ``win.jobs``) and, per admitted job, its tasks as
    ``(kind, server, count)``: each type's slots are filled with the admitted jobs' tasks in order."""
    if win.objective == "servers":
        admitted = np.ones(len(win.jobs), dtype=bool)
    else:
        take = np.rint(x[:len(win.class_jobs)]).astype(np.int64)
        admitted = np.zeros(len(win.jobs), dtype=bool)
        pos = {int(j): i for i, j in enumerate(win.jobs)}
        for c, members in enumerate(win.class_jobs):
            for j in members[:take[c]]:
                admitted[pos[int(j)]] = True
    counts = np.rint(x[win.first_x:win.first_used]).astype(np.int64)
    slots: dict[int, list[list[int]]] = {}
    for k in np.flatnonzero(counts > 0):
        slots.setdefault(int(win.pair_t[k]), []).append([int(win.servers[win.pair_s[k]]), int(counts[k])])
    return admitted, assign(cfg, win.jobs[admitted], slots)


def assign(cfg: Configs, jobs: np.ndarray, slots: dict[int, list[list[int]]]) -> dict[int, list[tuple[int, int, int]]]:
    """Per job of ``jobs`` (in order), its tasks as ``(kind, server, count)``: each type's ``slots``
    (``[server, count]``, consumed) are filled with the jobs' tasks of that type in order.  The slots
    must hold every task (they may hold more: the rest stays empty)."""
    tasks: dict[int, list[tuple[int, int, int]]] = {}
    at = dict.fromkeys(slots, 0)
    for j in jobs:
        out = tasks.setdefault(int(j), [])
        for i in range(len(TASK_KINDS)):
            t, n = int(cfg.job_type[j, i]), int(cfg.job_count[j, i])
            while n > 0:
                slot = slots[t][at[t]]
                give = min(n, slot[1])
                out.append((i, slot[0], give))
                slot[1] -= give
                n -= give
                if slot[1] == 0:
                    at[t] += 1
    return tasks


def placement_of(view: PackingView, tasks: Mapping[int, list[tuple[int, int, int]]]) -> dict[str, Any]:
    """A decision from per-job ``(kind, server, count)`` lists (jobs in instance order)."""
    names = [s.name for s in view.instance.servers]
    placement: dict[str, dict[str, dict[str, int]]] = {}
    for j in sorted(tasks):
        parts: dict[str, dict[str, int]] = {"workers": {}, "ps": {}}
        for kind, s, n in tasks[j]:
            key = "workers" if kind == 0 else "ps"
            parts[key][names[s]] = parts[key].get(names[s], 0) + n
        placement[view.jobs[j].id] = parts
    admitted = list(placement)
    return {"admitted": admitted, "placement": placement}


def tasks_of(cfg: Configs, decision: Mapping[str, Any]) -> dict[int, list[tuple[int, int, int]]]:
    """Per admitted job (instance index), its tasks as ``(kind, server, count)``."""
    view = cfg.view
    server_of = {s.name: i for i, s in enumerate(view.instance.servers)}
    job_of = {job.id: j for j, job in enumerate(view.jobs)}
    out: dict[int, list[tuple[int, int, int]]] = {}
    for jid in decision.get("admitted", ()):
        parts = decision["placement"].get(jid, {})
        out[job_of[jid]] = [(i, server_of[s], int(n)) for i, key in enumerate(("workers", "ps"))
                            for s, n in parts.get(key, {}).items() if n]
    return out
