"""``mlsched bench``: suites, tasks, executors (local and Dask), resume, results and report.

The held-out suites are tests/data/bench_packing.toml and tests/data/bench_oasis.toml.  Nothing
here depends on wall-clock speed: tasks are counted, objectives compared, never times.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from mlsched_opt.bench import executors, report, tasks as tasks_mod
from mlsched_opt.bench.suite import load_suite
from mlsched_opt.cli import cli, main
from mlsched_opt.errors import UserError
from mlsched_opt.io.catalog import shipped_catalog_dir

DATA = Path(__file__).parent / "data"
PACKING = DATA / "bench_packing.toml"
OASIS = DATA / "bench_oasis.toml"
SUITES = {"packing": PACKING, "oasis": OASIS}


def _register() -> None:
    from mlsched_opt.bench.cli import bench

    if "bench" not in cli.commands:
        cli.add_command(bench)


def bench(*args) -> int:
    """``mlsched bench ARGS`` in this process; the exit code."""
    _register()
    with pytest.raises(SystemExit) as exc:
        main(["bench", *map(str, args)])
    return exc.value.code


def rows_of(folder: Path) -> list[dict]:
    return report.read_results(folder / "results.csv")


# --- the sweeps, run once per module -------------------------------------------------------------

@pytest.fixture(scope="module")
def local_runs(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for name, suite in SUITES.items():
        folder = tmp_path_factory.mktemp(f"local-{name}")
        assert bench(suite, "--out", folder, "--executor", "local", "--workers", 2) == 0
        out[name] = folder
    return out


@pytest.fixture(scope="module")
def dask_runs(tmp_path_factory) -> dict[str, Path]:
    pytest.importorskip("distributed")
    out = {}
    for name, suite in SUITES.items():
        folder = tmp_path_factory.mktemp(f"dask-{name}")
        assert bench(suite, "--out", folder, "--executor", "dask", "--workers", 2) == 0
        out[name] = folder
    return out


# --- suites --------------------------------------------------------------------------------------

def test_suites_expand_to_fixed_tasks():
    packing = load_suite(PACKING)
    tasks = tasks_mod.expand(packing)
    # 8 instances (2 sizes x 2 seeds x 2 blocks), each: exact on highs and cpsat, then FFD
    assert len(tasks) == 24
    assert [t.label for t in tasks[:3]] == ["exact (highs)", "exact (cpsat)", "FFD"]
    assert len({t.key for t in tasks}) == 24
    assert [t.key for t in tasks] == [t.key for t in tasks_mod.expand(load_suite(PACKING))]  # stable
    assert {t.problem_options["objective"] for t in tasks} == {"weight", "servers"}
    oasis = tasks_mod.expand(load_suite(OASIS))
    assert [t.label for t in oasis[:4]] == ["exact (highs)", "oasis[units=chunks]", "oasis[units=worker-slots]", "fifo"]
    assert all(t.seed == t.instance.seed for t in oasis)


def test_set_overrides_keys_and_changes_keys():
    base = tasks_mod.expand(load_suite(PACKING))
    fewer = tasks_mod.expand(load_suite(PACKING, ["reference.solvers=[\"highs\"]", "instances.generate.1.seeds=[1]"]))
    assert len(fewer) == 4 * 2 + 2 * 2
    longer = tasks_mod.expand(load_suite(PACKING, ["time_limit=31"]))
    assert not {t.key for t in base} & {t.key for t in longer}  # the time limit is part of the key


BAD = {
    "unknown-top": ('colour = "red"\n', "colour"),
    "problem": ('problem = "nope"\n', "problem"),
    "method-key": ('[[methods]]\nname = "ffd"\nspeed = 3\n', "methods[0].speed"),
    "method-name": ('[[methods]]\nname = "bogus"\n', "methods[0].name"),
    "method-option": ('[[methods]]\nname = "ffd"\noptions = { colour = 1 }\n', "methods[0].options.colour"),
    "problem-option-per-method": ('[[methods]]\nname = "ffd"\noptions = { objective = "servers" }\n',
                                  "methods[0].options.objective"),
    "option-value": ('[options]\nobjective = "speed"\n', "options.objective"),
    "reference": ('[reference]\nmethod = "ffd"\n', "reference.method"),
    "solver": ('[reference]\nmethod = "exact"\nsolvers = ["nosuchsolver"]\n', "reference.solvers[0]"),
    "best-takes-no-keys": ('[reference]\nmethod = "best"\ntime_limit = 5\n', "reference"),
    "seeds": ('[instances]\ngenerate = { jobs = 4, servers = 2 }\n', "instances.generate.seeds"),
    "generator-option": ('[instances]\ngenerate = { jobs = 4, servers = 2, seeds = [1], set = { colour = 1 } }\n',
                         "instances.generate.set.colour"),
    "files": ('[instances]\nfiles = ["no/such/*.toml"]\n', "instances.files[0]"),
    "time-limit": ('time_limit = -1\n', "time_limit"),
    "label": ('[[methods]]\nname = "ffd"\n[[methods]]\nname = "ffd"\n', "methods[1].label"),
}


def _suite_text(fragment: str) -> str:
    """A valid packing suite with ``fragment`` replacing (or adding) one part of it."""
    parts = {
        "head": 'name = "bad"\nproblem = "packing"\n',
        "instances": '[instances]\ngenerate = { jobs = 4, servers = 2, seeds = [1] }\n',
        "reference": '[reference]\nmethod = "lp"\n',
        "methods": '[[methods]]\nname = "ffd"\n',
    }
    if fragment.startswith("[instances]"):
        parts["instances"] = fragment
    elif fragment.startswith("[reference]"):
        parts["reference"] = fragment
    elif fragment.startswith("[[methods]]"):
        parts["methods"] = fragment
    elif fragment.startswith("problem"):
        parts["head"] = 'name = "bad"\n' + fragment
    else:
        parts["head"] += fragment
    return parts["head"] + parts["instances"] + parts["reference"] + parts["methods"]


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_suite_exits_2_naming_file_and_key(case, tmp_path, capsys):
    fragment, key = BAD[case]
    suite = tmp_path / "suite.toml"
    suite.write_text(_suite_text(fragment))
    assert bench(suite, "--out", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert str(suite) in err and key in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_bad_command_lines_exit_2(tmp_path, capsys):
    broken = tmp_path / "broken.toml"
    broken.write_text('name = "x"\nproblem = [\n')
    assert bench(broken, "--out", tmp_path / "o") == 2
    assert str(broken) in capsys.readouterr().err
    assert bench(PACKING, "--out", tmp_path / "o", "--set", "novalue") == 2
    assert "--set" in capsys.readouterr().err
    assert bench(PACKING, "--out", tmp_path / "o", "--scheduler", "tcp://127.0.0.1:1") == 2
    assert "--scheduler" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "results.csv").write_text("x\n")
    assert bench(PACKING, "--out", tmp_path / "full") == 2
    assert "--resume" in capsys.readouterr().err


def test_import_instances(tmp_path):
    """``[instances] import`` expands like ``mlsched import`` (with the data, when present)."""
    from mlsched_opt.errors import UserError
    from mlsched_opt.io.shared_data import shared_data_dir

    suite = tmp_path / "imp.toml"
    text = ('problem = "oasis"\n[instances]\nimport = { source = "philly", jobs = 4, servers = 2, slots = 6, '
            'seeds = [1], set = { arrivals = "fit" }%s }\n[reference]\nmethod = "lp"\n[[methods]]\nname = "oasis"\n')
    suite.write_text(text % ', data = "no-such-folder"')
    with pytest.raises(UserError) as exc:
        load_suite(suite)
    assert exc.value.field == "instances.import.data" and exc.value.file == str(suite)
    if shared_data_dir() is None:
        pytest.skip("no shared data: the import itself is untested")
    suite.write_text(text % "")
    todo = tasks_mod.expand(load_suite(suite))
    rows = [tasks_mod.run_task(t) for t in todo]
    assert [r["status"] for r in rows] == ["optimal", "feasible"] and rows[1]["check"] == "ok"
    assert rows[0]["jobs"] == 4


def test_unreadable_trace_data_is_a_user_error_naming_the_key(tmp_path, monkeypatch, capsys):
    from mlsched_opt.bench import suite as suite_mod

    data = tmp_path / "data"
    data.mkdir()
    suite = tmp_path / "imp.toml"
    suite.write_text('problem = "oasis"\n[instances]\nimport = { source = "philly", jobs = 4, servers = 2, slots = 6, '
                     'seeds = [1], data = "data" }\n[reference]\nmethod = "lp"\n[[methods]]\nname = "oasis"\n')

    def unreadable(folder):
        raise PermissionError(13, "Permission denied", str(folder / "philly.csv"))

    monkeypatch.setattr(suite_mod, "_folder_fingerprint", unreadable)
    assert bench(suite, "--out", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "instances.import.data" in err and "cannot read the trace data" in err and "philly.csv" in err
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_file_instances_and_an_oracle_reference(tmp_path):
    """``files`` globs (relative to the suite) and ``reference.method`` = an oracle method."""
    root = Path(__file__).resolve().parents[1]
    (tmp_path / "inst").mkdir()
    shutil.copy(root / "instances" / "hetero-toy.toml", tmp_path / "inst" / "a.toml")
    suite = tmp_path / "files.toml"
    suite.write_text('problem = "hetero"\n[instances]\nfiles = ["inst/*.toml"]\n[reference]\nmethod = "brute-force"\n'
                     '[[methods]]\nname = "greedy"\n')
    todo = tasks_mod.expand(load_suite(suite))
    assert [(t.instance.name, t.label, t.seed) for t in todo] == [("inst/a.toml", "brute-force", 0), ("inst/a.toml", "greedy", 0)]
    rows = [tasks_mod.run_task(t) for t in todo]
    report.fill_references(rows, "brute-force", 1e-6)
    assert [r["check"] for r in rows] == ["ok", "ok"]
    assert rows[0]["ratio"] == 1.0 and rows[0]["reference_kind"] == "oracle" and not rows[0]["certified"]
    assert rows[1]["ratio"] >= 1.0


# --- one task ------------------------------------------------------------------------------------

def test_a_task_that_raises_is_an_error_row(monkeypatch):
    from mlsched_opt.problems import get_family

    task = next(t for t in tasks_mod.expand(load_suite(PACKING)) if t.method == "ffd")
    family = get_family("packing")

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setitem(family.methods, "ffd", dataclasses.replace(family.methods["ffd"], run=boom))
    row = tasks_mod.run_task(task)
    assert row["status"] == "error" and row["message"] == "RuntimeError: boom" and row["check"] == "none"
    assert "boom" in row["_traceback"] and row["key"] == task.key


# --- the sweeps ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SUITES))
def test_local_sweep_rows_have_ratios_and_verdicts(local_runs, name):
    folder = local_runs[name]
    rows = rows_of(folder)
    assert len(rows) == len(tasks_mod.expand(load_suite(SUITES[name])))
    for row in rows:
        assert row["status"] in ("optimal", "feasible"), row
        assert row["check"] == "ok", row  # every answer has the checker's verdict, and passes it
        assert row["ratio"] is not None and row["ratio"] >= 1.0, row
        assert row["certified"] and row["reference_kind"] == "optimum"
        if row["role"] == "reference":
            assert row["method"] == "exact" and row["ratio"] == 1.0
            assert row["certified_by"]
    senses = {r["sense"] for r in rows}
    assert senses == ({"max", "min"} if name == "packing" else {"max"})
    summary = list(csv.DictReader((folder / "summary.csv").open()))
    assert {s["label"] for s in summary} == {r["label"] for r in rows}
    text = (folder / "report.md").read_text()
    for png in ("ratio.png", "time.png", "objective.png", "quality_time.png"):
        assert (folder / png).stat().st_size > 0 and png in text
    if name == "oasis":  # the family's row extras, and every online method's decision times
        for row in rows:
            extra = json.loads(row["extra"])
            assert extra["completed"] >= 0
            assert ("bound_2alpha" in extra) == (row["method"] == "oasis"), row
            assert ("decision_ms" in extra) == (row["method"] == "oasis"), row  # the baselines state none
    for line in summary:  # the mean of the checked answers' objectives
        values = [r["objective"] for r in rows if r["label"] == line["label"] and r["setting"] == line["setting"]]
        if not line["setting"].startswith("all"):  # "all", or "all (max)" and "all (min)" where a suite has both senses
            assert float(line["mean_objective"]) == pytest.approx(sum(values) / len(values))
    if __import__("importlib").util.find_spec("pyarrow"):
        import pyarrow.parquet as pq

        table = pq.read_table(folder / "results.parquet")
        assert table.num_rows == len(rows) and table.column("ratio").to_pylist() == [r["ratio"] for r in rows]


@pytest.mark.parametrize("name", sorted(SUITES))
def test_dask_gives_the_same_objectives(local_runs, dask_runs, name):
    local = {r["key"]: r for r in rows_of(local_runs[name])}
    dask = {r["key"]: r for r in rows_of(dask_runs[name])}
    assert local.keys() == dask.keys()
    for key, row in local.items():
        assert (dask[key]["status"], dask[key]["objective"], dask[key]["ratio"]) == \
               (row["status"], row["objective"], row["ratio"]), row["label"]
    assert "executor `dask`" in (dask_runs[name] / "report.md").read_text()


def test_resume_runs_nothing_when_complete(local_runs, tmp_path, monkeypatch):
    folder = tmp_path / "again"
    shutil.copytree(local_runs["oasis"], folder)
    before = rows_of(folder)
    ran = []
    real = executors.execute
    monkeypatch.setattr(executors, "execute", lambda todo, *a, **k: (ran.append(len(todo)), real(todo, *a, **k)))
    assert bench(OASIS, "--out", folder, "--resume") == 0
    assert ran == [0]
    assert rows_of(folder) == before
    assert "0 tasks run, 10 taken from an earlier run" in (folder / "report.md").read_text()


def test_resume_after_a_crash_runs_only_what_is_missing(local_runs, tmp_path, monkeypatch):
    folder = tmp_path / "crashed"
    shutil.copytree(local_runs["packing"], folder)
    complete = rows_of(folder)
    lines = (folder / "results.csv").read_text().splitlines(keepends=True)
    # the sweep "died" after 20 rows, in the middle of writing the 21st
    (folder / "results.csv").write_text("".join(lines[:21]) + lines[21][:40])
    ran = []
    real = executors.execute
    monkeypatch.setattr(executors, "execute", lambda todo, *a, **k: (ran.append(len(todo)), real(todo, *a, **k)))
    assert bench(PACKING, "--out", folder, "--resume", "--workers", 2) == 0
    assert ran == [len(complete) - 20]
    again = rows_of(folder)
    assert [r["key"] for r in again] == [r["key"] for r in complete]
    assert [r["objective"] for r in again] == [r["objective"] for r in complete]


def crashing_run_task(task):
    """In the worker: seed 2's FFD raises (monkeypatched method), seed 3's FFD kills its process
    while it holds Pyomo's output-capture lock (which every later solve needs)."""
    from pyomo.common import dependencies

    from mlsched_opt.problems import get_family

    if task.method == "ffd" and task.instance.seed == 3:
        dependencies.capture_output_lock.acquire(timeout=1)  # the first killer poisons the inherited lock
        os._exit(3)
    if task.method == "ffd" and task.instance.seed == 2:
        family = get_family(task.problem)
        saved = family.methods["ffd"]

        def boom(*args, **kwargs):
            raise RuntimeError("boom in the worker")

        family.methods["ffd"] = dataclasses.replace(saved, run=boom)
        try:
            return tasks_mod.run_task(task)
        finally:
            family.methods["ffd"] = saved
    return tasks_mod.run_task(task)


