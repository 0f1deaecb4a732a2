"""OASiS (spec 000): the toy of section 7, the subroutine against exact programs, prices, ratio, I/O."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest

from mlsched_opt.io import from_document, load_instance, read_document
from mlsched_opt.io.solution import read_solution
from mlsched_opt.problems import REGISTRY, GenerateSpec, check_solution
from mlsched_opt.problems.oasis.formulation import single_job_model
from mlsched_opt.problems.oasis.generate import generate
from mlsched_opt.problems.oasis.online import Oasis, simulate
from mlsched_opt.problems.oasis.prices import formula_params, given_params
from mlsched_opt.problems.oasis.subroutine import best_schedule, slot_cost
from mlsched_opt.problems.oasis.view import fit_counts, oasis_view
from mlsched_opt.problems.pricing import PricedPool
from mlsched_opt.solvers import SolveOptions, solve

from .conftest import ROOT, shared_data

TOY = ROOT / "instances" / "oasis-toy.toml"
FAMILY = REGISTRY["oasis"]
EXACT = SolveOptions(gap=0.0, time_limit=60)


def run_toy(params_of):
    view = oasis_view(load_instance(TOY))
    policy = Oasis(view, params_of(view))
    outcome = simulate(view, policy)
    return view, policy, outcome


# --- the toy of section 7 -------------------------------------------------------------------

def test_toy_given_prices_admits_1_and_2_for_28():
    view, policy, outcome = run_toy(lambda v: given_params(v, 1, 16, 1, 4))
    assert sorted(view.jobs[i].id for i in outcome.completion) == ["1", "2"]
    assert outcome.utility(view) == pytest.approx(28)
    assert policy.payoff == {0: pytest.approx(14), 1: pytest.approx(5)}
    # job 1 runs (2, 2) workers and (1, 1) PSs; job 2 shifts to the cheap slot 3 (0-based 2)
    assert policy.plans[0][0].dense().tolist() == [[2, 2, 0]] and policy.plans[0][1].dense().tolist() == [[1, 1, 0]]
    assert policy.plans[1][0].dense().tolist() == [[0, 0, 2]] and policy.plans[1][1].dense().tolist() == [[0, 0, 1]]
    assert policy.workers.price[0, 0].tolist() == pytest.approx([4, 4, 4])
    assert policy.pss.price[0, 0].tolist() == pytest.approx([2, 2, 2])


def test_toy_formula_prices_variant_b():
    view = oasis_view(load_instance(TOY))
    p = formula_params(view)
    assert (p.L1, p.L2, p.eta1, p.eta2) == pytest.approx((0.09375, 0.1875, 6, 3))
    assert p.U1.tolist() == [20] and p.U2.tolist() == [20]
    assert p.alpha == pytest.approx(math.log(20 / 0.09375))
    assert 2 * p.alpha == pytest.approx(10.73, abs=0.01)
    view, policy, outcome = run_toy(formula_params)
    assert policy.payoff == {0: pytest.approx(19.25), 1: pytest.approx(7.625)}
    assert outcome.utility(view) == pytest.approx(28)
    # after job 1: p = 0.09375 * 213.33^(1/2), q = 0.1875 * 106.67^(1/2) in slots 1-2
    assert policy.workers.price[0, 0, 0] == pytest.approx(1.3693, abs=1e-4)
    # job 3 is rejected: slot 2 now costs 2 x 1.3693 + 1.9365 per slot for the forced plan (2, 2)... in slots 2-3
    job3 = view.jobs[2]
    fresh = Oasis(view, formula_params(view))
    for i in (0, 1):
        fresh.arrive(view.jobs[i], view.jobs[i].arrival)
    assert best_schedule(job3, fresh.workers, fresh.pss).completion is None


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_toy_offline_optimum_is_37(solver):
    inst = load_instance(TOY)
    sol = FAMILY.run(inst, "exact", SolveOptions(solver=solver, gap=0.0, time_limit=30))
    assert sol.report.status == "optimal"
    assert sol.report.objective == pytest.approx(37)
    assert check_solution(inst, sol).feasible
    assert sorted(sol.decision["admitted"]) == ["1", "2", "3"]


def test_toy_job_2_payoffs_per_deadline():
    """Spec: after job 1, job 2's payoff is 2 at deadline slot 2 and 5 at slot 3 (the (0, 2) plan)."""
    view = oasis_view(load_instance(TOY))
    policy = Oasis(view, given_params(view, 1, 16, 1, 4))
    policy.arrive(view.jobs[0], 0)
    job2 = view.jobs[1]
    w = policy.workers.unit_price(job2.worker)
    p = policy.pss.unit_price(job2.ps)
    # slot 2 alone: 2 workers at 4 + 1 PS at 2 = 10; payoff 12 - 10
    assert 12 - (2 * w[0, 1] + p[0, 1]) == pytest.approx(2)
    plan = best_schedule(job2, policy.workers, policy.pss)
    assert (plan.completion, plan.payoff, plan.cost) == (2, pytest.approx(5), pytest.approx(3))


