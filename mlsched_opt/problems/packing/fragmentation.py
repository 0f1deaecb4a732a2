"""Online GPU-sharing schedulers: FGD and the baselines of Weng et al., "Beware of Fragmentation:
Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023.

Jobs arrive in the instance's order (the paper's experiment: pods arrive one by one until the
cluster takes no more); each is placed task by task, on the node (and under ``gpus = per-gpu``, the
GPUs) its method scores best among those with room; a job any of whose tasks finds no room is
rolled back and rejected (``weight``), or the run fails (``servers``: every job must be placed).
Nothing is moved once placed.  Ties go to the first node in instance order, then the lowest GPU.

Under ``per-gpu`` (:mod:`.pergpu`) a node's GPUs are separate slots of capacity 1: a share below 1
takes one slot, a whole-GPU task ``D`` completely free slots.  Under ``pooled`` a node's GPUs are one
slot of the node's GPU total, so the same rules read: every GPU demand is a share of that slot.

What is reconstructed (the paper's text; its simulator was read, no code taken):

* ``fgd``: the fragmentation of a node for a task type ``m`` is all its free GPU capacity if ``m``
  cannot run there (CPU, memory, GPU model or GPUs short), else the free capacity of the GPUs whose
  free share is below ``min(d_m, 1)``; the node's fragmentation is its expectation over the target
  workload, the distribution of task types (CPU, memory, GPU demand, GPU models) of this
  instance's own jobs, weighted by task counts.  Each task goes where that expectation grows least
  (the paper's "fragmentation gradient descent"); roles are not part of a type.
* ``best-fit``: least free resources left on the node, each resource (CPU, memory, GPUs) as a
  share of the node's capacity, summed with equal weights; among a node's GPUs the fullest one.
* ``dot-product``: Tetris's alignment (Grandl et al., SIGCOMM 2014): the largest dot product of
  the task's demand and the node's free resources, both as shares of the node's capacity; among
  its GPUs the fullest one.
* ``gpu-packing``: a share goes first to a GPU already shared, then to an idle GPU of a node in
  use, then to an idle node; whole GPUs to a node in use before an idle one; best fit within a tier.
* ``gpu-clustering``: tasks of one GPU demand are kept together: first a GPU (node) already
  holding tasks of that demand, then an idle GPU on an idle node, then anything; best fit within.
* ``random-fit``: a node with room uniformly at random (seed ``--seed``), then one of its GPUs with
  room uniformly at random.

Guarantee: none proven for any of them (the paper measures, it proves nothing); the benchmark
``benchmarks/fragmentation.py`` measures each against a certified upper bound.  A job of more than
:data:`MAX_TASKS` tasks of one kind is not placed (each task is one scoring pass over the nodes).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...io.instance import Instance
from ...solvers import SolveOptions
from ..base import MethodResult, heuristic_report
from .decision import objective_value
from .pergpu import TASKS, layout, per_gpu
from .view import PackingView, packing_view

_TOL = 1e-9
#: the most tasks of one kind a job may have for these methods (each task is one pass over the nodes)
MAX_TASKS = 10_000


@dataclass
class _State:
    """The cluster as jobs arrive: free non-GPU resources ``res`` (servers, resources but GPU) and
    free GPU slots ``free`` (servers, slots; -1 where a server has no such slot); what each GPU slot
    holds (``kind``: the GPU demand last placed there, NaN when idle) for gpu-clustering."""

    res: np.ndarray
    free: np.ndarray
    kind: np.ndarray

    def copy(self) -> _State:
        return _State(self.res.copy(), self.free.copy(), self.kind.copy())


@dataclass(frozen=True)
class _Setting:
    view: PackingView
    per_gpu: bool
    other: np.ndarray          # indices of the non-GPU resources
    cap_other: np.ndarray      # (servers, other) capacities
    slots: np.ndarray          # (servers,) GPU slots (per-gpu: GPUs; pooled: 1 if the server has GPUs)
    slot_cap: np.ndarray       # (servers,) capacity of one slot (per-gpu: 1; pooled: the GPU total)
    need: dict[str, np.ndarray]
    whole: dict[str, np.ndarray]


def _setting(view: PackingView, gpu_by_gpu: bool) -> _Setting:
    g_at = view.resources.index("gpu") if "gpu" in view.resources else None
    other = np.array([r for r in range(len(view.resources)) if r != g_at], dtype=np.int64)
    gcap = view.capacity[:, g_at] if g_at is not None else np.zeros(len(view.capacity))
    n = len(view.jobs)
    if gpu_by_gpu:
        lay = layout(view)
        slots, slot_cap, need, whole = lay.count, np.ones(len(gcap)), lay.need, lay.whole
    else:
        slots = (gcap > 0).astype(np.int64)
        slot_cap = gcap.astype(float)
        need = {t: (view.demand[t][:, g_at] if g_at is not None else np.zeros(n)).astype(float) for t, _ in TASKS}
        whole = {t: np.zeros(n, dtype=np.int64) for t, _ in TASKS}  # pooled: every demand is a share of the slot
    return _Setting(view, gpu_by_gpu, other, view.capacity[:, other], slots, slot_cap, need, whole)


def _initial(st: _Setting) -> _State:
    width = max(int(st.slots.max(initial=0)), 1)
    col = np.arange(width)[None, :]
    free = np.where(col < st.slots[:, None], st.slot_cap[:, None], -1.0)
    return _State(st.cap_other.astype(float).copy(), free, np.full(free.shape, np.nan))


@dataclass(frozen=True)
class _Candidates:
    """Where one task may go: server ``s``, the GPU slots it takes (``take``, a (k, slots) mask),
    and the state of that server after it."""

    s: np.ndarray
    take: np.ndarray
    res: np.ndarray
    free: np.ndarray


def _candidates(st: _Setting, state: _State, task: str, j: int) -> _Candidates:
    view = st.view
    dem = view.demand[task][j, st.other]
    ok = view.eligible[task][j] & np.all(state.res >= dem[None, :] - _TOL, axis=1)
    need, whole = float(st.need[task][j]), int(st.whole[task][j])
    width = state.free.shape[1]
    if need <= 0:
        s = np.flatnonzero(ok)
        take = np.zeros((len(s), width), dtype=bool)
    elif whole:
        full = state.free >= 1 - _TOL
        s = np.flatnonzero(ok & (full.sum(axis=1) >= whole))
        take = full[s] & (np.cumsum(full[s], axis=1) <= whole)  # any free GPUs are alike: the first ones
    else:
        fits = ok[:, None] & (state.free >= need - _TOL)
        s, g = np.nonzero(fits)
        take = np.zeros((len(s), width), dtype=bool)
        take[np.arange(len(s)), g] = True
    used = 1.0 if whole else need
    return _Candidates(s, take, state.res[s] - dem[None, :], state.free[s] - used * take)


# --- FGD's fragmentation measure ---------------------------------------------------------------

@dataclass(frozen=True)
class _Workload:
    """The target workload: task types' non-GPU demand ``dem``, GPU demand ``need`` and whole GPUs,
    popularity ``p`` (summing to 1), and ``allowed`` (types, model ids) by GPU model."""

    dem: np.ndarray
    need: np.ndarray
    whole: np.ndarray
    p: np.ndarray
    allowed: np.ndarray
    model_id: np.ndarray  # (servers,) the id of each server's GPU model


def workload(st: _Setting) -> _Workload:
    """The distribution of the instance's own task types (the paper's target workload)."""
    inst = st.view.instance
    models = sorted({s.gpu_model for s in inst.servers if s.gpu_model})
    mid = {m: i + 1 for i, m in enumerate(models)}  # 0: a server without a GPU model
    model_id = np.array([mid.get(s.gpu_model or "", 0) for s in inst.servers], dtype=np.int64)
    seen: dict[tuple[Any, ...], int] = {}
    rows: list[tuple[np.ndarray, float, int, tuple[str, ...] | None]] = []
    weight: list[float] = []
    for task, _key in TASKS:
        count = st.view.count(task)
        for j in np.flatnonzero(count > 0):
            job = inst.jobs[j]
            models_j = job.gpu_models if task == "worker" else None
            dem = st.view.demand[task][j, st.other]
            key = (tuple(np.round(dem, 6)), round(float(st.need[task][j]), 6), models_j)
            if key not in seen:
                seen[key] = len(rows)
                rows.append((dem, float(st.need[task][j]), int(st.whole[task][j]), models_j))
                weight.append(0.0)
            weight[seen[key]] += float(count[j])
    if not rows:
        empty = np.zeros((0, len(st.other)))
        return _Workload(empty, np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros((0, len(models) + 1), dtype=bool), model_id)
    allowed = np.ones((len(rows), len(models) + 1), dtype=bool)
    for t, (_d, _n, _w, ms) in enumerate(rows):
        if ms is not None:
            allowed[t] = [False] + [m in ms for m in models]
    p = np.array(weight) / sum(weight)
    return _Workload(np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
                     np.array([r[2] for r in rows], dtype=np.int64), p, allowed, model_id)


def fragmentation(w: _Workload, res: np.ndarray, free: np.ndarray, mid: np.ndarray, per: bool) -> np.ndarray:
    """Each state's expected fragmentation (GPU capacity) over the workload ``w`` (the module docstring's measure)."""
    if not len(w.p):
        return np.zeros(len(res))
    valid = free >= -0.5
    fv = np.where(valid, np.maximum(free, 0.0), 0.0)
    total = fv.sum(axis=1)
    fits = np.all(res[:, None, :] >= w.dem[None, :, :] - _TOL, axis=2) & w.allowed[:, mid].T
    top = np.where(valid, free, -1.0).max(axis=1)
    if per:
        nfull = (valid & (free >= 1 - _TOL)).sum(axis=1)
        gpu_ok = np.where(w.whole[None, :] > 0, nfull[:, None] >= w.whole[None, :], top[:, None] >= w.need[None, :] - _TOL)
    else:
        gpu_ok = top[:, None] >= w.need[None, :] - _TOL
    fits &= gpu_ok | (w.need[None, :] <= 0)
    thr = np.minimum(w.need, 1.0)
    small = np.einsum("ng,ntg->nt", fv, (valid[:, None, :] & (free[:, None, :] < thr[None, :, None] - _TOL)).astype(float))
    return np.where(fits, small, total[:, None]) @ w.p


# --- the methods' scores (lower is better) -----------------------------------------------------

Score = Callable[["_Setting", "_State", "_Candidates", float, dict[str, Any]], np.ndarray]


def _left_share(st: _Setting, c: _Candidates) -> np.ndarray:
    """Free resources left on each candidate's server, as shares of its capacity, summed (CPU, memory, GPUs)."""
    cap = st.cap_other[c.s]
    share = np.divide(c.res, cap, out=np.zeros_like(c.res), where=cap > 0).sum(axis=1)
    gcap = st.slots[c.s] * st.slot_cap[c.s]
    gfree = np.where(c.free >= -0.5, np.maximum(c.free, 0), 0).sum(axis=1)
    return share + np.divide(gfree, gcap, out=np.zeros_like(gfree), where=gcap > 0)


