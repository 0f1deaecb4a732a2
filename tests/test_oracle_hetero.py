"""Oracle for hetero: every decision the checker could accept on a tiny cluster, scored by the checker.

Independent of the family's formulation, configurations, markets, views and its own exhaustive
methods (``bundles``, ``brute-force``): the test reads the instance document, enumerates GPU
counts per (server, job) itself, splits each job's batch with its own water-filling, builds the
decision in the solution vocabulary and asks the family checker for feasibility and objective.

Why the enumeration is complete.  A decision the checker accepts gives every job a number of
GPUs on each server (each server's GPUs shared among the jobs, at most its capacity: the
``capacity`` rule) and integer samples per GPU that sum to the job's batch within the memory
caps.  We enumerate every split of every server's GPUs among the jobs and nobody (GPUs of one
server are identical: same model, same link).  For a fixed choice of GPUs the communication
term depends on the GPUs alone and the compute term is ``max_k b_k / rho_k``, so among the
splits only one minimizing that maximum matters (any other is no better); adding samples one by
one to the GPU whose time after the addition is smallest (skipping full ones) is such a split
(the standard exchange argument for the minimum of a maximum of increasing functions under a
sum constraint).  Decisions outside this set break a rule the checker enforces.
"""

from __future__ import annotations

import heapq
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mlsched_opt.checking.core import CheckResult
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import GenerateSpec, get_family
from mlsched_opt.solvers import SolveOptions

FAMILY = get_family("hetero")
MODELS = ("K80", "P100", "V100")


def best_split(rhos: tuple[float, ...], caps: tuple[int, ...], batch: int) -> list[int] | None:
    """Integer samples per GPU minimizing ``max b_k / rho_k`` (``None`` if the caps cannot hold ``batch``)."""
    if sum(min(c, batch) for c in caps) < batch:
        return None
    b = [0] * len(rhos)
    heap = [(1 / r, k) for k, r in enumerate(rhos) if caps[k] > 0]
    heapq.heapify(heap)
    for _ in range(batch):
        _, k = heapq.heappop(heap)
        b[k] += 1
        if b[k] < caps[k]:
            heapq.heappush(heap, ((b[k] + 1) / rhos[k], k))
    return b


def oracle(doc: dict, options: dict | None = None) -> float | None:
    """The smallest average JCT the checker accepts, or ``None`` when it accepts nothing."""
    inst = from_document(doc, catalog=load_catalog())
    opts = FAMILY.parse_options(options or {})
    servers = [(s.name, int(s.capacity.get("gpu", 0)), s.gpu_model) for s in inst.servers if s.capacity.get("gpu", 0) > 0]
    jobs = doc["jobs"]
    s_count = len(jobs)
    per_server = [[c for c in itertools.product(range(cap + 1), repeat=s_count) if sum(c) <= cap] for _, cap, _ in servers]
    # samples/s per GPU model: the file's, else the catalog's measurement (what the loader offers)
    models = {m for _, _, m in servers}
    rates = [{m: float(job.get("data_parallel", {}).get("samples_per_s", {}).get(m)
                       or (loaded.workload.throughput_samples_per_s(m) if loaded.workload else 0) or 0) for m in models}
             for job, loaded in zip(jobs, inst.jobs)]
    splits: dict[tuple, list[int] | None] = {}
    best = None
    for choice in itertools.product(*per_server):
        placement, batches = {}, {}
        ok = True
        for i, job in enumerate(jobs):
            dp = job.get("data_parallel", {})
            rho = rates[i]
            caps = dp.get("max_local_batch", {})
            gpus = [(name, model) for (name, _, model), counts in zip(servers, choice) for _ in range(counts[i])]
            if not gpus or any(rho.get(m, 0) <= 0 for _, m in gpus):
                ok = False  # no GPU (C2) or one the job has no throughput on: the checker refuses both
                break
            key = (i, tuple(m for _, m in gpus))
            if key not in splits:
                splits[key] = best_split(tuple(float(rho[m]) for _, m in gpus),
                                         tuple(int(caps.get(m, 1 << 40)) for _, m in gpus), int(job["global_batch_size"]))
            b = splits[key]
            if b is None:
                ok = False  # the caps cannot hold the batch on these GPUs: no split is accepted
                break
            workers: dict[str, int] = {}
            per: dict[str, list[int]] = {}
            for (name, _), samples in zip(gpus, b):
                workers[name] = workers.get(name, 0) + 1
                per.setdefault(name, []).append(samples)
            placement[job["id"]] = {"workers": workers}
            batches[job["id"]] = per
        if not ok:
            continue
        result = CheckResult()
        FAMILY.check(inst, {"admitted": [j["id"] for j in jobs], "placement": placement, "extra": {"batch": batches}}, opts, result)
        if result.feasible and (best is None or result.objective < best):
            best = result.objective
    return best


