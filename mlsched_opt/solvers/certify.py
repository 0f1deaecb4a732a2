"""Certified exact answers: an "optimal" or "infeasible" is printed only when an independent
route confirms it.

Solvers have bugs, and the ones we have met live in presolve: HiGHS 1.12-1.15 MIP presolve
returned a suboptimal point as optimal on small OASiS MILPs (presolve "reduces to empty"), and
CP-SAT 9.15 presolve proved a wrong optimum on a locality MILP and called another one
infeasible.  So a claim of the primary solver is confirmed by a *referee*, a different solver:

1. the referee solves the same model (SCIP for HiGHS, else CP-SAT; HiGHS for CP-SAT and
   SCIP), starting from the primary's point (a SCIP start, CP-SAT hints): it must still prove
   its own bound, and it still finds a better point when the primary's is not optimal;
2. both claim the same optimum (within the requested gap), or both claim infeasibility: the
   answer is certified;
3. otherwise every solver involved re-solves with presolve off, SCIP joins as a third opinion,
   and the claims are judged by the checker: a decision the checker rejects refutes its own
   claim, a checked decision better than a claimed optimum refutes that optimum, any checked
   decision refutes "infeasible".  At least two unrefuted claims that agree certify the answer
   (the report names the refuted ones); anything else is ``disputed``: the best checked
   decision is kept, and nothing is claimed about the optimum.

The primary is the solver that answered: HiGHS where CP-SAT handed it a model it cannot take
exactly (:mod:`.cpsat`).  A referee CP-SAT is strict: a model it cannot take exactly is refused
(not handed to HiGHS, which would be no second opinion), and the next referee, SCIP, is asked.

A referee that runs out of time without refuting anything, or no referee at all (none can take
the model, none is installed, no time is left), leaves the answer unconfirmed: ``optimal``
becomes ``feasible`` (``infeasible`` becomes ``time-limit-no-solution``) with a message saying
why.  A referee that breaks down (status ``error``) is no opinion: the next one is asked.  The
referees work within the same deadline as the primary solve.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyomo.environ as pyo

from ..errors import UserError
from ..report import SolveOptions, SolveReport
from ..tolerances import CERTIFY_REL_TOL, CHECK_TOL, OBJECTIVE_ABS_TOL
from .pyomo_run import solve

#: Below this many seconds left, no referee is started (its answer could not be trusted anyway).
MIN_REFEREE_S = 0.05
#: Solvers whose presolve :class:`SolveOptions.presolve` switches off.
PRESOLVE_SWITCH = ("highs", "cpsat", "scip")


@dataclass
class Claim:
    """What one solver run says, and what the checker makes of its decision."""

    label: str
    report: SolveReport
    decision: Any | None
    value: float | None = None   # the checker's objective of the decision, when it accepts it
    rejected: str = ""           # why the checker rejects the decision

    @property
    def says_optimal(self) -> bool:
        return self.report.status == "optimal"

    @property
    def says_infeasible(self) -> bool:
        return self.report.status == "infeasible"


Extract = Callable[[pyo.ConcreteModel], Any]
Evaluate = Callable[[Any], tuple[float | None, str]]


def _label(options: SolveOptions, report: SolveReport) -> str:
    name = f"{report.solver or options.solver} {report.solver_version}".strip()
    return name if options.presolve else f"{name} (presolve off)"


def agree(a: float, b: float, gap: float) -> bool:
    """Equal within the requested relative gap (at least :data:`CERTIFY_REL_TOL`, the precision of
    CP-SAT's float objectives), plus :data:`OBJECTIVE_ABS_TOL` for optima at 0."""
    return abs(a - b) <= max(gap, CERTIFY_REL_TOL) * max(abs(a), abs(b)) + OBJECTIVE_ABS_TOL


def better(a: float, b: float, sense: str, gap: float) -> bool:
    """``a`` strictly better than ``b`` beyond the tolerance."""
    if agree(a, b, gap):
        return False
    return a > b if sense == "max" else a < b


def referees(primary: str) -> list[str]:
    """Solvers that may confirm ``primary``'s claim, in order of preference."""
    from .scip import scip_available

    # SCIP first for HiGHS: a full MILP solver of its own lineage, and far quicker than CP-SAT on
    # the LP-heavy models (locality: 22 s against > 120 s); CP-SAT where SCIP is missing
    order = {"highs": ["scip", "cpsat"], "cpsat": ["highs", "scip"], "scip": ["highs", "cpsat"]}.get(primary, ["highs", "scip"])
    return [s for s in order if s != "scip" or scip_available()]


def certify(model: pyo.ConcreteModel, report: SolveReport, decision: Any, options: SolveOptions, deadline: float,
            extract: Extract, evaluate: Evaluate) -> tuple[SolveReport, Any]:
    """Confirm ``report``'s "optimal"/"infeasible" claim for ``model`` by an independent route.

    ``extract(model)`` reads a decision from the model's loaded values; ``evaluate(decision)``
    is the checker: ``(objective, "")`` for an accepted decision, ``(None, reason)`` otherwise.
    Returns the (possibly changed) report and decision.  Other statuses pass through.
    """
    if not options.certify or report.status not in ("optimal", "infeasible"):
        return report, decision
    primary = _claim(_label(options, report), report, decision, evaluate)
    claims = [primary]
    # the solver that answered: HiGHS where CP-SAT could not take the model (and handed it on)
    solver = report.solver or options.solver
    used: list[str] = [solver]
    referee, why_none = None, "no time was left for a referee"
    for name in referees(solver):
        claim, why = _try(model, dataclasses.replace(options, solver=name), deadline, extract, evaluate)
        if claim is None:
            why_none = why or why_none
            continue
        claims.append(claim)
        used.append(name)
        referee = claim
        if claim.report.status != "error":  # a referee that broke down is no opinion: ask the next
            break
    if referee is None and not primary.rejected:
        return _unconfirmed(report, primary, None, why_none), decision
    if referee is not None and not primary.rejected and _consistent(primary, referee, report.sense, options.gap):
        return _certified(report, decision, primary, [referee]), decision
    if referee is not None and not primary.rejected and not _refutes(referee, primary, report.sense, options.gap) \
            and not (referee.says_optimal or referee.says_infeasible):
        return _unconfirmed(report, primary, referee, ""), decision
    # a disagreement (or a decision the checker rejects): presolve-off re-solves and a third opinion;
    # only solvers whose presolve we can switch off re-solve (a re-run of the same solve is no opinion)
    for name in used:
        if name in PRESOLVE_SWITCH:
            claim, _ = _try(model, dataclasses.replace(options, solver=name, presolve=False), deadline, extract, evaluate)
            if claim is not None:
                claims.append(claim)
    for name in referees(solver):
        if name not in used:
            claim, _ = _try(model, dataclasses.replace(options, solver=name), deadline, extract, evaluate)
            if claim is not None:
                claims.append(claim)
    return _resolve(report, claims, options.gap)


def _try(model: pyo.ConcreteModel, options: SolveOptions, deadline: float, extract: Extract,
         evaluate: Evaluate) -> tuple[Claim | None, str]:
    """A referee's claim, or ``None`` and why not: no time left, or a solver that cannot take this
    model (CP-SAT and a continuous variable) or cannot run here.  A referee's failure never costs
    the primary's answer."""
    try:
        claim = _run(model, options, deadline, extract, evaluate)
    except UserError as exc:
        return None, f"{options.solver} cannot take this model ({exc.reason})"
    except Exception as exc:  # noqa: BLE001 - a broken referee install must not discard a good answer
        return None, f"{options.solver} failed ({type(exc).__name__}: {exc})"
    return claim, "" if claim is not None else "no time was left for a referee"


def _claim(label: str, report: SolveReport, decision: Any, evaluate: Evaluate) -> Claim:
    claim = Claim(label, report, decision)
    if decision is not None:
        claim.value, claim.rejected = evaluate(decision)
    elif report.has_solution:
        claim.rejected = "no decision"
    return claim


def _run(model: pyo.ConcreteModel, options: SolveOptions, deadline: float, extract: Extract,
         evaluate: Evaluate) -> Claim | None:
    from .cpsat import strict  # late: ortools only where a model is certified

    left = deadline - time.perf_counter()
    if left < MIN_REFEREE_S:
        return None
    options = dataclasses.replace(options, time_limit=left, certify=False)
    with strict():  # a referee CP-SAT never hands the model to HiGHS: that would be no second opinion
        report = solve(model, options)
    decision = extract(model) if report.has_solution else None
    return _claim(_label(options, report), report, decision, evaluate)


def _consistent(a: Claim, b: Claim, sense: str, gap: float) -> bool:
    if a.says_infeasible and b.says_infeasible:
        return True
    return (a.says_optimal and b.says_optimal and a.value is not None and b.value is not None
            and agree(a.value, b.value, gap))


def _refutes(witness: Claim, claim: Claim, sense: str, gap: float) -> bool:
    """Whether ``witness``'s checked decision refutes ``claim``."""
    if witness.value is None:
        return False
    if claim.says_infeasible:
        return True
    return claim.says_optimal and (claim.value is None or better(witness.value, claim.value, sense, gap))


def _certified(report: SolveReport, decision: Any, claim: Claim, confirmations: list[Claim], note: str = "") -> SolveReport:
    by = tuple(c.label for c in confirmations)
    message = "; ".join(filter(None, [report.message, note, f"certified: {claim.label} confirmed by {', '.join(by)}"]))
    return dataclasses.replace(report, message=message, certified_by=by)


def _unconfirmed(report: SolveReport, primary: Claim, referee: Claim | None, why_none: str) -> SolveReport:
    what = "infeasibility" if primary.says_infeasible else "optimality"
    why = why_none if referee is None else f"{referee.label} ended {referee.report.status} within the time limit"
    message = "; ".join(filter(None, [report.message, f"{primary.label} claimed {what}, not confirmed: {why}"]))
    if primary.says_infeasible:
        return dataclasses.replace(report, status="time-limit-no-solution", message=message)
    return dataclasses.replace(report, status="feasible", bound=None if referee is None else referee.report.bound, message=message)


def _describe(claim: Claim) -> str:
    rep = claim.report
    what = rep.status if rep.objective is None else f"{rep.status} {rep.objective:.10g}"
    if claim.rejected:
        what += f", decision rejected by the checker ({claim.rejected})"
    return f"{claim.label}: {what}"


def _resolve(report: SolveReport, claims: list[Claim], gap: float) -> tuple[SolveReport, Any]:
    sense = report.sense
    witnesses = [c for c in claims if c.value is not None]
    best = None
    for c in witnesses:
        assert c.value is not None
        if best is None or (best.value is not None and better(c.value, best.value, sense, gap)):
            best = c
    refuted = [c for c in claims if (c.says_optimal or c.says_infeasible)
               and (c.rejected or (best is not None and _refutes(best, c, sense, gap)))]
    standing = [c for c in claims if (c.says_optimal or c.says_infeasible) and c not in refuted]
    story = "; ".join(_describe(c) for c in claims)
    if len(standing) >= 2 and all(_consistent(standing[0], c, sense, gap) for c in standing[1:]):
        lead = standing[0]
        note = ("refuted: " + ", ".join(c.label for c in refuted)) if refuted else ""
        # the caller adds the time certification took to solve_s
        base = dataclasses.replace(lead.report, build_s=report.build_s, translate_s=report.translate_s,
                                   solve_s=report.solve_s, options=report.options)
        message = "; ".join(filter(None, [f"the solvers disagreed ({story})", note,
                                          f"certified: {lead.label} confirmed by {', '.join(c.label for c in standing[1:])}"]))
        return dataclasses.replace(base, message=message, certified_by=tuple(c.label for c in standing[1:])), lead.decision
    message = f"disputed: the solvers' claims could not be reconciled ({story})"
    if best is None:
        # no decision of any solver passes the checker: a formulation (not a solver) defect. The
        # primary's decision is kept so that the checker's verdict on it is shown, not hidden.
        return dataclasses.replace(report, status="disputed", bound=None, message=message), claims[0].decision
    return dataclasses.replace(report, status="disputed", objective=best.value, bound=None, message=message), best.decision


def model_checker(model: pyo.ConcreteModel, tol: float = CHECK_TOL) -> tuple[Extract, Evaluate]:
    """``extract``/``evaluate`` for a bare Pyomo model (no problem family): the decision is the
    variables' values, and the check is the model's own bounds, integrality and rows.

    Weaker than a family checker (it trusts the formulation), but enough to referee solvers on
    one model: a point that breaks no row and is better than a claimed optimum refutes it.
    """
    variables = [v for v in model.component_data_objects(pyo.Var, active=True) if not v.fixed]
    rows = list(model.component_data_objects(pyo.Constraint, active=True))
    objective = next(iter(model.component_data_objects(pyo.Objective, active=True)))

    def extract(m: pyo.ConcreteModel) -> list[float | None]:
        return [v.value for v in variables]

    def evaluate(values: list[float | None]) -> tuple[float | None, str]:
        for v, x in zip(variables, values):
            if x is None:
                return None, f"{v.name} has no value"
            lb, ub = v.bounds
            if (lb is not None and x < lb - tol) or (ub is not None and x > ub + tol):
                return None, f"{v.name} = {x:g} outside its bounds"
            if v.is_integer() and abs(x - round(x)) > tol:
                return None, f"{v.name} = {x:g} is not integral"
            v.set_value(x, skip_validation=True)
        for con in rows:
            body = pyo.value(con.body)
            scale = tol * max(1.0, abs(body))
            if (con.lower is not None and body < pyo.value(con.lower) - scale) or \
                    (con.upper is not None and body > pyo.value(con.upper) + scale):
                return None, f"row {con.name} is violated"
        return float(pyo.value(objective)), ""

    return extract, evaluate