# --- prices -------------------------------------------------------------------------------------

def test_price_is_L_when_idle_and_U_when_full():
    pool = PricedPool(np.array([[4.0, 10.0]]), 3, 0.5, np.array([8.0, 20.0]))
    assert pool.price[0, :, 0].tolist() == [0.5, 0.5]
    pool.reserve(np.array([[4, 0, 2]]), np.array([1.0, 2.5]))
    assert pool.price[0, :, 0].tolist() == pytest.approx([8.0, 20.0])
    assert pool.price[0, :, 1].tolist() == [0.5, 0.5]
    assert pool.price[0, :, 2].tolist() == pytest.approx([0.5 * 16 ** 0.5, 0.5 * 40 ** 0.5])


def test_misestimation_scales_u_over_l():
    view = oasis_view(load_instance(TOY))
    p = formula_params(view)
    q = p.scaled(3.0)
    assert q.L1 == p.L1 and q.U1[0] / q.L1 == pytest.approx(3 * p.U1[0] / p.L1)
    assert p.scaled(1e-9).U1[0] == p.L1  # U never drops below L


# --- the subroutine against exact programs -------------------------------------------------------

def random_state(seed: int, units: str = "worker-slots", ranged: bool = False):
    """A generated instance with random loads and prices, and one job to plan (with random size ranges if ``ranged``)."""
    rng = np.random.default_rng(seed)
    doc = generate(GenerateSpec(jobs=3, servers=int(rng.integers(1, 3)), seed=seed, slots=int(rng.integers(3, 7)),
                                options={"epochs_min": 1, "epochs_max": 4}))
    view = oasis_view(from_document(doc))
    job = view.jobs[int(rng.integers(len(view.jobs)))]
    job = type(job)(**{**job.__dict__, "arrival": int(rng.integers(0, view.slots))})
    if ranged:
        extra = np.random.default_rng(seed + 1000)
        p_lo = int(extra.integers(1, 4))
        job = type(job)(**{**job.__dict__, "workers_min": int(extra.integers(1, 8)), "ps_min": p_lo,
                           "ps_max": p_lo + int(extra.integers(0, 3))})
    L = float(rng.uniform(0.001, 0.05))
    pools = [PricedPool(view.worker_capacity, view.slots, L, rng.uniform(1, 50, len(view.resources))),
             PricedPool(view.ps_capacity, view.slots, L, rng.uniform(1, 50, len(view.resources)))]
    for pool in pools:
        for _ in range(3):
            counts = rng.integers(0, 4, size=(pool.capacity.shape[0], view.slots))
            demand = rng.uniform(0, 0.3, len(view.resources)) * pool.capacity.max(axis=0)
            if np.all(pool.free() - counts[:, None, :] * demand[None, :, None] >= 0):
                pool.reserve(counts, demand)
    return view, job, pools


