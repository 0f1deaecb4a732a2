"""The independent checker: :func:`check_for_family` judges a solution with the family passed in.

This package never imports :mod:`mlsched_opt.problems`: the caller hands it the family (anything
with the :class:`CheckedFamily` attributes), so the checker stays below the families it judges.
``mlsched_opt.problems.check_solution(instance, solution, options)`` looks the family up by the
solution's ``problem`` and calls :func:`check_for_family`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..io.instance import Instance
from ..io.solution import Solution
from .core import CheckResult, Usage, Violation, compare_objective, read_counts, run_check, unknown_jobs


class CheckedFamily(Protocol):
    """What the checker needs of a problem family (:class:`mlsched_opt.problems.Family` has it)."""

    @property
    def name(self) -> str: ...

    @property
    def check(self) -> Callable[[Instance, Any, Mapping[str, Any], CheckResult], None]: ...

    def resolve_options(self, instance: Instance, raw: Mapping[str, Any] | None = None,
                        source: str = "--set") -> dict[str, Any]: ...

    def problem_option_mismatches(self, stated: Mapping[str, Any], options: Mapping[str, Any]) -> list[str]: ...


def check_for_family(family: CheckedFamily, instance: Instance, solution: Solution,
                     options: Mapping[str, Any] | None = None) -> CheckResult:
    """Recompute feasibility and objective of ``solution.decision`` for ``instance`` under ``family``.

    The problem is the instance's, with its ``options`` overridden by ``options`` (the command
    line's ``--set``; raw or parsed values): never the options a solution records, which are a
    claim like any other.  A solution that records other problem-defining options breaks the
    ``problem-options`` rule.  The report's objective is the only other claim compared; status,
    bound and gap are the solver's word and are not verifiable from a decision.
    """
    result = CheckResult()
    if solution.instance_sha256 != instance.sha256:
        result.add("instance", "sha256", "the solution was made for a different instance (hash differs)")
        return result
    if solution.decision is None:
        if solution.report.has_solution:
            result.add("decision", "decision", f"status {solution.report.status} but no decision given")
        else:
            result.add("decision", "decision", f"no decision to check (status {solution.report.status})")
        return result
    parsed = family.resolve_options(instance, options)
    stated = solution.problem_options if isinstance(solution.problem_options, Mapping) else {}
    for mismatch in family.problem_option_mismatches(stated, parsed):
        result.add("problem-options", "problem_options", f"the solution was made for {mismatch}")
    run_check(family.check, instance, solution.decision, parsed, result, family.name)
    compare_objective(result, solution.report.objective)
    return result


__all__ = ["CheckResult", "CheckedFamily", "Usage", "Violation", "check_for_family", "compare_objective", "read_counts",
           "unknown_jobs"]
