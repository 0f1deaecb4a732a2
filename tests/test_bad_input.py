"""Every class of bad input ends in one line naming the file and the field, exit code 2, no traceback."""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys

import pytest

from mlsched_opt.checking import CheckResult, compare_objective
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
    "unknown nested field": (lambda d: d["cluster"]["servers"][0]["capacity"].__setitem__("gpus", 4), "cluster.servers[0].capacity.gpus",
                             "unknown field"),
    "negative capacity": (lambda d: d["cluster"]["servers"][1]["capacity"].__setitem__("cpu", -8), "cluster.servers[1].capacity.cpu",
                          "must be >= 0"),
    "unknown model": (lambda d: d["jobs"][4].__setitem__("model", "resnet51"), "jobs[4].model", "unknown model 'resnet51'"),
    "job fits on no server": (lambda d: d["jobs"][3]["demand"]["worker"].__setitem__("gpu", 16), "jobs[3].demand.worker.gpu",
                              "fits on no server"),
    "job needs a GPU model nobody has": (lambda d: d["jobs"][0].__setitem__("gpu_models", ["A100"]), "jobs[0].demand.worker",
                                         "no server may host"),
    "min above max": (lambda d: d["jobs"][0].__setitem__("workers", {"min": 4, "max": 2}), "jobs[0].workers", "min 4 > max 2"),
    "duplicate job id": (lambda d: d["jobs"][5].__setitem__("id", d["jobs"][0]["id"]), "jobs[5].id", "duplicate id"),
    "bad utility kind": (lambda d: d["jobs"][0].__setitem__("utility", {"kind": "cubic"}), "jobs[0].utility.kind", "must be one of"),
    "sigmoid missing gamma": (lambda d: d["jobs"][0].__setitem__("utility", {"kind": "sigmoid", "gamma1": 1, "gamma2": 1}),
                              "jobs[0].utility.gamma3", "missing required field"),
    "bad override": (lambda d: d["jobs"][0].__setitem__("overrides", {"size": {"parameters_m": -1, "gradient_mb": 1, "source": "x"}}),
                     "jobs[0].overrides.size.parameters_m", "must be > 0"),
    "wrong format": (lambda d: d.__setitem__("format", "mlsched-instance/9"), "format", "must be one of"),
    "boolean is not a number": (lambda d: d["jobs"][0].__setitem__("weight", True), "jobs[0].weight", "expected number"),
    "arrival outside horizon": (lambda d: (d.__setitem__("time", {"slots": 4}), d["jobs"][0].__setitem__("arrival_slot", 4)),
                                "jobs[0].arrival_slot", "outside the horizon"),
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
    "top level not an object": (b"[1, 2]", "bad.json", "top level must be an object, got an array"),
    "top level null": (b"null", "bad.json", "top level must be an object, got null"),
    "top level huge integer": (b"1" * 5000, "bad.json", "top level must be an object, got a number"),
    "lone surrogate in a value": (b'{"format": "mlsched-instance/1", "name": "\\ud800"}', "bad.json",
                                  "name: a string holds a lone UTF-16 surrogate"),
    "lone surrogate in a key": (b'{"format": "mlsched-instance/1", "cluster": {"\\udc00x": 1}}', "bad.json",
                                "cluster: a key holds a lone UTF-16 surrogate"),
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
    (["solve", DEMO, "--solver", "nosuchsolver"], "--solver: unknown"),
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


def test_a_solution_for_an_unknown_problem_names_the_file_and_field(tmp_path, run):
    sol = tmp_path / "s.json"
    code, _, _ = run("solve", DEMO, "--method", "ffd", "--out", sol)
    assert code == 0
    doc = json.loads(sol.read_text())
    doc["problem"] = "nosuch"
    sol.write_text(json.dumps(doc))
    code, out, err = run("check", DEMO, sol)
    assert code == 2 and out == ""
    assert err.strip().startswith(f"mlsched: error: {sol}: problem: unknown problem 'nosuch'"), err


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_objective_matches_no_claim(value):
    """NaN compares unequal to nothing: a decision whose objective overflows is a violation, and
    the verdict stays valid JSON."""
    result = CheckResult()
    result.objective = value
    compare_objective(result, 12345.0)
    assert not result.feasible and result.objective is None
    assert [v.rule for v in result.violations] == ["objective"]
    json.dumps(result.to_dict(), allow_nan=False)


