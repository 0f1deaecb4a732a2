"""Harmony (spec 004): the interference world's reference behaviour, exact search, surrogate,
heuristics, checker, generator, CLI and (with the rl extra) the learned policy."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from mlsched_opt.checking import check_solution
from mlsched_opt.cli import main
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import REGISTRY, GenerateSpec
from mlsched_opt.problems.harmony.check import _speed as checker_speed
from mlsched_opt.problems.harmony.check import check as harmony_check
from mlsched_opt.problems.harmony.baselines import make_heuristic, pair_table
from mlsched_opt.problems.harmony.exact import Myopic, count_vectors, exhaustive, job_options, static_jct, static_placements
from mlsched_opt.problems.harmony.generate import generate
from mlsched_opt.problems.harmony.simulate import simulate
from mlsched_opt.problems.harmony.surrogate import surrogate_values
from mlsched_opt.problems.harmony.view import make_world, view_of
from mlsched_opt.problems.harmony.world import Jobs, speeds, step_times
from mlsched_opt.solvers import SolveOptions

ROOT = Path(__file__).resolve().parents[1]
FAMILY = REGISTRY["harmony"]
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed: pip install -e '.[rl]' (torch==2.13.0)")
WORKER = {"cpu": 2, "gpu": 1, "memory_gb": 4}
PS = {"cpu": 2, "memory_gb": 4}


def instance(jobs, servers=3, slots=1):
    doc = {"format": "mlsched-instance/1", "problem": "harmony", "time": {"slots": slots, "slot_s": 300},
           "cluster": {"servers": [{"name": "s", "count": servers, "capacity": {"cpu": 8, "gpu": 2, "memory_gb": 48}}]},
           "jobs": []}
    for i, (model, arch, W, P, *rest) in enumerate(jobs):
        job = {"id": f"j{i}", "model": model, "architecture": arch, "workers": {"count": W},
               "work": {"epochs": 10, "samples_per_epoch": 20000}, "demand": {"worker": WORKER}, "arrival_slot": rest[0] if rest else 0}
        if arch == "ps":
            job["ps"] = {"count": P}
            job["demand"]["ps"] = PS
        doc["jobs"].append(job)
    return from_document(doc)


def generated(seed, jobs, servers, **options):
    catalog = load_catalog()
    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed, options=FAMILY.parse_generate_options(options))
    return from_document(generate(spec, catalog), catalog=catalog)


@pytest.fixture(scope="module")
def world():
    return make_world("default")


# --- spec section 3: reference behaviour ---------------------------------------------------------

def test_pairwise_slowdowns_span_9_to_43_percent_with_resnext_ctc_worst(world):
    table = pair_table(world)
    assert table.min() == pytest.approx(0.09, abs=0.01)
    assert table.max() == pytest.approx(0.43, abs=0.01)
    assert np.median(table) == pytest.approx(0.17, abs=0.01)
    worst = np.unravel_index(np.argmax(table), table.shape)
    assert (world.types[worst[0]], world.types[worst[1]]) == ("resnext110", "ctc")
    gentlest = world.types[int(np.argmin(table.mean(axis=0)))]
    assert gentlest == "seq2seq"


@pytest.mark.parametrize("model, expected", [("resnext110", [1.0, 0.63, 0.35, 0.20]), ("vgg16", [1.0, 0.83, 0.64, 0.47])])
def test_speed_falls_monotonically_with_colocated_ctc_jobs(world, model, expected):
    a, c = world.index(model), world.index("ctc")
    out = []
    for n in range(4):
        jobs = Jobs.of([a] + [c] * n, [True] * (n + 1), [1] * (n + 1), [1] * (n + 1))
        out.append(speeds(world, jobs, np.ones((n + 1, 1), int), np.ones((n + 1, 1), int))[0])
    ratio = np.array(out) / out[0]
    assert np.all(np.diff(ratio) < 0)
    assert ratio == pytest.approx(expected, abs=0.07)   # the spec's values are approximate targets


@pytest.mark.parametrize("pair, winner", [(("vgg16", "seq2seq"), "packing"), (("resnext110", "ctc"), "load-balance")])
def test_packing_wins_for_vgg_seq2seq_and_load_balancing_for_resnext_ctc(pair, winner):
    inst = instance([(pair[0], "ps", 2, 1), (pair[1], "ps", 2, 1)])
    view = view_of(inst, {})
    jct = {name: simulate(view, make_heuristic(name)).jct(view).mean() for name in ("packing", "load-balance")}
    loser = ({"packing", "load-balance"} - {winner}).pop()
    assert jct[winner] < jct[loser] * 0.99


@pytest.mark.parametrize("model, change", [("vgg16", -0.19), ("resnext110", 0.51)])
def test_allreduce_spread_two_plus_two_against_four_on_one(world, model, change):
    jobs = Jobs.of([world.index(model)], [False], [4], [0])
    packed = speeds(world, jobs, np.array([[4, 0]]), np.zeros((1, 2), int))[0]
    spread = speeds(world, jobs, np.array([[2, 2]]), np.zeros((1, 2), int))[0]
    assert spread / packed - 1 == pytest.approx(change, abs=0.05)


def test_self_interference_counts(world):
    # pitfall P12: a job's own co-located tasks slow it down too
    jobs = Jobs.of([world.index("ctc")], [False], [2], [0])
    together = step_times(world, jobs, np.array([[2, 0]]), np.zeros((1, 2), int))[0]
    assert together > world.t_comp[world.index("ctc")] + world.t_loc[world.index("ctc")]


def test_vectorized_speeds_match_the_checkers_loops():
    rng = np.random.default_rng(0)
    for seed in range(5):
        view = view_of(generated(seed, 6, 4, load=2.0), {})
        w = np.zeros((view.J, view.M), int)
        p = np.zeros((view.J, view.M), int)
        for j in range(view.J):
            np.add.at(w[j], rng.integers(view.M, size=int(view.jobs.W[j])), 1)
            np.add.at(p[j], rng.integers(view.M, size=int(view.jobs.P[j])), 1)
        fast = speeds(view.world, view.jobs, w, p)
        slow = [checker_speed(view, j, w, p, set(range(view.J))) for j in range(view.J)]
        assert fast == pytest.approx(slow, rel=1e-12)


# --- exact search and the surrogate ----------------------------------------------------------------

def test_count_vectors_are_every_composition():
    v = count_vectors(4, 3)
    assert len(v) == 15 and np.all(v.sum(axis=1) == 4) and len({tuple(r) for r in v}) == 15


def _brute_force_min(view):
    """The static optimum without pruning or symmetry: every combination of every job's options."""
    opts = [job_options(int(view.jobs.W[j]), int(view.jobs.P[j]), view.M, view.capacity, view.worker_demand[j], view.ps_demand[j])
            for j in range(view.J)]
    idx = np.stack(np.meshgrid(*[np.arange(len(o[0])) for o in opts], indexing="ij"), -1).reshape(-1, view.J)
    w = np.stack([opts[j][0][idx[:, j]] for j in range(view.J)], axis=1)
    p = np.stack([opts[j][1][idx[:, j]] for j in range(view.J)], axis=1)
    use = np.einsum("bjm,jk->bmk", w, view.worker_demand) + np.einsum("bjm,jk->bmk", p, view.ps_demand)
    ok = np.all(use <= view.capacity + 1e-9, axis=(1, 2))
    return float(static_jct(view, w[ok], p[ok]).mean(axis=1).min()), int(ok.sum())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_symmetry_canonicalization_keeps_the_optimum(seed):
    view = view_of(generated(seed, 3, 3, static=True, max_workers=3), {})
    res = exhaustive(view, 60)
    brute, feasible = _brute_force_min(view)
    assert res.complete and res.avg_jct == pytest.approx(brute, rel=1e-9)
    assert res.canonical < feasible


