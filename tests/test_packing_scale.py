"""Packing at production scale: the array-built LP bound, exact MILP and POP agree with the Pyomo model."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from mlsched_opt.io import from_document
from mlsched_opt.io.solution import Solution
from mlsched_opt.problems import GenerateSpec, check_solution, get_family
from mlsched_opt.problems.base import resolve
from mlsched_opt.problems.packing import arrays, bound as packing_bound, exact as exact_module
from mlsched_opt.problems.packing.decision import decision_from_x, x_from_decision
from mlsched_opt.problems.packing.exact import export_mps, lp_relaxation, solve_exact_arrays
from mlsched_opt.problems.packing.formulation import build_model
from mlsched_opt.problems.packing.methods import greedy
from mlsched_opt.problems.packing.pop import split
from mlsched_opt.problems.packing.view import packing_view
from mlsched_opt.solvers import SolveOptions, relaxation, solve

FAMILY = get_family("packing")
EXACT = SolveOptions(gap=0.0, time_limit=60)
CASES = [(seed, objective) for seed in range(6) for objective in ("weight", "servers")]


def _instance(catalog, seed: int, objective: str, jobs: int | None = None, servers: int = 5):
    jobs = jobs or (12 if objective == "weight" else 6)
    return from_document(FAMILY.generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed), catalog), catalog=catalog)


def _checked(inst, sol, objective):
    check = check_solution(inst, sol, options={"objective": objective})
    assert check.feasible, [str(v) for v in check.violations]
    return check.objective


@pytest.mark.parametrize(("seed", "objective"), CASES)
def test_array_lp_relaxation_equals_the_pyomo_models(seed, objective, catalog):
    inst = _instance(catalog, seed, objective)
    options = {"objective": objective}
    pyomo_lp = relaxation(build_model(inst, options), SolveOptions())
    mine = lp_relaxation(inst, options, SolveOptions())
    assert mine.status == pyomo_lp.status
    if pyomo_lp.status == "optimal":
        assert mine.bound == pytest.approx(pyomo_lp.objective, rel=1e-6, abs=1e-9)
    # the family's bound starts from this relaxation and is never weaker (rounded to integers here)
    assert resolve(FAMILY.relaxation) is packing_bound.relaxation
    if mine.bound is not None:
        family = FAMILY.lp_bound(inst, FAMILY.resolve_options(inst, options), SolveOptions()).bound
        assert (family <= np.floor(mine.bound + 1e-6)) if objective == "weight" else (family >= np.ceil(mine.bound - 1e-6))


@pytest.mark.parametrize(("seed", "objective"), CASES)
def test_array_lp_bound_holds_for_every_checked_answer(seed, objective, catalog):
    inst = _instance(catalog, seed, objective)
    bound = lp_relaxation(inst, {"objective": objective}, SolveOptions()).bound
    for method in ("exact", "ffd", "pop"):
        sol = FAMILY.run(inst, method, EXACT, {"objective": objective})
        if sol.decision is None:
            continue
        value = _checked(inst, sol, objective)
        assert bound is not None
        assert (value <= bound + 1e-6) if objective == "weight" else (value >= bound - 1e-6)


@pytest.mark.parametrize(("seed", "objective"), CASES)
def test_array_exact_proves_the_pyomo_models_optimum(seed, objective, catalog):
    inst = _instance(catalog, seed, objective)
    options = {"objective": objective}
    pyomo = solve(build_model(inst, options), EXACT)
    report, decision = solve_exact_arrays(inst, options, EXACT)
    # the MILP itself, without the FFD start and the LP bound that may settle it first
    milp = arrays.solve(arrays.build(packing_view(inst), objective), 60, gap=0.0)
    assert report.status == pyomo.status == milp.status
    if pyomo.status == "optimal":
        assert report.objective == pytest.approx(pyomo.objective) == milp.objective
        assert report.bound == pytest.approx(pyomo.objective)
        assert decision is not None
        sol = Solution.for_instance(inst, "packing", "exact", report, decision, FAMILY.resolve_options(inst, options))
        assert _checked(inst, sol, objective) == report.objective


def test_exact_method_takes_the_arrays_and_is_certified(catalog, monkeypatch):
    monkeypatch.setattr(exact_module, "ARRAY_MIN_PAIRS", 0)  # the array route for a model small enough to certify
    inst = _instance(catalog, 0, "weight")
    sol = FAMILY.run(inst, "exact", EXACT, {"objective": "weight"})
    assert sol.report.status == "optimal"
    assert sol.report.solver == "highs (arrays)"
    assert sol.report.certified_by
    _checked(inst, sol, "weight")


@pytest.mark.parametrize("seed", range(3))
def test_exact_without_the_milp_answers_the_search_with_a_proven_bound(seed, catalog, monkeypatch):
    """Without time to build the MILP, the answer is LNS's from the best greedy variant and the bound the
    tighter of the LP's and the configuration LP's: checked, no worse than FFD, bracketing the optimum."""
    monkeypatch.setattr(exact_module, "MILP_SETUP_S_PER_PAIR", 1e6)  # as if building it took forever
    inst = _instance(catalog, seed, "servers", jobs=8, servers=8)
    options = {"objective": "servers"}
    report, decision = solve_exact_arrays(inst, options, EXACT)
    ffd = FAMILY.run(inst, "ffd", EXACT, options)
    lp = lp_relaxation(inst, options, EXACT)
    optimum = solve(build_model(inst, options), EXACT)
    assert report.status in ("feasible", "optimal")
    if report.status == "feasible":
        assert "was not built" in report.message
    sol = Solution.for_instance(inst, "packing", "exact", report, decision, FAMILY.resolve_options(inst, options))
    assert _checked(inst, sol, "servers") == report.objective <= ffd.report.objective
    assert np.ceil(lp.bound - 1e-6) <= report.bound <= optimum.objective + 1e-9 <= report.objective + 1e-9


def test_lp_relaxation_gives_no_bound_when_out_of_time(catalog):
    inst = _instance(catalog, 0, "weight")
    report = lp_relaxation(inst, {"objective": "weight"}, SolveOptions(time_limit=1e-9))
    assert report.bound is None and report.status == "time-limit-no-solution"


@pytest.mark.parametrize("objective", ["weight", "servers"])
def test_a_decision_round_trips_through_the_solution_vector(objective, catalog):
    inst = _instance(catalog, 1, objective, jobs=10 if objective == "weight" else 4, servers=10)
    view = packing_view(inst)
    decision = greedy(view, objective)
    assert decision is not None
    model = arrays.build(view, objective)
    x = x_from_decision(view, model, decision)
    assert x is not None
    assert np.all(model.a @ x <= model.row_hi + 1e-9) and np.all(model.a @ x >= model.row_lo - 1e-9)
    assert decision_from_x(view, model, x) == decision


@pytest.mark.parametrize(("seed", "objective"), CASES[:6])
def test_pop_is_feasible_deterministic_and_exact_with_one_part(seed, objective, catalog):
    inst = _instance(catalog, seed, objective, jobs=30 if objective == "weight" else 12, servers=12)
    runs = [FAMILY.run(inst, "pop", EXACT, {"objective": objective, "parts": 3}) for _ in range(2)]
    assert "3 parts, 3 solved exactly" in runs[0].report.message  # not cut short: the decision is the seed's
    assert json.dumps(runs[0].decision, sort_keys=True) == json.dumps(runs[1].decision, sort_keys=True)
    if runs[0].decision is not None:
        assert _checked(inst, runs[0], objective) == runs[0].report.objective
    one = FAMILY.run(inst, "pop", EXACT, {"objective": objective, "parts": 1})
    exact = FAMILY.run(inst, "exact", EXACT, {"objective": objective})
    if exact.report.status == "optimal":
        assert one.report.objective == pytest.approx(exact.report.objective)
        _checked(inst, one, objective)


def test_pop_parts_are_disjoint_and_cover_everything(catalog):
    view = packing_view(_instance(catalog, 2, "weight", jobs=40, servers=20))
    parts = split(view, 4, seed=7)
    jobs = np.concatenate([j for j, _ in parts])
    servers = np.concatenate([s for _, s in parts])
    assert sorted(jobs) == list(range(40)) and sorted(servers) == list(range(20))
    assert all(len(s) in (4, 5, 6) for _, s in parts)  # every class dealt round-robin: near-equal parts
    again = split(view, 4, seed=7)
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(parts, again))


@pytest.mark.skipif(importlib.util.find_spec("pyscipopt") is None, reason="needs pyscipopt")
@pytest.mark.parametrize("objective", ["weight", "servers"])
def test_scip_reads_the_mps_export_and_finds_the_same_optimum(objective, catalog, tmp_path):
    import pyscipopt

    inst = _instance(catalog, 3, objective)
    path = tmp_path / "packing.mps"
    export_mps(inst, {"objective": objective}, str(path))
    scip = pyscipopt.Model()
    scip.hideOutput()
    scip.readProblem(str(path))
    scip.optimize()
    report, _ = solve_exact_arrays(inst, {"objective": objective}, EXACT)
    assert scip.getObjVal() == pytest.approx(report.objective)


def test_a_model_too_large_for_a_referee_is_not_certified(catalog, monkeypatch):
    """Past CERTIFY_MAX_PAIRS no referee is built (SCIP took 6 GB on 600k pairs): the optimum found is
    'feasible' with gap 0 and the message says why it is not confirmed."""
    monkeypatch.setattr(exact_module, "ARRAY_MIN_PAIRS", 0)
    monkeypatch.setattr(exact_module, "CERTIFY_MAX_PAIRS", 0)
    inst = _instance(catalog, 0, "weight")
    sol = FAMILY.run(inst, "exact", EXACT, {"objective": "weight"})
    assert sol.report.status == "feasible" and not sol.report.certified_by
    assert "too large for a referee" in sol.report.message
    assert sol.report.objective == sol.report.bound
    _checked(inst, sol, "weight")
