"""Packing's configuration LP bound, its Lagrangian bound at any prices, and price and branch.

Every bound is checked against the exhaustive oracle (tiny instances) and the certified exact
optimum (small generated ones), at every stopping point of column generation, and against every
checked answer of the heuristics.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from mlsched_opt.errors import InstanceError
from mlsched_opt.io import from_document
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.problems.packing import bound, master
from mlsched_opt.problems.packing.view import packing_view
from mlsched_opt.solvers import SolveOptions
from tests.test_oracle_packing import oracle, tiny

FAMILY = get_family("packing")
EXACT = SolveOptions(gap=0.0, time_limit=60)
HEURISTICS = ("ffd", "ffd-large", "bfd", "lns", "pop")


def _valid(value: float, proven: float | None, objective: str) -> bool:
    """``proven`` bounds ``value`` (an optimum or any checked answer) on the right side."""
    assert proven is not None
    return proven <= value + 1e-9 if objective == "servers" else proven >= value - 1e-9


def _generated(catalog, seed: int, objective: str, jobs: int = 10, servers: int = 6):
    return from_document(FAMILY.generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed), catalog), catalog=catalog)


def _coarse(jobs: int = 5) -> dict:
    """Ten 4-GPU servers and jobs of one 3-GPU task: one job per server, so ``jobs`` servers at least,
    where the assignment LP packs 4/3 of a job per server (3.75 servers for 5 jobs)."""
    return {"format": "mlsched-instance/1", "name": "coarse", "problem": "packing",
            "cluster": {"servers": [{"name": "s", "count": 10, "capacity": {"gpu": 4, "cpu": 32}}]},
            "jobs": [{"id": f"j{n}", "architecture": "allreduce", "workers": {"count": 1}, "weight": 1,
                      "demand": {"worker": {"gpu": 3, "cpu": 4}}} for n in range(jobs)]}


def _with_optimum(doc: dict, objective: str):
    """The instance and the oracle's optimum (hypothesis skips documents refused on loading or infeasible)."""
    try:
        inst = from_document(doc)
    except InstanceError:
        assume(False)
    value, _ = oracle(inst, objective)
    assume(value is not None)
    return inst, value


def test_the_configuration_lp_is_stronger_than_the_assignment_lp():
    """The coarse instance: the LP bound is 4 servers (3.75 rounded up), the configuration LP's 5, the optimum."""
    inst = from_document(_coarse())
    options = FAMILY.resolve_options(inst, {"objective": "servers"})
    family = FAMILY.lp_bound(inst, options, SolveOptions())
    assert family.bound == 5.0, family.message
    assert FAMILY.run(inst, "exact", EXACT, options).report.objective == 5.0
    # weight on 3 of the servers: the LP admits 4 (12 GPUs), a server holds one job
    doc = _coarse(jobs=6)
    doc["cluster"]["servers"][0]["count"] = 3
    inst = from_document(doc)
    assert FAMILY.lp_bound(inst, FAMILY.resolve_options(inst, {}), SolveOptions()).bound == 3.0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(tiny(), st.sampled_from(["weight", "servers"]), st.integers(0, 3))
def test_the_bound_never_passes_the_oracles_optimum_wherever_column_generation_stops(doc, objective, rounds):
    inst, value = _with_optimum(doc, objective)
    cfg = bound.configs(packing_view(inst))
    cg = bound.column_generation(cfg, objective, time.perf_counter() + 30, max_rounds=rounds,
                                 center=bound.lp_prices(cfg, objective, 30).pi)
    if cg.bound is not None:
        assert _valid(value, cg.bound, objective)
    report = FAMILY.lp_bound(inst, FAMILY.resolve_options(inst, {"objective": objective}), SolveOptions())
    assert _valid(value, report.bound, objective)


# a price near 0 (hypothesis tries subnormals) made a breakpoint overflow: an error, not a warning
@pytest.mark.filterwarnings("error::RuntimeWarning")
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(tiny(), st.sampled_from(["weight", "servers"]), st.lists(st.floats(0, 3), min_size=8, max_size=8))
def test_the_lagrangian_bound_holds_at_any_prices(doc, objective, prices):
    """Validity never rests on column generation: any prices ``pi >= 0`` with exact pricing bound the optimum."""
    inst, value = _with_optimum(doc, objective)
    cfg = bound.configs(packing_view(inst))
    pi = np.resize(np.array(prices), cfg.types)
    uppers = np.array([bound.Pricer(cfg, k).price(pi, 10)[0] for k in range(cfg.shapes)])
    proven = bound._lagrangian(pi, uppers, cfg, objective == "servers")
    assert math.isfinite(proven) and _valid(value, proven, objective)


@pytest.mark.parametrize("objective", ["weight", "servers"])
@pytest.mark.parametrize("seed", range(4))
def test_the_bound_holds_against_the_certified_optimum_and_every_heuristic(seed, objective, catalog):
    inst = _generated(catalog, seed, objective, jobs=10 if objective == "weight" else 6)
    options = {"objective": objective}
    proven = FAMILY.lp_bound(inst, FAMILY.resolve_options(inst, options), SolveOptions()).bound
    exact = FAMILY.run(inst, "exact", EXACT, options)
    if exact.report.status == "infeasible":
        return
    assert exact.report.status == "optimal" and exact.report.certified_by
    assert _valid(exact.report.objective, proven, objective)
    for method in HEURISTICS:
        sol = FAMILY.run(inst, method, EXACT, options)
        if sol.decision is not None:
            value, why = FAMILY._evaluate(inst, FAMILY.resolve_options(inst, options), sol.decision)
            assert value is not None, (method, why)
            assert _valid(value, proven, objective), method


@pytest.mark.parametrize("objective", ["weight", "servers"])
def test_column_generation_converges_to_the_master_value(objective, catalog):
    """Run to convergence, the proven bound is the master LP's value rounded (nothing prices out)."""
    inst = _generated(catalog, 1, objective, jobs=12, servers=8)
    cfg = bound.configs(packing_view(inst))
    cg = bound.column_generation(cfg, objective, time.perf_counter() + 60, max_rounds=10_000)
    assert cg.converged or cg.stopped == "rounded bound meets the master's rounded value"
    servers = objective == "servers"
    assert cg.bound == bound._rounded(cg.value, servers)


@pytest.mark.parametrize("objective", ["weight", "servers"])
@pytest.mark.parametrize("seed", range(3))
def test_price_and_branch_gives_a_checked_decision_within_the_bound(seed, objective, catalog):
    inst = _generated(catalog, seed, objective, jobs=12 if objective == "weight" else 8, servers=8)
    cfg = bound.configs(packing_view(inst))
    cg = bound.column_generation(cfg, objective, time.perf_counter() + 60, max_rounds=50)
    decision = master.integer_master(cfg, objective, cg, 30)
    if decision is None:
        assert objective == "servers"  # no column set covering every task, or none found in the limit
        return
    value, why = FAMILY._evaluate(inst, FAMILY.resolve_options(inst, {"objective": objective}), decision)
    assert value is not None, why
    assert _valid(value, cg.bound, objective)
