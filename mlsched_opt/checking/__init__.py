"""The independent checker: ``check_solution(instance, solution)``."""

from __future__ import annotations

from typing import Any, Mapping

from ..io.instance import Instance
from ..io.solution import Solution
from .core import CheckResult, Usage, Violation, compare_objective, read_counts, run_check, unknown_jobs


def check_solution(instance: Instance, solution: Solution, options: Mapping[str, Any] | None = None) -> CheckResult:
    """Recompute feasibility and objective of ``solution.decision`` for ``instance``.

    The problem is the instance's, with its ``options`` overridden by ``options`` (the command
    line's ``--set``; raw or parsed values): never the options a solution records, which are a
    claim like any other.  A solution that records other problem-defining options breaks the
    ``problem-options`` rule.  The report's objective is the only other claim compared; status,
    bound and gap are the solver's word and are not verifiable from a decision.
    """
    from ..problems import get_family

    result = CheckResult()
    if solution.instance_sha256 != instance.sha256:
        result.add("instance", "sha256", "the solution was made for a different instance (hash differs)")
        return result
    family = get_family(solution.problem)
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


__all__ = ["CheckResult", "Usage", "Violation", "check_solution", "compare_objective", "read_counts", "unknown_jobs"]