@pytest.mark.parametrize("seed", range(4))
def test_exact_is_no_worse_than_any_heuristic_and_passes_the_checker(seed):
    inst = generated(seed, 4, 4, static=True)
    opts = SolveOptions(time_limit=60)
    exact = FAMILY.run(inst, "exact", opts)
    assert exact.report.status == "optimal"
    check = check_solution(inst, exact)
    assert check.feasible and check.objective == pytest.approx(exact.report.objective)
    for name in ("load-balance", "tetris", "least-interference", "packing", "standalone", "random", "myopic", "surrogate"):
        sol = FAMILY.run(inst, name, opts)
        assert check_solution(inst, sol).feasible
        assert exact.report.objective <= sol.report.objective + 1e-9, name


@pytest.mark.parametrize("seed", range(3))
def test_surrogate_milp_optimum_equals_exhaustive_search_on_the_surrogate_with_both_solvers(seed):
    # highspy and ortools are imported into this one process on purpose (see pyproject.toml pins)
    inst = generated(seed, 3, 3, static=True)
    view = view_of(inst, {})
    w, p, _, complete = static_placements(view, 60)
    assert complete
    best = float(surrogate_values(view, w, p).min())
    for solver in ("cpsat", "highs"):
        sol = FAMILY.run(inst, "surrogate", SolveOptions(solver=solver, time_limit=60, gap=0.0))
        assert "optimal" in sol.report.message
        surrogate_objective = float(sol.report.message.split("surrogate objective ")[1].split(" ")[0])
        assert surrogate_objective == pytest.approx(best, rel=1e-5), solver
        assert check_solution(inst, sol).feasible


