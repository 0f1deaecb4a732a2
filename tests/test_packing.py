"""The packing family end to end: two solvers agree, FFD meets its guarantees, the checker catches cheats."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mlsched_opt.io import from_document, load_instance
from mlsched_opt.problems import GenerateSpec, check_solution, get_family
from mlsched_opt.report import approximation_ratio
from mlsched_opt.solvers import SolveOptions

from .conftest import DEMO

FAMILY = get_family("packing")
EXACT = SolveOptions(gap=0.0, time_limit=30)


def _solve(inst, method, objective, solver="highs"):
    sol = FAMILY.run(inst, method, SolveOptions(solver=solver, gap=0.0, time_limit=30), {"objective": objective})
    if sol.decision is not None:
        check = check_solution(inst, sol, options={"objective": objective})
        assert check.feasible, [str(v) for v in check.violations]
    return sol


@pytest.mark.parametrize("seed", range(20))
def test_highs_and_cpsat_prove_the_same_optimum(seed, catalog):
    objective = "weight" if seed % 2 == 0 else "servers"
    jobs = 9 if objective == "weight" else 5
    inst = from_document(FAMILY.generate(GenerateSpec(jobs=jobs, servers=4, seed=seed), catalog), catalog=catalog)
    a, b = _solve(inst, "exact", objective, "highs"), _solve(inst, "exact", objective, "cpsat")
    assert a.report.status == b.report.status
    assert a.report.status in ("optimal", "infeasible")
    if a.report.status == "optimal":
        assert a.report.objective == pytest.approx(b.report.objective)
        assert a.report.bound == pytest.approx(a.report.objective)


def test_demo_instance_numbers():
    inst = load_instance(DEMO)
    exact, ffd = _solve(inst, "exact", "weight"), _solve(inst, "ffd", "weight")
    assert exact.report.status == "optimal" and exact.report.objective == 42
    assert ffd.report.objective == 36  # FFD leaves 6 weight on the table here
    lp = FAMILY.lp_bound(inst, {"objective": "weight"}, EXACT)
    assert lp.objective == pytest.approx(43)
    servers = _solve(inst, "exact", "servers")
    assert servers.report.status == "infeasible"
    assert "gpu 29 > 20" in servers.report.message


def _one_dim(sizes, servers, capacity, weights=None):
    jobs = [{"id": f"j{i}", "architecture": "allreduce", "workers": {"count": 1},
             "demand": {"worker": {"cpu": int(s)}}, "weight": int(weights[i]) if weights is not None else 1}
            for i, s in enumerate(sizes)]
    return from_document({"format": "mlsched-instance/1", "jobs": jobs,
                          "cluster": {"servers": [{"name": "s", "count": servers, "capacity": {"cpu": capacity}}]}})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(5, 60), min_size=3, max_size=12))
def test_ffd_bin_packing_guarantee(sizes):
    """1-D bin packing on identical servers: FFD <= 11/9 OPT + 6/9 (Dósa 2007), OPT proven."""
    inst = _one_dim(sizes, servers=len(sizes), capacity=100)
    opt = _solve(inst, "exact", "servers")
    ffd = _solve(inst, "ffd", "servers")
    assert opt.report.status == "optimal" and ffd.report.status == "feasible"
    assert ffd.report.objective <= 11 / 9 * opt.report.objective + 6 / 9 + 1e-9
    assert ffd.report.objective >= opt.report.objective


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(1, 60), st.integers(1, 50)), min_size=2, max_size=12))
def test_ffd_knapsack_guarantee(items):
    """0-1 knapsack (one server, one resource): FFD's answer is at least OPT / 2, OPT proven."""
    sizes, weights = zip(*items)
    inst = _one_dim(sizes, servers=1, capacity=100, weights=weights)
    opt = _solve(inst, "exact", "weight")
    ffd = _solve(inst, "ffd", "weight")
    assert opt.report.status == "optimal"
    assert approximation_ratio(ffd.report.objective, opt.report.objective, "max") <= 2 + 1e-9


def test_knapsack_fix_matters():
    """Density greedy alone takes the small dense item and misses the big one; the single-item fix saves it."""
    inst = _one_dim([1, 100], servers=1, capacity=100, weights=[2, 50])
    assert _solve(inst, "ffd", "weight").report.objective == 50


def _tampered(sol, edit):
    bad = copy.deepcopy(sol)
    edit(bad)
    return bad


def test_checker_catches_every_kind_of_cheat():
    inst = load_instance(DEMO)
    sol = _solve(inst, "exact", "weight")
    placed = sol.decision["placement"]
    job = next(j for j in sol.decision["admitted"] if placed[j]["workers"])
    server = next(iter(placed[job]["workers"]))

    def over(s):  # every admitted job's workers on one server
        for j in s.decision["admitted"]:
            placed_w = s.decision["placement"][j]["workers"]
            n = sum(placed_w.values())
            s.decision["placement"][j]["workers"] = {server: n}

    cases = {
        "capacity": over,
        "task-count": lambda s: s.decision["placement"][job]["workers"].__setitem__(server, placed[job]["workers"][server] + 1),
        "unknown-server": lambda s: s.decision["placement"][job]["workers"].__setitem__("nowhere", 1),
        "eligibility": lambda s: s.decision["placement"][job]["workers"].__setitem__("ps-host", 1),
        "domain": lambda s: s.decision["placement"][job]["workers"].__setitem__(server, -1),
        "unknown-job": lambda s: s.decision["admitted"].append("ghost"),
        "objective": lambda s: setattr(s.report, "objective", s.report.objective + 1),
        "placement": lambda s: s.decision["admitted"].remove(job),
        "instance": lambda s: setattr(s, "instance_sha256", "0" * 64),
    }
    for rule, edit in cases.items():
        result = check_solution(inst, _tampered(sol, edit))
        assert not result.feasible, rule
        assert rule in {v.rule for v in result.violations}, (rule, [str(v) for v in result.violations])


