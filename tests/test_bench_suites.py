"""The benchmark suites in benchmarks/*.toml parse and expand to tasks (no solving)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlsched_opt.bench.suite import load_suite
from mlsched_opt.bench.tasks import expand

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SUITES = sorted(BENCHMARKS.glob("*.toml"))


def test_there_are_suites():
    assert SUITES, f"no suite in {BENCHMARKS}"


@pytest.mark.parametrize("path", SUITES, ids=lambda p: p.name)
def test_suite_loads_and_expands(path: Path):
    suite = load_suite(path)
    assert suite.instances and suite.methods
    tasks = expand(suite)
    per_unit = sum(len(m.solvers) if m.kind == "exact" else 1 for m in (*suite.reference_methods, *suite.methods))
    assert len(tasks) == len(suite.instances) * len(suite.option_grid) * per_unit
    assert len({t.key for t in tasks}) == len(tasks)
    # every suite file opens with what it measures and says how to run it
    text = path.read_text()
    assert text.startswith("# ") and suite.description, path.name
    assert f"mlsched bench benchmarks/{path.name}" in text


def test_no_benchmark_script_rewrites_the_harness():
    """The ratio studies are suites; what stays a script times internals (micro/), the CLI
    start-up of every import pair (import_traces.py) or whole CLI processes against their time
    limit with their peak memory (scale.py, scale_hard.py, short_limits.py; locality_pooled.py, which also sets each
    answer against the bound the family had before, not a method) or against Python's own start-up
    (startup.py), which no in-process suite row can express; trains an
    outside library's agent, which is no method of the family (harmony_gym.py); or draws the
    learning curves that trained policy files carry (harmony_curve.py); or replays arrivals resampled
    from a pod list until a demand target, against an LP over the arrivals that is no method's bound
    (fragmentation.py)."""
    scripts = {p.relative_to(BENCHMARKS).as_posix() for p in BENCHMARKS.rglob("*.py")}
    assert scripts == {"fragmentation.py", "import_traces.py", "scale.py", "scale_hard.py", "short_limits.py", "startup.py",
                       "locality_pooled.py",
                       "harmony_gym.py",
                       "harmony_curve.py", "micro/certify_cost.py",
                       "micro/harmony_headroom.py", "micro/harmony_search.py", "micro/locality_lp.py"}


def test_an_inline_table_replaces_a_whole_table():
    """What the suite files advise for an LP-bound variant: the exact-only keys go with the table."""
    path = BENCHMARKS / "hetero_scale.toml"
    with pytest.raises(Exception, match="solvers applies to method"):
        load_suite(path, sets=["reference.method=lp"])
    suite = load_suite(path, sets=['reference={method="lp"}'])
    assert suite.reference == "lp" and [m.kind for m in suite.reference_methods] == ["lp"]


@pytest.mark.slow
def test_the_scale_ladder_measures_whole_cli_processes(tmp_path, data_dir):
    """benchmarks/scale.py on one small point: the solve is a process of its own, within its limit,
    checked, with its proven bound and certified ratio, and the table and plot are written."""
    out = tmp_path / "scale"
    done = subprocess.run([sys.executable, str(BENCHMARKS / "scale.py"), "--out", str(out), "--families", "packing-servers",
                           "--ladder", "20:26", "--time-limit", "60"], capture_output=True, text=True,
                          env={**os.environ, "MLSCHED_SHARED_DATA": str(data_dir)}, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader((out / "scale.csv").open()))
    assert len(rows) == 1
    row = rows[0]
    assert row["status"] == "feasible" and row["check"] == "ok" and row["within_limit"] == "True", row
    assert float(row["ratio_bound"]) >= 1 and float(row["bound"]) <= float(row["objective"])  # min servers: bound below
    assert int(row["peak_mb"]) > 0 and float(row["wall_s"]) > 0
    assert "| packing-servers | ffd |" in (out / "scale.md").read_text()
    assert (out / "scale.png").stat().st_size > 0


def test_the_hard_ladder_rates_only_against_bounds_it_may_trust():
    """scale_hard.py's bracket: a bound from a run whose answer failed the checker, or one that a
    checked answer beats, is not the point's best bound (the comparison's rule)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("scale_hard", BENCHMARKS / "scale_hard.py")
    assert spec is not None and spec.loader is not None
    hard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hard)

    def row(method, objective, bound, check="ok", status="feasible"):
        return {"run": "r", "jobs": 10, "method": method, "sense": "min", "objective": objective, "bound": bound,
                "check": check, "status": status}

    rows = [row("exact", 12.0, 9.0, check="FAILED"), row("a", 10.0, 8.0), row("b", 11.0, None)]
    hard.rate(rows)
    assert rows[1]["best_bound"] == 8.0 and rows[1]["ratio"] == pytest.approx(10 / 8) and rows[0]["ratio"] is None
    rows = [row("exact", 12.0, 11.5), row("a", 11.0, 10.0)]   # 11 beats the "lower bound" 11.5
    hard.rate(rows)
    assert rows[0]["best_bound"] == 10.0 and rows[0]["bracket"] == pytest.approx(11 / 10)
