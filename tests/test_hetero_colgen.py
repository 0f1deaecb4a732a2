"""hetero's configuration LP by column generation with exact pricing, its price-and-branch exact
method, and the exchange search (issue 32).

Every bound is checked against enumeration (every class-count vector of a small cluster), the
Pyomo model's LP relaxation, the certified optimum and the oracles, and every checked answer; no
test depends on wall-clock speed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mlsched_opt.io.catalog import load_catalog
from mlsched_opt.io.instance import from_document
from mlsched_opt.problems import check_solution
from mlsched_opt.problems.hetero import exact as exact_module
from mlsched_opt.problems.hetero.baselines import greedy
from mlsched_opt.problems.hetero.bound import ColumnGeneration, configuration_bound
from mlsched_opt.problems.hetero.configs import ranged_table
from mlsched_opt.problems.hetero.decision import evaluate
from mlsched_opt.problems.hetero.exchange import improve
from mlsched_opt.problems.hetero.oracles import brute_force, variant_a
from mlsched_opt.problems.hetero.pricing import Pricer, interval_bounds, job_groups, layer_counts, layer_vectors
from mlsched_opt.problems.hetero.timing import jct_rows
from mlsched_opt.problems.hetero.view import hetero_view
from mlsched_opt.solvers import SolveOptions

from .test_hetero import FAMILY, OPTS

EXACT = SolveOptions(gap=0.0, time_limit=60)
LINKS = (1.0, 10.0, 100.0)


def instance(seed: int, servers: int = 3, gpus: int = 4, jobs: int = 4, links: bool = False, caps: bool = False,
             ranges: bool = False):
    """A generated Gavel cluster, optionally with links of 1/10/100 Gbit/s by server, memory caps on
    every other job, and size ranges other than 1..K."""
    from mlsched_opt.problems.base import GenerateSpec

    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed,
                        options=FAMILY.parse_generate_options({"gpus_per_server": gpus, "types": "K80,P100,V100"}))
    doc = FAMILY.generate(spec, load_catalog())
    if links:
        for h, server in enumerate(doc["cluster"]["servers"]):
            server["capacity"]["bandwidth_gbps"] = LINKS[h % len(LINKS)]
    for i, job in enumerate(doc["jobs"]):
        if caps and i % 2 == 0:
            job.setdefault("data_parallel", {})["max_local_batch"] = {m: max(1, job["global_batch_size"] // 2)
                                                                     for m in ("K80", "P100", "V100")}
        if ranges:
            job["workers"] = {"min": 1 + i % 2, "max": 2 + 3 * (i % 3)}
    return from_document(doc, catalog=load_catalog())


def enumerated_minimum(view, comm: str, p: np.ndarray) -> np.ndarray:
    """Each job's ``min_n J(n) / S + p . n`` over every class-count vector of its range."""
    vectors, table = ranged_table(view, comm)
    return (table / view.S + (vectors @ p)[None, :]).min(axis=1)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), links=st.booleans(), caps=st.booleans(), ranges=st.booleans(),
       comm=st.sampled_from(["ring", "ps", "none"]), scale=st.floats(-4, 2), budget=st.sampled_from([0, 3, 40, 20_000]))
def test_pricing_is_exact_or_a_lower_bound_against_enumeration(seed, links, caps, ranges, comm, scale, budget):
    """The pricing's minimum never exceeds the true one (enumeration of every vector), equals it
    where it says it is exact, and its column is a real one with its true JCT; the start budget
    decides how much comes from enumeration and how much from the interval bounds."""
    view = hetero_view(instance(seed % 50, links=links, caps=caps, ranges=ranges))
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 1, view.G) * 10.0 ** scale
    p[rng.random(view.G) < 0.2] = 0.0
    truth = enumerated_minimum(view, comm, p)
    pricer = Pricer(view, comm, start_vectors=budget)
    for _ in range(2):  # a second pass resumes from what the first one learned
        priced = pricer.price(p)
        assert priced is not None
        tol = 1e-9 * np.maximum(1.0, np.abs(truth))
        assert (priced.bound <= truth + tol).all()
        assert np.allclose(priced.bound[priced.exact], truth[priced.exact], rtol=1e-9)
        finite = np.isfinite(priced.value)
        assert (priced.value[finite] >= truth[finite] - tol[finite]).all()
        cost = jct_rows(view, np.flatnonzero(finite), priced.vec[finite], comm) / view.S
        assert np.allclose(cost, priced.cost[finite], rtol=1e-12)
        assert np.allclose(priced.value[finite], cost + priced.vec[finite] @ p, rtol=1e-9)
    assert priced.exact.all()  # enough work for every job of a small cluster


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), links=st.booleans(), caps=st.booleans(), comm=st.sampled_from(["ring", "ps", "none"]),
       scale=st.floats(-4, 2))
