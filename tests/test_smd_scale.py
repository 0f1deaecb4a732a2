"""smd at production scale (issue 18): the faster vertex LPs of Algorithm 1, the one-point
shortcut, the anytime deadline, the knapsack LP bound on arrays, the vectorized checker, and
Philly jobs on Alibaba's cluster end to end.

No test depends on wall-clock speed: they assert on results (equal optima, valid bounds,
checked answers, a bound returned or refused at a time limit)."""

from __future__ import annotations

import inspect
import json
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mlsched_opt.checking.core import CheckResult
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import GenerateSpec, check_solution, get_family
from mlsched_opt.problems.smd.bound import lp_relaxation
from mlsched_opt.problems.smd.check import check
from mlsched_opt.problems.smd.formulation import build_model
from mlsched_opt.problems.smd.inner import algorithm1, best_integer
from mlsched_opt.problems.smd.mkp import frieze_clarke
from mlsched_opt.problems.smd.ratios import SidedPolygon, polygon, ratio_terms, side_rows, vertex_minimum
from mlsched_opt.problems.smd.view import smd_view
from mlsched_opt.solvers import SolveOptions, relaxation

from .test_smd import toy_job

SMD = get_family("smd")
EXACT = SolveOptions(gap=0.0, time_limit=60)


def generated(seed: int, jobs: int = 5, servers: int = 3, **options):
    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed, options=SMD.parse_generate_options(options))
    return from_document(SMD.generate(spec, load_catalog()), catalog=load_catalog())


# --- Algorithm 1's LPs -------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), sgd=st.sampled_from(["sync", "async"]), limit=st.sampled_from([[6, 20], [8, 24], [3, 9], [1, 4]]))
def test_sided_polygon_equals_every_line_pair_enumeration(seed, sgd, limit):
    """The crossing-based vertex search gives the optimum of intersecting every pair of lines
    (the reference, :func:`vertex_minimum` on all rows at once), empty polygons included."""
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0.05, 5.0, 5 if sgd == "sync" else 4) * (rng.random(5 if sgd == "sync" else 4) > 0.15)
    job = toy_job(sgd, theta, limit)
    terms = ratio_terms(job)
    if len(terms) < 2:
        return
    A, h = polygon(job)
    J = int(rng.integers(len(terms)))
    others = np.array([j for j in range(len(terms)) if j != J])
    lo = terms.values(np.array([[1.0, 1.0]]))[0][others]
    nu = lo * rng.uniform(0.3, 3.0, (64, len(others)))  # some side rows cut Omega away entirely
    rows, rhs = side_rows(terms, others, nu)
    got, x = SidedPolygon(A, h).minimum(terms.a[J], terms.q[J], terms.c[J], terms.d[J], rows, rhs)
    AA = np.concatenate([np.broadcast_to(A, (len(nu), *A.shape)), rows], axis=1)
    hh = np.concatenate([np.broadcast_to(h, (len(nu), len(h))), rhs], axis=1)
    want, _ = vertex_minimum(terms.a[J], terms.q[J], terms.c[J], terms.d[J], AA, hh)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert ok.any()
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-9, atol=1e-12)
    # the point returned attains the value
    vals = (x[ok] @ terms.a[J] + terms.q[J]) / (x[ok] @ terms.c[J] + terms.d[J])
    np.testing.assert_allclose(vals, got[ok], rtol=1e-9)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("sgd", ["sync", "async"])
def test_bounded_grid_search_gives_the_answer_of_the_plain_one(seed, sgd):
    """The vertex engine visits grid points by their one-side-row bound and skips most; HiGHS
    visits the points in increasing sum(nu), one LP each: the same psi.  (Fixed cases: on limits
    such as [3, 9] the engines already differed before, HiGHS accepting side rows broken by its
    1e-7 feasibility tolerance at the corner (1, 1).)"""
    rng = np.random.default_rng(seed)
    k = 5 if sgd == "sync" else 4
    for limit in ([6, 20], [8, 24], [4, 30]):
        job = toy_job(sgd, rng.uniform(0.05, 5.0, k) * (rng.random(k) > 0.15), limit)
        vertex, highs = algorithm1(job, 0.2, "vertex"), algorithm1(job, 0.2, "highs")
        # (the points may differ where an LP has several optima: a term constant along an edge)
        assert vertex.psi == pytest.approx(highs.psi, rel=1e-9)
        assert vertex.tau <= vertex.psi + 1e-9


@pytest.mark.parametrize("engine", ["vertex", "highs"])
def test_a_one_point_box_is_its_own_answer(engine):
    job = toy_job("sync", [1, 0.5, 3, 2, 40], [1, 4])  # (1, 1) is the only allocation inside the limit
    assert job.box()[:2] == (1, 1) and job.box()[2:] == (1, 1)
    res = algorithm1(job, 0.1, engine)
    assert res.x.tolist() == [1.0, 1.0] and res.psi == res.tau == pytest.approx(job.completion_time(1, 1))
    assert res.grid_points == 1 and res.complete


