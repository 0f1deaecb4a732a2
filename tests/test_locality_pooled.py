"""Locality under load (issue 32): the pooled-capacity Lagrangian bound, ``srpt`` and the pooled search of
``--method exact``.

The bound is checked against the exhaustive oracle (never above the optimum, at the column
generation's prices and at random prices), against every checked answer, and piece by piece (each
job's subproblem against brute force and against an LP solver).  Every assertion is on results,
none on timings."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from scipy.optimize import linprog

from mlsched_opt.errors import ModelTooLarge
from mlsched_opt.io import load_instance
from mlsched_opt.io.solution import Solution
from mlsched_opt.problems import REGISTRY, check_solution
from mlsched_opt.problems.locality import exact as exact_module
from mlsched_opt.problems.locality.bound import (
    Generation,
    capacity_bound,
    cover_costs,
    lagrangian,
    price_job,
    pricing,
    schedule_columns,
    standalone_bound,
    standalone_delays,
)
from mlsched_opt.problems.locality.decision import MAX_EXACT_CELLS, model_cells
from mlsched_opt.problems.locality.formulation import build_model
from mlsched_opt.problems.locality.priority import rates, simulate, srpt_plan
from mlsched_opt.problems.locality.view import locality_view, total_delay
from mlsched_opt.report import SolveReport
from mlsched_opt.solvers import SolveOptions

from .conftest import ROOT
from .test_locality_scale import generated as generated_scale
from .test_oracle_locality import generated, oracle

FAMILY = REGISTRY["locality"]
ANSWERS = ("srpt", "greedy-rr", "pd-rr", "colocate", "spread", "unaware")


def tiny(seed: int, jobs: int, servers: int, slots: int, gpus: int):
    inst = generated(seed, jobs, servers, slots, gpus)
    assume(inst is not None)
    return inst


@pytest.mark.parametrize("placement", ["free", "with-workers"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(seed=st.integers(0, 10**6), jobs=st.integers(1, 3), servers=st.integers(1, 3), slots=st.integers(2, 4),
       gpus=st.integers(1, 2), scale=st.floats(0.0, 3.0))
def test_the_bound_is_never_above_the_oracles_optimum(placement, seed, jobs, servers, slots, gpus, scale):
    """Weak duality, end to end: the family's bound, and the Lagrangian at random prices (any prices >= 0
    bound the optimum, not only the column generation's), never exceed the exhaustive optimum."""
    inst = tiny(seed, jobs, servers, slots, gpus)
    value, _decision = oracle(inst, placement)
    options = FAMILY.resolve_options(inst, {"ps_placement": placement})
    report = capacity_bound(inst, options, SolveOptions(time_limit=30))
    assert report.bound is not None and report.bound <= value + 1e-9
    view = locality_view(inst)
    assert report.bound >= float(standalone_delays(view) @ [j.weight for j in view.jobs]) - 1e-9
    rng = np.random.default_rng(seed)
    prices = scale * rng.exponential(size=(view.slots, len(view.resources))) * (rng.random((view.slots, len(view.resources))) < 0.7)
    assert lagrangian(view, pricing(view), prices)[0] <= value + 1e-9


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), servers=st.integers(1, 4), load=st.sampled_from([1.0, 3.0]))
def test_the_bound_is_below_every_checked_answer_and_the_exact_optimum(seed, servers, load):
    inst = generated_scale(jobs=6, servers=servers, slots=6, seed=seed, work_min=1.0, work_max=6.0 * load)
    options = FAMILY.resolve_options(inst, {})
    bound = FAMILY.lp_bound(inst, options, SolveOptions(time_limit=30))
    assert bound.status == "optimal" and bound.bound is not None
    for method in ANSWERS:
        sol = FAMILY.run(inst, method, SolveOptions(seed=seed))
        check = check_solution(inst, sol)
        assert check.feasible, (method, [str(v) for v in check.violations])
        assert bound.bound <= check.objective + 1e-9, method


def _brute(view, p, i, prices):
    """Least ``w (C - a + 1) + priced usage`` over whole-mode choices per slot (or the unfinished charge)."""
    job, modes = view.jobs[i], p.modes[i]
    best = job.weight * view.penalty_delay(i)
    cost = prices @ modes.use.T                                                         # (T, M)
    for C in range(job.arrival, view.slots):
        span = range(job.arrival, C + 1)
        for choice in itertools.product(range(-1, len(modes.work)), repeat=len(span)):
            work = sum(modes.work[m] for m in choice if m >= 0)
            if work >= p.need[i]:
                best = min(best, job.weight * (C - job.arrival + 1) + sum(cost[t, m] for t, m in zip(span, choice) if m >= 0))
    return best


