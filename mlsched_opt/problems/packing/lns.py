"""Large-neighbourhood search for packing: free a window of servers, re-pack it exactly with HiGHS.

Our design, after Shaw ("Using constraint programming and local search methods to solve vehicle
routing problems", CP 1998) and Pisinger and Ropke's adaptive LNS: from an incumbent decision,
repeatedly

1. choose a *window*: a few servers (``servers``: mostly the least filled used ones, plus idle
   servers of the largest shapes to move onto; ``weight``: used servers with room left), the
   jobs whose every task is on them, and (``weight``) jobs not admitted that fit there; windows
   grow while they find nothing;
2. solve the window exactly, as the type-aggregated MILP of :mod:`.aggregate` (the rest of the
   decision is fixed: its load is taken off the window's room), from the incumbent's window as a
   start, with a node limit (a work limit: the same seed gives the same search on any machine);
3. keep the window's answer when it is strictly better (fewer servers, more weight).

A window's answer is a decision of the whole instance that the checker accepts (the rest is
unchanged, the window's room is the checker's limit less the fixed load), so every step keeps
a checked incumbent.  The search stops when its incumbent meets ``target`` (a proven bound),
after :data:`STALL` windows in a row without improvement or ``windows`` windows in all (the
work limits), or at the deadline (the safety stop: the message says so).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...clock import past
from ...io.instance import Instance
from ...report import SolveOptions
from ..base import MethodResult, heuristic_report
from . import aggregate, arrays
from .bound import Configs, combinatorial_bound, configs, server_shapes
from .decision import objective_value
from .methods import best_greedy
from .pergpu import refuse
from .view import checker_limits, packing_view

#: HiGHS branch-and-bound nodes per window (the work limit of one step)
WINDOW_NODES = 200
#: servers in a window (``servers``: used ones; idle ones of the largest shapes are added)
WINDOW_SERVERS = 12
#: servers a window grows by after each third of :data:`STALL` windows without improvement
GROW = 6
#: idle servers added to a ``servers`` window: the largest of each of this many shapes
IDLE_SHAPES = 4
#: jobs not admitted offered to a ``weight`` window
WINDOW_POOL = 60
#: windows in a row without improvement after which the search stops
STALL = 60
#: the safety stop of one window's HiGHS run, seconds
WINDOW_SECONDS = 20.0


@dataclass
class Incumbent:
    """A decision as per-job tasks ``(kind, server, count)`` and per-server load (strict demands)."""

    cfg: Configs
    objective: str
    tasks: dict[int, list[tuple[int, int, int]]]
    load: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, cfg: Configs, objective: str, decision: Mapping[str, Any]) -> Incumbent:
        inc = cls(cfg, objective, {}, np.zeros_like(cfg.view.capacity), np.zeros(len(cfg.view.capacity), dtype=np.int64))
        for j, parts in aggregate.tasks_of(cfg, decision).items():
            inc.put(j, parts)
        return inc

    def put(self, j: int, parts: list[tuple[int, int, int]]) -> None:
        self.tasks[j] = parts
        for kind, s, n in parts:
            self.load[s] += n * self.cfg.demand[self.cfg.job_type[j, kind]]
            self.count[s] += n

    def drop(self, j: int) -> None:
        for kind, s, n in self.tasks.pop(j):
            self.load[s] -= n * self.cfg.demand[self.cfg.job_type[j, kind]]
            self.count[s] -= n

    def used(self) -> np.ndarray:
        return self.count > 0

    def value(self) -> float:
        if self.objective == "servers":
            return float(self.used().sum())
        return float(self.cfg.weight[list(self.tasks)].sum()) if self.tasks else 0.0

    def decision(self) -> dict[str, Any]:
        return aggregate.placement_of(self.cfg.view, self.tasks)


def _job_load(inc: Incumbent, j: int) -> list[tuple[int, np.ndarray]]:
    return [(s, n * inc.cfg.demand[inc.cfg.job_type[j, kind]]) for kind, s, n in inc.tasks[j]]


def _window_jobs(inc: Incumbent, servers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The admitted jobs whose every task is on ``servers``, and the load the other jobs keep there."""
    inside = np.zeros(len(inc.load), dtype=bool)
    inside[servers] = True
    free = [j for j, parts in inc.tasks.items() if parts and all(inside[s] for _k, s, _n in parts)]
    kept = inc.load[servers].copy()
    pos = {int(s): i for i, s in enumerate(servers)}
    for j in free:
        for s, amount in _job_load(inc, j):
            kept[pos[s]] -= amount
    return np.array(sorted(free), dtype=np.int64), np.maximum(kept, 0.0)