def exact_payoff(job, pools, T, units):
    w_pool, p_pool = pools
    w_caps = np.minimum(np.where(job.worker_ok[:, None], fit_counts(w_pool.free().transpose(0, 2, 1), job.worker), 0), job.cap)
    p_caps = np.minimum(np.where(job.ps_ok[:, None], fit_counts(p_pool.free().transpose(0, 2, 1), job.ps), 0), job.cap)
    model = single_job_model(job, T, w_pool.unit_price(job.worker), p_pool.unit_price(job.ps), w_caps, p_caps, units)
    report = solve(model, EXACT)
    assert report.status == "optimal"
    return report.objective


@pytest.mark.parametrize("ranged", [False, True])
@pytest.mark.parametrize("units", ["worker-slots", "chunks"])
def test_best_schedule_equals_the_single_job_program(units, ranged):
    """Algorithm 2 is optimal for one job at fixed prices: its payoff equals the exact program's (27),
    also when the job's size ranges bind (workers.min, ps.min, ps.max)."""
    checked = positive = 0
    for seed in range(40):
        view, job, pools = random_state(seed, ranged=ranged)
        if units == "chunks" and job.chunks > 400:
            continue
        plan = best_schedule(job, *pools, units=units)
        opt = exact_payoff(job, pools, view.slots, units)
        assert plan.payoff == pytest.approx(max(opt, 0.0), rel=1e-7, abs=1e-7), (seed, plan.payoff, opt)
        checked += 1
        positive += plan.payoff > 0
        if plan.admitted:
            # the plan itself is what it claims: enough work, cost at the given prices, completion = last worker slot
            workers, pss = plan.workers.dense(), plan.ps.dense()
            assert workers.sum() >= job.work - 1e-9
            cost = float((workers * pools[0].unit_price(job.worker)).sum() + (pss * pools[1].unit_price(job.ps)).sum())
            assert cost == pytest.approx(plan.cost)
            assert np.flatnonzero(workers.any(axis=0))[-1] == plan.completion
            assert plan.payoff == pytest.approx(float(job.value(plan.completion)) - cost)
            y, z = workers.sum(axis=0), pss.sum(axis=0)
            run = y > 0
            assert np.all((y[run] >= job.lo) & (y[run] <= job.hi) & (z[run] >= job.ps_min) & (z[run] <= job.ps_max))
            assert np.all(z[~run] == 0)
    assert checked >= 30 and positive >= (5 if ranged else 10)


@pytest.mark.parametrize("ranges", [{"ps_max": 5}, {"workers_min": 2, "ps_min": 2, "ps_max": 2}, {"workers_min": 3, "ps_max": 5}])
def test_slot_cost_greedy_equals_brute_force(ranges):
    """COST_t against every placement of y workers and the PSs they need, within the job's size ranges."""
    rng = np.random.default_rng(7)
    view = oasis_view(load_instance(TOY))
    job = view.jobs[0]
    job = type(job)(**{**job.__dict__, "cap": 5, "b": 1.0, "B": 2.0, "fit": None, **ranges})
    lo, ps_min, ps_max = ranges.get("workers_min", 1), ranges.get("ps_min", 1), ranges["ps_max"]
    for _ in range(100):
        H, K = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        w_unit, p_unit = rng.uniform(0, 5, H).round(1), rng.uniform(0, 5, K).round(1)
        w_caps, p_caps = rng.integers(0, 3, H), rng.integers(0, 3, K)
        slot = slot_cost(job, w_unit, w_caps, p_unit, p_caps)
        for y in range(job.cap + 1):
            best = math.inf
            for ws in itertools.product(*(range(c + 1) for c in w_caps)):
                if sum(ws) != y or (y and y < lo):
                    continue
                for zs in itertools.product(*(range(c + 1) for c in p_caps)):
                    z = sum(zs)
                    if (y == 0 and z == 0) or (y and max(ps_min, math.ceil(y / 2)) <= z <= min(y, ps_max)):
                        best = min(best, float(np.dot(ws, w_unit) + np.dot(zs, p_unit)))
            got = slot.cost[y] if y < slot.cost.size else math.inf
            assert got == pytest.approx(best), (y, w_unit, w_caps, p_unit, p_caps)


