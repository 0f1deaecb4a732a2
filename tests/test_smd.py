"""SMD (spec 002): the layered model, the toy of section 6, Algorithms 1-2, Frieze-Clarke, baselines, checker."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from mlsched_opt.io import from_document, load_catalog, load_instance
from mlsched_opt.io.instance import Utility
from mlsched_opt.problems import GenerateSpec, check_solution, get_family
from mlsched_opt.problems.smd import layered
from mlsched_opt.problems.smd.baselines import esw, optimus
from mlsched_opt.problems.smd.inner import algorithm1, algorithm2, best_integer, rounding_law, scale_factor
from mlsched_opt.problems.smd.mkp import exact_knapsack, frieze_clarke, subset_size
from mlsched_opt.problems.smd.view import SmdJob, smd_view
from mlsched_opt.solvers import SolveOptions

from .conftest import ROOT

TOY = ROOT / "instances" / "smd-toy.toml"
EXACT = SolveOptions(gap=0.0, time_limit=30)
SMD = get_family("smd")


def toy_job(sgd, theta, limit, utility=(80, 4, 14)) -> SmdJob:
    """A toy job of spec 6.1: a worker needs (1 GPU, 2 CPU), a PS (0 GPU, 2 CPU)."""
    u = Utility("sigmoid", {"gamma1": utility[0], "gamma2": utility[1], "gamma3": utility[2]}, "seconds")
    return SmdJob(0, "t", sgd, np.array(theta, float), np.array([1.0, 2.0]), np.array([0.0, 2.0]),
                  np.array(limit, float), (1, 100), (1, 100), u)


@pytest.fixture(scope="module")
def toy():
    inst = load_instance(TOY)
    return inst, {j.id: j for j in smd_view(inst).jobs}


# --- layered model (spec 1.3) -------------------------------------------------------------

def test_four_layer_example_times_and_etas():
    f = b = [1, 1, 1, 1]
    r = [1, 1, 1, 3]
    assert layered.sequential(f, b, r).t == 20 and layered.sequential(f, b, r).eta == (1, 1, 1)
    wf = layered.wait_free(f, b, r)
    assert wf.t == 14 and wf.eta == pytest.approx((1, 0.25, 0.75))
    assert wf.detail["kappa"].tolist() == [6, 5, 4, 1] and wf.detail["s"].tolist() == [9, 8, 7, 4]
    pr = layered.priority(f, b, r, phi=0.5)
    assert pr.t == 9.5 and pr.eta == pytest.approx((1, 1, 1 / 8))
    assert pr.detail["e"].tolist() == [5.5, 0, 0, 7.5] and pr.detail["tau"].tolist() == [5.5, 6.5, 7.5, 8.5]
    assert layered.priority_sim(f, b, r, phi=0.5).t == 9.5


def test_lemma2_overestimates_the_exact_priority_schedule():
    lemma = layered.priority([1, 1, 1], [1, 1, 1], [1, 2, 2])
    sim = layered.priority_sim([1, 1, 1], [1, 1, 1], [1, 2, 2])
    assert lemma.detail["e"].tolist() == [4, 5, 7] and lemma.t == 8
    assert sim.detail["e"].tolist() == [4, 5, 6] and sim.t == 7
    rng = np.random.default_rng(0)
    above = 0
    for _ in range(500):
        n = int(rng.integers(2, 7))
        b, f, r = (rng.uniform(0.1, 3, n) for _ in range(3))
        a, s = layered.priority(f, b, r).t, layered.priority_sim(f, b, r).t
        assert a >= s - 1e-9
        above += a > s + 1e-9
    assert 0.05 < above / 500 < 0.3  # the spec reports about 15 %


def test_critical_path_shares_add_up():
    rng = np.random.default_rng(1)
    for scheme in layered.SCHEMES:
        for _ in range(50):
            n = int(rng.integers(1, 8))
            f, b, r = (rng.uniform(0.1, 3, n) for _ in range(3))
            t = layered.iteration_timing(scheme, f, b, r, 0.2)
            assert sum(t.critical) == pytest.approx(t.t)
            assert all(0 < e <= 1 + 1e-9 for e in t.eta)
            assert t.t <= layered.sequential(f, b, r).t + 0.2 + 1e-9


# --- the toy (spec 6) ----------------------------------------------------------------------

def test_toy_completion_times(toy):
    _, jobs = toy
    table_b = {(1, 1): 23, (1, 2): 21, (1, 3): 20.3333, (1, 4): 20, (1, 5): 19.8, (2, 1): 20, (2, 2): 16, (2, 3): 14.6667,
               (2, 4): 14, (3, 1): 22.3333, (3, 2): 16.3333, (3, 3): 14.3333, (4, 1): 26, (4, 2): 18}
    for (w, p), tau in table_b.items():
        assert jobs["B"].completion_time(w, p) == pytest.approx(tau, abs=1e-4)
    assert not jobs["B"].fits(3, 4)
    for (w, p), tau in {(4, 4): 22, (4, 3): 22.3333, (3, 3): 22.6667, (4, 5): 22.2, (5, 4): 22.4}.items():
        assert jobs["A"].completion_time(w, p) == pytest.approx(tau, abs=1e-4)
    assert jobs["C"].completion_time(4, 2) == 5.5 and jobs["C"].completion_time(3, 3) == 6
    assert [best_integer(jobs[k])[:2] for k in "ABC"] == [(4, 4), (2, 4), (4, 2)]


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_toy_optimum_is_60_with_b_and_c(toy, solver):
    inst, _ = toy
    sol = SMD.run(inst, "exact", SolveOptions(solver=solver, gap=0.0))
    assert sol.report.status == "optimal" and sol.report.objective == pytest.approx(60)
    assert sorted(sol.decision["admitted"]) == ["B", "C"]
    assert sol.decision["extra"]["allocation"] == {"B": {"workers": 2, "ps": 4}, "C": {"workers": 4, "ps": 2}}
    assert check_solution(inst, sol).feasible


def test_toy_frieze_clarke_subset_sizes():
    u, v, cap = [50, 40, 20], [[6, 20], [4, 12], [4, 12]], [8, 24]
    assert subset_size(0.01, 2, 3) == 3 and subset_size(0.5, 2, 3) == 2
    assert frieze_clarke(u, v, cap, 0.01).value == 60
    assert frieze_clarke(u, v, cap, 0.5).value == 60
    assert frieze_clarke(u, v, cap, k=0).value == 40  # LP round-down only
    assert exact_knapsack(u, v, cap).value == 60


@pytest.mark.parametrize("method, options, total", [
    ("esw", {}, 21.46), ("esw", {"esw": "best"}, 50), ("optimus", {}, 60)])
def test_toy_baselines(toy, method, options, total):
    inst, _ = toy
    sol = SMD.run(inst, method, EXACT, options)
    assert sol.report.objective == pytest.approx(total, abs=0.005)
    assert check_solution(inst, sol).feasible


def test_esw_allocations(toy):
    _, jobs = toy
    assert [esw(jobs[k])[:2] for k in "ABC"] == [(5, 5), (3, 3), (3, 3)]
    assert [esw(jobs[k], "best")[:2] for k in "ABC"] == [(4, 4), (3, 3), (3, 3)]


def test_optimus_is_trapped_on_job_d():
    d = toy_job("sync", [1, 3, 0, 4, 9], [6, 20])
    trapped = optimus(d)
    assert (trapped.w, trapped.p, trapped.tau) == (1, 1, 17)
    assert (d.completion_time(2, 1), d.completion_time(1, 2)) == (17.5, 18)
    assert best_integer(d)[:3] == (2, 2, 16.5)
    assert optimus(d, "fill").tau <= 17


# --- Algorithm 1 (spec 2.3) -------------------------------------------------------------------

@pytest.mark.parametrize("name, eps, relaxed", [("A", 0.1, 22.0), ("B", 0.02, 13.732517), ("C", 0.01, 5.5)])
def test_algorithm1_is_within_one_plus_eps_and_engines_agree(toy, name, eps, relaxed):
    _, jobs = toy
    vertex = algorithm1(jobs[name], eps, "vertex")
    highs = algorithm1(jobs[name], eps, "highs")
    for r in (vertex, highs):
        assert r.tau <= r.psi + 1e-9
        assert r.psi <= (1 + eps) * relaxed + 1e-9
        assert r.tau >= relaxed - 1e-6  # nothing beats the relaxed optimum
    assert vertex.psi == pytest.approx(highs.psi, rel=1e-9)
    assert highs.lps < highs.grid_points  # pruning works


def test_algorithm1_reproduces_the_spec_grid_points(toy):
    _, jobs = toy
    a = algorithm1(jobs["A"], 0.1)
    assert a.x == pytest.approx([4.0981, 4.1772], abs=1e-4) and a.psi == pytest.approx(22.0872, abs=1e-4)
    assert a.grid_points == 10_000 and a.tau == pytest.approx(22.0081, abs=1e-4)
    b = algorithm1(jobs["B"], 0.02)
    assert b.grid_points == 5_184 and b.tau == pytest.approx(13.7328, abs=1e-4)
    c = algorithm1(jobs["C"], 0.01)
    assert c.grid_points == 141 and c.x == pytest.approx([4, 2])


def test_extended_grid_fixes_job_e():
    e = toy_job("sync", [1, 0, 0, 0.5, 100], [6, 20])
    assert algorithm1(e, 0.05).tau == pytest.approx(23.4167, abs=1e-4)
    literal = algorithm1(e, 0.05, extend=False)
    assert literal.tau == pytest.approx(23.881, abs=1e-3)


# --- Algorithm 2 (spec 2.4) -------------------------------------------------------------------

XBAR_B = np.array([2.377997, 3.622003])


@pytest.mark.parametrize("F, p24, p33, p23", [(1, 0.5058, 0.1868, 0.3074), (3, 0.7761, 0.1289, 0.0950), (10, 0.9925, 0.0070, 0.0005)])
def test_rounding_law_of_b(toy, F, p24, p33, p23):
    _, jobs = toy
    law = rounding_law(jobs["B"], XBAR_B, F)
    assert law[(2, 4)] == pytest.approx(p24, abs=1e-4)
    assert law[(3, 3)] == pytest.approx(p33, abs=1e-4)
    assert law[(2, 3)] == pytest.approx(p23, abs=1e-4)
    assert sum(law.values()) == pytest.approx(1)


def test_rounding_success_formula(toy):
    _, jobs = toy
    for F, want in ((2, 0.6521), (5, 0.9137)):
        assert rounding_law(jobs["B"], XBAR_B, F)[(2, 4)] == pytest.approx(want, abs=1e-4)
        formula = 1 - (1 - 0.3869) ** F + 0.2351 ** F * 0.3869 / 0.7649
        assert formula == pytest.approx(want, abs=2e-4)


def test_sampler_matches_the_law(toy):
    _, jobs = toy
    law = rounding_law(jobs["B"], XBAR_B, 1)
    rng = np.random.default_rng(7)
    n = 4000
    counts: dict[tuple[int, int], int] = {}
    for _ in range(n):
        a, _, fell_back = algorithm2(jobs["B"], XBAR_B, 1, rng)
        assert not fell_back and a.feasible
        counts[(a.w, a.p)] = counts.get((a.w, a.p), 0) + 1
    for outcome, p in law.items():
        assert abs(counts.get(outcome, 0) / n - p) < 4 * np.sqrt(p * (1 - p) / n)


def test_rounding_is_seeded_and_never_returns_zero(toy):
    _, jobs = toy
    small = np.array([1.2, 1.1])
    for seed in range(50):
        a1 = algorithm2(jobs["B"], small, 3, np.random.default_rng(seed), scale=0.3)
        a2 = algorithm2(jobs["B"], small, 3, np.random.default_rng(seed), scale=0.3)
        assert a1 == a2
        assert a1[0].w >= 1 and a1[0].p >= 1


def test_lemma3_scale(toy):
    _, jobs = toy
    for delta, m in ((0.1, 0.2199), (0.5, 0.3075), (1.0, 0.3753)):
        assert scale_factor(jobs["B"], delta) == pytest.approx(m, abs=1e-4)


# --- SMD end to end on the toy (spec 6.3) -----------------------------------------------------

def _smd_law(jobs, xa, xb, F):
    """Exact distribution of SMD's total on the toy, from the rounding laws and the outer step."""
    law_a, law_b = rounding_law(jobs["A"], xa, F), rounding_law(jobs["B"], xb, F)
    c = best_integer(jobs["C"])
    u_c = jobs["C"].utility(c.tau)
    expected = p_opt = 0.0
    for ((wa, pa), pa_), ((wb, pb), pb_) in itertools.product(law_a.items(), law_b.items()):
        u = [jobs["A"].utility_of(wa, pa), jobs["B"].utility_of(wb, pb), u_c]
        total = frieze_clarke(u, [[6, 20], [4, 12], [4, 12]], [8, 24], 0.5).value
        expected += pa_ * pb_ * total
        p_opt += pa_ * pb_ * (abs(total - 60) < 1e-6)
    return expected, p_opt


