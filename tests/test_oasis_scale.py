"""OASiS at production scale (issue 18): sparse schedules, the fast DP step, the window capacity bound.

The reference below is the best-schedule subroutine as it was before issue 18 (dense per-job
``(servers, slots)`` plans, the DP step by index matrices, prices and fits over every slot and
server); it is kept here, unchanged in substance, as the definition the fast version must agree
with decision for decision: same completion slot, payoff, cost and placement, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlsched_opt.errors import InstanceError
from mlsched_opt.io import from_document, load_instance
from mlsched_opt.problems import REGISTRY, GenerateSpec, check_solution
from mlsched_opt.problems.oasis import bound as bound_module, subroutine, view as view_module
from mlsched_opt.problems.oasis.bound import capacity_bound, window_lp
from mlsched_opt.problems.oasis.generate import generate
from mlsched_opt.problems.oasis.online import Oasis, simulate
from mlsched_opt.problems.oasis.prices import formula_params
from mlsched_opt.problems.oasis.subroutine import _unwind, best_schedule
from mlsched_opt.problems.oasis.view import TaskCounts, fit_counts, oasis_view
from mlsched_opt.problems.pricing import PricedPool
from mlsched_opt.problems.rounding import floor
from mlsched_opt.solvers import SolveOptions

from .conftest import ROOT
from .test_oasis import random_state

FAMILY = REGISTRY["oasis"]
TOY = ROOT / "instances" / "oasis-toy.toml"


# --- the reference: the subroutine before issue 18 --------------------------------------------------

def _ref_step(old, d, c):
    size = old.size
    new = np.full(size, np.inf)
    ar = np.arange(size)
    rows = max(1, (1 << 20) // size)
    for s in range(0, d.size, rows):
        idx = np.maximum(ar[None, :] - d[s:s + rows, None], 0)
        new = np.minimum(new, (c[s:s + rows, None] + old[idx]).min(axis=0))
    return new


def _ref_spread(count, order, caps, n):
    out = np.zeros(n, dtype=np.int64)
    taken = np.minimum(caps, np.maximum(count - np.concatenate([[0], np.cumsum(caps)[:-1]]), 0))
    out[order] = taken
    return out


def _ref_fill(unit, caps, limit):
    order = np.argsort(unit, kind="stable")
    caps = caps[order]
    caps = np.minimum(caps, np.maximum(limit - np.concatenate([[0], np.cumsum(caps)[:-1]]), 0))
    steps = np.repeat(unit[order], caps)
    return np.concatenate([[0.0], np.cumsum(steps)]), order, caps


def _ref_slot(job, w_unit, w_caps, p_unit, p_caps):
    w_cost, w_order, w_caps = _ref_fill(w_unit, w_caps, max(job.hi, 0))
    y = np.arange(len(w_cost))
    need = np.asarray(job.ps_needed(y))
    p_cost, p_order, p_caps = _ref_fill(p_unit, p_caps, int(need.max()) if len(need) else 0)
    ok = (need <= len(p_cost) - 1) & ((y == 0) | (y >= job.lo))
    top = int(np.flatnonzero(ok)[-1]) + 1 if ok.any() else 1
    cost = np.where(ok[:top], w_cost[:top] + p_cost[np.minimum(need[:top], len(p_cost) - 1)], np.inf)
    return subroutine._Slot(cost, w_order, w_caps, p_order, p_caps)


def reference_best_schedule(job, workers, ps, units="chunks"):
    """(completion, payoff, cost, workers (H, T), ps (K, T)) as the dense implementation computed them."""
    T = workers.slots
    H, K = workers.capacity.shape[0], ps.capacity.shape[0]
    none = (None, 0.0, 0.0, np.zeros((H, T), np.int64), np.zeros((K, T), np.int64))
    a = job.arrival
    total, per = (job.chunks, job.rho) if units == "chunks" else (job.work_slots, 1.0)
    if total == 0 or not job.runnable:
        return none
    w_unit = np.einsum("nrt,r->nt", workers.price, job.worker)[:, a:]
    p_unit = np.einsum("nrt,r->nt", ps.price, job.ps)[:, a:]
    w_caps = np.minimum(np.where(job.worker_ok[:, None], fit_counts(workers.free()[:, :, a:].transpose(0, 2, 1), job.worker), 0), job.hi)
    p_caps = np.minimum(np.where(job.ps_ok[:, None], fit_counts(ps.free()[:, :, a:].transpose(0, 2, 1), job.ps), 0), job.hi)
    most = np.minimum(w_caps.sum(axis=0), job.hi)
    if total > int(np.sum(np.where(most >= job.lo, floor(most / per), 0))):
        return none
    table = np.full(total + 1, np.inf)
    table[0] = 0.0
    tables, slots = [], []
    best, best_t = 0.0, None
    for t in range(a, T):
        f = float(job.value(t))
        if f <= best:
            break
        slot = _ref_slot(job, w_unit[:, t - a], w_caps[:, t - a], p_unit[:, t - a], p_caps[:, t - a])
        ys = np.flatnonzero(np.isfinite(slot.cost))
        d = np.minimum(floor(ys / per), total)
        d, first = np.unique(d, return_index=True)
        table = _ref_step(table, d, slot.cost[ys[first]]) if d[-1] > 0 else table.copy()
        tables.append(table)
        slots.append(slot)
        if f - table[total] > best:
            best, best_t = f - table[total], t
    if best_t is None:
        return none
    y = _unwind(tables[: best_t - a + 1], slots, total, per, job.lo)
    plan_w, plan_p = none[3].copy(), none[4].copy()
    for offset, count in enumerate(y):
        if count:
            plan_w[:, a + offset] = _ref_spread(count, slots[offset].w_order, slots[offset].w_caps, H)
            plan_p[:, a + offset] = _ref_spread(int(job.ps_needed(count)), slots[offset].p_order, slots[offset].p_caps, K)
    return best_t, best, float(tables[best_t - a][total]), plan_w, plan_p


@pytest.mark.parametrize("ranged", [False, True])
@pytest.mark.parametrize("units", ["chunks", "worker-slots"])
def test_best_schedule_is_bit_for_bit_the_dense_reference(units, ranged):
    for seed in range(40):
        _, job, pools = random_state(seed, units, ranged)
        if units == "chunks" and job.chunks > 400:
            continue
        plan = best_schedule(job, *pools, units=units)
        completion, payoff, cost, w, z = reference_best_schedule(job, *pools, units=units)
        assert (plan.completion, plan.payoff, plan.cost) == (completion, payoff, cost), seed
        assert np.array_equal(plan.workers.dense(), w) and np.array_equal(plan.ps.dense(), z), seed


def test_a_whole_oasis_run_is_the_dense_reference_run():
    """Every arriving job of a congested run planned by both, on the same (sparsely reserved) prices."""
    doc = generate(GenerateSpec(jobs=40, servers=3, seed=2, slots=12, options={"epochs_min": 1, "epochs_max": 6}))
    view = oasis_view(from_document(doc))
    policy = Oasis(view, formula_params(view))
    compared = admitted = 0
    original = policy.arrive

    def arrive(job, slot):
        nonlocal compared, admitted
        completion, payoff, _, w, z = reference_best_schedule(job, policy.workers, policy.pss)
        original(job, slot)
        plan = policy.plans.get(job.index)
        assert (job.index in policy.admitted) == (completion is not None)
        if plan is not None:
            assert np.array_equal(plan[0].dense(), w) and np.array_equal(plan[1].dense(), z)
            assert policy.payoff[job.index] == payoff
            admitted += 1
        compared += 1

    policy.arrive = arrive
    simulate(view, policy)
    assert compared == 40 and admitted >= 5


# --- the pieces ---------------------------------------------------------------------------------------

def test_sparse_reservation_equals_the_dense_one():
    rng = np.random.default_rng(0)
    capacity = rng.uniform(1, 10, size=(6, 3))
    dense = PricedPool(capacity, 5, 0.01, np.array([5.0, 8.0, 3.0]))
    sparse = PricedPool(capacity, 5, 0.01, np.array([5.0, 8.0, 3.0]))
    for _ in range(10):
        counts = rng.integers(0, 3, size=(6, 5)) * (rng.random((6, 5)) < 0.3)
        demand = rng.uniform(0, 0.5, 3)
        dense.reserve(counts, demand)
        sparse.reserve_counts(TaskCounts.from_dense(counts), demand)
        assert np.array_equal(dense.load, sparse.load) and np.array_equal(dense.price, sparse.price)
        for a in (0, 2):
            assert np.array_equal(sparse.fit(demand, a), fit_counts(sparse.free()[:, :, a:].transpose(0, 2, 1), demand))
            assert np.array_equal(sparse.unit_price(demand, a), dense.unit_price(demand)[:, a:])


def test_task_counts_round_trip():
    counts = np.array([[0, 2, 0, 1], [3, 0, 0, 0], [0, 0, 0, 4]])
    sparse = TaskCounts.from_dense(counts)
    assert np.array_equal(sparse.dense(), counts)
    assert sparse.used_slots() == [0, 1, 3] and sparse.total() == 10
    assert sparse.per_slot().tolist() == [3, 2, 0, 5]
    assert sparse.at(3).tolist() == [1, 0, 4] and sparse.at(2).tolist() == [0, 0, 0]
    sparse.put(1, np.zeros(3, np.int64))
    assert sparse.used_slots() == [0, 3]


@pytest.mark.parametrize("shift_min", [1, 10**9])
def test_both_dp_steps_give_the_same_table(shift_min, monkeypatch):
    monkeypatch.setattr(subroutine, "_SHIFT_MIN", shift_min)
    rng = np.random.default_rng(5)
    for _ in range(50):
        size = int(rng.integers(1, 600))
        old = np.sort(rng.uniform(0, 10, size))
        old[0] = 0.0
        old[rng.random(size) < 0.1] = np.inf
        d = np.unique(rng.integers(0, size, size=int(rng.integers(1, 40))))
        c = rng.uniform(0, 5, d.size)
        new, cut = subroutine._step(old, d, c)
        assert not cut and np.array_equal(new, _ref_step(old, d, c))


def test_the_view_no_longer_counts_jobs_in_its_cells(monkeypatch):
    """The per-slot arrays are slots x servers x resources; before issue 18 the jobs were counted too
    (the toy: 3 slots x 2 servers x (1 resource + 3 jobs) = 24 > 10 was refused)."""
    monkeypatch.setattr(view_module, "MAX_CELLS", 10)
    assert len(oasis_view(load_instance(TOY)).jobs) == 3
    monkeypatch.setattr(view_module, "MAX_CELLS", 5)
    with pytest.raises(InstanceError) as err:
        oasis_view(load_instance(TOY))
    assert err.value.field == "time.slots" and "slots x servers x resources" in str(err.value)


# --- the window capacity bound --------------------------------------------------------------------------

def _congested(seed: int, jobs: int = 8):
    return from_document(generate(GenerateSpec(jobs=jobs, servers=1 + seed % 2, seed=seed, slots=8,
                                               options={"epochs_min": 1, "epochs_max": 8})))


@pytest.mark.parametrize("seed", range(6))
def test_the_bound_is_above_the_optimum_and_every_checked_answer(seed):
    inst = _congested(seed)
    bound = FAMILY.lp_bound(inst, FAMILY.parse_options({}), SolveOptions(time_limit=60))
    assert bound.status == "optimal" and bound.objective == bound.bound
    opt = FAMILY.run(inst, "exact", SolveOptions(gap=0.0, time_limit=60))
    assert opt.report.status == "optimal"
    assert bound.objective >= opt.report.objective - 1e-9
    for method in FAMILY.methods:
        if method == "exact":
            continue
        sol = FAMILY.run(inst, method, SolveOptions(time_limit=60))
        check = check_solution(inst, sol)
        assert check.feasible, method
        assert bound.objective >= check.objective - 1e-9, method


def test_the_lp_rows_tighten_the_trivial_bound_on_a_busy_cluster(monkeypatch):
    monkeypatch.setattr(bound_module, "SMALL_MODEL", 0)  # the window LP alone
    inst = from_document(generate(GenerateSpec(jobs=60, servers=2, seed=1, slots=20)))
    report = FAMILY.lp_bound(inst, FAMILY.parse_options({}), SolveOptions(time_limit=60))
    lp = window_lp(oasis_view(inst))
    trivial = lp.dual_bound(np.zeros(lp.rows + lp.chain.shape[0]))
    assert lp.rows > 0 and report.objective < 0.5 * trivial
    # any row prices give a bound no lower than the LP's optimum (the one HiGHS found, here)
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.exponential(rng.choice([1e-3, 1e-1, 10.0]), size=lp.rows + lp.chain.shape[0]) * rng.choice([-1, 1])
        assert lp.dual_bound(y) >= report.objective * (1 - 1e-6)


def test_on_a_small_instance_the_tighter_of_the_two_relaxations_is_reported():
    """The toy: the window LP gives 41, the exact model's LP relaxation 37 (= the optimum)."""
    report = FAMILY.lp_bound(load_instance(TOY), FAMILY.parse_options({}), SolveOptions(time_limit=60))
    assert report.objective == pytest.approx(37) and "LP relaxation gives 37" in report.message


def test_the_bound_keeps_to_its_time_limit():
    inst = _congested(0, jobs=30)
    late = capacity_bound(inst, FAMILY.parse_options({}), SolveOptions(time_limit=1e-9))
    assert late.status == "time-limit-no-solution" and late.bound is None


def test_the_bound_without_room_for_the_lp_is_the_trivial_one(monkeypatch):
    inst = _congested(1, jobs=30)
    monkeypatch.setattr(bound_module, "MAX_NONZEROS", 0)
    monkeypatch.setattr(bound_module, "SMALL_MODEL", 0)
    report = capacity_bound(inst, FAMILY.parse_options({}), SolveOptions(time_limit=60))
    view = oasis_view(inst)
    best = 0.0
    for job in view.jobs:
        fig_e = bound_module.job_figures(view)["e"][job.index]
        if fig_e < view.slots:
            best += max(float(np.max(job.value(np.arange(fig_e, view.slots)))), 0.0)
    assert report.objective == pytest.approx(best, rel=1e-8) and "every job at its best utility" in report.message

