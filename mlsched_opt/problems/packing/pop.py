"""POP for packing: split jobs and servers into random parts, solve each part exactly, combine.

Our adaptation of POP (Narayanan, Kazhamiaka, Abuzaid, Kraft, Agrawal, Kandula, Boyd, Zaharia,
"Solving Large-Scale Granular Resource Allocation Problems Efficiently with POP", SOSP 2021)
to the packing ILP:

* the jobs are dealt to ``k`` parts in a seeded random order; the servers of every class of
  identical servers (role, GPU model, capacity) are shuffled and dealt round-robin from a random
  part, so each part gets about ``1/k`` of every class (POP splits resources uniformly at
  random; dealing per class keeps a rare class from landing all in one part);
* each part (its jobs on its servers) is the exact MILP aggregated by task type
  (:mod:`.aggregate`: the same optimum, without the jobs' symmetry), started from first-fit
  decreasing on the part's servers taken largest first, and solved by HiGHS within a *work
  limit* of :data:`PART_NODES` branch-and-bound nodes (an integral objective stops as soon as
  its rounded bound meets the incumbent);
* the parts' decisions are disjoint (no job and no server in two parts), so their union is a
  decision of the whole instance: admitted weight adds up (``weight``), servers used add up
  (``servers``).

Parts finish: each stops at its optimum or at its node limit, never at a share of the clock, so
the answer is the same for a seed whatever the machine's load (measured on Alibaba's 2,000 pods,
``servers``, 32 parts: 28 solved exactly, 239 servers, 44 s on 2 loaded cores; before, each part
got a share of the limit and the answer followed the load: 297-322).  Every part's start is
computed first, so an answer exists early; the time limit is the safety stop: parts not reached
by then keep their start and the message says the run was cut short.  In ``servers`` mode a part whose jobs do not all fit on its
servers leaves no POP answer; the method then falls back to first-fit decreasing on the whole
instance and says so.

Guarantee
---------
None in general.  POP's argument is for *granular* problems: many jobs, each small against a
server, and many interchangeable servers, where a random part is a scaled-down copy of the whole
and the union of the parts' optima is near the optimum (their evaluation: within a few percent).
Alibaba's pods are granular in that sense.  For coarse instances (few jobs or servers, jobs as
large as a server) a split can lose much; ``parts = 1`` is the exact MILP itself (within the node
limit).  Deterministic for a seed unless the time limit cuts the run short.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...clock import past
from ...io.instance import Instance
from ...solvers import SolveOptions
from ..base import MethodResult, heuristic_report
from . import aggregate, arrays
from .bound import Configs, configs, server_shapes
from .decision import objective_value
from .methods import greedy
from .pergpu import refuse
from .view import PackingView, checker_limits, packing_view

#: Automatic ``parts``: about this many (job, server) pairs per part.  Measured on Alibaba's 2,000
#: pods (``servers`` mode, 60 s limit, 2 shared cores): 4 parts use 432 servers, 8 use 376, 16 use
#: 299, 32 use 296 (LP bound 225.7): small parts let HiGHS improve every part within its share.
PAIRS_PER_PART = 2_500
MAX_AUTO_PARTS = 64
#: HiGHS branch-and-bound nodes per part: the work limit that lets every part finish, whatever the
#: machine's load, so that the answer is the same for a seed (the time limit is only the safety stop)
PART_NODES = 50


def auto_parts(view: PackingView) -> int:
    """``k`` so that each part has about :data:`PAIRS_PER_PART` pairs; a part has ``1/k`` of the
    jobs and of the servers, so ``1/k**2`` of the pairs."""
    pairs = view.pairs()
    k = math.ceil(math.sqrt(pairs / PAIRS_PER_PART)) if pairs else 1
    return int(min(max(k, 1), MAX_AUTO_PARTS, max(len(view.jobs), 1), max(len(view.capacity), 1)))


def split(view: PackingView, parts: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The parts' (jobs, servers), each sorted (instance order); seeded."""
    rng = np.random.default_rng(seed)
    job_part = np.empty(len(view.jobs), dtype=np.int64)
    job_part[rng.permutation(len(view.jobs))] = np.arange(len(view.jobs)) % parts
    server_part = np.empty(len(view.capacity), dtype=np.int64)
    cls = server_shapes(view)
    for c in range(int(cls.max()) + 1 if len(cls) else 0):
        members = rng.permutation(np.flatnonzero(cls == c))
        server_part[members] = (np.arange(len(members)) + int(rng.integers(parts))) % parts
    return [(np.flatnonzero(job_part == p), np.flatnonzero(server_part == p)) for p in range(parts)]


