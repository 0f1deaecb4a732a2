"""One solve function over Pyomo models, whatever the solver.

:func:`solve` hands the model to a back end (HiGHS through ``pyomo.contrib.solver``, CP-SAT
through :mod:`.cpsat`, or any other solver Pyomo's ``SolverFactory`` knows), loads the
solution into the model when there is one, and turns the outcome into a
:class:`~.report.SolveReport`.  The objective in the report is evaluated on the loaded
values by Pyomo; the gap is ours; "optimal" needs the solver's proof *and* our gap within
the requested one.
"""

from __future__ import annotations

import functools
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyomo.environ as pyo

from ..errors import OptionError, SolverUnavailable
from ..report import SolveOptions, SolveReport
from ..tolerances import GAP_SLACK, proven_bound


@dataclass
class BackendResult:
    """What a back end found, before we judge it.

    ``termination``: ``optimal`` (proved within the gap), ``limit`` (stopped by time or another
    limit), ``infeasible``, ``unbounded``, ``infeasible-or-unbounded`` or ``error``.
    """

    termination: str
    has_solution: bool
    bound: float | None
    version: str
    message: str = ""
    prep_s: float = 0.0  # time spent translating the model for the solver (the report's translate_s)
    #: the solver that ran, where a back end handed the model to another (CP-SAT to HiGHS); empty: the one asked for
    solver: str = ""


Backend = Callable[[pyo.ConcreteModel, SolveOptions], BackendResult]


def objective_of(model: pyo.ConcreteModel) -> pyo.Objective:
    objs = list(model.component_data_objects(pyo.Objective, active=True))
    if len(objs) != 1:
        raise ValueError(f"model must have exactly one active objective, has {len(objs)}")
    return objs[0]


def sense_of(model: pyo.ConcreteModel) -> str:
    return "min" if objective_of(model).sense == pyo.minimize else "max"


def solve(model: pyo.ConcreteModel, options: SolveOptions, build_s: float = 0.0) -> SolveReport:
    """Solve ``model`` with ``options.solver`` and report; the solution, if any, is loaded into ``model``."""
    backend = backend_for(options.solver)
    sense = sense_of(model)
    start = time.perf_counter()
    outcome = backend(model, options)
    solve_s = time.perf_counter() - start
    objective = pyo.value(objective_of(model)) if outcome.has_solution else None
    bound = outcome.bound
    if outcome.termination == "optimal" and outcome.has_solution and bound is None:
        # a solver that proves optimality without reporting a bound (an LP, or CBC): the proof is the bound
        bound = objective
    report = SolveReport(
        status="error", objective=objective, bound=bound, sense=sense,
        solver=outcome.solver or options.solver, solver_version=outcome.version, options=options.to_dict(),
        build_s=build_s, translate_s=outcome.prep_s, solve_s=solve_s - outcome.prep_s, message=outcome.message,
    )
    report.status = _judge(outcome, report, options)
    return report


def _judge(outcome: BackendResult, report: SolveReport, options: SolveOptions) -> str:
    if outcome.has_solution:
        proved = outcome.termination == "optimal" and report.gap is not None and report.gap <= options.gap + GAP_SLACK
        if outcome.termination == "optimal" and not proved:
            report.message = (report.message + "; " if report.message else "") + \
                f"solver claimed optimality but the gap {report.gap} exceeds {options.gap}"
        return "optimal" if proved else "feasible"
    return {
        "infeasible": "infeasible",
        "unbounded": "unbounded",
        "infeasible-or-unbounded": "infeasible",
        "limit": "time-limit-no-solution",
    }.get(outcome.termination, "error")


# --- HiGHS -------------------------------------------------------------------------------