@pytest.mark.parametrize("F, expected, p_opt", [(1, 52.48, 0.4878), (3, 57.52, 0.7586), (10, 59.90, 0.9904)])
def test_smd_outcome_distribution_with_the_grid_point(toy, F, expected, p_opt):
    _, jobs = toy
    xa = algorithm1(jobs["A"], 0.1).x
    xb = algorithm1(jobs["B"], 0.02).x
    e, p = _smd_law(jobs, xa, xb, F)
    assert e == pytest.approx(expected, abs=0.01) and p == pytest.approx(p_opt, abs=1e-4)


@pytest.mark.parametrize("F, expected, p_opt", [(1, 55.06, 0.5058), (10, 59.92, 0.9925)])
def test_smd_outcome_distribution_with_the_exact_relaxation(toy, F, expected, p_opt):
    _, jobs = toy
    e, p = _smd_law(jobs, np.array([4.0, 4.0]), XBAR_B, F)
    assert e == pytest.approx(expected, abs=0.01) and p == pytest.approx(p_opt, abs=1e-4)


def test_smd_method_on_the_toy_is_seeded_and_checked(toy):
    inst, _ = toy
    totals = set()
    for seed in range(12):
        a = SMD.run(inst, "smd", SolveOptions(seed=seed), {"attempts": 1})
        b = SMD.run(inst, "smd", SolveOptions(seed=seed), {"attempts": 1})
        assert a.decision == b.decision
        assert check_solution(inst, a).feasible
        totals.add(round(a.report.objective, 6))
    assert max(totals) == 60 and len(totals) > 1  # F = 1 is random, and never above the optimum
    assert SMD.run(inst, "smd", SolveOptions(seed=0), {"inner": "enumerate"}).report.objective == pytest.approx(60)


