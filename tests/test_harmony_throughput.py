"""Issue 32 for harmony: the throughput LP bound, the queue order, marginal and the anytime exact method.

The bound is tested where the optimum is known (the exhaustive ``exact`` on small static batches,
itself tested against an enumeration of the checker in ``test_oracle_harmony.py``), against every
checked answer on online traces, and piece by piece: the per-server throughput inequality it rests
on against the world's own speeds, and its Lagrangian's validity for any multipliers (not only the
LP's), so that a wrong LP cannot make it wrong.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import REGISTRY, GenerateSpec, check_solution
from mlsched_opt.problems.harmony.baselines import Standalone
from mlsched_opt.problems.harmony.bound import configurations, fluid, lagrangian, step_floor, throughput_bound
from mlsched_opt.problems.harmony.generate import generate
from mlsched_opt.problems.harmony.marginal import Marginal
from mlsched_opt.problems.harmony.placements import job_options, standalone_profile
from mlsched_opt.problems.harmony.simulate import simulate
from mlsched_opt.problems.harmony.view import make_world, view_of
from mlsched_opt.problems.harmony.world import Jobs, speeds
from mlsched_opt.solvers import SolveOptions

FAMILY = REGISTRY["harmony"]
QUICK = SolveOptions(time_limit=60, threads=1)


def generated(seed: int, jobs: int, servers: int, **options):
    catalog = load_catalog()
    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed, options=FAMILY.parse_generate_options(options))
    return from_document(generate(spec, catalog), catalog=catalog)


def crowded(seed: int, jobs: int, servers: int, gpus: int = 2):
    """A static batch that does not fit at once (the generator's static batches always do): one-
    and two-worker jobs of random types, 1-4 intervals alone, on ``servers`` servers of ``gpus`` GPUs."""
    rng = np.random.default_rng(seed)
    types = make_world("default").types
    doc = {"format": "mlsched-instance/1", "problem": "harmony", "time": {"slots": 1, "slot_s": 300},
           "cluster": {"servers": [{"name": "s", "count": servers, "capacity": {"cpu": 8, "gpu": gpus, "memory_gb": 48}}]},
           "jobs": []}
    for k in range(jobs):
        ps = bool(rng.random() < 0.5)
        workers = int(rng.integers(1, min(2, gpus * servers) + 1))
        job = {"id": f"j{k}", "model": str(rng.choice(types)), "architecture": "ps" if ps else "allreduce",
               "workers": {"count": workers}, "work": {"epochs": 1, "samples_per_epoch": int(rng.integers(3000, 20000))},
               "demand": {"worker": {"cpu": 2, "gpu": 1, "memory_gb": 4}}, "arrival_slot": 0}
        if ps:
            job["ps"] = {"count": 1}
            job["demand"]["ps"] = {"cpu": 2, "memory_gb": 4}
        doc["jobs"].append(job)
    return from_document(doc)


def bound_of(inst, world: str = "default") -> float:
    report = throughput_bound(inst, FAMILY.resolve_options(inst, {"world": world}), QUICK)
    assert report.status == "optimal"
    return float(report.bound)


def standalone_of(inst, world: str = "default") -> float:
    view = view_of(inst, {"world": world})
    return float(standalone_profile(view)[1].mean())


# --- the pieces of the proof -------------------------------------------------------------------------

@pytest.mark.parametrize("world_name", ["default", "hard", "gavel"])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_a_servers_throughput_never_exceeds_its_configurations(world_name, data):
    """Claims 1 and 3 of the bound: on one server, the jobs of type l with workers there satisfy
    sum w_jm rho_j / T*_j <= theta_l(workers' types), whatever else runs (PSs, other servers), and rho_j <= 1."""
    world = make_world(world_name)
    L = len(world.types)
    n = data.draw(st.integers(1, 5))
    kinds = data.draw(st.lists(st.integers(0, L - 1), min_size=n, max_size=n))
    is_ps = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    W = data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    P = [data.draw(st.integers(1, 2)) if ps else 0 for ps in is_ps]
    M = 3
    w = np.zeros((n, M), int)
    p = np.zeros((n, M), int)
    for j in range(n):
        w[j, 0] = 1   # every job has a worker on server 0, the server under test
        for _ in range(W[j] - 1):
            w[j, data.draw(st.integers(0, M - 1))] += 1
        for _ in range(P[j]):
            p[j, data.draw(st.integers(0, M - 1))] += 1
    jobs = Jobs.of(kinds, is_ps, W, P)
    v = speeds(world, jobs, w, p)
    # T*: the best placement alone, over every count vector on M empty servers
    cap = np.array([8.0, 8.0, 1e9])
    wd, pd = np.array([1.0, 1.0, 1.0]), np.array([0.0, 1.0, 1.0])
    T_star = np.empty(n)
    for j in range(n):
        ow, op = job_options(W[j], P[j], M, cap, wd, pd)
        best = speeds(world, jobs.take([j]), ow[:, None, :], op[:, None, :])[:, 0].max()
        T_star[j] = W[j] * world.batch[kinds[j]] / best
    kinds_ = np.array(kinds)
    types = np.unique(kinds_)
    counts = np.array([[w[kinds_ == t, 0].sum() for t in types]], float)
    theta = counts / step_floor(world, types, counts)
    T = jobs.W * world.batch[jobs.kind] / v
    rho = T_star / T
    for i, t in enumerate(types):
        mine = kinds_ == t
        assert (w[mine, 0] * rho[mine] / T_star[mine]).sum() <= theta[0, i] * (1 + 1e-12)
    assert np.all(rho <= 1 + 1e-12)


def test_the_lagrangian_at_zero_prices_is_the_standalone_bound():
    inst = generated(4, 12, 3)
    view = view_of(inst, {"world": "default"})
    f = fluid(view, float("inf"))
    value = lagrangian(f, np.zeros((f.B, f.theta.shape[1])), np.zeros((f.B, len(f.R)))) / view.J
    assert value == pytest.approx(standalone_of(inst), rel=1e-9)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), scale=st.floats(0.0, 50.0), resources=st.floats(0.0, 5.0))
