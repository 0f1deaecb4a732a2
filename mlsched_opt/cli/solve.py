"""``mlsched solve FILE``: one method, its answer checked (the pipeline), printed and written.

The time limit is a promise from the process start: the watchdog is armed before the instance is
read or a family imported, so reading, the method, the bound, the check and the writing all run
under it, and an instance too big to read in the time left is refused at once by its size.  A
Ctrl-C asks the method for its best answer so far (anytime methods return it at once), which is
checked, printed as interrupted and written; a second Ctrl-C ends the command at once.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import click

from ..errors import OptionError, UserError
from . import signals
from .app import COMMAND, Verb, catalog_of, command_start, verb
from .params import METHOD, PROBLEM, LazyHelp, catalog_files, method_help, parse_sets, shorthand_options, shorthands, solver_options
from .signals import INTERRUPTED

log = logging.getLogger("mlsched_opt.cli")

EXAMPLES = """
\b
Examples:
  mlsched solve demo --method exact
  mlsched solve demo --problem packing --method exact --solver cpsat --gap 0
  mlsched solve demo --method ffd --set objective=servers --json
  mlsched solve demo --method exact --out demo.sol.json
"""

#: exit code of a command that ends with no answer at its time limit
NO_ANSWER = 3
#: seconds a Ctrl-C leaves the method to return its best answer before the command ends with what it has
INTERRUPT_GRACE_S = 2.0
#: share of the limit the watchdog's own ending (the check of the answer in hand, printing, writing) may
#: take past the deadline before the process ends regardless: the limit's promise is the limit + 10 %
BACKSTOP_SHARE = 0.08


class SolveCommand(Verb):
    """``solve``, whose shorthand options come from the families' declarations: added when the command
    is shown, completed, or parsed with an option it does not know otherwise, so that neither other
    commands nor a solve without a shorthand import every family's record."""

    _shorthands_added = False
    _parsing_plain = False

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        known = {opt for p in self.params for opt in (*p.opts, *p.secondary_opts)}
        self._parsing_plain = not ctx.resilient_parsing and not any(
            a.startswith("--") and a.split("=", 1)[0] not in known for a in args if a != "--")
        try:
            return super().parse_args(ctx, args)
        finally:
            self._parsing_plain = False

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if not self._shorthands_added and not self._parsing_plain:
            from ..problems import REGISTRY

            at = next(i for i, p in enumerate(self.params) if p.name == "out")
            self.params[at:at] = shorthand_options(REGISTRY)
            self._shorthands_added = True
        return super().get_params(ctx)


@verb("solve", cls=SolveCommand, epilog=EXAMPLES)
@click.argument("file")
@click.option("--problem", type=PROBLEM, default=None, help="Problem family (default: the instance's `problem`).")
@click.option("--method", type=METHOD, default="exact", show_default=True, metavar="METHOD", cls=LazyHelp, help_from=method_help)
@solver_options
@click.option("--bound/--no-bound", default=True, show_default=True,
              help="After an approximation, prove a bound on the optimum in the time left (the family's relaxation) "
                   "and report the certified ratio.")
