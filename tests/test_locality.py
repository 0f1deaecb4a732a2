"""Locality (spec 001): the PC-ILP, its LP, RR-PC and the repair on the toy of section 7, and the family
(view, methods, checker, generator, CLI)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mlsched_opt.problems.locality.pcilp import CO_LOCATED, LocalityJob, Patterns, patterns, pcilp_model, plan_of, solve_lp
from mlsched_opt.problems.locality.rounding import repair_plan, rr_pc, sample, scaled_rounding
from mlsched_opt.solvers import SolveOptions, solve

# the toy: 2 machines of 6 units, 4 slots (0-based here: spec slot 1 is slot 0), worker = PS = 1 unit, gamma = 2
EMPTY = np.full((2, 1, 4), 6.0)


def toy_job(work: float, name: str = "j") -> LocalityJob:
    return LocalityJob(name, 0, work, 1.5, 1.0, np.array([1.0]), np.array([1.0]), 2, 8)


JOB1, JOB2 = toy_job(16, "job1"), toy_job(12, "job2")


def lp_cost(p: Patterns) -> float:
    z = solve_lp(p)
    return float(p.cost @ z)


def index(p: Patterns, kind: int, slot: int, machine: int, workers: int) -> int:
    hit = np.flatnonzero((p.kind == kind) & (p.slot == slot) & (p.machine == machine) & (p.workers == workers))
    assert len(hit) == 1
    return int(hit[0])


def vertex(p: Patterns, slot1: dict[tuple[int, int], float]) -> np.ndarray:
    """The LP vertex of spec section 7 for job 1, deadline 3: slot 1 as given, (M2, 4) then (M1, 4)."""
    z = np.zeros(p.size)
    for (machine, workers), value in slot1.items():
        z[index(p, CO_LOCATED, 0, machine, workers)] = value
    z[index(p, CO_LOCATED, 1, 1, 4)] = 1.0
    z[index(p, CO_LOCATED, 2, 0, 4)] = 1.0
    return z


# --- the single-job table of section 7 ------------------------------------------------------

@pytest.mark.parametrize("job, deadline, eps, lp, ilp", [
    (JOB2, 1, 0.0, 12.0, 12.0),
    (JOB1, 2, 0.0, 16.0, 17.0),
    (JOB1, 1, 0.0, 24.0, 24.0),
    (JOB2, 1, 0.25, 21.0, None),
])
def test_single_job_table(job, deadline, eps, lp, ilp):
    p = patterns(job, 0, deadline, EMPTY, eps=eps)
    assert lp_cost(p) == pytest.approx(lp)
    if ilp is not None:
        z = solve_lp(p, integer=True)
        assert float(p.cost @ z) == pytest.approx(ilp)
        assert plan_of(p, z).covers(job.work)


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_pyomo_pcilp_proves_17(solver):
    p = patterns(JOB1, 0, 2, EMPTY)
    m = pcilp_model(p)
    report = solve(m, SolveOptions(solver=solver, gap=0.0, time_limit=30))
    assert report.status == "optimal"
    assert report.objective == pytest.approx(17.0)


# --- RR-PC on the fixed LP vertex -----------------------------------------------------------

def success_rate(p: Patterns, z: np.ndarray, draws: int = 3000) -> float:
    rng = np.random.default_rng(0)
    hits = sum(p.work[sample(p, z, rng)].sum() >= p.job.work - 1e-9 for _ in range(draws))
    return hits / draws


def test_rr_pc_on_the_vertex_succeeds_one_time_in_three_with_expected_cost_16():
    p = patterns(JOB1, 0, 2, EMPTY)
    z = vertex(p, {(0, 4): 1 / 3, (1, 2): 2 / 3})
    assert p.cost @ z == pytest.approx(16.0) and p.work @ z == pytest.approx(16.0)
    rate = success_rate(p, z)
    assert abs(rate - 1 / 3) < 4 * np.sqrt((1 / 3) * (2 / 3) / 3000)
    out = rr_pc(p, z, np.random.default_rng(1), attempts=5)
    assert out.plan is not None and out.plan.covers(16.0)


def test_inflated_targets_0_867_and_1():
    p = patterns(JOB1, 0, 2, EMPTY, eps=0.1)
    assert lp_cost(p) == pytest.approx(17.6)
    z = vertex(p, {(0, 4): 0.8666666667, (1, 2): 0.1333333333})
    assert p.cost @ z == pytest.approx(17.6)
    assert abs(success_rate(p, z) - 0.8667) < 4 * np.sqrt(0.8667 * 0.1333 / 3000)
    p = patterns(JOB1, 0, 2, EMPTY, eps=0.125)
    assert lp_cost(p) == pytest.approx(18.0)
    z = vertex(p, {(0, 4): 1.0})
    assert success_rate(p, z, 200) == 1.0


def test_repair_upgrades_m2_from_2_to_3_and_reaches_the_ilp_cost_17():
    p = patterns(JOB1, 0, 2, EMPTY)
    failed = plan_of(p, vertex(p, {(1, 2): 1.0}))
    assert failed.work == pytest.approx(15.0) and not failed.covers(16.0)
    fixed = repair_plan(p, failed)
    assert fixed.work == pytest.approx(16.5) and fixed.cost == pytest.approx(17.0)
    assert index(p, CO_LOCATED, 0, 1, 3) in fixed.chosen


def test_rr_pc_without_a_covering_draw_repairs():
    p = patterns(JOB1, 0, 2, EMPTY)
    out = rr_pc(p, vertex(p, {(1, 2): 1.0}), np.random.default_rng(0), attempts=3)
    assert out.successes == 0 and out.repaired and out.plan.cost == pytest.approx(17.0)


def test_scaled_independent_rounding_fails_the_covering_row_on_small_machines():
    p = patterns(JOB1, 0, 2, EMPTY)
    z = vertex(p, {(0, 4): 1 / 3, (1, 2): 2 / 3})
    out = scaled_rounding(p, z, np.random.default_rng(0), attempts=500)
    assert out.successes == 0 and out.plan is None
    # without the scale-down, RR-PC covers a third of the time on the same vertex
    assert rr_pc(p, z, np.random.default_rng(0), attempts=500, repair=False).successes > 100


# --- properties of RR-PC ----------------------------------------------------------------------

def random_problem(seed: int) -> Patterns:
    rng = np.random.default_rng(seed)
    h, r, t = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 4))
    residual = rng.integers(2, 9, size=(h, r, t)).astype(float)
    job = LocalityJob("x", 0, float(rng.uniform(1, 20)), float(rng.uniform(1, 3)), 1.0,
                      rng.integers(1, 3, size=r).astype(float), rng.integers(0, 2, size=r).astype(float),
                      int(rng.integers(1, 4)), int(rng.integers(1, 12)))
    kappa = rng.uniform(0.1, 3.0, size=(h, r, t))
    return patterns(job, 0, t - 1, residual, kappa, eps=float(rng.uniform(0, 0.3)))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_rr_pc_never_violates_a_packing_row(seed):
    p = random_problem(seed)
    z = solve_lp(p)
    if z is None:
        return
    a, _lo, hi = p.rows()
    rng = np.random.default_rng(seed)
    for _ in range(20):
        x = np.zeros(p.size)
        x[sample(p, z, rng)] = 1
        assert ((a @ x) <= hi + 1e-9).all()  # K1 and K2 (the covering row has no upper side)


def test_rr_pc_preserves_each_patterns_marginal():
    job = LocalityJob("x", 0, 20, 1.5, 1.0, np.array([1.0]), np.array([1.0]), 2, 99)  # K2 never trims
    p = patterns(job, 0, 2, EMPTY)
    from mlsched_opt.problems.locality.pcilp import SPREAD

    z = np.zeros(p.size)
    for slot in range(3):  # K1 holds: co-located mass 0.5, spread mass <= 0.5 per machine
        z[index(p, CO_LOCATED, slot, 0, 4)] = 0.3
        z[index(p, CO_LOCATED, slot, 1, 2)] = 0.2
        z[index(p, SPREAD, slot, 0, 1)] = 0.2
        z[index(p, SPREAD, slot, 0, 3)] = 0.1
        z[index(p, SPREAD, slot, 1, 4)] = 0.4
    a, _lo, hi = p.rows()
    assert ((a @ z) <= hi + 1e-12).all()
    rng = np.random.default_rng(0)
    draws = 4000
    freq = np.zeros(p.size)
    for _ in range(draws):
        freq[sample(p, z, rng)] += 1
    freq /= draws
    sd = np.sqrt(np.maximum(z * (1 - z), 1e-12) / draws)
    assert (np.abs(freq - z) <= 4.5 * sd + 1e-9).all()


# --- the exact offline MILP (section 2.4) -----------------------------------------------------

def test_offline_optimum_is_5_and_5_003_with_the_tie_break_and_its_lp_is_weak():
    from mlsched_opt.problems.locality.formulation import completions_from_model, offline_model
    from mlsched_opt.solvers import relaxation

    capacity = np.array([[6.0], [6.0]])
    exact = offline_model([JOB1, JOB2], capacity, 4)
    report = solve(exact, SolveOptions(gap=0.0, time_limit=60))
    assert report.status == "optimal" and report.objective == pytest.approx(5.0)
    tied = offline_model([JOB1, JOB2], capacity, 4, tie_break=1e-4)
    report = solve(tied, SolveOptions(gap=0.0, time_limit=60))
    assert report.status == "optimal" and report.objective == pytest.approx(5 + 29e-4, abs=1e-6)  # "5.003" in the spec, rounded
    assert completions_from_model(tied) == {0: 2, 1: 1}  # job 1 in spec slot 3, job 2 in spec slot 2
    lp = relaxation(offline_model([JOB1, JOB2], capacity, 4, tie_break=1e-4), SolveOptions(time_limit=60))
    assert lp.objective == pytest.approx(3.378, abs=5e-4)


# --- V-Greedy on the toy (section 7) ------------------------------------------------------------

@pytest.mark.parametrize("solver", ["ilp", "rr"])
@pytest.mark.parametrize("order, plan, total, completion", [
    ("sjf", "aware", 5.0, {1: 1, 0: 2}),      # optimal: job 2 -> spec slot 2, job 1 -> 3
    ("fifo", "aware", 6.0, {0: 1, 1: 3}),     # job 1 spread over slots 1-2, job 2 -> 4
    ("fifo", "unaware", 6.0, {0: 1, 1: 3}),
    ("sjf", "unaware", 6.0, {1: 1, 0: 3}),
])
def test_v_greedy_on_the_toy(solver, order, plan, total, completion):
    from mlsched_opt.problems.locality.online import v_greedy

    s = v_greedy([JOB1, JOB2], np.array([[6.0], [6.0]]), 4, order=order, solver=solver, plan=plan, seed=0)
    assert s.total_delay([JOB1, JOB2]) == pytest.approx(total)
    assert s.completion == completion and not s.rejected
    used = np.zeros((2, 4))
    for i, tasks in s.tasks.items():
        for slot, machine, workers in tasks:
            used[machine, slot] += [JOB1, JOB2][i].demand(workers)[0]
    assert used.max() <= 6.0  # every slot's plan fits the machines


# --- the family: instance view, methods, checker, generator, CLI ----------------------------------

from mlsched_opt.io import load_instance, read_document  # noqa: E402
from mlsched_opt.problems import REGISTRY, GenerateSpec, check_solution  # noqa: E402
from mlsched_opt.problems.locality.pcilp import SPREAD, earliest_deadline  # noqa: E402
from mlsched_opt.problems.locality.view import locality_view  # noqa: E402

from .conftest import ROOT  # noqa: E402

FAMILY = REGISTRY["locality"]
TOY = ROOT / "instances" / "locality-toy.toml"
SHIPPED = ROOT / "instances" / "locality-6jobs.toml"


def test_toy_file_gives_the_spec_rates_and_jobs():
    view = locality_view(load_instance(TOY))
    assert [(j.work, j.q_in, j.q_ex, j.gamma) for j in view.jobs] == [(16.0, 1.5, 1.0, 2), (12.0, 1.5, 1.0, 2)]
    assert view.jobs[0].demand(np.arange(1, 5))[:, 0].tolist() == [2, 3, 5, 6]


@pytest.mark.parametrize("method, options, value", [
    ("exact", {}, 5.0),
    ("greedy-rr", {}, 5.0),
    ("greedy-ilp", {}, 5.0),                                   # SJF: job B first
    ("greedy-ilp", {"order": "fifo"}, 6.0),                    # pitfall P10
    ("unaware", {"order": "fifo", "epsilon": 0.0}, 6.0),
    ("unaware", {"epsilon": 0.0}, 6.0),
    ("pd-rr", {}, 5.0),
])
def test_toy_methods_through_the_family(method, options, value):
    inst = load_instance(TOY)
    sol = FAMILY.run(inst, method, SolveOptions(time_limit=60, gap=0.0), options)
    assert sol.report.objective == pytest.approx(value)
    check = check_solution(inst, sol)
    assert check.feasible, [str(v) for v in check.violations]
    if method == "exact":
        assert sol.report.status == "optimal"
        assert sol.decision["extra"]["completion"] == {"A": 2, "B": 1}


def _toy_solution():
    inst = load_instance(TOY)
    return inst, FAMILY.run(inst, "greedy-rr", SolveOptions(seed=0))


@pytest.mark.parametrize("damage, rule", [
    (lambda d: d["schedule"]["B"][0]["workers"].update({"M/0": 6}), "capacity"),
    (lambda d: d["schedule"]["B"][0]["ps"].clear(), "ps-count"),
    (lambda d: d["schedule"]["B"][0].update({"slot": 9}), "domain"),
    (lambda d: d["schedule"]["A"].pop(), "work"),
    (lambda d: d["extra"]["completion"].update({"A": 1}), "completion"),
    (lambda d: d["schedule"]["A"][0]["workers"].update({"M/0": 9}), "worker-cap"),
])
def test_checker_catches_each_broken_rule(damage, rule):
    inst, sol = _toy_solution()
    damage(sol.decision)
    check = check_solution(inst, sol)
    assert not check.feasible
    assert rule in {v.rule for v in check.violations}, [str(v) for v in check.violations]


def test_checker_recomputes_the_objective_of_a_spread_schedule():
    """Job B spread 4 + 4 workers for slots 0-1 and 2 (8 + 8 + 8 >= 12 in 2 slots at q_ex = 1), A co-located later."""
    inst = load_instance(TOY)
    both = {"workers": {"M/0": 4, "M/1": 2}, "ps": {"M/0": 2, "M/1": 1}}
    decision = {"admitted": ["B"], "schedule": {"B": [{"slot": 0, **both}, {"slot": 1, **both}]}, "extra": {"completion": {"B": 1}}}
    from mlsched_opt.checking.core import CheckResult

    result = CheckResult()
    FAMILY.check(inst, decision, FAMILY.parse_options({}), result)
    assert result.feasible, [str(v) for v in result.violations]
    assert result.objective == 2 + 5  # B done in slot 1; A never runs: charged T - a + 1 = 5


def test_pair_locality_is_never_slower_than_job_level_and_equal_on_one_machine():
    view = locality_view(load_instance(TOY))
    spread = (np.array([4, 2]), np.array([2, 1]))
    assert view.slot_work(0, *spread, locality="job") == 6.0
    assert view.slot_work(0, *spread, locality="pair") > 6.0
    one = (np.array([4, 0]), np.array([2, 0]))
    assert view.slot_work(0, *one, locality="pair") == view.slot_work(0, *one, locality="job") == 6.0
    with pytest.raises(Exception, match="locality=job"):
        FAMILY.run(load_instance(TOY), "exact", SolveOptions(), {"locality": "pair"})


@settings(max_examples=40, deadline=None)
@given(caps=st.lists(st.integers(0, 7), min_size=6, max_size=6), work=st.floats(1, 40), w_max=st.integers(1, 8),
       kinds=st.sampled_from([(CO_LOCATED, SPREAD), (CO_LOCATED,), (SPREAD,)]))
def test_earliest_deadline_is_the_first_deadline_with_a_feasible_lp(caps, work, w_max, kinds):
    """The LP-free frontier V-Greedy starts its scan at equals the first LP-feasible deadline."""
    job = LocalityJob("j", 0, work, 1.5, 1.0, np.array([1.0]), np.array([1.0]), 2, w_max)
    residual = np.array(caps, dtype=float).reshape(2, 1, 3)
    first = next((d for d in range(3) if solve_lp(patterns(job, 0, d, residual, kinds=kinds)) is not None), None)
    assert earliest_deadline(job, 0, residual, kinds=kinds) == first


def test_greedy_rr_is_seeded():
    inst = load_instance(SHIPPED)
    a, b = (FAMILY.run(inst, "greedy-rr", SolveOptions(seed=3), {"epsilon": 0.0, "attempts": 1}) for _ in range(2))
    assert a.decision["schedule"] == b.decision["schedule"] and a.report.objective == b.report.objective


def test_shipped_instance_is_what_its_source_command_generates():
    doc = read_document(SHIPPED)
    assert doc["source"].startswith("mlsched generate --problem locality --jobs 6 --servers 2 --slots 10 --seed 1;")
    assert FAMILY.generate(GenerateSpec(jobs=6, servers=2, seed=1, slots=10, options=FAMILY.parse_generate_options({}))) == doc


def test_exact_against_greedy_rr_on_a_generated_instance():
    """Generated 4 jobs on 2 machines: exact (free PS placement) <= O3's exact <= greedy-rr, all checked."""
    inst = generated(jobs=4, servers=2, slots=6, seed=5)
    free = FAMILY.run(inst, "exact", SolveOptions(time_limit=120, gap=0.0))
    o3 = FAMILY.run(inst, "exact", SolveOptions(time_limit=120, gap=0.0), {"ps_placement": "with-workers"})
    greedy = FAMILY.run(inst, "greedy-rr", SolveOptions(seed=0))
    # what holds whether or not the limit let a proof finish (a busy machine): free's bound is below every
    # O3 schedule (O3's schedules are free ones), O3's bound below greedy's (greedy-rr places PSs by O3)
    assert free.report.has_solution and o3.report.has_solution, (free.report.to_dict(), o3.report.to_dict())
    assert free.report.bound is None or free.report.bound <= o3.report.objective + 1e-9
    assert o3.report.bound is None or o3.report.bound <= greedy.report.objective + 1e-9
    if free.report.status == o3.report.status == "optimal":
        assert free.report.objective <= o3.report.objective <= greedy.report.objective
    assert check_solution(inst, free).feasible and check_solution(inst, greedy).feasible
    assert check_solution(inst, o3, options={"ps_placement": "with-workers"}).feasible