def solve_highs(model: pyo.ConcreteModel, options: SolveOptions) -> BackendResult:
    import highspy
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition as TC

    from .highs_lp import use_threads

    solver = _started_highs_class()(start_of(model))
    version = ".".join(map(str, solver.version()))
    if not any(True for _ in model.component_data_objects(pyo.Var, active=True)):
        return BackendResult("optimal", True, None, version, "model has no variables")
    # Pyomo's Highs object is made inside solve(); the process-wide pool is sized here for it
    pool = highspy.Highs()
    use_threads(pool, options.threads)
    results = solver.solve(
        model,
        time_limit=options.time_limit,
        rel_gap=options.gap,
        threads=options.threads,
        load_solutions=False,
        raise_exception_on_nonoptimal_result=False,
        # mip_abs_gap defaults to 1e-6, which would stop before our relative gap on tiny objectives
        tee=[sys.stderr] if options.log else False,
        solver_options={"random_seed": options.seed, "mip_abs_gap": 1e-10, "output_flag": options.log,
                        # a family may name HiGHS options its model's shape needs (``model._highs_options``;
                        # its build_model says why); presolve off drops the presolve ones
                        **{k: v for k, v in getattr(model, "_highs_options", {}).items()
                           if options.presolve or not k.startswith("presolve")},
                        **({} if options.presolve else {"presolve": "off"})},
    )
    has_solution = results.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
    if has_solution:
        results.solution_loader.load_vars()
    start_note = solver.start_note
    # Pyomo's wall time less HiGHS's own run time is the translation (and the loading of values)
    highs_s = getattr(results.timing_info, "highs_time", None)
    wall_s = getattr(results.timing_info, "wall_time", None)
    prep_s = max(wall_s - highs_s, 0.0) if isinstance(highs_s, float) and isinstance(wall_s, float) else 0.0
    termination = {
        TC.convergenceCriteriaSatisfied: "optimal",
        TC.maxTimeLimit: "limit",
        TC.iterationLimit: "limit",
        TC.objectiveLimit: "limit",
        TC.interrupted: "limit",
        TC.provenInfeasible: "infeasible",
        TC.locallyInfeasible: "infeasible",
        TC.unbounded: "unbounded",
        TC.infeasibleOrUnbounded: "infeasible-or-unbounded",
    }.get(results.termination_condition, "error")
    if termination == "error" and _interrupted():  # Pyomo 6.10 does not map HiGHS's kInterrupt (a Ctrl-C)
        termination = "limit"
    bound = proven_bound(results.objective_bound)  # HiGHS's "no bound" is inf, or 1e20
    message = "" if termination != "error" else f"HiGHS ended with {results.termination_condition.name}"
    return BackendResult(termination, has_solution, bound, version, "; ".join(filter(None, [message, start_note])), prep_s=prep_s)


def _interrupted() -> bool:
    from ..clock import stop_requested

    return stop_requested()


class _QuietInterrupt(logging.Filter):
    """Pyomo warns of HiGHS's interrupt status as unhandled; after a Ctrl-C it is what was asked for."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_interrupted() and "kInterrupt" in record.getMessage())


logging.getLogger("pyomo.contrib.solver").addFilter(_QuietInterrupt())
for _name in ("pyomo.contrib.solver.solvers.highs", "pyomo.contrib.solver.common.base", "pyomo.contrib.solver.base"):
    logging.getLogger(_name).addFilter(_QuietInterrupt())


#: the back ends wired in directly, by ``--solver`` name: "module:function", imported when first used
#: (CP-SAT and SCIP build on this module; naming them here by string keeps the layers one way)
NATIVE_BACKENDS = {"highs": "mlsched_opt.solvers.pyomo_run:solve_highs", "cpsat": "mlsched_opt.solvers.cpsat:solve_cpsat",
                   "scip": "mlsched_opt.solvers.scip:solve_scip"}


def backend_for(name: str) -> Backend:
    """The back end of ``--solver name``: a native one, or Pyomo's ``SolverFactory`` for the other
    known solvers; any other name is refused before anything is probed."""
    import importlib

    from .names import KNOWN_SOLVERS, OTHER_KNOWN

    if name in NATIVE_BACKENDS:
        module, _, attr = NATIVE_BACKENDS[name].partition(":")
        return getattr(importlib.import_module(module), attr)
    if name not in OTHER_KNOWN:
        raise OptionError(f"unknown solver {name!r}; choose from {', '.join(KNOWN_SOLVERS)}", field="--solver")
    return solve_legacy


def start_of(model: pyo.ConcreteModel) -> list[tuple[Any, float]]:
    """The start a family set on its model (``model._start``: (variable, value) pairs from a
    heuristic answer, maybe partial), for the solvers that take one."""
    return list(getattr(model, "_start", None) or ())


@functools.cache
def _started_highs_class() -> type:
    """Made on first use: Pyomo's HiGHS interface imports highspy, which other commands need not pay."""
    from pyomo.contrib.solver.solvers.highs import Highs

    class StartedHighs(Highs):
        """Pyomo's HiGHS interface, handing HiGHS a start (``setSolution``) between the translation and
        the run; HiGHS completes a partial start by a sub-MIP and keeps it if feasible."""

        def __init__(self, start: list[tuple[Any, float]] | None = None, **kwargs: Any):
            super().__init__(**kwargs)
            # Pyomo's set_instance calls __init__ again (no start): keep the one given first
            if start is not None or not hasattr(self, "_mlsched_start"):
                self._mlsched_start = start or []
                self.start_note = ""

        def _solve(self):
            from .highs_lp import watch

            watch(self._solver_model)  # progress on the terminal, and a Ctrl-C stops HiGHS with its incumbent
            if self._mlsched_start:
                import highspy
                import numpy as np

                columns = self._pyomo_var_to_solver_var_map
                pairs = [(columns[id(v)], value) for v, value in self._mlsched_start if id(v) in columns]
                if pairs:
                    index = np.array([c for c, _ in pairs], dtype=np.int32)
                    values = np.array([x for _, x in pairs], dtype=np.float64)
                    status = self._solver_model.setSolution(len(pairs), index, values)
                    # HiGHS checks the start itself and keeps it only if feasible: this says it was offered
                    self.start_note = (f"start: {len(pairs)} values offered from a heuristic answer"
                                       + ("" if status == highspy.HighsStatus.kOk else f" (refused: {status.name})"))
            return super()._solve()

    return StartedHighs



