"""What a method returns (:class:`MethodResult`), and the rule that keeps a claim honest against its
own bound.  Below :mod:`.base` and :mod:`.anytime`, which both use them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..report import SolveReport
from ..tolerances import better

Decision = dict[str, Any]


@dataclass(frozen=True)
class MethodResult:
    report: SolveReport
    decision: Decision | None



def beyond_its_bound(report: SolveReport, gap: float) -> SolveReport:
    """``report`` unchanged, unless its (rescored) objective is better than the model's proven
    bound beyond the solvers' accuracy (:func:`~mlsched_opt.solvers.certify.better`, compare's rule):
    then the model does not define the problem the checker accepts on this instance (its optimum is
    beaten by a decision the checker accepts), so its bound proves nothing and its "optimal" is not
    ours to print."""
    if report.objective is None or report.bound is None or not better(report.objective, report.bound, report.sense, gap):
        return report
    note = (f"the checker's value {report.objective:g} beats the model's bound {report.bound:g}: the exact model and the "
            f"checker disagree on this instance, so nothing is proven (a defect; please report it)")
    status = "feasible" if report.status in ("optimal", "feasible") else report.status
    return dataclasses.replace(report, status=status, bound=None, message="; ".join(filter(None, [report.message, note])))
