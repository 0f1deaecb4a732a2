"""A solver's "no bound" is never a bound: SCIP's infinity is a finite 1e20, and a ratio against
a non-positive reference is undefined (inf), never a ratio below 1 read as optimal."""

from __future__ import annotations

import math

import pyomo.environ as pyo
import pytest

from mlsched_opt.bench import report
from mlsched_opt.bench.tasks import COLUMNS
from mlsched_opt.comparison import approximation_ratio
from mlsched_opt.report import SolveOptions


def test_ratio_against_a_non_positive_reference_is_inf():
    assert approximation_ratio(2203.4, -1e20, "min") == math.inf
    assert approximation_ratio(2203.4, 0.0, "min") == math.inf
    assert approximation_ratio(0.0, 10.0, "max") == math.inf
    assert approximation_ratio(-5.0, 10.0, "max") == math.inf
    assert approximation_ratio(0.0, 0.0, "min") == 1.0
    assert approximation_ratio(12.0, 10.0, "min") == pytest.approx(1.2)


def _row(label, role, method, status, objective, bound=None, certified_by=""):
    row = dict.fromkeys(COLUMNS)
    row.update(instance="i", problem_options="{}", label=label, role=role, method=method, status=status,
               objective=objective, bound=bound, check="ok", sense="min", certified_by=certified_by, message="",
               solver="", solver_version="", setting="s", problem="hetero", wall_s=1.0, jobs=8)
    return row


def test_a_bench_row_is_never_optimal_against_a_sentinel_bound():
    # the hetero_scale run that found it: an unconfirmed HiGHS claim, SCIP's bound -1e20 kept
    rows = [_row("exact (highs)", "reference", "exact", "feasible", 2203.38, bound=-1e20),
            _row("sampling", "method", "sampling", "feasible", 2203.38)]
    report.fill_references(rows, "exact", 0.0)
    assert rows[1]["ratio"] is None and rows[1]["reference_kind"] == "none"  # no bound, so no ratio
    assert not rows[1]["certified"]


@pytest.mark.parametrize("items", [300, 1000])
def test_scip_reports_no_bound_rather_than_its_infinity(items):
    from mlsched_opt.solvers.scip import scip_available, solve_scip

    if not scip_available():
        pytest.skip("pyscipopt missing")
    # a multi-dimensional knapsack with a warm start, stopped at once: SCIP has a solution and,
    # before its root LP, no dual bound (getDualbound() = -1e20), which must come back as None
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(items), domain=pyo.Binary, initialize=0)
    m.c = pyo.ConstraintList()
    for k in range(8):
        w = [10 + (97 * i * (k + 3) + 13 * k) % 89 for i in range(items)]
        m.c.add(sum(w[i] * m.x[i] for i in range(items)) <= sum(w) // 3)
    m.obj = pyo.Objective(expr=-sum((50 + (31 * i) % 47) * m.x[i] for i in range(items)), sense=pyo.minimize)
    result = solve_scip(m, SolveOptions(solver="scip", time_limit=0.001, gap=0.0))
    assert result.has_solution
    assert result.bound is None or abs(result.bound) < 1e19, result


def test_a_models_own_highs_options_reach_highs_unless_presolve_is_off(monkeypatch):
    """The hetero configuration ILP switches HiGHS's presolve reductions off (its build_model says
    why); the option must reach HiGHS, and a presolve-off re-solve must still be presolve off."""
    from pyomo.contrib.solver.solvers.highs import Highs

    from mlsched_opt.io import load_instance
    from mlsched_opt.problems import REGISTRY
    from mlsched_opt.problems.hetero.formulation import build_model
    from mlsched_opt.solvers.pyomo_run import solve_highs

    from .conftest import ROOT

    inst = load_instance(ROOT / "instances" / "hetero-toy.toml")
    opts = REGISTRY["hetero"].resolve_options(inst, {})
    seen: list[dict] = []
    original = Highs.solve

    def spy(self, model, **kwargs):
        seen.append(dict(kwargs["solver_options"]))
        return original(self, model, **kwargs)

    monkeypatch.setattr(Highs, "solve", spy)
    for presolve in (True, False):
        result = solve_highs(build_model(inst, opts), SolveOptions(solver="highs", time_limit=30, presolve=presolve))
        assert result.termination == "optimal"
    assert seen[0]["presolve_reduction_limit"] == 0 and "presolve" not in seen[0]
    assert seen[1]["presolve"] == "off" and "presolve_reduction_limit" not in seen[1]


def test_scips_sentinel_bound_is_dropped_whatever_the_race(monkeypatch):
    """The same rule without the timing: SCIP is made to report its -1e20 'no bound' outright."""
    pyscipopt = pytest.importorskip("pyscipopt")
    from mlsched_opt.solvers.scip import solve_scip

    class NoBound(pyscipopt.Model):
        def getDualbound(self):
            return -1e20

    monkeypatch.setattr(pyscipopt, "Model", NoBound)
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3), domain=pyo.Binary)
    m.c = pyo.Constraint(expr=m.x[0] + m.x[1] + m.x[2] <= 2)
    m.obj = pyo.Objective(expr=-(m.x[0] + 2 * m.x[1] + 3 * m.x[2]), sense=pyo.minimize)
    result = solve_scip(m, SolveOptions(solver="scip", time_limit=10))
    assert result.has_solution and result.bound is None


def test_compare_disputes_a_beaten_bound_and_takes_one_from_a_solve_with_no_incumbent():
    from types import SimpleNamespace

    from mlsched_opt.comparison import Row, _fill_ratios
    from mlsched_opt.report import SolveReport

    def row(label, method, status, objective, bound, checked=None):
        check = None if checked is None else SimpleNamespace(feasible=True, objective=checked)
        return Row(label, method, SolveReport(status, objective, bound, "min", "x", "1", {}), check)

    wrong_lp = row("lp-relaxation (bound)", "lp", "optimal", 10.0, 10.0)
    stopped = row("exact (highs)", "exact", "time-limit-no-solution", None, 5.0)
    answer = row("ffd", "ffd", "feasible", 8.0, None, checked=8.0)
    rows = [stopped, answer, wrong_lp]
    _fill_ratios(rows, "min", 1e-6)
    assert wrong_lp.report.status == "disputed" and wrong_lp.report.bound is None
    assert answer.ratio == pytest.approx(8.0 / 5.0) and answer.ratio_is_bound  # the stopped solve's bound
    assert stopped.report.status == "time-limit-no-solution"
