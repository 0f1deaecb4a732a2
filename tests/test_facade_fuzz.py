"""Every facade function and keyword, given hostile values (issue 41): a Python caller gets an answer or a
:class:`~mlsched_opt.errors.UserError` naming the keyword argument, never a bare TypeError, ValueError,
AttributeError or OverflowError from inside the library, and never a ``--flag`` it did not type."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import mlsched_opt as ms
from mlsched_opt.errors import ArgumentError

from .conftest import DEMO

HOSTILE = [None, True, False, "", "2", "sixty", 1.5, -1.5, math.nan, math.inf, -math.inf, 10**400, -(10**400), -1, 0,
           2**31, [], [1], ["x"], {}, {"x": 1}, {1: 2}, object()]
IDS = ["None", "True", "False", "empty", "str2", "str", "1.5", "-1.5", "nan", "inf", "-inf", "huge", "-huge", "-1", "0",
       "2**31", "[]", "[1]", "[x]", "{}", "{x}", "{1}", "object"]


@pytest.fixture(scope="module")
def demo():
    return ms.load(DEMO)


@pytest.fixture(scope="module")
def solution(demo):
    return ms.solve(demo, "ffd", bound=False).solution


def _calls(demo, solution, tmp: Path):
    """Each facade function with valid, fast arguments (an approximation, no bound, no data sets)."""
    return {
        "load": (ms.load, {"path": DEMO, "catalog": None}),
        "solve": (ms.solve, {"instance": demo, "method": "ffd", "problem": None, "solver": None, "time_limit": 30, "gap": 1e-6,
                             "threads": 1, "seed": 0, "certify": True, "bound": False, "options": None, "catalog": None}),
        "compare": (ms.compare, {"instance": demo, "methods": ["ffd"], "problem": None, "solvers": ("highs",), "solver": "highs",
                                 "time_limit": 30, "gap": 1e-6, "threads": 1, "seed": 0, "certify": True, "bound": False,
                                 "options": None, "catalog": None, "progress": None}),
        "check": (ms.check, {"instance": demo, "solution": solution, "problem": None, "options": None, "catalog": None}),
        "generate": (ms.generate, {"problem": "packing", "jobs": 3, "servers": 2, "seed": 1, "slots": None, "options": None,
                                   "catalog": None}),
        # an empty data folder: a valid call ends in "data set not found", fast
        "import_trace": (ms.import_trace, {"source": "philly", "problem": "oasis", "jobs": 3, "servers": 2, "slots": None,
                                           "seed": 0, "options": None, "data": str(tmp), "catalog": None}),
        "family": (ms.family, {"name": "packing"}),
    }


CASES = [(fn, key) for fn, keys in {
    "load": ["path", "catalog"],
    "solve": ["instance", "method", "problem", "solver", "time_limit", "gap", "threads", "seed", "certify", "bound", "options",
              "catalog"],
    "compare": ["instance", "methods", "problem", "solvers", "solver", "time_limit", "gap", "threads", "seed", "certify", "bound",
                "options", "catalog", "progress"],
    "check": ["instance", "solution", "problem", "options", "catalog"],
    "generate": ["problem", "jobs", "servers", "seed", "slots", "options", "catalog"],
    "import_trace": ["source", "problem", "jobs", "servers", "slots", "seed", "options", "data", "catalog"],
    "family": ["name"],
}.items() for key in keys]


@pytest.mark.parametrize(("fn", "key"), CASES, ids=[f"{f}-{k}" for f, k in CASES])
def test_a_hostile_argument_is_an_answer_or_a_user_error_naming_it(fn, key, demo, solution, tmp_path):
    func, base = _calls(demo, solution, tmp_path)[fn]
    for value, name in zip(HOSTILE, IDS):
        if (fn, key) == ("import_trace", "data") and value is None:
            continue  # None is the documented default: the shared data sets, a real import
        if (fn, key) == ("compare", "methods") and value in (None, []):
            continue  # the documented default: every method of the family (seconds: lns, exact twice)
        args = {**base, key: value}
        try:
            func(**args)
        except ms.UserError as exc:
            assert "--" not in (exc.field or ""), (fn, key, name, exc.message())  # a Python name, not a flag
            if isinstance(exc, ArgumentError):
                assert exc.field == key, (fn, key, name, exc.message())
        except Exception as exc:  # noqa: BLE001 -- the assertion: nothing but a UserError
            pytest.fail(f"ms.{fn}({key}={name}) raised {type(exc).__name__}: {exc}")


def test_bools_are_not_numbers_and_certify_is_a_bool(demo):
    for key, value in (("seed", True), ("threads", True), ("certify", "no"), ("time_limit", "2"), ("seed", "1"),
                       ("threads", 1.5)):
        with pytest.raises(ArgumentError) as caught:
            ms.solve(demo, "ffd", **{key: value})
        assert caught.value.field == key and caught.value.message().startswith(f"{key}: "), caught.value.message()
    with pytest.raises(ArgumentError, match=r"^path: "):
        ms.load(None)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match=r"^solution: expected a Solution, a Run or a solution file"):
        ms.check(demo, {"decision": {}})  # type: ignore[arg-type]
    run = ms.solve(demo, "ffd", bound=False)
    assert ms.check(demo, run).feasible