def test_exact_refuses_online_traces_and_oversized_batches():
    with pytest.raises(Exception, match="static batch"):
        exhaustive(view_of(generated(0, 6, 3), {}), 10)
    with pytest.raises(Exception, match="exceed"):
        exhaustive(view_of(generated(0, 8, 8, static=True), {}), 10)


def test_myopic_is_exactly_optimal_for_one_job_on_an_empty_cluster():
    view = view_of(instance([("vgg16", "ps", 3, 2)]), {})
    out = simulate(view, Myopic(view))
    best = exhaustive(view, 10)
    assert out.jct(view).mean() == pytest.approx(best.avg_jct, rel=1e-12)


# --- simulation, gang placement, checker -----------------------------------------------------------

def test_gang_rollback_queues_a_job_that_does_not_fit_and_never_migrates():
    # 2 servers x 2 GPUs: the 4-worker job fills the cluster, the second waits for it to finish
    view = view_of(instance([("resnet50", "allreduce", 4, 0), ("ctc", "allreduce", 2, 0)], servers=2), {})
    out = simulate(view, make_heuristic("load-balance"))
    assert out.start[1] > 0 and out.finish_s[0] <= out.start[1] * view.slot_s + 1e-9
    assert out.w[0].sum() == 4 and out.w[1].sum() == 2


def test_finished_jobs_leave_the_state_policies_see():
    from mlsched_opt.problems.harmony.baselines import LoadBalance

    view = view_of(instance([("ctc", "allreduce", 2, 0, 0), ("vgg16", "ps", 1, 1, 40)], slots=41), {})
    others = []

    class Spy(LoadBalance):
        def choose(self, env, j, role, mask):
            others.append(int((env.w + env.p).sum() - env.w[j].sum() - env.p[j].sum()))
            return super().choose(env, j, role, mask)

    out = simulate(view, Spy())
    assert out.finish_s[0] < 40 * view.slot_s
    assert others[-1] == 0 and out.w[0].sum() == 2   # the decision keeps the finished job's placement


def test_jobs_arriving_later_start_no_earlier_than_their_interval():
    view = view_of(instance([("ctc", "allreduce", 1, 0, 0), ("vgg16", "ps", 1, 1, 3)], slots=4), {})
    out = simulate(view, make_heuristic("packing"))
    assert out.start.tolist() == [0, 3]


@pytest.mark.parametrize("method", ["load-balance", "least-interference", "random", "myopic"])
def test_online_placements_pass_the_checker(method):
    inst = generated(5, 25, 4)
    sol = FAMILY.run(inst, method, SolveOptions(seed=3))
    check = check_solution(inst, sol)
    assert check.feasible, check.violations
    assert check.objective == pytest.approx(sol.report.objective, rel=1e-6)


def _decision(inst, method="load-balance"):
    return json.loads(json.dumps(FAMILY.run(inst, method, SolveOptions()).decision))


def _check(inst, decision):
    from mlsched_opt.checking.core import CheckResult

    result = CheckResult()
    harmony_check(inst, decision, {"world": "default"}, result)
    return result


def test_checker_catches_capacity_gang_arrival_and_unknown_servers():
    inst = instance([("ctc", "allreduce", 2, 0), ("vgg16", "ps", 2, 1), ("seq2seq", "ps", 1, 1, 1)], servers=2, slots=2)
    good = _decision(inst)
    assert _check(inst, good).feasible
    over = json.loads(json.dumps(good))
    over["placement"]["j1"]["workers"] = {"s/0": 2}
    over["placement"]["j0"]["workers"] = {"s/0": 2}
    over["start"]["j0"] = over["start"]["j1"] = 0
    assert any(v.rule == "capacity" for v in _check(inst, over).violations)
    partial = json.loads(json.dumps(good))
    partial["placement"]["j1"]["ps"] = {}
    assert [v.rule for v in _check(inst, partial).violations] == ["gang"]
    early = json.loads(json.dumps(good))
    early["start"]["j2"] = 0
    assert "arrival" in [v.rule for v in _check(inst, early).violations]
    bad = json.loads(json.dumps(good))
    bad["placement"]["j0"]["workers"] = {"nowhere": 2}
    assert "unknown-server" in [v.rule for v in _check(inst, bad).violations]
    missing = json.loads(json.dumps(good))
    del missing["placement"]["j2"]
    assert "missing" in [v.rule for v in _check(inst, missing).violations]


