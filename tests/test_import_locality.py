"""``mlsched import philly|pollux --problem locality``: real jobs in, every method out, provenance kept.

Tests on the real traces take the ``data_dir`` fixture (they skip, saying why, without
../shared/data); the error and shape tests build tiny trace files in a temporary folder.
"""

from __future__ import annotations

import csv
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mlsched_opt.io import load_instance
from mlsched_opt.problems import get_family
from mlsched_opt.problems.locality.view import locality_view
from tests.conftest import import_and_solve, write_data

METHODS = list(get_family("locality").methods)
PHILLY = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 06:13:03,2951.0,4,2951.0,b\n" \
         "2017-10-09 07:20:00,1200.0,16,19200.0,c\n"
POLLUX = "name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,2,256\nbert-1,110,bert,1,12\nncf-2,900,ncf,4,64\n"


def fake(tmp_path: Path) -> Path:
    return write_data(tmp_path, {"philly/philly_jobs.csv": PHILLY, "pollux/workloads/workload-1.csv": POLLUX})


def philly_rows(data_dir: Path) -> dict[int, tuple[float, float, int]]:
    """Row number (header = 1) -> (submit time s, duration s, GPUs) of the Philly CSV."""
    out = {}
    with open(data_dir / "philly/philly_jobs.csv", newline="") as fh:
        for row, rec in enumerate(csv.reader(fh), start=1):
            if row == 1 or not rec:
                continue
            stamp = datetime.fromisoformat(rec[0]).replace(tzinfo=UTC).timestamp()
            out[row] = (stamp, float(rec[1]), int(rec[2]))
    return out


# --- on the real traces -----------------------------------------------------------------------------------------


def test_philly_on_alibaba_nodes_every_method(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "philly", "locality", METHODS, "--jobs", "5", "--servers", "3", "--seed", "1")
    src = load_instance(out).document["source"]
    for said in ("philly/philly_jobs.csv, jobs", "3 drawn with seed 1 of its 1,213 GPU nodes", "1-GPU V100 throughput",
                 "w_max: the trace's GPU count, capped at", "V = w_max x q_in x duration / slot_s", "fan-in drawn"):
        assert said in src, said
    code, text, _ = run("solve", out, "--method", "exact")
    assert code == 0 and "optimal" in text


def test_pollux_on_pollux_cluster_calibrated_every_method(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "pollux", "locality", METHODS, "--jobs", "6", "--servers", "2", "--seed", "2",
                           "--set", "cluster=pollux", "--set", "calibration=pollux", "--set", "start=40")
    inst = load_instance(out)
    src = inst.document["source"]
    assert "1-GPU T4 throughput" in src and "Pollux's testbed" in src and "median GPU time of the Philly jobs" in src
    assert "calibration=pollux" in src
    # the trace's own models where the catalog can express them on T4 (cifar10 -> resnet18, imagenet -> resnet50, bert)
    with open(data_dir / "pollux/workloads/workload-1.csv", newline="") as fh:
        apps = {r["name"]: r for r in csv.DictReader(fh)}
    keep = {"cifar10": "resnet18", "imagenet": "resnet50", "bert": "bert"}
    for job in inst.jobs:
        app = apps[job.id]["application"]
        if app in keep:
            assert job.model == keep[app]
        assert job.workers.hi == min(int(apps[job.id]["num_replicas"]), 8)


def test_philly_on_gavel_cluster_fit_arrivals(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "philly", "locality", ["exact", "greedy-rr", "pd-rr"], "--jobs", "6", "--servers", "2",
                           "--slots", "6", "--set", "cluster=gavel", "--set", "arrivals=fit", "--set", "max_workers=4")
    inst = load_instance(out)
    assert inst.slots == 6 and max(j.arrival_slot for j in inst.jobs) == 2   # the first half of the horizon
    assert "Gavel's simulated cluster" in inst.document["source"] and "arrivals=fit" in inst.document["source"]


def test_approximation_solves_a_larger_import(run, tmp_path, data_dir):
    out = tmp_path / "big.toml"
    code, _, err = run("import", "philly", "--problem", "locality", "--jobs", "200", "--servers", "20", "--seed", "4", "-o", out)
    assert code == 0, err
    code, text, err = run("solve", out, "--method", "greedy-rr", "--time-limit", "120")
    assert code == 0 and "check: ok" in text, text + err


