"""Problem families, each a subpackage registered here by name.

To add a family: create ``mlsched_opt/problems/<name>/`` whose ``__init__`` defines
``FAMILY = Family(...)``, and list the module in ``_FAMILY_MODULES``.

The registry loads a family's module when the family is first asked for (``REGISTRY["oasis"]``,
or every one when iterating over ``REGISTRY.values()``): the names are known without importing
anything, so ``mlsched --help`` and a solve of one family pay only for that family.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from importlib import import_module
from typing import TYPE_CHECKING, Any

from ..errors import InstanceError, OptionError
from .base import Decision, Family, GenerateSpec, Method, MethodKind, MethodResult, Option, TraceImport, heuristic_report

if TYPE_CHECKING:
    from ..checking import CheckResult
    from ..io.instance import Instance
    from ..io.solution import Solution

#: family name -> its module under this package (the same word)
_FAMILY_MODULES = ("packing", "smd", "oasis", "hetero", "locality", "harmony")


class _Registry(MutableMapping[str, Family]):
    """name -> :class:`Family`, each shipped family imported on first use; a family of one's own is
    registered by assignment (``REGISTRY["mine"] = FAMILY``)."""

    def __init__(self, modules: tuple[str, ...]) -> None:
        self._modules = list(modules)
        self._loaded: dict[str, Family] = {}

    def __setitem__(self, name: str, family: Family) -> None:
        if family.name != name:
            raise ValueError(f"a family named {family.name!r} registered as {name!r}")
        if name not in self._modules:
            self._modules.append(name)
        self._loaded[name] = family

    def __delitem__(self, name: str) -> None:
        if name not in self._modules:
            raise KeyError(name)
        self._modules.remove(name)
        self._loaded.pop(name, None)

    def __getitem__(self, name: str) -> Family:
        if name not in self._loaded:
            if name not in self._modules:
                raise KeyError(name)
            family = import_module(f"{__name__}.{name}").FAMILY
            if family.name != name:
                raise RuntimeError(f"module {name} registers a family named {family.name!r}")
            self._loaded[name] = family
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __contains__(self, name: object) -> bool:
        return name in self._modules


REGISTRY: MutableMapping[str, Family] = _Registry(_FAMILY_MODULES)


def problem_names() -> list[str]:
    """The registered families' names (importing none of them)."""
    return list(REGISTRY)


def unknown_problem_text(name: str) -> str:
    """``unknown problem 'pakcing'; did you mean 'packing'? (known: ...)``."""
    import difflib

    known = problem_names()
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown problem {name!r}{hint} (known: {', '.join(known)})"


def known_problem(name: str, file: str | None, field: str = "problem") -> str:
    """``name`` when a family of that name is registered, else the :class:`InstanceError` of the file
    (an instance or a solution) and the field that names it, with a did-you-mean."""
    if name not in REGISTRY:
        raise InstanceError(unknown_problem_text(name), file, field)
    return name


def get_family(name: str) -> Family:
    """The family called ``name``, or an :class:`OptionError` listing the known ones."""
    if name not in REGISTRY:
        raise OptionError(unknown_problem_text(name), field="--problem")
    return REGISTRY[name]


def check_solution(instance: Instance, solution: Solution, options: Mapping[str, Any] | None = None) -> CheckResult:
    """The independent checker's verdict on ``solution`` for ``instance`` (see
    :func:`mlsched_opt.checking.check_for_family`), the family found by the solution's ``problem``."""
    from ..checking import check_for_family

    return check_for_family(get_family(solution.problem), instance, solution, options)


__all__ = ["REGISTRY", "Decision", "Family", "GenerateSpec", "Method", "MethodKind", "MethodResult", "Option", "TraceImport",
           "check_solution", "get_family", "heuristic_report", "known_problem", "problem_names", "unknown_problem_text"]