# --- checker, errors, generator -------------------------------------------------------------

def test_checker_finds_every_violation(toy):
    inst, _ = toy
    sol = SMD.run(inst, "exact", EXACT)
    bad = json.loads(json.dumps(sol.decision))
    bad["admitted"] = ["A", "B", "C", "Z"]
    bad["extra"]["allocation"]["A"] = {"workers": 7, "ps": 0}
    bad["extra"]["allocation"]["B"] = {"workers": 4, "ps": 5}
    sol.decision.clear()
    sol.decision.update(bad)
    result = check_solution(inst, sol)
    rules = {v.rule for v in result.violations}
    assert {"unknown-job", "domain", "limit", "capacity", "objective"} <= rules, result.violations


def test_missing_limit_is_a_user_error(run, tmp_path):
    text = TOY.read_text().replace("limit = { gpu = 4, cpu = 12 }\n", "", 1)
    path = tmp_path / "nolimit.toml"
    path.write_text(text)
    code, _, err = run("solve", path, "--method", "smd")
    assert code == 2 and "jobs[1].limit" in err and "Traceback" not in err


@pytest.mark.parametrize("old, new, field", [
    (', delay_unit = "seconds" }\n\n[[jobs]]\nid = "B"', ' }\n\n[[jobs]]\nid = "B"', "jobs[0].utility.delay_unit"),
    ("theta = [1, 0, 12, 3]", "theta = [1, 0, 12]", "jobs[2].speed_model.theta"),
])
def test_bad_speed_fields_name_the_field(run, tmp_path, old, new, field):
    text = TOY.read_text()
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new, 1))
    code, _, err = run("solve", path, "--method", "exact")
    assert code == 2 and field in err


