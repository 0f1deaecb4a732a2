"""Problem families, each a subpackage registered here by name.

To add a family: create ``mlsched_opt/problems/<name>/`` whose ``__init__`` defines
``FAMILY = Family(...)``, and list the module in ``_FAMILY_MODULES``.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any

from ..checking import CheckResult, check_for_family
from ..errors import OptionError
from ..io.instance import Instance
from ..io.solution import Solution
from .base import Decision, Family, GenerateSpec, Method, MethodKind, MethodResult, Option, TraceImport, heuristic_report

_FAMILY_MODULES = ("packing", "smd", "oasis", "hetero", "locality", "harmony")

REGISTRY: dict[str, Family] = {}
for _module in _FAMILY_MODULES:
    _family = import_module(f"{__name__}.{_module}").FAMILY
    REGISTRY[_family.name] = _family


def get_family(name: str) -> Family:
    """The family called ``name``, or an :class:`OptionError` listing the known ones."""
    if name not in REGISTRY:
        raise OptionError(f"unknown problem {name!r}; choose from {', '.join(REGISTRY)}", field="--problem")
    return REGISTRY[name]


def check_solution(instance: Instance, solution: Solution, options: Mapping[str, Any] | None = None) -> CheckResult:
    """The independent checker's verdict on ``solution`` for ``instance`` (see
    :func:`mlsched_opt.checking.check_for_family`), the family found by the solution's ``problem``."""
    return check_for_family(get_family(solution.problem), instance, solution, options)


__all__ = ["REGISTRY", "Decision", "Family", "GenerateSpec", "Method", "MethodKind", "MethodResult", "Option", "TraceImport",
           "check_solution",
           "get_family", "heuristic_report"]
