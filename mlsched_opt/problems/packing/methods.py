"""First-fit decreasing for the packing problem, and its variants ``ffd-large`` and ``bfd``.

Jobs are taken in decreasing order of a key and placed task by task (workers first, then
PSs), each task on the first server, in instance order, that may host it and has room
(``ffd``; ``ffd-large`` tries the servers largest first, ``bfd`` the open server it leaves
fullest, opening servers largest first).  A
job that does not fit entirely is rolled back: in ``weight`` mode it is rejected, in
``servers`` mode the run fails (which proves nothing about feasibility).

Order: ``servers`` mode sorts by size (the job's total demand as a share of the cluster,
summed over resources); ``weight`` mode sorts by weight per unit of size, ties by size.
In ``weight`` mode the answer is the better of that greedy packing and the best single
job alone, the classic fix that gives greedy knapsack its factor 1/2.

Guarantee
---------
None in general: servers are heterogeneous, jobs are gangs of tasks, and eligibility
restricts where tasks go, so no constant factor holds.  Two special cases are classical
and are what the tests measure against proven optima:

* ``servers`` mode with identical servers, one resource and single-task jobs is
  one-dimensional bin packing, where FFD uses at most ``11/9 OPT + 6/9`` servers
  (Dósa, "The tight bound of first fit decreasing bin-packing algorithm is
  FFD(I) <= 11/9 OPT(I) + 6/9", ESCAPE 2007).
* ``weight`` mode with one server, one resource and single-task jobs is 0-1 knapsack, where
  the better of density-greedy and the best single item is at least ``OPT / 2``
  (Korte & Vygen, Combinatorial Optimization, section 17.1).

References
----------
Johnson, "Near-optimal bin packing algorithms", MIT PhD thesis, 1973.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal, overload

import numpy as np

from ...io.instance import Instance
from ...solvers import SolveOptions
from ..base import MethodResult, heuristic_report
from .decision import objective_value
from .pergpu import assign, per_gpu
from .view import PackingView, packing_view

_TOL = 1e-9


def _place_job(view: PackingView, j: int, residual: np.ndarray, names: list[str],
               order: np.ndarray | None = None) -> dict[str, dict[str, int]] | None:
    """First-fit every task of job ``j`` into ``residual`` (updated in place); ``None`` and no change if it does not fit.

    The servers are tried in ``order`` (default: instance order).  The tasks of one kind are
    identical, so task-by-task first fit fills the first server with room as far as it goes, then
    the next: the room of every eligible server at once, then the first servers in order until the
    count is met, so the work is one pass of numpy over the servers, never proportional to the
    (unbounded) task counts.
    """
    trial = residual.copy()
    placement: dict[str, dict[str, int]] = {"workers": {}, "ps": {}}
    for task, key in (("worker", "workers"), ("ps", "ps")):
        left = int(view.count(task)[j])
        if left == 0:
            continue
        demand = view.demand[task][j]
        servers = np.flatnonzero(view.eligible[task][j]) if order is None else order[view.eligible[task][j][order]]
        room = _room(trial[servers], demand, left)
        before = np.cumsum(room) - room  # tasks the earlier servers take
        take = np.minimum(room, np.maximum(left - before, 0))
        if int(take.sum()) < left:
            return None
        for s, t in zip(servers[take > 0], take[take > 0]):
            trial[s] -= int(t) * demand
            placement[key][names[s]] = int(t)
    residual[:] = trial
    return placement


def _room(residual: np.ndarray, demand: np.ndarray, most: int) -> np.ndarray:
    """How many tasks of ``demand`` each row of ``residual`` holds, at most ``most``."""
    used = demand > 0
    if not used.any():
        return np.full(len(residual), most, dtype=np.int64)  # a task that demands nothing always fits
    room = np.floor(np.min((residual[:, used] + _TOL) / demand[used], axis=1))
    # no server takes more than the tasks left; the clip also keeps a huge quotient
    # (capacity 2**53 over a demand of 1e-9) from wrapping in the int64 cast
    return np.clip(room, 0, most).astype(np.int64)


def _best_fit_job(view: PackingView, j: int, residual: np.ndarray, names: list[str], order: np.ndarray,
                  opened: np.ndarray) -> dict[str, dict[str, int]] | None:
    """Best-fit every task of job ``j``: as many tasks as fit on the open server they leave fullest
    (least room left, summed over resources as shares of the cluster), else on the first server of
    ``order`` with room, which opens.  ``residual`` and ``opened`` are updated only if the whole job fits."""
    trial, now_open = residual.copy(), opened.copy()
    scale = _shares(view)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    placement: dict[str, dict[str, int]] = {"workers": {}, "ps": {}}
    for task, key in (("worker", "workers"), ("ps", "ps")):
        left = int(view.count(task)[j])
        demand = view.demand[task][j]
        servers = np.flatnonzero(view.eligible[task][j])
        while left > 0:
            room = _room(trial[servers], demand, left)
            ok = room > 0
            if not ok.any():
                return None
            cand, take = servers[ok], room[ok]
            live = now_open[cand]
            if live.any():
                after = (trial[cand[live]] - take[live, None] * demand[None, :]) @ scale
                pick = int(np.lexsort((rank[cand[live]], after))[0])
                s, t = int(cand[live][pick]), int(take[live][pick])
            else:
                pick = int(np.argmin(rank[cand]))
                s, t = int(cand[pick]), int(take[pick])
            trial[s] -= t * demand
            now_open[s] = True
            placement[key][names[s]] = placement[key].get(names[s], 0) + t
            left -= t
    residual[:] = trial
    opened[:] = now_open
    return placement


def _shares(view: PackingView) -> np.ndarray:
    """One unit of each resource as a share of the cluster's total (the size's weights)."""
    total = view.capacity.sum(axis=0)
    return np.divide(1.0, total, out=np.zeros_like(total), where=total > 0)


def server_order(view: PackingView, how: str = "instance") -> np.ndarray:
    """The servers in instance order, or ``largest`` first: by decreasing capacity summed over
    resources as shares of the cluster (ties in instance order)."""
    n = len(view.capacity)
    if how == "instance":
        return np.arange(n)
    big = view.capacity @ _shares(view)
    return np.lexsort((np.arange(n), -big))


@overload
def _greedy(view: PackingView, order: np.ndarray, fail_fast: Literal[False], servers: str = ..., fit: str = ...) -> dict[str, Any]: ...
@overload
def _greedy(view: PackingView, order: np.ndarray, fail_fast: bool, servers: str = ..., fit: str = ...) -> dict[str, Any] | None: ...
def _greedy(view: PackingView, order: np.ndarray, fail_fast: bool, servers: str = "instance",
            fit: str = "first") -> dict[str, Any] | None:
    residual = view.capacity.copy()
    names = [s.name for s in view.instance.servers]
    placement: dict[str, dict[str, dict[str, int]]] = {}
    sorder = server_order(view, servers)
    opened = np.zeros(len(residual), dtype=bool)
    for j in order:
        if fit == "best":
            placed = _best_fit_job(view, int(j), residual, names, sorder, opened)
        else:
            placed = _place_job(view, int(j), residual, names, None if servers == "instance" else sorder)
        if placed is None:
            if fail_fast:
                return None
            continue
        placement[view.jobs[j].id] = placed
    admitted = [job.id for job in view.jobs if job.id in placement]
    return {"admitted": admitted, "placement": {j: placement[j] for j in admitted}}


def greedy(view: PackingView, objective: str, jobs: np.ndarray | None = None, servers: str = "instance",
           fit: str = "first") -> dict[str, Any] | None:
    """FFD's decision for ``jobs`` (default: all) in the order and with the best-single fix of the
    module docstring; ``None`` when ``servers`` mode cannot place every one of them.  ``servers``
    and ``fit`` choose the variant (:func:`server_order`; ``first`` or ``best`` fit)."""
    ids = np.arange(len(view.jobs)) if jobs is None else np.asarray(jobs, dtype=np.int64)
    size = view.size()[ids]
    if objective == "servers":
        return _greedy(view, ids[np.lexsort((ids, -size))], fail_fast=True, servers=servers, fit=fit)
    weight = np.array([view.jobs[j].weight for j in ids], dtype=float)
    density = np.divide(weight, size, out=np.full_like(weight, np.inf), where=size > 0)
    decision = _greedy(view, ids[np.lexsort((ids, -size, -density))], fail_fast=False, servers=servers, fit=fit)
    if len(ids):
        best = int(min(range(len(ids)), key=lambda k: (-weight[k], ids[k])))
        if objective_value(view, decision, objective) < weight[best]:
            alone = _greedy(view, ids[[best]], fail_fast=True, servers=servers, fit=fit)
            if alone is not None:
                decision = alone
    return decision


def ffd(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """Run first-fit decreasing (see the module docstring for the order and the guarantee)."""
    return _run(instance, options, "ffd", "instance", "first")


def ffd_large(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """First-fit decreasing on the servers taken largest first (:func:`server_order`): the jobs' order
    and the rollback are :func:`ffd`'s.  The bin-packing literature's FFD sorts the items; with
    bins of many sizes the bins' order matters as much (Friesen and Langston, "Variable sized bin
    packing", SIAM J. Comput. 15, 1986: FFD on the largest bins first).  Guarantee: none here."""
    return _run(instance, options, "ffd-large", "largest", "first")