# --- any other solver Pyomo's SolverFactory knows ------------------------------------------

# option names for the limit, the gap and the threads, per solver
_LEGACY_OPTIONS = {
    "cbc": {"time_limit": "sec", "gap": "ratioGap", "threads": "threads", "seed": "randomSeed"},
    "glpk": {"time_limit": "tmlim", "gap": "mipgap"},
    "gurobi": {"time_limit": "TimeLimit", "gap": "MIPGap", "threads": "Threads", "seed": "Seed"},
    "gurobi_direct": {"time_limit": "TimeLimit", "gap": "MIPGap", "threads": "Threads", "seed": "Seed"},
    "cplex": {"time_limit": "timelimit", "gap": "mip_tolerances_mipgap", "threads": "threads", "seed": "randomseed"},
}


def legacy_available(name: str) -> bool:
    try:
        return bool(pyo.SolverFactory(name).available(exception_flag=False))
    except Exception:  # noqa: BLE001 -- a plugin that fails to even probe is not available
        return False


def solve_legacy(model: pyo.ConcreteModel, options: SolveOptions) -> BackendResult:
    from pyomo.opt import SolutionStatus, TerminationCondition as TC

    name = options.solver
    opt = pyo.SolverFactory(name)
    if not legacy_available(name):
        raise SolverUnavailable(f"solver {name!r} is not installed here (see `mlsched info`)", field="--solver")
    names = _LEGACY_OPTIONS.get(name, {})
    if "time_limit" not in names:
        raise SolverUnavailable(f"solver {name!r} has no time-limit mapping here; use highs or cpsat", field="--solver")
    for key, opt_name in names.items():
        opt.options[opt_name] = getattr(options, key)
    kwargs: dict[str, Any] = {"load_solutions": False}
    if hasattr(opt, "executable"):
        kwargs["timelimit"] = options.time_limit + 10  # kills the process if the solver ignores its own limit
    logging.getLogger("pyomo.core").setLevel(logging.ERROR)
    results = opt.solve(model, **kwargs)
    tc = results.solver.termination_condition
    has_solution = len(results.solution) > 0 and results.solution(0).status in (
        SolutionStatus.optimal, SolutionStatus.feasible, SolutionStatus.locallyOptimal, SolutionStatus.stoppedByLimit)
    if has_solution:
        model.solutions.load_from(results)
    termination = {
        TC.optimal: "optimal", TC.globallyOptimal: "optimal",
        TC.maxTimeLimit: "limit", TC.maxIterations: "limit", TC.maxEvaluations: "limit",
        TC.infeasible: "infeasible", TC.unbounded: "unbounded", TC.infeasibleOrUnbounded: "infeasible-or-unbounded",
    }.get(tc, "error")
    problem = results.problem
    bound = problem.lower_bound if sense_of(model) == "min" else problem.upper_bound
    try:
        bound = float(bound)
        if abs(bound) == float("inf"):
            bound = None
    except (TypeError, ValueError):
        bound = None
    version = ".".join(map(str, opt.version() or ())) if hasattr(opt, "version") else ""
    return BackendResult(termination, has_solution, bound, version, "" if termination != "error" else f"{name} ended with {tc}")