def test_checker_recomputes_a_delayed_start_objective():
    inst = instance([("ctc", "allreduce", 1, 0)])
    decision = _decision(inst)
    base = _check(inst, decision).objective
    decision["start"]["j0"] = 2
    assert _check(inst, decision).objective == pytest.approx(base + 2)


# --- generator, instances, Gavel world ---------------------------------------------------------------

def test_generator_is_deterministic_and_static_batches_fit_at_once():
    catalog = load_catalog()
    spec = GenerateSpec(jobs=8, servers=4, seed=11, options=FAMILY.parse_generate_options({"static": "true"}))
    a, b = generate(spec, catalog), generate(spec, catalog)
    assert a == b
    view = view_of(from_document(a, catalog=catalog), {})
    assert view.static
    used = view.jobs.W @ view.worker_demand + view.jobs.P @ view.ps_demand
    assert np.all(used <= view.capacity.sum(axis=0))


@pytest.mark.parametrize("name", ["harmony-toy.toml", "harmony-40jobs.toml"])
def test_shipped_instances_are_what_their_command_generates(name, tmp_path):
    from mlsched_opt.io import read_document

    doc = read_document(ROOT / "instances" / name)
    args = doc["source"].split()[1:]
    out = tmp_path / "again.toml"
    with pytest.raises(SystemExit) as exc:
        main([*args, "-o", str(out)])
    assert exc.value.code == 0
    assert read_document(out) == doc


def test_gavel_world_fit_is_close_and_consistent_with_the_simulator():
    from mlsched_opt.problems.harmony.gavel_fit import fitted_world

    fit = fitted_world(load_catalog())
    assert fit.pairs >= 40 and fit.rmse < 0.08
    w = fit.world
    a, b = w.index("resnet50"), w.index("transformer")
    alone = speeds(w, Jobs.of([a], [False], [1], [0]), np.ones((1, 1), int), np.zeros((1, 1), int))[0]
    pair = speeds(w, Jobs.of([a, b], [False, False], [1, 1], [0, 0]), np.ones((2, 1), int), np.zeros((2, 1), int))[0]
    assert pair / alone == pytest.approx(fit.fitted[a, b], rel=1e-9)


def test_hard_world_is_harder(world):
    hard = make_world("hard")
    assert hard.kappa == 2 and np.allclose(hard.s, world.s * 1.5)
    assert pair_table(hard).max() > pair_table(world).max()


# --- CLI and user errors -----------------------------------------------------------------------------

