"""The exact models demand exactly the work the checkers accept (locality and OASiS).

The checkers count a job done at ``done >= work_done_threshold(work) = work (1 - CHECK_TOL) -
CHECK_TOL``; the exact models once asked for more (locality: every work term rounded down to units
of ``V / 10^6``; OASiS: ``ceil(work - 1e-9)`` worker-slots), so a "certified optimal" answer was
beaten by a decision the checker accepts.  Each edge instance below has such a decision, written
out by hand: the exact optimum of every solver must equal its checker-accepted objective.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mlsched_opt.checking.core import CheckResult
from mlsched_opt.io import from_document
from mlsched_opt.problems import check_solution, get_family
from mlsched_opt.problems.locality.formulation import reaches, work_cover
from mlsched_opt.problems.locality.pcilp import LocalityJob
from mlsched_opt.problems.locality.view import locality_view
from mlsched_opt.problems.oasis.decision import worker_slots_needed
from mlsched_opt.problems.oasis.view import oasis_view
from mlsched_opt.solvers import SolveOptions, available_solvers
from mlsched_opt.tolerances import CHECK_TOL, work_done_threshold

SOLVERS = [name for name in ("highs", "cpsat", "scip") if available_solvers().get(name)]


def _job(id_: str, samples: int, weight: float = 1.0) -> dict:
    # 2 workers on one machine train 2 * 600 * 1000 / (1 + 2 * 0.0001 * 8/1000 / 50) = 1,199,999.96 samples per slot
    return {"id": id_, "weight": weight, "arrival_slot": 0, "work": {"epochs": 1, "samples_per_epoch": samples},
            "local_batch_size": 1000, "step": {"compute_s": 1.0, "ps_fan_in": 4, "gradient_mb": 0.0001},
            "workers": {"min": 1, "max": 2}, "demand": {"worker": {"gpu": 1, "cpu": 1}, "ps": {"cpu": 2}}}


def locality_doc(jobs: list[dict], gpus: int) -> dict:
    return {"format": "mlsched-instance/1", "name": "lo-edge", "problem": "locality",
            "time": {"slots": 2, "slot_s": 600.0},
            "cluster": {"intra_server_bandwidth_gbps": 50.0, "inter_server_bandwidth_gbps": 10.0,
                        "servers": [{"name": "m", "count": 1, "capacity": {"gpu": gpus, "cpu": 16}}]},
            "jobs": jobs}


#: one machine of 2 GPUs, 2 slots: A (weight 10, V = 1,200,001) needs both GPUs for one slot, then B
LO_EDGE2 = locality_doc([_job("A", 1200001, 10.0), _job("B", 900000)], gpus=2)
LO_EDGE2_BEST = {"admitted": ["A", "B"],
                 "schedule": {"A": [{"slot": 0, "workers": {"m": 2}, "ps": {"m": 1}}],
                              "B": [{"slot": 1, "workers": {"m": 2}, "ps": {"m": 1}}]}}
LO_EDGE = locality_doc([_job("j0", 1200001)], gpus=4)
LO_EDGE_BEST = {"admitted": ["j0"], "schedule": {"j0": [{"slot": 0, "workers": {"m": 2}, "ps": {"m": 1}}]}}

#: one slot of 8 s; work = 2 chunks x 4 minibatches x (1.0000005 + 2 x 62.5 x 8/1000 / 1) s / 8 s = 2.0000005 worker-slots
OASIS_EDGE = {
    "format": "mlsched-instance/1", "name": "oasis-edge", "problem": "oasis", "time": {"slots": 1, "slot_s": 8},
    "cluster": {"servers": [{"name": "worker", "role": "worker", "capacity": {"cpu": 4}},
                            {"name": "ps", "role": "ps", "capacity": {"cpu": 2}}]},
    "jobs": [{"id": "1", "arrival_slot": 0, "work": {"epochs": 1, "chunks": 2, "minibatches_per_chunk": 4},
              "step": {"compute_s": 1.0000005, "gradient_mb": 62.5, "worker_bandwidth_gbps": 1, "ps_bandwidth_gbps": 2},
              "workers": {"min": 1, "max": 2}, "ps": {"min": 1, "max": 2}, "demand": {"worker": {"cpu": 1}, "ps": {"cpu": 1}},
              "utility": {"kind": "table", "values": [10]}}],
}


def _accepted(problem: str, inst, decision: dict, options: dict | None = None) -> float | None:
    family = get_family(problem)
    result = CheckResult()
    family.check(inst, decision, family.resolve_options(inst, options or {}), result)
    return result.objective if result.feasible else None


def _exact_equals(problem: str, doc: dict, decision: dict, options: dict, solver: str, expected: float | None = None) -> None:
    """The exact optimum (``solver``) is the objective of ``decision``, which the checker accepts (at
    ``expected`` when given), and the exact answer passes the checker at that objective."""
    inst = from_document(doc)
    best = _accepted(problem, inst, decision, options)
    assert best is not None, "the checker rejects the hand-written decision"
    if expected is not None:
        assert best == pytest.approx(expected)
    exact = get_family(problem).run(inst, "exact", SolveOptions(solver=solver, gap=0.0, time_limit=60, threads=1), options)
    assert exact.report.status == "optimal", (solver, exact.report.status, exact.report.message)
    assert exact.report.objective == pytest.approx(best, abs=1e-6), (solver, exact.report.objective, best)
    assert exact.report.bound == pytest.approx(best, abs=1e-6)
    verdict = check_solution(inst, exact, options=options)
    assert verdict.feasible, verdict.violations
    assert verdict.objective == pytest.approx(best, abs=1e-6)


def test_locality_edge_is_below_v_but_within_the_checkers_tolerance():
    """The instance is an edge: 2 co-located workers train less than V, yet enough for the checker."""
    a = locality_view(from_document(LO_EDGE)).jobs[0]
    assert 2 * a.q_in < a.work and reaches(a, 2, 0) and not reaches(a, 1, 0)
    cover = work_cover(a, 2)
    assert cover.holds(2, 0) and not cover.holds(1, 0) and not cover.holds(0, 1)
    assert all(cover.holds(x, y) == reaches(a, x, y) for x in range(cover.reach + 1) for y in range(cover.reach + 1))


@settings(max_examples=150, deadline=None)
@given(work=st.floats(1.0, 1e9), per_in=st.floats(1e-3, 1.0), ratio=st.floats(0.05, 1.0), slots=st.integers(1, 5),
       w_max=st.integers(1, 6), arrival=st.integers(0, 4))
def test_completion_rows_accept_exactly_the_checkers_work(work, per_in, ratio, slots, w_max, arrival):
    """On every integer (co-located, spread) worker-slot pair of the horizon, the rows hold iff the checker's rule does."""
    arrival = min(arrival, slots - 1)
    q_in = per_in * work / w_max
    job = LocalityJob("j", arrival, work, q_in, q_in * ratio, np.array([1.0]), np.array([1.0]), 2, w_max)
    cover = work_cover(job, slots)
    assert all(isinstance(x, int) and x >= 0 for row in cover.rows for x in row)
    for a in range(cover.reach + 1):
        for b in range(cover.reach + 1):
            assert cover.holds(a, b) == reaches(job, a, b), (a, b, cover.rows)