def test_chunk_and_worker_slot_dp_agree_when_a_chunk_is_one_worker_slot():
    inst = load_instance(TOY)
    a = FAMILY.run(inst, "oasis", EXACT, {"units": "chunks"})
    b = FAMILY.run(inst, "oasis", EXACT, {"units": "worker-slots"})
    assert a.decision["schedule"] == b.decision["schedule"]


# --- against the offline optimum ------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_ratio_to_the_proven_optimum_is_within_2_alpha(seed):
    doc = generate(GenerateSpec(jobs=8, servers=1 + seed % 2, seed=seed, slots=8, options={"epochs_min": 1, "epochs_max": 8}))
    inst = from_document(doc)
    opt = FAMILY.run(inst, "exact", EXACT)
    alg = FAMILY.run(inst, "oasis", EXACT)
    assert opt.report.status == "optimal"
    assert check_solution(inst, alg).feasible
    alpha = alg.decision["extra"]["prices"]["alpha"]
    assert opt.report.objective >= alg.report.objective - 1e-6
    assert alg.report.objective > 0
    assert opt.report.objective / alg.report.objective <= 2 * alpha


# --- generator, baselines, CLI --------------------------------------------------------------------

def test_literal_setting_leaves_many_jobs_impossible_and_calibrated_does_not():
    def spec(setting):
        return GenerateSpec(jobs=200, servers=2, seed=3, slots=300, options={"setting": setting})

    durations = {}
    for setting in ("literal", "calibrated"):
        view = oasis_view(from_document(generate(spec(setting))))
        durations[setting] = np.array([j.min_duration for j in view.jobs])
    assert 150 < np.median(durations["literal"]) < 400  # spec pitfall 7: median about 260-285 slots
    assert 0.25 < np.mean(durations["literal"] > 300) < 0.65  # about 45 % cannot finish in T = 300
    assert durations["calibrated"].max() <= 26 and durations["calibrated"].min() >= 1


def test_utility_mix_is_10_55_35():
    view = oasis_view(from_document(generate(GenerateSpec(jobs=2000, servers=1, seed=0, slots=10))))
    g2 = np.array([j.utility.params["gamma2"] for j in view.jobs])
    assert np.mean(g2 == 0) == pytest.approx(0.10, abs=0.025)
    assert np.mean((g2 > 0) & (g2 <= 1)) == pytest.approx(0.55, abs=0.035)
    assert np.mean(g2 >= 4) == pytest.approx(0.35, abs=0.035)


@pytest.mark.skipif(shared_data() is None, reason="the shared data folder (../shared/data) is not present")
def test_philly_arrivals_follow_the_trace():
    doc = generate(GenerateSpec(jobs=50, servers=1, seed=4, slots=100, options={"arrivals": "philly"}))
    arrivals = [j["arrival_slot"] for j in doc["jobs"]]
    assert arrivals[0] == 0 and max(arrivals) == 99 and arrivals == sorted(arrivals)
    assert doc == generate(GenerateSpec(jobs=50, servers=1, seed=4, slots=100, options={"arrivals": "philly"}))