@pytest.mark.parametrize("options", [{"sgd": "sync"}, {"sgd": "async", "unit": "instance"}, {"workloads": "catalog", "unit": "instance"}])
def test_generator_is_deterministic_and_valid(catalog, options):
    spec = GenerateSpec(jobs=6, servers=30, seed=5, options=SMD.parse_generate_options(options))
    doc = SMD.generate(spec, catalog)
    assert doc == SMD.generate(spec, catalog)
    inst = from_document(doc, catalog=catalog)
    view = smd_view(inst)
    if "sgd" in options:
        assert {j.sgd for j in view.jobs} == {options["sgd"]}
    assert all(j.admissible for j in view.jobs)  # the limit always holds one worker and one PS (P3)
    for method in SMD.methods:
        sol = SMD.run(inst, method, EXACT)
        assert check_solution(inst, sol).feasible, method


def test_catalog_jobs_take_layers_from_the_catalog(catalog):
    doc = {"format": "mlsched-instance/1", "cluster": {"servers": [{"name": "c", "capacity": {"gpu": 64, "cpu": 512}}]},
           "jobs": [{"id": "r50", "model": "resnet50", "sgd": "sync", "work": {"iterations": 1000}, "global_batch_size": 256,
                     "demand": {"worker": {"gpu": 1, "cpu": 4}, "ps": {"cpu": 4}}, "limit": {"gpu": 16, "cpu": 128},
                     "workers": {"min": 1, "max": 16}, "ps": {"min": 1, "max": 16},
                     "speed_model": {"ps_bandwidth_gbps": 10, "worker_overhead_s": 0.003},
                     "utility": {"kind": "sigmoid", "gamma1": 10, "gamma2": 1, "gamma3": 600, "delay_unit": "seconds"}}]}
    job = smd_view(from_document(doc, catalog=catalog)).jobs[0]
    layers = len(catalog["resnet50"].data["layers"]["parameters"])
    assert layers > 10 and job.eta is not None and job.eta[1] < 1  # wait-free overlaps some BP
    # t5 = eta1 E K t_f with t_f one third of the measured V100 per-sample time
    per_sample = 1 / catalog["resnet50"].throughput_samples_per_s("V100", 1)
    assert job.theta[4] == pytest.approx(job.eta[0] * 1000 * 256 * per_sample / 3)
    assert job.theta[3] == pytest.approx(2 * 1000 * job.eta[2] * catalog["resnet50"].gradient_mb * 8 / 1000 / 10)