def _lp(view, p, i, prices):
    """The same minimum with the mode choice relaxed (``sum_m x[t, m] <= 1``), by SciPy's LP solver, and C
    no earlier than the standalone delay allows."""
    job, modes = view.jobs[i], p.modes[i]
    best = job.weight * view.penalty_delay(i)
    M = len(modes.work)
    for C in range(job.arrival + int(p.first[i]), view.slots):
        L = C - job.arrival + 1
        cost = (prices[job.arrival:C + 1] @ modes.use.T).ravel()
        a_ub = [np.repeat(np.eye(L), M, axis=1), -np.tile(modes.work, L)[None, :]]
        res = linprog(cost, A_ub=np.vstack(a_ub), b_ub=np.concatenate([np.ones(L), [-p.need[i]]]), bounds=(0, 1), method="highs")
        if res.status == 0:
            best = min(best, job.weight * L + res.fun)
    return best


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(seed=st.integers(0, 10**6), servers=st.integers(1, 3), gpus=st.integers(1, 4), scale=st.floats(0.0, 2.0))
def test_each_jobs_subproblem_bounds_its_schedules_exactly_when_it_has_one_mode(seed, servers, gpus, scale):
    """:func:`price_job` is at most the brute-force minimum over whole modes per slot, equal to it for a
    one-mode job, and equal to the LP relaxation (by another LP solver) for a job of several modes."""
    inst = tiny(seed, 2, servers, 3, gpus)
    view = locality_view(inst)
    p = pricing(view)
    rng = np.random.default_rng(seed)
    prices = scale * rng.exponential(size=(view.slots, len(view.resources)))
    for i in range(len(view.jobs)):
        value, column = price_job(view, p, i, prices)
        brute = _brute(view, p, i, prices)
        assert value <= brute + 1e-7
        if len(p.modes[i].work) == 1:
            assert value == pytest.approx(brute, abs=1e-7)
        else:
            assert value == pytest.approx(min(_lp(view, p, i, prices), brute), rel=1e-6, abs=1e-6)
        if column is not None:                        # the column is worth what the subproblem says at these prices
            assert column.cost + float(prices.ravel()[column.flat] @ column.amount) == pytest.approx(value, abs=1e-7)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), slots=st.integers(1, 6), modes=st.integers(1, 6), share=st.floats(0.05, 1.0))
def test_the_covering_lp_takes_the_hull_segments_by_slope(seed, slots, modes, share):
    """:func:`cover_costs` (Sinha and Zoltners' greedy) equals the multiple-choice covering LP solved by
    SciPy, for every last slot, on random works and costs (``inf`` where the slots cannot cover)."""
    rng = np.random.default_rng(seed)
    work = np.sort(rng.uniform(0.5, 5.0, modes))
    cost = rng.uniform(0.0, 4.0, (slots, modes)) * (rng.random((slots, modes)) < 0.9)
    need = share * slots * work.max()
    covered, _parts = cover_costs(work, cost, need)
    for end in range(slots):
        L = end + 1
        res = linprog(cost[:L].ravel(), A_ub=np.vstack([np.repeat(np.eye(L), modes, axis=1), -np.tile(work, L)[None, :]]),
                      b_ub=np.concatenate([np.ones(L), [-need]]), bounds=(0, 1), method="highs")
        if res.status == 2:
            assert covered[end] == np.inf
        else:
            assert covered[end] <= res.fun + 1e-7                  # never above the LP (a valid bound) ...
            assert covered[end] == pytest.approx(res.fun, rel=1e-6, abs=1e-7)   # ... and no lower than its slack on the work


@pytest.mark.parametrize("options", [{}, {"ps_placement": "with-workers"}, {"locality": "pair"}])
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10**6), servers=st.integers(1, 12))
def test_srpt_answers_are_checked_and_repeatable(options, seed, servers):
    inst = generated_scale(jobs=25, servers=servers, slots=14, seed=seed, work_min=1.0, work_max=10.0)
    sol = FAMILY.run(inst, "srpt", SolveOptions(seed=0), options)
    check = check_solution(inst, sol, options=options)
    assert check.feasible, [str(v) for v in check.violations]
    assert check.objective == pytest.approx(sol.report.objective)
    assert FAMILY.run(inst, "srpt", SolveOptions(seed=5), options).decision == sol.decision   # nothing random in it


def test_srpt_plans_a_subset_into_what_the_others_leave():
    """The search's building block: a job taken out and planned again lands where it was (same rule, same room)."""
    view = locality_view(generated_scale(jobs=30, servers=3, slots=20, seed=4, work_min=1.0, work_max=8.0))
    plan, cut = srpt_plan(view, "job")
    assert not cut
    before = total_delay(view, plan.completion)
    last = max(plan.completion, key=lambda i: (plan.completion[i], i))
    tasks = plan.tasks[last]
    plan.release(view, [last])
    assert last not in plan.completion
    simulate(view, [last], plan, "job", rates(view, "job"))
    assert plan.tasks[last] == tasks and total_delay(view, plan.completion) == before


