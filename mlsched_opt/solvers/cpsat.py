"""CP-SAT as a back end for linear integer Pyomo models.

Every formulation is written once, in Pyomo; this module translates an all-integer linear
model into a CP-SAT model so that the same formulation can be proved with a second,
independent solver.  CP-SAT needs integer coefficients: each constraint row is scaled by
the smallest power of ten (up to 10^6) that makes its coefficients integral, and the
right-hand side is then rounded inwards, which is exact because the row's left-hand side
takes integer values.  The objective may keep fractional coefficients (CP-SAT scales it
internally); when a power of ten makes it integral we use the integral form, for which
CP-SAT's optimality proof is exact.

Problems whose natural form is combinatorial can also build a ``CpModel`` directly and use
:func:`run_cpsat`, which reports the same way.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass

import pyomo.environ as pyo
from ortools.sat.python import cp_model
from pyomo.repn import generate_standard_repn

from ..errors import UserError
from ..report import SolveOptions
from .pyomo_run import BackendResult, objective_of, start_of

_MAX_POWER = 6
_TOL = 1e-9
#: The largest row activity (sum of ``|coefficient|`` x largest ``|value|``) we hand to CP-SAT: exact in
#: a double, so that CP-SAT's presolve arithmetic cannot overflow or round (rows scaled to about
#: 1.5e10 coefficients are where its presolve proved a wrong optimum).
SAFE_ACTIVITY = 2.0**53


class NotTranslatable(UserError):
    """The model has something CP-SAT cannot take (a continuous variable, an unbounded one, a nonlinear term)."""


def _integral_scale(coefs: list[float]) -> int | None:
    """The smallest power of ten (up to 10^6) that makes every coefficient an integer, none of the
    non-zero ones rounded to 0 (a vanishing term would be silently dropped)."""
    for power in range(_MAX_POWER + 1):
        scale = 10**power
        if all(abs(c * scale - round(c * scale)) <= _TOL * max(1.0, abs(c * scale)) and (c == 0 or round(c * scale) != 0)
               for c in coefs):
            return scale
    return None


@dataclass
class Translation:
    model: cp_model.CpModel
    pairs: list[tuple[pyo.Var, cp_model.IntVar]]
    objective_scale: float
    objective_offset: float
    #: whether the objective went to CP-SAT with integer weights (its proof and bound are then
    #: exact); otherwise CP-SAT scales the float objective itself, to about 1e-6
    integral_objective: bool = True


def translate(model: pyo.ConcreteModel) -> Translation:
    """Build the CP-SAT model of a linear, all-integer Pyomo model."""
    cp = cp_model.CpModel()
    cp_vars: dict[int, tuple[pyo.Var, cp_model.IntVar]] = {}

    def var(v: pyo.Var) -> cp_model.IntVar:
        key = id(v)
        if key not in cp_vars:
            if not v.is_integer():
                raise NotTranslatable(f"CP-SAT needs integer variables; {v.name} is continuous (use --solver highs)", field="--solver")
            lb, ub = v.bounds
            if lb is None or ub is None:
                raise NotTranslatable(f"CP-SAT needs bounded variables; {v.name} has bounds ({lb}, {ub})", field="--solver")
            cp_vars[key] = (v, cp.new_int_var(math.ceil(lb - _TOL), math.floor(ub + _TOL), v.name))
        return cp_vars[key][1]

    for con in model.component_data_objects(pyo.Constraint, active=True):
        repn = generate_standard_repn(con.body, quadratic=False)
        if not repn.is_linear():
            raise NotTranslatable(f"CP-SAT back end takes linear models; constraint {con.name} is nonlinear", field="--solver")
        coefs = [float(c) for c in repn.linear_coefs]
        if not any(coefs):
            coefs = []  # every coefficient 0: a constant row
        const = float(repn.constant)
        lower = None if con.lower is None else pyo.value(con.lower) - const
        upper = None if con.upper is None else pyo.value(con.upper) - const
        if not coefs:
            if (lower is not None and lower > _TOL) or (upper is not None and upper < -_TOL):
                cp.add_bool_or([])  # a constant row that cannot hold: the model is infeasible
            continue
        scale = _integral_scale(coefs)
        if scale is None:
            raise NotTranslatable(f"constraint {con.name} has coefficients that are not decimals with at most {_MAX_POWER} digits",
                                  field="--solver")
        int_coefs = [round(c * scale) for c in coefs]
        # divide by the coefficients' gcd: same integer solutions, smaller numbers for CP-SAT's presolve
        divisor = math.gcd(*int_coefs)
        int_coefs = [c // divisor for c in int_coefs]
        cp_vars_row = [var(v) for v in repn.linear_vars]
        activity = sum(abs(c) * max(abs(x.proto.domain[0]), abs(x.proto.domain[-1])) for c, x in zip(int_coefs, cp_vars_row))
        if activity > SAFE_ACTIVITY:
            raise NotTranslatable(f"constraint {con.name} needs integer coefficients whose activity reaches {activity:.3g}, "
                                  f"beyond CP-SAT's safe range ({SAFE_ACTIVITY:.3g}); use --solver highs or scip", field="--solver")
        lo = -cp_model.INT_MAX if lower is None else math.ceil(lower * scale / divisor - _TOL * max(1.0, abs(lower * scale / divisor)))
        hi = cp_model.INT_MAX if upper is None else math.floor(upper * scale / divisor + _TOL * max(1.0, abs(upper * scale / divisor)))
        lo, hi = max(lo, -cp_model.INT_MAX), min(hi, cp_model.INT_MAX)
        expr = cp_model.LinearExpr.weighted_sum(cp_vars_row, int_coefs)
        cp.add_linear_constraint(expr, lo, hi)

    obj = objective_of(model)
    repn = generate_standard_repn(obj.expr, quadratic=False)
    if not repn.is_linear():
        raise NotTranslatable("CP-SAT back end takes linear objectives", field="--solver")
    coefs = [float(c) for c in repn.linear_coefs]
    scale = _integral_scale(coefs) if coefs else 1
    weights = [round(c * scale) for c in coefs] if scale is not None else coefs
    expr = cp_model.LinearExpr.weighted_sum([var(v) for v in repn.linear_vars], weights)
    if obj.sense == pyo.minimize:
        cp.minimize(expr)
    else:
        cp.maximize(expr)
    # variables that appear nowhere still need a value in the Pyomo model
    for v in model.component_data_objects(pyo.Var, active=True):
        if not v.fixed:
            var(v)
    # values already in the model (a referee runs after the primary solver) become hints: CP-SAT
    # still proves its own bound and searches on, so a wrong optimum is refuted all the same
    loaded = [(cv, pv.value) for pv, cv in cp_vars.values()]
    if loaded and all(value is not None for _, value in loaded):
        for cv, value in loaded:
            cp.add_hint(cv, round(value))
    return Translation(cp, list(cp_vars.values()), float(scale or 1), float(repn.constant), scale is not None)


def run_cpsat(cp: cp_model.CpModel, options: SolveOptions) -> tuple[cp_model.CpSolver, BackendResult]:
    """Solve a CP-SAT model with our options; the caller reads values from the returned solver."""
    import ortools

    solver = cp_model.CpSolver()
    params = solver.parameters
    params.max_time_in_seconds = options.time_limit
    params.num_workers = options.threads
    params.random_seed = options.seed
    params.relative_gap_limit = options.gap
    params.absolute_gap_limit = 1e-9
    if not options.presolve:
        params.cp_model_presolve = False
    if options.log:  # to stderr through the callback: stdout is the answer's (--json)
        params.log_search_progress = True
        params.log_to_stdout = False
        solver.log_callback = lambda line: print(line, file=sys.stderr)
    status = solver.solve(cp)
    has_solution = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    termination = {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "limit",
        cp_model.INFEASIBLE: "infeasible",
        cp_model.UNKNOWN: "limit",
    }.get(status, "error")
    message = ""
    if status == cp_model.MODEL_INVALID:
        message = f"CP-SAT: invalid model: {cp.validate()}"
    elif status == cp_model.UNKNOWN and solver.wall_time < 0.9 * options.time_limit:
        termination, message = "error", "CP-SAT stopped without an answer before the time limit"
    bound = solver.best_objective_bound if cp.has_objective() and has_solution else None
    if bound is not None and not math.isfinite(bound):
        bound = None
    return solver, BackendResult(termination, has_solution, bound, ortools.__version__, message)  # type: ignore[attr-defined]  # set at run time; ortools' typed package does not declare it


def solve_cpsat(model: pyo.ConcreteModel, options: SolveOptions) -> BackendResult:
    """Back end for :func:`~.pyomo_run.solve`: translate, solve, load values into ``model``."""
    start = time.perf_counter()
    tr = translate(model)
    start_values = {id(v): value for v, value in start_of(model)}
    hinted = 0
    for pvar, cvar in tr.pairs:
        if id(pvar) in start_values:  # a heuristic answer as CP-SAT hints (a partial one too)
            tr.model.add_hint(cvar, round(start_values[id(pvar)]))
            hinted += 1
    prep_s = time.perf_counter() - start
    solver, outcome = run_cpsat(tr.model, options)
    outcome.prep_s = prep_s
    if hinted:
        outcome.message = "; ".join(filter(None, [outcome.message, f"start: {hinted} values offered as hints from a heuristic answer"]))
    if outcome.has_solution:
        for pvar, cvar in tr.pairs:
            pvar.set_value(solver.value(cvar), skip_validation=True)
    if not tr.integral_objective:
        # CP-SAT's own scaling of a float objective makes its reported bound unreliable (seen:
        # 46.6 for an optimum of 374.0); its OPTIMAL is a proof at its objective precision
        # (about 1e-6), which certification then checks against a second solver
        outcome.bound = None
        if outcome.termination == "optimal":
            outcome.message = "; ".join(filter(None,
                                               [outcome.message, "CP-SAT proved optimality at its float-objective precision (about 1e-6)"]))
    elif outcome.bound is not None:
        outcome.bound = outcome.bound / tr.objective_scale + tr.objective_offset
    return outcome