# --- OASiS -----------------------------------------------------------------------------------------

def _oasis_decision(workers: int) -> dict:
    return {"admitted": ["1"], "schedule": {"1": [{"slot": 0, "workers": {"worker": workers}, "ps": {"ps": 1}}]}}


def test_oasis_needs_exactly_the_worker_slots_the_checker_accepts():
    inst = from_document(OASIS_EDGE)
    job = oasis_view(inst).jobs[0]
    assert job.work == pytest.approx(2.0000005) and worker_slots_needed(job) == 2
    assert _accepted("oasis", inst, _oasis_decision(2)) is not None
    assert _accepted("oasis", inst, _oasis_decision(1)) is None   # one worker-slot short: rule "work"


# --- the shared rule -----------------------------------------------------------------------------

@pytest.mark.parametrize("work", [1.0, 2.0000005, 1200001.0, 12.0, 1e15])
def test_the_threshold_is_the_checkers_formula(work):
    assert work_done_threshold(work) == work * (1 - CHECK_TOL) - CHECK_TOL


# --- capacity: the exact models accept the load the checkers accept --------------------------------
#
# The checkers accept a load up to capacity_limit(cap) = cap (1 + CHECK_TOL) + CHECK_TOL (locality,
# OASiS, harmony) or core_capacity_limit(cap) = cap + CHECK_TOL max(1, cap) (packing, SMD); each edge
# instance below has k tasks of a demand just above cap / k, which fit only within that tolerance.