def test_crashing_tasks_become_error_rows_and_the_sweep_completes(tmp_path, monkeypatch, capsys):
    suite = tmp_path / "crash.toml"
    suite.write_text('name = "crash"\nproblem = "packing"\n[instances]\ngenerate = { jobs = 4, servers = 2, seeds = [1, 2, 3] }\n'
                     '[reference]\nmethod = "lp"\n[[methods]]\nname = "ffd"\n')
    monkeypatch.setattr(executors, "run_task", crashing_run_task)
    assert bench(suite, "--out", tmp_path / "out", "--workers", 2) == 1  # rows need attention
    rows = {(r["instance"], r["method"]): r for r in rows_of(tmp_path / "out")}
    assert len(rows) == 6
    raised = rows[("packing-j4-s2-seed2", "ffd")]
    assert raised["status"] == "error" and raised["message"] == "RuntimeError: boom in the worker"
    died = rows[("packing-j4-s2-seed3", "ffd")]
    assert died["status"] == "error" and "worker process died" in died["message"]
    fine = [r for r in rows.values() if r["status"] != "error"]
    assert len(fine) == 4 and all(r["reference_kind"] == "bound" for r in fine)
    assert all(r["ratio"] >= 1 and r["certified"] for r in fine if r["method"] == "ffd")
    assert "boom in the worker" in (tmp_path / "out" / "errors.log").read_text()
    assert "Needs attention" in (tmp_path / "out" / "report.md").read_text()


