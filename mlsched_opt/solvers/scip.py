"""SCIP (through ``pyscipopt``) as a back end for linear Pyomo models: the independent referee.

SCIP shares no code with HiGHS or CP-SAT, so it is the natural third opinion when those two
disagree about an optimum (solvers have presolve bugs; see :mod:`.certify`).  The model is
read from Pyomo's standard linear representation row by row, like the CP-SAT translation, but
keeps continuous variables and fractional coefficients: SCIP takes them as they are.
"""

from __future__ import annotations

import importlib.util
import sys

import pyomo.environ as pyo
from pyomo.repn import generate_standard_repn

from ..errors import SolverUnavailable
from ..report import SolveOptions
from ..tolerances import proven_bound
from .pyomo_run import BackendResult, objective_of


def scip_available() -> bool:
    return importlib.util.find_spec("pyscipopt") is not None


def scip_version() -> str | None:
    if not scip_available():
        return None
    import pyscipopt

    return f"{pyscipopt.Model().version()} (pyscipopt {pyscipopt.__version__})"


def _warm_start(scip, pairs) -> None:
    """Offer the values already loaded in the Pyomo model (a referee runs after the primary solver)
    as a first incumbent.  SCIP still proves its own bound and keeps searching for better points,
    so a wrong optimum of the primary is refuted all the same; the start only spares it the search
    for a first solution.  A start SCIP finds infeasible is dropped by SCIP itself."""
    values = [(svar, pvar.value) for pvar, svar in pairs]
    if not values or any(v is None for _, v in values):
        return
    sol = scip.createSol()
    for svar, value in values:
        scip.setSolVal(sol, svar, float(value))
    scip.addSol(sol, free=True)


def solve_scip(model: pyo.ConcreteModel, options: SolveOptions) -> BackendResult:
    """Back end for :func:`~.pyomo_run.solve`: build the SCIP model, solve, load values into ``model``."""
    if not scip_available():
        raise SolverUnavailable("solver 'scip' needs pyscipopt (pip install pyscipopt)", field="--solver")
    import time

    import pyscipopt

    start = time.perf_counter()
    scip = pyscipopt.Model()
    # SCIP writes its log to the process's stdout; under -v it goes to stderr (see the solve below)
    scip.hideOutput(not options.log)
    pairs: dict[int, tuple[pyo.Var, pyscipopt.Variable]] = {}

    def var(v: pyo.Var):
        key = id(v)
        if key not in pairs:
            lb, ub = v.bounds
            vtype = "B" if v.is_binary() else ("I" if v.is_integer() else "C")
            pairs[key] = (v, scip.addVar(name=v.name, vtype=vtype, lb=lb, ub=ub))
        return pairs[key][1]

    for con in model.component_data_objects(pyo.Constraint, active=True):
        repn = generate_standard_repn(con.body, quadratic=False)
        if not repn.is_linear():
            raise SolverUnavailable(f"the SCIP back end takes linear models; constraint {con.name} is nonlinear", field="--solver")
        const = float(repn.constant)
        lhs = None if con.lower is None else pyo.value(con.lower) - const
        rhs = None if con.upper is None else pyo.value(con.upper) - const
        expr = pyscipopt.quicksum(float(c) * var(v) for c, v in zip(repn.linear_coefs, repn.linear_vars))
        if not repn.linear_vars:
            expr = pyscipopt.Expr()
        scip.addCons(pyscipopt.scip.ExprCons(expr, lhs=lhs, rhs=rhs), name=con.name)
    obj = objective_of(model)
    repn = generate_standard_repn(obj.expr, quadratic=False)
    if not repn.is_linear():
        raise SolverUnavailable("the SCIP back end takes linear objectives", field="--solver")
    scip.setObjective(pyscipopt.quicksum(float(c) * var(v) for c, v in zip(repn.linear_coefs, repn.linear_vars))
                      + float(repn.constant), sense="minimize" if obj.sense == pyo.minimize else "maximize")
    for v in model.component_data_objects(pyo.Var, active=True):
        if not v.fixed:
            var(v)
    scip.setParam("limits/time", max(options.time_limit - (time.perf_counter() - start), 0.01))
    scip.setParam("limits/gap", options.gap)
    scip.setParam("limits/absgap", 1e-9)
    scip.setParam("randomization/randomseedshift", options.seed % 2**31)
    if not options.presolve:
        scip.setPresolve(pyscipopt.SCIP_PARAMSETTING.OFF)
    # SCIP would take SIGINT for itself: a Ctrl-C is the command's, which interrupts the solve (see _run)
    scip.setParam("misc/catchctrlc", False)
    _warm_start(scip, pairs.values())
    prep_s = time.perf_counter() - start
    if options.log:
        from pyomo.common.tee import capture_output

        with capture_output(sys.stderr, capture_fd=True):  # SCIP prints from C to fd 1
            _run(scip)
    else:
        _run(scip)
    status = scip.getStatus()
    has_solution = scip.getNSols() > 0 and status not in ("infeasible", "unbounded", "inforunbd")
    if has_solution:
        best = scip.getBestSol()
        assert best is not None  # getNSols() > 0
        for pvar, svar in pairs.values():
            pvar.set_value(scip.getSolVal(best, svar), skip_validation=True)
    termination = {
        "optimal": "optimal", "gaplimit": "optimal", "timelimit": "limit", "userinterrupt": "limit",
        "nodelimit": "limit", "sollimit": "limit", "memlimit": "limit",
        "infeasible": "infeasible", "unbounded": "unbounded", "inforunbd": "infeasible-or-unbounded",
    }.get(status, "error")
    # SCIP's infinity is a finite 1e20: without a proven bound getDualbound() returns -1e20 (min)
    bound = proven_bound(scip.getDualbound()) if has_solution else None
    message = "" if termination != "error" else f"SCIP ended with status {status}"
    return BackendResult(termination, has_solution, bound, scip_version() or "", message, prep_s=prep_s)


def _run(scip) -> None:
    """``scip.optimize()`` without holding the GIL, interrupted (keeping its incumbent, status
    ``userinterrupt``) when the user asks: a thread polls :func:`~mlsched_opt.clock.stop_requested`."""
    import threading

    from ..clock import stop_requested

    done = threading.Event()

    def poll() -> None:
        while not done.wait(0.05):
            if stop_requested():
                scip.interruptSolve()
                return

    watcher = threading.Thread(target=poll, name="scip-stop", daemon=True)
    watcher.start()
    try:
        scip.optimizeNogil()
    finally:
        done.set()
        watcher.join()