def test_pollux_calibration_sets_inter_bandwidth_from_measured_step_times():
    from mlsched_opt.io import load_catalog
    from mlsched_opt.problems.locality.calibration import gavel_ratio, inter_bandwidth, pollux_ratio

    assert gavel_ratio(load_catalog()["resnet50"]) == pytest.approx(9.45195 / 11.13643)  # spread runs faster: below 1
    assert inter_bandwidth(0.2, 1.6, 50.0, 0.85) == 50.0                                   # which b_in >= b_ex cannot express
    ratio = pollux_ratio("imagenet")
    assert 1.0 < ratio < 1.2  # 4 GPUs on 4 nodes vs 1 node, median over local batch sizes
    b_ex = inter_bandwidth(0.2, 1.6, 50.0, ratio)
    assert (0.2 + 1.6 / b_ex) / (0.2 + 1.6 / 50.0) == pytest.approx(ratio)
    doc = FAMILY.generate(GenerateSpec(jobs=8, servers=2, seed=4, slots=8,
                                       options=FAMILY.parse_generate_options({"calibration": "pollux"})))
    calibrated = [j for j in doc["jobs"] if j["model"] in ("resnet50", "resnet18")]
    assert calibrated and all("inter_bandwidth_gbps" in j["step"] for j in calibrated)
    assert all("inter_bandwidth_gbps" not in j["step"] for j in doc["jobs"] if j["model"] not in ("resnet50", "resnet18"))


