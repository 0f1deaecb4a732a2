"""POP for packing: split jobs and servers into random parts, solve each part exactly, combine.

Our adaptation of POP (Narayanan, Kazhamiaka, Abuzaid, Kraft, Agrawal, Kandula, Boyd, Zaharia,
"Solving Large-Scale Granular Resource Allocation Problems Efficiently with POP", SOSP 2021)
to the packing ILP:

* the jobs are dealt to ``k`` parts in a seeded random order; the servers of every class of
  identical servers (role, GPU model, capacity) are shuffled and dealt round-robin from a random
  part, so each part gets about ``1/k`` of every class (POP splits resources uniformly at
  random; dealing per class keeps a rare class from landing all in one part);
* each part (its jobs on its servers) is the exact MILP of :mod:`.arrays`, started from
  first-fit decreasing on the part and solved by HiGHS;
* the parts' decisions are disjoint (no job and no server in two parts), so their union is a
  decision of the whole instance: admitted weight adds up (``weight``), servers used add up
  (``servers``).

Anytime: every part's FFD start is computed first, so an answer exists early; the remaining
time of the limit (``mlsched solve`` has already kept its share for the LP bound it computes
next) is shared among the parts still to solve (each gets what is left divided by their number).
At the deadline the method returns the parts' best answers so far with status ``feasible`` and a
message saying it was cut short.  In ``servers`` mode a part whose jobs do not all fit on its
servers leaves no POP answer; the method then falls back to first-fit decreasing on the whole
instance and says so.

Guarantee
---------
None in general.  POP's argument is for *granular* problems: many jobs, each small against a
server, and many interchangeable servers, where a random part is a scaled-down copy of the whole
and the union of the parts' optima is near the optimum (their evaluation: within a few percent).
Alibaba's pods are granular in that sense.  For coarse instances (few jobs or servers, jobs as
large as a server) a split can lose much; ``parts = 1`` is the exact MILP itself.  Deterministic
for a seed when every part is solved to optimality (HiGHS on one thread); a part stopped by the
time limit keeps whatever incumbent HiGHS had then.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...io.instance import Instance
from ...solvers import SolveOptions
from ..base import MethodResult, heuristic_report
from . import arrays
from .methods import greedy, objective_value
from .view import PackingView, packing_view

#: Automatic ``parts``: about this many (job, server) pairs per part.  Measured on Alibaba's 2,000
#: pods (``servers`` mode, 60 s limit, 2 shared cores): 4 parts use 432 servers, 8 use 376, 16 use
#: 299, 32 use 296 (LP bound 225.7): small parts let HiGHS improve every part within its share.
PAIRS_PER_PART = 2_500
MAX_AUTO_PARTS = 64


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
    reps, _ = arrays.shape_classes(view)
    cls = _class_of(view, reps)
    for c in range(len(reps)):
        members = rng.permutation(np.flatnonzero(cls == c))
        server_part[members] = (np.arange(len(members)) + int(rng.integers(parts))) % parts
    return [(np.flatnonzero(job_part == p), np.flatnonzero(server_part == p)) for p in range(parts)]


def _class_of(view: PackingView, reps: np.ndarray) -> np.ndarray:
    key = {(view.instance.servers[r].role, view.instance.servers[r].gpu_model, view.capacity[r].tobytes()): c
           for c, r in enumerate(reps)}
    return np.array([key[(s.role, s.gpu_model, view.capacity[i].tobytes())] for i, s in enumerate(view.instance.servers)])


def _restricted(view: PackingView, servers: np.ndarray) -> PackingView:
    """The view with every server outside ``servers`` made ineligible (FFD on one part)."""
    mask = np.zeros(len(view.capacity), dtype=bool)
    mask[servers] = True
    return dataclasses.replace(view, eligible={t: e & mask[None, :] for t, e in view.eligible.items()})


def _merge(decisions: list[dict[str, Any]], view: PackingView) -> dict[str, Any]:
    placement: dict[str, Any] = {}
    for d in decisions:
        placement.update(d["placement"])
    admitted = [job.id for job in view.jobs if job.id in placement]
    return {"admitted": admitted, "placement": {j: placement[j] for j in admitted}}


def pop(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """POP-style partitioned exact solve (see the module docstring for the split and the guarantee)."""
    start = time.perf_counter()
    deadline = start + solve_options.time_limit
    objective = options["objective"]
    sense = "min" if objective == "servers" else "max"
    view = packing_view(instance)
    k = int(options.get("parts", 0)) or auto_parts(view)
    parts = split(view, k, solve_options.seed)
    starts: list[dict[str, Any] | None] = [greedy(_restricted(view, servers), objective, jobs) for jobs, servers in parts]
    best: list[dict[str, Any] | None] = list(starts)
    solved, cut = 0, False
    for p, (jobs, servers) in enumerate(parts):
        left = deadline - time.perf_counter()
        if left < 0.05:
            cut = True
            break
        model = arrays.build(view, objective, jobs, servers)
        first = starts[p]
        x0 = None if first is None else arrays.x_from_decision(view, model, first)
        share = left / (len(parts) - p)
        res = arrays.solve(model, share, gap=solve_options.gap, seed=solve_options.seed, threads=solve_options.threads,
                           presolve=solve_options.presolve, start=x0)
        if res.x is not None:
            best[p] = arrays.decision_from_x(view, model, res.x)
        cut = cut or res.status not in ("optimal", "infeasible")
        solved += res.status in ("optimal", "infeasible")
    note = f"POP: {k} parts, {solved} solved exactly"
    if cut:
        note += "; cut short by the time limit: parts not proven optimal keep their best answer so far"
    if any(d is None for d in best):
        decision = greedy(view, objective)
        note += "; some part has no placement of all its jobs on its servers, so this is first-fit decreasing on the whole instance"
    else:
        decision = _merge([d for d in best if d is not None], view)
    value = None if decision is None else objective_value(view, decision, objective)
    report = heuristic_report(sense, value, time.perf_counter() - start, "pop",
                              {"objective": objective, "parts": k, "seed": solve_options.seed}, note)
    return MethodResult(report, decision)