def test_the_lagrangian_bounds_every_checked_answer_at_any_prices(seed, scale, resources):
    """Weak duality needs no optimal prices: any multipliers >= 0 give a bound below every answer."""
    inst = generated(seed % 50, 10, 2, load=1.5)
    view = view_of(inst, {"world": "default"})
    f = fluid(view, float("inf"))
    rng = np.random.default_rng(seed)
    lam = scale * rng.random((f.B, f.theta.shape[1]))
    mu = resources * rng.random((f.B, len(f.R)))
    value = lagrangian(f, lam, mu) / view.J
    for method in ("standalone", "least-interference", "marginal"):
        sol = FAMILY.run(inst, method, QUICK, {})
        assert check_solution(inst, sol).feasible
        assert value <= sol.report.objective * (1 + 1e-9), method


def test_the_configurations_cover_every_multiset_and_fall_back_when_too_many():
    world = make_world("default")
    types = np.arange(3)
    theta, exhaustive, cap = configurations(world, types, 4)
    assert exhaustive and len(theta) == 34   # multisets of 1..4 workers of 3 types: C(4 + 3, 3) - 1
    _, exhaustive, _ = configurations(world, types, 10**6)
    assert not exhaustive
    # the fallback (n_max workers of the best type, each at its speed alone) bounds every configuration at any prices
    full, _, cap = configurations(world, types, 6)
    for lam in np.random.default_rng(0).random((5, 3)):
        assert (full @ lam).max() <= (cap * lam).max() * (1 + 1e-12)


def test_workers_that_need_no_resource_get_no_throughput_prices():
    # nothing limits the workers of a server, so nothing bounds its throughput: the bound must not price it
    inst = generated(2, 12, 1, load=2.0)
    doc = inst.document
    for job in doc["jobs"]:
        job["demand"]["worker"] = {"cpu": 0, "gpu": 0, "memory_gb": 0}
    free = from_document(doc)
    view = view_of(free, {"world": "default"})
    f = fluid(view, float("inf"))
    assert not f.exhaustive and np.isinf(f.theta_cap).all()
    lam = np.ones((f.B, f.theta.shape[1]))
    assert lagrangian(f, lam, np.zeros((f.B, len(f.R)))) == pytest.approx(lagrangian(f, 0 * lam, np.zeros((f.B, len(f.R)))))
    bound = bound_of(free)
    sol = FAMILY.run(free, "standalone", QUICK, {})
    assert check_solution(free, sol).feasible and standalone_of(free) * (1 - 1e-8) <= bound <= sol.report.objective


# --- the bound against optima and answers -----------------------------------------------------------

@pytest.mark.parametrize("world_name", ["default", "hard"])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), jobs=st.sampled_from([2, 3, 4]), servers=st.sampled_from([1, 2]),
       crowd=st.booleans())
def test_the_bound_is_never_above_the_exhaustive_optimum(world_name, seed, jobs, servers, crowd):
    inst = (crowded(seed, jobs, servers, gpus=1) if crowd else
            generated(seed, jobs, servers + 1, static=True, max_intervals=6.0, min_intervals=1.0))
    exact = FAMILY.run(inst, "exact", QUICK, {"world": world_name}).report
    assert exact.status == "optimal"
    bound = bound_of(inst, world_name)
    assert standalone_of(inst, world_name) * (1 - 1e-8) <= bound <= exact.objective * (1 + 1e-9)


def test_the_bound_sees_the_queue_where_the_standalone_bound_does_not():
    # four jobs at once on one server with one GPU: they run one after another
    inst = crowded(3, 4, 1, gpus=1)
    exact = FAMILY.run(inst, "exact", QUICK, {}).report
    assert exact.status == "optimal"
    bound, alone = bound_of(inst), standalone_of(inst)
    assert bound <= exact.objective * (1 + 1e-9)
    assert bound >= alone * 1.3, (bound, alone, exact.objective)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), servers=st.sampled_from([1, 2, 3]), load=st.sampled_from([0.8, 1.5, 2.0]),
       world=st.sampled_from(["default", "hard"]))