def test_generate_then_solve_from_the_cli(run, tmp_path):
    path = tmp_path / "l.toml"
    code, out, err = run("generate", "--problem", "locality", "--jobs", "4", "--servers", "2", "--slots", "6", "--seed", "2", "-o", path)
    assert code == 0, err
    code, out, err = run("solve", path, "--method", "greedy-rr", "--epsilon", "0.1", "--attempts", "3", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["check"]["feasible"] and doc["options"]["epsilon"] == 0.1 and doc["options"]["attempts"] == 3


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["jobs"][0]["step"].pop("ps_fan_in"), "jobs[0].step.ps_fan_in"),
    (lambda d: d["jobs"][0].pop("local_batch_size"), "jobs[0].local_batch_size"),
    (lambda d: d["cluster"].pop("inter_server_bandwidth_gbps"), "jobs[0].step.inter_bandwidth_gbps"),
    (lambda d: d["cluster"]["servers"][0].update({"role": "worker"}), "jobs[0].demand.ps"),  # no server may host a PS
    (lambda d: d["jobs"][0]["demand"]["ps"].update({"cpu": 7}), "jobs[0].demand.ps"),
    (lambda d: d["jobs"][0].update({"work": {"iterations": 5}}), "jobs[0].work"),
])
def test_user_errors_exit_2_and_name_the_field(run, tmp_path, edit, field):
    doc = read_document(TOY)
    edit(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    code, out, err = run("solve", path, "--method", "greedy-rr")
    assert code == 2, (out, err)
    assert field in err and "Traceback" not in err


def test_rounding_flags_are_refused_where_nothing_rounds(run):
    code, _out, err = run("solve", ROOT / "instances" / "demo.toml", "--epsilon", "0.1")
    assert code == 2 and "--epsilon" in err and "Traceback" not in err


def test_an_incumbent_whose_completion_indicator_lags_its_work_is_rescored():
    inst = load_instance(TOY)
    opts = FAMILY.parse_options({})
    m = FAMILY.build_model(inst, opts)
    assert solve(m, SolveOptions(gap=0.0)).objective == pytest.approx(5.0)
    for i, t in m.D:  # job B's work is done in slot 1; let its indicator claim slot 3, as an unproven incumbent may
        if i == 1:
            m.f[i, t].value = 1.0 if t == 3 else 0.0
    decision = FAMILY.decision_from_model(inst, opts, m)
    assert decision["extra"]["completion"] == {"A": 2, "B": 1}
    assert FAMILY.rescore(inst, opts, decision) == 5.0


# --- regression tests of the review's defects ------------------------------------------------------

from mlsched_opt.checking.core import CheckResult  # noqa: E402
from mlsched_opt.io import from_document  # noqa: E402

RANDOMIZED = ("greedy-rr", "pd-rr", "unaware", "colocate", "spread", "greedy-ilp")


def generated(jobs: int, servers: int, slots: int, seed: int, **options):
    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed, slots=slots, options=FAMILY.parse_generate_options(options))
    return from_document(FAMILY.generate(spec))