def _restricted(view: PackingView, servers: np.ndarray) -> PackingView:
    """The view with every server outside ``servers`` made ineligible (FFD on one part)."""
    mask = np.zeros(len(view.capacity), dtype=bool)
    mask[servers] = True
    return dataclasses.replace(view, eligible={t: e & mask[None, :] for t, e in view.eligible.items()})


def _start(cfg: Configs, win: aggregate.Window, decision: Mapping[str, Any]) -> np.ndarray | None:
    """The part's start (a decision on its jobs and servers) as the window model's vector."""
    pos = {int(s): i for i, s in enumerate(win.servers)}
    loads = np.zeros((cfg.types, len(win.servers)))
    tasks = aggregate.tasks_of(cfg, decision)
    for j, parts in tasks.items():
        for kind, s, n in parts:
            loads[cfg.job_type[j, kind], pos[s]] += n
    return aggregate.x_from_loads(win, loads, np.isin(win.jobs, list(tasks)))


def _merge(decisions: list[dict[str, Any]], view: PackingView) -> dict[str, Any]:
    placement: dict[str, Any] = {}
    for d in decisions:
        placement.update(d["placement"])
    admitted = [job.id for job in view.jobs if job.id in placement]
    return {"admitted": admitted, "placement": {j: placement[j] for j in admitted}}


def pop(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """POP-style partitioned exact solve (see the module docstring for the split and the guarantee)."""
    refuse("pop", options)  # its windows / parts are pooled array models (pergpu.py)
    start = time.perf_counter()
    deadline = start + solve_options.time_limit
    objective = options["objective"]
    sense = "min" if objective == "servers" else "max"
    view = packing_view(instance)
    k = int(options.get("parts", 0)) or auto_parts(view)
    parts = split(view, k, solve_options.seed)
    cfg = configs(view)
    limit = checker_limits(view).capacity
    starts: list[dict[str, Any] | None] = [greedy(_restricted(view, servers), objective, jobs, servers="largest")
                                           for jobs, servers in parts]
    best: list[dict[str, Any] | None] = list(starts)
    solved, cut = 0, False
    for p, (jobs, servers) in enumerate(parts):
        left = deadline - time.perf_counter()
        if left < 0.05:
            cut = True
            break
        win = aggregate.build_window(cfg, objective, jobs, servers, limit[servers])
        first = starts[p]
        x0 = None if first is None else _start(cfg, win, first)
        res = arrays.solve(win, left, gap=solve_options.gap, seed=solve_options.seed, threads=solve_options.threads,
                           presolve=solve_options.presolve, start=x0, nodes=PART_NODES, integral=cfg.integral(objective))
        if res.x is not None:
            best[p] = aggregate.placement_of(view, aggregate.decide(cfg, win, res.x)[1])
        cut = cut or res.status in ("time-limit-no-solution",) or (res.status == "feasible" and past(deadline))
        solved += res.status in ("optimal", "infeasible")
    note = f"POP: {k} parts, {solved} solved exactly, the others stopped at {PART_NODES} nodes"
    if cut:
        note += "; cut short by the time limit: parts not reached keep their first-fit start"
    if any(d is None for d in best):
        decision = greedy(view, objective)
        note += "; some part has no placement of all its jobs on its servers, so this is first-fit decreasing on the whole instance"
    else:
        decision = _merge([d for d in best if d is not None], view)
    value = None if decision is None else objective_value(view, decision, objective)
    report = heuristic_report(sense, value, time.perf_counter() - start, "pop",
                              {"objective": objective, "parts": k, "seed": solve_options.seed}, note)
    return MethodResult(report, decision)