# out-of-domain values are the contract's (tests/test_contract.py); this one is in epsilon1's domain
@pytest.mark.parametrize("setting", ["epsilon1=0.00001"])
def test_bad_options_exit_2(run, setting):
    code, _, err = run("solve", TOY, "--method", "smd", "--set", setting)
    assert code == 2 and "--set" in err and "Traceback" not in err


def test_generate_smd_from_the_cli(run, tmp_path):
    out = tmp_path / "g.toml"
    code, _, _ = run("generate", "--problem", "smd", "--jobs", "5", "--servers", "2", "--seed", "4", "--set", "sgd=async", "-o", out)
    assert code == 0
    code, text, _ = run("solve", out, "--method", "smd", "--json")
    assert code == 0 and json.loads(text)["check"]["feasible"]
    code, _, err = run("generate", "--problem", "smd", "--jobs", "5", "--servers", "2", "--seed", "4", "--set", "sgd=both", "-o", out)
    assert code == 2 and "sgd" in err


@pytest.mark.parametrize("seed", range(4))
def test_frieze_clarke_keeps_its_guarantee_against_the_proven_optimum(seed):
    rng = np.random.default_rng(seed)
    n, R = 25, 3
    u, v = rng.uniform(1, 100, n), rng.uniform(1, 20, (n, R))
    cap = v.sum(axis=0) * rng.uniform(0.15, 0.5)
    opt = exact_knapsack(u, v, cap, gap=0.0)
    assert opt.proven_optimal
    for eps in (0.9, 0.5, 0.3):
        res = frieze_clarke(u, v, cap, eps)
        assert res.complete
        assert np.all(v[res.chosen].sum(axis=0) <= cap + 1e-9)
        assert res.value >= res.k / (res.k + R) * opt.value - 1e-9
        assert res.value >= (1 - eps) * opt.value - 1e-9
        assert res.value <= opt.value + 1e-9