def _slot_left(c: _Candidates) -> np.ndarray:
    """Free share left on the GPU a share takes (0 when none is taken): best fit among a node's GPUs."""
    return np.where(c.take, c.free, 0.0).sum(axis=1)


def _fgd(st: _Setting, state: _State, c: _Candidates, need: float, ctx: dict[str, Any]) -> np.ndarray:
    w: _Workload = ctx["workload"]
    mid = w.model_id[c.s]
    # identical after-states (idle nodes of one shape, GPUs of equal free share) are scored once;
    # a node's GPUs are interchangeable, so its free shares are compared sorted
    sig = np.concatenate([mid[:, None].astype(float), np.round(c.res, 9), -np.sort(-np.round(c.free, 9), axis=1)], axis=1)
    # rows are told apart by a fixed random projection (one 1-D unique, not a row-wise sort); two
    # different states projecting alike would only share a score, never break a placement
    key = sig @ ctx.setdefault("projection", np.random.default_rng(12345).random(sig.shape[1]) + 0.5)
    _u, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    uniq = sig[first]
    after = fragmentation(w, uniq[:, 1:1 + c.res.shape[1]], uniq[:, 1 + c.res.shape[1]:], uniq[:, 0].astype(np.int64), st.per_gpu)
    before = ctx["frag"][c.s]
    return after[inverse.ravel()] - before


