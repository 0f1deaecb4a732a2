"""``mlsched import philly|pollux --problem harmony``: real jobs in, every method out, provenance kept.

Tests on the real traces take the ``data_dir`` fixture (they skip, saying why, without
../shared/data); the shape and error tests build tiny trace files in a temporary folder.  ``drl``
needs PyTorch (the ``rl`` extra) and runs only where it is installed.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mlsched_opt.io import load_instance
from mlsched_opt.problems import get_family
from mlsched_opt.problems.harmony.placements import standalone_speeds
from mlsched_opt.problems.harmony.view import view_of
from tests.conftest import import_and_solve, write_data

TORCH = importlib.util.find_spec("torch") is not None
ALL = [m for m in get_family("harmony").methods if m != "drl" or TORCH]
ONLINE = [m for m in ALL if m not in ("exact", "surrogate")]   # the static-batch methods need every arrival in interval 0
PHILLY = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 06:13:03,2951.0,4,2951.0,b\n" \
         "2017-10-09 07:20:00,1200.0,16,19200.0,c\n"
POLLUX = "name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,2,256\nbert-1,110,bert,1,12\nimagenet-2,900,imagenet,8,64\n"


def fake(tmp_path: Path) -> Path:
    return write_data(tmp_path, {"philly/philly_jobs.csv": PHILLY, "pollux/workloads/workload-1.csv": POLLUX})


# --- on the real traces -----------------------------------------------------------------------------------------


def test_philly_static_batch_every_method(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "philly", "harmony", ALL, "--jobs", "3", "--servers", "2", "--seed", "0",
                           "--set", "static=true")
    src = load_instance(out).document["source"]
    for said in ("philly/philly_jobs.csv, jobs", "of its 549 GPU nodes of the most common shape", "static=true",
                 "the harmony family assumes identical servers", "capped at max_workers 4", "trains for its real duration"):
        assert said in src, said
    code, text, _ = run("solve", out, "--method", "exact")
    assert code == 0 and "optimal" in text


def test_pollux_on_gavel_cluster_gavel_world(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "pollux", "harmony", ["exact", "surrogate", "myopic", "load-balance", "least-interference"],
                           "--jobs", "3", "--servers", "2", "--set", "cluster=gavel", "--set", "world=gavel",
                           "--set", "static=true", "--set", "max_workers=2", "--set", "start=100")
    inst = load_instance(out)
    assert inst.document["options"] == {"world": "gavel"}
    assert "Gavel's simulated cluster" in inst.document["source"] and "median GPU time of the Philly jobs" in inst.document["source"]
    with open(data_dir / "pollux/workloads/workload-1.csv", newline="") as fh:
        apps = {r["name"]: r["application"] for r in csv.DictReader(fh)}
    for job in inst.jobs:   # Gavel's fitted world has ResNet-18 (Pollux's cifar10) and ResNet-50 (imagenet)
        keep = {"cifar10": "resnet18", "imagenet": "resnet50"}.get(apps[job.id])
        assert keep is None or job.model == keep


def test_philly_real_arrivals_online_methods(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "philly", "harmony", ONLINE, "--jobs", "6", "--servers", "2", "--seed", "5",
                           "--set", "cluster=pollux", "--set", "start=50000")
    inst = load_instance(out)
    assert "arrivals: real submit times, slot = floor(t / 300 s)" in inst.document["source"]
    assert [j.arrival_slot for j in inst.jobs] == [0, 0, 1, 3, 5, 7]   # the window's submit times, 300 s intervals
    code, _, err = run("solve", out, "--method", "surrogate")
    assert code == 2 and "static batch" in err, err
    code, text, err = run("solve", out, "--method", "exact", "--json")   # anytime beyond static batches (issue 32)
    assert code == 0 and json.loads(text)["status"] == "feasible", err


def test_approximation_solves_a_larger_import(run, tmp_path, data_dir):
    out = tmp_path / "big.toml"
    code, _, err = run("import", "philly", "--problem", "harmony", "--jobs", "200", "--servers", "12", "--seed", "4", "-o", out)
    assert code == 0, err
    for method in ["load-balance"] + (["drl"] if TORCH else []):
        code, text, err = run("solve", out, "--method", method, "--time-limit", "120")
        assert code == 0 and "check: ok" in text, text + err


def test_arrivals_gpus_and_work_are_the_csv_rows(run, tmp_path, data_dir):
    out = tmp_path / "p.toml"
    code, _, err = run("import", "philly", "--problem", "harmony", "--jobs", "40", "--servers", "4", "--set", "start=7000", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert "jobs 7,001..7,040 of 82,247" in inst.document["source"]
    rows = {}
    with open(data_dir / "philly/philly_jobs.csv", newline="") as fh:
        for row, rec in enumerate(csv.reader(fh), start=1):
            if row > 1 and rec:
                rows[row] = (datetime.fromisoformat(rec[0]).replace(tzinfo=UTC).timestamp(), float(rec[1]), int(rec[2]))
    order = sorted(rows, key=lambda r: (rows[r][0], r))
    assert [int(j.id.split("-")[1]) for j in inst.jobs] == order[7000:7040]
    picked = [rows[int(j.id.split("-")[1])] for j in inst.jobs]
    view = view_of(inst, {"world": "default"})
    alone = standalone_speeds(view)
    for k, (job, (t, duration, gpus)) in enumerate(zip(inst.jobs, picked)):
        assert job.arrival_slot == math.floor((t - picked[0][0]) / 300)
        assert job.workers.hi == max(1, min(gpus, 4))
        samples = job.work["epochs"] * job.work["samples_per_epoch"]
        assert samples == pytest.approx(max(1.0, alone[k] * duration), rel=0.01, abs=job.work["epochs"])
        assert job.work["epochs"] == max(1, round(duration / 300))
    assert f"{sum(g > 4 for _, _, g in picked)} of 40 jobs capped" in inst.document["source"]


# --- on tiny files (no real data needed) -------------------------------------------------------------------------


def test_small_files_pollux_types_kept_or_redrawn(run, tmp_path):
    out = tmp_path / "p.toml"
    code, _, err = run("import", "pollux", "--problem", "harmony", "--data", fake(tmp_path), "--set", "cluster=pollux",
                       "--servers", "2", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert [j.id for j in inst.jobs] == ["cifar10-0", "bert-1", "imagenet-2"]
    models = [j.model for j in inst.jobs]
    assert models[2] == "resnet50" and models[0] != "resnet18" and models[1] != "bert"   # default world: ResNet-50 only
    assert "where this family can use them (not: bert x1; resnet18 x1), else drawn uniformly" in inst.document["source"]
    assert [j.workers.hi for j in inst.jobs] == [2, 1, 4]   # imagenet's 8 replicas capped at max_workers 4
    assert [j.arrival_slot for j in inst.jobs] == [0, 0, 2]
    code, text, err = run("solve", out, "--method", "load-balance")
    assert code == 0 and "check: ok" in text, text + err


def test_small_files_static_batch_is_exact(run, tmp_path):
    out = tmp_path / "p.toml"
    code, _, err = run("import", "philly", "--problem", "harmony", "--data", fake(tmp_path), "--set", "cluster=gavel",
                       "--servers", "2", "--set", "static=true", "--set", "max_workers=2", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert {j.arrival_slot for j in inst.jobs} == {0} and inst.slots == 1
    for method in ("exact", "surrogate"):
        code, text, err = run("solve", out, "--method", method)
        assert code == 0 and "check: ok" in text, (method, text + err)


def test_bad_options_are_user_errors(run, tmp_path):
    data = fake(tmp_path)
    out = tmp_path / "x.toml"
    for args, says in [(("--slots", "1"), "more than --slots 1"),
                       (("--set", "world=mars"), "world must be one of"),
                       (("--set", "max_workers=0"), "max_workers"),
                       (("--set", "static=maybe"), "static must be true or false")]:
        code, _, err = run("import", "philly", "--problem", "harmony", "--data", data, "--set", "cluster=gavel", *args, "-o", out)
        assert code == 2 and says in err, (args, err)
        assert not out.exists()


def test_servers_too_small_for_one_worker_are_one_clear_error(run, tmp_path):
    data = fake(tmp_path)
    nodes = data / "alibaba_openb/openb_node_list_all_node.csv"
    nodes.parent.mkdir(parents=True)
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,1000,2048,1,T4\nn1,1000,2048,1,T4\nn2,96000,393216,8,G2\n")
    out = tmp_path / "x.toml"
    code, _, err = run("import", "philly", "--problem", "harmony", "--data", data, "-o", out)
    assert code == 2 and "fit no server of this cluster" in err, err   # the most common shape (two nodes) is too small
    assert not out.exists()