def test_checker_catches_a_broken_schedule(tmp_path):
    inst = load_instance(TOY)
    sol = FAMILY.run(inst, "oasis", EXACT)
    assert check_solution(inst, sol).feasible
    bad = json.loads(json.dumps(sol.to_dict()))
    entry = bad["decision"]["schedule"]["1"][0]
    entry["workers"]["worker"] = 5          # capacity 4, cap 2
    entry["ps"] = {}                         # no PS for the workers
    bad["decision"]["schedule"]["2"] = []    # admitted without work
    # neither admitted nor unfinished; before arrival
    bad["decision"]["schedule"]["3"] = [{"slot": 0, "workers": {"worker": 1}, "ps": {"ps": 1}}]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    result = check_solution(inst, read_solution(path))
    rules = {v.rule for v in result.violations}
    assert {"capacity", "worker-cap", "ps-bandwidth", "work", "schedule"} <= rules


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["cluster"]["servers"][0].pop("role"), "cluster.servers[0].role"),
    (lambda d: d["jobs"][0].pop("step"), "jobs[0].step"),
    (lambda d: d["jobs"][0]["step"].update(ps_bandwidth_gbps=0.5), "jobs[0].step.ps_bandwidth_gbps"),
    (lambda d: d["time"].pop("slots"), "time.slots"),
    (lambda d: d["jobs"][1]["utility"].update(values=[8, 12]), "jobs[1].utility.values[1]"),
])
def test_user_errors_name_the_field(tmp_path, run, edit, field):
    doc = read_document(TOY)
    edit(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    code, _out, err = run("solve", path, "--method", "oasis")
    assert code == 2
    assert field in err and "Traceback" not in err


def test_shipped_instance_is_what_its_source_command_generates():
    doc = read_document(ROOT / "instances" / "oasis-10jobs.toml")
    assert doc["source"].startswith("mlsched generate --problem oasis --jobs 10 --servers 2 --slots 10 --seed 1 "
                                    "--set epochs_min=1 --set epochs_max=10;")
    spec = GenerateSpec(jobs=10, servers=2, seed=1, slots=10, options=FAMILY.parse_generate_options({"epochs_min": 1, "epochs_max": 10}))
    assert FAMILY.generate(spec) == doc


def test_generate_then_solve_from_the_cli(run, tmp_path):
    path = tmp_path / "o.toml"
    code, out, err = run("generate", "--problem", "oasis", "--jobs", "4", "--servers", "1", "--slots", "6", "--seed", "2",
                         "--set", "epochs_min=1", "--set", "epochs_max=3", "-o", path)
    assert code == 0, err
    assert read_document(path)["source"].startswith("mlsched generate --problem oasis --jobs 4 --servers 1 --slots 6 --seed 2")
    code, out, err = run("solve", path, "--method", "oasis")
    assert code == 0, err
    assert "check: ok" in out
    code, out, err = run("generate", "--problem", "oasis", "--jobs", "2", "--servers", "1", "--seed", "0", "--set", "epochs_min=9",
                         "--set", "epochs_max=3", "-o", tmp_path / "bad.toml")
    assert code == 2 and "epochs_min" in err and "Traceback" not in err


# --- size ranges: workers = {min, max}, ps = {min, max} (defect: they were ignored) ---------------

def ranged_instance(seed: int):
    """A small generated instance whose jobs get non-trivial worker and PS ranges."""
    rng = np.random.default_rng(seed)
    doc = generate(GenerateSpec(jobs=4, servers=1 + seed % 2, seed=seed, slots=6, options={"epochs_min": 1, "epochs_max": 4}))
    for job in doc["jobs"]:
        lo = int(rng.integers(1, 6))
        job["workers"] = {"min": lo, "max": int(rng.integers(lo, lo + 20))}
        p_lo = int(rng.integers(1, 4))
        job["ps"] = {"min": p_lo, "max": int(rng.integers(p_lo, p_lo + 3))}
    return from_document(doc)


def unranged(inst):
    doc = json.loads(json.dumps(inst.document))
    for job in doc["jobs"]:
        job["workers"] = {"min": 1, "max": job["workers"]["max"]}
        job["ps"] = {"min": 1, "max": job["workers"]["max"]}
    return from_document(doc)


def assert_in_ranges(inst, decision):
    """Every slot with workers has its worker and PS counts inside the job's ranges (independent of the checker)."""
    for job_id, entries in decision["schedule"].items():
        job = inst.job(job_id)
        for entry in entries:
            y, z = sum(entry["workers"].values()), sum(entry["ps"].values())
            if y:
                assert job.workers.lo <= y <= job.workers.hi and job.ps.lo <= z <= job.ps.hi, (job_id, entry)
            else:
                assert z == 0


@pytest.mark.parametrize("seed", range(4))
def test_every_method_keeps_the_size_ranges(seed):
    inst = ranged_instance(seed)
    ran = 0
    for method in FAMILY.methods:
        sol = FAMILY.run(inst, method, SolveOptions(gap=0.0, time_limit=60, seed=seed))
        assert sol.decision is not None, method
        assert check_solution(inst, sol).feasible, (method, check_solution(inst, sol).violations)
        assert_in_ranges(inst, sol.decision)
        ran += bool(sol.decision["schedule"])
    assert ran >= 1  # something ran, so the ranges were exercised


@pytest.mark.parametrize("seed", range(3))
def test_ranges_bind_in_the_exact_model_and_cpsat_agrees(seed):
    """The ranged optimum is at most the unranged one (a restriction) and both solvers prove the same value."""
    inst = ranged_instance(seed)
    # Sigmoid utilities are not decimals, so CP-SAT gets a float objective whose proven bound can be
    # loose (its status then reads "feasible"): compare its value, and let HiGHS (uncertified) prove.
    exact = SolveOptions(gap=1e-7, time_limit=60, certify=False)
    highs = FAMILY.run(inst, "exact", exact)
    cpsat = FAMILY.run(inst, "exact", dataclasses.replace(exact, solver="cpsat"))
    free = FAMILY.run(unranged(inst), "exact", exact)
    assert highs.report.status == free.report.status == "optimal"
    assert highs.report.objective == pytest.approx(cpsat.report.objective, abs=1e-6)
    assert highs.report.objective <= free.report.objective + 1e-6


def test_checker_names_each_range_rule():
    doc = read_document(TOY)
    doc["jobs"][0]["workers"] = {"min": 2, "max": 2}
    doc["jobs"][0]["ps"] = {"min": 1, "max": 1}
    inst = from_document(doc)
    base = {"admitted": ["1"], "schedule": {"1": [{"slot": 0, "workers": {"worker": 2}, "ps": {"ps": 1}},
                                                   {"slot": 1, "workers": {"worker": 2}, "ps": {"ps": 1}}]}}
    assert not _rules(inst, base)
    below = json.loads(json.dumps(base))
    below["schedule"]["1"].append({"slot": 2, "workers": {"worker": 1}, "ps": {"ps": 1}})
    assert "worker-min" in _rules(inst, below)
    over = json.loads(json.dumps(base))
    over["schedule"]["1"][0]["ps"] = {"ps": 2}
    assert "ps-max" in _rules(inst, over)
    doc["jobs"][0]["ps"] = {"min": 2, "max": 2}
    inst2 = from_document(doc)
    assert "ps-min" in _rules(inst2, base)


def test_ranges_paper_is_the_papers_problem_in_every_part():
    """``ranges=paper`` drops workers.min and the PS range in the checker, the exact model and the methods alike."""
    doc = read_document(TOY)
    doc["jobs"][0]["workers"] = {"min": 2, "max": 2}
    inst = from_document(doc)
    one_worker = {"admitted": ["1"], "schedule": {"1": [{"slot": t, "workers": {"worker": 1}, "ps": {"ps": 1}} for t in range(3)]}}
    assert "worker-min" in _rules(inst, one_worker)
    assert "worker-min" not in _rules(inst, one_worker, {"ranges": "paper"})
    for seed in range(3):
        ranged = ranged_instance(seed)
        exact = SolveOptions(gap=1e-7, time_limit=60, certify=False)
        strict = FAMILY.run(ranged, "exact", exact)
        loose = FAMILY.run(ranged, "exact", exact, {"ranges": "paper"})
        free = FAMILY.run(unranged(ranged), "exact", exact)
        assert loose.report.objective == pytest.approx(free.report.objective, abs=1e-6)
        assert strict.report.objective <= loose.report.objective + 1e-6
        for method in FAMILY.methods:
            sol = FAMILY.run(ranged, method, SolveOptions(seed=seed), {"ranges": "paper"})
            assert check_solution(ranged, sol, options={"ranges": "paper"}).feasible, method


def _rules(inst, decision, options=None):
    from mlsched_opt.checking.core import CheckResult
    result = CheckResult()
    FAMILY.check(inst, decision, FAMILY.parse_options(options or {}), result)
    return {v.rule for v in result.violations}


def test_a_job_whose_ranges_cannot_be_met_is_never_run():
    doc = read_document(TOY)
    for job in doc["jobs"]:
        job["workers"] = {"min": 3, "max": 4}   # cap min(N = 2 or 4, 4): job 2 (N = 2) can never run
    inst = from_document(doc)
    for method in FAMILY.methods:
        sol = FAMILY.run(inst, method, SolveOptions(gap=0.0, time_limit=30))
        assert "2" not in sol.decision["admitted"] and not sol.decision["schedule"].get("2"), method
        assert check_solution(inst, sol).feasible, method


# --- determinism: the same seed writes a byte-identical decision (defect: timings were in it) -------

@pytest.mark.parametrize("method", [m for m in FAMILY.methods if m != "exact"])
@pytest.mark.parametrize("options", [{}, {"units": "worker-slots", "prices": "estimated"}])
def test_same_seed_gives_a_byte_identical_decision(method, options):
    doc = generate(GenerateSpec(jobs=10, servers=2, seed=8, slots=8, options={"epochs_min": 1, "epochs_max": 6}))
    inst = from_document(doc)
    opts = options if method == "oasis" else {}
    a, b = (FAMILY.run(inst, method, SolveOptions(seed=4), opts) for _ in range(2))
    assert json.dumps(a.decision, sort_keys=True) == json.dumps(b.decision, sort_keys=True)
    assert a.report.objective == b.report.objective


# --- HiGHS presolve: small offline MILPs it gets wrong (found by comparing presolve on/off) ---------

PRESOLVE_CASES = {"oasis_presolve_3696.toml": 5.885, "oasis_presolve_5083.toml": 61.8, "oasis_presolve_6567.toml": 54.42}


@pytest.mark.parametrize("name", sorted(PRESOLVE_CASES))
@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_presolve_cases_reach_the_true_optimum(name, solver):
    """HiGHS 1.14's default (presolve on) returns a worse point as optimal here; the exact method must not."""
    inst = load_instance(ROOT / "tests" / "data" / name)
    sol = FAMILY.run(inst, "exact", SolveOptions(solver=solver, gap=1e-7, time_limit=60))
    assert sol.report.objective == pytest.approx(PRESOLVE_CASES[name], abs=1e-4)
    assert check_solution(inst, sol).feasible


# --- the checker never crashes on a JSON value (defect class: junk decisions) ---------------------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from mlsched_opt.checking.core import CheckResult  # noqa: E402

_TOY_INST = load_instance(TOY)
_SCALARS = (st.none() | st.booleans() | st.integers(-2**80, 2**80) | st.sampled_from([2**70, -1, 0, 1, 2, 10**400])
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6))
JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=8)
_JOB = st.sampled_from(["1", "2", "3", "ghost"]) | JSON
_SERVER_COUNTS = st.dictionaries(st.sampled_from(["worker", "ps", "nowhere"]), st.integers(-3, 6) | JSON, max_size=3) | JSON
_ENTRY = st.fixed_dictionaries({"slot": st.integers(-1, 4) | JSON, "workers": _SERVER_COUNTS, "ps": _SERVER_COUNTS}) | JSON
OASIS_DECISION = JSON | st.fixed_dictionaries({
    "admitted": st.lists(_JOB, max_size=4) | JSON,
    "schedule": st.dictionaries(st.sampled_from(["1", "2", "3", "ghost"]), st.lists(_ENTRY, max_size=4) | JSON, max_size=4) | JSON,
    "extra": st.fixed_dictionaries({"unfinished": st.lists(_JOB, max_size=3) | JSON}) | JSON,
    "placement": JSON,
})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OASIS_DECISION)
def test_checker_names_a_rule_for_any_json_decision(decision):
    result = CheckResult()
    FAMILY.check(_TOY_INST, decision, FAMILY.parse_options({}), result)  # must not raise
    assert all(isinstance(v.rule, str) and v.rule for v in result.violations)
    assert result.objective is None or math.isfinite(result.objective)