def _best_fit(st: _Setting, state: _State, c: _Candidates, need: float, ctx: dict[str, Any]) -> np.ndarray:
    return _left_share(st, c) + 1e-6 * _slot_left(c)


def _dot_product(st: _Setting, state: _State, c: _Candidates, need: float, ctx: dict[str, Any]) -> np.ndarray:
    cap = st.cap_other[c.s]
    before = state.res[c.s]
    dem = before - c.res
    share = np.divide(dem, cap, out=np.zeros_like(dem), where=cap > 0)
    dot = (share * np.divide(before, cap, out=np.zeros_like(dem), where=cap > 0)).sum(axis=1)
    gcap = st.slots[c.s] * st.slot_cap[c.s]
    gfree = np.where(state.free[c.s] >= -0.5, np.maximum(state.free[c.s], 0), 0).sum(axis=1)
    gdem = gfree - np.where(c.free >= -0.5, np.maximum(c.free, 0), 0).sum(axis=1)
    dot += np.divide(gdem * gfree, gcap * gcap, out=np.zeros_like(gfree), where=gcap > 0)
    return -dot + 1e-6 * _slot_left(c)


def _tiers(st: _Setting, state: _State, c: _Candidates) -> tuple[np.ndarray, np.ndarray]:
    """(the GPU a share takes is already shared, the node has a GPU in use) per candidate."""
    f = state.free[c.s]
    valid = f >= -0.5
    cap = st.slot_cap[c.s][:, None]
    busy_gpu = valid & (f < cap - _TOL)
    shared = (c.take & busy_gpu).any(axis=1)
    node_busy = busy_gpu.any(axis=1) | np.any(state.res[c.s] < st.cap_other[c.s] - _TOL, axis=1)
    return shared, node_busy


