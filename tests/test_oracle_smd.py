"""Oracle for smd: every decision the checker could accept on a tiny instance, scored by the checker.

Independent of the family's view, inner enumeration, grid, rounding, knapsack and formulation:
the test reads each job's ranges from the instance document, enumerates admitted sets and one
``(w, p)`` per admitted job itself, and asks the family checker for feasibility and objective.

Why the enumeration is complete.  A decision the checker accepts admits a subset of the jobs
and gives each admitted job integers ``workers`` and ``ps`` inside its ``workers``/``ps``
ranges (the ``range`` rule; ``domain`` refuses non-integers and values below 1) and nothing to
the others (the ``allocation`` rule).  We enumerate every subset and, for each admitted job,
every integer pair of its ranges: exactly the decisions that can pass those rules.  The
checker then applies the per-job limits, the cluster capacity and the objective.  Nothing is
pruned, so no dominance argument is needed; the ranges are kept tiny (at most 3 x 3) so that
the product stays small.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mlsched_opt.checking.core import CheckResult
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.solvers import SolveOptions

SMD = get_family("smd")
OVERLAPS = ("instance", "sequential", "wait-free", "priority")


def oracle(doc: dict, options: dict | None = None) -> tuple[float, dict] | None:
    """The largest objective the checker accepts and a decision attaining it (``None``: nothing accepted)."""
    inst = from_document(doc, catalog=load_catalog())
    opts = SMD.parse_options(options or {})
    jobs = doc["jobs"]
    choices = []
    for job in jobs:
        w, p = job.get("workers", {}), job.get("ps", {})
        pairs = list(itertools.product(range(max(1, w.get("min", 1)), w["max"] + 1), range(max(1, p.get("min", 1)), p["max"] + 1)))
        choices.append([None, *pairs])  # None: not admitted
    best = None
    for pick in itertools.product(*choices):
        admitted = [job["id"] for job, c in zip(jobs, pick) if c is not None]
        decision = {"admitted": admitted,
                    "extra": {"allocation": {job["id"]: {"workers": c[0], "ps": c[1]} for job, c in zip(jobs, pick) if c is not None}}}
        result = CheckResult()
        SMD.check(inst, decision, opts, result)
        if result.feasible and (best is None or result.objective > best[0]):
            best = (result.objective, decision)
    return best


def tiny_document(seed: int, jobs: int, units: int, tight: float) -> dict:
    """The family generator on a few virtual instances of capacity, ranges cut to at most 3 x 3;
    with probability ``tight`` a job's limit holds two workers and two PSs exactly, so the
    per-job limit (C2) binds inside the ranges."""
    rng = np.random.default_rng(seed)
    spec = GenerateSpec(jobs=jobs, servers=units, seed=seed, options=SMD.parse_generate_options({"unit": "instance"}))
    doc = SMD.generate(spec, load_catalog())
    for job in doc["jobs"]:
        job["workers"]["max"] = min(job["workers"]["max"], int(rng.integers(1, 4)))
        job["ps"]["max"] = min(job["ps"]["max"], int(rng.integers(1, 4)))
        if rng.random() < tight:
            worker, ps = job["demand"]["worker"], job["demand"]["ps"]
            job["limit"] = {r: 2 * worker.get(r, 0) + 2 * ps.get(r, 0) for r in job["limit"]}
    return doc


def agree(doc: dict, options: dict | None = None) -> None:
    want = oracle(doc, options)
    assert want is not None  # admitting nobody is always accepted
    inst = from_document(doc, catalog=load_catalog())
    for solver in ("highs", "cpsat"):
        sol = SMD.run(inst, "exact", SolveOptions(solver=solver, gap=0.0, time_limit=30), options or {})
        assert sol.report.status in ("optimal", "feasible"), (solver, sol.report.status)
        # utilities can be ~1e-20 (a sigmoid far past its knee), and CP-SAT turns a fractional
        # objective into integers at an absolute precision of about 1e-6: a job worth 2e-9 may
        # be left out.  Differences below 1e-6 are below what either solver resolves.
        assert sol.report.objective == pytest.approx(want[0], rel=1e-7, abs=1e-6), (solver, sol.report.objective, want)
        check = CheckResult()
        SMD.check(inst, sol.decision, SMD.parse_options(options or {}), check)
        assert check.feasible and check.objective == pytest.approx(sol.report.objective, rel=1e-9, abs=1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), jobs=st.integers(1, 3), units=st.integers(1, 12),
       overlap=st.sampled_from(OVERLAPS), tight=st.sampled_from([0.0, 0.5]))
def test_exact_equals_the_checker_oracle_on_tiny_instances(seed, jobs, units, overlap, tight):
    agree(tiny_document(seed, jobs, units, tight), {"overlap": overlap})


def test_the_oracle_finds_a_known_optimum():
    # two jobs that cannot both fit (each reserves 3 of 4 GPUs); b (gamma1 = 2) beats a (gamma1 = 1);
    # the limit of 3 CPUs holds w + p <= 3, and tau = 1 + 2/w, so b's best is w = 2, p = 1
    job = {"sgd": "sync", "local_batch_size": 1, "global_batch_size": 1, "demand": {"worker": {"gpu": 1, "cpu": 1}, "ps": {"cpu": 1}},
           "workers": {"min": 1, "max": 3}, "ps": {"min": 1, "max": 3}, "limit": {"gpu": 3, "cpu": 3}}
    doc = {"format": "mlsched-instance/1", "name": "known", "problem": "smd",
           "cluster": {"servers": [{"name": "c", "capacity": {"gpu": 4, "cpu": 6}}]},
           "jobs": [{**job, "id": "a", "speed_model": {"theta": [0, 0, 1, 0, 2]},
                     "utility": {"kind": "sigmoid", "gamma1": 1, "gamma2": 4, "gamma3": 2.5, "delay_unit": "seconds"}},
                    {**job, "id": "b", "speed_model": {"theta": [0, 0, 1, 0, 2]},
                     "utility": {"kind": "sigmoid", "gamma1": 2, "gamma2": 4, "gamma3": 2.5, "delay_unit": "seconds"}}]}
    value, decision = oracle(doc)
    assert decision["admitted"] == ["b"]
    assert decision["extra"]["allocation"]["b"] == {"workers": 2, "ps": 1}
    assert value == pytest.approx(2 / (1 + np.exp(4 * (2 - 2.5))), rel=1e-12)
    agree(doc)