from mlsched_opt.tolerances import capacity_limit, core_capacity_limit  # noqa: E402


def _server(name: str, cap: dict, role: str | None = None) -> dict:
    return {"name": name, "capacity": cap, **({"role": role} if role else {})}


#: 4 workers of 1.000001 cpu on a 4-cpu worker server (4.000004 <= 4.000005): utility 10 only then
OASIS_CAP = {
    "format": "mlsched-instance/1", "name": "oasis-cap", "problem": "oasis", "time": {"slots": 1, "slot_s": 1},
    "cluster": {"servers": [_server("worker", {"cpu": 4}, "worker"), _server("ps", {"cpu": 2}, "ps")]},
    "jobs": [{"id": "1", "arrival_slot": 0, "work": {"epochs": 1, "chunks": 4, "minibatches_per_chunk": 1},
              "step": {"compute_s": 1.0, "gradient_mb": 0, "worker_bandwidth_gbps": 1, "ps_bandwidth_gbps": 4},
              "workers": {"min": 1, "max": 4}, "ps": {"min": 1, "max": 4},
              "demand": {"worker": {"cpu": 1.000001}, "ps": {"cpu": 1}}, "utility": {"kind": "table", "values": [10]}}],
}
OASIS_CAP_BEST = {"admitted": ["1"], "schedule": {"1": [{"slot": 0, "workers": {"worker": 4}, "ps": {"ps": 1}}]}}

#: 2 workers of 2.000001 cpu on a 4-cpu server (4.000002 <= 4.000004): weight 5 only then
PACKING_CAP = {"format": "mlsched-instance/1", "name": "packing-cap", "problem": "packing",
               "cluster": {"servers": [_server("s", {"gpu": 4, "cpu": 4})]},
               "jobs": [{"id": "a", "architecture": "allreduce", "workers": {"count": 2},
                         "demand": {"worker": {"gpu": 1, "cpu": 2.000001}}, "weight": 5}]}
PACKING_CAP_BEST = {"admitted": ["a"], "placement": {"a": {"workers": {"s": 2}, "ps": {}}}}


def _smd_job(id_: str, gamma1: float) -> dict:
    return {"id": id_, "sgd": "async", "demand": {"worker": {"gpu": 1, "cpu": 1}, "ps": {"cpu": 1}},
            "limit": {"gpu": 2, "cpu": 2.000001}, "workers": {"min": 1, "max": 1}, "ps": {"min": 1, "max": 1},
            "speed_model": {"theta": [1, 0, 12, 3]},
            "utility": {"kind": "sigmoid", "gamma1": gamma1, "gamma2": 4, "gamma3": 100, "delay_unit": "seconds"}}


#: two limits of 2.000001 cpu on a 4-cpu cluster (4.000002 <= 4.000004): both jobs only then
SMD_CAP = {"format": "mlsched-instance/1", "name": "smd-cap", "problem": "smd",
           "cluster": {"servers": [_server("cluster", {"gpu": 8, "cpu": 4})]},
           "jobs": [_smd_job("A", 40), _smd_job("B", 30)]}
SMD_CAP_BEST = {"admitted": ["A", "B"], "extra": {"allocation": {"A": {"workers": 1, "ps": 1}, "B": {"workers": 1, "ps": 1}}}}

#: 2 workers of 4.000002 cpu on one 8-cpu server (8.000004 <= 8.000009): the job runs only then
HARMONY_CAP = {"format": "mlsched-instance/1", "name": "harmony-cap", "problem": "harmony",
               "time": {"slots": 1, "slot_s": 300.0},
               "cluster": {"servers": [_server("s", {"cpu": 8, "gpu": 2, "memory_gb": 48})]},
               "jobs": [{"id": "j1", "model": "ctc", "architecture": "allreduce", "workers": {"count": 2},
                         "work": {"epochs": 1, "samples_per_epoch": 10000}, "arrival_slot": 0,
                         "demand": {"worker": {"cpu": 4.000002, "gpu": 1, "memory_gb": 4}}}]}