def test_bert_only_on_v100():
    """gpu_models restricts where workers go, in the model and in the checker."""
    inst = load_instance(DEMO)
    sol = _solve(inst, "exact", "weight")
    if "bert-squad" in sol.decision["admitted"]:
        assert all(s.startswith("v100") for s in sol.decision["placement"]["bert-squad"]["workers"])


# --- the checker never crashes on a JSON value (defect class: junk decisions) ---------------------

from mlsched_opt.checking.core import CheckResult  # noqa: E402

_DEMO_INST = load_instance(DEMO)
_JOBS = [j.id for j in _DEMO_INST.jobs] + ["ghost"]
_SERVERS = [s.name for s in _DEMO_INST.servers][:4] + ["nowhere"]
_SCALARS = (st.none() | st.booleans() | st.integers(-2**80, 2**80) | st.sampled_from([2**70, -1, 0, 1, 2, 10**400])
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6))
JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=8)
_COUNTS = st.dictionaries(st.sampled_from(_SERVERS), st.integers(-3, 6) | JSON, max_size=3) | JSON
PACKING_DECISION = JSON | st.fixed_dictionaries({
    "admitted": st.lists(st.sampled_from(_JOBS) | JSON, max_size=5) | JSON,
    "placement": st.dictionaries(st.sampled_from(_JOBS), st.fixed_dictionaries({"workers": _COUNTS, "ps": _COUNTS}) | JSON,
                                 max_size=5) | JSON,
    "schedule": JSON,
})


@pytest.mark.parametrize("objective", ["weight", "servers"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(decision=PACKING_DECISION)
def test_checker_names_a_rule_for_any_json_decision(objective, decision):
    result = CheckResult()
    FAMILY.check(_DEMO_INST, decision, FAMILY.parse_options({"objective": objective}), result)  # must not raise
    assert all(isinstance(v.rule, str) and v.rule for v in result.violations)
    assert result.objective is None or result.objective == result.objective


# --- options and input-driven loops (defect class: unbounded options and counts) -----------------

def test_objective_is_a_problem_option_and_the_generator_has_none():
    # (every option's domain is the contract's: tests/test_contract.py)
    opts = {o.name: o for o in FAMILY.options}
    assert opts["objective"].problem and opts["objective"].choices == ("weight", "servers")
    assert not FAMILY.generate_options


@pytest.mark.parametrize("count", [10**6, 10**12, 2**53])
def test_ffd_work_does_not_grow_with_the_task_count(count, monkeypatch):
    """First fit places identical tasks a server at a time: a huge count is refused at once, not looped over
    (even when the loader's task limit is raised, as a user may)."""
    from mlsched_opt.io import read_document
    monkeypatch.setenv("MLSCHED_LIMITS", f"tasks={2**53}")
    doc = read_document(DEMO)
    doc["jobs"][0]["workers"] = {"count": count}
    inst = from_document(doc)
    sol = FAMILY.run(inst, "ffd", SolveOptions(time_limit=30))
    assert doc["jobs"][0]["id"] not in sol.decision["admitted"]
    assert check_solution(inst, sol).feasible
    assert FAMILY.run(inst, "ffd", SolveOptions(time_limit=30), {"objective": "servers"}).decision is None


def test_bulk_first_fit_equals_task_by_task_first_fit(catalog):
    """The server-at-a-time placement is the task-by-task first fit it replaces (same placement on generated instances)."""
    import numpy as np

    from mlsched_opt.problems.packing.methods import _place_job
    from mlsched_opt.problems.packing.view import packing_view
    for seed in range(15):
        inst = from_document(FAMILY.generate(GenerateSpec(jobs=8, servers=3, seed=seed), catalog), catalog=catalog)
        view = packing_view(inst)
        bulk, slow = view.capacity.copy(), view.capacity.copy()
        names = [s.name for s in inst.servers]
        for j in range(len(view.jobs)):
            got = _place_job(view, j, bulk, [s.name for s in view.instance.servers])
            trial, want = slow.copy(), {"workers": {}, "ps": {}}
            for task, key in (("worker", "workers"), ("ps", "ps")):
                d = view.demand[task][j]
                for _ in range(int(view.count(task)[j])):
                    fits = view.eligible[task][j] & np.all(trial >= d - 1e-9, axis=1)
                    if not fits.any():
                        want = None
                        break
                    s = int(np.argmax(fits))
                    trial[s] -= d
                    want[key][names[s]] = want[key].get(names[s], 0) + 1
                if want is None:
                    break
            assert got == want, (seed, j)
            if want is not None:
                slow = trial
            assert np.allclose(bulk, slow)
