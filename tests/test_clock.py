"""--time-limit is a promise for the whole command: each phase gets what is left, an approximation
reports a proven bound in the time it leaves, and a phase that does not return is ended by the
watchdog with what the command has (issue 18)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mlsched_opt.clock import (
    CommandClock,
    ProgressBar,
    default_threads,
    listening,
    process_age,
    progress,
    search_status,
    usable_cpus,
)
from mlsched_opt.problems.base import Family
from mlsched_opt.report import SolveReport

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "instances" / "demo.toml"


def test_process_age_is_the_time_since_this_process_started():
    age = process_age()
    assert age > 0
    child = subprocess.run([sys.executable, "-c", "from mlsched_opt.clock import process_age; print(process_age())"],
                           capture_output=True, text=True, check=True)
    assert float(child.stdout) < age  # a fresh process is younger than this one


def test_each_phase_gets_what_is_left_less_the_reserve():
    clock = CommandClock(time.perf_counter() - 4.0, 10.0)  # 4 s already gone
    assert clock.budget() == pytest.approx(10 - 4 - 0.5, abs=0.05)  # 5 % kept for checking and writing
    assert clock.budget(keep=2.0) == pytest.approx(10 - 4 - 0.5 - 2, abs=0.05)
    late = CommandClock(time.perf_counter() - 20.0, 10.0)
    assert late.budget() == 0.01  # past the deadline a phase still starts, and an anytime method returns at once


def test_an_approximation_reports_the_familys_proven_bound_and_the_certified_ratio(run):
    code, out, _ = run("solve", DEMO, "--method", "ffd", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["status"] == "feasible" and doc["check"]["feasible"]
    assert doc["bound"] >= doc["objective"] > 0  # max: the LP relaxation is above every answer
    ratio = doc["bound"] / doc["objective"]
    assert f"ratio <= {ratio:.6g} (certified)" in doc["message"]
    code, out, _ = run("solve", DEMO, "--method", "exact", "--json")
    assert json.loads(out)["objective"] <= doc["bound"] + 1e-9
    code, out, _ = run("solve", DEMO, "--method", "ffd", "--json", "--no-bound")
    assert code == 0 and json.loads(out)["bound"] is None


def test_a_bound_the_checked_answer_beats_is_disputed_not_reported(run, monkeypatch):
    def too_low(self, instance, options, solve_options):
        return SolveReport(status="optimal", objective=1.0, bound=1.0, sense="max", solver="fake", solver_version="")

    monkeypatch.setattr(Family, "lp_bound", too_low)
    code, out, err = run("solve", DEMO, "--method", "ffd", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["status"] == "disputed" and doc["bound"] is None
    assert "is beaten by the checked answer" in doc["message"] and "DISPUTED" in err


STALL = """
import time
from mlsched_opt.problems import base
def stall(*args, **kwargs):
    time.sleep(600)  # a phase that never returns in time (a model still in Pyomo, a solver past its limit)
base.Family.{name} = stall
"""


def _mlsched_process(tmp_path, site_code: str, *args):
    """Run ``mlsched`` as a process of its own (the watchdog is armed), after ``site_code`` (a
    sitecustomize that plants the fault)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(site_code))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    code = "import sys; from mlsched_opt.cli import console_main; sys.argv[0] = 'mlsched'; console_main()"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp_path)


def _stalled(tmp_path, name, *args):
    """``mlsched`` in a process of its own, with ``Family.<name>`` stalled."""
    return _mlsched_process(tmp_path, STALL.format(name=name), *args)


def test_the_watchdog_ends_a_stalled_solve_with_no_solution_and_writes_the_report(tmp_path):
    out = tmp_path / "sol.json"
    done = _stalled(tmp_path, "run", "solve", DEMO, "--method", "exact", "--time-limit", "8", "--out", out)
    assert done.returncode == 3, done.stderr  # no answer at the limit: its own exit code
    assert "time-limit-no-solution" in done.stdout
    assert "stopped at the command's time limit (8 s) in --method exact" in done.stdout
    report = json.loads(out.read_text())["report"]
    assert report["status"] == "time-limit-no-solution" and report["solver"] == "highs"