def toy_like(machines: int, capacity: float, slots: int, jobs: list[tuple[int, float, int]], gamma: int = 2):
    """The toy's rates (q_in = 1.5, q_ex = 1 per worker per slot), one cpu per worker and per PS; jobs (arrival, V, w_max)."""
    doc = read_document(TOY)
    doc["time"]["slots"] = slots
    doc["cluster"]["servers"] = [{"name": "M", "count": machines, "capacity": {"cpu": capacity}}]
    template = doc["jobs"][0]
    doc["jobs"] = [{**template, "id": f"J{k}", "arrival_slot": a, "work": {"epochs": 1, "samples_per_epoch": v},
                    "workers": {"min": 1, "max": w}, "step": {**template["step"], "ps_fan_in": gamma}}
                   for k, (a, v, w) in enumerate(jobs)]
    return from_document(doc)


def check_decision(inst, decision, options=None):
    result = CheckResult()
    FAMILY.check(inst, decision, FAMILY.parse_options(options or {}), result)  # the family checker itself, no safety net
    return result


# 1. exact models what the checker accepts: ps_placement (free | with-workers)

O3_COUNTEREXAMPLE = {"machines": 3, "capacity": 2, "slots": 2, "jobs": [(0, 4, 4)]}  # 4 q_ex of work, gamma = 2


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_o3_is_not_without_loss_of_generality(solver):
    """3 machines of 2 units: freely placed 2 + 2 workers and 2 PSs on the third finish in 1 slot; O3 runs 3 workers, needs 2."""
    inst = toy_like(**O3_COUNTEREXAMPLE)
    opts = SolveOptions(solver=solver, gap=0.0, time_limit=60, certify=False)
    free = FAMILY.run(inst, "exact", opts)
    o3 = FAMILY.run(inst, "exact", opts, {"ps_placement": "with-workers"})
    assert (free.report.status, free.report.objective) == ("optimal", 1.0)
    assert (o3.report.status, o3.report.objective) == ("optimal", 2.0)
    assert check_solution(inst, free).feasible
    assert check_solution(inst, o3, options={"ps_placement": "with-workers"}).feasible
    broken = check_decision(inst, free.decision, {"ps_placement": "with-workers"})  # the free optimum breaks O3's rule
    assert "ps-placement" in {v.rule for v in broken.violations}
    assert any("O3" in str(v) for v in broken.violations)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10**6), servers=st.integers(1, 3))
