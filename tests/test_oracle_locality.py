"""Oracle for locality: exhaustive search over what the checker accepts, against ``exact`` (HiGHS and CP-SAT).

The oracle reads the instance (``mlsched_opt.io.from_document``) and computes rates itself
(``q_c = slot_s m / (compute_s + 2 g / b_c)``, g in Gbit); it uses none of the family's view,
formulation, exact method or algorithms.  The family checker scores the decision the oracle
rebuilds, so the oracle's own arithmetic is checked too.

Why the enumeration covers every decision the checker accepts (job-level locality):

* per job and slot, a decision is worker counts ``w_h`` and PS counts ``s_h`` per machine.  The
  checker needs ``gamma S >= W``, no PSs without workers, ``W <= w_max``, capacity, nothing before
  arrival or after completion.  With ``ps_placement=free`` we enumerate every ``w`` and every
  split of exactly ``S = ceil(W / gamma)`` PSs: a decision with more PSs becomes one of ours by
  removing PSs, which keeps (C3), frees resources and can only shrink the set of machines the job
  touches, so its work (``q_in`` iff one machine) never drops.  With ``with-workers`` the checker
  fixes ``s_h = ceil(w_h / gamma)``, so ``w`` alone is enumerated;
* slots interact only through capacity within a slot and through cumulative work; per slot we
  keep every Pareto-maximal vector of the jobs' work (more work never finishes a job later), and
  across slots every Pareto-maximal cumulative work among states with the same finished jobs;
* a finished job gets no entry after its completion slot (the checker's ``after-completion``),
  and a job that never finishes costs ``T - a + 1`` whatever it ran, so "admitted" lists exactly
  the finished jobs without loss.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from mlsched_opt.errors import UserError
from mlsched_opt.io import from_document, read_document
from mlsched_opt.io.solution import Solution
from mlsched_opt.problems import REGISTRY, GenerateSpec, check_solution
from mlsched_opt.solvers import SolveOptions
from mlsched_opt.tolerances import CHECK_TOL

from .conftest import ROOT

FAMILY = REGISTRY["locality"]
TOL = CHECK_TOL  # the checker's tolerance on "work reaches V"


def rates(inst, job) -> tuple[float, float]:
    step = job.step
    g = step.get("gradient_mb", job.workload.gradient_mb if job.workload is not None else None)
    b_in = step.get("intra_bandwidth_gbps", inst.intra_server_bandwidth_gbps)
    b_ex = step.get("inter_bandwidth_gbps", inst.inter_server_bandwidth_gbps)
    comm = 2.0 * g * 8.0 / 1000.0
    q = lambda b: inst.slot_s * job.local_batch_size / (step["compute_s"] + comm / b)  # noqa: E731
    return q(b_in), q(b_ex)


def job_configs(inst, job, resources, placement):
    """Every (workers, PSs, work) of one job in one slot the enumeration needs (see the module docstring)."""
    caps = [[s.capacity.get(r, 0.0) for r in resources] for s in inst.servers]
    alpha = [job.worker_demand.get(r, 0.0) for r in resources]
    beta = [job.ps_demand.get(r, 0.0) for r in resources]
    gamma, w_max = int(job.step["ps_fan_in"]), int(job.workers.hi)
    q_in, q_ex = rates(inst, job)
    H = len(caps)

    def fits(h, w, s):
        return all(w * a + s * b <= c + 1e-9 for a, b, c in zip(alpha, beta, caps[h]))

    per_machine = [[w for w in range(w_max + 1) if fits(h, w, 0)] for h in range(H)]
    out = [((0,) * H, (0,) * H, 0.0)]
    for w in itertools.product(*per_machine):
        W = sum(w)
        if W == 0 or w_max < W:
            continue
        if placement == "with-workers":
            splits = [tuple(-(-x // gamma) for x in w)]
        else:
            S = -(-W // gamma)
            splits = [s for s in itertools.product(range(S + 1), repeat=H) if sum(s) == S]
        for s in splits:
            if all(fits(h, w[h], s[h]) for h in range(H)):
                one = sum(1 for h in range(H) if w[h] + s[h] > 0) <= 1
                out.append((w, s, (q_in if one else q_ex) * W))
    return out


def pareto(vectors: dict) -> dict:
    keys = list(vectors)
    return {k: vectors[k] for k in keys
            if not any(o != k and all(a >= b for a, b in zip(o, k)) for o in keys)}


def oracle(inst, placement="free"):
    """Minimum of ``sum w (C - a + 1)`` over the checker's decisions, and one decision reaching it."""
    resources = sorted({r for s in inst.servers for r in s.capacity})
    jobs = inst.jobs
    n, T, H = len(jobs), inst.slots, len(inst.servers)
    work = [float(j.work["epochs"]) * float(j.work["samples_per_epoch"]) for j in jobs]
    configs = [job_configs(inst, j, resources, placement) for j in jobs]
    caps = [[s.capacity.get(r, 0.0) for r in resources] for s in inst.servers]
    demand = [([j.worker_demand.get(r, 0.0) for r in resources], [j.ps_demand.get(r, 0.0) for r in resources]) for j in jobs]
    joint_cache: dict = {}

    def joint(active: tuple[int, ...]) -> dict:
        """Pareto-maximal per-slot work vectors of the active jobs -> one joint configuration reaching it."""
        if active not in joint_cache:
            found: dict = {}
            for combo in itertools.product(*(configs[i] for i in active)):
                ok = all(sum(c[0][h] * a + c[1][h] * b for c, i in zip(combo, active) for a, b in [(demand[i][0][r], demand[i][1][r])])
                         <= caps[h][r] + 1e-9 for h in range(H) for r in range(len(resources)))
                if ok:
                    found.setdefault(tuple(c[2] for c in combo), combo)
            joint_cache[active] = pareto(found)
        return joint_cache[active]

    # state: per job (finished slot or None, cumulative work); value: the path of joint configurations
    states = {tuple((None, 0.0) for _ in jobs): []}
    for t in range(T):
        nxt: dict = {}
        for state, path in states.items():
            active = tuple(i for i in range(n) if jobs[i].arrival_slot <= t and state[i][0] is None)
            for vec, combo in joint(active).items():
                new = list(state)
                for i, add in zip(active, vec):
                    done = state[i][1] + add
                    new[i] = (t, done) if done >= work[i] * (1 - TOL) - TOL else (None, done)
                key = tuple(new)
                if key not in nxt:
                    nxt[key] = path + [(t, active, combo)]
        # keep the Pareto-maximal cumulative work among states with the same finished jobs
        groups: dict = {}
        for key in nxt:
            groups.setdefault(tuple(c for c, _ in key), []).append(key)
        states = {}
        for keys in groups.values():
            vecs = {tuple(w for (c, w) in k if c is None) or (0.0,): k for k in keys}
            for v in pareto(dict.fromkeys(vecs)):
                states[vecs[v]] = nxt[vecs[v]]

    def value(state):
        return sum(j.weight * ((c if c is not None else T) - j.arrival_slot + 1) for j, (c, _) in zip(jobs, state))

    best = min(states, key=value)
    return value(best), rebuild(inst, states[best], best)


