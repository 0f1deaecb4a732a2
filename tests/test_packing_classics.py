"""Packing's ``servers`` bound on the classical bin-packing instances: never below Martello and Toth's L2.

Instances of the classical kinds (uniform sizes in [20, 100] on capacity 150, triplets that fill
bins exactly as Falkenauer's, small two-dimensional vector packing), with optima from an
exhaustive search written here, without the family's formulation, greedy or bound: items placed
largest first into an open bin or a new one, every way, the best count kept.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from mlsched_opt.io import from_document
from mlsched_opt.problems import get_family
from mlsched_opt.problems.packing.bound import combinatorial_bound, configs, martello_toth
from mlsched_opt.problems.packing.view import packing_view
from mlsched_opt.solvers import SolveOptions

FAMILY = get_family("packing")
SERVERS = FAMILY.parse_options({"objective": "servers"})


def instance(sizes: list[tuple[int, ...]], capacity: tuple[int, ...], name: str = "bpp"):
    """One server per item (enough for any packing), one single-task job per item."""
    res = ("cpu", "gpu")[:len(capacity)]
    doc = {"format": "mlsched-instance/1", "name": name, "problem": "packing", "options": {"objective": "servers"},
           "cluster": {"servers": [{"name": "s", "count": len(sizes), "capacity": dict(zip(res, capacity))}]},
           "jobs": [{"id": f"j{i}", "architecture": "allreduce", "workers": {"count": 1}, "weight": 1,
                     "demand": {"worker": dict(zip(res, w))}} for i, w in enumerate(sizes)]}
    return from_document(doc)


def fewest_bins(sizes: list[tuple[int, ...]], capacity: tuple[int, ...]) -> int:
    """The optimum by exhaustive search (items largest first, each into every open bin with room or a new one)."""
    items = sorted(sizes, key=lambda w: (-sum(w), w))
    best = [len(items)]

    def go(k: int, loads: list[list[int]]) -> None:
        if len(loads) >= best[0]:
            return
        if k == len(items):
            best[0] = len(loads)
            return
        w = items[k]
        tried = set()
        for load in loads:
            key = tuple(load)
            if key in tried or any(a + b > c for a, b, c in zip(load, w, capacity)):
                continue
            tried.add(key)  # two bins of one load are the same choice
            for r in range(len(w)):
                load[r] += w[r]
            go(k + 1, loads)
            for r in range(len(w)):
                load[r] -= w[r]
        go(k + 1, [*loads, list(w)])

    go(0, [])
    return best[0]


def naive_l2(sizes: list[int], capacity: int) -> int:
    """L2 as Martello and Toth write it, one threshold K at a time."""
    best = 0
    for k in range(0, capacity // 2 + 1):
        j1 = [w for w in sizes if w > capacity - k]
        j2 = [w for w in sizes if capacity - k >= w > capacity / 2]
        j3 = [w for w in sizes if capacity / 2 >= w >= k and w > 0]
        spill = sum(j3) - (len(j2) * capacity - sum(j2))
        best = max(best, len(j1) + len(j2) + max(0, math.ceil(spill / capacity)))
    return best


def family_bound(inst) -> float:
    rep = FAMILY.lp_bound(inst, SERVERS, SolveOptions(time_limit=20))
    assert rep.bound is not None, rep.message
    return rep.bound


uniform = st.lists(st.integers(20, 100), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=0, max_size=12), st.integers(1, 60))
def test_the_vectorized_l2_is_martello_and_toths(sizes, capacity):
    sizes = [min(w, capacity) for w in sizes]
    assert martello_toth(np.array(sizes, dtype=float), np.ones(len(sizes)), float(capacity)) == naive_l2(sizes, capacity)


def test_counts_are_copies_of_an_item():
    sizes, counts = np.array([80.0, 40.0, 30.0]), np.array([3, 2, 5])
    flat = [80] * 3 + [40] * 2 + [30] * 5
    assert martello_toth(sizes, counts, 150.0) == naive_l2(flat, 150)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(uniform)
def test_the_bound_is_between_l2_and_the_optimum_on_uniform_instances(sizes):
    inst = instance([(w,) for w in sizes], (150,))
    opt = fewest_bins([(w,) for w in sizes], (150,))
    l2 = naive_l2(sizes, 150)
    assert l2 <= opt
    assert l2 <= family_bound(inst) <= opt


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(1, 10), st.integers(0, 8)), min_size=1, max_size=7))
def test_the_bound_is_between_each_resources_l2_and_the_optimum_on_vector_packing(sizes):
    inst = instance(sizes, (10, 8))
    opt = fewest_bins(sizes, (10, 8))
    cfg = configs(packing_view(inst))
    per_resource = max(naive_l2([w[r] for w in sizes], c) for r, c in enumerate((10, 8)))
    assert combinatorial_bound(cfg)[0] == per_resource <= opt
    assert per_resource <= family_bound(inst) <= opt


def triplets(bins: int, seed: int) -> list[int]:
    """Falkenauer's triplets on capacity 1000: every bin holds three items that fill it exactly, so the
    optimum is ``bins`` = L1 = L2 (one item in (380, 490], the others from what is left)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(bins):
        a = int(rng.integers(381, 491))
        b = int(rng.integers(250, (1000 - a) // 2 + 1))
        out += [a, b, 1000 - a - b]
    return [int(w) for w in rng.permutation(out)]


def test_exact_is_optimal_where_l2_is_the_optimum():
    """Where FFD's answer meets L2 the bound is the certificate: ``optimal`` at once, no referee."""
    sizes = triplets(6, 3)
    inst = instance([(w,) for w in sizes], (1000,), "triplets")
    assert naive_l2(sizes, 1000) == 6
    # uniform sizes on 150 where L2 (28) is far above L1 (24) and FFD meets it
    rng = np.random.default_rng(9)
    uni = [int(w) for w in rng.integers(20, 101, 50)]
    assert naive_l2(uni, 150) == 28 > math.ceil(sum(uni) / 150)
    for case, l2 in ((inst, 6), (instance([(w,) for w in uni], (150,), "uniform"), 28)):
        res = FAMILY.method("exact").run(case, SERVERS, SolveOptions(time_limit=10, gap=0.0))
        assert res.report.status == "optimal", res.report.message
        assert res.report.certified_by, res.report.message
        assert FAMILY._evaluate(case, SERVERS, res.decision)[0] == res.report.objective == l2
        assert family_bound(case) == l2
        if case.name == "uniform":
            assert "Martello-Toth" in res.report.certified_by[0]


def test_same_seed_same_decision(catalog):
    """Work limits, not the clock, end ``lns`` and the array route of ``exact`` here: two runs give one decision."""
    import json

    from mlsched_opt.problems import GenerateSpec
    from mlsched_opt.problems.packing.exact import solve_exact_arrays

    inst = from_document(FAMILY.generate(GenerateSpec(jobs=24, servers=48, seed=3), catalog), catalog=catalog)
    options = FAMILY.parse_options({"objective": "servers", "windows": 6, "rounds": 4})
    runs = SolveOptions(time_limit=60, gap=0.0, threads=1, seed=2)
    twice = [json.dumps(FAMILY.method("lns").run(inst, options, runs).decision, sort_keys=True) for _ in range(2)]
    assert twice[0] == twice[1]
    exact = [solve_exact_arrays(inst, options, runs) for _ in range(2)]
    assert exact[0][0].status == exact[1][0].status and "time limit" not in exact[0][0].message, exact[0][0].message
    assert json.dumps(exact[0][1], sort_keys=True) == json.dumps(exact[1][1], sort_keys=True)
