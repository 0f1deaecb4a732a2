"""The harmony checker at scale: its event-driven replay against a straightforward reference.

The reference below is the checker as it was before issue 18 (dense (jobs x servers) counts, every
running job's speed recomputed at every event, every server checked at every start interval:
O(J^2 M) and more); it is kept here, unchanged, as the definition the fast replay must agree
with.  Random small schedules (random spreads, some over capacity, random start intervals) are
judged by both: the same violations in the same order and the same objective.
"""

from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest

from mlsched_opt.checking.core import CheckResult
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import REGISTRY, GenerateSpec
from mlsched_opt.problems.harmony.check import check
from mlsched_opt.problems.harmony.generate import generate
from mlsched_opt.problems.harmony.view import HarmonyView, view_of
from mlsched_opt.solvers import SolveOptions
from mlsched_opt.tolerances import CHECK_TOL, DONE_TOL

FAMILY = REGISTRY["harmony"]


def reference(instance, decision: dict, options: dict) -> tuple[list[tuple[str, str, str]], float | None]:
    """Violations and objective of a well-formed decision (every job placed with its exact counts), by the old loops."""
    view = view_of(instance, options, require_fit=False)
    result = CheckResult()
    index = {name: m for m, name in enumerate(view.servers)}
    w = np.zeros((view.J, view.M), int)
    p = np.zeros((view.J, view.M), int)
    start = np.full(view.J, -1)
    for i, job_id in enumerate(view.ids):
        start[i] = decision["start"][job_id]
        if start[i] < view.arrival[i]:
            result.add("arrival", f"start.{job_id}", f"starts in interval {start[i]} before it arrives ({view.arrival[i]})")
        for name, n in decision["placement"][job_id]["workers"].items():
            w[i, index[name]] = n
        for name, n in decision["placement"][job_id]["ps"].items():
            p[i, index[name]] = n
    finish = _replay(view, w, p, start, result)
    objective = None if finish is None else float(np.mean(finish / view.slot_s - view.arrival))
    return [(v.rule, v.where, v.detail) for v in result.violations], objective


def _replay(view: HarmonyView, w: np.ndarray, p: np.ndarray, start: np.ndarray, result: CheckResult) -> np.ndarray | None:
    remaining = view.samples.astype(float).copy()
    finish = np.full(view.J, np.nan)
    running: set[int] = set()
    t = 0.0
    for k in sorted({int(x) for x in start}):
        t = _run_until(view, w, p, running, remaining, finish, t, k * view.slot_s)
        running |= {j for j in range(view.J) if start[j] == k}
        _capacity(view, w, p, running, k, result)
    _run_until(view, w, p, running, remaining, finish, t, math.inf)
    return finish if result.feasible else None


def _run_until(view, w, p, running, remaining, finish, t, end) -> float:
    while running and t < end:
        load = _pressures(view, w, p, running)
        v = {j: _speed(view, j, w, p, running, load) for j in running}
        dt = min(remaining[j] / v[j] for j in running)
        if dt >= end - t:
            dt, t_next = end - t, end
        else:
            t_next = t + dt
        for j in running:
            remaining[j] -= v[j] * dt
        t = t_next
        for j in [j for j in running if remaining[j] <= DONE_TOL * view.samples[j]]:
            running.discard(j)
            finish[j] = t
    return t if running else max(t, end)


def _capacity(view: HarmonyView, w, p, running, k: int, result: CheckResult) -> None:
    for m in range(view.M):
        for r, name in enumerate(view.resources):
            use = sum(w[j, m] * view.worker_demand[j, r] + p[j, m] * view.ps_demand[j, r] for j in running)
            if use > view.capacity[m, r] * (1 + CHECK_TOL) + CHECK_TOL:
                result.add("capacity", f"interval {k}, {view.servers[m]}, {name}", f"uses {use:g} > capacity {view.capacity[m, r]:g}")


def _pressures(view: HarmonyView, w, p, running) -> list[list[float]]:
    """Total intensity per server and contention dimension of the running tasks (computed once per
    event, so a replay costs O(J^2 M), not O(J^3 M))."""
    world = view.world
    load = [[0.0] * 4 for _ in range(view.M)]
    for k in running:
        kind = view.jobs.kind[k]
        for m in range(view.M):
            if w[k, m] or p[k, m]:
                for r in range(4):
                    load[m][r] += w[k, m] * world.u_worker[kind, r] + p[k, m] * world.u_ps[kind, r]
    return load