def _gpu_packing(st: _Setting, state: _State, c: _Candidates, need: float, ctx: dict[str, Any]) -> np.ndarray:
    shared, node_busy = _tiers(st, state, c)
    tier = np.where(shared, 0, np.where(node_busy, 1, 2))
    return tier * 1e6 + _slot_left(c) + 1e-3 * _left_share(st, c)


def _gpu_clustering(st: _Setting, state: _State, c: _Candidates, need: float, ctx: dict[str, Any]) -> np.ndarray:
    kind = state.kind[c.s]
    same_gpu = (c.take & (kind == need)).any(axis=1)
    same_node = (kind == need).any(axis=1)
    _shared, node_busy = _tiers(st, state, c)
    tier = np.where(same_gpu, 0, np.where(same_node, 1, np.where(~node_busy, 2, 3)))
    return tier * 1e6 + _slot_left(c) + 1e-3 * _left_share(st, c)


def _random_fit(st: _Setting, state: _State, c: _Candidates, need: float, ctx: dict[str, Any]) -> np.ndarray:
    rng: np.random.Generator = ctx["rng"]
    # a node uniformly, then one of its GPUs with room uniformly: every candidate of a node shares its node's draw
    node_draw = rng.random(len(st.slots))[c.s]
    return node_draw * 1e3 + rng.random(len(c.s))


SCORES: dict[str, Score] = {"fgd": _fgd, "best-fit": _best_fit, "dot-product": _dot_product,
                            "gpu-packing": _gpu_packing, "gpu-clustering": _gpu_clustering, "random-fit": _random_fit}