#: 1 machine of 18 cpu; 2 workers of 8.000004 cpu + 1 PS of 2 cpu = 18.000008 <= 18.000019
LO_CAP = locality_doc([{**_job("j0", 1200001), "demand": {"worker": {"gpu": 1, "cpu": 8.000004}, "ps": {"cpu": 2}}}], gpus=4)
LO_CAP["cluster"]["servers"][0]["capacity"]["cpu"] = 18
LO_CAP_BEST = LO_EDGE_BEST


@pytest.mark.parametrize("solver", SOLVERS)
def test_packing_servers_mode_opens_one_server(solver):
    doc = {**PACKING_CAP, "cluster": {"servers": [_server("s", {"gpu": 4, "cpu": 4}), _server("t", {"gpu": 4, "cpu": 4})]}}
    _exact_equals("packing", doc, PACKING_CAP_BEST, {"objective": "servers"}, solver)


@pytest.mark.parametrize("solver", SOLVERS)
def test_smd_capacity_admits_both(solver):
    inst = from_document(SMD_CAP)
    best = _accepted("smd", inst, SMD_CAP_BEST)
    assert best is not None and best > 69.0
    _exact_equals("smd", SMD_CAP, SMD_CAP_BEST, {}, solver)


def test_harmony_exact_places_within_the_checkers_limit():
    inst = from_document(HARMONY_CAP)
    exact = get_family("harmony").run(inst, "exact", SolveOptions(gap=0.0, time_limit=60, threads=1), {})
    assert exact.report.status == "optimal", exact.report.message
    verdict = check_solution(inst, exact)
    assert verdict.feasible, verdict.violations
    assert verdict.objective == pytest.approx(exact.report.objective)


@pytest.mark.parametrize("cap", [0.0, 0.5, 1.0, 4.0, 18.0, 1e6])
def test_the_capacity_limits_are_what_the_checkers_accept(cap):
    """At the limit a load is accepted, one float above it is rejected, by each family's checker formula."""
    import math

    limit, core = capacity_limit(cap), core_capacity_limit(cap)
    assert limit == cap * (1 + CHECK_TOL) + CHECK_TOL and core == cap + CHECK_TOL * max(1.0, cap)
    assert core_capacity_limit(np.array([cap]))[0] == core
    for accepted, rule in ((limit, lambda load: not load > cap * (1 + CHECK_TOL) + CHECK_TOL),
                           (core, lambda load: not load > cap + CHECK_TOL * max(1.0, cap))):
        assert rule(accepted) and not rule(math.nextafter(accepted, math.inf))


@pytest.mark.parametrize("problem, doc, good, bad_key", [
    ("packing", PACKING_CAP, PACKING_CAP_BEST, None),
    ("oasis", OASIS_CAP, OASIS_CAP_BEST, None),
])
def test_checkers_accept_the_edge_loads(problem, doc, good, bad_key):
    """The checkers themselves (not only their formulas) accept the edge loads; a demand past the limit is refused."""
    assert _accepted(problem, from_document(doc), good) is not None
    bad = json_copy(doc)
    demand = bad["jobs"][0]["demand"]["worker"]
    cap = bad["cluster"]["servers"][0]["capacity"]["cpu"]
    k = 2 if problem == "packing" else 4
    limit = core_capacity_limit(cap) if problem == "packing" else capacity_limit(cap)
    demand["cpu"] = (limit + 1e-7) / k
    assert _accepted(problem, from_document(bad), good) is None


def json_copy(doc: dict) -> dict:
    import copy

    return copy.deepcopy(doc)


# --- sizes the views derive from a limit (review of the audit's fixes) -------------------------------

def _bound_is_at_least(problem: str, inst, value: float, options: dict) -> None:
    family = get_family(problem)
    report = family.lp_bound(inst, family.resolve_options(inst, options),
                             SolveOptions(solver="highs", gap=0.0, time_limit=60, threads=1))
    best = report.bound
    assert best is not None
    assert (best <= value + 1e-9) if family.sense(family.resolve_options(inst, options)) == "min" else (best >= value - 1e-9)