def run_cli(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_cli_generate_solve_check(tmp_path, capsys):
    inst = tmp_path / "h.toml"
    assert run_cli(["generate", "--problem", "harmony", "--jobs", "3", "--servers", "3", "--seed", "4", "--set", "static=true",
                    "-o", str(inst)], capsys)[0] == 0
    sol = tmp_path / "h.sol.json"
    code, out, _ = run_cli(["solve", str(inst), "--method", "exact", "--out", str(sol)], capsys)
    assert code == 0 and "optimal" in out and "check: ok" in out
    assert run_cli(["check", str(inst), str(sol)], capsys)[0] == 0
    code, out, _ = run_cli(["compare", str(inst), "--methods", "exact,surrogate,tetris", "--solvers", "cpsat"], capsys)
    assert code == 0 and "lp-relaxation" not in out


@pytest.mark.parametrize("change, field", [
    (lambda d: d["jobs"][0].update(model="bert"), "jobs[0].model"),
    (lambda d: d["jobs"][0].update(workers={"min": 1, "max": 3}), "jobs[0].workers"),
    (lambda d: d["jobs"][0].pop("work"), "jobs[0].work"),
    (lambda d: d["jobs"][0].update(workers={"count": 9}), "jobs[0].workers"),
])
def test_user_errors_name_the_field_and_exit_2(tmp_path, capsys, change, field):
    from mlsched_opt.io import read_document, write_document

    doc = read_document(ROOT / "instances" / "harmony-toy.toml")
    change(doc)
    path = tmp_path / "bad.toml"
    write_document(doc, path)
    code, _, err = run_cli(["solve", str(path), "--method", "tetris"], capsys)
    assert code == 2 and field in err and "Traceback" not in err


def test_exact_on_an_online_trace_is_a_clear_error(capsys):
    code, _, err = run_cli(["solve", str(ROOT / "instances" / "harmony-40jobs.toml"), "--method", "exact"], capsys)
    assert code == 2 and "static batch" in err and "myopic" in err


# --- the learned policy (rl extra) ---------------------------------------------------------------------

TINY = {"jobs_min": "8", "jobs_max": "10", "servers": "3", "warmup": "1", "validation": "1", "reward_traces": "1",
        "eval_every": "2", "updates": "2"}


@needs_torch
def test_same_seed_same_policy_and_same_decisions(tmp_path, capsys):
    import torch

    paths = [tmp_path / f"p{k}.pt" for k in range(2)]
    for path in paths:
        code, _, err = run_cli(["train", "--problem", "harmony", "--episodes", "2", "--seed", "5", "-o", str(path),
                                *[f"--set={k}={v}" for k, v in TINY.items()]], capsys)
        assert code == 0, err
    a, b = (torch.load(p, weights_only=False) for p in paths)
    assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
    assert a["meta"]["curve"] == b["meta"]["curve"]
    inst = str(ROOT / "instances" / "harmony-40jobs.toml")
    outs = [run_cli(["solve", inst, "--method", "drl", "--model", str(p), "--json"], capsys)[1] for p in paths]
    assert json.loads(outs[0])["objective"] == json.loads(outs[1])["objective"]
    assert json.loads(outs[0])["check"]["feasible"]


@needs_torch
def test_shipped_policy_loads_solves_and_passes_the_checker():
    inst = generated(9, 30, 6)
    sol = FAMILY.run(inst, "drl", SolveOptions())
    check = check_solution(inst, sol)
    assert check.feasible and check.objective == pytest.approx(sol.report.objective, rel=1e-6)


@needs_torch
def test_policy_trained_on_other_types_is_refused(tmp_path, capsys):
    code, _, err = run_cli(["solve", str(ROOT / "instances" / "harmony-toy.toml"), "--method", "drl", "--set", "world=gavel"], capsys)
    assert code == 2 and "model" in err   # the toy's types are not Gavel's: the instance is refused first
    code, _, err = run_cli(["solve", str(ROOT / "instances" / "harmony-toy.toml"), "--method", "drl",
                            "--model", str(tmp_path / "none.pt")], capsys)
    assert code == 2 and "--model" in err


@needs_torch
def test_reward_model_fits_heldout_heuristic_speeds_within_8_percent():
    from mlsched_opt.problems.harmony.train import fit_reward_model, make_trace

    views = [make_trace(3_000_500 + k, 30, 6, "default", 0.8) for k in range(2)]
    _, stats = fit_reward_model(views, len(views[0].world.types), seed=0, epochs=15)
    assert stats["mape_vs_measured"] < 0.08


def test_drl_without_torch_is_a_clear_error(monkeypatch, capsys):
    from mlsched_opt.problems.harmony import policy

    monkeypatch.setattr(policy, "torch", None)
    code, _, err = run_cli(["solve", str(ROOT / "instances" / "harmony-toy.toml"), "--method", "drl"], capsys)
    assert code == 2 and "pip install" in err and "--method" in err
    code, _, err = run_cli(["train", "--problem", "harmony", "--episodes", "1", "-o", "never.pt"], capsys)
    assert code == 2 and "pip install" in err and not Path("never.pt").exists()


def test_train_refuses_a_family_without_a_learned_method_and_bad_options(capsys):
    code, _, err = run_cli(["train", "--problem", "packing", "--episodes", "1", "-o", "x.pt"], capsys)
    assert code == 2 and "no learned method" in err
    code, _, err = run_cli(["train", "--problem", "harmony", "--episodes", "1", "-o", "x.pt", "--set", "reward=oracle"], capsys)
    assert code == 2 and "reward" in err


def test_compare_skips_drl_when_torch_is_absent(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    code, out, err = run_cli(["compare", str(ROOT / "instances" / "harmony-toy.toml"), "--solvers", "highs"], capsys)
    assert code == 0 and "skipping drl" in err and "\ndrl" not in out and "standalone" in out
