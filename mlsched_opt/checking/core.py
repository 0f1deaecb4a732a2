"""Checker core: recompute feasibility and objective from a decision, trusting no solver.

Problem families write their ``check`` with these pieces and nothing from their own
formulations or algorithms, so a bug in a model cannot hide in its own checker.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..io.instance import Instance, Job
from ..io.schema import MAX_NUMBER
from ..tolerances import CHECK_TOL, core_capacity_limit

#: A task count beyond this is no count (and would overflow float arithmetic): the one numeric
#: bound of the input files.
MAX_COUNT = MAX_NUMBER


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule[where]: detail``, e.g. ``capacity[p2/0, gpu]: uses 9 > 8``."""

    rule: str
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}[{self.where}]: {self.detail}"


@dataclass
class CheckResult:
    """Violations found and the objective recomputed from the decision."""

    violations: list[Violation] = field(default_factory=list)
    objective: float | None = None
    claimed: float | None = None

    @property
    def feasible(self) -> bool:
        return not self.violations

    def add(self, rule: str, where: str, detail: str) -> None:
        self.violations.append(Violation(rule, where, detail))

    def to_dict(self) -> dict[str, Any]:
        return {
            "feasible": self.feasible,
            "objective": self.objective,
            "claimed_objective": self.claimed,
            "violations": [str(v) for v in self.violations],
        }


def read_counts(result: CheckResult, instance: Instance, job: Job, task: str,
                counts: Mapping[str, Any] | None, where: str) -> dict[str, int]:
    """Validate ``{server: count}`` for one task type of one job; keep the entries that make sense.

    Reports unknown servers, non-integer or negative counts, and servers the job's task may
    not use (role, GPU model).
    """
    out: dict[str, int] = {}
    if counts is not None and not isinstance(counts, Mapping):
        result.add("domain", where, f"expected an object of server -> count, got {type(counts).__name__}")
        return out
    for name, count in (counts or {}).items():
        if not isinstance(name, str):
            result.add("domain", f"{where}.{name!r}", "a server name must be a string")
            continue
        if isinstance(count, int) and not isinstance(count, bool) and count > MAX_COUNT:
            result.add("domain", f"{where}.{name}", f"count {count} is beyond any cluster (> 2**53)")
            continue
        server = instance.server(name)
        if server is None:
            result.add("unknown-server", f"{where}.{name}", "no such server in the instance")
            continue
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            result.add("domain", f"{where}.{name}", f"count must be a non-negative integer, got {count!r}")
            continue
        if count and not job.may_run_on(server, task):
            why = (f"role {server.role!r}" if not server.hosts(task)
                   else f"GPU model {server.gpu_model!r} not in {list(job.gpu_models or [])}")
            result.add("eligibility", f"{where}.{name}", f"{task} of job {job.id} may not run here ({why})")
            continue
        if count:
            out[name] = count
    return out


class Usage:
    """Resource use per server (one time slot's worth), accumulated task by task."""

    def __init__(self, instance: Instance, resources: list[str]):
        self.instance = instance
        self.resources = resources
        self.amount = np.zeros((len(instance.servers), len(resources)))

    def add(self, job: Job, task: str, counts: Mapping[str, int]) -> None:
        demand = np.array([job.demand(task).get(r, 0.0) for r in self.resources])
        for name, count in counts.items():
            server = self.instance.server(name)
            assert server is not None, name  # the counts were read against this instance's servers
            self.amount[server.index] += count * demand

    def check(self, result: CheckResult, label: str = "") -> None:
        """Add a ``capacity`` violation for every (server, resource) over its capacity."""
        cap = self.instance.capacity_matrix(self.resources)
        over = self.amount > core_capacity_limit(cap)
        for s, r in zip(*np.nonzero(over)):
            server = self.instance.servers[s].name
            where = f"{label}{server}, {self.resources[r]}"
            result.add("capacity", where, f"uses {self.amount[s, r]:g} > capacity {cap[s, r]:g}")


def unknown_jobs(result: CheckResult, instance: Instance, ids: list[str] | Mapping[str, Any], where: str) -> None:
    if not isinstance(ids, (list, Mapping)):
        result.add("domain", where, f"expected job ids, got {type(ids).__name__}")
        return
    for job_id in ids:
        if not isinstance(job_id, str) or instance.job(job_id) is None:
            result.add("unknown-job", f"{where}.{job_id}", "no such job in the instance")


