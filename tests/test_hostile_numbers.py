"""Numbers the schema's types and signs allow but whose use overflows, divides by (almost) zero or
sizes an allocation (the audit of hostile instance files).

Each is either refused where the instance is read, with exit 2 and one line naming the file and
the field (and `solve --out` writing nothing), or harmless: the answer is finite and `check`
agrees with it.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mlsched_opt.io import load_instance, read_document
from mlsched_opt.io.instance import Utility
from mlsched_opt.problems.hetero import timing
from mlsched_opt.problems.hetero.timing import compute_time
from mlsched_opt.problems.hetero.view import HeteroJob

from .conftest import ROOT

INSTANCES = ROOT / "instances"


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """A patch setting one dotted field (``jobs[0].utility.delay_scale``)."""
    keys: list[str | int] = []
    for part in path.replace("]", "").split("."):
        name, *index = part.split("[")
        keys += [name, *map(int, index)]

    def patch(doc: dict) -> None:
        node = doc
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return patch


def _every_utility(**fields: Any) -> Callable[[dict], None]:
    def patch(doc: dict) -> None:
        for job in doc["jobs"]:
            job["utility"].update(fields)

    return patch


def _utilities(**spec: Any) -> Callable[[dict], None]:
    def patch(doc: dict) -> None:
        for job in doc["jobs"]:
            job["utility"] = dict(spec)

    return patch


def _mutant(tmp_path: Path, base: str, patch: Callable[[dict], None], name: str = "mutant.json") -> Path:
    doc = copy.deepcopy(read_document(INSTANCES / base))
    patch(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _solution_for(run, tmp_path: Path, base: str, method: str, instance: Path) -> Path:
    """A checked solution of the bundled instance, re-addressed to ``instance`` (same decision)."""
    sol = tmp_path / "base.sol.json"
    code, _, err = run("solve", INSTANCES / base, "--method", method, "--no-bound", "--out", sol)
    assert code == 0, err
    doc = json.loads(sol.read_text())
    doc["instance"]["sha256"] = load_instance(instance).sha256
    out = tmp_path / "mutant.sol.json"
    out.write_text(json.dumps(doc))
    return out


def _one_error_line(err: str, file: Path, field: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"mlsched: error: {file}: {field}: "), err
    assert "Traceback" not in err


# --- refused where the instance is read ---------------------------------------------------------

LOADER_CASES = {
    # audit 1: 1e15 GPUs on one server: hetero expanded them into a list of 1e15 workers
    "hetero gpu 1e15": ("hetero-toy.toml", "greedy", _set("cluster.servers[0].capacity.gpu", 10**15),
                        "cluster.servers[0].capacity.gpu"),
    "hetero gpu 3e7": ("hetero-toy.toml", "greedy", _set("cluster.servers[0].capacity.gpu", 3 * 10**7),
                       "cluster.servers[0].capacity.gpu"),
    # audit 2: the candidate table of the integer split had rho_max / rho_min levels (72.8 TiB) ...
    "hetero rho 1e15": ("hetero-toy.toml", "greedy", _set("jobs[0].data_parallel.samples_per_s.V100", 1e15),
                        "jobs[0].data_parallel.samples_per_s.V100"),
    # ... an OverflowError in the int64 levels, and an infinite objective
    "hetero rho 1e-300": ("hetero-toy.toml", "greedy", _set("jobs[0].data_parallel.samples_per_s.V100", 1e-300),
                          "jobs[0].data_parallel.samples_per_s.V100"),
    "hetero rho 5e-324": ("hetero-toy.toml", "greedy", _set("jobs[0].data_parallel.samples_per_s.V100", 5e-324),
                          "jobs[0].data_parallel.samples_per_s.V100"),
    # audit 3: a table utility read values[-2**63]
    "oasis table delay_scale 5e-324": ("oasis-toy.toml", "fifo", _utilities(kind="table", values=[20, 20, 10], delay_scale=5e-324),
                                       "jobs[0].utility.delay_scale"),
    # audit 4: d / delay_scale = inf and gamma2 = 0: 0 * inf made every utility NaN
    "smd sigmoid delay_scale 5e-324": ("smd-toy.toml", "smd", _every_utility(delay_scale=5e-324, gamma2=0),
                                       "jobs[0].utility.delay_scale"),
    "oasis sigmoid delay_scale 5e-324": ("oasis-toy.toml", "fifo",
                                         _utilities(kind="sigmoid", gamma1=10, gamma2=0, gamma3=1, delay_scale=5e-324),
                                         "jobs[0].utility.delay_scale"),
    # capacity over a subnormal demand overflowed the task counts of packing, oasis and smd
    "packing demand 5e-324": ("demo.toml", "ffd", _set("jobs[0].demand.worker.cpu", 5e-324), "jobs[0].demand.worker.cpu"),
    "smd demand 1e-300": ("smd-toy.toml", "smd", _set("jobs[1].demand.worker.gpu", 1e-300), "jobs[1].demand.worker.gpu"),
    "harmony epochs 5e-324": ("harmony-toy.toml", "load-balance", _set("jobs[0].work.epochs", 5e-324), "jobs[0].work.epochs"),
}


@pytest.mark.parametrize("case", sorted(LOADER_CASES))
def test_a_hostile_number_is_refused_on_loading_naming_the_field(case, run, tmp_path):
    base, method, patch, field = LOADER_CASES[case]
    inst = _mutant(tmp_path, base, patch)
    code, _, err = run("validate", inst)
    assert code == 2
    _one_error_line(err, inst, field)
    out = tmp_path / "out.sol.json"
    code, _, err = run("solve", inst, "--method", method, "--no-bound", "--out", out)
    assert code == 2 and not out.exists()
    _one_error_line(err, inst, field)
    sol = _solution_for(run, tmp_path, base, method, INSTANCES / base)
    code, _, err = run("check", inst, sol)
    assert code == 2
    _one_error_line(err, inst, field)


def _two_million_gpus(doc: dict) -> None:
    for server in doc["cluster"]["servers"][:2]:
        server["capacity"]["gpu"] = 10**6


def test_hetero_refuses_more_gpus_than_it_places_before_expanding_them(run, tmp_path):
    """Each server within the schema's 1e6, but 2e6 workers in all: `validate` (which knows no
    family) accepts; hetero's solve and check refuse, naming the server that crosses the limit."""
    inst = _mutant(tmp_path, "hetero-toy.toml", _two_million_gpus)
    assert run("validate", inst)[0] == 0
    out = tmp_path / "out.sol.json"
    code, _, err = run("solve", inst, "--method", "greedy", "--out", out)
    assert code == 2 and not out.exists()
    _one_error_line(err, inst, "cluster.servers[1].capacity.gpu")
    code, _, err = run("check", inst, _solution_for(run, tmp_path, "hetero-toy.toml", "greedy", inst))
    assert code == 2
    _one_error_line(err, inst, "cluster.servers[1].capacity.gpu")