def test_algorithm1_is_within_one_plus_eps_of_the_integer_optimum_on_generated_jobs(catalog):
    """psi <= (1 + eps) OPT_relaxed <= (1 + eps) OPT_integer, on the paper's random jobs."""
    spec = GenerateSpec(jobs=8, servers=1000, seed=11, options=SMD.parse_generate_options({"unit": "instance"}))
    view = smd_view(from_document(SMD.generate(spec, catalog), catalog=catalog))
    for job in view.jobs:
        best = best_integer(job)
        for eps in (0.05, 0.2):
            res = algorithm1(job, eps)
            assert res.tau <= res.psi * (1 + 1e-9)
            assert res.psi <= (1 + eps) * best.tau * (1 + 1e-9), (job.id, eps)
            assert job.fits(*np.floor(res.x + 1e-9).astype(int))


def test_shipped_instance_is_what_its_source_command_generates(catalog):
    from mlsched_opt.io.files import read_document

    doc = read_document(ROOT / "instances" / "smd-12jobs.toml")
    assert doc["source"].startswith("mlsched generate --problem smd --jobs 12 --servers 25 --seed 1 --set unit=instance;")
    spec = GenerateSpec(jobs=12, servers=25, seed=1, options=SMD.parse_generate_options({"unit": "instance"}))
    assert SMD.generate(spec, catalog) == doc


def test_compare_and_export_from_the_cli(run, tmp_path):
    code, out, _ = run("compare", TOY, "--gap", "0")
    assert code == 0
    rows = {" ".join(line.split()[:2]): line.split() for line in out.splitlines() if line.startswith(("exact", "esw", "optimus"))}
    assert rows["exact (highs)"][3] == "60" and rows["exact (cpsat)"][3] == "60"
    # the last two columns are the checker's verdict and the certifying solvers ("-" for a heuristic)
    assert rows["esw feasible"][-2:] == ["ok", "-"] and rows["optimus feasible"][2] == "60"
    code, out, _ = run("export", TOY, "-o", tmp_path / "toy.lp")
    assert code == 0 and "3 variables, 2 constraints" in out


# --- regression: review of the smd family -------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


def generated(seed, jobs=4, servers=3, **options):
    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed, options=SMD.parse_generate_options(options))
    return from_document(SMD.generate(spec, load_catalog()), catalog=load_catalog())


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), attempts=st.sampled_from([1, 2, 10]), outer=st.sampled_from(["ptas", "exact"]),
       sgd=st.sampled_from(["mix", "sync", "async"]))
def test_every_method_answers_plain_json(seed, attempts, outer, sgd):
    # defect 1: a numpy int64 (the rounding's redraw count, frequent with attempts=1) crashed --out
    inst = generated(seed, jobs=4, servers=2, sgd=sgd)
    for method in SMD.methods:
        opts = {} if method == "exact" else {"attempts": attempts, "outer": outer}
        sol = SMD.run(inst, method, SolveOptions(gap=0.0, time_limit=20, seed=seed), opts)
        json.dumps(sol.decision, allow_nan=False)
        json.dumps(sol.to_dict(), allow_nan=False)  # what --out and --json write
        assert check_solution(inst, sol).feasible, method


def test_rounding_redraws_are_plain_ints():
    # the redraw branch of Algorithm 2 (no feasible draw among the first F) returned numpy's int
    job = toy_job("sync", [1, 1, 1, 1, 1], [1, 4])
    x = np.array([1.5, 1.5])  # every draw but (1, 1) breaks the limit of 1 GPU
    for seed in range(20):
        alloc, used, _ = algorithm2(job, x, 1, np.random.default_rng(seed))
        assert type(used) is int and type(alloc.w) is int and type(alloc.p) is int