def _speed(view: HarmonyView, j: int, w, p, running, load: list[list[float]] | None = None) -> float:
    """Samples/s of job ``j`` (spec section 3), one worker host at a time."""
    world = view.world
    kind, W, P, is_ps = int(view.jobs.kind[j]), int(view.jobs.W[j]), int(view.jobs.P[j]), bool(view.jobs.is_ps[j])
    s = world.s[kind]
    if load is None:
        load = _pressures(view, w, p, running)

    def g(x: float) -> float:
        return x + world.kappa * max(0.0, x - 1.0) ** 2

    def pressure(m: int, r: int) -> float:
        return load[m][r]

    def other_net(m: int) -> float:
        own = w[j, m] * world.u_worker[kind, 3] + p[j, m] * world.u_ps[kind, 3]
        return load[m][3] - own

    hosts = [m for m in range(view.M) if w[j, m] > 0]
    worst = 0.0
    for m in hosts:
        o = [pressure(m, r) - world.u_worker[kind, r] for r in range(4)]
        comp = world.t_comp[kind] * (1 + sum(s[r] * g(o[r]) for r in range(3)))
        if is_ps:
            f_rem = (P - p[j, m]) / P
            remote = sum(w[j, h] * (P - p[j, h]) / P for h in range(view.M))
            fan = math.sqrt(max(1.0, remote / P))
            onet = max([other_net(m)] + [other_net(h) for h in range(view.M) if p[j, h] > 0])
        else:
            f_rem = 1.0 if len(hosts) > 1 else 0.0
            fan = 1.0
            onet = max(other_net(h) for h in hosts)
        comm = ((1 - f_rem) * world.t_loc[kind] * (1 + s[2] * g(o[2]))
                + f_rem * world.t_rem[kind] * fan * (1 + s[3] * g(max(onet, 0.0))))
        worst = max(worst, comp + comm)
    return W * world.batch[kind] / worst


# --- random schedules ------------------------------------------------------------------------------


def generated(seed: int, jobs: int, servers: int, slots: int | None = None, **options):
    catalog = load_catalog()
    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed, slots=slots, options=FAMILY.parse_generate_options(options))
    return from_document(generate(spec, catalog), catalog=catalog)


def random_decision(instance, rng: np.random.Generator, crowd: int, delay: int = 4) -> dict:
    """Every job's tasks spread at random over ``crowd`` servers (small: co-location and some
    capacity violations), started at its arrival or up to ``delay - 1`` intervals later."""
    view = view_of(instance, {}, require_fit=False)
    names = [s.name for s in instance.servers][:crowd]
    placement, starts = {}, {}
    for i, job_id in enumerate(view.ids):
        entry = {}
        for key, n in (("workers", int(view.jobs.W[i])), ("ps", int(view.jobs.P[i]))):
            counts: dict[str, int] = {}
            for m in rng.integers(len(names), size=n):
                counts[names[m]] = counts.get(names[m], 0) + 1
            entry[key] = counts
        placement[job_id] = entry
        starts[job_id] = int(view.arrival[i] + rng.integers(0, delay))
    return {"placement": placement, "start": starts}


def method_decision(instance, method: str, seed: int, rng: np.random.Generator) -> dict:
    """A heuristic's schedule (feasible, co-located) with some starts pushed later (often still feasible)."""
    decision = json.loads(json.dumps(FAMILY.run(instance, method, SolveOptions(seed=seed)).decision))
    for job_id in decision["start"]:
        if rng.random() < 0.3:
            decision["start"][job_id] += int(rng.integers(1, 3))
    return decision


def _agree(inst, decision: dict) -> bool:
    want, want_obj = reference(inst, decision, {})
    got = CheckResult()
    check(inst, decision, {}, got)
    assert [(v.rule, v.where, v.detail) for v in got.violations] == want
    assert (got.objective is None) == (want_obj is None)
    if want_obj is not None:
        assert got.objective == pytest.approx(want_obj, rel=1e-9)
    return want_obj is not None


@pytest.mark.parametrize("seed", range(10))
def test_event_driven_replay_agrees_with_the_reference(seed):
    rng = np.random.default_rng(seed)
    inst = generated(seed, jobs=int(rng.integers(2, 10)), servers=int(rng.integers(1, 5)), slots=int(rng.integers(1, 5)))
    feasible = 0
    for trial, method in enumerate(("random", "packing", "least-interference", "random", "", "")):
        # crowded random spreads break capacity (the replay goes on: later checks depend on who
        # finished); the heuristics' schedules run through, so the objectives are compared too
        decision = method_decision(inst, method, trial, rng) if method else random_decision(inst, rng, 1)
        feasible += _agree(inst, decision)
    assert feasible >= 1