def online(view: PackingView, method: str, objective: str, gpu_by_gpu: bool, seed: int = 0,
           on_job: Callable[[int, bool], None] | None = None) -> dict[str, Any] | None:
    """The decision of ``method`` (a key of :data:`SCORES`) with jobs arriving in instance order;
    ``None`` when ``servers`` mode cannot place every job.  ``on_job(j, placed)`` is told of each
    arrival (the benchmark's allocation curve)."""
    st = _setting(view, gpu_by_gpu)
    state = _initial(st)
    score = SCORES[method]
    ctx: dict[str, Any] = {"rng": np.random.default_rng(seed)}
    if method == "fgd":
        w = workload(st)
        ctx["workload"] = w
        ctx["frag"] = fragmentation(w, state.res, state.free, w.model_id, gpu_by_gpu)
    names = [s.name for s in view.instance.servers]
    placement: dict[str, dict[str, dict[str, int]]] = {}
    gpus: dict[str, dict[str, dict[str, list[int]]]] = {}
    for j in range(len(view.jobs)):
        trial = state.copy()
        mine: dict[str, dict[str, int]] = {"workers": {}, "ps": {}}
        mine_gpus: dict[str, dict[str, list[int]]] = {}
        touched: set[int] = set()
        ok = True
        for task, key in TASKS:
            n = int(view.count(task)[j])
            if n > MAX_TASKS:
                ok = False
                break
            for _ in range(n):
                c = _candidates(st, trial, task, j)
                if not len(c.s):
                    ok = False
                    break
                k = int(np.argmin(score(st, trial, c, float(st.need[task][j]), ctx)))
                s = int(c.s[k])
                trial.res[s], trial.free[s] = c.res[k], c.free[k]
                trial.kind[s, c.take[k]] = float(st.need[task][j])
                touched.add(s)
                mine[key][names[s]] = mine[key].get(names[s], 0) + 1
                if gpu_by_gpu and st.need[task][j] > 0:
                    mine_gpus.setdefault(key, {}).setdefault(names[s], []).extend(int(g) for g in np.flatnonzero(c.take[k]))
                if method == "fgd":
                    ctx["frag"][s] = fragmentation(ctx["workload"], trial.res[s:s + 1], trial.free[s:s + 1],
                                                   ctx["workload"].model_id[s:s + 1], gpu_by_gpu)[0]
            if not ok:
                break
        if on_job is not None:
            on_job(j, ok)
        if not ok:
            if method == "fgd":  # the rolled-back tasks' fragmentation
                for s in touched:
                    ctx["frag"][s] = fragmentation(ctx["workload"], state.res[s:s + 1], state.free[s:s + 1],
                                                   ctx["workload"].model_id[s:s + 1], gpu_by_gpu)[0]
            if objective == "servers":
                return None
            continue
        state = trial
        placement[view.jobs[j].id] = mine
        if mine_gpus:
            gpus[view.jobs[j].id] = mine_gpus
    admitted = list(placement)
    out: dict[str, Any] = {"admitted": admitted, "placement": placement}
    if gpu_by_gpu:
        out["gpus"] = gpus
    return out


def _run(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions, method: str) -> MethodResult:
    start = time.perf_counter()
    view = packing_view(instance)
    objective = options["objective"]
    decision = online(view, method, objective, per_gpu(options), seed=solve_options.seed)
    value = None if decision is None else objective_value(view, decision, objective)
    sense = "min" if objective == "servers" else "max"
    message = "" if decision is not None else f"{method} could not place every job in arrival order (not a proof of infeasibility)"
    report = heuristic_report(sense, value, time.perf_counter() - start, method,
                              {"objective": objective, "gpus": options.get("gpus", "pooled")}, message)
    return MethodResult(report, decision)


def fgd(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """Fragmentation gradient descent (Weng et al., USENIX ATC 2023): each arriving task where the
    expected fragmentation of the target workload grows least (module docstring). Guarantee: none proven."""
    return _run(instance, options, solve_options, "fgd")


def best_fit(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """Online best fit, the ATC 2023 paper's baseline (module docstring). Guarantee: none proven."""
    return _run(instance, options, solve_options, "best-fit")


def dot_product(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """Online dot product (Tetris, Grandl et al., SIGCOMM 2014), the ATC 2023 paper's baseline. Guarantee: none proven."""
    return _run(instance, options, solve_options, "dot-product")


def gpu_packing(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """Online GPU packing, the ATC 2023 paper's baseline (module docstring). Guarantee: none proven."""
    return _run(instance, options, solve_options, "gpu-packing")


def gpu_clustering(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """Online GPU clustering, the ATC 2023 paper's baseline (module docstring). Guarantee: none proven."""
    return _run(instance, options, solve_options, "gpu-clustering")


def random_fit(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """Online random fit (seeded by ``--seed``), the ATC 2023 paper's baseline. Guarantee: none proven."""
    return _run(instance, options, solve_options, "random-fit")
