"""An exact solve starts from the family's heuristic answer (issue 18): the start must be a point
of the exact model (every constraint holds at the start's values), worth what the heuristic is
worth, and never change the proven optimum."""

from __future__ import annotations

import pyomo.environ as pyo
import pytest

from mlsched_opt.io import load_instance
from mlsched_opt.problems import REGISTRY, get_family
from mlsched_opt.solvers import SolveOptions

from .conftest import ROOT

STARTED = sorted(name for name, family in REGISTRY.items() if family.start is not None)


def test_the_families_with_a_start():
    assert {"oasis", "smd"} <= set(STARTED)


@pytest.mark.parametrize("problem", STARTED)
@pytest.mark.parametrize("seed", range(4))
def test_the_start_is_a_point_of_the_exact_model(problem, seed, run, tmp_path):
    path = tmp_path / f"{problem}.json"
    assert run("generate", "--problem", problem, "--jobs", "8", "--servers", "3", "--seed", seed, "-o", path)[0] == 0
    family = get_family(problem)
    inst = load_instance(path)
    options = family.resolve_options(inst, {})
    model = family.build_model(inst, options)
    note = family.start(inst, options, model, 30.0)
    assert note.startswith("start:"), note
    assert model._start
    for var, value in model._start:
        var.set_value(value, skip_validation=True)
    for var in model.component_data_objects(pyo.Var, active=True):
        if var.value is None:  # a partial start: the solver completes the rest
            pytest.skip("partial start")
    broken = []
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        if (con.lower is not None and body < pyo.value(con.lower) - 1e-6) or (con.upper is not None and body > pyo.value(con.upper) + 1e-6):
            broken.append(con.name)
    assert not broken, broken[:5]
    started = pyo.value(next(model.component_data_objects(pyo.Objective, active=True)))
    exact = family.run(inst, "exact", SolveOptions(gap=0.0, certify=False), options).report
    assert exact.status == "optimal" and f"start: {len(model._start)} values" in exact.message
    assert started <= exact.objective + 1e-6 if exact.sense == "max" else started >= exact.objective - 1e-6


def test_an_exact_solve_says_where_it_started():
    family = get_family("oasis")
    report = family.run(load_instance(ROOT / "instances" / "oasis-toy.toml"), "exact", SolveOptions(certify=False)).report
    assert report.status == "optimal" and report.objective == pytest.approx(37.0)
    assert "start: the OASiS schedule, utility 28" in report.message
