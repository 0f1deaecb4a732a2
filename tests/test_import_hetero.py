"""``mlsched import alibaba|philly|pollux --problem hetero``: real traces as hetero instances.

Tests that read the real traces take the ``data_dir`` fixture (skipped without ../shared/data);
the error cases use a tiny data folder made here.
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from mlsched_opt.io import load_catalog, load_instance
from mlsched_opt.problems import get_family
from mlsched_opt.problems.base import GenerateSpec
from mlsched_opt.problems.hetero.alibaba import SPEEDS, mapped_throughputs
from mlsched_opt.problems.hetero.generate import WORKLOADS
from mlsched_opt.problems.hetero.view import hetero_view
from mlsched_opt.solvers import SolveOptions
from tests.conftest import import_and_solve, write_data

FAMILY = get_family("hetero")
#: every method but brute-force ((S+1)^K assignments, K <= 10), which runs on the 8-GPU imports
#: below.  random and sampling draw job sizes within the trace's GPU counts (mostly 1), where
#: uniform draws over all categories are nearly all rejected (scheme.sample_categories falls back)
ON_REAL_NODES = ["exact", "sampling", "sampling-ls", "market", "bundles", "greedy", "random", "equal-share", "no-balance"]
EVERY = sorted(FAMILY.methods)
ALIBABA_GPUS = {"G2": 4392, "T4": 842, "G3": 312, "P100": 265, "V100M32": 204, "V100M16": 195, "A10": 2}


def _source(path: Path) -> str:
    return load_instance(path).document["source"]


def test_every_method_is_tested():
    assert set(EVERY) == set(ON_REAL_NODES) | {"brute-force"}


def test_size_draws_stay_within_trace_bounds():
    from mlsched_opt.problems.hetero.scheme import _bounded_draw

    rng = np.random.default_rng(0)
    lo, hi = np.array([1, 1, 2, 1]), np.array([1, 4, 2, 8])
    for idle in (True, False):
        for _ in range(200):
            sizes = _bounded_draw(lo, hi, 9, idle, rng)
            assert (sizes >= lo).all() and (sizes <= hi).all() and sizes.sum() <= 9
            assert idle or sizes.sum() == 9
    assert _bounded_draw(lo, hi, 4, True, rng) is None  # the minimums alone need 5 GPUs
    assert _bounded_draw(np.array([1]), np.array([2]), 5, False, rng) is None  # cannot use all 5


def test_philly_on_alibaba_nodes_solves_with_every_method(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "philly", "hetero", ON_REAL_NODES, "--jobs", "5", "--servers", "3", "--seed", "0")
    src = _source(out)
    assert "3 drawn with seed 0 of its 1,213 GPU nodes" in src and "hetero is static" in src
    assert "G2 = 1 x V100 (ASSUMPTION" in src  # the drawn nodes include G2


def test_philly_on_gavel_cluster_every_method_including_the_oracles(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "philly", "hetero", EVERY, "--jobs", "4", "--servers", "2", "--seed", "1",
                           "--set", "cluster=gavel", "--set", "workers=cluster")
    inst = load_instance(out)
    assert sum(s.capacity["gpu"] for s in inst.servers) == 8
    assert all(j.workers.hi == 8 for j in inst.jobs)  # workers=cluster: the whole usable cluster
    assert "Gavel's simulated cluster" in inst.document["source"]


def test_pollux_on_pollux_cluster_every_method(run, tmp_path, data_dir):
    out = import_and_solve(run, tmp_path, "pollux", "hetero", EVERY, "--jobs", "4", "--servers", "2", "--seed", "0",
                           "--set", "cluster=pollux", "--set", "start=10")
    inst = load_instance(out)
    rows = _pollux_rows(data_dir)
    for job in inst.jobs:
        row = rows[job.id]
        assert job.global_batch_size == int(row["batch_size"])  # Pi is Pollux's batch size
        assert job.workers.hi == min(int(row["num_replicas"]), 8)
        assert job.iterations >= 1  # from the shared reader's Pollux duration (class-median GPU time / replicas)
    assert "median GPU time of the Philly jobs" in inst.document["source"]
    best = {m: FAMILY.run(inst, m, SolveOptions(seed=0)).report.objective for m in ("exact", "bundles", "brute-force")}
    assert best["bundles"] == pytest.approx(best["exact"], rel=1e-6) and best["brute-force"] == pytest.approx(best["exact"], rel=1e-6)


def test_alibaba_pods_every_method_and_gpu_spec_kept(run, tmp_path, data_dir):
    # bundles (an exhaustive oracle) takes ~10 s on these 14 GPUs; it runs on the other imports
    methods = [m for m in ON_REAL_NODES if m != "bundles"]
    out = import_and_solve(run, tmp_path, "alibaba", "hetero", methods, "--jobs", "10", "--servers", "4", "--seed", "1",
                           "--set", "pods=gpuspec33", "--set", "start=40")
    inst = load_instance(out)
    rows = _alibaba_rows(data_dir, "gpuspec33")
    assert len(inst.jobs) == 8 and "2 of the window's 10 jobs have no GPU" in inst.document["source"]
    assert sum(j.gpu_models is not None for j in inst.jobs) == 3
    for job in inst.jobs:
        spec = rows[job.id]["gpu_spec"]
        assert job.gpu_models == (tuple(sorted(spec.split("|"))) if spec else None)
        assert job.workers.hi == max(1, int(rows[job.id]["num_gpu"]))


def test_larger_import_sampling_passes_the_checker(run, tmp_path, data_dir):
    out = tmp_path / "a200.json"
    code, text, err = run("import", "alibaba", "--problem", "hetero", "--jobs", "200", "--seed", "2", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert sum(s.capacity["gpu"] for s in inst.servers) == 6212  # every GPU node is usable
    code, text, err = run("solve", out, "--method", "sampling", "--time-limit", "60")
    assert code == 0 and "check: ok" in text, (text, err)


def test_philly_jobs_are_the_csv_rows_with_the_stated_work(run, tmp_path, data_dir):
    out = tmp_path / "p.toml"
    code, _, err = run("import", "philly", "--problem", "hetero", "--jobs", "40", "--set", "start=1000",
                       "--set", "cluster=gavel", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    src = inst.document["source"]
    assert "jobs 1,001..1,040 of 82,247 by submit time" in src
    with open(data_dir / "philly/philly_jobs.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    stamp = [datetime.fromisoformat(r["timestamp"]).replace(tzinfo=UTC).timestamp() for r in table]
    order = sorted(range(len(table)), key=lambda i: (stamp[i], i))[1000:1040]
    assert [j.id for j in inst.jobs] == [f"philly-{i + 2}" for i in order]  # row = index + 2 (header is row 1)
    catalog = load_catalog()
    described = [j["description"] for j in inst.document["jobs"]]
    for job, i, text in zip(inst.jobs, order, described):
        g = int(table[i]["num_gpus"])
        assert job.workers.lo == 1 and job.workers.hi == min(g, 108)  # the trace's GPUs, capped at Gavel's 108
        s = max(r["gpus"] for r in catalog[job.model].data["throughput"]
                if r["gpu_model"] == "V100" and r["placement"] == "consolidated" and r["gpus"] <= g)
        rate = catalog[job.model].throughput_samples_per_s("V100", s) * g / s
        want = int(np.clip(round(float(table[i]["duration"]) * rate / WORKLOADS[job.model]), 1, 10**7))
        assert job.iterations == want
        assert job.global_batch_size == WORKLOADS[job.model]
        assert f"row {i + 2}," in text


def test_alibaba_cpu_only_pods_are_skipped_and_counted(run, tmp_path, data_dir):
    rows = list(_alibaba_rows(data_dir, "default").values())
    order = sorted(range(len(rows)), key=lambda i: (float(rows[i]["creation_time"]), i))
    window = [rows[i] for i in order[:300]]
    cpu_only = sum(r["num_gpu"] == "0" for r in window)
    assert cpu_only > 0
    out = tmp_path / "a.toml"
    code, _, err = run("import", "alibaba", "--problem", "hetero", "--jobs", "300", "--set", "start=0", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert [j.id for j in inst.jobs] == [r["name"] for r in window if r["num_gpu"] != "0"]
    assert f"{cpu_only:,} of the window's 300 jobs have no GPU (CPU-only) and were skipped" in inst.document["source"]
    fractional = sum(r["num_gpu"] == "1" and r["gpu_milli"] != "1000" for r in window)
    assert f"{fractional:,} fractional-GPU pods take one whole GPU" in inst.document["source"]


def test_every_alibaba_gpu_model_has_a_speed_and_g2_can_be_changed(run, tmp_path, data_dir):
    base, slow = tmp_path / "base.json", tmp_path / "slow.json"
    args = ("import", "philly", "--problem", "hetero", "--jobs", "30", "--seed", "5")
    assert run(*args, "-o", base)[0] == 0
    assert run(*args, "--set", "speed_G2=0.5", "--set", "speed_A10=0.8", "-o", slow)[0] == 0
    a, b = load_instance(base), load_instance(slow)
    view = hetero_view(a)
    assert {c.gpu_model: int(n) for c, n in zip(view.classes, view.counts)} == ALIBABA_GPUS
    assert (view.rho() > 0).all()  # every job has a figure on every model of the cluster
    for ja, jb in zip(a.jobs, b.jobs):
        ra, rb = ja.data_parallel["samples_per_s"], jb.data_parallel["samples_per_s"]
        assert rb["G2"] == pytest.approx(ra["G2"] / 2, rel=1e-4) and rb["A10"] == pytest.approx(ra["A10"] * 0.8, rel=1e-4)
        assert rb["G3"] == ra["G3"]
    sa, sb = a.document["source"], b.document["source"]
    assert "G2 = 1 x V100 (ASSUMPTION" in sa and "G3 = 1 x V100 (ASSUMPTION" in sa and "A10 = 1 x V100 (dense FP16" in sa
    assert "G2 = 0.5 x V100 (set by --set speed_G2" in sb and "--set speed_G2=0.5" in sb


def test_pollux_models_without_a_gradient_size_take_pollux_sync_times(run, tmp_path, data_dir):
    out = tmp_path / "p.json"
    code, _, err = run("import", "pollux", "--problem", "hetero", "--set", "workload=2", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    seen = set()
    for job in inst.jobs:
        comm = (job.data_parallel or {}).get("comm_s")
        if job.model in ("deepspeech2", "ncf", "yolov3"):
            with open(data_dir / f"pollux/{job.model}/scalability.csv", newline="") as fh:
                vals = [float(r["sync_time"]) * int(r["num_replicas"]) / (2 * (int(r["num_replicas"]) - 1))
                        for r in csv.DictReader(fh) if r["num_nodes"] == r["num_replicas"] and int(r["num_replicas"]) > 1]
            assert comm == pytest.approx(float(np.median(vals)), rel=1e-5)
            seen.add(job.model)
        else:
            assert comm is None and job.workload.gradient_mb
    assert seen
    sol = FAMILY.run(inst, "greedy", SolveOptions(seed=0))
    assert sol.report.objective is not None


def test_seeds_change_draws_and_same_arguments_same_file(run, tmp_path, data_dir):
    files = []
    for name, seed in (("a", "0"), ("b", "0"), ("c", "1")):
        out = tmp_path / f"{name}.toml"
        assert run("import", "philly", "--problem", "hetero", "--jobs", "20", "--servers", "30", "--set", "start=5",
                   "--seed", seed, "-o", out)[0] == 0
        files.append(out.read_bytes())
    assert files[0] == files[1] and files[0] != files[2]


def test_generator_alibaba_cluster_uses_every_gpu_node(data_dir):
    spec = GenerateSpec(jobs=3, servers=200, seed=0, options=FAMILY.parse_generate_options({"cluster": "alibaba"}))
    doc = FAMILY.generate(spec, load_catalog())
    models = {s["gpu_model"] for s in doc["cluster"]["servers"]}
    assert {"G2", "G3", "T4"} <= models <= set(ALIBABA_GPUS)
    assert "left out" not in doc["source"] and "G2 = 1 x V100 (ASSUMPTION" in doc["source"]
    from mlsched_opt.io import from_document
    view = hetero_view(from_document(doc, catalog=load_catalog()))
    assert (view.rho() > 0).all()
    for job, hj in zip(view.instance.jobs, view.jobs):
        for c, cls in enumerate(view.classes):
            if cls.gpu_model.startswith("V100M") or cls.gpu_model in ("G2", "G3"):  # 1 x V100
                assert hj.rho[c] == pytest.approx(job.workload.throughput_samples_per_s("V100"), rel=1e-6)


def test_mapped_throughputs_scale_from_the_first_measured_reference(catalog):
    bert = catalog["bert"]  # measured on T4 only
    t4 = bert.throughput_samples_per_s("T4")
    got = mapped_throughputs(bert, ["T4", "V100", "G2", "P100"])
    assert "T4" not in got
    assert got["V100"] == pytest.approx(t4 / SPEEDS["T4"][0], rel=1e-5) and got["G2"] == got["V100"]
    assert got["P100"] == pytest.approx(t4 * SPEEDS["P100"][0] / SPEEDS["T4"][0], rel=1e-5)
    r50 = catalog["resnet50"]  # measured on V100: V100 is the reference, measured figures win
    assert mapped_throughputs(r50, ["T4", "P100", "A10"]) == {"A10": pytest.approx(r50.throughput_samples_per_s("V100"))}


# --- errors (a tiny data folder) ----------------------------------------------------------------

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,32000,131072,0,\nn2,96000,786432,8,V100M32\n"
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
        + "".join(f"p{i},4000,8192,1,1000,P100,LS,Running,{i},{100 + i},{i}\n" for i in range(3)))
MANY = PODS.split("\n")[0] + "\n" + "".join(f"q{i},4000,8192,1,1000,,LS,Running,{i},{100 + i},{i}\n" for i in range(11))


def _fake(tmp_path: Path, pods: str = PODS) -> Path:
    return write_data(tmp_path, {"alibaba_openb/openb_node_list_all_node.csv": NODES, "alibaba_openb/openb_pod_list_default.csv": pods})


@pytest.mark.parametrize("args, pods, says", [
    ((), PODS, "3 jobs may run only on P100 GPUs, of which the cluster has 2"),
    (("--jobs", "11"), MANY, "11 jobs need at least 11 GPUs, the cluster has 10"),
    (("--slots", "5"), PODS, "--slots: hetero places every job at t = 0"),
    (("--set", "speed_G2=0"), PODS, "speed_G2 must be >= 0.001"),
    (("--set", "iterations_min=9", "--set", "iterations_max=8"), PODS, "need iterations_min <= iterations_max"),
    ((), PODS.replace(",1,1000,P100,", ",0,0,,"), "all have no GPU"),
    ((), PODS.replace("p0,4000,8192,1,1000,P100", "p0,4000,8192,1,1000,K80"), "can run on none of the cluster's GPU models"),
])
def test_imports_that_cannot_be_placed_are_user_errors(run, tmp_path, args, pods, says):
    out = tmp_path / "x.toml"
    code, _, err = run("import", "alibaba", "--problem", "hetero", "--data", _fake(tmp_path, pods), *args, "-o", out)
    assert code == 2 and says in err, err
    assert not out.exists()


def test_tiny_alibaba_import_solves_exactly(run, tmp_path):
    out = tmp_path / "x.toml"
    pods = PODS.replace("p2,4000,8192,1,1000,P100", "p2,4000,8192,4,1000,V100M32")
    code, _, err = run("import", "alibaba", "--problem", "hetero", "--data", _fake(tmp_path, pods), "--jobs", "3",
                       "--set", "start=0", "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    assert [j.workers.hi for j in inst.jobs] == [1, 1, 4] and [s.name for s in inst.servers] == ["n0", "n2"]
    code, text, _ = run("solve", out, "--method", "exact")
    assert code == 0 and "optimal" in text and "check: ok" in text


def _pollux_rows(data_dir: Path) -> dict[str, dict[str, str]]:
    with open(data_dir / "pollux/workloads/workload-1.csv", newline="") as fh:
        return {r["name"]: r for r in csv.DictReader(fh)}


def _alibaba_rows(data_dir: Path, pods: str) -> dict[str, dict[str, str]]:
    with open(data_dir / f"alibaba_openb/openb_pod_list_{pods}.csv", newline="") as fh:
        return {r["name"]: r for r in csv.DictReader(fh)}
