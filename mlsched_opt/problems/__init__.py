"""Problem families, each a subpackage registered here by name.

To add a family: create ``mlsched_opt/problems/<name>/`` whose ``__init__`` defines
``FAMILY = Family(...)``, and list the module in ``_FAMILY_MODULES``.
"""

from __future__ import annotations

from importlib import import_module

from ..errors import OptionError
from .base import Decision, Family, GenerateSpec, Method, MethodResult, Option, TraceImport, heuristic_report

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


__all__ = ["REGISTRY", "Decision", "Family", "GenerateSpec", "Method", "MethodResult", "Option", "TraceImport", "get_family", "heuristic_report"]
