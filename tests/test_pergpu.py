"""Packing GPU by GPU (``gpus = per-gpu``, issue 40) and the online GPU-sharing methods.

The oracle is written without the formulation, the view or the methods: it enumerates every
subset of jobs and every way of putting each admitted single-task job's GPU shares on GPUs of
one server (a share on one GPU, a whole-GPU job on distinct GPUs), and keeps what fits by plain
arithmetic on the instance's numbers; the exact method must reach its optimum, and the
checker (scored independently) must accept the oracle's best decision.
"""

from __future__ import annotations

import itertools

import pytest

from mlsched_opt.checking.core import CheckResult
from mlsched_opt.errors import InstanceError, OptionError
from mlsched_opt.io import from_document
from mlsched_opt.problems import get_family
from mlsched_opt.solvers import SolveOptions

FAMILY = get_family("packing")
ONLINE = ("fgd", "best-fit", "dot-product", "gpu-packing", "gpu-clustering", "random-fit")


def doc(servers: list[tuple[int, float]], jobs: list[tuple[float, float]], gpus: str = "per-gpu") -> dict:
    """Servers (GPUs, CPUs) and single-task jobs (GPU demand, CPU demand)."""
    return {"format": "mlsched-instance/1", "name": "t", "problem": "packing", "options": {"gpus": gpus},
            "cluster": {"servers": [{"name": f"n{i}", "capacity": {"gpu": g, "cpu": c}} for i, (g, c) in enumerate(servers)]},
            "jobs": [{"id": f"j{i}", "architecture": "allreduce", "workers": {"count": 1},
                      "demand": {"worker": {"gpu": g, "cpu": c}}, "weight": 1} for i, (g, c) in enumerate(jobs)]}


def check(inst, decision, gpus: str = "per-gpu") -> CheckResult:
    result = CheckResult()
    FAMILY.check(inst, decision, FAMILY.parse_options({"gpus": gpus}), result)
    return result


def oracle(servers, jobs) -> tuple[int, dict]:
    """Most jobs admitted, by enumeration (module docstring)."""
    choices = []  # per job: None (rejected) or (server, GPUs)
    for g, _c in jobs:
        mine: list = [None]
        for s, (ng, _sc) in enumerate(servers):
            if g <= 0:
                mine.append((s, ()))
            elif g < 1:
                mine += [(s, (k,)) for k in range(ng)]
            else:
                mine += [(s, combo) for combo in itertools.combinations(range(ng), int(g))]
        choices.append(mine)
    best, best_decision = -1, {}
    for pick in itertools.product(*choices):
        gpu_load: dict = {}
        cpu_load = [0.0] * len(servers)
        for (g, c), p in zip(jobs, pick):
            if p is None:
                continue
            s, ks = p
            cpu_load[s] += c
            for k in ks:
                gpu_load[(s, k)] = gpu_load.get((s, k), 0.0) + (g if g < 1 else 1.0)
        if any(v > 1 + 1e-9 for v in gpu_load.values()) or any(cpu_load[s] > servers[s][1] + 1e-9 for s in range(len(servers))):
            continue
        n = sum(p is not None for p in pick)
        if n > best:
            admitted = [f"j{i}" for i, p in enumerate(pick) if p is not None]
            best_decision = {"admitted": admitted,
                             "placement": {f"j{i}": {"workers": {f"n{p[0]}": 1}} for i, p in enumerate(pick) if p is not None},
                             "gpus": {f"j{i}": {"workers": {f"n{p[0]}": list(p[1])}} for i, p in enumerate(pick) if p is not None and p[1]}}
            best = n
    return best, best_decision


CASES = [
    ([(2, 8)], [(0.6, 1), (0.6, 1), (0.8, 1)]),              # the pooled docstring's case: 2 of 3 per GPU
    ([(2, 8), (1, 2)], [(0.5, 1), (1, 1), (0.7, 1), (0.5, 1), (0.3, 2)]),
    ([(4, 4)], [(2, 1), (0.5, 1), (0.6, 1), (0.9, 1), (1, 1)]),
    ([(2, 2), (2, 4)], [(0.4, 1), (0.4, 1), (0.4, 1), (2, 2), (0.0, 1)]),
]


@pytest.mark.parametrize("servers, jobs", CASES)
def test_per_gpu_exact_equals_the_oracle(servers, jobs):
    want, best = oracle(servers, jobs)
    inst = from_document(doc(servers, jobs))
    assert check(inst, best).feasible
    got = FAMILY.run(inst, "exact", SolveOptions(time_limit=30, certify=False), {"gpus": "per-gpu"})
    assert got.report.status == "optimal" and got.report.objective == want
    assert check(inst, got.decision).feasible