def _choose_servers(inc: Incumbent, rng: np.random.Generator, limit: np.ndarray, shape: np.ndarray, size: int) -> np.ndarray:
    """A ``servers`` window: ``size`` used servers drawn with weight on emptiness, plus the largest idle ones."""
    used = np.flatnonzero(inc.used())
    fill = (inc.load[used] / np.maximum(limit[used], 1e-12)).max(axis=1) if len(used) else np.zeros(0)
    p = (1.0 - np.clip(fill, 0, 1)) ** 2 + 1e-3
    pick = rng.choice(used, size=min(size, len(used)), replace=False, p=p / p.sum()) if len(used) else used
    idle = np.flatnonzero(~inc.used())
    big = limit @ np.divide(1.0, limit.sum(axis=0), out=np.zeros(limit.shape[1]), where=limit.sum(axis=0) > 0)
    extra = []
    for k in np.unique(shape[idle])[np.argsort(-big[[idle[shape[idle] == k][0] for k in np.unique(shape[idle])]])][:IDLE_SHAPES] \
            if len(idle) else []:
        extra.append(idle[shape[idle] == k][0])
    return np.unique(np.concatenate([pick, np.array(extra, dtype=np.int64)]))


def _choose_weight_window(inc: Incumbent, rng: np.random.Generator, limit: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """A ``weight`` window: servers drawn with weight on room left, and jobs not admitted that fit one of them."""
    cfg = inc.cfg
    n = len(limit)
    room = np.clip(limit - inc.load, 0, None)
    share = (room / np.maximum(limit, 1e-12)).mean(axis=1)
    p = share + 1e-3
    servers = np.sort(rng.choice(n, size=min(size, n), replace=False, p=p / p.sum()))
    out = np.setdiff1d(np.arange(len(cfg.view.jobs)), np.fromiter(inc.tasks, dtype=np.int64, count=len(inc.tasks)))
    if not len(out):
        return servers, out
    shape = server_shapes(cfg.view)[servers]
    ok = np.ones(len(out), dtype=bool)
    for i in range(cfg.job_type.shape[1]):
        t = cfg.job_type[out, i]
        has = t >= 0
        ok[has] &= (cfg.fit[t[has]][:, shape] > 0).any(axis=1)
    out = out[ok]
    if len(out) > WINDOW_POOL:
        # the lightest first (most weight per share of the window's room), then a random rest
        bulk = np.zeros(len(out))
        for i in range(cfg.job_type.shape[1]):
            t = cfg.job_type[out, i]
            has = t >= 0
            bulk[has] += cfg.job_count[out[has], i] * (cfg.demand[t[has]] / np.maximum(limit[servers].sum(axis=0), 1e-12)).sum(axis=1)
        order = np.lexsort((out, -cfg.weight[out] / np.maximum(bulk, 1e-12)))
        half = WINDOW_POOL // 2
        rest = rng.choice(order[half:], size=WINDOW_POOL - half, replace=False)
        out = np.sort(out[np.concatenate([order[:half], rest])])
    return servers, out


@dataclass
class Outcome:
    incumbent: Incumbent
    windows: int = 0
    improved: int = 0
    stopped: str = ""


def search(cfg: Configs, objective: str, decision: Mapping[str, Any], deadline: float, seed: int = 0,
           windows: int = 10_000, target: float | None = None, nodes: int = WINDOW_NODES,
           on_better: Callable[[Incumbent], None] | None = None, threads: int = 1) -> Outcome:
    """LNS from ``decision`` (see the module docstring); ``on_better`` sees every improved incumbent."""
    inc = Incumbent.of(cfg, objective, decision)
    out = Outcome(inc)
    rng = np.random.default_rng(seed)
    limit = checker_limits(cfg.view).capacity
    shape = server_shapes(cfg.view)
    servers_mode = objective == "servers"
    stall = 0
    while True:
        value = inc.value()
        if target is not None and (value <= target if servers_mode else value >= target):
            out.stopped = "the incumbent meets the bound"
            break
        if out.windows >= windows or stall >= STALL:
            out.stopped = "work limit" if out.windows >= windows else f"{STALL} windows in a row without improvement"
            break
        left = deadline - time.perf_counter()
        if left <= 0.05 or past(deadline):
            out.stopped = "time limit"
            break
        out.windows += 1
        size = WINDOW_SERVERS + GROW * (stall // (STALL // 3))   # larger windows while small ones find nothing
        if servers_mode:
            servers = _choose_servers(inc, rng, limit, shape, size)
            pool = np.zeros(0, dtype=np.int64)
        else:
            servers, pool = _choose_weight_window(inc, rng, limit, size)
        if _improve(inc, servers, pool, limit, min(left, WINDOW_SECONDS), nodes, seed, threads):
            out.improved += 1
            stall = 0
            if on_better is not None:
                on_better(inc)
        else:
            stall += 1
    return out


def _improve(inc: Incumbent, servers: np.ndarray, pool: np.ndarray, limit: np.ndarray, seconds: float, nodes: int,
             seed: int, threads: int) -> bool:
    """Re-pack the window exactly; update ``inc`` and say so when the window's answer is strictly better."""
    cfg = inc.cfg
    free, kept = _window_jobs(inc, servers)
    jobs = np.union1d(free, pool)
    if not len(jobs):
        return False
    room = np.maximum(limit[servers] - kept, 0.0)
    loads = np.zeros((cfg.types, len(servers)))
    pos = {int(s): i for i, s in enumerate(servers)}
    for j in free:
        for kind, s, n in inc.tasks[int(j)]:
            loads[cfg.job_type[j, kind], pos[s]] += n
    # a server with tasks of jobs outside the window is used whatever the window does
    busy = inc.count[servers] > loads.sum(axis=0)
    win = aggregate.build_window(cfg, inc.objective, jobs, servers, room, busy)
    admitted = np.isin(jobs, free)
    x0 = aggregate.x_from_loads(win, loads, admitted)
    before = float(win.cost @ x0) if x0 is not None else None
    res = arrays.solve(win, seconds, gap=1e-9, seed=seed, threads=threads, start=x0, nodes=nodes,
                       integral=cfg.integral(inc.objective))
    if res.x is None or res.objective is None or before is None:
        return False
    better = res.objective < before - 0.5 if inc.objective == "servers" else res.objective > before + 1e-9
    if not better:
        return False
    _admitted, tasks = aggregate.decide(cfg, win, res.x)
    for j in free:
        inc.drop(int(j))
    for j, parts in tasks.items():
        inc.put(j, parts)
    return True


def lns_method(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """``--method lns``: the best greedy variant, improved by :func:`search` (seeded; work-limited by
    :data:`STALL` windows without improvement and ``windows``, the time limit being the safety stop)."""
    refuse("lns", options)  # its windows / parts are pooled array models (pergpu.py)
    start = time.perf_counter()
    deadline = start + solve_options.time_limit
    objective = options["objective"]
    sense = "min" if objective == "servers" else "max"
    view = packing_view(instance)
    decision, name = best_greedy(view, objective)
    value = None if decision is None else objective_value(view, decision, objective)
    note = f"start: {name} {value}" if decision is not None else "no greedy variant placed every job (not a proof of infeasibility)"
    proven = None
    if decision is not None:
        cfg = configs(view)
        if objective == "servers":
            # the cheap bound first: no window is re-packed once the answer meets it
            l2, resource = combinatorial_bound(cfg)
            proven = float(l2)
            note += f"; Martello-Toth L2 {l2} ({resource or 'no task'})"
        out = search(cfg, objective, decision, deadline, seed=solve_options.seed, windows=int(options["windows"]),
                     target=proven, threads=solve_options.threads)
        decision, value = out.incumbent.decision(), out.incumbent.value()
        note += f"; {out.windows} windows, {out.improved} improved; stopped: {out.stopped}"
        if out.stopped == "time limit":
            note += " (cut short: the answer depends on the machine's speed)"
    report = heuristic_report(sense, value, time.perf_counter() - start, "lns",
                              {"objective": objective, "windows": options["windows"], "seed": solve_options.seed}, note)
    return MethodResult(report, decision)