# --- references, disputes and the report ---------------------------------------------------------

def _row(label, role, method, status, objective, check="ok", bound=None, certified_by="x", sense="max"):
    row = dict.fromkeys(tasks_mod.COLUMNS)
    row.update(instance="i", problem_options="{}", label=label, role=role, method=method, status=status,
               objective=objective, bound=bound, check=check, sense=sense, certified_by=certified_by, message="",
               solver="", solver_version="", setting="s", problem="packing", wall_s=0.1, jobs=4)
    return row


def test_a_beaten_optimum_is_disputed_and_never_the_reference():
    rows = [_row("exact (highs)", "reference", "exact", "optimal", 10.0, bound=10.0),
            _row("exact (cpsat)", "reference", "exact", "optimal", 12.0, bound=12.0),
            _row("ffd", "method", "ffd", "feasible", 11.0, certified_by="")]
    report.fill_references(rows, "exact", 1e-6)
    assert [r["status"] for r in rows] == ["disputed", "optimal", "feasible"]
    assert "beaten by exact (cpsat)" in rows[0]["message"]
    assert [r["reference"] for r in rows] == [12.0] * 3
    assert [round(r["ratio"], 6) for r in rows] == [1.2, 1.0, round(12 / 11, 6)]


def test_ratios_against_a_bound_and_a_refuted_bound():
    rows = [_row("lp", "reference", "lp", "optimal", 8.0, check="none", sense="min"),
            _row("ffd", "method", "ffd", "feasible", 10.0, certified_by="", sense="min")]
    report.fill_references(rows, "lp", 1e-6)
    assert rows[1]["ratio"] == 1.25 and rows[1]["certified"] and rows[1]["reference_kind"] == "bound"
    assert rows[0]["ratio"] is None
    wrong = [_row("lp", "reference", "lp", "optimal", 12.0, check="none", sense="min"),
             _row("ffd", "method", "ffd", "feasible", 10.0, certified_by="", sense="min")]
    report.fill_references(wrong, "lp", 1e-6)  # a checked answer below a lower bound: the bound is wrong
    assert wrong[0]["status"] == "disputed" and wrong[1]["ratio"] is None and wrong[1]["reference_kind"] == "none"


