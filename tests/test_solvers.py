"""The solver layer: reports, proofs, time limits, the CP-SAT translation, export."""

from __future__ import annotations

import highspy
import pyomo.environ as pyo
import pytest

from mlsched_opt.io import from_document
from mlsched_opt.problems import get_family
from mlsched_opt.solvers import SolveOptions, export_model, relative_gap, relaxation, solve
from mlsched_opt.solvers.cpsat import NotTranslatable

from .conftest import correlated_knapsack

SOLVERS = ["highs", "cpsat"]


def knapsack(rhs: float = 8.5) -> pyo.ConcreteModel:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(["a", "b", "c"], domain=pyo.NonNegativeIntegers, bounds=(0, 3))
    m.c = pyo.Constraint(expr=0.3 * m.x["a"] + 0.4 * m.x["b"] + 0.55 * m.x["c"] <= rhs / 10)
    m.o = pyo.Objective(expr=4 * m.x["a"] + 5 * m.x["b"] + 6.5 * m.x["c"], sense=pyo.maximize)
    return m


@pytest.mark.parametrize("solver", SOLVERS)
def test_fractional_model_same_proven_optimum(solver):
    # 0.3a + 0.4b + 0.55c <= 0.85: best is a=1, c=1 (value 10.5) -- checked by enumeration below
    best = max(4 * a + 5 * b + 6.5 * c for a in range(4) for b in range(4) for c in range(4)
               if 0.3 * a + 0.4 * b + 0.55 * c <= 0.85 + 1e-12)
    report = solve(knapsack(), SolveOptions(solver=solver, gap=0.0))
    assert report.status == "optimal"
    assert report.objective == pytest.approx(best) and report.bound == pytest.approx(best)
    assert report.gap == 0.0
    assert report.options["gap"] == 0.0 and report.solver == solver and report.solver_version


@pytest.mark.parametrize("solver", SOLVERS)
def test_infeasible_is_an_answer(solver):
    m = knapsack()
    m.force = pyo.Constraint(expr=m.x["a"] + m.x["b"] >= 7)
    report = solve(m, SolveOptions(solver=solver))
    assert report.status == "infeasible" and report.objective is None


@pytest.mark.parametrize("solver", SOLVERS)
def test_time_limit_returns_an_incumbent_and_a_bound(solver):
    # structural, not a stopwatch: stopped by the limit (not proven at gap 0), with a valid gap
    family = get_family("packing")
    inst = from_document(correlated_knapsack())
    sol = family.run(inst, "exact", SolveOptions(solver=solver, time_limit=1.0, gap=0.0), {})
    rep = sol.report
    assert rep.status == "feasible", rep.to_dict()
    assert rep.objective is not None and rep.bound is not None and rep.bound >= rep.objective
    assert rep.gap == pytest.approx(relative_gap(rep.objective, rep.bound)) and rep.gap > 0


def test_gap_definition():
    assert relative_gap(100, 100) == 0.0
    assert relative_gap(90, 100) == pytest.approx(0.1)
    assert relative_gap(0, 5) == 1.0
    assert relative_gap(0, 0) == 0.0
    assert relative_gap(None, 3) is None


def test_optimal_needs_our_gap_too():
    """A solver stop at a looser gap than asked for is reported as feasible, not optimal."""
    from mlsched_opt.report import SolveReport
    from mlsched_opt.solvers.pyomo_run import BackendResult, _judge

    rep = SolveReport("error", objective=90.0, bound=100.0, sense="max", solver="x", solver_version="1")
    assert _judge(BackendResult("optimal", True, 100.0, "1"), rep, SolveOptions(gap=1e-4)) == "feasible"
    assert "exceeds" in rep.message
    rep = SolveReport("error", objective=99.995, bound=100.0, sense="max", solver="x", solver_version="1")
    assert _judge(BackendResult("optimal", True, 100.0, "1"), rep, SolveOptions(gap=1e-4)) == "optimal"


def test_cpsat_hands_a_continuous_model_to_highs_and_says_so():
    from mlsched_opt.solvers.cpsat import strict

    m = knapsack()
    m.y = pyo.Var(bounds=(0, 1))
    m.c2 = pyo.Constraint(expr=m.y <= m.x["a"])
    report = solve(m, SolveOptions(solver="cpsat", gap=0.0))
    assert report.status == "optimal" and report.objective == pytest.approx(10.5)
    assert report.solver == "highs" and "CP-SAT cannot take this model exactly" in report.message and "continuous" in report.message
    with strict(), pytest.raises(NotTranslatable, match="continuous"):  # as a certification referee
        solve(m, SolveOptions(solver="cpsat"))


def test_lp_relaxation_bounds_the_integer_optimum():
    lp = relaxation(knapsack(), SolveOptions())
    ip = solve(knapsack(), SolveOptions(gap=0.0))
    assert lp.status == "optimal" and lp.objective >= ip.objective - 1e-9
    assert lp.objective > ip.objective  # this instance has an integrality gap


@pytest.mark.parametrize("fmt", ["mps", "lp"])
def test_export_reads_back_with_the_same_optimum(tmp_path, fmt):
    path = tmp_path / f"model.{fmt}"
    export_model(knapsack(), path, fmt)
    text = path.read_text()
    assert "x(a)" in text  # readable names
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(10.5)


def test_highs_answers_whatever_thread_counts_follow_each_other_in_one_process():
    """HiGHS sizes one thread pool per process at its first run and then fails ("Not Set") a run
    asking for another size: a solve with --threads 2 followed by a one-thread certification or
    LP once ended in 'error'.  Every HiGHS run resizes the pool when it must."""
    from mlsched_opt.io import load_instance
    from mlsched_opt.solvers.highs_lp import ArrayLP

    from .conftest import ROOT

    family = get_family("hetero")
    inst = load_instance(ROOT / "instances" / "hetero-toy.toml")
    inf = highspy.kHighsInf
    lp = ArrayLP([1.0, 1.0], [[1.0, 1.0]], [1.0], [inf], [0.0, 0.0], [inf, inf])
    values = []
    for threads in (2, 1, 2, 1):
        report = family.run(inst, "exact", SolveOptions(threads=threads, certify=False)).report
        assert report.status == "optimal", (threads, report.message)
        values.append(report.objective)
        assert lp.solve().objective == pytest.approx(1.0)
    assert len(set(values)) == 1


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("start", [{"a": 1, "c": 1}, {"a": 1}, {"a": 3, "b": 3, "c": 3}],
                         ids=["optimal", "partial", "infeasible"])
def test_a_start_is_handed_to_the_solver_and_never_changes_the_optimum(solver, start):
    """``model._start`` (a heuristic answer, maybe partial or even infeasible) reaches HiGHS as a
    solution and CP-SAT as hints; the proven optimum is the same."""
    m = knapsack()
    m._start = [(m.x[k], v) for k, v in start.items()]
    report = solve(m, SolveOptions(solver=solver, gap=0.0))
    assert report.status == "optimal" and report.objective == pytest.approx(10.5)
    assert f"start: {len(start)} " in report.message
    plain = solve(knapsack(), SolveOptions(solver=solver, gap=0.0))
    assert "start" not in plain.message