def test_oasis_ps_max_serves_the_workers_the_checkers_bandwidth_rule_accepts():
    """ps.max PSs serve as many workers as the checker's bandwidth rule lets them (2 here, where
    the strict quotient gives 1): the exact optimum and the bound see the checker's 10."""
    doc = {**OASIS_EDGE, "jobs": [dict(OASIS_EDGE["jobs"][0], ps={"min": 1, "max": 1},
                                       step={"compute_s": 1.0, "gradient_mb": 62.5, "worker_bandwidth_gbps": 1.0000001,
                                             "ps_bandwidth_gbps": 2})]}
    decision = {"admitted": ["1"], "schedule": {"1": [{"slot": 0, "workers": {"worker": 2}, "ps": {"ps": 1}}]}}
    _exact_equals("oasis", doc, decision, {}, "highs")
    _bound_is_at_least("oasis", from_document(doc), 10.0, {})


@pytest.mark.parametrize("placement", ["free", "with-workers"])
def test_locality_job_size_counts_the_capacity_the_checker_accepts(placement):
    """Four workers of one GPU fit a machine of 3.9999995 GPUs for the checker: the job may take four."""
    job = _job("A", 2_000_000)
    job["workers"]["max"] = 4
    doc = locality_doc([job], gpus=3.9999995)
    decision = {"admitted": ["A"], "schedule": {"A": [{"slot": 0, "workers": {"m": 4}, "ps": {"m": 1}}]}}
    assert locality_view(from_document(doc)).jobs[0].w_max == 4
    _exact_equals("locality", doc, decision, {"ps_placement": placement}, "highs")
    _bound_is_at_least("locality", from_document(doc), 1.0, {"ps_placement": placement})


def test_smd_per_job_limit_is_the_checkers():
    """Rule C2 as the checker reads it: two workers within a GPU limit of 1.9999999."""
    doc = {"format": "mlsched-instance/1", "name": "smd-c2", "problem": "smd",
           "cluster": {"servers": [{"name": "cluster", "capacity": {"gpu": 8, "cpu": 24}}]},
           "jobs": [{"id": "C", "sgd": "async", "demand": {"worker": {"gpu": 1, "cpu": 2}, "ps": {"cpu": 2}},
                     "limit": {"gpu": 1.9999999, "cpu": 12}, "workers": {"min": 1, "max": 2}, "ps": {"min": 1, "max": 2},
                     "speed_model": {"theta": [1, 0, 12, 3]},
                     "utility": {"kind": "sigmoid", "gamma1": 40, "gamma2": 4, "gamma3": 10, "delay_unit": "seconds"}}]}
    decision = {"admitted": ["C"], "extra": {"allocation": {"C": {"workers": 2, "ps": 2}}}}
    _exact_equals("smd", doc, decision, {}, "highs")
    _bound_is_at_least("smd", from_document(doc), float(_accepted("smd", from_document(doc), decision) or 0.0), {})


# --- the edge instances: each exact optimum is the checker's, on every solver ----------------------

EDGES = {
    # work: V just above what 2 co-located workers train (locality) / 2.0000005 worker-slots (OASiS)
    "locality-two-jobs-free": ("locality", LO_EDGE2, LO_EDGE2_BEST, {"ps_placement": "free"}, 12.0),
    "locality-two-jobs-with-workers": ("locality", LO_EDGE2, LO_EDGE2_BEST, {"ps_placement": "with-workers"}, 12.0),
    "locality-one-job": ("locality", LO_EDGE, LO_EDGE_BEST, {}, 1.0),
    "oasis-work": ("oasis", OASIS_EDGE, _oasis_decision(2), {}, 10.0),
    # capacity: loads within the checker's slack
    "oasis-capacity": ("oasis", OASIS_CAP, OASIS_CAP_BEST, {}, 10.0),
    "locality-capacity-free": ("locality", LO_CAP, LO_CAP_BEST, {"ps_placement": "free"}, 1.0),
    "locality-capacity-with-workers": ("locality", LO_CAP, LO_CAP_BEST, {"ps_placement": "with-workers"}, 1.0),
    "packing-capacity": ("packing", PACKING_CAP, PACKING_CAP_BEST, {}, 5.0),
}


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("case", sorted(EDGES))
def test_the_exact_optimum_is_the_checkers(case, solver):
    problem, doc, decision, options, expected = EDGES[case]
    _exact_equals(problem, doc, decision, options, solver, expected)