def test_a_model_over_the_size_limit_is_too_large_not_a_refusal():
    """Before issue 32 the size guard raised InstanceError, which --method exact turned into a refusal."""
    inst = generated_scale(jobs=60, servers=20, slots=60, seed=1)
    assert model_cells(locality_view(inst)) > MAX_EXACT_CELLS
    with pytest.raises(ModelTooLarge):
        build_model(inst, FAMILY.resolve_options(inst, {}))


def test_exact_beyond_the_milp_answers_with_a_proven_gap_and_the_same_answer_twice():
    """Past MILP_CELLS the pooled search answers: checked, at most its bound's gap, repeatable."""
    inst = generated_scale(jobs=60, servers=4, slots=24, seed=2, work_min=2.0, work_max=12.0)
    assert model_cells(locality_view(inst)) > exact_module.MILP_CELLS
    solve = SolveOptions(seed=0, time_limit=120)
    sol = FAMILY.run(inst, "exact", solve)
    check = check_solution(inst, sol)
    assert check.feasible, [str(v) for v in check.violations]
    assert sol.report.status == "feasible" and sol.report.bound is not None
    assert sol.report.bound <= check.objective + 1e-9
    assert sol.report.objective <= FAMILY.run(inst, "srpt", solve).report.objective   # never worse than its start
    again = FAMILY.run(inst, "exact", solve)
    assert again.decision == sol.decision and again.report.bound == sol.report.bound


def test_exact_keeps_the_milps_certified_optimum_where_it_is_small():
    inst = generated_scale(jobs=3, servers=2, slots=4, seed=3, work_min=1.0, work_max=6.0)
    sol = FAMILY.run(inst, "exact", SolveOptions(gap=0.0, time_limit=60))
    assert sol.report.status == "optimal" and sol.report.certified_by
    assert check_solution(inst, sol).feasible


def test_the_column_generation_reaches_the_master_and_its_plan_is_realized():
    """At convergence the best Lagrangian value is the master LP's optimum (the Lagrangian dual), and the
    restricted master's integer plan, followed on the machines, is a schedule the checker accepts."""
    inst = generated_scale(jobs=40, servers=3, slots=16, seed=6, work_min=1.0, work_max=8.0)
    view = locality_view(inst)
    plan, _ = srpt_plan(view, "job")
    gen = Generation(view)
    gen.add(schedule_columns(view, plan.tasks, plan.completion))
    result = gen.run()
    assert result.stopped.startswith("converged") and result.master is not None
    assert result.value <= result.master + 1e-6 * max(1.0, result.master)
    assert math.ceil(result.value - 1e-9 * result.value) >= math.floor(result.master)    # the integral bound reaches the master's
    assert result.value <= total_delay(view, plan.completion) + 1e-9
    picked, _status = gen.integer_plan(None, 1000)
    assert picked
    better, _note = exact_module.realize(view, "job", picked, None)
    sol_decision = exact_module.plan_decision(view, better)
    report = SolveReport("feasible", total_delay(view, better.completion), None, "min", "test", "", {})
    sol = Solution.for_instance(inst, "locality", "exact", report, sol_decision, FAMILY.resolve_options(inst, {}))
    check = check_solution(inst, sol)
    assert check.feasible, [str(v) for v in check.violations]
    assert check.objective >= result.value - 1e-9


@pytest.mark.parametrize(("name", "optimum", "alone", "pooled"), [("locality-toy.toml", 5.0, 4.0, 5.0),
                                                                 ("locality-6jobs.toml", 26.0, 21.0, 25.0)])
def test_the_family_bound_binds_on_the_shipped_instances(name, optimum, alone, pooled):
    """Where jobs share capacity the pooled bound rises above every job alone (the family's bound before
    issue 32), up to the certified optimum on the toy (spec 001 section 7: OPT 5)."""
    inst = load_instance(ROOT / "instances" / name)
    options = FAMILY.resolve_options(inst, {})
    assert standalone_bound(inst, options, SolveOptions(time_limit=30)).bound == alone
    assert FAMILY.lp_bound(inst, options, SolveOptions(time_limit=30)).bound == pooled <= optimum


def test_beyond_the_pooled_size_the_bound_is_every_job_alone(monkeypatch):
    """A size guard, not a refusal: past POOLED_CELLS the relaxation and exact's bound are the standalone bound."""
    from mlsched_opt.problems.locality import bound as bound_module

    inst = generated_scale(jobs=12, servers=2, slots=10, seed=1, work_min=1.0, work_max=6.0)
    options = FAMILY.resolve_options(inst, {})
    alone = standalone_bound(inst, options, SolveOptions(time_limit=30)).bound
    assert capacity_bound(inst, options, SolveOptions(time_limit=30)).bound > alone     # the pooled bound binds here ...
    monkeypatch.setattr(bound_module, "POOLED_CELLS", 10)
    report = capacity_bound(inst, options, SolveOptions(time_limit=30))
    assert report.bound == alone and "every job alone" in report.message                 # ... and is not computed past the guard
    found = exact_module.pooled_search(locality_view(inst), "job", SolveOptions(time_limit=30))
    assert found.report.bound == alone and found.decision is not None
