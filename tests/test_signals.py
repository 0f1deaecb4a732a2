"""A command ended early keeps its promises: Ctrl-C returns the best answer so far (checked, marked
interrupted, written), a second Ctrl-C and SIGTERM end at once leaving no temporary file, and a
short time limit still gets the cheapest answer (issue 31).  Each runs ``mlsched`` as a process of
its own, where the signal handling is armed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import DEMO, correlated_knapsack

#: a method that runs until it is told to stop (its deadline or a Ctrl-C), then answers as FFD
LOOPING_FFD = """
import dataclasses
import time
from pathlib import Path
from mlsched_opt import clock
from mlsched_opt.problems import REGISTRY
family = REGISTRY["packing"]
real = family.methods["ffd"].run
def looping(instance, options, solve_options):
    Path({marker!r}).write_text("running")
    deadline = time.perf_counter() + solve_options.time_limit
    while not clock.past(deadline):
        time.sleep(0.01)
    return real(instance, options, solve_options)
family.methods["ffd"] = dataclasses.replace(family.methods["ffd"], run=looping)
"""


def _start(tmp_path: Path, *args, site: str = "") -> subprocess.Popen:
    env = dict(os.environ)
    if site:
        folder = tmp_path / "site"
        folder.mkdir(exist_ok=True)
        (folder / "sitecustomize.py").write_text(textwrap.dedent(site))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    code = "import sys; sys.argv[0] = 'mlsched'; from mlsched_opt.cli import console_main; console_main()"
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tmp_path)


def _wait_for(path: Path, proc: subprocess.Popen, seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "the method never started"
        time.sleep(0.05)


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".") and ".tmp" in p.name]


def test_ctrl_c_in_a_running_method_returns_its_best_answer_checked_and_written(tmp_path):
    marker, out = tmp_path / "started", tmp_path / "sol.json"
    proc = _start(tmp_path, "solve", DEMO, "--method", "ffd", "--time-limit", "300", "--json", "--out", out,
                  site=LOOPING_FFD.format(marker=str(marker)))
    _wait_for(marker, proc)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    doc = json.loads(stdout)
    assert doc["status"] == "feasible" and doc["check"]["feasible"] and "interrupted (Ctrl-C)" in doc["message"]
    assert json.loads(out.read_text())["report"]["objective"] == doc["objective"]
    assert "returning the best answer so far" in stderr and not _leftovers(tmp_path)


HIGHS_STARTED = """
from pathlib import Path
from mlsched_opt.solvers import pyomo_run
real = pyomo_run.solve_highs
def marked(model, options):
    Path({marker!r}).write_text("searching")
    return real(model, options)
pyomo_run.solve_highs = marked
"""


def test_ctrl_c_stops_a_highs_search_with_the_incumbent(tmp_path):
    hard, marker = tmp_path / "hard.json", tmp_path / "searching"
    hard.write_text(json.dumps(correlated_knapsack(n=120, servers=14, seed=3)))
    proc = _start(tmp_path, "solve", hard, "--method", "exact", "--time-limit", "600", "--json", "--no-certify",
                  site=HIGHS_STARTED.format(marker=str(marker)))
    _wait_for(marker, proc)
    time.sleep(1)  # HiGHS is searching (this instance takes it minutes)
    began = time.monotonic()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    doc = json.loads(stdout)
    assert doc["status"] == "feasible" and doc["check"]["feasible"] and doc["bound"] is not None
    assert "interrupted (Ctrl-C)" in doc["message"]
    assert time.monotonic() - began < 300  # it did not run to its limit


def test_a_second_ctrl_c_and_sigterm_end_at_once_without_temporary_files(tmp_path):
    for signals, code in (((signal.SIGINT, signal.SIGINT), 130), ((signal.SIGTERM,), 143)):
        marker, out = tmp_path / f"started{code}", tmp_path / f"sol{code}.json"
        stall = f"""
            import time
            from pathlib import Path
            from mlsched_opt.problems import base
            def stall(*args, **kwargs):
                Path({str(marker)!r}).write_text("running")
                time.sleep(600)  # deaf to the first Ctrl-C: only the watchdog or a second signal ends it
            base.Family.run = stall
        """
        proc = _start(tmp_path, "solve", DEMO, "--method", "ffd", "--time-limit", "600", "--out", out, site=stall)
        _wait_for(marker, proc)
        for sig in signals:
            proc.send_signal(sig)
            time.sleep(0.2)
        _stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == code, stderr
        assert ("terminated" if code == 143 else "interrupted") in stderr
        assert not out.exists() and not _leftovers(tmp_path)


@pytest.mark.parametrize("method, limit", [("ffd", "2"), ("exact", "3")])
def test_a_short_time_limit_still_gets_an_answer(tmp_path, method, limit):
    """The watchdog is armed at the process start and an exact method answers with its quick start
    first: even a short limit ends in a checked answer (not time-limit-no-solution)."""
    proc = _start(tmp_path, "solve", DEMO, "--method", method, "--time-limit", limit, "--json")
    stdout, stderr = proc.communicate(timeout=120)
    doc = json.loads(stdout)
    assert proc.returncode == 0, stderr
    assert doc["status"] in ("optimal", "feasible") and doc["check"]["feasible"]