def bfd(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """Best-fit decreasing: jobs in :func:`ffd`'s order, each task on the open server it leaves
    fullest, a new server (largest first) only when no open one has room (Johnson 1973; the vector
    variant of Panigrahy, Talwar, Uyeda and Wieder, "Heuristics for vector bin packing", 2011).
    Guarantee: none here (11/9 OPT + 6/9 in one-dimensional bin packing, as FFD)."""
    return _run(instance, options, "bfd", "largest", "best")


def _run(instance: Instance, options: Mapping[str, Any], name: str, servers: str, fit: str) -> MethodResult:
    start = time.perf_counter()
    view = packing_view(instance)
    objective = options["objective"]
    decision = greedy(view, objective, servers=servers, fit=fit)
    if decision is not None and per_gpu(options):
        decision = assign(view, decision, objective)  # GPU by GPU; drops what the GPUs cannot hold
    value = None if decision is None else objective_value(view, decision, objective)
    sense = "min" if objective == "servers" else "max"
    message = "" if decision is not None else "first-fit could not place every job (not a proof of infeasibility)"
    if decision is None and fit == "best":
        message = "best-fit could not place every job (not a proof of infeasibility)"
    report = heuristic_report(sense, value, time.perf_counter() - start, name, {"objective": objective}, message)
    return MethodResult(report, decision)


def best_greedy(view: PackingView, objective: str) -> tuple[dict[str, Any] | None, str]:
    """The best decision of the three greedy variants (ffd, ffd-large, bfd) and its method's name;
    ties go to the first."""
    best: tuple[dict[str, Any] | None, str] = (None, "")
    value = None
    for name, servers, fit in (("ffd-large", "largest", "first"), ("bfd", "largest", "best"), ("ffd", "instance", "first")):
        d = greedy(view, objective, servers=servers, fit=fit)
        if d is None:
            continue
        v = objective_value(view, d, objective)
        if value is None or (v < value if objective == "servers" else v > value):
            best, value = (d, name), v
    return best