# --- option domains and bounded loops (defect 6) -------------------------------------------

# (every option's domain, and its refusal of what is outside, is the contract's: tests/test_contract.py)

def test_overlap_is_the_only_problem_option():
    assert {o.name for o in SMD.options if o.problem} == {"overlap"}


def test_tiny_epsilon1_is_refused_before_the_grid_is_built():
    from mlsched_opt.errors import OptionError

    job = toy_job("sync", [1, 1, 1, 1, 1], [10, 40])
    with pytest.raises(OptionError, match="epsilon1"):
        algorithm1(job, 1e-6)


@pytest.mark.parametrize("outer", ["ptas", "exact"])
def test_exhaustive_admission_stops_at_the_time_limit_with_its_best_answer(outer):
    # epsilon2 near 0 makes Frieze-Clarke enumerate every subset of 40 jobs
    inst = generated(2, jobs=40, servers=2)
    sol = SMD.run(inst, "esw", SolveOptions(time_limit=1e-6), {"epsilon2": 1e-6, "outer": outer})
    assert sol.report.status == "feasible" and check_solution(inst, sol).feasible
    if outer == "ptas":
        assert "cut short by the time limit" in sol.report.message
        stats = sol.decision["extra"]["stats"]
        # the deadline stops the sizing (jobs left unsized are not admitted) or the subset search
        assert stats.get("unsized", 0) > 0 or stats["outer_complete"] is False
    json.dumps(sol.to_dict(), allow_nan=False)


def test_generator_refuses_absurd_sizes():
    from mlsched_opt.errors import UserError

    with pytest.raises(UserError, match="--jobs"):
        SMD.generate(GenerateSpec(jobs=10**7, servers=1, seed=0, options=SMD.parse_generate_options({})), load_catalog())


# --- determinism (defect 8) ----------------------------------------------------------------

@pytest.mark.parametrize("method", list(SMD.methods))
@pytest.mark.parametrize("options", [{}, {"attempts": 1}, {"scale": "formula"}, {"inner": "enumerate", "outer": "exact"}])
def test_same_seed_gives_a_byte_identical_decision(method, options):
    inst = generated(4, jobs=8, servers=2)
    opts = {} if method == "exact" else options
    so = SolveOptions(seed=11, gap=0.0, time_limit=60, certify=False)
    first, second = (json.dumps(SMD.run(inst, method, so, opts).decision, allow_nan=False) for _ in range(2))
    assert first == second


@pytest.mark.parametrize("method", list(SMD.methods))
def test_a_huge_allocation_box_is_refused_naming_the_limit(method):
    # ranges of 10^5 (the loader's task limit) and a limit holding them all: 10^10 (w, p) pairs
    # for the exact enumeration, and ESW and Optimus walking 10^5 steps of the box
    from mlsched_opt.errors import InstanceError

    big = 100_000
    doc = {"format": "mlsched-instance/1", "name": "huge", "problem": "smd",
           "cluster": {"servers": [{"name": "c", "capacity": {"gpu": 10 * big, "cpu": 10 * big}}]},
           "jobs": [{"id": "a", "sgd": "sync", "local_batch_size": 1, "global_batch_size": 1,
                     "demand": {"worker": {"gpu": 1, "cpu": 1}, "ps": {"cpu": 1}},
                     "workers": {"min": 1, "max": big}, "ps": {"min": 1, "max": big}, "limit": {"gpu": 2 * big, "cpu": 2 * big},
                     "speed_model": {"theta": [0, 0, 1, 0, 2]},
                     "utility": {"kind": "sigmoid", "gamma1": 1, "gamma2": 4, "gamma3": 2.5, "delay_unit": "seconds"}}]}
    inst = from_document(doc, catalog=load_catalog())
    with pytest.raises(InstanceError, match="limit"):
        SMD.run(inst, method, SolveOptions(time_limit=10), {"inner": "enumerate"} if method == "smd" else {})
