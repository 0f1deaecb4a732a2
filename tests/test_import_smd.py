"""``mlsched import philly|pollux --problem smd`` on the real traces (skipped without ../shared/data)."""

from __future__ import annotations

import csv
import math
from datetime import datetime
from pathlib import Path

import pytest

from mlsched_opt.io import load_catalog, load_instance
from mlsched_opt.problems import get_family
from mlsched_opt.traces.mapping import one_gpu_row
from mlsched_opt.traces.sources import POLLUX_GPU_HOURS
from tests.conftest import import_and_solve

METHODS = list(get_family("smd").methods)  # exact, smd, esw, optimus


def philly_rows(data: Path) -> list[tuple[int, float, int]]:
    """(row, duration, GPUs) of every Philly job in submission order (ties by row)."""
    with open(data / "philly" / "philly_jobs.csv", newline="") as fh:
        rows = [(datetime.strptime(r["timestamp"], "%Y-%m-%d %H:%M:%S"), n, float(r["duration"]), int(r["num_gpus"]))
                for n, r in enumerate(csv.DictReader(fh), start=2)]
    return [(n, d, g) for _, n, d, g in sorted(rows)]


def test_philly_small_import_solves_with_every_method(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "philly", "smd", METHODS,
                           "--data", data_dir, "--jobs", "5", "--servers", "3", "--seed", "1")
    inst = load_instance(out)
    assert inst.slots is None
    src = inst.document["source"]
    assert "one interval" in src and "philly/philly_jobs.csv" in src and "servers' total" in src


def test_pollux_on_pollux_cluster_solves_with_every_method(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "pollux", "smd", METHODS, "--data", data_dir, "--jobs", "6", "--servers", "3",
                           "--seed", "2", "--set", "cluster=pollux")
    inst = load_instance(out)
    assert "Pollux's testbed" in inst.document["source"]
    assert sum(s.capacity["gpu"] for s in inst.servers) == 12
    with open(data_dir / "pollux" / "workloads" / "workload-1.csv", newline="") as fh:
        by_name = {r["name"]: r for r in csv.DictReader(fh)}
    catalog = load_catalog()
    for job, doc in zip(inst.jobs, inst.document["jobs"]):
        row = by_name[job.id]
        replicas, batch = int(row["num_replicas"]), int(row["batch_size"])
        assert doc["global_batch_size"] == batch and doc["local_batch_size"] == math.ceil(batch / replicas)
        assert doc["limit"]["gpu"] == min(replicas, 12)
        ref = one_gpu_row(catalog[job.model])
        per_iteration = batch if doc["sgd"] == "sync" else doc["local_batch_size"]
        samples = POLLUX_GPU_HOURS[job.model] * 3600 * ref["steps_per_s"] * ref["batch_size"]
        assert doc["work"]["iterations"] == max(1, round(samples / per_iteration))


def test_larger_philly_import_solves_with_smd(run, tmp_path, data_dir):
    out = tmp_path / "big.toml"
    code, _, err = run("import", "philly", "--problem", "smd", "--data", data_dir, "--jobs", "200", "--servers", "30",
                       "--seed", "3", "-o", out)
    assert code == 0, err
    code, text, err = run("solve", out, "--method", "smd")
    assert code == 0 and "check: ok" in text, text + err


def test_gpu_counts_capacity_and_work_are_the_trace_rows(run, tmp_path, data_dir):
    start, count = 50_000, 40
    out = tmp_path / "w.toml"
    code, _, err = run("import", "philly", "--problem", "smd", "--data", data_dir, "--jobs", str(count), "--servers", "12",
                       "--seed", "4", "--set", f"start={start}", "--set", "sgd=sync", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert f"jobs {start + 1:,}..{start + count:,} of 82,247" in inst.document["source"]
    rows = philly_rows(data_dir)[start:start + count]
    assert [j.id for j in inst.jobs] == [f"philly-{r[0]}" for r in rows]
    # the capacity is the named nodes' real total
    with open(data_dir / "alibaba_openb" / "openb_node_list_all_node.csv", newline="") as fh:
        nodes = {r["sn"]: r for r in csv.DictReader(fh)}
    assert sum(s.capacity["gpu"] for s in inst.servers) == sum(int(nodes[s.name]["gpu"]) for s in inst.servers)
    assert sum(s.capacity["cpu"] for s in inst.servers) == pytest.approx(sum(int(nodes[s.name]["cpu_milli"]) / 1000 for s in inst.servers))
    total_gpu = sum(s.capacity["gpu"] for s in inst.servers)
    catalog = load_catalog()
    for job, doc, (_, duration, gpus) in zip(inst.jobs, inst.document["jobs"], rows):
        assert doc["sgd"] == "sync"
        assert doc["limit"]["gpu"] == min(gpus, doc["limit"]["gpu"]) and doc["limit"]["gpu"] <= total_gpu
        if gpus <= total_gpu // 2:
            assert doc["limit"]["gpu"] == gpus
        ref = one_gpu_row(catalog[job.model])
        assert doc["global_batch_size"] == ref["batch_size"] * gpus
        samples = gpus * duration * ref["steps_per_s"] * ref["batch_size"]
        assert doc["work"]["iterations"] == max(1, round(samples / doc["global_batch_size"]))


def test_same_arguments_same_file_and_the_seed_matters(run, tmp_path, data_dir):
    files = []
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        out = tmp_path / f"{name}.toml"
        code, _, err = run("import", "pollux", "--problem", "smd", "--data", data_dir, "--jobs", "20", "--servers", "4",
                           "--seed", seed, "--set", "workload=3", "--set", "cluster=gavel", "-o", out)
        assert code == 0, err
        files.append(out.read_bytes())
    assert files[0] == files[1] and files[0] != files[2]


def test_what_smd_cannot_take_is_a_user_error(run, tmp_path, data_dir):
    out = tmp_path / "x.toml"
    code, _, err = run("import", "philly", "--problem", "smd", "--data", data_dir, "--jobs", "5", "--slots", "4", "-o", out)
    assert code == 2 and "no slots" in err, err
    code, _, err = run("import", "philly", "--problem", "smd", "--data", data_dir, "--jobs", "5", "--set", "sgd=both", "-o", out)
    assert code == 2 and "sgd" in err, err
    assert not out.exists()