def decision_part(result: CheckResult, decision: Any, key: str, family: str) -> Mapping[str, Any] | None:
    """The ``key`` part of a decision (``schedule`` for slotted families, ``placement`` for static
    ones) as a mapping: ``None`` (rule ``decision``) when the decision itself is not a mapping,
    ``{}`` (rule ``domain``) when the part is absent or not a mapping.  A non-empty part of the
    other kind breaks rule ``decision``."""
    if not isinstance(decision, Mapping):
        result.add("decision", "decision", f"must be a mapping, got {type(decision).__name__}")
        return None
    part = decision.get(key)
    if part is None:
        part = {}
    if not isinstance(part, Mapping):
        result.add("domain", key, f"must be a mapping keyed by job id, got {type(part).__name__}")
        part = {}
    other, kind = ("placement", "slotted") if key == "schedule" else ("schedule", "static")
    if decision.get(other):
        result.add("decision", other, f"{family} decisions are {kind}; use {key}")
    return part


#: What a family checker may raise on a value no rule of it foresaw.
CHECKER_FAILURES = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError, ZeroDivisionError,
                    RecursionError)


def run_check(check: Any, instance: Instance, decision: Any, options: Mapping[str, Any], result: CheckResult,
              family: str) -> None:
    """Run a family's ``check``; a value none of its rules foresaw still gets a verdict (rule
    ``malformed``), not a traceback."""
    try:
        check(instance, decision, options, result)
    except CHECKER_FAILURES as exc:
        result.add("malformed", "decision", f"cannot be read as a {family} decision ({type(exc).__name__}: {exc})")
        result.objective = None


def job_ids(result: CheckResult, instance: Instance, value: Any, where: str) -> list[str]:
    """A list of known job ids (``None`` is empty); anything else in ``value`` is a named violation:
    ``domain`` for a non-list or a non-string id, ``unknown-job``, and a repeated id under the
    field's own name."""
    if value is None:
        return []
    if not isinstance(value, list):
        result.add("domain", where, f"must be a list of job ids, got {type(value).__name__}")
        return []
    out = []
    for n, item in enumerate(value):
        if not isinstance(item, str):
            result.add("domain", f"{where}[{n}]", f"a job id must be a string, got {type(item).__name__}")
        elif instance.job(item) is None:
            result.add("unknown-job", f"{where}.{item}", "no such job in the instance")
        else:
            out.append(item)
    if len(set(out)) != len(out):
        result.add(where.split(".")[-1], where, "a job is listed more than once")
    return out


def admitted_jobs(result: CheckResult, instance: Instance, decision: Mapping[str, Any]) -> set[str]:
    """``decision["admitted"]`` as a set, reporting unknown and repeated ids (and anything that is
    not a list of ids)."""
    raw = decision.get("admitted", []) if isinstance(decision, Mapping) else None
    if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
        result.add("domain", "admitted", "expected a list of job ids")
        return set()
    admitted = list(raw)
    unknown_jobs(result, instance, admitted, "admitted")
    if len(set(admitted)) != len(admitted):
        result.add("admitted", "admitted", "a job is listed more than once")
    return set(admitted)


def compare_objective(result: CheckResult, claimed: float | None, tol: float = CHECK_TOL) -> None:
    """Record ``claimed`` and flag it when it differs from the recomputed objective."""
    result.claimed = claimed
    if result.objective is None:
        return
    if not math.isfinite(result.objective):
        # NaN compares unequal to nothing and inf - inf is NaN: no claim could be judged against it
        result.add("objective", "decision", f"the decision's objective is {result.objective} (the instance's numbers overflow "
                   "the objective's arithmetic), not a number a claim can be compared with")
        result.objective = None
        return
    if claimed is None:
        result.add("objective", "report", f"no objective stated; the decision's objective is {result.objective:g}")
    elif abs(claimed - result.objective) > tol * max(1.0, abs(result.objective)):
        result.add("objective", "report", f"stated {claimed:g} but the decision's objective is {result.objective:g}")
