"""The one solution format (JSON), shared by every problem family and method."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import InstanceError
from ..solvers.report import SolveReport
from .files import dump_json, read_document
from .instance import Instance
from .schema import SchemaViolation, load_schema, validate

FORMAT = "mlsched-solution/1"


@dataclass
class Solution:
    """A method's answer for one instance.

    ``decision`` holds what the method decided, in the shared vocabulary: ``admitted`` job ids,
    a static ``placement`` (job -> workers/ps per server), a slotted ``schedule``
    (job -> [{slot, workers, ps}]) and problem-specific ``extra``.  Everything else is claims
    that :mod:`mlsched_opt.checking` verifies.
    """

    problem: str
    method: str
    report: SolveReport
    decision: dict[str, Any] | None
    instance_sha256: str
    instance_name: str = ""
    instance_file: str | None = None
    problem_options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def for_instance(cls, instance: Instance, problem: str, method: str, report: SolveReport,
                     decision: dict[str, Any] | None, problem_options: Mapping[str, Any]) -> "Solution":
        return cls(problem, method, report, decision, instance.sha256, instance.name, instance.file, dict(problem_options))

    def to_dict(self) -> dict[str, Any]:
        inst = {"sha256": self.instance_sha256, "name": self.instance_name}
        if self.instance_file:
            inst["file"] = self.instance_file
        doc: dict[str, Any] = {
            "format": FORMAT, "instance": inst, "problem": self.problem, "method": self.method,
            "problem_options": dict(self.problem_options), "report": self.report.to_dict(),
        }
        if self.decision is not None:
            doc["decision"] = self.decision
        return doc

    def write(self, path: str | Path) -> None:
        Path(path).write_text(dump_json(self.to_dict()), encoding="utf-8")


def read_solution(path: str | Path) -> Solution:
    """Read and structurally validate a solution file (values are judged by the checker)."""
    name = str(path)
    if Path(path).suffix.lower() != ".json":
        raise InstanceError("solution files are JSON (.json)", name)
    doc = read_document(path)
    try:
        validate(doc, load_schema("solution"))
    except SchemaViolation as exc:
        raise InstanceError(exc.reason, name, exc.path or None) from None
    rep = doc["report"]
    for key in ("objective", "bound"):
        if rep.get(key) is not None and not isinstance(rep[key], (int, float)):
            raise InstanceError("expected a number or null", name, f"report.{key}")
    try:
        report = SolveReport.from_dict(rep)
    except (KeyError, ValueError, TypeError) as exc:
        raise InstanceError(f"malformed report ({exc})", name, "report") from None
    inst = doc["instance"]
    return Solution(doc["problem"], doc["method"], report, doc.get("decision"), inst["sha256"],
                    inst.get("name", ""), inst.get("file"), doc.get("problem_options", {}))