@pytest.mark.parametrize("seed", range(4))
def test_replay_agrees_when_jobs_finish_on_interval_boundaries(seed):
    # work of one interval at the standalone speed: finishes land on interval boundaries, where a
    # finishing job frees its servers for the jobs starting there (DONE_TOL decides)
    rng = np.random.default_rng(100 + seed)
    inst = generated(seed, jobs=8, servers=2, slots=3, min_intervals=1.0, max_intervals=1.0)
    for trial, method in enumerate(("packing", "random", "standalone", "")):
        _agree(inst, method_decision(inst, method, trial, rng) if method else random_decision(inst, rng, 2, delay=6))


@pytest.mark.parametrize("late", [1e-11, -1e-11, 1e-6])
def test_a_job_finishing_within_done_tol_of_a_boundary_frees_its_servers(late):
    # job a (2 workers) fills the only server for one interval, job b needs it from interval 1: a
    # finish within DONE_TOL of the boundary frees the server for b; a later one is a capacity break
    from mlsched_opt.problems.harmony.view import make_world
    from mlsched_opt.problems.harmony.world import Jobs, speeds

    world = make_world("default")
    samples = 10 * 20000
    v = speeds(world, Jobs.of([world.index("ctc")], [False], [2], [0]), np.array([[2]]), np.array([[0]]))[0]
    slot = samples / v * (1 - late)
    job = {"model": "ctc", "architecture": "allreduce", "workers": {"count": 2},
           "work": {"epochs": 10, "samples_per_epoch": 20000}, "demand": {"worker": {"cpu": 2, "gpu": 1, "memory_gb": 4}}}
    doc = {"format": "mlsched-instance/1", "problem": "harmony", "time": {"slots": 2, "slot_s": slot},
           "cluster": {"servers": [{"name": "s", "capacity": {"cpu": 8, "gpu": 2, "memory_gb": 48}}]},
           "jobs": [{"id": "a", **job, "arrival_slot": 0}, {"id": "b", **job, "arrival_slot": 1}]}
    inst = from_document(doc)
    decision = {"placement": {"a": {"workers": {"s": 2}, "ps": {}}, "b": {"workers": {"s": 2}, "ps": {}}},
                "start": {"a": 0, "b": 1}}
    assert _agree(inst, decision) == (late < DONE_TOL)


# --- methods at scale: the same numbers faster, anytime answers --------------------------------------

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed: pip install -e '.[rl]'")


@pytest.mark.parametrize("world_name", ["default", "hard", "gavel"])
def test_sparse_speeds_are_bit_for_bit_the_dense_formula(world_name):
    from mlsched_opt.problems.harmony.view import make_world
    from mlsched_opt.problems.harmony.world import Jobs, sparse_speeds, speeds

    world = make_world(world_name)
    for seed in range(60):
        rng = np.random.default_rng(seed)
        J, M = int(rng.integers(1, 30)), int(rng.integers(1, 25))
        is_ps = rng.random(J) < 0.6
        W, P = rng.integers(1, 5, J), np.where(is_ps, rng.integers(1, 3, J), 0)
        jobs = Jobs.of(rng.integers(0, len(world.types), J), is_ps, W, P)
        w, p = np.zeros((J, M), int), np.zeros((J, M), int)
        spread = int(rng.integers(1, M + 1))
        for j in range(J):
            np.add.at(w[j], rng.integers(spread, size=W[j]), 1)
            np.add.at(p[j], rng.integers(spread, size=P[j]), 1)
        idle = rng.random(J) < 0.2     # jobs not running: zero rows
        w[idle], p[idle] = 0, 0
        assert np.array_equal(sparse_speeds(world, jobs, w, p), speeds(world, jobs, w, p))


def _many_servers(servers: int, jobs: list[tuple[str, str, int, int, int]]):
    worker, ps = {"cpu": 2, "gpu": 1, "memory_gb": 4}, {"cpu": 2, "memory_gb": 4}
    doc = {"format": "mlsched-instance/1", "problem": "harmony", "time": {"slots": 4, "slot_s": 300},
           "cluster": {"servers": [{"name": "s", "count": servers, "capacity": {"cpu": 8, "gpu": 2, "memory_gb": 48}}]},
           "jobs": []}
    for i, (model, arch, W, P, arrival) in enumerate(jobs):
        job = {"id": f"j{i}", "model": model, "architecture": arch, "workers": {"count": W},
               "work": {"epochs": 4, "samples_per_epoch": 20000}, "demand": {"worker": worker}, "arrival_slot": arrival}
        if arch == "ps":
            job["ps"] = {"count": P}
            job["demand"]["ps"] = ps
        doc["jobs"].append(job)
    return from_document(doc)


