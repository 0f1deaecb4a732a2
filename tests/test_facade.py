"""The library's facade (``import mlsched_opt as ms``) is the product the CLI prints (issue 33): the
example of the issue runs as written, ``ms.solve`` answers what ``mlsched solve --json`` answers for
every method of every family, and importing the package loads no solver."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mlsched_opt.io import load_instance
from mlsched_opt.problems import REGISTRY

from .conftest import DEMO, ROOT

TOYS = {"packing": "demo", "smd": "smd-toy", "oasis": "oasis-toy", "hetero": "hetero-toy", "locality": "locality-toy",
        "harmony": "harmony-toy"}
CASES = [pytest.param(family, method, id=f"{family}-{method}")
         for family, toy in TOYS.items() for method, m in REGISTRY[family].methods.items() if m.kind != "oracle" and m.available]


def test_the_issues_example_runs_as_written(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "instances", tmp_path / "instances")
    monkeypatch.chdir(tmp_path)
    import mlsched_opt as ms

    inst = ms.load("instances/demo.toml")
    run = ms.solve(inst, "ffd", solver=None, time_limit=60, gap=1e-6, threads=None, seed=0,
                   certify=True, bound=True, options={"objective": "weight"})
    assert (run.status, run.objective, run.check.feasible) == ("feasible", 36.0, True)
    assert run.bound == pytest.approx(43.000036) and run.ratio == pytest.approx(run.bound / 36) and run.gap > 0
    run.save("ffd.sol.json")
    assert str(run).startswith("packing / ffd on demo: feasible") and "check: ok" in str(run)
    cmp = ms.compare(inst, ["exact", "ffd", "pop"], solvers=("highs", "cpsat"))
    frame = cmp.to_frame()
    assert list(frame["label"]) == ["exact (highs)", "exact (cpsat)", "ffd", "pop", "lp-relaxation (bound)"]
    assert list(frame["status"])[:2] == ["optimal", "optimal"] and frame["ratio"][2] == pytest.approx(42 / 36)
    assert ms.check(inst, "ffd.sol.json").feasible
    generated = ms.generate("oasis", jobs=8, servers=2, seed=3)
    assert len(generated.jobs) == 8 and generated.default_problem == "oasis"
    assert "oasis" in ms.families() and "oasis" in ms.family("oasis").methods
    with pytest.raises(TypeError):
        ms.families()["mine"] = ms.family("oasis")  # the registry, read only
    assert "<table>" in run._repr_html_() and "<table" in cmp._repr_html_()


@pytest.mark.parametrize("family, method", CASES)
def test_the_facade_answers_what_the_command_prints(family, method, run, tmp_path):
    import mlsched_opt as ms

    path = ROOT / "instances" / f"{TOYS[family]}.toml"
    out = tmp_path / "sol.json"
    code, text, err = run("solve", path, "--method", method, "--json", "--threads", "1", "--time-limit", "60", "--out", out)
    assert code in (0, 1), err
    printed = json.loads(text)
    got = ms.solve(load_instance(path), method, threads=1, time_limit=60)
    assert got.status == printed["status"] and got.objective == printed["objective"]
    if got.status != "feasible" or ms.family(family).method(method).kind != "exact":  # an anytime exact's bound may be timed
        assert got.bound == printed["bound"]
    assert (got.check.to_dict() if got.check else None) == printed["check"]
    assert got.decision == json.loads(out.read_text()).get("decision")


def test_importing_the_package_and_its_help_load_no_solver():
    code = textwrap.dedent("""
        import sys
        import mlsched_opt as ms
        ms.__version__
        from mlsched_opt.cli import cli
        from click.testing import CliRunner
        assert CliRunner().invoke(cli, ["--help"]).exit_code == 0
        heavy = ("scipy", "pyomo", "highspy", "ortools", "pyscipopt", "dask", "torch", "pandas")
        print([m for m in heavy if m in sys.modules])
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_a_heuristic_solve_loads_no_model_builder_or_solver():
    """``mlsched solve demo --method ffd --no-bound``: FFD needs numpy and nothing of Pyomo, SciPy or
    the solvers (issue 33: they took 12 times the start-up of numpy + click)."""
    code = textwrap.dedent(f"""
        import sys
        from mlsched_opt.cli import main
        try:
            main(["solve", {str(DEMO)!r}, "--method", "ffd", "--no-bound"])
        except SystemExit as done:
            assert done.code == 0, done.code
        heavy = ("scipy", "pyomo", "highspy", "ortools", "pyscipopt", "dask", "torch", "pandas")
        print([m for m in heavy if m in sys.modules])
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr


def test_a_comparison_keeps_each_runs_answer_and_rates_it():
    import mlsched_opt as ms

    inst = ms.load(DEMO)
    cmp = ms.compare(inst, ["exact", "ffd"], solvers=("highs",))
    exact, ffd = cmp.run("exact (highs)"), cmp.run("ffd")
    assert [r.label for r in cmp.runs] == ["exact (highs)", "ffd"] and ffd.decision is not None
    assert ffd.ratio == pytest.approx(42 / 36) and not ffd.ratio_is_bound  # against the comparison's proven optimum
    assert ffd.ratio_to(exact) == pytest.approx(42 / 36) and ffd.ratio_to(42.0) == pytest.approx(42 / 36)
    assert repr(ffd).startswith("Run(packing/ffd on 'demo': feasible") and "object at" not in repr(cmp)
    with pytest.raises(KeyError, match="no run labelled"):
        cmp.run("pop")


def test_a_real_trace_imports_as_an_instance_in_process(data_dir, tmp_path, run):
    import mlsched_opt as ms

    inst = ms.import_trace("philly", "oasis", jobs=20, servers=4, seed=1, data=data_dir)
    out = tmp_path / "philly.json"
    code, _, err = run("import", "philly", "--problem", "oasis", "--jobs", "20", "--servers", "4", "--seed", "1",
                       "--data", data_dir, "-o", out)
    assert code == 0, err
    assert inst.sha256 == load_instance(out).sha256  # the same instance as the command writes


@pytest.mark.parametrize("family, method, instance", [("oasis", "oasis", "oasis-toy"), ("locality", "greedy-rr", "locality-toy"),
                                                      ("locality", "pd-rr", "locality-toy"), ("harmony", "marginal", "harmony-toy"),
                                                      ("harmony", "tetris", "harmony-toy")])
def test_online_methods_report_their_decision_times_as_a_field(family, method, instance):
    """Per arriving job, in milliseconds, in ``report.decision_ms`` (issue 33: no longer read back from the message;
    issue 38: the median too, and harmony's simulated methods as well)."""
    import mlsched_opt as ms
    from mlsched_opt.problems.base import timings

    run = ms.solve(ms.load(ROOT / "instances" / f"{instance}.toml"), method, time_limit=30, bound=False)
    times = run.report.decision_ms
    assert times is not None and set(times) == {"mean", "p50", "p95", "max"}, times
    assert 0 <= times["mean"] <= times["max"] and 0 <= times["p50"] <= times["p95"] <= times["max"]
    # the message states the same figures (rounded), and a message without p50 still reads
    assert set(timings(run.report.message)) == {"mean", "p50", "p95", "max"}
    assert timings("1.00 ms per arriving job (p95 2.00, max 3.00)") == {"mean": 1.0, "p95": 2.0, "max": 3.0}


def test_bundled_instances_load_by_name_and_a_real_file_wins(tmp_path, monkeypatch):
    """``ms.load("demo")`` and ``mlsched solve demo`` read the bundled instance (the wheel ships
    them: tests/test_wheel.py); a file of that name in the folder wins; an unknown bare name is
    refused listing the bundled ones."""
    import mlsched_opt as ms
    from mlsched_opt.cli import main

    bundled = ms.examples()
    assert set(bundled) == {p.stem for p in (ROOT / "instances").glob("*.toml")}
    monkeypatch.chdir(tmp_path)
    assert ms.load("demo").sha256 == load_instance(DEMO).sha256
    with pytest.raises(ms.UserError, match=r"^nope: no such file, nor a bundled example \(bundled: demo, harmony-40jobs"):
        ms.load("nope")
    with pytest.raises(ms.UserError, match="no such file"):
        ms.load("nope.toml")  # a path, not a name: the reader's error
    (tmp_path / "demo").write_text("")
    with pytest.raises(ms.UserError, match=r"^demo: unknown file type"):
        ms.load("demo")  # the file in the folder, not the bundled demo
    (tmp_path / "demo").unlink()
    with pytest.raises(SystemExit) as done:
        main(["validate", "oasis-toy"])
    assert done.value.code == 0


def test_the_facade_names_are_the_typed_ones_mypy_sees(tmp_path):
    """mypy sees every ``ms.*`` name's real signature (the TYPE_CHECKING imports of __init__.py), not
    ``Any``: a wrong keyword type is an error, the README's use is none.  One mypy run, on the
    project's cache."""
    import ast

    import mlsched_opt as ms

    tree = ast.parse((ROOT / "mlsched_opt" / "__init__.py").read_text(encoding="utf-8"))
    typed = {f"{node.module}:{a.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
             and node.module.startswith("mlsched_opt") for a in node.names}
    assert typed == set(ms._FACADE.values())  # the lazy names and the typed ones are the same objects
    script = tmp_path / "user.py"
    script.write_text(textwrap.dedent("""
        import mlsched_opt as ms

        inst = ms.load("demo")
        run = ms.solve(inst, "ffd", time_limit=60)
        ratio: float | None = run.ratio
        ok: bool = ms.check(inst, "ffd.sol.json").feasible
        ms.solve(inst, "ffd", time_limit="sixty")  # line 8
        ms.generate("oasis", jobs="8", servers=2, seed=3)  # line 9
    """))
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    assert mypy, "mypy (the test extra) is not installed"
    done = subprocess.run([mypy, "--no-error-summary", "--cache-dir", str(ROOT / ".mypy_cache"), "--config-file",
                           str(ROOT / "pyproject.toml"), str(script)], cwd=ROOT, capture_output=True, text=True)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["8", "9"], done.stdout + done.stderr
    assert '"time_limit" to "solve" has incompatible type "str"' in errors[0], errors
