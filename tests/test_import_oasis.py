"""``mlsched import philly|pollux --problem oasis`` on the real traces (skipped without ../shared/data)."""

from __future__ import annotations

import csv
import math
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from mlsched_opt.io import load_instance
from mlsched_opt.problems import check_solution, get_family
from mlsched_opt.solvers import SolveOptions
from mlsched_opt.traces.sources import POLLUX_CLASSES
from tests.conftest import import_and_solve

METHODS = list(get_family("oasis").methods)  # exact, oasis and the four baselines


def philly_rows(data: Path) -> list[tuple[int, datetime, float, int]]:
    """(row, submit time, duration, GPUs) of every Philly job in submission order (ties by row)."""
    with open(data / "philly" / "philly_jobs.csv", newline="") as fh:
        rows = [(n, datetime.strptime(r["timestamp"], "%Y-%m-%d %H:%M:%S"), float(r["duration"]), int(r["num_gpus"]))
                for n, r in enumerate(csv.DictReader(fh), start=2)]
    return sorted(rows, key=lambda r: (r[1], r[0]))


def test_philly_small_import_solves_with_every_method(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "philly", "oasis", METHODS,
                           "--data", data_dir, "--jobs", "5", "--servers", "3", "--seed", "1")
    inst = load_instance(out)
    roles = {s.role for s in inst.servers}
    assert roles == {"worker", "ps"}
    assert all(s.capacity.get("gpu", 0) > 0 for s in inst.servers if s.role == "worker")
    assert all(s.capacity.get("gpu", 0) == 0 for s in inst.servers if s.role == "ps")   # Alibaba's CPU-only nodes
    src = inst.document["source"]
    assert "CPU-only nodes" in src and "philly/philly_jobs.csv" in src and "--seed 1" in src


def test_pollux_on_gavel_cluster_solves_with_every_method(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "pollux", "oasis", METHODS, "--data", data_dir, "--jobs", "5", "--servers", "3",
                           "--seed", "1", "--set", "cluster=gavel")
    inst = load_instance(out)
    src = inst.document["source"]
    assert "Gavel's simulated cluster" in src and "c4.8xlarge" in src and "median GPU time" in src
    assert [j.model for j in inst.jobs] == ["ncf", "ncf", "resnet18", "resnet18", "bert"]
    # 16 replicas on 3 servers of 4 GPUs: capped, and said so
    capped = [j for j in inst.document["jobs"] if "capped" in j["description"]]
    assert capped and "capped to the most workers" in src
    assert all(j.workers.hi <= 12 for j in inst.jobs)


def test_larger_philly_import_solves_with_oasis(run, tmp_path, data_dir):
    out = tmp_path / "big.toml"
    code, _, err = run("import", "philly", "--problem", "oasis", "--data", data_dir, "--jobs", "200", "--servers", "20",
                       "--seed", "3", "-o", out)
    assert code == 0, err
    code, text, err = run("solve", out, "--method", "oasis")
    assert code == 0 and "check: ok" in text, text + err