def tiny_document(rng: np.random.Generator) -> dict:
    """At most 5 GPUs on up to 4 servers of mixed models and links, 1 to 3 jobs; caps, size ranges,
    gradients or fixed communication times drawn so that every rule can bind (or make it infeasible)."""
    servers = []
    for h in range(int(rng.integers(1, 5))):
        server = {"name": f"s{h}", "gpu_model": str(rng.choice(MODELS)), "capacity": {"gpu": int(rng.integers(1, 3))}}
        if rng.random() < 0.7:
            server["capacity"]["bandwidth_gbps"] = float(rng.choice([1.0, 10.0, 100.0]))
        servers.append(server)
    while sum(s["capacity"]["gpu"] for s in servers) > 5:
        servers.pop()
    k = sum(s["capacity"]["gpu"] for s in servers)
    jobs = []
    for i in range(int(rng.integers(1, 4))):
        lo = 1 if rng.random() < 0.75 else 2
        usable = {m for m in MODELS if rng.random() < 0.8} | {servers[i % len(servers)]["gpu_model"]}  # an instance needs one
        dp: dict = {"samples_per_s": {m: float(rng.integers(20, 400)) for m in sorted(usable)}}
        if rng.random() < 0.5:
            dp["comm_s"] = round(float(rng.uniform(0.0, 0.8)), 3)
        else:
            dp["gradient_mb"] = float(rng.integers(10, 600))
        batch = int(rng.integers(4, 80))
        if rng.random() < 0.4:
            dp["max_local_batch"] = {m: int(rng.integers(batch // 4 + 1, batch + 1)) for m in MODELS}
        jobs.append({"id": f"j{i}", "architecture": "allreduce", "global_batch_size": batch,
                     "work": {"iterations": int(rng.integers(1, 500))},
                     "workers": {"min": lo, "max": int(rng.integers(lo, max(lo, k) + 1))},
                     "demand": {"worker": {"gpu": 1}}, "data_parallel": dp})
    return {"format": "mlsched-instance/1", "name": "oracle", "problem": "hetero",
            "cluster": {"inter_server_bandwidth_gbps": 10.0, "servers": servers}, "jobs": jobs}


def exact(doc: dict, solver: str, options: dict | None = None):
    inst = from_document(doc, catalog=load_catalog())
    return FAMILY.run(inst, "exact", SolveOptions(solver=solver, gap=0.0, time_limit=30), options or {}).report


def agree(doc: dict, options: dict | None = None) -> None:
    want = oracle(doc, options)
    for solver in ("highs", "cpsat"):
        report = exact(doc, solver, options)
        if want is None:
            assert report.status == "infeasible", (solver, report.status, report.objective)
        else:
            assert report.status in ("optimal", "feasible") and report.objective == pytest.approx(want, rel=1e-9), \
                (solver, report.status, report.objective, want)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), comm=st.sampled_from(["ring", "ring", "ps", "none"]))
def test_exact_equals_the_checker_oracle_on_tiny_clusters(seed, comm):
    agree(tiny_document(np.random.default_rng(seed)), {"comm": comm})


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_exact_equals_the_checker_oracle_on_generated_instances(seed):
    spec = GenerateSpec(jobs=2, servers=2, seed=seed, options=FAMILY.parse_generate_options({"gpus_per_server": 2}))
    agree(FAMILY.generate(spec, load_catalog()))


def test_the_oracle_finds_the_known_optimum_of_the_toy():
    # spec 003 section 6: A on the V100, B on the P100 and the K80, average JCT 2500 s (split 360/240)
    doc = {"format": "mlsched-instance/1", "name": "toy", "problem": "hetero",
           "cluster": {"servers": [{"name": n, "gpu_model": m, "capacity": {"gpu": 1}}
                                   for n, m in (("V", "V100"), ("P", "P100"), ("K", "K80"))]},
           "jobs": [{"id": j, "architecture": "allreduce", "global_batch_size": 600, "work": {"iterations": 1000},
                     "workers": {"min": 1, "max": 3}, "demand": {"worker": {"gpu": 1}},
                     "data_parallel": {"samples_per_s": rho, "comm_s": c}}
                    for j, rho, c in (("A", {"V100": 300, "P100": 200, "K80": 100}, 0.2),
                                      ("B", {"V100": 200, "P100": 150, "K80": 100}, 0.6))]}
    assert oracle(doc) == pytest.approx(2500.0)
    assert best_split((150.0, 100.0), (1 << 40, 1 << 40), 600) == [360, 240]
    # caps of 250 samples per GPU: each job needs 3 GPUs, 6 together on 3: nothing is accepted
    for job in doc["jobs"]:
        job["data_parallel"]["max_local_batch"] = dict.fromkeys(MODELS, 250)
    assert oracle(doc) is None
    agree(doc)