def test_no_method_beats_exact_and_every_method_obeys_the_placement_rule(seed, servers):
    """The defect's class: on generated instances nothing the checker accepts beats exact, for either ps_placement."""
    inst = generated(jobs=3, servers=servers, slots=4, seed=seed, work_min=1.0, work_max=6.0)
    for placement in ("free", "with-workers"):
        options = {"ps_placement": placement}
        exact = FAMILY.run(inst, "exact", SolveOptions(gap=0.0, time_limit=60, certify=False), options)
        assert exact.report.status == "optimal"
        for method in ("exact",) + RANDOMIZED:
            sol = exact if method == "exact" else FAMILY.run(inst, method, SolveOptions(seed=seed), options)
            check = check_solution(inst, sol, options=options)
            assert check.feasible, (method, placement, [str(v) for v in check.violations])
            assert check.objective >= exact.report.objective - 1e-9, (method, placement)
            if placement == "with-workers":  # O3's schedules are also free ones
                assert check_decision(inst, sol.decision).feasible
    free = FAMILY.run(inst, "exact", SolveOptions(gap=0.0, time_limit=60, certify=False))
    o3 = FAMILY.run(inst, "exact", SolveOptions(gap=0.0, time_limit=60, certify=False), {"ps_placement": "with-workers"})
    assert free.report.objective <= o3.report.objective + 1e-9


