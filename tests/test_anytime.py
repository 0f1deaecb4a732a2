"""The anytime exact method's judgement (problems/anytime.combine): its answer is the better *checked*
decision of its quick start and its search, a claimed proof that the quick start refutes is disputed,
and a search decision the checker rejects is no answer and proves no bound."""

from __future__ import annotations

import copy
import dataclasses
import time

import pytest

from mlsched_opt.io import load_instance
from mlsched_opt.problems import get_family
from mlsched_opt.problems.anytime import combine
from mlsched_opt.problems.result import MethodResult
from mlsched_opt.report import SolveOptions, SolveReport

from .conftest import DEMO

FAMILY = get_family("packing")
INSTANCE = load_instance(DEMO)
OPTIONS = FAMILY.resolve_options(INSTANCE, {})
SOLVE = SolveOptions(time_limit=30, certify=False)


@pytest.fixture(scope="module")
def quick() -> MethodResult:
    found = FAMILY.method("ffd").run(INSTANCE, OPTIONS, SOLVE)
    assert found.report.objective == 36.0
    return found


def search(status: str, objective: float | None, bound: float | None, decision=None, certified_by=()) -> MethodResult:
    report = SolveReport(status=status, objective=objective, bound=bound, sense="max", solver="highs", solver_version="1.11.0",
                         options=SOLVE.to_dict(), certified_by=certified_by)
    return MethodResult(report, decision)


def judge(quick, found) -> MethodResult:
    return combine(FAMILY, INSTANCE, OPTIONS, SOLVE, quick, found, time.perf_counter() + 30)


def test_a_claimed_optimum_the_quick_start_beats_is_disputed_without_a_certificate(quick):
    worse = copy.deepcopy(quick.decision)
    worse["admitted"] = worse["admitted"][:1]
    worse["placement"] = {j: worse["placement"][j] for j in worse["admitted"]}
    value = FAMILY._evaluate(INSTANCE, OPTIONS, worse)[0]
    assert value is not None and value < 36
    out = judge(quick, search("optimal", value, value, worse, certified_by=("scip 10.0",)))
    assert out.report.status == "disputed" and out.report.certified_by == () and out.report.bound is None
    assert out.decision == quick.decision and out.report.objective == 36.0
    assert "refuted by ffd's checked answer 36" in out.report.message


def test_an_infeasibility_the_quick_start_refutes_is_disputed(quick):
    out = judge(quick, search("infeasible", None, None, certified_by=("scip 10.0",)))
    assert out.report.status == "disputed" and out.report.certified_by == () and out.decision == quick.decision
    assert "'infeasible', refuted by ffd's checked answer" in out.report.message


def test_an_unrefuted_proof_stands(quick):
    best = search("optimal", 42.0, 42.0, {"marker": True}, certified_by=("scip 10.0",))
    assert judge(quick, best) is best
    assert judge(None, search("infeasible", None, None)).report.status == "infeasible"


def test_a_rejected_search_decision_is_no_answer_and_its_bound_is_not_trusted(quick):
    broken = copy.deepcopy(quick.decision)
    broken["placement"][next(iter(broken["placement"]))] = {"workers": {"nowhere": 99}}
    assert FAMILY._evaluate(INSTANCE, OPTIONS, broken)[0] is None
    alone = judge(None, search("feasible", 40.0, 41.0, broken))
    assert alone.report.status == "error" and alone.decision is None and alone.report.bound != 41.0
    assert "rejected by the checker" in alone.report.message
    with_quick = judge(quick, search("feasible", 40.0, 41.0, broken))
    assert with_quick.report.status == "feasible" and with_quick.decision == quick.decision
    assert with_quick.report.bound != 41.0 and "rejected by the checker" in with_quick.report.message


def test_the_better_checked_answer_wins_with_the_searchs_bound(quick):
    worse = search("feasible", 30.0, 42.5, {"admitted": [], "placement": {}})  # a valid empty decision, worth 0
    out = judge(quick, worse)
    assert out.report.status == "feasible" and out.decision == quick.decision and out.report.objective == 36.0
    assert out.report.bound == 42.5 and "the search's best was 0" in out.report.message
    none = judge(quick, search("time-limit-no-solution", None, 42.5))
    assert none.report.bound == 42.5 and "the search found none" in none.report.message
    assert dataclasses.asdict(none.report)["status"] == "feasible"