def test_best_reference_is_the_best_checked_answer_never_certified():
    rows = [_row("a", "method", "a", "feasible", 10.0, certified_by="", sense="min"),
            _row("b", "method", "b", "feasible", 8.0, certified_by="", sense="min"),
            _row("c", "method", "c", "feasible", 5.0, check="failed", certified_by="", sense="min"),  # refused: no reference
            _row("d", "method", "d", "optimal", 7.0, certified_by="", sense="min")]
    rows[3]["check"] = "failed"  # a claimed optimum the checker refuses is disputed, never the best
    report.fill_references(rows, "best", 1e-6)
    assert [r["reference"] for r in rows] == [8.0] * 4 and {r["reference_kind"] for r in rows} == {"best"}
    assert [r["ratio"] for r in rows] == [1.25, 1.0, None, None]
    assert not any(r["certified"] for r in rows) and rows[3]["status"] == "disputed"
    (a, _b, c, _d) = report.summarize(rows)
    assert (a["mean_objective"], c["mean_objective"]) == (10.0, None)  # only checked answers are averaged


def test_summary_percentiles_and_infinite_ratios():
    rows = []
    for ratio in (1.0, 1.5, 2.0, float("inf")):
        r = _row("m", "method", "m", "feasible", 1.0)
        r.update(ratio=ratio, certified=True)
        rows.append(r)
    (line,) = report.summarize(rows)
    assert (line["n"], line["median_ratio"], line["p90_ratio"], line["worst_ratio"]) == (4, 1.75, float("inf"), float("inf"))