def test_ps_placement_is_a_problem_option_the_checker_takes_from_the_command_line():
    inst = toy_like(**O3_COUNTEREXAMPLE)
    sol = FAMILY.run(inst, "exact", SolveOptions(gap=0.0, certify=False))
    check = check_solution(inst, sol, options={"ps_placement": "with-workers"})
    assert {"ps-placement", "problem-options"} <= {v.rule for v in check.violations}
    assert {o.name for o in FAMILY.options if o.problem} == {"locality", "ps_placement"}


# 2. the checker never crashes on a JSON value

JUNK = [2**63, 2**70, -(2**70), -1, 1.5, float("inf"), True, False, None, "3", "", [], [1, [2]], {}, {"a": {"b": []}}]


def _poke(decision, where: str, value):
    d = json.loads(json.dumps(decision))
    entry = d["schedule"]["B"][0]
    if where == "worker-count":
        entry["workers"]["M/0"] = value
    elif where == "ps-count":
        entry["ps"]["M/1"] = value
    elif where == "workers":
        entry["workers"] = value
    elif where == "slot":
        entry["slot"] = value
    elif where == "entry":
        d["schedule"]["B"][0] = value
    elif where == "job-list":
        d["schedule"]["B"] = value
    elif where == "schedule":
        d["schedule"] = value
    elif where == "admitted":
        d["admitted"] = value
    elif where == "admitted-item":
        d["admitted"].append(value)
    elif where == "extra":
        d["extra"] = value
    elif where == "completion":
        d["extra"]["completion"]["B"] = value
    elif where == "server-key":
        entry["workers"] = {json.dumps(value): 1}
    return d