def test_arrivals_gpus_and_durations_are_the_trace_rows(run, tmp_path, data_dir):
    start, count = 40_000, 30
    out = tmp_path / "w.toml"
    code, _, err = run("import", "philly", "--problem", "oasis", "--data", data_dir, "--jobs", str(count), "--servers", "40",
                       "--seed", "2", "--set", f"start={start}", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert f"jobs {start + 1:,}..{start + count:,} of 82,247" in inst.document["source"]
    rows = philly_rows(data_dir)[start:start + count]
    assert [j.id for j in inst.jobs] == [f"philly-{r[0]}" for r in rows]
    t0 = rows[0][1]
    slots = [int((r[1] - t0).total_seconds() // 3600) for r in rows]
    assert [j.arrival_slot for j in inst.jobs] == slots
    assert inst.slots == slots[-1] + 10
    for job, doc, (_, _, duration, gpus) in zip(inst.jobs, inst.document["jobs"], rows):
        n = doc["work"]["chunks"]
        assert n == job.workers.hi <= gpus
        if n == gpus:
            assert "capped" not in doc["description"]
        step = doc["step"]
        minibatch = step["compute_s"] + 2 * step["gradient_mb"] * 8 / 1000 / doc["demand"]["worker"]["bandwidth_gbps"]
        run_s = doc["work"]["epochs"] * doc["work"]["minibatches_per_chunk"] * minibatch
        # at its worker cap the job runs its real GPU time (to half a mini-batch per epoch)
        target = gpus * duration / n
        assert abs(run_s - target) <= doc["work"]["epochs"] * minibatch / 2 + 1e-6 or doc["work"]["minibatches_per_chunk"] == 1
        assert doc["work"]["epochs"] == max(1, math.ceil(target / 3600 - 1e-9))


def test_pollux_class_medians_are_those_of_the_philly_trace(data_dir):
    with open(data_dir / "philly" / "philly_jobs.csv", newline="") as fh:
        pairs = np.array([(float(r["duration"]), float(r["gpu_time"])) for r in csv.DictReader(fh)])
    duration, gpu_time = pairs[:, 0], pairs[:, 1]
    keep = (duration >= 60) & (gpu_time < 1000 * 3600)   # Pollux's filters (simulator/workload.py)
    for _, _, lo, hi, hours in POLLUX_CLASSES:
        chosen = gpu_time[keep & (gpu_time >= lo * 3600) & (gpu_time < hi * 3600)]
        assert np.median(chosen) / 3600 == pytest.approx(hours, abs=1e-6)


def test_same_arguments_same_file_and_the_seed_matters(run, tmp_path, data_dir):
    files = []
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        out = tmp_path / f"{name}.toml"
        code, _, err = run("import", "pollux", "--problem", "oasis", "--data", data_dir, "--jobs", "20", "--servers", "4",
                           "--seed", seed, "--set", "cluster=pollux", "-o", out)
        assert code == 0, err
        files.append(out.read_bytes())
    assert files[0] == files[1] and files[0] != files[2]


def test_windows_the_family_cannot_hold_are_user_errors(run, tmp_path, data_dir):
    out = tmp_path / "x.toml"
    # 7,000 slots x 1,523 servers x 5 resources: the per-slot arrays, whatever the job count
    code, _, err = run("import", "philly", "--problem", "oasis", "--data", data_dir, "--jobs", "50", "--slots", "7000",
                       "--seed", "1", "-o", out)
    assert code == 2 and "per-slot cells" in err and "--servers" in err, err
    code, _, err = run("import", "philly", "--problem", "oasis", "--data", data_dir, "--jobs", "5", "--set", "slot_s=1", "-o", out)
    assert code == 2 and "slot_s" in err, err
    code, _, err = run("import", "philly", "--problem", "oasis", "--data", data_dir, "--jobs", "50", "--servers", "3",
                       "--slots", "1", "--set", "start=0", "-o", out)
    assert code == 2 and "--slots" in err, err
    assert not out.exists()


@pytest.mark.slow
def test_2000_jobs_on_the_alibaba_cluster_solve_check_and_are_bounded(run, tmp_path, data_dir, monkeypatch):
    """Issue 18: the production-size window (2,000 jobs, 1,523 servers) imports, OASiS answers, the
    checker accepts, and the window capacity bound is above the answer (schedules are sparse: the
    dense per-job tables of before needed 2.6 GB here)."""
    out = tmp_path / "big.json"
    code, _, err = run("import", "philly", "--problem", "oasis", "--data", data_dir, "--jobs", "2000", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert len(inst.jobs) == 2000 and len(inst.servers) == 1523
    family = get_family("oasis")
    sol = family.run(inst, "oasis", SolveOptions(time_limit=600))
    check = check_solution(inst, sol)
    assert sol.report.status == "feasible" and check.feasible
    assert check.objective == pytest.approx(sol.report.objective)
    bound = family.lp_bound(inst, family.parse_options({}), SolveOptions(time_limit=600))
    assert bound.status == "optimal" and bound.objective >= check.objective
