"""``--method exact`` at every size: the offline MILP where it fits, else a plan-improve search.

Our design (issue 32), an offline method: it sees every job from the start.

* Up to :data:`.options.FULL_MODEL_MAX` variables, the offline MILP of :mod:`.formulation` (Pyomo,
  certified as before), started from the better of OASiS's and the search's schedules
  (:func:`.methods.exact_start`).
* Beyond, the search: every job planned at once (:func:`.plan.plan_jobs`: the column MILP, packing,
  single-job re-plans), then a large-neighbourhood search: windows of jobs by arrival slot (about
  :func:`window_size` each, and the same shifted by half) are freed one at a time, re-planned on the
  rest's free capacity, packed, and kept when the total utility grows.  The windows are visited
  in a fixed order and every MILP has a node limit, so the same instance gives the same answer; the
  wall clock is only the safety stop, and a run it cuts short says so.  The search proves no bound:
  the anytime wrapper (:mod:`~mlsched_opt.problems.anytime`) adds the family's, the window capacity
  LP (:func:`.bound.capacity_bound`), and reports ``feasible`` with the gap.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...clock import offer, past
from ...io.instance import Instance
from ...report import SolveReport
from ...solvers import SolveOptions
from ...solvers.highs_lp import highspy_version
from ..base import MethodResult, heuristic_report
from .decision import decision, model_size
from .options import FULL_MODEL_MAX
from .plan import State, plan_jobs
from .view import OasisView, oasis_view

#: Jobs per window of the large-neighbourhood search (:func:`window_size`), and the most passes over them.
LNS_MIN, LNS_MAX = 50, 400
LNS_ROUNDS = 3
#: Relative growth of the total utility for a window's re-plan to replace the incumbent.
IMPROVES = 1e-9


def windows(view: OasisView) -> list[list[int]]:
    """Groups of jobs by arrival order, :func:`window_size` each, and the same again shifted by half a
    group (so that every boundary between two groups lies inside some window)."""
    order = np.argsort([j.arrival for j in view.jobs], kind="stable")
    size = window_size(len(order))
    cuts = [(a, a + size) for a in range(0, len(order), size)]
    cuts += [(a, a + size) for a in range(size // 2, len(order) - size // 2, size)]
    return [sorted(int(i) for i in order[a:b]) for a, b in cuts]


def window_size(jobs: int) -> int:
    """Jobs per window: a quarter of them, within [:data:`LNS_MIN`, :data:`LNS_MAX`]."""
    return int(np.clip(jobs // 4, LNS_MIN, LNS_MAX))


def improve(state: State, jobs: list[int], deadline: float, seed: int) -> bool:
    """Free ``jobs`` (their tasks removed) and plan them again on what the rest leaves; keep the result
    when the total utility grows, else restore the incumbent.  Returns whether it grew."""
    before = state.value()
    saved = {i: (state.workers[i], state.ps[i], state.completion[i]) for i in jobs if i in state.completion}
    for i in saved:
        state.remove(i)
    plan_jobs(state, jobs, deadline, seed)
    if state.value() > before + IMPROVES * max(1.0, abs(before)):
        return True
    for i in jobs:
        if i in state.completion:
            state.remove(i)
    for i, (w, p, t) in saved.items():
        state.add(i, w, p, t)
    return False


def search(view: OasisView, deadline: float, seed: int, on_better=None, rounds: int = LNS_ROUNDS) -> tuple[State, dict[str, Any]]:
    """The plan of every job, then passes of :func:`improve` over :func:`windows` until a pass improves
    nothing or ``rounds`` passes are done, within ``deadline``."""
    state = State.empty(view)
    plan_jobs(state, list(range(len(view.jobs))), deadline, seed)
    stats: dict[str, Any] = {"planned": state.value(), "windows": 0, "improved": 0}
    if on_better is not None:
        on_better(state)
    for _round in range(rounds):
        kept = 0
        for group in windows(view):
            if past(deadline):
                state.cut_short += 1
                break
            stats["windows"] += 1
            if improve(state, group, deadline, seed):
                kept += 1
                if on_better is not None:
                    on_better(state)
        stats["improved"] += kept
        if not kept or past(deadline):
            break
    return state, stats


def exact_method(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """``--method exact``: the full offline MILP up to :data:`.options.FULL_MODEL_MAX` variables (from the
    search's schedule, certified as the family's exact method always was), else the search of the module
    docstring (its MILPs by HiGHS whatever ``--solver`` says), with no bound of its own."""
    from . import FAMILY  # late: the family is built from this module's functions

    view = oasis_view(instance, options.get("ranges", "instance"))
    size = model_size(view)
    if size <= FULL_MODEL_MAX:
        return FAMILY._run_exact(instance, options, solve_options)
    started = time.perf_counter()
    deadline = started + solve_options.time_limit

    def report(state: State, message: str) -> SolveReport:
        return dataclasses.replace(heuristic_report("max", state.value(), time.perf_counter() - started, "highs",
                                                    solve_options.to_dict(), message), solver_version=highspy_version())

    def better(state: State) -> None:
        offer(report(state, "the search's incumbent"), decision(view, state.outcome()))

    state, stats = search(view, deadline, solve_options.seed, better)
    message = (f"plan-improve search (the full MILP would have {size:,} variables, over {FULL_MODEL_MAX:,}): "
               f"planned {stats['planned']:.6g}, LNS windows improved {stats['improved']}/{stats['windows']}")
    if solve_options.solver != "highs":
        message += f"; its MILPs are HiGHS's (--solver {solve_options.solver} solves the full MILP only)"
    if state.cut_short:
        message += f"; cut short by the time limit ({solve_options.time_limit:g} s): {state.cut_short} step(s) stopped early"
    return MethodResult(report(state, message), decision(view, state.outcome()))