def test_interval_bounds_are_below_every_vector_of_their_interval(seed, links, caps, comm, scale):
    view = hetero_view(instance(seed % 50, links=links, caps=caps))
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 1, view.G) * 10.0 ** scale
    vectors, table = ranged_table(view, comm)
    k = vectors.sum(axis=1)
    spans = np.array([(1, 1), (2, 3), (4, 7), (8, 12), (3, 9), (5, 5)])
    for group in job_groups(view):
        bounds, cand = interval_bounds(view, group, p, comm, spans)
        values = table[group.jobs] / view.S + (vectors @ p)[None, :]
        for m, (k1, k2) in enumerate(spans):
            inside = (k >= k1) & (k <= k2)
            truth = values[:, inside].min(axis=1) if inside.any() else np.full(len(group.jobs), np.inf)
            assert (bounds[:, m] <= truth + 1e-9 * np.maximum(1.0, np.abs(truth))).all(), (k1, k2)
        assert (cand >= 0).all() and (cand <= view.counts).all()


def test_layers_are_counted_and_complete():
    counts = np.array([3, 0, 5, 2])
    ways = layer_counts(counts, 12)
    for k in range(13):
        layer = layer_vectors(counts, k)
        assert len(layer) == ways[k] == len(np.unique(layer, axis=0))
        assert (layer.sum(axis=1) == k).all() and (layer <= counts).all() and (layer >= 0).all()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("links,caps", [(False, False), (True, False), (False, True)])
def test_bound_is_the_lp_below_the_optimum_and_the_oracles(seed, links, caps):
    """Proven optimal LP: equal to the Pyomo model's relaxation, below the certified optimum, the
    oracles' optimum and every checked answer (with links of three speeds, with memory caps)."""
    from mlsched_opt.solvers import relaxation

    inst = instance(seed, servers=2, gpus=4, jobs=3, links=links, caps=caps)  # 8 GPUs: the oracles run
    view = hetero_view(inst)
    cg = configuration_bound(view, "ring", 60)
    assert cg.status == "optimal" and cg.bound is not None
    lp = relaxation(FAMILY.build_model(inst, OPTS), EXACT)
    assert cg.bound == pytest.approx(lp.objective, rel=1e-9) and cg.bound <= lp.objective * (1 + 1e-9)
    opt = FAMILY.run(inst, "exact", EXACT).report
    assert opt.status == "optimal" and cg.bound <= opt.objective * (1 + 1e-9)
    bundles, _, _ = variant_a(view, "ring")
    brute, _ = brute_force(view, "ring")
    for x in (bundles, brute):
        assert cg.bound <= evaluate(view, x, "ring").mean() * (1 + 1e-9)
    for method in ("sampling", "sampling-ls", "greedy", "equal-share", "random"):
        sol = FAMILY.run(inst, method, SolveOptions(time_limit=60, seed=seed))
        result = check_solution(inst, sol)
        assert result.feasible and cg.bound <= result.objective * (1 + 1e-9), method


@pytest.mark.parametrize("seed", range(3))
def test_a_cut_short_column_generation_still_bounds_the_lp(seed):
    """Stopped after a round or two (a work limit), or with no enumeration at all (every job priced
    by its interval bounds and their candidate columns), the Lagrangian bound stays below the LP value."""
    view = hetero_view(instance(seed, links=True))
    lp = configuration_bound(view, "ring", 60)
    assert lp.status == "optimal"
    for rounds in (1, 2, 3):
        cg = ColumnGeneration(view, "ring")
        cg.run(float("inf"), max_rounds=rounds)
        got = cg.result()
        assert got.bound is not None and got.bound <= lp.bound * (1 + 1e-9)
    for splits in (0, 100):  # no interval ever split: jobs stay priced by the bounds of the sizes above one
        cg = ColumnGeneration(view, "ring")
        cg.pricer = Pricer(view, "ring", start_vectors=0, max_vectors=0, call_splits=splits)
        cg.run(float("inf"))
        got = cg.result()
        assert got.status in ("bound", "optimal") and got.bound is not None and got.bound <= lp.bound * (1 + 1e-9)


