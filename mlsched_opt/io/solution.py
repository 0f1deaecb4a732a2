"""The one solution format (JSON), shared by every problem family and method."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InstanceError, OptionError
from ..report import SolveReport
from .files import dump_json, read_document, write_atomic
from .instance import Instance
from .schema import SchemaViolation, load_schema, validate

FORMAT = "mlsched-solution/1"
#: stated objectives and timings beyond this are refused as malformed (they would overflow
#: float arithmetic); a wrong but representable claim is the checker's business
MAX_REPORTED = 1e300


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
                     decision: dict[str, Any] | None, problem_options: Mapping[str, Any]) -> Solution:
        return cls(problem, method, report, plain(decision), instance.sha256, instance.name, instance.file,
                   plain(dict(problem_options)))

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

    def write(self, path: str | Path, inputs: Iterable[str | Path | None] = ()) -> None:
        """Write the solution file atomically, never onto one of ``inputs`` (see :func:`write_atomic`)."""
        write_atomic(path, dump_json(self.to_dict()), inputs)


def plain(value: Any) -> Any:
    """``value`` as plain JSON data: numpy scalars and arrays become Python numbers and lists, and a
    non-finite float (which JSON cannot hold) becomes ``None``, for the checker to judge."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def require_json(path: str | Path, field: str = "--out") -> None:
    """Solution files are JSON (``mlsched check`` reads them only so): refuse another name before any work."""
    if Path(path).suffix.lower() != ".json":
        raise OptionError(f"solution files are JSON: {str(path)!r} must end in .json", field=field)


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
    for key in ("objective", "bound", "gap"):
        value = rep.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise InstanceError("expected a number or null", name, f"report.{key}")
        if value is not None and abs(value) > MAX_REPORTED:
            raise InstanceError(f"must be at most {MAX_REPORTED:g} in magnitude", name, f"report.{key}")
    for key, kind, what in (("wall_s", (int, float), "a number"), ("build_s", (int, float), "a number"),
                            ("translate_s", (int, float), "a number"),
                            ("solve_s", (int, float), "a number"), ("solver", str, "a string"),
                            ("solver_version", str, "a string"), ("message", str, "a string"),
                            ("certified_by", str, "a string"), ("options", dict, "an object")):
        value = rep.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
            raise InstanceError(f"expected {what}", name, f"report.{key}")
        if isinstance(value, (int, float)) and abs(value) > MAX_REPORTED:  # the numeric fields (bool refused above)
            raise InstanceError(f"must be at most {MAX_REPORTED:g} in magnitude", name, f"report.{key}")
    timing = rep.get("decision_ms")
    if timing is not None and not (isinstance(timing, dict) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) <= MAX_REPORTED
            for v in timing.values())):
        raise InstanceError("expected an object of finite numbers (milliseconds)", name, "report.decision_ms")
    try:
        report = SolveReport.from_dict(rep)
    except (KeyError, ValueError, TypeError, ArithmeticError) as exc:
        raise InstanceError(f"malformed report ({exc})", name, "report") from None
    inst = doc["instance"]
    return Solution(doc["problem"], doc["method"], report, doc.get("decision"), inst["sha256"],
                    inst.get("name", ""), inst.get("file"), doc.get("problem_options", {}))
