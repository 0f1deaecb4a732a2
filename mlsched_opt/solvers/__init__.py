"""Solver back ends behind one :func:`solve`.

>>> from mlsched_opt.solvers import SolveOptions, solve
>>> report = solve(model, SolveOptions(solver="cpsat", time_limit=10, gap=0.0))  # doctest: +SKIP
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import OptionError

# re-exported: the CLI, the notebooks and most tests take SolveOptions from here
from ..report import STATUSES, SolveOptions, SolveReport, relative_gap
from .names import KNOWN_SOLVERS, NATIVE, OTHER_KNOWN

if TYPE_CHECKING:
    import pyomo.environ as pyo

    from .pyomo_run import backend_for, solve

#: names served by .pyomo_run, which imports Pyomo: loaded when first used, so that importing this
#: package (for SolveOptions, check_solver) costs nothing a heuristic does not need
_LAZY = ("Backend", "backend_for", "legacy_available", "solve", "solve_highs", "solve_legacy")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import pyomo_run

        return getattr(pyomo_run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def available_solvers() -> dict[str, str | None]:
    """Solver name -> version string, or ``None`` where it is not installed."""
    import ortools
    from pyomo.contrib.solver.solvers.highs import Highs

    from .pyomo_run import legacy_available
    from .scip import scip_version

    out: dict[str, str | None] = {"highs": ".".join(map(str, Highs().version())), "cpsat": ortools.__version__,  # type: ignore[attr-defined]  # not in ortools' typing
                                  "scip": scip_version()}
    for name in OTHER_KNOWN:
        out[name] = "installed" if legacy_available(name) else None
    return out


def check_solver(name: str) -> None:
    """Raise an :class:`OptionError` naming ``--solver`` for a solver we cannot run here.

    Only names in :data:`KNOWN_SOLVERS` are considered at all, so a path or an unknown name is
    refused without being probed (Pyomo's probe would run an executable of that name)."""
    if name not in KNOWN_SOLVERS:
        raise OptionError(f"unknown solver {name!r}; choose from {', '.join(KNOWN_SOLVERS)}", field="--solver")
    if name == "scip":
        from .scip import scip_available

        if not scip_available():
            raise OptionError("solver 'scip' needs pyscipopt (pip install pyscipopt)", field="--solver")
        return
    if name in NATIVE:
        return
    from .pyomo_run import legacy_available

    if not legacy_available(name):
        raise OptionError(f"solver {name!r} is not installed on this machine", field="--solver")


def relaxation(model: pyo.ConcreteModel, options: SolveOptions) -> SolveReport:
    """Solve the LP relaxation of ``model`` (on a copy) with HiGHS; its objective bounds the integer optimum."""
    import pyomo.environ as pyo

    from .pyomo_run import solve

    start = time.perf_counter()
    relaxed = model.clone()
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(relaxed)
    build_s = time.perf_counter() - start
    lp_options = SolveOptions(solver="highs", time_limit=options.time_limit, gap=options.gap, threads=options.threads, seed=options.seed)
    return solve(relaxed, lp_options, build_s=build_s)


EXPORT_FORMATS = ("mps", "lp")


def export_model(model: pyo.ConcreteModel, path: str | Path, fmt: str) -> None:
    """Write ``model`` as free MPS or CPLEX LP with readable (symbolic) names."""
    if fmt not in EXPORT_FORMATS:
        raise OptionError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}", field="--format")
    from pyomo.opt import ProblemFormat

    pyomo_format = {"mps": ProblemFormat.mps, "lp": ProblemFormat.cpxlp}[fmt]
    model.write(str(path), format=pyomo_format, io_options={"symbolic_solver_labels": True})


__all__ = [
    "EXPORT_FORMATS", "KNOWN_SOLVERS", "NATIVE", "OTHER_KNOWN", "STATUSES", "SolveOptions", "SolveReport", "available_solvers",
    "backend_for",
    "check_solver", "export_model", "relative_gap", "relaxation", "solve",
]