def test_an_infeasible_instance_is_proven_so():
    inst = instance(0, servers=1, gpus=4, jobs=3, ranges=True)  # minimums 1, 2, 1 ... made too large below
    view = hetero_view(inst)
    jobs = tuple(dataclasses.replace(j, k_range=(2, 4)) for j in view.jobs)
    assert configuration_bound(dataclasses.replace(view, jobs=jobs), "ring", 60).status == "infeasible"


@pytest.mark.parametrize("seed", range(4))
def test_exchange_search_keeps_answers_feasible_and_never_worse(seed):
    inst = instance(seed, servers=4, gpus=4, jobs=6, links=seed % 2 == 1, caps=seed % 2 == 0)
    view = hetero_view(inst)
    x = greedy(view, "ring")
    assert x is not None
    y, _ = improve(view, x, "ring")
    again, _ = improve(view, x, "ring")
    assert np.array_equal(y, again)  # deterministic
    assert (y.sum(axis=0) <= view.counts).all() and evaluate(view, y, "ring").mean() <= evaluate(view, x, "ring").mean()
    sol = FAMILY.run(inst, "sampling-ls", SolveOptions(time_limit=60, seed=seed))
    plain = FAMILY.run(inst, "sampling", SolveOptions(time_limit=60, seed=seed))
    assert check_solution(inst, sol).feasible and sol.report.objective <= plain.report.objective * (1 + 1e-12)
    assert "exchange_moves" in sol.report.message


def test_exchange_search_improves_a_poor_start():
    view = hetero_view(instance(1, servers=4, gpus=4, jobs=5))
    x = np.zeros((view.S, view.G), dtype=np.int64)
    for i in range(view.S):  # every job on one GPU of the first class it can use
        x[i, i % view.G] = 1
    y, stats = improve(view, x, "ring")
    assert stats["moves"] > 0 and evaluate(view, y, "ring").mean() < evaluate(view, x, "ring").mean()


@pytest.mark.parametrize("seed", range(3))
def test_exact_by_column_generation_is_checked_and_brackets_the_optimum(monkeypatch, seed):
    """The large-scale route of --method exact (forced here on a small cluster): its answer is
    checked, its bound is below the certified optimum, which is below its answer."""
    inst = instance(seed, links=seed == 2)
    opt = FAMILY.run(inst, "exact", EXACT).report
    assert opt.status == "optimal"
    monkeypatch.setattr(exact_module, "FULL_MODEL_COLUMNS", 0)
    sol = FAMILY.run(inst, "exact", EXACT)
    result = check_solution(inst, sol)
    assert result.feasible and sol.report.status == "feasible" and "column generation" in sol.report.message
    assert sol.report.bound is not None
    assert sol.report.bound <= opt.objective * (1 + 1e-9) <= result.objective * (1 + 1e-9)
    assert result.objective <= sol.report.bound * 1.02


def test_exact_by_column_generation_proves_an_overfull_cluster_infeasible(monkeypatch):
    """Every job fits alone but not all together: the LP keeps an artificial column, and the duals
    prove it (more GPUs at their prices than the cluster has)."""
    inst = instance(0, servers=1, gpus=4, jobs=3)
    doc = dict(inst.document)
    doc["jobs"] = [{**job, "workers": {"min": 2, "max": 4}} for job in doc["jobs"]]
    inst = from_document(doc, catalog=load_catalog())
    monkeypatch.setattr(exact_module, "FULL_MODEL_COLUMNS", 0)
    sol = FAMILY.run(inst, "exact", EXACT)
    assert sol.report.status == "infeasible" and sol.decision is None
    monkeypatch.undo()
    assert FAMILY.run(inst, "exact", EXACT).report.status == "infeasible"  # the certified ILP agrees