def test_hetero_refuses_a_batch_whose_sample_count_passes_2_53(run, tmp_path):
    inst = _mutant(tmp_path, "hetero-toy.toml", _set("jobs[1].global_batch_size", 2**53 // 2))
    code, _, err = run("solve", inst, "--method", "greedy")
    assert code == 2
    _one_error_line(err, inst, "jobs[1].global_batch_size")


def test_hetero_refuses_a_catalog_throughput_out_of_range_naming_the_override(run, tmp_path, catalog):
    """An override may make the catalog's samples/s (steps/s x batch) 1e22: the schema bounds
    `samples_per_s` given in the file, hetero the figures it takes from the catalog."""
    inst = tmp_path / "h.json"
    assert run("generate", "--problem", "hetero", "--jobs", "2", "--servers", "2", "--seed", "1", "-o", inst)[0] == 0
    doc = json.loads(inst.read_text())
    job = doc["jobs"][0]
    rows = catalog.lookup(job["model"], None, "model").data["throughput"]
    job["overrides"] = {"throughput": [dict(row, steps_per_s=2**53, batch_size=2**20) for row in rows]}
    inst.write_text(json.dumps(doc))
    code, _, err = run("solve", inst, "--method", "greedy")
    assert code == 2
    _one_error_line(err, inst, "jobs[0].overrides.throughput")


# --- allowed extremes are harmless ---------------------------------------------------------------

def _rates(v100: float, k80: float) -> Callable[[dict], None]:
    def patch(doc: dict) -> None:
        doc["jobs"][0]["data_parallel"]["samples_per_s"]["V100"] = v100
        doc["jobs"][1]["data_parallel"]["samples_per_s"]["K80"] = k80

    return patch


def _huge_capacity_tiny_demand(doc: dict) -> None:
    for server in doc["cluster"]["servers"]:
        server["capacity"] = {k: (10**6 if k == "gpu" else 2**53) for k in server["capacity"]}
    for job in doc["jobs"]:
        for task in job["demand"].values():
            for key in task:
                task[key] = 1e-9


HARMLESS_CASES = {
    # the widest throughput ratio the bounds allow (1e21): the level table is bounded by the samples left
    "hetero rho 1e12 vs 1e-9 greedy": ("hetero-toy.toml", "greedy", _rates(1e12, 1e-9)),
    "hetero rho 1e12 vs 1e-9 sampling": ("hetero-toy.toml", "sampling", _rates(1e12, 1e-9)),
    "hetero rho 1e12 vs 100 exact": ("hetero-toy.toml", "exact", _rates(1e12, 100)),
    # the smallest delay_scale allowed: delays of 1e9 and more, table and constant sigmoid
    "oasis table delay_scale 1e-9": ("oasis-toy.toml", "fifo", _utilities(kind="table", values=[20, 20, 10], delay_scale=1e-9)),
    "oasis sigmoid gamma2 0 delay_scale 1e-9": ("oasis-toy.toml", "fifo",
                                                _utilities(kind="sigmoid", gamma1=10, gamma2=0, gamma3=1, delay_scale=1e-9)),
    "smd sigmoid gamma2 0 delay_scale 1e-9": ("smd-toy.toml", "smd", _every_utility(gamma2=0, delay_scale=1e-9)),
    # a capacity of 2**53 over a demand of 1e-9 is 9e24 tasks: beyond int64, clipped, not wrapped
    "packing huge capacity tiny demand": ("demo.toml", "ffd", _huge_capacity_tiny_demand),
    "oasis huge capacity tiny demand": ("oasis-toy.toml", "fifo", _huge_capacity_tiny_demand),
    # a job of far less than one worker-slot (a 1e12 s slot) still runs one: the checker agrees
    "oasis slot of 1e12 s": ("oasis-toy.toml", "oasis", _set("time.slot_s", 1e12)),
}


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("case", sorted(HARMLESS_CASES))
def test_an_extreme_allowed_number_gives_a_finite_checked_answer(case, run, tmp_path):
    base, method, patch = HARMLESS_CASES[case]
    inst = _mutant(tmp_path, base, patch)
    out = tmp_path / "out.sol.json"
    code, stdout, err = run("solve", inst, "--method", method, "--no-bound", "--json", "--out", out)
    assert code == 0, err
    report = json.loads(stdout)
    assert report["status"] in ("optimal", "feasible"), report
    assert math.isfinite(report["objective"])
    code, stdout, err = run("check", inst, out)
    assert code == 0, stdout + err


def test_huge_capacity_tiny_demand_admits_every_packing_job(run, tmp_path):
    inst = _mutant(tmp_path, "demo.toml", _huge_capacity_tiny_demand)
    code, stdout, _ = run("solve", inst, "--method", "ffd", "--no-bound", "--json")
    assert code == 0
    assert json.loads(stdout)["objective"] == sum(job.weight for job in load_instance(inst).jobs)


# --- the evaluation itself -------------------------------------------------------------------------

@pytest.mark.parametrize("spec, delay, expected", [
    # d / delay_scale = 1e21 read values[-2**63] (IndexError); past the end of the table it is 0
    ({"kind": "table", "values": [3, 2, 1], "delay_scale": 1e-9}, 1e12, 0.0),
    ({"kind": "table", "values": [3, 2, 1], "delay_scale": 1e-9}, 1e290, 0.0),
    ({"kind": "table", "values": [3, 2, 1]}, 2.0, 1.0),
    # gamma2 = 0 is the constant gamma1 / 2 and slope = 0 the constant value, even at an infinite delay
    ({"kind": "sigmoid", "gamma1": 10, "gamma2": 0, "gamma3": 1}, math.inf, 5.0),
    ({"kind": "linear", "value": 7, "slope": 0}, math.inf, 7.0),
    ({"kind": "sigmoid", "gamma1": 10, "gamma2": 2, "gamma3": 1}, math.inf, 0.0),
])
def test_a_utility_is_finite_at_any_delay(spec, delay, expected):
    assert Utility.parse(spec)(delay) == expected


def _splits(total: int, parts: int):
    """Every way to write ``total`` as ``parts`` non-negative integers."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _splits(total - first, parts - 1):
            yield (first, *rest)


def _job(rho, batch):
    rho = np.asarray(rho, dtype=float)
    return HeteroJob(0, "x", rho, batch, 1.0, None, 0.0, np.full(len(rho), 1 << 40), (1, len(rho)))


def _best_split(rho, n, batch) -> float:
    workers = [r for r, k in zip(rho, n) for _ in range(k)]
    return min(max(b / r for b, r in zip(split, workers)) for split in _splits(batch, len(workers)))


@settings(max_examples=80, deadline=None)
@given(exponents=st.lists(st.integers(-2, 3), min_size=1, max_size=3), counts=st.lists(st.integers(0, 2), min_size=3, max_size=3),
       batch=st.integers(1, 15))
def test_integer_split_is_exact_when_the_level_table_is_cut(exponents, counts, batch):
    """Throughput ratios up to 1e5 with a few workers: far more levels than samples left, so the
    table is cut at the samples left; the time is still the best integer split, by brute force."""
    rho = [10.0 ** e for e in exponents]
    n = counts[: len(rho)]
    if not any(n):
        n[0] = 1
    assert compute_time(_job(rho, batch), np.array([n], dtype=np.int64))[0] == pytest.approx(_best_split(rho, n, batch), rel=1e-9)


@pytest.mark.parametrize("rho, n", [
    ([1e12, 1e-9], [1, 1]), ([1e12, 1e-9], [0, 2]), ([1e-9, 1e12], [2, 1]), ([1e12, 1e-9, 3.0], [1, 1, 1]), ([1e12, 1e-9, 3.0], [0, 1, 2]),
])
def test_integer_split_is_exact_at_the_widest_throughput_ratio(rho, n):
    """1e12 and 1e-9 samples/s: a ratio of 1e21 is beyond int64 as a level count, and Pi rho_c / X
    of a class a row does not use is beyond int64 as a sample count."""
    for batch in (1, 7, 600):
        best = _best_split(rho, n, batch) if batch < 100 else None
        t = compute_time(_job(rho, batch), np.array([n], dtype=np.int64))[0]
        assert np.isfinite(t) and (best is None or t == pytest.approx(best, rel=1e-9))


def test_many_rows_are_timed_in_bounded_blocks_with_the_same_answer(monkeypatch):
    job = _job([300.0, 200.0, 7.0], 600)
    n = np.array(list(itertools.product(range(4), repeat=3))[1:], dtype=np.int64)
    whole = compute_time(job, n)
    monkeypatch.setattr(timing, "LEVEL_BLOCK", 16)
    assert np.array_equal(compute_time(job, n), whole)
