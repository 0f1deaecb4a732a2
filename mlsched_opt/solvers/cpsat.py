"""CP-SAT as a back end for linear integer Pyomo models.

Every formulation is written once, in Pyomo; this module translates an all-integer linear
model into a CP-SAT model so that the same formulation can be proved with a second,
independent solver.  CP-SAT needs integer coefficients: each row is scaled exactly
(:func:`integer_row`: its coefficients read as the decimals they print as, multiplied by their
least common denominator, the bounds rounded inwards, which keeps every integer point because
the left side is then an integer).  The objective is scaled the same way when that stays within
CP-SAT's safe range (its optimality proof is then exact), else by a power of ten up to float
noise, else CP-SAT scales the float objective itself.

CP-SAT takes every model HiGHS takes: where a model has no exact CP-SAT form (a continuous
variable, a row too fine for CP-SAT's integer range), :func:`solve_cpsat` hands it to HiGHS and
the report names HiGHS as the solver and says why.  As a certification referee CP-SAT is
:func:`strict` instead (a HiGHS answer is no second opinion on HiGHS): it raises
:class:`NotTranslatable` and the referee is another solver.

Problems whose natural form is combinatorial can also build a ``CpModel`` directly and use
:func:`run_cpsat`, which reports the same way.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise

import pyomo.environ as pyo
from ortools.sat.python import cp_model
from pyomo.repn import generate_standard_repn

from ..errors import UserError
from ..report import SolveOptions
from .pyomo_run import BackendResult, objective_of, solve_highs, start_of

_TOL = 1e-9
#: The finest power of ten an objective is scaled by when its exact decimals are too fine (:func:`_objective_weights`).
_MAX_OBJECTIVE_POWER = 6
#: The largest row activity (sum of ``|coefficient|`` x largest ``|value|``) we hand to CP-SAT: exact in
#: a double, so that CP-SAT's presolve arithmetic cannot overflow or round (rows scaled to about
#: 1.5e10 coefficients are where its presolve proved a wrong optimum).
SAFE_ACTIVITY = 2**53
#: Set by :func:`strict` (certification's referee runs).
_STRICT: ContextVar[bool] = ContextVar("cpsat_strict", default=False)
#: The most values a variable may take for its coefficient to be folded into the row's integer
#: threshold (:func:`_fold_one`): a binary, or a small count.
_FOLD_VALUES = 64


class NotTranslatable(UserError):
    """The model has something CP-SAT cannot take exactly (a continuous or unbounded variable, a
    nonlinear term, a row whose exact integer form is beyond CP-SAT's safe range)."""


def decimal(x: float) -> Fraction:
    """The decimal ``x`` prints as (Python's shortest repr that reads back as the same double).

    Instances are written in decimals (``memory_gb = 128.84901888``): the double is the nearest one
    to that decimal, and every solver and the checker compare doubles, which agree with the
    decimals up to one rounding.  Reading the coefficient as its decimal is what makes an exact
    integer row possible at all (the double's own binary fraction has a denominator near 2^50)."""
    return Fraction(repr(float(x)))


def _span(lo: int, hi: int) -> int:
    """The largest absolute value of a variable in ``[lo, hi]``."""
    return max(abs(lo), abs(hi))


def _activity(coefs: Sequence[int], spans: Sequence[int]) -> int:
    return sum(abs(c) * s for c, s in zip(coefs, spans))


def _lcm_denominator(values: Sequence[Fraction | int]) -> int:
    return math.lcm(*(v.denominator for v in values)) if values else 1


def _bounds_times(scale: int, lower: Fraction | None, upper: Fraction | None) -> tuple[int | None, int | None]:
    """The integer bounds of ``scale x row``: rounded inwards, exact because the scaled left side is an integer."""
    return (None if lower is None else math.ceil(lower * scale), None if upper is None else math.floor(upper * scale))


@dataclass(frozen=True)
class IntegerRow:
    """``lo <= sum coefs[i] x[i] <= hi`` in integers, the same integer points as the row it came from."""

    coefs: list[int]
    lo: int | None
    hi: int | None


def integer_row(coefs: Sequence[Fraction | int], domains: Sequence[tuple[int, int]], lower: Fraction | None,
                upper: Fraction | None) -> IntegerRow | None:
    """``lower <= sum coefs[i] x[i] <= upper`` over integers ``x[i]`` in ``domains`` as an integer row
    with the same integer solutions, or ``None`` where its exact form exceeds :data:`SAFE_ACTIVITY`.

    The row is multiplied by the least common denominator of its coefficients (every coefficient an
    integer, none rounded) and divided by their gcd; the bounds are then rounded inwards, which
    keeps every integer point because the left side is an integer.  When that scale is too large,
    one variable with few values (a server's ``used`` binary times a capacity with the checker's
    slack, ``cap (1 + 1e-6)``) may be folded into the threshold instead (:func:`_fold_one`).
    Our design (issue 31), replacing a scale by powers of ten up to 10^6."""
    spans = [_span(*d) for d in domains]
    row = _scaled(coefs, spans, lower, upper)
    if row is not None:
        return row
    return _fold_one(coefs, domains, spans, lower, upper)


def _scaled(coefs: Sequence[Fraction | int], spans: Sequence[int], lower: Fraction | None, upper: Fraction | None) -> IntegerRow | None:
    scale = _lcm_denominator(coefs)
    ints = [int(c * scale) for c in coefs]
    divisor = math.gcd(*ints) or 1
    ints = [c // divisor for c in ints]
    if _activity(ints, spans) > SAFE_ACTIVITY:
        return None
    lo, hi = _bounds_times(1, None if lower is None else lower * scale / divisor, None if upper is None else upper * scale / divisor)
    return IntegerRow(ints, lo, hi)


def _fold_one(coefs: Sequence[Fraction | int], domains: Sequence[tuple[int, int]], spans: Sequence[int], lower: Fraction | None,
              upper: Fraction | None) -> IntegerRow | None:
    """Fold the term with the largest denominator into the threshold: with the rest scaled by its
    own denominator ``D``, for each value ``y`` of that variable the rest must lie within
    ``[ceil(D (lower - c y)), floor(D (upper - c y))]``; when both ends are affine in ``y`` with one
    integer slope ``p`` over the variable's few values, ``D rest + p y`` within the ends at ``y``'s
    lowest value is the same set of integer points (for a binary, always)."""
    k = max(range(len(coefs)), key=lambda i: coefs[i].denominator)
    y_lo, y_hi = domains[k]
    if y_hi - y_lo + 1 > _FOLD_VALUES or y_hi == y_lo:
        return None
    rest = [c for i, c in enumerate(coefs) if i != k]
    scale = _lcm_denominator(rest)
    ends = [_bounds_times(scale, None if lower is None else lower - coefs[k] * y, None if upper is None else upper - coefs[k] * y)
            for y in range(y_lo, y_hi + 1)]
    slopes: set[int] = set()
    for side in zip(*ends):
        values = [v for v in side if v is not None]
        if len(values) == len(side):  # the row has this bound
            slopes |= {a - b for a, b in pairwise(values)}
    if len(slopes) != 1:
        return None  # not affine in y (or the bounds disagree): no single integer coefficient for y
    slope = slopes.pop()
    ints = [int(c * scale) for c in rest]
    ints.insert(k, slope)
    divisor = math.gcd(*ints) or 1
    ints = [c // divisor for c in ints]
    if _activity(ints, spans) > SAFE_ACTIVITY:
        return None
    shift = slope * y_lo
    lo = None if ends[0][0] is None else -(-(ends[0][0] + shift) // divisor)
    hi = None if ends[0][1] is None else (ends[0][1] + shift) // divisor
    return IntegerRow(ints, lo, hi)


def _objective_weights(coefs: list[float], spans: Sequence[int]) -> tuple[int, list[int]] | None:
    """``(scale, integer weights)`` of the objective: exact (:func:`decimal`, least common denominator)
    when within the safe range, else the smallest power of ten up to 10^6 that makes every weight
    integral up to float noise (relative 1e-9: an objective off by that much, far below
    :data:`~.tolerances.CERTIFY_REL_TOL`; feasibility is untouched), else ``None``: CP-SAT gets the
    float weights and scales them itself (to about 1e-6)."""
    exact = [decimal(c) for c in coefs]
    scale = _lcm_denominator(exact)
    weights = [int(c * scale) for c in exact]
    if _activity(weights, spans) <= SAFE_ACTIVITY:
        return scale, weights
    for power in range(_MAX_OBJECTIVE_POWER + 1):
        scale = 10**power
        weights = [round(c * scale) for c in coefs]
        if all(abs(c * scale - w) <= _TOL * max(1.0, abs(c * scale)) and (c == 0 or w != 0) for c, w in zip(coefs, weights)) \
                and _activity(weights, spans) <= SAFE_ACTIVITY:
            return scale, weights
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
    domains: dict[int, tuple[int, int]] = {}

    def var(v: pyo.Var) -> cp_model.IntVar:
        key = id(v)
        if key not in cp_vars:
            if not v.is_integer():
                raise NotTranslatable(f"CP-SAT needs integer variables; {v.name} is continuous")
            lb, ub = v.bounds
            if lb is None or ub is None:
                raise NotTranslatable(f"CP-SAT needs bounded variables; {v.name} has bounds ({lb}, {ub})")
            domains[key] = (math.ceil(lb - _TOL), math.floor(ub + _TOL))
            cp_vars[key] = (v, cp.new_int_var(*domains[key], v.name))
        return cp_vars[key][1]

    for con in model.component_data_objects(pyo.Constraint, active=True):
        repn = generate_standard_repn(con.body, quadratic=False)
        if not repn.is_linear():
            raise NotTranslatable(f"CP-SAT takes linear models; constraint {con.name} is nonlinear")
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
        cp_vars_row = [var(v) for v in repn.linear_vars]
        exact_const = decimal(const)
        # an integral coefficient stays a Python int (its denominator is 1): most rows, and no Fraction to build
        row = integer_row([int(c) if c.is_integer() else decimal(c) for c in coefs], [domains[id(v)] for v in repn.linear_vars],
                          None if con.lower is None else decimal(pyo.value(con.lower)) - exact_const,
                          None if con.upper is None else decimal(pyo.value(con.upper)) - exact_const)
        if row is None:
            raise NotTranslatable(f"constraint {con.name} has no exact integer form within CP-SAT's safe range "
                                  f"(activity {SAFE_ACTIVITY:.3g}): its coefficients' decimals are too fine for their size")
        int_coefs = row.coefs
        lo = -cp_model.INT_MAX if row.lo is None else max(row.lo, -cp_model.INT_MAX)
        hi = cp_model.INT_MAX if row.hi is None else min(row.hi, cp_model.INT_MAX)
        expr = cp_model.LinearExpr.weighted_sum(cp_vars_row, int_coefs)
        cp.add_linear_constraint(expr, lo, hi)

    obj = objective_of(model)
    repn = generate_standard_repn(obj.expr, quadratic=False)
    if not repn.is_linear():
        raise NotTranslatable("CP-SAT takes linear objectives; the objective is nonlinear")
    coefs = [float(c) for c in repn.linear_coefs]
    obj_vars = [var(v) for v in repn.linear_vars]
    scaled = _objective_weights(coefs, [_span(*domains[id(v)]) for v in repn.linear_vars])
    integral = scaled is not None
    scale, weights = scaled if scaled is not None else (1, coefs)
    expr = cp_model.LinearExpr.weighted_sum(obj_vars, weights)
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
    return Translation(cp, list(cp_vars.values()), float(scale), float(repn.constant), integral)


class _Progress(cp_model.CpSolverSolutionCallback):
    """Each improving CP-SAT solution reported as incumbent, bound and gap (the progress line), in the
    Pyomo model's units (``value / scale + offset``)."""

    def __init__(self, scale: float, offset: float) -> None:
        super().__init__()
        self.scale, self.offset = scale, offset

    def on_solution_callback(self) -> None:
        from ..clock import search_status

        bound = self.best_objective_bound
        search_status(self.objective_value / self.scale + self.offset,
                      bound / self.scale + self.offset if math.isfinite(bound) else None)


@contextmanager
def _stoppable(solver: cp_model.CpSolver) -> Iterator[None]:
    """Stop ``solver``'s search when the user asks (the first Ctrl-C): CP-SAT keeps its incumbent, as at
    its own time limit.  A thread polls :func:`~mlsched_opt.clock.stop_requested`, since CP-SAT calls no
    callback of ours between solutions."""
    import threading

    from ..clock import stop_requested

    done = threading.Event()

    def poll() -> None:
        while not done.wait(0.05):
            if stop_requested():
                solver.stop_search()
                return

    watcher = threading.Thread(target=poll, name="cpsat-stop", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def run_cpsat(cp: cp_model.CpModel, options: SolveOptions, scale: float = 1.0,
              offset: float = 0.0) -> tuple[cp_model.CpSolver, BackendResult]:
    """Solve a CP-SAT model with our options; the caller reads values from the returned solver.  The
    search reports its progress (``scale``/``offset`` turn its objective into the model's) and stops,
    keeping its incumbent, on a Ctrl-C."""
    import ortools

    solver = cp_model.CpSolver()
    params = solver.parameters
    params.max_time_in_seconds = options.time_limit
    params.num_workers = options.threads
    params.random_seed = options.seed
    params.relative_gap_limit = options.gap
    params.absolute_gap_limit = 1e-9
    # CP-SAT would take SIGINT for itself (and stop silently): a Ctrl-C is the command's to handle, which
    # stops the search through stop_search (see _stoppable) and says it was interrupted
    params.catch_sigint_signal = False
    if not options.presolve:
        params.cp_model_presolve = False
    if options.log:  # to stderr through the callback: stdout is the answer's (--json)
        params.log_search_progress = True
        params.log_to_stdout = False
        solver.log_callback = lambda line: print(line, file=sys.stderr)
    with _stoppable(solver):
        status = solver.solve(cp, _Progress(scale, offset) if cp.has_objective() else None)
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
    elif status == cp_model.UNKNOWN and solver.wall_time < 0.9 * options.time_limit and not _stopped():
        termination, message = "error", "CP-SAT stopped without an answer before the time limit"
    bound = solver.best_objective_bound if cp.has_objective() and has_solution else None
    if bound is not None and not math.isfinite(bound):
        bound = None
    return solver, BackendResult(termination, has_solution, bound, ortools.__version__, message)  # type: ignore[attr-defined]  # set at run time; ortools' typed package does not declare it


def _stopped() -> bool:
    from ..clock import stop_requested

    return stop_requested()


@contextmanager
def strict() -> Iterator[None]:
    """Within: a model CP-SAT cannot take raises :class:`NotTranslatable` instead of going to HiGHS."""
    token = _STRICT.set(True)
    try:
        yield
    finally:
        _STRICT.reset(token)


def solve_cpsat(model: pyo.ConcreteModel, options: SolveOptions) -> BackendResult:
    """Back end for :func:`~.pyomo_run.solve`: translate, solve, load values into ``model``; a model
    without an exact CP-SAT form goes to HiGHS (unless :func:`strict`), and the result says so."""
    start = time.perf_counter()
    try:
        tr = translate(model)
    except NotTranslatable as exc:
        if _STRICT.get():
            raise
        tried_s = time.perf_counter() - start
        outcome = solve_highs(model, options)
        outcome.solver, outcome.prep_s = "highs", outcome.prep_s + tried_s
        outcome.message = "; ".join(filter(None, [f"CP-SAT cannot take this model exactly ({exc.reason}): solved by HiGHS instead",
                                                  outcome.message]))
        return outcome
    start_values = {id(v): value for v, value in start_of(model)}
    hinted = 0
    for pvar, cvar in tr.pairs:
        if id(pvar) in start_values:  # a heuristic answer as CP-SAT hints (a partial one too)
            tr.model.add_hint(cvar, round(start_values[id(pvar)]))
            hinted += 1
    prep_s = time.perf_counter() - start
    solver, outcome = run_cpsat(tr.model, options, tr.objective_scale, tr.objective_offset)
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
