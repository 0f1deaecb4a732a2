"""``--method exact`` as a MIP solver is: anytime at every size.

An exact method answers within its time limit with the best decision it has and the best bound it
proved, as HiGHS or Gurobi do when stopped, never with nothing where a heuristic answers in
milliseconds:

1. the family's quickest heuristic (``Family.quick``) answers first, in a small share of the time,
   and is :func:`~mlsched_opt.clock.offer`-ed, so a run cut off later (in a model build, in a
   solver's native code, by a Ctrl-C) still has it;
2. the exact search runs in the time left (the family's own: the full model when it fits, a
   large-neighbourhood search or a decomposition where it does not; see each family's ``exact``);
3. :func:`combine` keeps the better *checked* decision of the two and the exact search's proven
   bound (or the family's bound when the search proved none), and says which is which.

What is claimed stays certified: ``optimal`` and ``infeasible`` come only from the exact search
(confirmed by :mod:`mlsched_opt.solvers.certify`); an answer that reaches its proven bound is
``feasible`` with gap 0, since no second route confirmed the bound.  Our design.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..clock import MIN_PHASE_S, offer
from ..errors import ModelTooLarge
from ..report import SolveOptions, SolveReport
from ..tolerances import better
from .result import MethodResult, beyond_its_bound

if TYPE_CHECKING:
    from ..io.instance import Instance

#: a :class:`~mlsched_opt.problems.base.Family` (passed in: this module sits below base, which wraps
#: each family's exact method with :func:`anytime_exact`)
Family = Any

log = logging.getLogger(__name__)

#: share of an exact method's time limit its quick start may take (the heuristics are anytime and
#: return at their deadline, so the exact search keeps the rest)
QUICK_SHARE = 0.1
#: share of what is left after the quick start that the search leaves for the family's bound, in case it
#: proves none of its own (a search that returns early leaves the bound all the rest)
BOUND_SHARE = 0.1

Run = Callable[["Instance", Mapping[str, Any], SolveOptions], MethodResult]


def quick_answer(family: Family, instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions,
                 seconds: float) -> MethodResult | None:
    """The family's quickest heuristic's answer within ``seconds`` (offered as the run's incumbent),
    or ``None`` when the family names none or it found nothing."""
    if not family.quick:
        return None
    method = family.method(family.quick)
    try:
        result = method.run(instance, options, dataclasses.replace(solve_options, time_limit=max(seconds, MIN_PHASE_S)))
    except ModelTooLarge:
        return None
    if result.decision is None or result.report.objective is None:
        return None
    offer(result.report, result.decision)
    return result


def anytime_exact(family: Family, search: Run) -> Run:
    """``search`` (an exact method's run) made anytime: a quick start first, the better checked
    answer of the two, and a bound even when the full model is too large to build."""

    def run(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
        started = time.perf_counter()
        deadline = started + solve_options.time_limit
        quick = quick_answer(family, instance, options, solve_options, QUICK_SHARE * solve_options.time_limit)
        left = deadline - time.perf_counter()
        left = max(left * (1 - BOUND_SHARE) if family.bounded else left, MIN_PHASE_S)
        try:
            found: MethodResult | None = search(instance, options, dataclasses.replace(solve_options, time_limit=left))
            refused = ""
        except ModelTooLarge as exc:
            found, refused = None, exc.message()
        result = combine(family, instance, options, solve_options, quick, found, deadline, refused)
        # the method's wall is the quick start's, the search's and the bound's together, not the last phase's
        rep, elapsed = result.report, time.perf_counter() - started
        if rep.wall_s < elapsed:
            result = dataclasses.replace(result, report=dataclasses.replace(
                rep, solve_s=elapsed - rep.build_s - rep.translate_s))
        return result

    return run


def combine(family: Family, instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions,
            quick: MethodResult | None, found: MethodResult | None, deadline: float, refused: str = "") -> MethodResult:
    """The exact method's answer from its quick start and its search, judged by the checker.

    A proof of the search (``optimal``, ``infeasible``) stands unless the quick start's checked decision
    refutes it (it beats the claimed optimum, or exists at all against "infeasible"): then the answer
    is ``disputed``, the quick start's decision, with no bound and no certificate.  Otherwise the better
    checked decision of the two is the answer (``feasible``), with the search's proven bound, else the
    family's bound in the time left.  A search decision the checker rejects is no answer and its bound
    is not trusted (the model and the checker disagree: a defect, said in the message)."""
    sense, gap = family.sense(options), solve_options.gap
    quick_value = None if quick is None or quick.decision is None else family._evaluate(instance, options, quick.decision)[0]
    status = None if found is None else found.report.status
    if found is not None and status == "unbounded":
        return found
    if found is not None and status in ("optimal", "infeasible", "disputed"):
        claim = found.report.objective
        refuted = quick is not None and quick_value is not None and (
            status == "infeasible" or (status == "optimal" and claim is not None and better(quick_value, claim, sense, gap)))
        if not refuted:
            return found
        assert quick is not None and quick_value is not None
        what = "'infeasible'" if status == "infeasible" else f"the optimum {claim:.10g}"
        note = (f"disputed: the exact search claimed {what}, refuted by {family.quick}'s checked answer {quick_value:.10g} "
                f"(a solver or model defect; please report it)")
        report = _as(quick, found, quick_value, None, "disputed", "; ".join(filter(None, [found.report.message, note])), gap)
        return MethodResult(dataclasses.replace(report, certified_by=()), quick.decision)
    found_value, rejected = None, ""
    if found is not None and found.decision is not None:
        found_value, why = family._evaluate(instance, options, found.decision)
        if found_value is None:
            rejected = (f"the search's decision is rejected by the checker ({why}), so its bound is not trusted either "
                        f"(the exact model and the checker disagree: a defect; please report it)")
    bound = None
    if found is not None and not rejected and status in ("feasible", "time-limit-no-solution") and found.report.bound is not None:
        bound = found.report.bound
    notes = [refused and f"the full model is not built ({refused})", rejected]
    if bound is None and family.bounded:
        bound, note = _family_bound(family, instance, options, solve_options, deadline)
        notes.append(note)
    if quick is not None and quick_value is not None and (found_value is None or better(quick_value, found_value, sense, 0.0)):
        if found_value is not None:
            notes.append(f"the answer is {family.quick}'s (the quick start); the search's best was {found_value:g}")
        elif not rejected:
            notes.append(f"the answer is {family.quick}'s (the quick start): the search found none")
        base = found.report if found is not None else quick.report
        report = _as(quick, found, quick_value, bound, "feasible", "; ".join(filter(None, [base.message, *notes])), gap)
        return MethodResult(report, quick.decision)
    if found is not None and found_value is not None:
        message = "; ".join(filter(None, [found.report.message, *notes]))
        return MethodResult(_as(found, found, found_value, bound, "feasible", message, gap), found.decision)
    # nothing checked: no answer (an error when the search's own decision was rejected), with the bound proven
    base = found.report if found is not None else SolveReport(
        status="time-limit-no-solution", objective=None, bound=None, sense=sense, solver=solve_options.solver,
        solver_version="", options=solve_options.to_dict())
    if rejected:
        end = "error"
    else:
        end = base.status if base.status in ("time-limit-no-solution", "error", "failed") else "time-limit-no-solution"
    return MethodResult(dataclasses.replace(base, status=end, objective=None, bound=bound, certified_by=(),
                                            message="; ".join(filter(None, [base.message, *notes]))), None)


def _as(source: MethodResult, found: MethodResult | None, value: float, bound: float | None, status: str, message: str,
        gap: float):
    """``source``'s decision reported as the exact method's: the checker's value, the proven bound (none
    when the checked value beats it: then the bound is wrong), the search's solver and build times when
    there was a search, and the time of both runs."""
    rep = found.report if found is not None else source.report
    solve_s = rep.solve_s + (source.report.solve_s if found is not None and source is not found else 0.0)
    out = dataclasses.replace(rep, status=status, objective=value, bound=bound, message=message, solve_s=solve_s)
    return beyond_its_bound(out, gap)


def family_bound(family: Family, instance: Instance, options: Mapping[str, Any],
                 solve_options: SolveOptions) -> tuple[SolveReport | None, str]:
    """The family's proven bound (its ``relaxation``) within ``solve_options.time_limit``: its report when
    it proved one, else ``None``; and a note that says which (``bound by ...``) or why not.  A bound
    that fails, or whose model is too large to build, costs the answer nothing."""
    from ..errors import UserError

    label = family.bound_label.replace(" (bound)", "")
    try:
        rep = family.lp_bound(instance, options, solve_options)
    except UserError as exc:
        return None, f"no bound: {exc.message()}"
    except Exception as exc:
        log.debug("the bound failed", exc_info=True)
        return None, f"no bound: the {label} failed ({type(exc).__name__}: {exc})"
    if rep.status in ("optimal", "feasible") and rep.bound is not None:
        return rep, f"bound {rep.bound:.6g} by the {label} ({rep.solver}, {rep.wall_s:.2f} s)"
    return None, f"no bound: the {label} ended {rep.status} in {rep.wall_s:.2f} s"


def _family_bound(family: Family, instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions,
                  deadline: float) -> tuple[float | None, str]:
    """:func:`family_bound` in the time left before ``deadline``."""
    left = deadline - time.perf_counter()
    if left <= MIN_PHASE_S:
        return None, "no time was left for a bound"
    rep, note = family_bound(family, instance, options, dataclasses.replace(solve_options, time_limit=left))
    return (None if rep is None else rep.bound), note
