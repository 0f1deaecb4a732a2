"""hetero at production scale (issue 18): the batched JCT, the flow market, the vectorized
neighbourhood, the configuration bound by column generation, and Alibaba's cluster end to end.

No test depends on wall-clock speed: they assert on results (equal values, valid bounds,
checked answers, a bound returned or refused at a time limit)."""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest

from mlsched_opt.io import load_instance
from mlsched_opt.problems import check_solution
from mlsched_opt.problems.hetero.bound import bounded_count, bounded_vectors
from mlsched_opt.problems.hetero.market import _transport, _transport_lp
from mlsched_opt.problems.hetero.scheme import neighbours, size_bounds
from mlsched_opt.problems.hetero.timing import jct, jct_rows
from mlsched_opt.problems.hetero.view import hetero_view
from mlsched_opt.solvers import SolveOptions

from .test_hetero import FAMILY, OPTS, small_instance

EXACT = SolveOptions(gap=0.0, time_limit=60)


def _capped(view, seed):
    """The view with memory caps on every other job (so the water-filling path is exercised)."""
    jobs = list(view.jobs)
    for i in range(0, len(jobs), 2):
        jobs[i] = dataclasses.replace(jobs[i], cap=np.full(view.G, max(1, jobs[i].batch // (3 + seed))))
    return dataclasses.replace(view, jobs=tuple(jobs))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("comm", ["ring", "ps", "none"])
@pytest.mark.parametrize("split", ["proportional", "equal"])
def test_batched_jct_is_the_per_job_jct_bit_for_bit(seed, comm, split):
    view = _capped(hetero_view(small_instance(seed, servers=4, gpus=4, jobs=5)), seed)
    rng = np.random.default_rng(seed)
    n = rng.integers(0, 4, size=(300, view.G))
    rows = rng.integers(0, view.S, 300)
    got = jct_rows(view, rows, n, comm, split)
    want = np.array([jct(view, view.jobs[r], n[k:k + 1], comm, split)[0] for k, r in enumerate(rows)])
    assert ((got == want) | (np.isinf(got) & np.isinf(want))).all()
    assert np.isinf(got).any() and np.isfinite(got).any()  # both kinds of rows were seen


def _old_neighbours(sizes, view, idle, step):
    """The generator before vectorizing: every ordered pair, then add/drop per job."""
    lo, hi = size_bounds(view)
    total = sum(sizes)
    for i, j in itertools.permutations(range(len(sizes)), 2):
        if sizes[i] - step >= lo[i] and sizes[j] + step <= hi[j]:
            n = list(sizes)
            n[i] -= step
            n[j] += step
            yield tuple(n)
    if idle:
        for i in range(len(sizes)):
            if total + step <= view.K and sizes[i] + step <= hi[i]:
                yield sizes[:i] + (sizes[i] + step,) + sizes[i + 1:]
            if sizes[i] - step >= lo[i]:
                yield sizes[:i] + (sizes[i] - step,) + sizes[i + 1:]


@pytest.mark.parametrize("seed", range(5))
def test_vectorized_neighbours_are_the_old_ones_in_the_same_order(seed):
    view = hetero_view(small_instance(seed, servers=3, gpus=4, jobs=6))
    rng = np.random.default_rng(seed)
    lo, hi = size_bounds(view)
    for _ in range(20):
        sizes = tuple(int(v) for v in rng.integers(lo, np.minimum(hi, 4) + 1))
        for idle, step in itertools.product((True, False), (1, 2)):
            assert list(neighbours(sizes, view, idle, step)) == list(_old_neighbours(sizes, view, idle, step))


@pytest.mark.parametrize("seed", range(6))
def test_flow_market_has_the_transport_lp_total_valuation(seed):
    rng = np.random.default_rng(seed)
    s, g = 60, 5
    counts = rng.integers(5, 40, size=g)
    gamma = rng.random((s, g)) * rng.random((s, 1)) * 10.0 ** rng.integers(-3, 4)
    gamma[rng.random((s, g)) < 0.1] = -np.inf
    sizes = rng.integers(1, 4, size=s)
    flow, lp = _transport(gamma, sizes, counts), _transport_lp(gamma, sizes, counts)
    if lp is None:
        assert flow is None
        return
    assert flow is not None
    assert (flow.sum(axis=1) == sizes).all() and (flow.sum(axis=0) <= counts).all()
    assert np.isfinite(gamma[flow > 0]).all()
    value = lambda x: float(np.where(x > 0, gamma, 0.0).__mul__(x).sum())  # noqa: E731
    assert value(flow) == pytest.approx(value(lp), rel=1e-9)


def test_bounded_vectors_are_counted_and_unique():
    counts = np.array([3, 0, 5, 2])
    for h in range(0, 9):
        vecs = bounded_vectors(counts, h)
        assert len(vecs) == bounded_count(counts, h) == len(np.unique(vecs, axis=0))
        assert (vecs.sum(axis=1) <= h).all() and (vecs <= counts).all() and (vecs >= 0).all()
        want = sum(1 for v in itertools.product(*(range(int(c) + 1) for c in counts)) if sum(v) <= h)
        assert len(vecs) == want


@pytest.mark.parametrize("seed", range(5))
def test_bound_is_the_configuration_lp_and_below_every_checked_answer(seed):
    inst = small_instance(seed, servers=3, gpus=4, jobs=4)
    relaxed = FAMILY.relaxation(inst, OPTS, SolveOptions(time_limit=60))
    assert relaxed.status == "optimal" and relaxed.bound is not None
    opt = FAMILY.run(inst, "exact", EXACT).report.objective
    assert relaxed.bound <= opt * (1 + 1e-9)
    for method in ("sampling", "market", "greedy", "equal-share"):
        sol = FAMILY.run(inst, method, SolveOptions(time_limit=60))
        result = check_solution(inst, sol)
        assert result.feasible and relaxed.bound <= result.objective * (1 + 1e-9), method


def test_bound_refuses_to_answer_past_its_time_limit():
    inst = small_instance(0, servers=3, gpus=4, jobs=4)
    report = FAMILY.relaxation(inst, OPTS, SolveOptions(time_limit=1e-9))
    assert report.status == "time-limit-no-solution" and report.bound is None


@pytest.fixture(scope="module")
def alibaba_600(tmp_path_factory, data_dir):
    """600 Alibaba pods (the GPU ones) on all 1,213 GPU nodes, 6,212 GPUs: the production cluster."""
    from mlsched_opt.cli import main

    out = tmp_path_factory.mktemp("alibaba") / "ali.json"
    with pytest.raises(SystemExit) as exc:
        main(["import", "alibaba", "--problem", "hetero", "--jobs", "600", "-o", str(out)])
    assert exc.value.code == 0
    return out


def test_alibaba_cluster_answer_is_checked_and_certified_by_the_bound(alibaba_600):
    """On 6,212 GPUs the old LP enumerated prod(N_c + 1) ~ 10^16 vectors and refused; the bound
    is now the configuration LP over each job's vectors, and certifies the sampled answer."""
    inst = load_instance(alibaba_600)
    view = hetero_view(inst)
    assert view.K == 6212
    assert "have no GPU (CPU-only) and were left out" in inst.document["source"]
    sol = FAMILY.run(inst, "sampling", SolveOptions(time_limit=300, seed=0))
    result = check_solution(inst, sol)
    assert sol.report.status == "feasible" and result.feasible
    relaxed = FAMILY.relaxation(inst, OPTS, SolveOptions(time_limit=300))
    assert relaxed.status == "optimal" and relaxed.bound is not None
    assert relaxed.bound <= result.objective * (1 + 1e-9)
    assert result.objective / relaxed.bound < 1.01
    json.dumps(sol.to_dict(), allow_nan=False)


def test_exact_on_the_alibaba_cluster_answers_by_column_generation(alibaba_600):
    """The configuration ILP over 10^16 vectors per job was refused (an OptionError, exit 2); the
    exact method now brackets the optimum by column generation and price-and-branch."""
    inst = load_instance(alibaba_600)
    sol = FAMILY.run(inst, "exact", SolveOptions(time_limit=120))
    result = check_solution(inst, sol)
    assert sol.report.status == "feasible" and result.feasible and "column generation" in sol.report.message
    assert sol.report.bound is not None and sol.report.bound <= result.objective * (1 + 1e-9)
    assert result.objective <= sol.report.bound * (1 + 1e-6)


def test_alibaba_sampling_cut_short_still_answers(alibaba_600):
    inst = load_instance(alibaba_600)
    sol = FAMILY.run(inst, "sampling", SolveOptions(time_limit=1e-6, seed=0))
    assert sol.report.status == "feasible" and "cut short by the time limit" in sol.report.message
    assert check_solution(inst, sol).feasible
