"""``--method exact`` for hetero: the configuration ILP where it fits, column generation beyond.

* Where the configuration ILP has at most :data:`FULL_MODEL_COLUMNS` columns (every job times
  every class-count vector), or with a solver other than HiGHS, the Pyomo model of
  :mod:`.formulation` is solved and its "optimal" certified, as before (``Family._run_exact``);
  a model too large to enumerate raises :class:`~mlsched_opt.errors.ModelTooLarge`.
* Beyond, a search on the structure (our design): a start (the ``greedy`` baseline improved by
  the exchange search of :mod:`.exchange`), the configuration LP by column generation with exact
  pricing (:mod:`.bound`: the proven bound), its LP solution rounded (a basic solution has at
  most one fractional job per GPU class: those choose by a small ILP), then the configuration
  ILP over the generated columns (price-and-branch, HiGHS, a node limit), each answer polished
  by the exchange search.  Work limits (column-generation rounds, branch-and-bound nodes,
  exchange moves) make the answer the same run after run; the wall clock is only the safety
  stop, and the message says when it cut the run.  The answer is ``feasible`` with the bound
  and the gap (no second route can certify an optimum at this size); every improvement is
  offered to the watchdog.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...clock import offer, past
from ...io.instance import Instance
from ...report import SolveOptions, SolveReport
from ...solvers.highs_lp import highspy_version
from ..base import MethodResult
from .baselines import greedy
from .bound import ColumnGeneration
from .configs import decision, evaluate, vector_count
from .exchange import improve
from .view import HeteroView, hetero_view

#: The configuration ILP (Pyomo, certified) is built up to this many columns (jobs x vectors):
#: 287k columns at 96 GPUs and 8 jobs proved in 137-184 s (README); beyond, the column generation.
FULL_MODEL_COLUMNS = 300_000
#: Branch-and-bound nodes of the ILP over the generated columns (a work limit).
MAX_NODES = 2_000


def full_model_fits(view: HeteroView) -> bool:
    """Whether the configuration ILP of every job and every class-count vector is at most
    :data:`FULL_MODEL_COLUMNS` columns (Python integers: the count passes int64 at scale)."""
    return vector_count(view.counts) * view.S <= FULL_MODEL_COLUMNS


def exact_method(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """The family's ``exact``: the certified configuration ILP where it fits (or for solvers other
    than HiGHS), the column-generation search beyond (see the module docstring)."""
    view = hetero_view(instance)
    if solve_options.solver != "highs" or full_model_fits(view):
        from . import FAMILY

        return FAMILY._run_exact(instance, options, solve_options)
    return search(view, options, solve_options)


class _Best:
    """The best allocation so far, its value, and where it came from; offers each improvement."""

    def __init__(self, view: HeteroView, options: Mapping[str, Any], solve_options: SolveOptions, started: float):
        self.view, self.options, self.solve_options, self.started = view, options, solve_options, started
        self.x: np.ndarray | None = None
        self.value = np.inf
        self.source = ""
        self.bound: float | None = None

    def consider(self, x: np.ndarray | None, source: str) -> None:
        if x is None:
            return
        value = float(evaluate(self.view, x, self.options["comm"]).mean())
        if np.isfinite(value) and value < self.value - 1e-12 * max(1.0, abs(value)):
            self.x, self.value, self.source = x, value, source
            offer(self.report("feasible", ""), decision(self.view, x, self.options))

    def report(self, status: str, message: str) -> SolveReport:
        return SolveReport(status=status, objective=None if self.x is None else self.value, bound=self.bound, sense="min",
                           solver="highs (column generation)", solver_version=highspy_version(),
                           options=self.solve_options.to_dict(), solve_s=time.perf_counter() - self.started, message=message)


def search(view: HeteroView, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """The large-scale exact search: start, bound, rounding, price-and-branch (module docstring)."""
    from .methods import search_deadline

    started = time.perf_counter()
    deadline = search_deadline(view, started, solve_options.time_limit)
    comm = options["comm"]
    best = _Best(view, options, solve_options, started)
    notes: list[str] = []
    x0 = greedy(view, comm)
    if x0 is not None:
        best.consider(x0, "greedy")
        best.consider(improve(view, x0, comm, deadline=deadline)[0], "greedy + exchange")
    cg = ColumnGeneration(view, comm, best.x, solve_options.threads)
    cg.run(deadline)
    proved = cg.result()
    if proved.status == "infeasible":
        return MethodResult(best.report("infeasible", proved.message), None)
    best.bound = proved.bound
    notes.append(proved.message)
    gap = solve_options.gap
    if not past(deadline):
        rounded = cg.rounded(deadline)
        best.consider(rounded, "the LP solution rounded")
        if rounded is not None:
            best.consider(improve(view, rounded, comm, deadline=deadline)[0], "the LP solution rounded + exchange")
    if best.bound is not None and best.x is not None and best.value > best.bound * (1 + gap) and not past(deadline):
        mip = cg.integer(deadline, best.x, gap, MAX_NODES)
        best.consider(mip, "the ILP over the generated columns")
        if mip is not None:
            best.consider(improve(view, mip, comm, deadline=deadline)[0], "the ILP over the generated columns + exchange")
    if past(deadline):
        notes.append("cut short by the time limit: the best answer and bound so far")
    if best.x is None:
        return MethodResult(best.report("time-limit-no-solution", "; ".join(["no placement found", *notes])), None)
    stats = {"cg_rounds": proved.rounds, "columns": proved.columns, "exact_jobs": proved.exact_jobs}
    notes.insert(0, f"answer from {best.source}")
    return MethodResult(best.report("feasible", "; ".join(notes)), decision(view, best.x, options, stats=stats))


__all__ = ["FULL_MODEL_COLUMNS", "exact_method", "full_model_fits", "search"]
