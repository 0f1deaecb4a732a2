"""Oracle for packing: exhaustive enumeration of the placements the checker accepts, on tiny instances.

Written without the family's formulation, FFD or view: instances are tiny documents made here,
read with the loader; each enumerated decision is scored by the family's checker.  The oracle's
optimum (or "infeasible") must equal ``exact``'s for HiGHS and CP-SAT, in both objectives.

Why the enumeration is complete: a job that is not admitted may place no task (rule
``placement``); an admitted job places exactly its W workers and P PSs (rule ``task-count``), so
its placements are the ways of writing W (and P) as an ordered sum of non-negative counts, one
per server: all of them are enumerated (servers a task may not use are left to the checker's
``eligibility`` rule).  Each job's placements are checked alone by the checker; combinations are
kept when the summed demand fits every server's capacity, and the best combination is checked
again as a whole.  ``weight``: every subset of jobs may be admitted; ``servers``: all jobs must
be (rule ``admission``), and the objective is the number of servers named with a task.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from mlsched_opt.checking.core import CheckResult
from mlsched_opt.errors import InstanceError
from mlsched_opt.io import from_document
from mlsched_opt.problems import get_family
from mlsched_opt.solvers import SolveOptions

FAMILY = get_family("packing")
RESOURCES = ("gpu", "cpu")


def _check(inst, decision, objective) -> float | None:
    result = CheckResult()
    FAMILY.check(inst, decision, FAMILY.parse_options({"objective": objective}), result)
    return result.objective if result.feasible else None


def _spreads(count: int, servers: int):
    """Every ordered way of writing ``count`` as ``servers`` non-negative parts."""
    return [c for c in itertools.product(range(count + 1), repeat=servers) if sum(c) == count]


def oracle(inst, objective: str) -> tuple[float | None, dict | None]:
    """Best objective over every decision the checker accepts (None, None: no decision is accepted)."""
    names = [s.name for s in inst.servers]
    cap = np.array([[s.capacity.get(r, 0.0) for r in RESOURCES] for s in inst.servers])
    options = []  # per job: list of (use [S, R], servers used, placement)
    for job in inst.jobs:
        mine = []
        dw = np.array([job.worker_demand.get(r, 0.0) for r in RESOURCES])
        dp = np.array([job.ps_demand.get(r, 0.0) for r in RESOURCES])
        for w in _spreads(job.workers.lo, len(names)):
            for p in _spreads(job.ps.lo, len(names)):
                placement = {"workers": {names[s]: n for s, n in enumerate(w) if n},
                             "ps": {names[s]: n for s, n in enumerate(p) if n}}
                if _check(inst, {"admitted": [job.id], "placement": {job.id: placement}}, "weight") is None:
                    continue
                use = np.array(w)[:, None] * dw + np.array(p)[:, None] * dp
                used = frozenset(names[s] for s in range(len(names)) if w[s] or p[s])
                mine.append((use, used, placement))
        options.append(mine)

    best: list = [None, None]

    def better(value):
        if best[0] is None:
            return True
        return value < best[0] - 1e-9 if objective == "servers" else value > best[0] + 1e-9

    def search(k, free, chosen):
        if k == len(inst.jobs):
            if objective == "servers":
                value = float(len(frozenset().union(*(options[i][o][1] for i, o in chosen))))
            else:
                value = float(sum(inst.jobs[i].weight for i, _ in chosen))
            if better(value):
                best[0] = value
                best[1] = {"admitted": [inst.jobs[i].id for i, _ in chosen],
                           "placement": {inst.jobs[i].id: options[i][o][2] for i, o in chosen}}
            return
        if objective == "weight":
            search(k + 1, free, chosen)  # job k not admitted
        for o, (use, _, _) in enumerate(options[k]):
            rest = free - use
            if (rest >= -1e-9).all():
                search(k + 1, rest, chosen + [(k, o)])

    search(0, cap, [])
    if best[1] is not None:
        confirmed = _check(inst, best[1], objective)
        assert confirmed is not None and confirmed == pytest.approx(best[0]), "the checker rejects the oracle's combination"
    return best[0], best[1]


def test_the_oracle_finds_a_hand_made_optimum():
    """Two servers of 2 GPUs; jobs of 2, 1 and 1 GPUs (weights 5, 3, 3): weight 11 fits, all of them on 2 servers."""
    doc = {"format": "mlsched-instance/1", "name": "hand", "problem": "packing",
           "cluster": {"servers": [{"name": "a", "capacity": {"gpu": 2, "cpu": 8}}, {"name": "b", "capacity": {"gpu": 2, "cpu": 8}}]},
           "jobs": [{"id": f"j{n}", "architecture": "allreduce", "workers": {"count": 1}, "weight": wt,
                     "demand": {"worker": {"gpu": g, "cpu": 1}}} for n, (g, wt) in enumerate([(2, 5), (1, 3), (1, 3)])]}
    inst = from_document(doc)
    assert oracle(inst, "weight")[0] == 11
    assert oracle(inst, "servers")[0] == 2
    doc["jobs"][1]["demand"]["worker"]["gpu"] = 2  # 2 + 2 + 1 GPUs on 4: weight 8 at best, servers infeasible
    inst = from_document(doc)
    assert oracle(inst, "weight")[0] == 8
    assert oracle(inst, "servers") == (None, None)


@st.composite
def tiny(draw):
    servers = [{"name": f"s{k}", "role": draw(st.sampled_from(["any", "any", "worker", "ps"])),
                "capacity": {"gpu": draw(st.integers(0, 3)), "cpu": draw(st.integers(2, 6))}}
               for k in range(draw(st.integers(1, 3)))]
    jobs = []
    for n in range(draw(st.integers(1, 3))):
        job = {"id": f"j{n}", "workers": {"count": draw(st.integers(1, 2))}, "weight": draw(st.integers(1, 9)),
               "demand": {"worker": {"gpu": draw(st.integers(0, 2)), "cpu": draw(st.integers(1, 3))}}}
        if draw(st.booleans()):
            job["architecture"] = "allreduce"
        else:
            job["ps"] = {"count": draw(st.integers(0, 1))}
            job["demand"]["ps"] = {"cpu": draw(st.integers(1, 2))}
        jobs.append(job)
    return {"format": "mlsched-instance/1", "name": "oracle", "problem": "packing", "cluster": {"servers": servers}, "jobs": jobs}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(tiny(), st.sampled_from(["weight", "servers"]))
def test_exact_equals_the_oracle(doc, objective):
    try:
        inst = from_document(doc)
    except InstanceError:
        assume(False)  # a task that fits nowhere is refused on loading
    value, _ = oracle(inst, objective)
    for solver in ("highs", "cpsat"):
        report = FAMILY.run(inst, "exact", SolveOptions(solver=solver, gap=0.0, time_limit=30), {"objective": objective}).report
        if value is None:
            assert report.status == "infeasible", (solver, report.status)
        else:
            assert report.status == "optimal", (solver, report.status, report.message)
            assert report.objective == pytest.approx(value), (solver, objective, report.objective, value)
