"""OASiS at scale under load (issue 32): the exact method's plan-improve search beyond the full MILP's
size, the rolling-horizon ``replan`` method, and a too-large model that falls back instead of refusing.

The search is forced on small instances by lowering :data:`.options.FULL_MODEL_MAX`, so its answers
can be compared with the certified optimum of the full MILP."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mlsched_opt.errors import ModelTooLarge
from mlsched_opt.io import from_document
from mlsched_opt.problems import REGISTRY, GenerateSpec, check_solution
from mlsched_opt.problems.oasis import exact as exact_module, formulation
from mlsched_opt.problems.oasis.generate import generate
from mlsched_opt.solvers import SolveOptions

from .test_oasis import assert_in_ranges, ranged_instance

FAMILY = REGISTRY["oasis"]
OPTIMUM = SolveOptions(gap=0.0, time_limit=60, certify=False)
TOL = 1e-6


def instance(seed: int, jobs: int = 8, servers: int = 2, slots: int = 6, **edits):
    doc = generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed, slots=slots, options={"epochs_min": 1, "epochs_max": 5}))
    return from_document(doc)


@pytest.fixture
def search_only(monkeypatch):
    """Every instance goes to the search, not to the full MILP."""
    monkeypatch.setattr(exact_module, "FULL_MODEL_MAX", -1)


def _search_against_optimum(inst, seed: int = 0):
    optimum = FAMILY.run(inst, "exact", OPTIMUM)
    assert optimum.report.status == "optimal"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(exact_module, "FULL_MODEL_MAX", -1)
        found = FAMILY.run(inst, "exact", SolveOptions(time_limit=60, seed=seed))
    assert check_solution(inst, found).feasible, check_solution(inst, found).violations
    return optimum.report, found


@pytest.mark.parametrize("seed", range(4))
def test_the_search_answers_checked_below_the_optimum_and_its_bound(seed):
    optimum, found = _search_against_optimum(instance(seed))
    report = found.report
    assert "plan-improve search" in report.message
    assert report.status == "feasible" and report.bound is not None
    assert report.objective <= optimum.objective + TOL * max(1.0, optimum.objective)
    assert report.bound >= optimum.objective - TOL * max(1.0, optimum.objective)  # the window LP is a bound
    oasis = FAMILY.run(instance(seed), "oasis", SolveOptions(time_limit=60)).report.objective
    assert report.objective >= oasis - TOL  # never below its quick start


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 9), servers=st.integers(1, 3))
def test_the_search_never_beats_the_certified_optimum(seed, jobs, servers):
    inst = instance(seed, jobs=jobs, servers=servers, slots=5)
    optimum, found = _search_against_optimum(inst, seed)
    assert found.report.objective <= optimum.objective + TOL * max(1.0, optimum.objective)
    assert found.report.bound is None or found.report.bound >= found.report.objective - TOL


def test_the_search_finds_the_optimum_of_the_toy(search_only):
    from mlsched_opt.io import load_instance

    from .conftest import ROOT

    inst = load_instance(ROOT / "instances" / "oasis-toy.toml")
    sol = FAMILY.run(inst, "exact", SolveOptions(time_limit=30))
    assert sol.report.objective == pytest.approx(37)  # OASiS gets 28
    assert check_solution(inst, sol).feasible


@pytest.mark.parametrize("seed", range(3))
def test_the_search_keeps_the_size_ranges(seed, search_only):
    inst = ranged_instance(seed)
    sol = FAMILY.run(inst, "exact", SolveOptions(time_limit=60, seed=seed))
    assert check_solution(inst, sol).feasible
    assert_in_ranges(inst, sol.decision)


def test_the_search_keeps_jobs_on_their_gpu_models(search_only):
    """Jobs that name a GPU model run only there, although the plan pools capacity over every server."""
    doc = generate(GenerateSpec(jobs=10, servers=3, seed=5, slots=6, options={"epochs_min": 1, "epochs_max": 3}))
    workers = [s for s in doc["cluster"]["servers"] if s["role"] == "worker"]
    for k, server in enumerate(workers):
        server["gpu_model"] = "V100" if k == 0 else "K80"
    for job in doc["jobs"][::2]:
        job["gpu_models"] = ["V100"]
    inst = from_document(doc)
    sol = FAMILY.run(inst, "exact", SolveOptions(time_limit=60))
    assert check_solution(inst, sol).feasible, check_solution(inst, sol).violations
    v100 = {s["name"] for s in workers if s["gpu_model"] == "V100"}
    for job in doc["jobs"][::2]:
        for entry in sol.decision["schedule"].get(job["id"], []):
            assert set(entry["workers"]) <= v100


def test_the_search_is_deterministic(search_only):
    inst = instance(11, jobs=12, servers=3, slots=8)
    a, b = (FAMILY.run(inst, "exact", SolveOptions(time_limit=60, seed=2)) for _ in range(2))
    assert json.dumps(a.decision, sort_keys=True) == json.dumps(b.decision, sort_keys=True)


def test_a_model_over_the_variable_limit_falls_back_instead_of_refusing(monkeypatch):
    """The full MILP refused for its size is ModelTooLarge, so ``exact`` answers with its quick start and
    the family's bound (before: an InstanceError, and the exact method refused)."""
    inst = instance(1)
    monkeypatch.setattr(formulation, "MAX_VARIABLES", 1)
    with pytest.raises(ModelTooLarge):
        FAMILY.build_model(inst, FAMILY.resolve_options(inst, {}))
    sol = FAMILY.run(inst, "exact", SolveOptions(time_limit=30))
    assert sol.report.status == "feasible" and "the full model is not built" in sol.report.message
    assert sol.report.bound is not None and check_solution(inst, sol).feasible


# --- replan: online -----------------------------------------------------------------------------

def _upto(decision, slot: int) -> dict:
    return {job: [e for e in entries if e["slot"] <= slot] for job, entries in decision["schedule"].items()
            if any(e["slot"] <= slot for e in entries)}


@pytest.mark.parametrize("seed", range(3))
def test_replan_decides_each_slot_from_the_jobs_arrived(seed):
    """Removing the jobs that arrive after slot t changes nothing replan runs up to slot t (the jobs
    are in arrival order, so the others keep their indices).  The offline search does look ahead."""
    doc = generate(GenerateSpec(jobs=16, servers=2, seed=seed, slots=10, options={"epochs_min": 1, "epochs_max": 4}))
    doc["jobs"].sort(key=lambda j: j["arrival_slot"])
    cut = sorted(j["arrival_slot"] for j in doc["jobs"])[len(doc["jobs"]) // 2]
    early = {**doc, "jobs": [j for j in doc["jobs"] if j["arrival_slot"] <= cut]}
    runs = [FAMILY.run(from_document(d), "replan", SolveOptions(time_limit=60)) for d in (doc, early)]
    for inst, sol in zip((from_document(doc), from_document(early)), runs):
        assert check_solution(inst, sol).feasible
    assert _upto(runs[0].decision, cut) == _upto(runs[1].decision, cut)


def test_replan_beats_oasis_where_arrival_order_hurts():
    """A burst of jobs: OASiS commits each on arrival, replan plans the burst jointly."""
    inst = instance(3, jobs=30, servers=2, slots=8)
    replan = FAMILY.run(inst, "replan", SolveOptions(time_limit=60))
    oasis = FAMILY.run(inst, "oasis", SolveOptions(time_limit=60))
    assert check_solution(inst, replan).feasible
    assert replan.report.objective >= oasis.report.objective