# --- option domains and input-driven loops (defect class: unbounded options and sizes) -------------

from mlsched_opt.errors import InstanceError, OptionError  # noqa: E402

# (every option's domain, and its refusal of what is outside, is the contract's: tests/test_contract.py)

def test_ranges_is_the_only_problem_option():
    for opt in (*FAMILY.options, *FAMILY.generate_options):
        assert opt.problem == (opt.name == "ranges"), opt.name  # the rest are knobs of the OASiS method


def test_generator_refuses_sizes_beyond_its_limits():
    with pytest.raises(OptionError):
        FAMILY.parse_generate_options({"epochs_max": 10**9})
    from mlsched_opt.errors import UserError
    with pytest.raises(UserError) as err:
        generate(GenerateSpec(jobs=10**7, servers=1, seed=0, slots=5))
    assert err.value.field == "--jobs"


def _toy(edit):
    doc = read_document(TOY)
    edit(doc)
    return doc


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["time"].update(slots=10**9), "time.slots"),
    (lambda d: (d["jobs"][0].update(workers={"min": 1, "max": 10**9}, ps={"min": 1, "max": 10**9},
                                    work={"epochs": 1, "chunks": 10**9, "minibatches_per_chunk": 1}),
                d["cluster"]["servers"][0]["capacity"].update(cpu=10**9)), "jobs[0].workers"),
])
def test_sizes_beyond_the_limits_are_refused_up_front(edit, field, monkeypatch):
    # the loader's own limits can be raised by the user; the family's hold regardless
    monkeypatch.setenv("MLSCHED_LIMITS", f"slots={2**53},tasks={2**53},cells={2**53}")
    with pytest.raises(InstanceError) as err:
        oasis_view(from_document(_toy(edit)))
    assert err.value.field == field
    assert "problem 'oasis'" in str(err.value)


