"""Oracle for OASiS: exhaustive enumeration of the schedules the checker accepts, on tiny instances.

Written without the family's formulation, algorithms or view: the instance is read with the
loader, candidate decisions are built here from the instance document alone (the documented job
model of docs/reference/instance-format.md), and every decision the oracle counts is scored by the family's
checker.  The oracle's optimum must equal ``exact``'s for HiGHS and CP-SAT.

Why the enumeration is complete (every decision the checker accepts is matched by an enumerated
one of at least the same utility):

* a job that is not admitted earns nothing; listing it as ``unfinished`` only uses capacity, so a
  decision without it is accepted too and worth the same (dominance);
* an admitted job's slots before its arrival must be empty (rule ``arrival``), so only slots from
  the arrival on get workers; on each worker server every count in ``[0, cap]`` is tried, ``cap =
  min(workers.max, chunks)`` (a larger count on one server alone breaks ``worker-cap``);
* there is one PS server, and the PS count of a slot with ``Y`` workers is the smallest ``z`` with
  ``z >= ps.min`` and ``z B >= Y b``: every rule on ``z`` is either such a lower bound or an upper
  bound (``z <= Y``, ``z <= ps.max``, capacity) that a smaller ``z`` keeps, and the utility does
  not depend on ``z`` (dominance); a slot where that ``z`` breaks an upper bound has no valid ``z``;
* schedules with fewer worker-slots than the job's work (E N M (tau + 2 e 8/1000 / b) / slot_s,
  as documented) are skipped before the checker sees them (rule ``work``);
* each job's schedules are checked alone by the checker; combinations are then kept when the
  summed use of every (server, slot) fits its capacity, and the best combination is checked again
  as a whole by the checker.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mlsched_opt.checking.core import CheckResult
from mlsched_opt.io import from_document, load_instance
from mlsched_opt.problems import get_family
from mlsched_opt.solvers import SolveOptions

from .conftest import ROOT

FAMILY = get_family("oasis")
OPTIONS = FAMILY.parse_options({})


def _accepted(inst, decision) -> float | None:
    result = CheckResult()
    FAMILY.check(inst, decision, OPTIONS, result)
    return result.objective if result.feasible else None


def _entry(t, counts, worker_names, ps_name, z):
    return {"slot": t, "workers": {worker_names[h]: int(c) for h, c in enumerate(counts) if c},
            "ps": {ps_name: z} if z else {}}


def oracle(inst) -> tuple[float, dict]:
    """The best utility over every decision the checker accepts (module docstring), and that decision."""
    doc = inst.document
    T, slot_s = doc["time"]["slots"], float(doc["time"].get("slot_s", 3600))
    worker_names = [s.name for s in inst.servers if s.role == "worker"]
    ps_names = [s.name for s in inst.servers if s.role == "ps"]
    assert len(ps_names) == 1  # the PS argument of the docstring needs a single PS server
    ps_name = ps_names[0]
    cap_w = np.array([inst.server(n).capacity.get("cpu", 0.0) for n in worker_names])
    cap_p = inst.server(ps_name).capacity.get("cpu", 0.0)
    per_job = []  # per job: list of (value, worker use [H, T], PS use [T], entries)
    for job, spec in zip(inst.jobs, doc["jobs"]):
        w, step = spec["work"], spec["step"]
        b, B = step["worker_bandwidth_gbps"], step["ps_bandwidth_gbps"]
        step_s = step["compute_s"] + 2 * step["gradient_mb"] * 8 / 1000 / b
        work = w["epochs"] * w["chunks"] * w["minibatches_per_chunk"] * step_s / slot_s
        cap = min(job.workers.hi, w["chunks"])
        dw, dp = job.worker_demand.get("cpu", 0.0), job.ps_demand.get("cpu", 0.0)
        options = []
        slots = range(job.arrival_slot, T)
        per_slot = list(itertools.product(range(cap + 1), repeat=len(worker_names)))
        for choice in itertools.product(per_slot, repeat=len(slots)):
            Y = [sum(c) for c in choice]
            if sum(Y) < work - 1e-6 * max(1.0, work) - 1e-9:
                continue
            entries, zs, ok = [], [], True
            for t, counts, y in zip(slots, choice, Y):
                z = 0 if y == 0 else next((z for z in range(job.ps.lo, 10**6) if z * B >= y * b - 1e-9), None)
                if y and (z > min(y, job.ps.hi)):
                    ok = False
                    break
                zs.append(z)
                if y:
                    entries.append(_entry(t, counts, worker_names, ps_name, z))
            if not ok:
                continue
            value = _accepted(inst, {"admitted": [job.id], "schedule": {job.id: entries}})
            if value is None:
                continue
            use_w = np.zeros((len(worker_names), T))
            use_p = np.zeros(T)
            for t, counts, z in zip(slots, choice, zs):
                use_w[:, t] = np.array(counts) * dw
                use_p[t] = z * dp
            options.append((value, use_w, use_p, entries))
        per_job.append(options)

    best = (0.0, {"admitted": [], "schedule": {}})

    def search(k, free_w, free_p, value, chosen):
        nonlocal best
        if k == len(per_job):
            if value > best[0] + 1e-9:
                best = (value, {"admitted": [inst.jobs[i].id for i, _ in chosen],
                                "schedule": {inst.jobs[i].id: e for i, e in chosen}})
            return
        search(k + 1, free_w, free_p, value, chosen)  # job k not admitted
        for v, use_w, use_p, entries in per_job[k]:
            rest_w, rest_p = free_w - use_w, free_p - use_p
            if (rest_w >= -1e-9).all() and (rest_p >= -1e-9).all():
                search(k + 1, rest_w, rest_p, value + v, chosen + [(k, entries)])

    search(0, np.repeat(cap_w[:, None], T, axis=1), np.full(T, cap_p), 0.0, [])
    confirmed = _accepted(inst, best[1])
    assert confirmed is not None and confirmed == pytest.approx(best[0]), "the checker rejects the oracle's combination"
    return best


def test_the_oracle_finds_the_toys_optimum_37():
    """Spec 000 section 7: the offline optimum of the toy is 37 (jobs 1, 2 and 3)."""
    inst = load_instance(ROOT / "instances" / "oasis-toy.toml")
    value, decision = oracle(inst)
    assert value == pytest.approx(37)
    assert sorted(decision["admitted"]) == ["1", "2", "3"]


@st.composite
def tiny(draw):
    T = draw(st.integers(2, 3))
    H = draw(st.integers(1, 2))
    servers = [{"name": f"w{h}", "role": "worker", "capacity": {"cpu": draw(st.integers(2, 4))}} for h in range(H)]
    servers.append({"name": "ps", "role": "ps", "capacity": {"cpu": draw(st.integers(1, 3))}})
    jobs = []
    for n in range(draw(st.integers(1, 2))):
        lo = draw(st.integers(1, 2))
        p_lo = draw(st.integers(1, 2))
        values = sorted((draw(st.integers(0, 20)) for _ in range(T)), reverse=True)
        jobs.append({
            "id": f"j{n}", "arrival_slot": draw(st.integers(0, T - 1)),
            "work": {"epochs": 1, "chunks": draw(st.integers(1, 2)), "minibatches_per_chunk": draw(st.integers(1, 3))},
            "step": {"compute_s": draw(st.sampled_from([0.5, 1.0])), "gradient_mb": 0,
                     "worker_bandwidth_gbps": draw(st.sampled_from([1, 2])), "ps_bandwidth_gbps": draw(st.sampled_from([2, 4]))},
            "workers": {"min": lo, "max": draw(st.integers(lo, 2))},
            "ps": {"min": p_lo, "max": draw(st.integers(p_lo, 2))},
            "demand": {"worker": {"cpu": draw(st.sampled_from([1, 2]))}, "ps": {"cpu": 1}},
            "utility": {"kind": "table", "values": values},
        })
    return {"format": "mlsched-instance/1", "name": "oracle", "problem": "oasis",
            "time": {"slots": T, "slot_s": 1}, "cluster": {"servers": servers}, "jobs": jobs}


def _exact(inst, solver):
    report = FAMILY.run(inst, "exact", SolveOptions(solver=solver, gap=0.0, time_limit=30)).report
    assert report.status in ("optimal", "infeasible"), (solver, report.status, report.message)
    return report


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny())
def test_exact_equals_the_oracle(doc):
    inst = from_document(doc)
    value, _ = oracle(inst)
    for solver in ("highs", "cpsat"):
        report = _exact(inst, solver)
        # admitting nothing is always accepted, so neither side can be infeasible
        assert report.status == "optimal"
        assert report.objective == pytest.approx(value, abs=1e-6), (solver, report.objective, value)
    # the window capacity bound (the family's relaxation) is never below the enumerated optimum
    bound = FAMILY.lp_bound(inst, FAMILY.parse_options({}), SolveOptions(time_limit=30))
    assert bound.status == "optimal" and bound.objective >= value - 1e-9, (bound.objective, value, bound.message)
