"""Locality at production scale (issue 18): the per-slot host restriction of V-Greedy's program, the
chunked deadline scan, the anytime earliest-fit fallback, the standalone lower bound and the sparse
checker.  Every assertion is on results, none on timings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mlsched_opt.io.instance import from_document
from mlsched_opt.problems import REGISTRY, GenerateSpec, check_solution
from mlsched_opt.problems.locality.bound import standalone_bound, standalone_delays
from mlsched_opt.problems.locality.online import Window, earliest_fit, scale_of, v_greedy
from mlsched_opt.problems.locality.pcilp import (
    CO_LOCATED,
    SPREAD,
    LocalityJob,
    earliest_deadline,
    host_patterns,
    largest_fit,
    patterns,
    solve_lp,
)
from mlsched_opt.problems.locality.view import locality_view
from mlsched_opt.solvers import SolveOptions

FAMILY = REGISTRY["locality"]
RANDOMIZED = ("greedy-rr", "pd-rr", "greedy-ilp", "unaware", "colocate", "spread")


def generated(jobs: int, servers: int, slots: int, seed: int, **options):
    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed, slots=slots, options=FAMILY.parse_generate_options(options))
    return from_document(FAMILY.generate(spec))


def random_job(rng: np.random.Generator, w_max: int) -> LocalityJob:
    return LocalityJob("j", 0, float(rng.uniform(2, 40)), 1.5, 1.0, np.array([1.0, float(rng.integers(0, 3))]),
                       np.array([1.0, 0.0]), int(rng.integers(1, 4)), w_max)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), machines=st.integers(2, 9), w_max=st.integers(1, 4), kinds=st.sampled_from(
    [(CO_LOCATED, SPREAD), (CO_LOCATED,), (SPREAD,)]))
def test_the_host_restricted_program_has_the_full_programs_optimum(seed, machines, w_max, kinds):
    """Exactness of :func:`host_patterns`: on the w_max best machines per slot the 0-1 program's optimum
    (and its feasibility) equals the program on every machine, and its LP is never below the full LP."""
    rng = np.random.default_rng(seed)
    job = random_job(rng, w_max)
    residual = rng.integers(0, 7, size=(machines, 2, 3)).astype(float)
    window = Window(job, 0, residual, scale_of(residual.max(axis=2)))
    for deadline in range(3):
        full = patterns(job, 0, deadline, residual, kinds=kinds)
        hosts = window.hosts(deadline + 1, min(w_max, machines))
        mine = host_patterns(job, 0, window.fit[:, :deadline + 1], hosts, kinds=kinds)
        assert mine.size <= (deadline + 1) * w_max * w_max * len(kinds)
        z_full, z_mine = solve_lp(full, integer=True), solve_lp(mine, integer=True)
        assert (z_full is None) == (z_mine is None)
        if z_full is not None:
            assert float(mine.cost @ z_mine) == pytest.approx(float(full.cost @ z_full))
            assert float(mine.work @ z_mine) >= job.work - 1e-9
        lp_full, lp_mine = solve_lp(full), solve_lp(mine)
        if lp_mine is not None:
            assert lp_full is not None and float(mine.cost @ lp_mine) >= float(full.cost @ lp_full) - 1e-7


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), machines=st.integers(1, 6), slots=st.integers(1, 40), w_max=st.integers(1, 8))
def test_the_chunked_scan_finds_the_same_earliest_deadline(seed, machines, slots, w_max):
    rng = np.random.default_rng(seed)
    job = random_job(rng, w_max)
    residual = rng.integers(0, 7, size=(machines, 2, slots)).astype(float)
    start = int(rng.integers(0, slots))
    window = Window(job, start, residual, scale_of(residual.max(axis=2)))
    assert window.earliest_deadline(0.0, (CO_LOCATED, SPREAD), None) == earliest_deadline(job, start, residual)
    dense = np.where(job.demand(np.arange(1, w_max + 1))[None, :, :, None] <= residual[:, None, :, :] + 1e-9, 1, 0)
    assert (largest_fit(job, residual) == (dense.all(axis=2) * np.arange(1, w_max + 1)[None, :, None]).max(axis=1)).all()


def test_earliest_fit_is_a_feasible_plan_within_the_residual():
    rng = np.random.default_rng(4)
    for _ in range(30):
        job = random_job(rng, int(rng.integers(1, 9)))
        residual = rng.integers(0, 9, size=(12, 2, 10)).astype(float)
        tasks = earliest_fit(job, Window(job, 2, residual, scale_of(residual.max(axis=2))))
        if tasks is None:
            continue
        used = np.zeros_like(residual)
        per_slot: dict[int, int] = {}
        for t, h, n in tasks:
            assert t >= 2 and n >= 1
            used[h, :, t] += job.demand(n)
            per_slot[t] = per_slot.get(t, 0) + n
        assert (used <= residual + 1e-9).all() and max(per_slot.values()) <= job.w_max


@pytest.mark.parametrize("method", ["greedy-rr", "pd-rr"])
def test_at_the_deadline_every_job_still_gets_a_checked_plan(method):
    """Anytime: past the limit before the first job, the earliest-fit fallback plans every job; the answer passes the checker."""
    inst = generated(jobs=12, servers=20, slots=12, seed=5)
    sol = FAMILY.run(inst, method, SolveOptions(seed=0, time_limit=1e-9))
    assert sol.report.status == "feasible"
    assert "12 of 12 jobs planned by the earliest-fit fallback" in sol.report.message
    check = check_solution(inst, sol)
    assert check.feasible, [str(v) for v in check.violations]
    assert sol.decision["admitted"]  # the fallback schedules jobs, it does not just stop
    again = FAMILY.run(inst, method, SolveOptions(seed=0, time_limit=1e-9))
    assert again.decision == sol.decision


def test_v_greedy_falls_back_for_the_jobs_left_when_the_limit_passes():
    view = locality_view(generated(jobs=10, servers=15, slots=12, seed=2))
    out = v_greedy(view.jobs, view.capacity, view.slots, stop_at=0.0)
    assert out.cut_short and sorted(out.fallback) == list(range(10)) and out.lps == 0
    assert set(out.tasks) | set(out.rejected) == set(range(10))


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10**6), servers=st.integers(1, 3))
def test_standalone_bound_is_below_the_exact_optimum_and_every_checked_answer(seed, servers):
    inst = generated(jobs=3, servers=servers, slots=4, seed=seed, work_min=1.0, work_max=6.0)
    bound = FAMILY.lp_bound(inst, FAMILY.resolve_options(inst, {}), SolveOptions(time_limit=10))
    assert bound.status == "optimal" and bound.bound is not None
    exact = FAMILY.run(inst, "exact", SolveOptions(gap=0.0, time_limit=60, certify=False))
    assert exact.report.status == "optimal" and bound.bound <= exact.report.objective + 1e-9
    for method in RANDOMIZED:
        sol = FAMILY.run(inst, method, SolveOptions(seed=seed))
        check = check_solution(inst, sol)
        assert check.feasible and bound.bound <= check.objective + 1e-9


def test_standalone_bound_on_many_machines_and_pair_locality():
    inst = generated(jobs=15, servers=40, slots=16, seed=3)
    for locality in ("job", "pair"):
        options = FAMILY.resolve_options(inst, {"locality": locality})
        bound = standalone_bound(inst, options, SolveOptions(time_limit=10))
        sol = FAMILY.run(inst, "greedy-rr", SolveOptions(seed=1), {"locality": locality})
        check = check_solution(inst, sol, options={"locality": locality})
        assert check.feasible, [str(v) for v in check.violations]
        assert 0 < bound.bound <= check.objective + 1e-9
    view = locality_view(inst)
    assert (standalone_delays(view, "pair") <= standalone_delays(view, "job")).all()
    assert (standalone_delays(view) >= 1).all()


def test_the_bound_gives_up_cleanly_without_time():
    inst = generated(jobs=5, servers=4, slots=8, seed=0)
    report = standalone_bound(inst, FAMILY.resolve_options(inst, {}), SolveOptions(time_limit=1e-9))  # past before the first job
    assert report.status == "time-limit-no-solution" and report.bound is None


def test_checker_counts_capacity_per_slot_and_machine_on_a_sparse_schedule():
    inst = generated(jobs=4, servers=30, slots=6, seed=7)
    sol = FAMILY.run(inst, "greedy-rr", SolveOptions(seed=0))
    assert check_solution(inst, sol).feasible
    view = locality_view(inst)
    job = next(k for k, j in enumerate(view.jobs) if sol.decision["schedule"].get(j.id))
    entry = sol.decision["schedule"][view.jobs[job].id][0]
    name = next(iter(entry["workers"]))
    h = view.servers.index(name)
    too_many = int(np.max(view.capacity[h] / np.maximum(view.jobs[job].alpha, 1e-9))) + 1
    entry["workers"][name] = too_many
    entry["ps"] = {name: too_many}
    broken = check_solution(inst, sol)
    assert "capacity" in {v.rule for v in broken.violations}
    assert any(f"slot {entry['slot']}, {name}," in v.where for v in broken.violations if v.rule == "capacity")
