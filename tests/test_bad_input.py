"""Every class of bad input ends in one line naming the file and the field, exit code 2, no traceback."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from mlsched_opt.io.files import read_document

from .conftest import DEMO


@pytest.fixture(scope="module")
def demo_doc():
    return read_document(DEMO)


def _write(tmp_path, doc, name="bad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _mutated(demo_doc, mutate):
    doc = copy.deepcopy(demo_doc)
    mutate(doc)
    return doc


CASES = {
    # name: (mutation of the demo document, expected field path, expected words in the reason)
    "wrong type": (lambda d: d["jobs"][3]["demand"]["worker"].__setitem__("gpu", "one"), "jobs[3].demand.worker.gpu", "expected number"),
    "missing field": (lambda d: d["jobs"][2].pop("workers"), "jobs[2].workers", "missing required field"),
    "unknown field": (lambda d: d["jobs"][1].__setitem__("priority", 3), "jobs[1].priority", "unknown field"),
    "unknown nested field": (lambda d: d["cluster"]["servers"][0]["capacity"].__setitem__("gpus", 4), "cluster.servers[0].capacity.gpus", "unknown field"),
    "negative capacity": (lambda d: d["cluster"]["servers"][1]["capacity"].__setitem__("cpu", -8), "cluster.servers[1].capacity.cpu", "must be >= 0"),
    "unknown model": (lambda d: d["jobs"][4].__setitem__("model", "resnet51"), "jobs[4].model", "unknown model 'resnet51'"),
    "job fits on no server": (lambda d: d["jobs"][3]["demand"]["worker"].__setitem__("gpu", 16), "jobs[3].demand.worker.gpu", "fits on no server"),
    "job needs a GPU model nobody has": (lambda d: d["jobs"][0].__setitem__("gpu_models", ["A100"]), "jobs[0].demand.worker", "no server may host"),
    "min above max": (lambda d: d["jobs"][0].__setitem__("workers", {"min": 4, "max": 2}), "jobs[0].workers", "min 4 > max 2"),
    "duplicate job id": (lambda d: d["jobs"][5].__setitem__("id", d["jobs"][0]["id"]), "jobs[5].id", "duplicate id"),
    "bad utility kind": (lambda d: d["jobs"][0].__setitem__("utility", {"kind": "cubic"}), "jobs[0].utility.kind", "must be one of"),
    "sigmoid missing gamma": (lambda d: d["jobs"][0].__setitem__("utility", {"kind": "sigmoid", "gamma1": 1, "gamma2": 1}), "jobs[0].utility.gamma3", "missing required field"),
    "bad override": (lambda d: d["jobs"][0].__setitem__("overrides", {"size": {"parameters_m": -1, "gradient_mb": 1, "source": "x"}}), "jobs[0].overrides.size.parameters_m", "must be > 0"),
    "wrong format": (lambda d: d.__setitem__("format", "mlsched-instance/9"), "format", "must be one of"),
    "boolean is not a number": (lambda d: d["jobs"][0].__setitem__("weight", True), "jobs[0].weight", "expected number"),
    "arrival outside horizon": (lambda d: (d.__setitem__("time", {"slots": 4}), d["jobs"][0].__setitem__("arrival_slot", 4)), "jobs[0].arrival_slot", "outside the horizon"),
    "allreduce with ps": (lambda d: d["jobs"][0].__setitem__("ps", {"count": 1}), "jobs[0].ps", "all-reduce job has no parameter servers"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_field(case, demo_doc, tmp_path, run):
    mutate, field, words = CASES[case]
    path = _write(tmp_path, _mutated(demo_doc, mutate))
    code, out, err = run("validate", path)
    assert code == 2
    assert out == ""
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith(f"mlsched: error: {path}: {field}: "), line
    assert words in line


FILE_CASES = {
    "malformed JSON": (b'{"format": "mlsched-instance/1", "cluster": {,}', "bad.json", "invalid JSON at line 1"),
    "truncated JSON": (b'{"format": "mlsched-instance/1", "cluster": {"servers": [', "bad.json", "file truncated?"),
    "binary file": (b"\x7fELF\x02\x01\x01\x00\x00\x00", "bad.json", "binary file"),
    "not UTF-8": (b'{"name": "\xff\xfe"}', "bad.json", "not UTF-8"),
    "empty file": (b"  \n", "bad.toml", "file is empty"),
    "malformed TOML": (b'format = "mlsched-instance/1"\n[cluster\n', "bad.toml", "invalid TOML"),
    "NaN in JSON": (b'{"format": "mlsched-instance/1", "x": NaN}', "bad.json", "NaN is not allowed"),
    "duplicate JSON key": (b'{"format": "a", "format": "b"}', "bad.json", "duplicate key 'format'"),
    "top level not an object": (b"[1, 2]", "bad.json", "top level must be an object"),
    "unknown extension": (b"{}", "bad.yaml", "unknown file type .yaml"),
}


@pytest.mark.parametrize("case", sorted(FILE_CASES))
def test_bad_file(case, tmp_path, run):
    content, name, words = FILE_CASES[case]
    path = tmp_path / name
    path.write_bytes(content)
    code, out, err = run("validate", path)
    assert code == 2 and out == ""
    assert err.startswith(f"mlsched: error: {path}: ") and words in err, err
    assert err.count("\n") == 1


def test_missing_file(run, tmp_path):
    code, _, err = run("validate", tmp_path / "nope.toml")
    assert code == 2 and err.strip() == f"mlsched: error: {tmp_path / 'nope.toml'}: no such file"


@pytest.mark.parametrize("args,words", [
    (["solve", DEMO, "--method", "magic"], "--method: unknown method 'magic'"),
    (["solve", DEMO, "--problem", "tsp"], "--problem: unknown problem 'tsp'"),
    (["solve", DEMO, "--solver", "nosuchsolver"], "--solver: unknown or unavailable solver"),
    (["solve", DEMO, "--set", "objective=cost"], "--set: objective must be one of weight, servers"),
    (["solve", DEMO, "--set", "color=red"], "--set: unknown option 'color'"),
    (["solve", DEMO, "--time-limit", "0"], "--time-limit: time limit must be a positive number"),
    (["solve", DEMO, "--gap", "2"], "--gap: gap must be in [0, 1)"),
])
def test_bad_option(args, words, run):
    code, _, err = run(*args)
    assert code == 2
    assert words in err and "Traceback" not in err


def test_problem_requirement_names_the_field(tmp_path, run, demo_doc):
    doc = _mutated(demo_doc, lambda d: d["jobs"][2].__setitem__("workers", {"min": 1, "max": 2}))
    path = _write(tmp_path, doc)
    code, _, err = run("solve", path, "--method", "ffd")
    assert code == 2
    assert f"{path}: jobs[2].workers: problem 'packing' needs a fixed workers count" in err


def test_malformed_solution_file(tmp_path, run):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"format": "mlsched-solution/1", "instance": {"sha256": "x"}, "problem": "packing", "method": "exact"}))
    code, _, err = run("check", DEMO, path)
    assert code == 2 and f"{path}: report: missing required field" in err


def test_console_script_prints_no_traceback(tmp_path):
    """The installed entry point, as a user runs it."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "mlsched-instance/1", "cluster": {"servers": []}, "jobs": []}')
    proc = subprocess.run([sys.executable, "-m", "mlsched_opt", "validate", str(bad)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"mlsched: error: {bad}: cluster.servers: needs at least 1 item(s)"