def test_report_hooks_and_missing_pyarrow(local_runs, tmp_path, monkeypatch):
    import sys

    from mlsched_opt.bench.report import finish

    seen = []

    def hook(rows, out, plt):
        seen.append(len(rows))
        fig, _ax = plt.subplots()
        path = out / "family.png"
        fig.savefig(path)
        return [path]

    monkeypatch.setitem(report.PLOT_HOOKS, "oasis", [hook, "no.such.module:plot"])
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    rows = rows_of(local_runs["oasis"])
    finish(tmp_path, load_suite(OASIS), rows, {"executor": "local"})
    text = (tmp_path / "report.md").read_text()
    assert seen == [len(rows)] and "family.png" in text
    assert "plot hook 'no.such.module:plot' failed" in text
    assert "pyarrow is not installed" in text and not (tmp_path / "results.parquet").exists()
    assert json.loads(rows[0]["problem_options"]) == {}


def test_the_harness_stops_a_task_far_past_its_time_limit(monkeypatch):
    import time

    from mlsched_opt.problems import get_family

    task = next(t for t in tasks_mod.expand(load_suite(PACKING)) if t.method == "ffd")
    family = get_family("packing")

    def hang(*args, **kwargs):
        time.sleep(30)

    monkeypatch.setitem(family.methods, "ffd", dataclasses.replace(family.methods["ffd"], run=hang))
    monkeypatch.setattr(tasks_mod, "HARD_FACTOR", 0.0)
    monkeypatch.setattr(tasks_mod, "HARD_GRACE_S", 0.5)
    row = tasks_mod.run_task(task)
    assert row["status"] == "error" and "stopped by the harness" in row["message"]


