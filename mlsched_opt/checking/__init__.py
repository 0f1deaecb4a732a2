"""The independent checker: ``check_solution(instance, solution)``."""

from __future__ import annotations

from ..io.instance import Instance
from ..io.solution import Solution
from .core import CheckResult, Usage, Violation, compare_objective, read_counts, unknown_jobs


def check_solution(instance: Instance, solution: Solution) -> CheckResult:
    """Recompute feasibility and objective of ``solution.decision`` for ``instance``.

    The report's objective is the only claim compared; status, bound and gap are the
    solver's word and are not verifiable from a decision.
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
    options = family.parse_options(solution.problem_options, source="problem_options")
    family.check(instance, solution.decision, options, result)
    compare_objective(result, solution.report.objective)
    return result


__all__ = ["CheckResult", "Usage", "Violation", "check_solution", "compare_objective", "read_counts", "unknown_jobs"]