def test_checker_rejects_an_overfilled_gpu_the_pooled_check_accepts():
    inst = from_document(doc([(2, 8)], [(0.6, 1), (0.6, 1), (0.8, 1)]))
    forged = {"admitted": ["j0", "j1", "j2"], "placement": {f"j{i}": {"workers": {"n0": 1}} for i in range(3)},
              "gpus": {"j0": {"workers": {"n0": [0]}}, "j1": {"workers": {"n0": [1]}}, "j2": {"workers": {"n0": [1]}}}}
    per = check(inst, forged)
    assert [v.rule for v in per.violations] == ["gpu-capacity"]
    pooled = check(inst, {k: v for k, v in forged.items() if k != "gpus"}, "pooled")
    assert pooled.feasible and pooled.objective == 3


@pytest.mark.parametrize("gpus", [None, 3, "x", {"j0": 1}, {"j0": {"workers": {"n0": [5]}}}, {"j0": {"workers": {"n0": [True]}}},
                                  {"j0": {"workers": {"n0": [0, 0]}}}, {"j0": {"workers": {"n9": [0]}}}, {"zz": {"workers": {}}},
                                  {"j0": {"ps": {"n0": [0]}}}, {"j0": {"workers": {"n0": [2**80]}}}, {"j0": {"x": 1}}])
def test_checker_reads_any_gpus_part_without_crashing(gpus):
    inst = from_document(doc([(2, 8)], [(0.6, 1)]))
    result = check(inst, {"admitted": ["j0"], "placement": {"j0": {"workers": {"n0": 1}}}, "gpus": gpus})
    assert not result.feasible


def test_whole_gpus_are_not_shared_and_bad_demands_are_refused():
    inst = from_document(doc([(2, 8)], [(1, 1), (0.5, 1)]))
    shared = {"admitted": ["j0", "j1"], "placement": {"j0": {"workers": {"n0": 1}}, "j1": {"workers": {"n0": 1}}},
              "gpus": {"j0": {"workers": {"n0": [0]}}, "j1": {"workers": {"n0": [0]}}}}
    assert [v.rule for v in check(inst, shared).violations] == ["gpu-capacity"]
    with pytest.raises(InstanceError, match=r"demand\.worker\.gpu"):
        FAMILY.run(from_document(doc([(2, 8)], [(1.5, 1)])), "fgd", SolveOptions(), {"gpus": "per-gpu"})
    with pytest.raises(OptionError, match="gpus"):
        FAMILY.run(inst, "lns", SolveOptions(), {"gpus": "per-gpu"})


@pytest.mark.parametrize("gpus", ["per-gpu", "pooled"])
@pytest.mark.parametrize("method", (*ONLINE, "ffd", "bfd"))
def test_online_and_greedy_methods_pass_the_checker(method, gpus):
    servers, jobs = [(2, 8), (4, 16), (0, 8)], [(0.6, 1), (0.6, 1), (0.8, 1), (2, 4), (0.3, 1), (0, 2), (1, 1), (0.5, 1), (3, 1)]
    inst = from_document(doc(servers, jobs, gpus))
    got = FAMILY.run(inst, method, SolveOptions(seed=3), {"gpus": gpus})
    result = check(inst, got.decision, gpus)
    assert result.feasible, result.violations
    assert result.objective == got.report.objective


def test_fgd_keeps_a_gpu_whole_for_the_workload():
    """Two 2-GPU nodes, a workload of half shares and whole GPUs: FGD puts the second half share next
    to the first (no GPU left half empty) and so fits every job; random fit need not."""
    inst = from_document(doc([(2, 8), (2, 8)], [(0.5, 1), (0.5, 1), (1, 1), (1, 1), (1, 1)]))
    got = FAMILY.run(inst, "fgd", SolveOptions(), {"gpus": "per-gpu"})
    assert got.report.objective == 5


def test_alibaba_import_states_per_gpu_and_fgd_answers_it(run, tmp_path):
    from tests.test_import import fake_data

    out = tmp_path / "p.json"
    code, _text, err = run("import", "alibaba", "--problem", "packing", "--data", fake_data(tmp_path), "--set", "gpus=per-gpu", "-o", out)
    assert code == 0, err
    from mlsched_opt.io import load_instance

    inst = load_instance(out)
    assert inst.options == {"gpus": "per-gpu"} and "GPU by GPU (option gpus = per-gpu)" in inst.document["source"]
    code, text, _ = run("solve", out, "--method", "fgd")
    assert code == 0 and "check: ok" in text, text