@settings(max_examples=150, deadline=None)
@given(where=st.sampled_from(["worker-count", "ps-count", "workers", "slot", "entry", "job-list", "schedule", "admitted",
                              "admitted-item", "extra", "completion", "server-key"]),
       value=st.sampled_from(JUNK) | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5))
def test_checker_names_a_rule_for_any_json_value(where, value):
    inst, sol = _toy_solution()
    placement = "with-workers" if isinstance(value, int) and value % 2 else "free"
    result = check_decision(inst, _poke(sol.decision, where, value), {"ps_placement": placement})
    assert all(v.rule != "malformed" for v in result.violations)


@pytest.mark.parametrize("value", [2**63, 2**70, -5, 2.0, True, "4", [4], {"n": 4}])
def test_checker_rejects_odd_counts_with_the_domain_rule(value):
    inst, sol = _toy_solution()
    result = check_decision(inst, _poke(sol.decision, "worker-count", value))
    assert "domain" in {v.rule for v in result.violations}


# 3. no work after the completion slot (C6)

@pytest.mark.parametrize("method", ["exact", "greedy-rr", "spread"])
def test_checker_rejects_work_after_the_completion_slot(method):
    inst = load_instance(TOY)
    sol = FAMILY.run(inst, method, SolveOptions(seed=0, gap=0.0, certify=False))
    assert check_decision(inst, sol.decision).feasible
    for job_id, done in sol.decision["extra"]["completion"].items():
        if done + 1 < inst.slots:
            d = json.loads(json.dumps(sol.decision))
            d["schedule"][job_id].append({"slot": done + 1, "workers": {"M/0": 1}, "ps": {"M/0": 1}})
            assert "after-completion" in {v.rule for v in check_decision(inst, d).violations}
            d["schedule"][job_id][-1]["workers"] = {}  # a lone PS after completion too
            assert "after-completion" in {v.rule for v in check_decision(inst, d).violations}


# 4. a job that fits exactly is scheduled (epsilon in {0, 0.05, 0.1}, pitfall P6)

@pytest.mark.parametrize("method", ["greedy-rr", "pd-rr", "unaware", "colocate", "spread", "greedy-ilp"])
def test_a_job_that_fits_exactly_is_scheduled(method):
    """One machine of 6 units, 2 slots: 4 workers + 2 PSs co-located train 6 a slot, V = 12 = all there is (q_ex for spread)."""
    work = 8 if method in ("unaware", "spread") else 12  # one machine: spread patterns count at q_ex = 1 in the plan
    inst = toy_like(machines=1, capacity=6, slots=2, jobs=[(0, work, 4)])
    sol = FAMILY.run(inst, method, SolveOptions(seed=0))
    assert sol.decision["extra"]["completion"] == {"J0": 1}, sol.report.message
    assert check_solution(inst, sol).feasible
    if method not in ("greedy-ilp",):
        pinned = FAMILY.run(inst, method, SolveOptions(seed=0), {"epsilon": 0.05})  # the option still pins one epsilon
        assert pinned.decision["extra"]["completion"] == {}


def test_epsilon_option_domain():
    from mlsched_opt.errors import OptionError

    for bad in (-0.5, 1.5, float("nan")):
        with pytest.raises(OptionError):
            FAMILY.run(load_instance(TOY), "greedy-rr", SolveOptions(), {"epsilon": bad})