def rebuild(inst, path, state):
    names = [s.name for s in inst.servers]
    schedule: dict = {}
    for t, active, combo in path:
        for i, (w, s, _) in zip(active, combo):
            if any(w) or any(s):
                schedule.setdefault(inst.jobs[i].id, []).append(
                    {"slot": t, "workers": {names[h]: x for h, x in enumerate(w) if x}, "ps": {names[h]: x for h, x in enumerate(s) if x}})
    done = {inst.jobs[i].id: c for i, (c, _) in enumerate(state) if c is not None}
    return {"admitted": sorted(done), "schedule": schedule, "extra": {"completion": done}}


def scored(inst, decision, value, placement):
    """The checker's verdict on the oracle's decision, with the oracle's value as the claim."""
    exact = FAMILY.run(inst, "greedy-rr", SolveOptions(seed=0), {"ps_placement": placement})  # only for a Solution shell
    sol = Solution.for_instance(inst, "locality", "oracle", exact.report, decision, FAMILY.parse_options({"ps_placement": placement}))
    sol.report.objective = value
    return check_solution(inst, sol, options={"ps_placement": placement})


def generated(seed, jobs, servers, slots, gpus):
    opts = FAMILY.parse_generate_options({"gpus": gpus, "work_min": 0.5, "work_max": 4.0})
    try:
        return from_document(FAMILY.generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed, slots=slots, options=opts)))
    except UserError:
        return None  # e.g. a worker and its PS fit on no 1-GPU machine


def test_oracle_finds_the_toy_optimum_and_the_o3_counterexample():
    toy = from_document(read_document(ROOT / "instances" / "locality-toy.toml"))
    for placement in ("free", "with-workers"):
        value, decision = oracle(toy, placement)
        assert value == 5.0  # spec 001 section 7
        assert scored(toy, decision, value, placement).feasible
    doc = read_document(ROOT / "instances" / "locality-toy.toml")
    doc["time"]["slots"] = 2
    doc["cluster"]["servers"] = [{"name": "M", "count": 3, "capacity": {"cpu": 2}}]
    doc["jobs"] = [{**doc["jobs"][0], "work": {"epochs": 1, "samples_per_epoch": 4}, "workers": {"min": 1, "max": 4}}]
    three = from_document(doc)
    assert oracle(three, "free")[0] == 1.0          # 2 + 2 workers, 2 PSs on the third machine: 4 q_ex in slot 0
    assert oracle(three, "with-workers")[0] == 2.0  # O3: at most 1 worker + 1 PS per machine


@pytest.mark.parametrize("placement", ["free", "with-workers"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(seed=st.integers(0, 10**6), jobs=st.integers(1, 2), servers=st.integers(1, 3), slots=st.integers(2, 4),
       gpus=st.integers(1, 2))
def test_exact_matches_the_oracle(placement, seed, jobs, servers, slots, gpus):
    inst = generated(seed, jobs, servers, slots, gpus)
    assume(inst is not None)
    value, decision = oracle(inst, placement)
    check = scored(inst, decision, value, placement)
    assert check.feasible and math.isclose(check.objective, value), [str(v) for v in check.violations]
    for solver in ("highs", "cpsat"):
        exact = FAMILY.run(inst, "exact", SolveOptions(solver=solver, gap=0.0, time_limit=60),
                           {"ps_placement": placement})
        # the family's objective charges unfinished jobs, so neither side is ever infeasible
        assert exact.report.status == "optimal", (solver, exact.report.message)
        assert exact.report.objective == pytest.approx(value), (solver, placement)
        assert check_solution(inst, exact, options={"ps_placement": placement}).feasible