def test_hetero_row_extras_are_the_checked_fairness_measures():
    from mlsched_opt.io import load_instance
    from mlsched_opt.problems import check_solution, get_family
    from mlsched_opt.problems.hetero.methods import bench_extra
    from mlsched_opt.solvers import SolveOptions

    inst = load_instance(Path(__file__).resolve().parent.parent / "instances" / "hetero-toy.toml")
    sol = get_family("hetero").run(inst, "sampling", SolveOptions(seed=1))
    extra = bench_extra(inst, sol, {})
    assert set(extra) == {"jain_slowdown", "jain_jct", "max_slowdown"}
    assert 0 < extra["jain_slowdown"] <= 1 and extra["max_slowdown"] > 0
    assert check_solution(inst, sol).feasible
    assert "hetero" in tasks_mod.ROW_EXTRAS and bench_extra(inst, dataclasses.replace(sol, decision={}), {}) == {}


def stuck_in_native_code(task):
    """A task that ignores the in-process backstop, as a solver inside native code does: SIGALRM is
    blocked, so only the worker's watchdog can end it."""
    import signal
    import time as _time

    if task.method == "ffd" and task.instance.seed == 2:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        _time.sleep(600)
    return tasks_mod.run_task(task)


def test_a_task_stuck_past_every_backstop_is_ended_and_named(tmp_path):
    import dataclasses

    suite = tmp_path / "stuck.toml"
    suite.write_text('name = "stuck"\nproblem = "packing"\n[instances]\ngenerate = { jobs = 4, servers = 2, seeds = [1, 2] }\n'
                     '[reference]\nmethod = "lp"\n[[methods]]\nname = "ffd"\n')
    # only the stuck task gets the short limits: the others may take their time on a loaded machine
    todo = [dataclasses.replace(t, backstop_s=0.5, kill_s=1.0) if (t.method, t.instance.seed) == ("ffd", 2) else t
            for t in tasks_mod.expand(load_suite(suite))]
    rows: list[dict] = []
    executors.execute(todo, rows.append, "local", 2, fn=stuck_in_native_code)
    by = {(r["instance"], r["method"]): r for r in rows}
    assert len(rows) == 4  # one row per task, the stuck one not re-run
    stuck = by[("packing-j4-s2-seed2", "ffd")]
    assert stuck["status"] == "error" and "stopped by the harness after 1 s" in stuck["message"]
    assert "stuck in native code" in stuck["message"]
    assert all(r["status"] != "error" for k, r in by.items() if k != ("packing-j4-s2-seed2", "ffd"))
    assert "Timeout" in stuck["_traceback"]  # where it was stuck, for errors.log