def test_the_bound_is_below_every_checked_online_answer(seed, servers, load, world):
    inst = generated(seed, 14, servers, load=load)
    bound = bound_of(inst, world)
    for method in ("standalone", "least-interference-defer", "marginal"):
        sol = FAMILY.run(inst, method, QUICK, {"world": world, "order": "sjf"})
        check = check_solution(inst, sol, {"world": world})
        assert check.feasible and bound <= check.objective * (1 + 1e-9), method


# --- the queue order and the simulator's quiet intervals ----------------------------------------------

def _two_jobs_one_gpu():
    doc = {"format": "mlsched-instance/1", "problem": "harmony", "time": {"slots": 1, "slot_s": 300},
           "cluster": {"servers": [{"name": "s", "count": 1, "capacity": {"cpu": 8, "gpu": 1, "memory_gb": 48}}]},
           "jobs": [{"id": name, "model": "resnet50", "architecture": "allreduce", "workers": {"count": 1},
                     "work": {"epochs": 1, "samples_per_epoch": n}, "demand": {"worker": {"cpu": 2, "gpu": 1, "memory_gb": 4}},
                     "arrival_slot": 0} for name, n in (("long", 200000), ("short", 20000))]}
    return from_document(doc)


def test_shortest_first_starts_the_short_job_first_and_fifo_keeps_the_arrival_order():
    inst = _two_jobs_one_gpu()
    fifo = FAMILY.run(inst, "standalone", QUICK, {})
    sjf = FAMILY.run(inst, "standalone", QUICK, {"order": "sjf"})
    assert fifo.decision["start"]["long"] == 0 and fifo.decision["start"]["short"] > 0
    assert sjf.decision["start"]["short"] == 0 and sjf.decision["start"]["long"] > 0
    assert sjf.report.objective < fifo.report.objective
    assert check_solution(inst, sjf).feasible


@pytest.mark.parametrize("seed", [1, 2])
def test_skipping_quiet_intervals_changes_no_decision(seed):
    inst = generated(seed, 25, 2, load=1.5)
    view = view_of(inst, {"world": "default"})
    d = standalone_profile(view)[1]
    for make in (lambda: Marginal(view), Standalone):
        for priority in (None, d):
            slow = simulate(view, make(), defer_max=10**12, priority=priority)
            fast = simulate(view, make(), defer_max=10**12, priority=priority, skip_quiet=True)
            assert np.array_equal(slow.start, fast.start) and np.array_equal(slow.w, fast.w) and np.array_equal(slow.p, fast.p)


def test_an_unknown_order_is_refused_by_name(run, tmp_path):
    code, _, err = run("solve", tmp_path / "none.toml", "--problem", "harmony", "--method", "standalone", "--set", "order=lifo")
    assert code == 2 and "order" in err


# --- marginal ------------------------------------------------------------------------------------------

def test_marginal_is_deterministic_and_checked():
    inst = generated(9, 30, 3, load=1.5)
    one = FAMILY.run(inst, "marginal", QUICK, {})
    two = FAMILY.run(inst, "marginal", QUICK, {})
    assert one.decision == two.decision
    assert check_solution(inst, one).feasible


def test_marginal_holds_fewer_jobs_back_with_a_higher_threshold():
    inst = generated(9, 30, 3, load=1.5)

    def held(hold: float) -> int:
        message = FAMILY.run(inst, "marginal", QUICK, {"hold": hold, "hold_share": 0.0}).report.message
        return int(message.split(" times a queued job was held back")[0].rsplit(" ", 1)[1]) if "held back" in message else 0

    assert held(0.0) > held(6.0) >= held(1e9)


# --- exact, anytime --------------------------------------------------------------------------------------

def test_exact_answers_an_online_trace_with_a_proven_bound():
    # the exhaustive search refuses online traces (it needs a static batch); exact used to exit 2 here
    inst = generated(5, 30, 3, load=1.5)
    sol = FAMILY.run(inst, "exact", SolveOptions(time_limit=60, threads=1), {})
    rep = sol.report
    assert rep.status == "feasible" and rep.bound is not None and rep.bound <= rep.objective
    assert "anytime search" in rep.message
    check = check_solution(inst, sol)
    assert check.feasible and check.objective == pytest.approx(rep.objective, rel=1e-9)
    best = min(FAMILY.run(inst, m, QUICK, {}).report.objective for m in ("standalone", "marginal"))
    assert rep.objective <= best * (1 + 1e-12)


def test_exact_keeps_its_exhaustive_optimum_on_a_static_batch():
    inst = generated(3, 3, 2, static=True)
    rep = FAMILY.run(inst, "exact", QUICK, {}).report
    assert rep.status == "optimal" and rep.bound == rep.objective