@click.option("--out", "out", default=None, metavar="SOLUTION.json", help="Write the solution file here.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.pass_context
def solve(ctx, file, problem, method, sets, certify, solver, time_limit, gap, threads, seed, bound, out, as_json,
          **flags) -> int:
    """Solve an instance FILE with one method; the answer is checked independently.

    --time-limit bounds the whole command from its start (reading, the method, the bound, the
    check and the writing): an exact solve answers with its best incumbent (at least the family's
    quickest heuristic answer) or `time-limit-no-solution` (exit 3), an approximation with its best
    answer so far.  Ctrl-C returns the best answer so far, checked and marked interrupted.
    """
    from ..clock import CommandClock
    from ..pipeline import Tracker
    from ..report import SolveOptions

    clock = CommandClock(command_start(), SolveOptions(time_limit=time_limit).time_limit)
    tracker = Tracker()
    ending = SolveEnding(tracker, file, method, out, as_json, clock, solver)
    watchdog = (signals.Watchdog(clock.deadline, ending.at_deadline, backstop_s=BACKSTOP_SHARE * clock.limit)
                if COMMAND["watchdog"] else None)
    if watchdog is not None:
        signals.on_interrupt(lambda: watchdog.expedite(INTERRUPT_GRACE_S))
    try:
        run = _solve(ctx, tracker, ending, clock, file, problem, method, sets, certify, solver, gap, threads, seed, bound,
                     out, flags)
    except BaseException:
        signals.on_interrupt(None)
        raise
    finally:
        # the command ends itself from here on, with its answer or with an error on its way out
        if watchdog is not None:
            watchdog.claim()
    signals.on_interrupt(lambda: None)  # a Ctrl-C now lets the answer be printed (marked interrupted); a second ends at once
    try:
        return ending.finish(run.solution, run.check, run)
    finally:
        signals.on_interrupt(None)


def _solve(ctx, tracker, ending, clock, file, problem, method, sets, certify, solver, gap, threads, seed, bound, out, flags):
    from ..clock import ProgressBar, listening, stop_requested
    from ..facade import instance_path
    from ..io.files import check_writable
    from ..io.instance import refuse_slow_read
    from ..io.solution import require_json
    from ..pipeline import family_for, solve as run_pipeline

    file = str(instance_path(file))  # a bundled example's name (`mlsched solve demo`) as its file
    refuse_slow_read(file, clock.left() - clock.reserve)
    inst = ending.instance = tracker.instance = _load(file, catalog_of(ctx))
    family = tracker.family = family_for(inst, problem)
    family.method(method)  # an unknown method is refused before the options are parsed
    raw: dict[str, Any] = parse_sets(sets)
    raw.update(_shorthand_values(family, flags))
    tracker.options = family.resolve_options(inst, raw)  # what a report made at the deadline states
    # an option naming an existing file (a trained policy) is an input no output may overwrite
    named = [v for v in raw.values() if isinstance(v, str) and v and Path(v).is_file()]
    ending.inputs = (file, *named, *catalog_files(inst.catalog))
    if out:
        check_writable(out, ending.inputs)  # before the solve, which may take long
        require_json(out)
    # progress on a terminal (INFO: --quiet asks for none)
    bar = ending.bar = ProgressBar(f"--method {method}") if log.isEnabledFor(logging.INFO) else None
    try:
        with listening(bar if bar is not None else (lambda *_: None), bar.show if bar is not None else None):
            run = run_pipeline(inst, method, problem=family.name, solver=solver, gap=gap, threads=threads, seed=seed,
                               certify=certify, bound=bound and not stop_requested(), options=raw, clock=clock, tracker=tracker)
    finally:
        ending.close_bar()
    return run


def _load(file: str, catalog: str | None):
    import time

    from ..io import load_instance

    started = time.perf_counter()
    inst = load_instance(file, catalog=catalog)
    log.debug("read %s: %d jobs, %d servers (%.3f s)", file, len(inst.jobs), len(inst.servers), time.perf_counter() - started)
    return inst


def _shorthand_values(family, flags: dict[str, Any]) -> dict[str, Any]:
    """``--samples 3`` as ``{"samples": 3}``, refused naming the flag when the family has no such option."""
    from ..problems import REGISTRY

    out: dict[str, Any] = {}
    given = {k: v for k, v in flags.items() if v is not None}
    if not given:
        return out
    declared = shorthands(REGISTRY)
    for key, value in given.items():
        flag = next(f for f, owners in declared.items() if f"shorthand_{owners[0][1].name}" == key)
        mine = [opt for fam, opt in declared[flag] if fam is family]
        if not mine:
            have = ", ".join(fam.name for fam, _ in declared[flag])
            raise OptionError(f"{flag} is an option of {have}; problem {family.name} has none", field=flag)
        out[mine[0].name] = mine[0].parse(value, flag)
    return out


class SolveEnding:
    """How ``solve`` ends: printing and writing its answer, and the same when the watchdog ends the
    command at its time limit (or after a Ctrl-C) with what the run in progress has."""

    def __init__(self, tracker, file: str, method: str, out: str | None, as_json: bool, clock, solver: str):
        self.tracker, self.file, self.method, self.out, self.as_json = tracker, file, method, out, as_json
        self.clock, self.solver = clock, solver
        self.instance = None
        self.inputs: tuple[Any, ...] = (file,)
        self.bar = None

    def close_bar(self) -> None:
        bar, self.bar = self.bar, None  # the watchdog's thread may close it too: take it once
        if bar is not None:
            bar.close()

    def _why(self) -> str:
        from ..clock import stop_requested

        if stop_requested():
            return f"interrupted (Ctrl-C) in {self.tracker.phase}"
        return f"stopped at the command's time limit ({self.clock.limit:g} s) in {self.tracker.phase}"

    def at_deadline(self) -> int:
        """The watchdog's ending: the answer in hand (checked), else no answer, said as such."""
        from ..clock import stop_requested
        from ..pipeline import noted

        note = self._why()
        self.close_bar()
        sol = self.tracker.answer_so_far(note)
        if sol is None:
            return self._no_answer(note)
        check = self.tracker.check(sol)
        if sol.decision is not None and check is None:  # the checker itself ran out of time: never claim a checked answer
            code = self.finish(noted(sol, "not checked: the checker did not finish in time"), None)
            return INTERRUPTED if stop_requested() else max(code, 1)
        return self.finish(sol, check)

    def _no_answer(self, note: str) -> int:
        """No answer at all: a report of the family's ``time-limit-no-solution`` when the family is
        known, else (still reading the instance) the same words without one."""
        from ..clock import stop_requested
        from ..io.solution import Solution
        from ..report import SolveReport

        family, inst = self.tracker.family, self.tracker.instance
        if family is None or inst is None:
            status = "time-limit-no-solution"
            if self.as_json:  # the keys of every other answer, with nothing known
                empty = SolveReport(status=status, objective=None, bound=None, sense="min", solver="", solver_version="",
                                    solve_s=self.clock.elapsed(), message=f"{note}: no answer").to_dict()
                doc = {"problem": None, "method": self.method, "instance": self.file, **empty, "sense": None, "check": None,
                       "ratio": None, "ratio_is_bound": False}
                click.echo(json.dumps(doc))
            else:
                click.echo(f"{self.file}: {status} ({note}: no answer)")
            return INTERRUPTED if stop_requested() else NO_ANSWER
        options = self.tracker.options or family.resolve_options(inst, {})
        kind = family.method(self.method).kind if self.method in family.methods else "exact"
        report = SolveReport(status="time-limit-no-solution", objective=None, bound=None, sense=family.sense(options),
                             solver=self.tracker.solver or (self.solver if kind == "exact" else self.method), solver_version="",
                             solve_s=self.clock.elapsed(), message=note)
        sol = Solution.for_instance(inst, family.name, self.method, report, None, options)
        return self.finish(sol, None)

    def finish(self, sol, check, run=None) -> int:
        """Print (and write) ``sol``; the exit code: 0 an answer, 1 a failed check, an error or a
        dispute, 2 the file could not be written, 3 no answer in time, 130 interrupted."""
        from ..clock import stop_requested
        from ..pipeline import Run, noted, rated
        from ..render import run_lines

        interrupted = stop_requested()
        if interrupted and "interrupted" not in sol.report.message:
            sol = noted(sol, "interrupted (Ctrl-C): the best answer so far")
        if run is None or run.solution is not sol:
            run = rated(Run(self.instance or self.tracker.instance, self.tracker.family, self.method, self.tracker.options,
                            sol, check, label=self.method))
        write_error = None
        out = self.out
        if out:
            try:
                sol.write(out, self.inputs)
            except UserError as exc:  # the answer is printed all the same, then exit 2
                write_error = exc
                out = None
        rep = sol.report
        if self.as_json:
            doc = run.to_dict()
            doc["instance"] = self.file
            if out:
                doc["solution_file"] = out
            click.echo(json.dumps(doc))
        else:
            for line in run_lines(run, self.clock.elapsed(), self.clock.limit, written=out):
                click.echo(line)
        if check is not None and not check.feasible:
            for v in check.violations:
                click.echo(f"  violation: {v}", err=True)
        if write_error is not None:
            if threading.current_thread() is not threading.main_thread():  # the watchdog: no caller to raise to
                click.echo(f"mlsched: error: {write_error.message()}", err=True)
                return 2
            raise write_error
        if interrupted:
            return INTERRUPTED
        if check is not None and not check.feasible:
            return 1
        if rep.status == "disputed":
            click.echo(f"DISPUTED: {rep.message}", err=True)
        if rep.status == "time-limit-no-solution":
            return NO_ANSWER
        return 1 if rep.status in ("error", "disputed") else 0
