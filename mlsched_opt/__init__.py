"""mlsched-opt: optimization models for scheduling distributed deep-learning jobs on GPU clusters.

The library in one import::

    import mlsched_opt as ms

    inst = ms.load("demo")                                   # an Instance (a file, or a bundled example)
    run = ms.solve(inst, "ffd", time_limit=60)               # checked, bounded, rated
    run.status, run.objective, run.bound, run.gap, run.ratio, run.check.feasible
    run.save("ffd.sol.json"); print(run)                     # what `mlsched solve` prints
    cmp = ms.compare(inst, ["exact", "ffd", "pop"], solvers=("highs", "cpsat"))
    cmp.to_frame()                                           # a pandas DataFrame, one row per run
    ms.check(inst, "ffd.sol.json")                           # a CheckResult (.feasible, .violations)
    ms.generate("oasis", jobs=8, servers=2, seed=3)          # an Instance
    ms.import_trace("philly", "oasis", jobs=50, servers=20)  # a real trace as an Instance
    ms.families(); ms.family("oasis").methods                # the registry, read only
    ms.examples()                                            # the bundled instances: name -> file

Every name is loaded when first used: ``import mlsched_opt`` (and ``mlsched --help``) imports no
solver, no model builder and no family.

The package is laid out by concern:

``mlsched_opt.pipeline``  one pipeline for every answer: method, check, bound, dispute, ratio
``mlsched_opt.io``        instance, solution and workload-catalog files (reading, schema, writing)
``mlsched_opt.problems``  one subpackage per problem family, plugged into a registry
``mlsched_opt.checking``  the independent checker core (feasibility and objective from a decision)
``mlsched_opt.solvers``   one solve function over Pyomo models for HiGHS, CP-SAT and other solvers
``mlsched_opt.bench``     benchmark suites: method comparison over many instances, ratios, reports
``mlsched_opt.cli``       the ``mlsched`` command (parses and prints; the work is the library's)
"""

from __future__ import annotations

import time

#: when the package was first imported (the interpreter's first step into our code): ``mlsched``'s
#: clock counts from the process start, but not from before an exec that started us late
#: (:func:`mlsched_opt.cli.command_age`)
_IMPORTED = time.perf_counter()

import importlib  # noqa: E402 -- after the timestamp, which must come first
import inspect  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

__version__ = "0.2.0"

if TYPE_CHECKING:
    # what mypy and IDEs see: the real signatures (at run time __getattr__ below imports each on first
    # use, so `import mlsched_opt` loads no solver); the redundant aliases mark them as re-exported.
    # tests/test_facade.py checks that this list and _FACADE name the same objects.
    from mlsched_opt.checking.core import CheckResult as CheckResult
    from mlsched_opt.comparison import Comparison as Comparison, compare as compare
    from mlsched_opt.errors import UserError as UserError
    from mlsched_opt.facade import (
        examples as examples,
        families as families,
        family as family,
        generate as generate,
        import_trace as import_trace,
        load as load,
    )
    from mlsched_opt.io.instance import Instance as Instance
    from mlsched_opt.io.solution import Solution as Solution
    from mlsched_opt.pipeline import Run as Run, check as check, solve as solve
    from mlsched_opt.problems.base import Family as Family, Method as Method, Option as Option
    from mlsched_opt.report import SolveReport as SolveReport, Status as Status

#: facade name -> "module:attribute", imported on first use
_FACADE = {
    "load": "mlsched_opt.facade:load",
    "examples": "mlsched_opt.facade:examples",
    "solve": "mlsched_opt.pipeline:solve",
    "compare": "mlsched_opt.comparison:compare",
    "check": "mlsched_opt.pipeline:check",
    "generate": "mlsched_opt.facade:generate",
    "import_trace": "mlsched_opt.facade:import_trace",
    "families": "mlsched_opt.facade:families",
    "family": "mlsched_opt.facade:family",
    "Run": "mlsched_opt.pipeline:Run",
    "Comparison": "mlsched_opt.comparison:Comparison",
    "Instance": "mlsched_opt.io.instance:Instance",
    "Solution": "mlsched_opt.io.solution:Solution",
    "CheckResult": "mlsched_opt.checking.core:CheckResult",
    "SolveReport": "mlsched_opt.report:SolveReport",
    "Status": "mlsched_opt.report:Status",
    "Family": "mlsched_opt.problems.base:Family",
    "Method": "mlsched_opt.problems.base:Method",
    "Option": "mlsched_opt.problems.base:Option",
    "UserError": "mlsched_opt.errors:UserError",
}

__all__ = ["__version__", *_FACADE]


def __getattr__(name: str) -> Any:
    target = _FACADE.get(name)
    if target is None:
        raise AttributeError(f"module 'mlsched_opt' has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr)
    if inspect.isfunction(value):  # the library's errors name the CLI's flags; a Python caller reads its keywords
        from .errors import with_python_names

        value = with_python_names(value)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FACADE))