def test_the_watchdogs_answer_is_printed_while_a_solver_log_capture_holds_the_output(tmp_path):
    """With --verbose a solver's log is captured (Pyomo's capture_output holds fd 1 and 2 and
    sys.stdout for a reader thread); a deadline inside it still prints the answer where the
    command's output goes."""
    done = _mlsched_process(tmp_path, """
        import io, time
        from pyomo.common.tee import capture_output
        from mlsched_opt.problems import base
        def stall(*args, **kwargs):
            with capture_output(io.StringIO(), capture_fd=True):
                time.sleep(600)
        base.Family.run = stall
    """, "-v", "solve", DEMO, "--method", "exact", "--time-limit", "8", "--json")
    assert done.returncode == 3, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "time-limit-no-solution"
    assert "stopped at the command's time limit (8 s) in --method exact" in doc["message"]


def test_the_watchdog_keeps_the_answer_when_the_bound_stalls(tmp_path):
    done = _stalled(tmp_path, "lp_bound", "solve", DEMO, "--method", "ffd", "--time-limit", "8", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "feasible" and doc["check"]["feasible"] and doc["bound"] is None
    assert "stopped at the command's time limit (8 s) in the bound" in doc["message"]


def test_a_single_solve_uses_every_usable_core_unless_told(run, monkeypatch):
    monkeypatch.delenv("MLSCHED_THREADS")
    assert default_threads() == usable_cpus()
    code, out, _ = run("solve", DEMO, "--method", "exact", "--json")
    assert code == 0 and json.loads(out)["options"]["threads"] == usable_cpus()
    monkeypatch.setenv("MLSCHED_THREADS", "1")
    code, out, err = run("solve", DEMO, "--method", "exact", "--json", "--no-certify")
    assert code == 0 and json.loads(out)["options"]["threads"] == 1, out + err
    code, out, _ = run("solve", DEMO, "--method", "exact", "--json", "--threads", "3", "--no-certify")
    assert code == 0 and json.loads(out)["options"]["threads"] == 3  # the command line wins
    monkeypatch.setenv("MLSCHED_THREADS", "many")
    code, _, err = run("solve", DEMO, "--method", "exact")
    assert code == 2 and "$MLSCHED_THREADS" in err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_drawn_on_a_terminal_only_and_cleared():
    screen = _Terminal()
    bar = ProgressBar("--method oasis", stream=screen, every_s=0.0)
    with listening(bar, bar.show):
        progress(0, 4)
        progress(2, 4)
        search_status(36.0, 43.0)
        progress(4, 4)
    bar.close()
    text = screen.getvalue()
    assert "--method oasis" in text and "0/4" in text and "2/4" in text and "4/4" in text and " jobs" in text
    assert "incumbent 36, bound 43, gap 16.3%" in text
    assert text.endswith("\r") or text.endswith("\x1b[A")  # the line is cleared for what follows (leave=False)
    pipe = io.StringIO()  # not a terminal: nothing (a log or a pipe stays clean)
    quiet = ProgressBar("x", stream=pipe, every_s=0.0)
    with listening(quiet, quiet.show):
        progress(1, 2)
        search_status(1.0, None)
    quiet.close()
    assert pipe.getvalue() == ""
    progress(1, 2)  # no listener: nothing happens


@pytest.mark.parametrize(("problem", "method", "unit"), [("oasis", "oasis", "slots"), ("smd", "smd", "jobs"),
                                                         ("locality", "greedy-rr", "jobs"), ("harmony", "standalone", "jobs")])
def test_long_methods_report_their_progress(problem, method, unit):
    from mlsched_opt.io import load_instance
    from mlsched_opt.problems import get_family
    from mlsched_opt.solvers import SolveOptions

    calls: list[tuple[int, int, str]] = []
    family = get_family(problem)
    inst = load_instance(ROOT / "instances" / f"{problem}-toy.toml")
    with listening(lambda done, total, what: calls.append((done, total, what))):
        family.run(inst, method, SolveOptions(), {})
    assert calls and all(what == unit and 0 <= done <= total for done, total, what in calls), calls
    assert [done for done, _, _ in calls] == sorted(done for done, _, _ in calls)  # forward only


def test_a_bound_that_fails_costs_no_answer(run, monkeypatch, tmp_path):
    def broken(self, instance, options, solve_options):
        raise RuntimeError("HiGHS refused the arrays")

    monkeypatch.setattr(Family, "lp_bound", broken)
    out = tmp_path / "sol.json"
    code, text, _ = run("solve", DEMO, "--method", "ffd", "--json", "--out", out)
    doc = json.loads(text)
    assert code == 0 and doc["status"] == "feasible" and doc["check"]["feasible"] and doc["bound"] is None
    assert "no bound: the lp-relaxation failed (RuntimeError: HiGHS refused the arrays)" in doc["message"]
    assert json.loads(out.read_text())["report"]["objective"] == doc["objective"]


def test_a_bound_within_the_solvers_accuracy_is_no_dispute(run, monkeypatch):
    """An LP bound is as accurate as HiGHS's tolerances (about 1e-7): an answer that reaches it up
    to that is certified at ratio 1, not disputed."""
    code, out, _ = run("solve", DEMO, "--method", "ffd", "--json", "--no-bound")
    value = json.loads(out)["objective"]

    def just_below(self, instance, options, solve_options):
        return SolveReport(status="optimal", objective=value * (1 - 1e-8), bound=value * (1 - 1e-8), sense="max",
                           solver="fake", solver_version="")

    monkeypatch.setattr(Family, "lp_bound", just_below)
    code, out, _ = run("solve", DEMO, "--method", "ffd", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["status"] == "feasible" and "ratio <= 1 (certified)" in doc["message"]


def test_the_watchdog_stays_silent_when_the_command_fails_first(tmp_path):
    """A command that ends in a user error disarms its watchdog: one error line, exit 2, nothing
    printed at the deadline afterwards."""
    # the method refuses the instance at once, then the process lingers past the deadline (in the
    # command's last step, after the error is printed: the process ends at once after that)
    done = _mlsched_process(tmp_path, """
        import time
        from mlsched_opt.errors import OptionError
        from mlsched_opt.io import files
        from mlsched_opt.problems import base
        def refuse(*args, **kwargs):
            raise OptionError("refused for the test", field="--method")
        base.Family.run = refuse
        reset = files.set_limits
        def linger(pairs=()):
            reset(pairs)
            if pairs == ():  # main's last step (a verb's own limits come as a list)
                time.sleep(11)
        files.set_limits = linger
    """, "solve", DEMO, "--method", "ffd", "--time-limit", "8")
    assert done.returncode == 2 and "refused for the test" in done.stderr
    assert "time limit" not in done.stdout + done.stderr and done.stdout == ""


def test_an_answer_whose_check_outlives_the_deadline_is_never_called_checked(tmp_path):
    done = _mlsched_process(tmp_path, """
        import time
        import mlsched_opt.problems as problems
        def slow_check(*args, **kwargs):
            time.sleep(600)
        problems.check_solution = slow_check
    """, "solve", DEMO, "--method", "ffd", "--time-limit", "8", "--json")
    doc = json.loads(done.stdout)
    assert done.returncode == 1 and doc["status"] == "feasible" and doc["check"] is None
    assert "stopped at the command's time limit (8 s) in the check" in doc["message"]
    assert "not checked: the checker did not finish in time" in doc["message"]
