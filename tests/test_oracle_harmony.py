"""Oracle for harmony's exact search: enumerate what the checker accepts on tiny static batches.

The enumeration is written here from the decision format alone; it imports neither the family's
exact search, its simulator, its heuristics nor its views.  It uses the generator (to make
instances), ``from_document`` and the family's checker (to accept and score each decision).

Why the enumeration covers every decision the checker could accept (for the optimum):

* placements: for every job, every way to spread exactly W workers and P PSs over the servers
  (the checker's gang rule refuses any other count; zero entries are the same as absent ones, the
  checker drops them).  The servers of these instances are identical (one server class), and the
  checker sees a server only through its capacity and its co-located tasks, so renaming servers
  maps an accepted decision to an accepted decision of the same objective: we keep one placement
  per server permutation.
* starts under ``starts=any``: integers >= 0 (the checker's domain).  (1) Some job starts at 0:
  when every start is >= 1, starting all one interval earlier replays the same trace shifted by one
  interval (same co-runners, same capacity checks) and lowers every JCT by one, so such a decision
  is never optimal.  (2) Every JCT is larger than its job's start (work > 0), so the JCTs sum to
  more than ``sum(starts)``: once ``sum(starts) >= J * best`` no decision beats the best found.
  Start vectors are enumerated by increasing total, so the search stops there.  A finite best
  always appears when every job fits the empty cluster (one job at a time, each starting after
  its predecessor finished, is accepted), and when some job fits nowhere, nothing is accepted.
* starts under ``starts=simultaneous``: every job must start in its arrival interval, 0 here.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mlsched_opt.checking.core import CheckResult
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import REGISTRY, GenerateSpec
from mlsched_opt.problems.harmony.check import check
from mlsched_opt.problems.harmony.generate import generate
from mlsched_opt.solvers import SolveOptions

FAMILY = REGISTRY["harmony"]


def spreads(n: int, servers: list[str]) -> list[dict[str, int]]:
    """Every {server: count} with counts > 0 adding up to ``n``."""
    out = []
    for combo in itertools.combinations_with_replacement(servers, n):
        out.append({s: combo.count(s) for s in servers if combo.count(s)})
    return out


def oracle(inst, doc: dict, starts: str) -> tuple[float | None, dict | None]:
    """The best objective the checker gives any decision (and one such decision), or (None, None)."""
    servers = [s.name for s in inst.servers]
    jobs = [j["id"] for j in doc["jobs"]]
    choices = []
    for job in doc["jobs"]:
        W = job["workers"]["count"]
        P = job.get("ps", {}).get("count", 0)
        choices.append([(w, p) for w in spreads(W, servers) for p in spreads(P, servers)])
    opts = FAMILY.parse_options({"starts": starts})

    def canonical(placement):
        rows = [tuple((c[0].get(s, 0), c[1].get(s, 0)) for c in placement) for s in servers]
        return tuple(sorted(rows))

    placements, seen = [], set()
    for placement in itertools.product(*choices):
        key = canonical(placement)
        if key not in seen:
            seen.add(key)
            placements.append(placement)

    def score(placement, vec):
        decision = {"placement": {j: {"workers": dict(w), "ps": dict(p)} for j, (w, p) in zip(jobs, placement)},
                    "start": dict(zip(jobs, vec))}
        result = CheckResult()
        check(inst, decision, opts, result)
        return (result.objective, decision) if result.feasible else (None, None)

    best, arg = math.inf, None
    J = len(jobs)
    for total in itertools.count():
        if starts == "simultaneous" and total > 0:
            break
        if total >= J * best:
            break
        if not placements:
            break
        for vec in itertools.product(range(total + 1), repeat=J):
            if sum(vec) != total or min(vec) != 0:
                continue
            for placement in placements:
                value, decision = score(placement, vec)
                if value is not None and value < best - 1e-12:
                    best, arg = value, decision
        assert total < 200, "the oracle's horizon ran away"
    return (None, None) if arg is None else (best, arg)


def make(seed: int, jobs: int, servers: int, crowd: bool, longest: float = 5.0) -> tuple[object, dict]:
    catalog = load_catalog()
    options = FAMILY.parse_generate_options({"static": True, "min_intervals": 1.0, "max_intervals": longest, "max_workers": 2})
    doc = generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed, options=options), catalog)
    if crowd:   # job 0 takes every GPU: the jobs can no longer all start at once, but each still fits alone
        doc["jobs"][0]["workers"] = {"count": 2 * servers}
        doc["jobs"][0]["architecture"] = "allreduce"
        doc["jobs"][0].pop("ps", None)
        doc["jobs"][0]["demand"].pop("ps", None)
    return from_document(doc, catalog=catalog), doc


def compare(inst, doc, starts):
    want, _decision = oracle(inst, doc, starts)
    sol = FAMILY.run(inst, "exact", SolveOptions(time_limit=60), {"starts": starts})
    if want is None:
        assert sol.report.status == "infeasible", sol.report
        return
    assert sol.report.status == "optimal", sol.report
    assert sol.report.objective == pytest.approx(want, rel=1e-7, abs=1e-9)
    result = CheckResult()
    check(inst, sol.decision, FAMILY.parse_options({"starts": starts}), result)
    assert result.feasible and result.objective == pytest.approx(want, rel=1e-7, abs=1e-9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), servers=st.sampled_from([1, 2, 3]), crowd=st.booleans(),
       starts=st.sampled_from(["any", "simultaneous"]))
def test_exact_equals_the_oracle_on_two_job_batches(seed, servers, crowd, starts):
    inst, doc = make(seed, 2, servers, crowd)
    compare(inst, doc, starts)


@pytest.mark.parametrize("seed, crowd", [(1, False), (2, True), (3, False)])
@pytest.mark.parametrize("starts", ["any", "simultaneous"])
def test_exact_equals_the_oracle_on_three_job_batches(seed, crowd, starts):
    inst, doc = make(seed, 3, 2, crowd, longest=3.0)
    compare(inst, doc, starts)


def test_the_oracle_sees_waiting_pay_where_simultaneous_starts_are_possible():
    # the class of the review's finding: a delayed start beating every simultaneous one
    found = []
    for seed in range(40):
        inst, doc = make(seed, 2, 1, False)
        both = oracle(inst, doc, "any")[0], oracle(inst, doc, "simultaneous")[0]
        if both[1] is not None and both[0] < both[1] - 1e-6:
            found.append(seed)
            compare(inst, doc, "any")
        if len(found) == 2:
            break
    assert found


def _hand_made(samples: tuple[int, int], gpus: int = 1) -> tuple[object, dict]:
    doc = {"format": "mlsched-instance/1", "problem": "harmony", "time": {"slots": 1, "slot_s": 300},
           "cluster": {"servers": [{"name": "s", "count": 1, "capacity": {"cpu": 8, "gpu": gpus, "memory_gb": 48}}]},
           "jobs": [{"id": f"j{i}", "model": "resnet50", "architecture": "ps", "workers": {"count": 1}, "ps": {"count": 1},
                     "work": {"epochs": 1, "samples_per_epoch": n},
                     "demand": {"worker": {"cpu": 2, "gpu": 1, "memory_gb": 4}, "ps": {"cpu": 2, "memory_gb": 4}},
                     "arrival_slot": 0} for i, n in enumerate(samples)]}
    return from_document(doc), doc


def test_the_oracle_finds_a_hand_computed_optimum():
    # One server with one GPU: the two ResNet-50 jobs (1 worker + 1 PS each) can never overlap.
    # Alone, spec section 3 by hand: the worker feels its PS (u_ps = .15 .10 0 .45), so
    # comp = .45 * (1 + .20*.15 + .20*.10 + .25*0) = .4725 s, comm = t_loc = .05 s (PS local):
    # 32 / .5225 samples/s.  Shortest first, the second job starting at the next boundary.
    speed = 32 / 0.5225
    samples = (30000, 50000)
    d = sorted(n / (speed * 300) for n in samples)
    expected = (d[0] + math.ceil(d[0]) + d[1]) / 2
    inst, doc = _hand_made(samples)
    got, decision = oracle(inst, doc, "any")
    assert got == pytest.approx(expected, rel=1e-9)
    assert sorted(decision["start"].values()) == [0, math.ceil(d[0])]
    assert oracle(inst, doc, "simultaneous") == (None, None)     # they cannot start together
    compare(inst, doc, "any")
    compare(inst, doc, "simultaneous")