def test_a_dp_beyond_its_table_is_refused_and_an_impossible_job_costs_nothing():
    big = _toy(lambda d: (d["time"].update(slots=1000),
                          d["jobs"][0].update(workers={"min": 1, "max": 100_000}, ps={"min": 1, "max": 100_000},
                                              work={"epochs": 1000, "chunks": 100_000, "minibatches_per_chunk": 4}),
                          d["cluster"]["servers"][0]["capacity"].update(cpu=100_000),
                          d["cluster"]["servers"][1]["capacity"].update(cpu=100_000)))
    with pytest.raises(InstanceError) as err:
        FAMILY.run(from_document(big), "oasis", SolveOptions(time_limit=60))
    assert err.value.field == "jobs[0].work"
    # 10^12 chunk-trainings cannot finish in 3 slots: rejected without a DP over them
    hopeless = _toy(lambda d: d["jobs"][0].update(work={"epochs": 10**6, "chunks": 10**6, "minibatches_per_chunk": 4}))
    sol = FAMILY.run(from_document(hopeless), "oasis", SolveOptions(time_limit=60))
    assert "1" not in sol.decision["admitted"] and sol.report.status == "feasible"


@pytest.mark.parametrize("method", [m for m in FAMILY.methods if m != "exact"])
def test_the_time_limit_cuts_every_algorithm_short_with_a_valid_answer(method):
    inst = from_document(generate(GenerateSpec(jobs=6, servers=2, seed=3, slots=8, options={"epochs_min": 1, "epochs_max": 4})))
    sol = FAMILY.run(inst, method, SolveOptions(time_limit=1e-9))  # already past when the first job arrives
    assert sol.report.status == "feasible"
    assert "cut short by the time limit" in sol.report.message
    assert check_solution(inst, sol).feasible