# 5. same seed -> byte-identical decision; no wall-clock timing in it

@pytest.mark.parametrize("method", RANDOMIZED)
def test_same_seed_gives_a_byte_identical_decision(method):
    inst = generated(jobs=5, servers=2, slots=8, seed=11)
    a, b = (FAMILY.run(inst, method, SolveOptions(seed=7)) for _ in range(2))
    assert json.dumps(a.decision, sort_keys=True) == json.dumps(b.decision, sort_keys=True)
    flat = json.dumps(a.decision)
    assert '_s"' not in flat and "decision_s" not in flat  # no seconds anywhere in the decision
    assert "ms per arriving job" in a.report.message


# 6. option domains, bounded loops, time limit

# (every option's own domain, through the library and the CLI, is the contract's: tests/test_contract.py)

@pytest.mark.parametrize("option, value", [("work_min", "30")])  # in its domain, but above work_max
def test_hostile_generator_options_exit_2(run, tmp_path, option, value):
    code, _out, err = run("generate", "--problem", "locality", "--jobs", "2", "--servers", "1", "--seed", "0", "--set", f"{option}={value}",
                         "-o", tmp_path / "x.toml")
    assert code == 2 and option in err and "Traceback" not in err


@pytest.mark.parametrize("method", RANDOMIZED)
def test_methods_stop_at_the_time_limit_with_their_best_answer(method):
    inst = generated(jobs=6, servers=2, slots=10, seed=1)
    sol = FAMILY.run(inst, method, SolveOptions(seed=0, time_limit=1e-9))  # past before the first job: deterministic
    assert sol.report.status == "feasible" and "cut short" in sol.report.message
    assert check_solution(inst, sol).feasible


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["time"].update({"slots": 10**7}), "time.slots"),
    (lambda d: (d["jobs"][0]["demand"].update({"worker": {}}), d["jobs"][0]["workers"].update({"max": 50_000})), "jobs[0].workers.max"),
])
def test_huge_instances_are_refused_up_front(run, tmp_path, edit, field):
    doc = read_document(TOY)
    edit(doc)
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(doc))
    for method in ("greedy-rr", "exact"):
        code, _out, err = run("solve", path, "--method", method)
        assert code == 2 and field in err and "Traceback" not in err, (method, err)


# 7. the CP-SAT translation keeps every coefficient small

@pytest.mark.parametrize("placement", ["free", "with-workers"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cpsat_translation_has_small_coefficients(placement, seed):
    """Integer completion rows (no scaled rates): no coefficient above 1e6 after the translation (it was 1.5e10)."""
    from mlsched_opt.solvers.cpsat import translate

    inst = generated(jobs=4, servers=2, slots=6, seed=seed)
    proto = translate(FAMILY.build_model(inst, FAMILY.parse_options({"ps_placement": placement}))).model.Proto()
    biggest = max(abs(c) for con in proto.constraints for c in con.linear.coeffs)
    assert 1 <= biggest <= 10**6


def test_work_rows_are_exact_for_fractional_rates():
    from mlsched_opt.problems.locality.formulation import reaches, work_cover

    cover = work_cover(JOB2, 4)  # q = 1.5 and 1 samples, V = 12: the work row itself, 1.5 a + b >= 12 in integers
    assert cover.rows == ((3, 2, 24),) and cover.reach == 32
    odd = LocalityJob("j", 0, 1000003.0, 1234.567891, 987.654321, np.array([1.0]), np.array([1.0]), 2, 4)
    cover = work_cover(odd, 200)
    assert all(isinstance(x, int) for row in cover.rows for x in row)
    for a in range(cover.reach + 1):   # the rows accept exactly the checker's points (a, b) near the boundary
        edge = next((b for b in range(cover.reach + 1) if reaches(odd, a, b)), cover.reach + 1)
        for b in range(max(0, edge - 2), min(cover.reach, edge + 2) + 1):
            assert cover.holds(a, b) == reaches(odd, a, b)


@pytest.mark.parametrize("flag", ["--jobs", "--servers", "--slots"])
def test_generator_refuses_huge_sizes_before_drawing(run, tmp_path, flag):
    args = {"--jobs": "2", "--servers": "1", "--slots": "4"}
    args[flag] = str(10**9)
    code, _out, err = run("generate", "--problem", "locality", *[x for kv in args.items() for x in kv], "--seed", "0",
                         "-o", tmp_path / "x.toml")
    assert code == 2 and flag in err and "Traceback" not in err