def test_the_standalone_bound_answers_on_a_large_cluster():
    # 4 workers over 300 servers: C(303, 299) count vectors, which the full enumeration refused; a
    # job uses at most W + P = 6 servers, so 6 servers give the same bound
    inst = _many_servers(300, [("vgg16", "ps", 4, 2, 0), ("ctc", "allreduce", 4, 0, 1), ("seq2seq", "ps", 1, 1, 2)])
    report = FAMILY.relaxation(inst, {}, SolveOptions(time_limit=60))
    assert report.status == "optimal" and report.bound > 0
    small = _many_servers(6, [("vgg16", "ps", 4, 2, 0), ("ctc", "allreduce", 4, 0, 1), ("seq2seq", "ps", 1, 1, 2)])
    assert report.bound == pytest.approx(FAMILY.relaxation(small, {}, SolveOptions(time_limit=60)).bound, rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_the_reduced_fit_test_agrees_with_the_full_enumeration(seed):
    from mlsched_opt.problems.harmony.placements import job_options, misfit_reason

    rng = np.random.default_rng(seed)
    caps = [{"cpu": float(rng.integers(2, 9)), "gpu": float(rng.integers(0, 3)), "memory_gb": 48.0} for _ in range(4)]
    doc = {"format": "mlsched-instance/1", "problem": "harmony", "time": {"slots": 1, "slot_s": 300},
           "cluster": {"servers": [{"name": f"c{k}", "count": int(rng.integers(1, 3)), "capacity": c} for k, c in enumerate(caps)]},
           "jobs": []}
    W, P = int(rng.integers(1, 5)), int(rng.integers(1, 3))
    doc["jobs"].append({"id": "j", "model": "vgg16", "architecture": "ps", "workers": {"count": W}, "ps": {"count": P},
                        "work": {"epochs": 1, "samples_per_epoch": 1000}, "arrival_slot": 0,
                        "demand": {"worker": {"cpu": 2, "gpu": 1, "memory_gb": 4}, "ps": {"cpu": 2, "memory_gb": 4}}})
    view = view_of(from_document(doc), {}, require_fit=False)
    full = len(job_options(W, P, view.M, view.capacity, view.worker_demand[0], view.ps_demand[0])[0]) > 0
    assert (misfit_reason(view) is None) == full


def test_myopic_runs_on_a_large_cluster_and_passes_the_checker():
    # 4-worker jobs over 120 servers: the full count vectors (C(123, 119)) were refused; the
    # candidates (occupied servers and a few empty ones) keep the search small
    inst = _many_servers(120, [("vgg16", "ps", 4, 2, 0), ("ctc", "allreduce", 4, 0, 0), ("seq2seq", "ps", 1, 1, 1),
                               ("resnext110", "allreduce", 2, 0, 1)])
    sol = FAMILY.run(inst, "myopic", SolveOptions(time_limit=60))
    assert sol.report.status == "feasible"
    got = CheckResult()
    check(inst, sol.decision, {}, got)
    assert got.feasible and got.objective == pytest.approx(sol.report.objective, rel=1e-9)


def _standalone_decision(inst):
    return json.loads(json.dumps(FAMILY.run(inst, "standalone", SolveOptions()).decision))


@pytest.mark.parametrize("method", ["myopic", pytest.param("drl", marks=needs_torch)])
def test_a_method_cut_short_hands_the_unplaced_jobs_to_standalone_first(method, monkeypatch):
    from mlsched_opt.problems.harmony import runs

    inst = generated(4, 12, 4)
    monkeypatch.setattr(runs, "HANDOVER_SHARE", 0.0)   # the handover at once: no dependence on the clock
    sol = FAMILY.run(inst, method, SolveOptions(time_limit=600))
    assert sol.report.status == "feasible" and "cut short by the time limit" in sol.report.message
    assert json.loads(json.dumps(sol.decision)) == _standalone_decision(inst)
    got = CheckResult()
    check(inst, sol.decision, {}, got)
    assert got.feasible and got.objective == pytest.approx(sol.report.objective, rel=1e-9)


def test_a_handover_never_reached_changes_nothing():
    from mlsched_opt.problems.harmony.baselines import make_heuristic
    from mlsched_opt.problems.harmony.simulate import simulate

    view = view_of(generated(5, 10, 3), {})
    plain = simulate(view, make_heuristic("packing"))
    late = simulate(view, make_heuristic("packing"), fallback=make_heuristic("standalone"), switch_s=1e9, time_limit=1e9)
    assert late.cut_interval is None and late.decision(view) == plain.decision(view)


@needs_torch
def test_drl_runs_on_one_torch_thread_and_restores_the_callers_setting(monkeypatch):
    import torch

    from mlsched_opt.problems.harmony import simulate as sim

    seen = []
    real = sim._place_job
    monkeypatch.setattr(sim, "_place_job", lambda *a, **k: (seen.append(torch.get_num_threads()), real(*a, **k))[1])
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        FAMILY.run(generated(4, 6, 3), "drl", SolveOptions(time_limit=600, threads=4))
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