def test_quiet_bench_prints_no_progress(tmp_path, capsys):
    suite = tmp_path / "q.toml"
    suite.write_text('name = "q"\nproblem = "packing"\n[instances]\ngenerate = { jobs = 4, servers = 2, seeds = [1] }\n'
                     '[reference]\nmethod = "lp"\n[[methods]]\nname = "ffd"\n')
    _register()
    with pytest.raises(SystemExit) as exc:
        main(["--quiet", "bench", str(suite), "--out", str(tmp_path / "out"), "--workers", "1"])
    assert exc.value.code == 0
    assert "bench:" not in capsys.readouterr().err
    assert bench(suite, "--out", tmp_path / "loud", "--workers", 1) == 0
    assert "bench: 2/2 (100%)" in capsys.readouterr().err


def test_the_code_version_in_every_key_follows_the_catalog_and_the_code(tmp_path):
    catalog = tmp_path / "catalog"
    shutil.copytree(shipped_catalog_dir(), catalog)
    before = tasks_mod.code_version(str(catalog))
    assert tasks_mod.code_version(str(catalog)) == before
    toml = next(catalog.rglob("*.toml"))
    toml.write_text(toml.read_text() + "\n# edited\n")
    assert tasks_mod.code_version(str(catalog)) != before


def test_the_code_version_follows_an_edit_of_the_package_source(tmp_path):
    package = Path(tasks_mod.__file__).resolve().parents[1]
    copy = tmp_path / "mlsched_opt"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = tasks_mod.code_version(package=copy)
    assert before == tasks_mod.code_version(package=package)  # the same bytes, the same version
    target = copy / "problems" / "packing" / "methods.py"
    target.write_text(target.read_text() + "\n# a fix\n")
    assert tasks_mod.code_version(package=copy) != before


def test_a_method_may_not_take_the_reference_rows_label(tmp_path):
    suite = tmp_path / "dup.toml"
    suite.write_text('name = "dup"\nproblem = "packing"\n[instances]\ngenerate = { jobs = 4, servers = 2, seeds = [1] }\n'
                     '[reference]\nmethod = "exact"\nsolvers = ["highs"]\n[[methods]]\nname = "exact"\nsolvers = ["highs"]\n')
    with pytest.raises(UserError, match=r"label 'exact \(highs\)' is already used by reference"):
        load_suite(suite)
