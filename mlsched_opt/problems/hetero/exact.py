"""``--method exact`` for hetero: the configuration ILP where it fits, column generation beyond.

* Where the configuration ILP has at most :data:`FULL_MODEL_COLUMNS` columns (every job times
  every class-count vector), or with a solver other than HiGHS, the Pyomo model of
  :mod:`.formulation` is solved and its "optimal" certified, as before (``Family._run_exact``);
  a model too large to enumerate raises :class:`~mlsched_opt.errors.ModelTooLarge`.
* Beyond, a search on the structure (our design): the configuration LP by column generation with
  exact pricing (:mod:`.bound`: the proven bound), its LP solution rounded (a basic solution has
  at most one fractional job per GPU class: those choose by a small ILP; ``greedy`` when the LP
  has no such solution in time), then the configuration ILP over the generated columns
  (price-and-branch, HiGHS, a node limit), each answer polished by the exchange search of
  :mod:`.exchange`.  The quick start of :mod:`~mlsched_opt.problems.anytime` (``greedy``) answers
  first.  Work limits (column-generation rounds, branch-and-bound nodes,
  exchange moves) make the answer the same run after run; the wall clock is only the safety
  stop, and the message says when it cut the run.  The answer is ``feasible`` with the bound
  and the gap (no second route can certify an optimum at this size); the best answer is offered
  to the watchdog between the phases.
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
from .configs import vector_count
from .decision import decision, evaluate
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
    """The best allocation so far, its value, and where it came from."""

    def __init__(self, view: HeteroView, options: Mapping[str, Any], solve_options: SolveOptions, started: float):
        self.view, self.options, self.solve_options, self.started = view, options, solve_options, started
        self.x: np.ndarray | None = None
        self.value = np.inf
        self.source = ""
        self.bound: float | None = None
        self.offered = np.inf

    def consider(self, x: np.ndarray | None, source: str) -> None:
        if x is None:
            return
        value = float(evaluate(self.view, x, self.options["comm"]).mean())
        if np.isfinite(value) and value < self.value - 1e-12 * max(1.0, abs(value)):
            self.x, self.value, self.source = x, value, source

    def offer(self) -> None:
        """Offer the best answer to the watchdog when it improved since the last offer (building a
        decision costs about a millisecond per job, so only between the search's phases)."""
        if self.x is not None and self.value < self.offered:
            offer(self.report("feasible", f"answer from {self.source}"), decision(self.view, self.x, self.options))
            self.offered = self.value

    def polish(self, x: np.ndarray | None, source: str, deadline: float) -> None:
        """Consider ``x`` and its exchange-improved version."""
        self.consider(x, source)
        if x is not None:
            self.consider(improve(self.view, x, self.options["comm"], deadline=deadline)[0], f"{source} + exchange")

    def report(self, status: str, message: str) -> SolveReport:
        return SolveReport(status=status, objective=None if self.x is None else self.value, bound=self.bound, sense="min",
                           solver="highs (column generation)", solver_version=highspy_version(),
                           options=self.solve_options.to_dict(), solve_s=time.perf_counter() - self.started, message=message)


#: Share of the search's time the column generation takes before a first rounded answer (it
#: resumes after, in the time left).
FIRST_SHARE = 0.6


def search(view: HeteroView, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """The large-scale exact search: bound, rounding, price-and-branch (module docstring)."""
    from .methods import search_deadline

    started = time.perf_counter()
    deadline = search_deadline(view, started, solve_options.time_limit)
    comm = options["comm"]
    best = _Best(view, options, solve_options, started)
    # the quick start (greedy, problems/anytime.py) is offered already: the column generation first
    cg = ColumnGeneration(view, comm, None, solve_options.threads)
    cg.run(started + FIRST_SHARE * (deadline - started))
    best.polish(cg.rounded(deadline), "the LP solution rounded", deadline)
    if best.x is None and not past(deadline):  # the LP has no basis without artificial columns yet
        best.polish(greedy(view, comm), "greedy", deadline)
    best.offer()
    cg.run(deadline)
    proved = cg.result()
    if proved.status == "infeasible":
        return MethodResult(best.report("infeasible", proved.message), None)
    best.bound = proved.bound
    gap = solve_options.gap
    if cg.converged and not past(deadline):
        best.polish(cg.rounded(deadline), "the LP solution rounded", deadline)
    if best.bound is not None and best.x is not None and best.value > best.bound * (1 + gap) and not past(deadline):
        best.offer()
        best.polish(cg.integer(deadline, best.x, gap, MAX_NODES), "the ILP over the generated columns", deadline)
    notes = [proved.message]
    if past(deadline):
        notes.append("cut short by the time limit: the best answer and bound so far")
    if best.x is None:
        return MethodResult(best.report("time-limit-no-solution", "; ".join(["no placement found", *notes])), None)
    stats = {"cg_rounds": proved.rounds, "columns": proved.columns, "exact_jobs": proved.exact_jobs}
    notes.insert(0, f"answer from {best.source}")
    return MethodResult(best.report("feasible", "; ".join(notes)), decision(view, best.x, options, stats=stats))


__all__ = ["FULL_MODEL_COLUMNS", "exact_method", "full_model_fits", "search"]