def test_arrivals_gpus_and_work_are_the_csv_rows(run, tmp_path, data_dir):
    out = tmp_path / "p.toml"
    code, _, err = run("import", "philly", "--problem", "locality", "--jobs", "40", "--servers", "4", "--set", "start=5000",
                       "--set", "max_workers=4", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert "jobs 5,001..5,040 of 82,247" in inst.document["source"]
    rows = philly_rows(data_dir)
    picked = [rows[int(j.id.split("-")[1])] for j in inst.jobs]
    t0 = picked[0][0]
    assert [p[0] for p in picked] == sorted(p[0] for p in picked)   # submission order
    # the window is the 5,001st..5,040th job by submit time (ties by row)
    order = sorted(rows, key=lambda r: (rows[r][0], r))
    assert [int(j.id.split("-")[1]) for j in inst.jobs] == order[5000:5040]
    view = locality_view(inst)
    gpus_total = sum(s.capacity["gpu"] for s in inst.servers)
    for job, lj, (t, duration, gpus) in zip(inst.jobs, view.jobs, picked):
        assert job.arrival_slot == math.floor((t - t0) / 600)
        assert job.workers.hi == max(1, min(gpus, 4, gpus_total))
        want = max(1, round(job.workers.hi * lj.q_in * duration / 600))
        assert job.work["samples_per_epoch"] == pytest.approx(want, rel=1e-6, abs=1)
    capped = sum(g > 4 for _, _, g in picked)
    assert f"{capped} of 40 jobs capped" in inst.document["source"]


def test_seed_moves_the_window_and_the_draws(run, tmp_path, data_dir):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    for out, seed in ((a, "1"), (b, "2")):
        assert run("import", "philly", "--problem", "locality", "--jobs", "5", "--servers", "3", "--seed", seed, "-o", out)[0] == 0
    assert a.read_bytes() != b.read_bytes()


# --- on tiny files (no real data needed) -------------------------------------------------------------------------


def test_small_files_pollux_models_kept_or_redrawn(run, tmp_path):
    data = fake(tmp_path)
    out = tmp_path / "p.toml"
    code, _, err = run("import", "pollux", "--problem", "locality", "--data", data, "--set", "cluster=gavel", "--servers", "2", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert [j.id for j in inst.jobs] == ["cifar10-0", "bert-1", "ncf-2"]
    assert inst.jobs[0].model == "resnet18" and inst.jobs[1].model != "bert" and inst.jobs[2].model != "ncf"
    assert "where this family can use them (not: bert x1; ncf x1), else drawn uniformly" in inst.document["source"]
    assert [j.arrival_slot for j in inst.jobs] == [0, 0, 1]   # 0, 3 and 793 s after the first, slots of 600 s
    code, text, err = run("solve", out, "--method", "exact")
    assert code == 0 and "check: ok" in text, text + err


def test_small_files_philly_caps_workers_at_the_cluster(run, tmp_path):
    data = fake(tmp_path)
    out = tmp_path / "p.toml"
    code, _, err = run("import", "philly", "--problem", "locality", "--data", data, "--set", "cluster=pollux", "--servers", "1",
                       "--set", "max_workers=64", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert [j.workers.hi for j in inst.jobs] == [4, 1, 4]   # 4, 1 and 16 GPUs on one 4-GPU node
    assert "capped at 4 (max_workers 64, 4 GPUs in the cluster): 1 of 3 jobs capped" in inst.document["source"]


def test_bad_options_are_user_errors(run, tmp_path):
    data = fake(tmp_path)
    out = tmp_path / "x.toml"
    for args, says in [(("--slots", "1"), "more than --slots 1"),
                       (("--set", "max_workers=0"), "max_workers"),
                       (("--set", "gpu_model=H100"), "gpu_model must be one of")]:
        code, _, err = run("import", "philly", "--problem", "locality", "--data", data, "--set", "cluster=gavel", *args, "-o", out)
        assert code == 2 and says in err, (args, err)
        assert not out.exists()


def test_jobs_that_fit_no_machine_are_one_clear_error(run, tmp_path):
    data = fake(tmp_path)
    nodes = data / "alibaba_openb/openb_node_list_all_node.csv"
    nodes.parent.mkdir(parents=True)
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,1000,2048,1,T4\nn1,64000,262144,0,\n")
    out = tmp_path / "x.toml"
    code, _, err = run("import", "philly", "--problem", "locality", "--data", data, "-o", out)
    assert code == 2 and "fits on no machine of this cluster" in err, err
    assert not out.exists()