def test_a_lone_surrogate_in_a_decision_is_refused_not_printed(tmp_path, run):
    sol = tmp_path / "s.json"
    run("solve", DEMO, "--method", "ffd", "--out", sol)
    text = sol.read_text().replace('"placement": {', '"placement": {"\\ud800": {},', 1)
    sol.write_text(text)
    code, out, err = run("check", DEMO, sol)
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"{sol}: decision.placement: a key holds a lone UTF-16 surrogate" in err


def test_console_script_prints_no_traceback(tmp_path):
    """The installed entry point, as a user runs it."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "mlsched-instance/1", "cluster": {"servers": []}, "jobs": []}')
    proc = subprocess.run([sys.executable, "-m", "mlsched_opt", "validate", str(bad)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"mlsched: error: {bad}: cluster.servers: needs at least 1 item(s)"


# --- outputs: atomic, never onto an input, every OSError a one-line user error --------------

import errno  # noqa: E402
import os  # noqa: E402

from mlsched_opt.io import files as io_files  # noqa: E402

from .conftest import ROOT  # noqa: E402


def _one_error_line(err: str, path) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"mlsched: error: {path}: "), err
    return err


def _command_writing(kind: str, target, tmp_path) -> list:
    src = tmp_path / "in.toml"
    if not src.exists():
        src.write_bytes(DEMO.read_bytes())
    return {
        "solve": ["solve", src, "--method", "ffd", "--out", target],
        "generate": ["generate", "--problem", "packing", "--jobs", 3, "--servers", 2, "--seed", 1, "-o", target],
        "export": ["export", src, "--format", "lp", "-o", target],
    }[kind]


def _read_only(path):
    path.write_text("precious\n")
    path.chmod(0o444)
    return path


OUTPUT_CASES = {
    # name: (target inside tmp_path, words in the message)
    "missing folder": (lambda t: t / "no" / "such" / "out.json", "does not exist"),
    "a directory": (lambda t: (t / "adir.toml").mkdir() or t / "adir.toml", "is a directory"),
    "a read-only file": (lambda t: _read_only(t / "ro.toml"), "read-only"),
    "a FIFO": (lambda t: os.mkfifo(t / "pipe.toml") or t / "pipe.toml", "FIFO"),
}


@pytest.mark.parametrize("kind", ["solve", "generate", "export"])
@pytest.mark.parametrize("case", sorted(OUTPUT_CASES))
def test_unwritable_output_is_one_line_exit_2(kind, case, tmp_path, run):
    make, words = OUTPUT_CASES[case]
    target = make(tmp_path)
    before = target.read_bytes() if target.is_file() else None
    code, _, err = run(*_command_writing(kind, target, tmp_path))
    assert code == 2
    assert words in _one_error_line(err, target)
    if before is not None:
        assert target.read_bytes() == before
    assert not list(tmp_path.rglob(".*.tmp*")), "a temporary file was left behind"


@pytest.mark.parametrize("kind", ["solve", "export"])
@pytest.mark.parametrize("alias", ["same path", "symlink", "hard link", "other spelling"])
def test_output_onto_an_input_is_refused_and_the_input_kept(kind, alias, tmp_path, run):
    src = tmp_path / "in.toml"
    src.write_bytes(DEMO.read_bytes())
    target = {"same path": src, "symlink": tmp_path / "link.toml", "hard link": tmp_path / "hard.toml",
              "other spelling": tmp_path / "." / ".." / tmp_path.name / "in.toml"}[alias]
    if alias == "symlink":
        target.symlink_to(src)
    elif alias == "hard link":
        os.link(src, target)
    code, out, err = run(*_command_writing(kind, target, tmp_path))
    assert code == 2 and out == ""
    assert "refusing to overwrite the input file" in _one_error_line(err, target)
    assert src.read_bytes() == DEMO.read_bytes()


@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EACCES, errno.EROFS])
def test_failed_solution_write_keeps_the_old_file_and_still_prints_the_answer(failure, tmp_path, run, monkeypatch):
    target = tmp_path / "s.json"
    target.write_text("old\n")

    def refuse(src, dst):
        raise OSError(failure, os.strerror(failure))

    monkeypatch.setattr(io_files.os, "replace", refuse)
    code, out, err = run("solve", DEMO, "--method", "ffd", "--out", target)
    assert code == 2
    assert "packing / ffd on demo: feasible" in out and "check: ok" in out and "written" not in out
    reason = {errno.ENOSPC: "disk full", errno.EACCES: "permission denied", errno.EROFS: "read-only file system"}[failure]
    assert _one_error_line(err, target).strip().endswith(f"cannot write ({reason})")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]


def test_failed_json_solve_still_prints_the_json_answer(tmp_path, run, monkeypatch):
    monkeypatch.setattr(io_files.os, "replace", lambda a, b: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space")))
    code, out, err = run("solve", DEMO, "--method", "ffd", "--json", "--out", tmp_path / "s.json")
    assert code == 2 and "disk full" in err
    doc = json.loads(out)
    assert doc["status"] == "feasible" and "solution_file" not in doc


def test_write_failing_midway_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    target.write_text('{"old": 1}\n')

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io_files.os, "fsync", full)
    with pytest.raises(io_files.UserError, match="disk full"):
        io_files.write_document({"new": 1}, target)
    assert target.read_text() == '{"old": 1}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_atomic_write_replaces_and_keeps_the_mode(tmp_path):
    target = tmp_path / "x.toml"
    target.write_text("a = 1\n")
    target.chmod(0o640)
    io_files.write_document({"a": 2}, target)
    assert target.read_text() == "a = 2\n" and (target.stat().st_mode & 0o777) == 0o640
    fresh = tmp_path / "fresh.json"
    io_files.write_document({"a": 3}, fresh)
    assert json.loads(fresh.read_text()) == {"a": 3} and fresh.stat().st_mode & 0o600 == 0o600


def test_train_checks_its_output_before_training(tmp_path, run, monkeypatch):
    import dataclasses

    import mlsched_opt.problems as problems

    def never(spec):
        raise AssertionError("training started although the output cannot be written")

    real = problems.get_family
    monkeypatch.setattr(problems, "get_family", lambda name: dataclasses.replace(real(name), train=never))
    target = tmp_path / "missing" / "policy.pt"
    code, _, err = run("train", "--problem", "harmony", "--episodes", 1, "-o", target)
    assert code == 2 and "does not exist" in _one_error_line(err, target)


# --- hostile numbers: refused by the schema with the field path, before any model is built --

_CPU = "cluster.servers[1].capacity.cpu"


def _demo_with_cpu(tmp_path, token: str, fmt: str):
    doc = read_document(DEMO)
    doc["cluster"]["servers"][1]["capacity"]["cpu"] = "@@"
    path = tmp_path / f"n.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps(doc).replace('"@@"', token))
    else:
        from mlsched_opt.io.files import dump_toml

        path.write_text(dump_toml(doc).replace('"@@"', token))
    return path


HOSTILE_NUMBERS = {
    # (token, format): words in the message; the field is always named
    ("1e999", "json"): "infinite",
    ("-1e999", "json"): "infinite",
    ("Infinity", "json"): "infinite",
    ("NaN", "json"): "NaN",
    ("1e308", "json"): "2**53",
    ("1180591620717411303424", "json"): "2**53",  # 2**70
    ("9" * 400, "json"): "400 digits",
    ("9" * 5000, "json"): "5000 digits",
    ("-" + "9" * 5000, "json"): "5000 digits",
    ("inf", "toml"): "infinite",
    ("-inf", "toml"): "infinite",
    ("nan", "toml"): "NaN",
    ("1e999", "toml"): "infinite",
    ("9" * 400, "toml"): "400 digits",
    ("9007199254740993", "toml"): "2**53",
}


@pytest.mark.parametrize("token,fmt", sorted(HOSTILE_NUMBERS), ids=lambda v: v[:12])
def test_hostile_numbers_name_the_field(token, fmt, tmp_path, run):
    path = _demo_with_cpu(tmp_path, token, fmt)
    code, out, err = run("validate", path)
    assert code == 2 and out == ""
    line = _one_error_line(err, path)
    assert line.startswith(f"mlsched: error: {path}: {_CPU}: "), line
    assert HOSTILE_NUMBERS[(token, fmt)] in line


def test_toml_integer_beyond_python_digit_limit_is_an_instance_error(tmp_path, run):
    path = _demo_with_cpu(tmp_path, "9" * 5000, "toml")
    code, _, err = run("validate", path)
    assert code == 2 and "invalid TOML" in _one_error_line(err, path)


_HUGE = [math.nan, math.inf, -math.inf, 2**53 + 1, -(2**60), 1e300, 10**400]


@pytest.mark.parametrize("value,schema", [(v, s) for v in _HUGE for s in ({"type": "number"}, {"type": "number", "minimum": 0})]
                         + [(v, {"type": "integer"}) for v in _HUGE if isinstance(v, int)])
def test_validator_refuses_non_finite_and_huge_whatever_the_schema_says(value, schema):
    from mlsched_opt.io.schema import SchemaViolation, validate

    with pytest.raises(SchemaViolation, match=r"finite|2\*\*53"):
        validate(value, schema)
    validate(2**53, schema)  # the bound itself is fine


@pytest.mark.parametrize("value", [math.nan, math.inf, 2**70, 1e300])
def test_from_document_refuses_hostile_numbers_from_python(value, catalog):
    from mlsched_opt.errors import InstanceError
    from mlsched_opt.io import from_document

    doc = read_document(DEMO)
    doc["jobs"][0]["weight"] = value
    with pytest.raises(InstanceError) as exc:
        from_document(doc, catalog=catalog)
    assert exc.value.field == "jobs[0].weight"


# --- hostile files and sizes ------------------------------------------------------------------

def _fifo(tmp_path):
    path = tmp_path / "x.toml"
    os.mkfifo(path)
    return path


def _zero(tmp_path):
    path = tmp_path / "zero.json"
    path.symlink_to("/dev/zero")
    return path


def _socket(tmp_path):
    import socket

    path = tmp_path / "s.json"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    return path


def _dir(tmp_path):
    path = tmp_path / "d.toml"
    path.mkdir()
    return path


def _deep_json(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"format": "mlsched-instance/1", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return path


def _escaped_quotes(tmp_path):
    # an unterminated string of escaped quotes after more brackets than the depth limit: a scanner that
    # rescans from every escaped quote (a string regex did) takes the square of the size (minutes at 100 KB)
    path = tmp_path / "quotes.json"
    path.write_text('{"a": "' + "[" * 65 + '\\"' * 50_000)
    return path


def _deep_toml(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    return path


SPECIAL_FILES = {
    "FIFO": (_fifo, "FIFO"),
    "symlink to /dev/zero": (_zero, "character device"),
    "socket": (_socket, "socket"),
    "directory": (_dir, "is a directory"),
    "100k nested JSON arrays": (_deep_json, "over the limit depth=64"),
    "100k nested TOML arrays": (_deep_toml, "over the limit depth=64"),
    "unterminated string of 50k escaped quotes": (_escaped_quotes, "Unterminated string"),
}


@pytest.mark.parametrize("case", sorted(SPECIAL_FILES))
def test_special_and_deep_files_are_refused_without_blocking(case, tmp_path, run):
    make, words = SPECIAL_FILES[case]
    path = make(tmp_path)
    code, _, err = run("validate", path)
    assert code == 2 and words in _one_error_line(err, path)


def test_file_size_cap_and_raising_it(tmp_path, run, monkeypatch):
    doc = read_document(DEMO)
    doc["description"] = "x" * (2 * 2**20)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    monkeypatch.setenv("MLSCHED_LIMITS", "file_mb=1")
    code, _, err = run("validate", path)
    assert code == 2 and "over the limit file_mb=1" in _one_error_line(err, path)
    code, _, _ = run("--limit", "file_mb=3", "validate", path)
    assert code == 0


def _demo_json(tmp_path, mutate, name="sz.json"):
    doc = read_document(DEMO)
    mutate(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


SIZE_CASES = {
    # name: (mutation, field, limit name)
    "server count 1e8": (lambda d: d["cluster"]["servers"][0].__setitem__("count", 10**8), "cluster.servers[0].count", "servers"),
    "workers 1e9": (lambda d: d["jobs"][0].__setitem__("workers", {"min": 1, "max": 10**9}), "jobs[0].workers", "tasks"),
    "slots 1e12": (lambda d: d.__setitem__("time", {"slots": 10**12}), "time.slots", "slots"),
    "jobs": (lambda d: d.__setitem__("jobs", d["jobs"] * 1000), "jobs", "jobs"),
}
#: the limits each case runs under: 12,000 jobs are far inside the default of 10^6
SIZE_LIMITS = {"jobs": ("--limit", "jobs=10000")}


@pytest.mark.parametrize("case", sorted(SIZE_CASES))
def test_sizes_beyond_a_limit_name_the_field_and_the_limit(case, tmp_path, run):
    mutate, field, limit = SIZE_CASES[case]
    path = _demo_json(tmp_path, mutate)
    code, _, err = run(*SIZE_LIMITS.get(case, ()), "validate", path)
    line = _one_error_line(err, path)
    assert code == 2 and line.startswith(f"mlsched: error: {path}: {field}: ")
    assert f"over the limit {limit}=" in line and f"--limit {limit}=N" in line


def test_a_slotted_model_beyond_the_cells_limit_is_refused_when_built_not_when_read(tmp_path, run):
    """Loading keeps no servers x jobs x slots table (the approximations are sparse); the exact
    model and its export do: the export is refused there, naming the limit, and the anytime exact
    method answers without it (its quick start, checked), saying why."""
    path = _demo_json(tmp_path, lambda d: (d.__setitem__("time", {"slots": 9_000}),
                                           d["cluster"]["servers"][0].__setitem__("count", 500)))
    assert run("validate", path)[0] == 0
    code, out, err = run("export", path, "-o", str(tmp_path / "m.lp"))
    assert code == 2 and "over the limit cells=" in err and "--limit cells=N" in err, err
    assert err.count("\n") == 1 and not out
    assert not (tmp_path / "m.lp").exists()
    code, out, err = run("solve", path, "--method", "exact", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["status"] == "feasible" and doc["check"]["feasible"], out + err
    assert "the full model is not built" in doc["message"] and "over the limit cells=" in doc["message"]

def test_limits_are_raised_by_option_or_environment_for_one_command(tmp_path, run, monkeypatch):
    path = _demo_json(tmp_path, lambda d: d["cluster"]["servers"][0].__setitem__("count", 30))
    assert run("--limit", "servers=20", "validate", path)[0] == 2
    assert run("validate", path)[0] == 0  # the option held for one command only
    monkeypatch.setenv("MLSCHED_LIMITS", "servers=20, jobs=5000")
    assert run("validate", path)[0] == 2
    assert run("--limit", "servers=40", "validate", path)[0] == 0  # the command line wins


@pytest.mark.parametrize("args,env,words", [
    (["--limit", "servers"], None, "--limit: expected NAME=VALUE"),
    (["--limit", "gpus=3"], None, "--limit: unknown limit 'gpus'"),
    (["--limit", "servers=-1"], None, "--limit: limit servers must be a whole number"),
    (["--limit", "servers=nan"], None, "--limit: limit servers must be a whole number"),
    (["--limit", "servers=1e99"], None, "--limit: limit servers must be a whole number"),
    ([], "servers=lots", "$MLSCHED_LIMITS: limit servers must be a whole number"),
])
def test_bad_limits_are_option_errors(args, env, words, run, monkeypatch):
    if env:
        monkeypatch.setenv("MLSCHED_LIMITS", env)
    code, _, err = run(*args, "validate", DEMO)
    assert code == 2 and words in err and err.count("\n") == 1


def test_every_shipped_instance_is_within_the_default_limits():
    from mlsched_opt.io import load_instance

    for path in sorted((ROOT / "instances").glob("*.*")):
        load_instance(path)


def _nested(depth: int) -> str:
    # brackets inside strings (both quote kinds, escapes) must not count
    return '{"s": "[[{\\"\\\\", "x": ' + "[" * (depth - 1) + '"]]]"' + "]" * (depth - 1) + "}"


@pytest.mark.parametrize("depth", [1, 2, 63, 64, 65, 200])
def test_nesting_limit_is_exact_and_ignores_brackets_in_strings(depth, tmp_path):
    from mlsched_opt.errors import InstanceError

    path = tmp_path / "n.json"
    path.write_text(_nested(depth))
    if depth <= 64:
        assert read_document(path)["s"] == '[[{"\\'
    else:
        with pytest.raises(InstanceError, match="over the limit depth=64"):
            read_document(path)


def test_an_instance_too_large_is_refused_by_its_counts_before_its_values_are_walked(tmp_path):
    """Right after parsing, the jobs limit refuses the file: a value the walk would refuse (a lone
    surrogate in the last job) is never reached, so a huge file costs its parse, not the walk."""
    from mlsched_opt.errors import InstanceError
    from mlsched_opt.io import load_instance
    from mlsched_opt.io.files import set_limits

    doc = json.loads(json.dumps({"problem": "packing", "cluster": {"servers": [{"name": "s", "capacity": {"gpu": 1}}]},
                                 "jobs": [{"id": f"j{i}", "workers": {"count": 1, "demand": {"gpu": 1}}} for i in range(11)]}))
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc).replace('"j10"', '"\\ud800"'))
    with pytest.raises(InstanceError, match="lone UTF-16 surrogate"):
        read_document(path)
    set_limits(["jobs=10"])
    try:
        with pytest.raises(InstanceError, match="over the limit jobs=10"):
            load_instance(path)
    finally:
        set_limits()


def test_toml_comments_and_strings_do_not_count_as_nesting(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("# " + "[" * 500 + "\n" + 'a = "' + "{" * 500 + '"\n' + "b = '" + "[" * 500 + "'\n")
    assert read_document(path)["a"] == "{" * 500


def test_help_lists_the_limits_and_how_to_raise_them(run):
    code, out, _ = run("--help")
    assert code == 0
    assert "--limit NAME=N" in out and "MLSCHED_LIMITS" in out
    for name in io_files.LIMITS:
        assert f"{name}=" in out


@pytest.mark.parametrize("kind", ["generate", "export"])
def test_failed_write_of_generate_and_export_leaves_nothing_behind(kind, tmp_path, run, monkeypatch):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / ("g.toml" if kind == "generate" else "m.lp")
    monkeypatch.setattr(io_files.os, "replace", lambda a, b: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space")))
    code, _, err = run(*_command_writing(kind, target, tmp_path))
    assert code == 2 and _one_error_line(err, target).strip().endswith("cannot write (disk full)")
    assert list(out_dir.iterdir()) == []