# --- anytime -----------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["smd", "esw", "optimus"])
def test_at_the_deadline_unsized_jobs_are_not_admitted_and_the_answer_says_so(method):
    inst = generated(4, jobs=30, servers=4)
    sol = SMD.run(inst, method, SolveOptions(time_limit=1e-9), {})
    assert sol.report.status == "feasible" and check_solution(inst, sol).feasible
    assert "cut short by the time limit" in sol.report.message and "not yet sized" in sol.report.message
    assert sol.decision["extra"]["stats"]["unsized"] > 0
    json.dumps(sol.to_dict(), allow_nan=False)


@pytest.mark.parametrize("method", ["smd", "esw", "optimus"])
def test_an_uncut_run_reports_no_unsized_jobs(method):
    inst = generated(4, jobs=8, servers=4)
    sol = SMD.run(inst, method, SolveOptions(time_limit=60), {})
    assert "unsized" not in sol.decision["extra"]["stats"] and "cut short" not in sol.report.message


def test_frieze_clarke_goes_deeper_than_the_recursion_limit():
    """With epsilon2 near 0 (k = I) the subset search goes one item deeper per level while the
    items fit: 110 levels here, under a recursion limit 60 frames above the test's own."""
    rng = np.random.default_rng(0)
    u = rng.uniform(1, 2, 130)
    weights = np.ones((130, 1))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 60)
    try:
        res = frieze_clarke(u, weights, np.array([110.5]), 1e-6, deadline_s=1.0)
    finally:
        sys.setrecursionlimit(limit)
    assert res.chosen.sum() <= 110 and res.value == pytest.approx(np.sort(u)[::-1][:110].sum())


def test_frieze_clarke_stops_at_its_deadline_with_its_best_answer():
    rng = np.random.default_rng(1)
    u = rng.uniform(1, 2, 400)
    weights = rng.integers(1, 5, (400, 2)).astype(float)
    capacity = weights.sum(axis=0) / 2 + 0.5
    res = frieze_clarke(u, weights, capacity, 1e-6, deadline_s=0.0)
    assert not res.complete and res.subsets == 1  # the root LP only, rounded down
    assert np.all(weights[res.chosen].sum(axis=0) <= capacity) and res.value > 0


# --- the bound ---------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_knapsack_lp_equals_the_pyomo_relaxation_and_bounds_every_answer(seed):
    inst = generated(seed, jobs=6, servers=2)
    opts = SMD.resolve_options(inst, {})
    got = lp_relaxation(inst, opts, EXACT)
    assert got.status == "optimal" and got.bound is not None
    pyomo = relaxation(build_model(inst, opts), EXACT)
    assert got.bound == pytest.approx(pyomo.objective, rel=1e-7, abs=1e-7)
    exact = SMD.run(inst, "exact", EXACT, opts)
    assert exact.report.status == "optimal" and got.bound >= exact.report.objective - 1e-7
    for method in ("smd", "esw", "optimus"):
        sol = SMD.run(inst, method, EXACT, opts)
        verdict = check_solution(inst, sol, opts)
        assert verdict.feasible and got.bound >= verdict.objective - 1e-7


def test_the_bound_is_the_family_relaxation_and_refuses_without_time():
    inst = generated(1, jobs=6, servers=2)
    opts = SMD.resolve_options(inst, {})
    assert SMD.lp_bound(inst, opts, EXACT).solver.startswith("highs (knapsack LP")
    none = lp_relaxation(inst, opts, SolveOptions(time_limit=1e-9))
    assert none.status == "time-limit-no-solution" and none.bound is None


# --- the checker -------------------------------------------------------------------------------

def test_vectorized_checker_finds_limit_range_and_capacity_breaches():
    inst = generated(3, jobs=6, servers=1)
    view = smd_view(inst)
    best = {j.id: best_integer(j) for j in view.jobs}
    ids = [j.id for j in view.jobs if best[j.id].feasible]
    alloc = {i: {"workers": best[i].w, "ps": best[i].p} for i in ids}
    first = view.jobs[0]
    alloc[first.id] = {"workers": first.w_range[1] + 1000, "ps": 1}  # beyond the range and the limit
    result = CheckResult()
    check(inst, {"admitted": ids, "extra": {"allocation": alloc}}, SMD.resolve_options(inst, {}), result)
    rules = {v.rule for v in result.violations}
    assert {"range", "limit"} <= rules
    reserved = view.limits()[[j.index for j in view.jobs if j.id in ids]].sum(axis=0)
    assert ("capacity" in rules) == bool((reserved > view.capacity * (1 + 1e-9)).any())


# --- Philly jobs on Alibaba's cluster, through the CLI ------------------------------------------

def test_philly_on_the_alibaba_cluster_is_answered_checked_and_certified(run, tmp_path, data_dir):
    out = tmp_path / "ph.json"
    code, _, err = run("import", "philly", "--problem", "smd", "--data", data_dir, "--jobs", "300", "-o", out)
    assert code == 0, err
    for method in ("smd", "esw", "optimus"):
        code, text, err = run("solve", out, "--method", method, "--time-limit", "60", "--json")
        assert code == 0, err
        report = json.loads(text)
        assert report["status"] == "feasible" and report["check"]["feasible"], report
        assert report["bound"] is not None and report["bound"] >= report["objective"] - 1e-6
        assert "(certified)" in report["message"] and "cut short" not in report["message"]
