"""Packing's greedy variants, the type-aggregated model, large-neighbourhood search and POP's work limit."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from mlsched_opt.io import from_document
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.problems.packing import aggregate, arrays, bound, lns
from mlsched_opt.problems.packing.decision import objective_value
from mlsched_opt.problems.packing.formulation import build_model
from mlsched_opt.problems.packing.methods import best_greedy, greedy
from mlsched_opt.problems.packing.view import checker_limits, packing_view
from mlsched_opt.solvers import SolveOptions, solve

FAMILY = get_family("packing")
EXACT = SolveOptions(gap=0.0, time_limit=60)
CASES = [(seed, objective) for seed in range(4) for objective in ("weight", "servers")]


def _instance(catalog, seed: int, objective: str, jobs: int | None = None, servers: int = 6):
    jobs = jobs or (12 if objective == "weight" else 8)
    return from_document(FAMILY.generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed), catalog), catalog=catalog)


def _value(inst, objective, decision) -> float:
    value, why = FAMILY._evaluate(inst, FAMILY.resolve_options(inst, {"objective": objective}), decision)
    assert value is not None, why
    return value


def _no_worse(a: float, b: float, objective: str) -> bool:
    return a <= b + 1e-9 if objective == "servers" else a >= b - 1e-9


@pytest.mark.parametrize(("seed", "objective"), CASES)
def test_the_greedy_variants_are_checked_and_ffd_is_unchanged(seed, objective, catalog):
    inst = _instance(catalog, seed, objective)
    view = packing_view(inst)
    options = {"objective": objective}
    values = {}
    for method in ("ffd", "ffd-large", "bfd"):
        sol = FAMILY.run(inst, method, EXACT, options)
        if sol.decision is not None:
            values[method] = _value(inst, objective, sol.decision)
            assert values[method] == sol.report.objective
    # ffd is the instance-order first fit it always was
    assert FAMILY.run(inst, "ffd", EXACT, options).decision == greedy(view, objective)
    decision, name = best_greedy(view, objective)
    if values:
        assert decision is not None and objective_value(view, decision, objective) == (
            min(values.values()) if objective == "servers" else max(values.values()))
        assert name in values


def test_largest_first_opens_the_big_server_and_best_fit_fills_the_open_one():
    """A 2-GPU server listed before an 8-GPU one: FFD opens both for jobs of 4 + 2 + 2 GPUs, largest-first one."""
    doc = {"format": "mlsched-instance/1", "name": "order", "problem": "packing",
           "cluster": {"servers": [{"name": "small", "capacity": {"gpu": 2, "cpu": 16}},
                                   {"name": "big", "capacity": {"gpu": 8, "cpu": 64}}]},
           "jobs": [{"id": f"j{n}", "architecture": "allreduce", "workers": {"count": 1}, "weight": 1,
                     "demand": {"worker": {"gpu": g, "cpu": 2}}} for n, g in enumerate([4, 2, 2])]}
    inst = from_document(doc)
    options = {"objective": "servers"}
    assert FAMILY.run(inst, "ffd", EXACT, options).report.objective == 2
    for method in ("ffd-large", "bfd"):
        sol = FAMILY.run(inst, method, EXACT, options)
        assert sol.report.objective == 1 and _value(inst, "servers", sol.decision) == 1


@pytest.mark.parametrize(("seed", "objective"), CASES)
def test_the_aggregated_model_has_the_pyomo_models_optimum(seed, objective, catalog):
    """Aggregating tasks by type loses nothing: the whole instance as one window has the exact optimum."""
    inst = _instance(catalog, seed, objective)
    view = packing_view(inst)
    cfg = bound.configs(view)
    pyomo = solve(build_model(inst, {"objective": objective}), EXACT)
    win = aggregate.build_window(cfg, objective, np.arange(len(view.jobs)), np.arange(len(view.capacity)),
                                 checker_limits(view).capacity)
    res = arrays.solve(win, 60, gap=0.0)
    assert res.status == pyomo.status
    if res.status == "optimal":
        assert res.objective == pytest.approx(pyomo.objective)
        _admitted, tasks = aggregate.decide(cfg, win, res.x)
        assert _value(inst, objective, aggregate.placement_of(view, tasks)) == pytest.approx(pyomo.objective)


def test_an_integral_objective_stops_at_the_rounded_bound(catalog):
    inst = _instance(catalog, 1, "servers", jobs=8, servers=12)
    model = arrays.build(packing_view(inst), "servers")
    res = arrays.solve(model, 60, gap=0.0, integral=True)
    assert res.status == "optimal" and res.bound == res.objective == float(int(res.objective))


@pytest.mark.parametrize(("seed", "objective"), CASES)
def test_lns_is_checked_no_worse_than_its_start_and_repeatable(seed, objective, catalog):
    inst = _instance(catalog, seed, objective, jobs=16 if objective == "weight" else 10, servers=8)
    options = {"objective": objective}
    start, _ = best_greedy(packing_view(inst), objective)
    runs = [FAMILY.run(inst, "lns", EXACT, options) for _ in range(2)]
    assert json.dumps(runs[0].decision, sort_keys=True) == json.dumps(runs[1].decision, sort_keys=True)
    if start is None:
        return
    value = _value(inst, objective, runs[0].decision)
    assert value == runs[0].report.objective
    assert _no_worse(value, objective_value(packing_view(inst), start, objective), objective)
    assert "time limit" not in runs[0].report.message  # stopped by its work limits


def test_lns_finds_what_the_greedy_misses():
    """One 6-GPU server, a 4-GPU job of weight 3 and two 3-GPU jobs of weight 2: the densest first
    (the 4-GPU job) leaves no room for a 3, so FFD admits 3; LNS swaps it for both 3s (weight 4)."""
    doc = {"format": "mlsched-instance/1", "name": "swap", "problem": "packing",
           "cluster": {"servers": [{"name": "s", "capacity": {"gpu": 6, "cpu": 64}}]},
           "jobs": [{"id": f"j{n}", "architecture": "allreduce", "workers": {"count": 1}, "weight": w,
                     "demand": {"worker": {"gpu": g, "cpu": 2}}} for n, (g, w) in enumerate([(4, 3), (3, 2), (3, 2)])]}
    inst = from_document(doc)
    options = {"objective": "weight"}
    assert FAMILY.run(inst, "ffd", EXACT, options).report.objective == 3
    sol = FAMILY.run(inst, "lns", EXACT, options)
    assert sol.report.objective == 4 and _value(inst, "weight", sol.decision) == 4


def test_lns_stops_at_the_target(catalog):
    inst = _instance(catalog, 0, "servers", jobs=8, servers=12)
    view = packing_view(inst)
    start, _ = best_greedy(view, "servers")
    assert start is not None
    value = objective_value(view, start, "servers")
    out = lns.search(bound.configs(view), "servers", start, time.perf_counter() + 60, target=value)
    assert out.windows == 0 and out.stopped == "the incumbent meets the bound"


@pytest.mark.parametrize("objective", ["weight", "servers"])
def test_pop_parts_finish_within_their_node_limit_and_repeat(objective, catalog):
    inst = _instance(catalog, 2, objective, jobs=40 if objective == "weight" else 16, servers=16)
    options = {"objective": objective, "parts": 4}
    runs = [FAMILY.run(inst, "pop", EXACT, options) for _ in range(2)]
    assert "cut short" not in runs[0].report.message
    assert json.dumps(runs[0].decision, sort_keys=True) == json.dumps(runs[1].decision, sort_keys=True)
    if runs[0].decision is not None:
        assert _value(inst, objective, runs[0].decision) == runs[0].report.objective
