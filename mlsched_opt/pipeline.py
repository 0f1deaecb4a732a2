"""One pipeline from an instance to an answer you can trust: method, check, bound, dispute, ratio.

``mlsched solve``, ``mlsched compare``, the tasks of ``mlsched bench`` and notebooks
(:func:`mlsched_opt.solve`) all run answers through :func:`solve`, so an answer means the same
wherever it was made:

1. the family's method runs (:meth:`~mlsched_opt.problems.base.Family.run`) under the clock;
2. the independent checker judges its decision (once per decision);
3. after an approximation, the family's proven bound is added in the time left (a bound a checked
   answer beats is no bound: the answer is ``disputed``);
4. the ratio to the proven optimum, or to the proven bound (then ``ratio_is_bound``), follows the
   one convention of the toolkit: >= 1, 1 = optimal.

A :class:`Tracker` holds the run in progress (the phase, the method's answer, an exact method's
incumbent so far): the CLI's watchdog reads it when the time limit or a Ctrl-C ends a command
early, instead of keeping state of its own.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .clock import BOUND_SHARE, CHECK_WAIT_SHARE, CommandClock, default_threads, watching
from .errors import ArgumentError, OptionError
from .report import SolveOptions, SolveReport, approximation_ratio

if TYPE_CHECKING:  # the registry imports the families: loaded only when a run needs them
    from .checking import CheckResult
    from .io.instance import Instance
    from .io.solution import Solution
    from .problems.base import Family

log = logging.getLogger(__name__)


def family_for(instance: Instance, problem: str | None = None) -> Family:
    """The family of a run: ``problem`` if given, else the instance's own ``problem`` field."""
    from .problems import get_family, known_problem

    if problem:
        return get_family(problem)
    name = instance.default_problem
    if not name:
        raise OptionError("no problem given and the instance names none (set `problem` in the file)", field="--problem")
    return get_family(known_problem(name, instance.file))  # the file's field is wrong, not a flag the user did not pass


def solve_options(solver: str = "highs", time_limit: float = 60.0, gap: float = 1e-6, threads: int | None = None,
                  seed: int = 0, certify: bool = True) -> SolveOptions:
    """What a solve takes, checked: an unknown or absent solver is refused naming ``--solver``; no
    ``threads`` means every usable core (or ``$MLSCHED_THREADS``)."""
    from .solvers import check_solver

    check_solver(solver)
    return SolveOptions(solver=solver, time_limit=time_limit, gap=gap, threads=default_threads() if threads is None else threads,
                        seed=seed, certify=certify, log=log.isEnabledFor(logging.DEBUG))


def noted(sol: Solution, note: str, **changes: Any) -> Solution:
    """``sol`` with ``note`` added to its report's message (and ``changes`` made to the report)."""
    report = sol.report
    return dataclasses.replace(sol, report=dataclasses.replace(
        report, message="; ".join(filter(None, [report.message, note])), **changes))


class Tracker:
    """The run in progress: which phase it is in, the method's answer once it returned, and the best
    answer an exact method has offered so far (:func:`mlsched_opt.clock.offer`).

    The checker runs once per decision: a second caller (the watchdog's thread, while the main thread
    is checking the same answer) waits a little for that verdict instead of checking beside it."""

    def __init__(self) -> None:
        self.phase = "reading the instance"
        self.family: Family | None = None
        self.instance: Instance | None = None
        self.method = ""
        self.solver = ""
        self.options: Mapping[str, Any] = {}
        self.solution: Solution | None = None
        self.incumbent: tuple[SolveReport, dict[str, Any]] | None = None
        #: the best bound any offered report proved: a later, better incumbent offered without one
        #: (a phase that found an answer but proves nothing) must not lose it
        self.bound: float | None = None
        self.started = time.perf_counter()
        self._checked: dict[int, CheckResult] = {}
        self._checking = threading.Event()
        self._check_done = threading.Event()
        self._wait_s = 1.0

    def offer(self, report: SolveReport, decision: dict[str, Any] | None) -> None:
        """An answer found so far (kept when it is at least as good as the one held)."""
        if report.bound is not None and math.isfinite(report.bound) and (
                self.bound is None or (report.bound < self.bound if report.sense == "max" else report.bound > self.bound)):
            self.bound = report.bound
        if decision is None or report.objective is None:
            return
        held = self.incumbent
        if held is not None and held[0].objective is not None:
            worse = report.objective < held[0].objective if report.sense == "max" else report.objective > held[0].objective
            if worse:
                return
        self.incumbent = (report, decision)

    def answer_so_far(self, note: str) -> Solution | None:
        """What the run has: the method's answer, else its incumbent so far (status ``feasible``, the
        message saying so), else ``None``; ``note`` says why the run ends here."""
        from .io.solution import Solution

        if self.solution is not None:
            return noted(self.solution, note)
        if self.incumbent is None or self.family is None or self.instance is None:
            return None
        report, decision = self.incumbent
        said = f"the method's best answer so far ({report.solver})"
        # the run's own wall, not the phase's that offered the answer
        solve_s = max(time.perf_counter() - self.started - report.build_s - report.translate_s, report.solve_s)
        bound = self.bound
        slack = 1e-6 * max(1.0, abs(report.objective or 0.0))
        if bound is not None and report.objective is not None and (
                bound > report.objective + slack if report.sense == "min" else bound < report.objective - slack):
            bound = None   # beaten by a checked-to-be answer: no bound (the pipeline's rule)
        report = dataclasses.replace(report, status="feasible", bound=bound, solve_s=solve_s,
                                     message="; ".join(filter(None, [report.message, said, note])))
        return Solution.for_instance(self.instance, self.family.name, self.method, report, decision, self.options)

    def check(self, sol: Solution) -> CheckResult | None:
        """The checker's verdict on ``sol``'s decision (``None`` without a decision, or when another
        thread's check of it did not finish in the wait)."""
        from .problems import check_solution

        if self.instance is None or (sol.decision is None and not sol.report.has_solution):
            return None  # a report that claims an answer without a decision is the checker's to reject
        key = id(sol.decision)
        if key in self._checked:
            return self._checked[key]
        if self._checking.is_set() and threading.current_thread() is not threading.main_thread():
            self._check_done.wait(self._wait_s)
            return self._checked.get(key)
        self._checking.set()
        result = check_solution(self.instance, sol, self.options)
        self._checked[key] = result
        self._check_done.set()
        log.debug("checker: %s", "feasible" if result.feasible else f"{len(result.violations)} violations")
        return result


@dataclass
class Run:
    """One method's answer on one instance, checked and (where the family has one) bounded.

    ``ratio`` is the certified approximation ratio (>= 1, 1 = optimal): against the proven optimum,
    or, when ``ratio_is_bound``, against a proven bound on it (the true ratio is at most that).
    """

    instance: Instance
    family: Family
    method: str
    options: Mapping[str, Any]
    solution: Solution
    check: CheckResult | None
    ratio: float | None = None
    ratio_is_bound: bool = False
    label: str = ""
    elapsed_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def report(self) -> SolveReport:
        return self.solution.report

    @property
    def status(self) -> str:
        return self.report.status

    @property
    def objective(self) -> float | None:
        return self.report.objective

    @property
    def bound(self) -> float | None:
        return self.report.bound

    @property
    def gap(self) -> float | None:
        return self.report.gap

    @property
    def decision(self) -> dict[str, Any] | None:
        return self.solution.decision

    @property
    def feasible(self) -> bool:
        """A checked decision the checker accepts."""
        return self.check is not None and self.check.feasible

    def save(self, path: str | Path) -> None:
        """Write the solution file (JSON, atomically; never onto the instance file)."""
        from .io.solution import require_json

        require_json(path)
        self.solution.write(path, [self.instance.file] if self.instance.file else [])

    def to_dict(self) -> dict[str, Any]:
        """What ``mlsched solve --json`` prints (without the file it wrote)."""
        doc: dict[str, Any] = {"problem": self.family.name, "method": self.method,
                               "instance": self.instance.file or self.instance.name, **self.report.to_dict()}
        doc["check"] = None if self.check is None else self.check.to_dict()
        doc["ratio"] = self.ratio if self.ratio is None or self.ratio != float("inf") else None
        doc["ratio_is_bound"] = self.ratio_is_bound
        return doc

    def to_frame(self):
        """A one-row pandas DataFrame of :meth:`to_dict` (pandas must be installed)."""
        import pandas as pd

        return pd.DataFrame([_flat(self.to_dict())])

    def summary_lines(self, elapsed_s: float | None = None, limit_s: float | None = None) -> list[str]:
        from .render import run_lines

        return run_lines(self, elapsed_s, limit_s)

    def ratio_to(self, reference: float | Run) -> float | None:
        """This answer's ratio (>= 1, 1 = as good) to ``reference``: a value (an optimum, a bound) or
        another run (its checked value), in the family's sense; ``None`` without a checked value."""
        from .report import approximation_ratio

        value = self.check.objective if self.check is not None and self.check.feasible else None
        if isinstance(reference, Run):  # another answer counts only as the checker judged it
            other = reference.check.objective if reference.check is not None and reference.check.feasible else None
        else:
            other = reference
        if value is None or other is None or isinstance(other, Run):
            return None
        return approximation_ratio(value, float(other), self.report.sense)

    def __repr__(self) -> str:
        ratio = "" if self.ratio is None else f", ratio{'<=' if self.ratio_is_bound else '='}{self.ratio:.6g}"
        check = "unchecked" if self.check is None else "checked ok" if self.check.feasible else "check FAILED"
        return (f"Run({self.family.name}/{self.method} on {self.instance.name!r}: {self.status}, objective={self.objective}, "
                f"bound={self.bound}{ratio}, {check})")

    def __str__(self) -> str:
        return "\n".join(self.summary_lines())

    def _repr_html_(self) -> str:
        from .render import run_html

        return run_html(self)


def _flat(doc: dict[str, Any]) -> dict[str, Any]:
    out = dict(doc)
    check = out.pop("check", None)
    out["check"] = None if check is None else ("ok" if check.get("feasible") else f"{len(check.get('violations', []))} violations")
    out["options"] = json.dumps(out.get("options", {}), sort_keys=True, default=str)
    return out


def solve(instance: Instance | str | Path, method: str = "exact", *, problem: str | None = None, solver: str | None = None,
          time_limit: float = 60.0, gap: float = 1e-6, threads: int | None = None, seed: int = 0, certify: bool = True,
          bound: bool = True, options: Mapping[str, Any] | None = None, catalog: str | None = None,
          clock: CommandClock | None = None, tracker: Tracker | None = None, options_source: str = "--set") -> Run:
    """Run ``method`` on ``instance`` and return its answer checked, bounded and rated.

    Parameters
    ----------
    instance
        An :class:`~mlsched_opt.io.instance.Instance`, or the path of an instance file.
    method
        ``exact`` or one of the family's algorithms (``mlsched_opt.family(name).methods``).
    problem
        The family (default: the instance's ``problem``).
    solver, time_limit, gap, threads, seed, certify
        As ``mlsched solve``: the solver of an exact method (default ``highs``), seconds for the whole
        run (the method, the check and the bound share it), the gap at which "optimal" may be claimed,
        solver threads (default: every usable core), the seed, and whether an exact answer is
        confirmed by an independent solver.
    bound
        After an approximation, prove the family's bound in the time left and rate the answer.
    options
        Problem options (``{"objective": "servers"}``), over the instance's own ``[options]``.
    clock, tracker
        The command's clock (its deadline counts from the process start in ``mlsched``) and the
        run-in-progress record the CLI's watchdog reads; made here when not given.
    options_source
        How a refused option is named (``--set``; ``suite options`` for a benchmark's task).
    """
    from .facade import check_solve_arguments
    from .io import load_instance

    started = time.perf_counter()
    if clock is None:  # a Python caller: refused naming its keyword (the CLI's flags were checked by the CLI)
        check_solve_arguments(method=method, problem=problem, solver=solver, time_limit=time_limit, gap=gap, threads=threads,
                              seed=seed, certify=certify, bound=bound, options=options, catalog=catalog)
        instance = _instance_argument(instance)
    clock = clock or CommandClock(started, SolveOptions(time_limit=time_limit).time_limit)
    tracker = tracker or Tracker()
    inst = load_instance(instance, catalog=catalog) if isinstance(instance, (str, Path)) else instance
    fam = family_for(inst, problem)
    kind = fam.method(method).kind
    opts = fam.resolve_options(inst, dict(options or {}), source=options_source)
    log.debug("problem %s, method %s, options %s", fam.name, method, opts)
    with_bound = bound and kind != "exact" and fam.bounded
    keep = BOUND_SHARE * max(clock.left() - clock.reserve, 0.0) if with_bound else 0.0
    chosen = solver or "highs"
    run_options = solve_options(chosen, clock.budget(keep), gap, threads, seed, certify)
    tracker.family, tracker.instance, tracker.method, tracker.options = fam, inst, method, opts
    tracker.solver = chosen if kind == "exact" else method
    tracker._wait_s = CHECK_WAIT_SHARE * clock.limit
    tracker.phase = f"--method {method}"
    log.debug("running %s with %s (%.1f s left)", method, run_options, clock.left())
    with watching(tracker.offer):
        sol = fam.run(inst, method, run_options, opts)
    tracker.solution = sol
    log.debug("%s: %s in %.3f s", method, sol.report.status, sol.report.wall_s)
    tracker.phase = "the check"
    check = tracker.check(sol)
    # a method that proved its own bound keeps it: an oracle's optimum is its own bound, and its
    # bound when stopped early is not replaced by a relaxation's (which is not compared with it)
    from .clock import stop_requested

    if (with_bound and (check is None or check.feasible) and sol.report.bound is None and sol.report.has_solution
            and not stop_requested()):
        tracker.phase = "the bound"
        sol = add_bound(fam, inst, opts, sol, dataclasses.replace(run_options, time_limit=clock.budget()))
        tracker.solution = sol
    return rated(Run(inst, fam, method, opts, sol, check, label=method, elapsed_s=time.perf_counter() - started))


def add_bound(family: Family, instance: Instance, options: Mapping[str, Any], sol: Solution, solve_opts: SolveOptions) -> Solution:
    """``sol`` with the family's proven bound on the optimum in its report (an approximation's answer);
    a bound the checked answer beats is no bound, and the answer is then ``disputed``."""
    from .problems.anytime import family_bound
    from .tolerances import better

    rep = sol.report
    found, note = family_bound(family, instance, options, solve_opts)
    if found is None or found.bound is None:
        return noted(sol, note)
    value = found.bound
    # compare's rule: beaten beyond the solvers' accuracy, the bound is wrong
    if rep.objective is not None and better(rep.objective, value, rep.sense, solve_opts.gap):
        label = family.bound_label.replace(" (bound)", "")
        return noted(sol, f"the {label} {value:.6g} is beaten by the checked answer {rep.objective:.6g}: it is not a "
                          f"bound (a defect of the relaxation or the solver; please report it)", status="disputed")
    if rep.objective is not None:
        note += f": ratio <= {approximation_ratio(rep.objective, value, rep.sense):.6g} (certified)"
    return noted(sol, note, bound=value, solve_s=rep.solve_s + found.wall_s)


def rated(run: Run) -> Run:
    """``run`` with its certified ratio: 1 for a certified optimum, else against its own proven bound."""
    rep = run.report
    if rep.objective is None or (run.check is not None and not run.check.feasible):
        return run
    if rep.status == "optimal":
        run.ratio, run.ratio_is_bound = 1.0, False
    elif rep.bound is not None and rep.status == "feasible":
        run.ratio, run.ratio_is_bound = approximation_ratio(rep.objective, rep.bound, rep.sense), True
    return run


def _instance_argument(instance: Any) -> Instance | str | Path:
    """An Instance as it is, a path or a bundled example's name as its file; anything else refused."""
    from .facade import instance_path
    from .io.instance import Instance

    if isinstance(instance, Instance):
        return instance
    if not isinstance(instance, str | Path):
        raise ArgumentError(f"expected an Instance, a file path or a bundled example's name, got {type(instance).__name__}",
                            field="instance")
    return instance_path(instance)


def check(instance: Instance | str | Path, solution: Solution | Run | str | Path, *, problem: str | None = None,
          options: Mapping[str, Any] | None = None, catalog: str | None = None) -> CheckResult:
    """The independent checker's verdict on ``solution`` (a :class:`~mlsched_opt.io.solution.Solution`
    or a solution file) for ``instance``: it trusts nothing but the instance, ``options`` (problem
    options, over the instance's own; never the solution's) and the decision."""
    from .facade import need, need_options
    from .io import load_instance
    from .io.solution import Solution, read_solution
    from .problems import check_solution, known_problem

    need("problem", problem, str, "a problem name (str) or None", optional=True)
    need_options(options)
    need("catalog", catalog, str | Path, "a folder (str or Path) or None", optional=True)
    if isinstance(solution, Run):
        solution = solution.solution
    if not isinstance(solution, Solution | str | Path):
        raise ArgumentError("expected a Solution, a Run or a solution file's path (a decision as a dict: write "
                            f"the solution file with run.save(path) and check that), got {type(solution).__name__}",
                            field="solution")
    instance = _instance_argument(instance)
    inst = load_instance(instance, catalog=catalog) if isinstance(instance, (str, Path)) else instance
    sol = read_solution(solution) if isinstance(solution, (str, Path)) else solution
    known_problem(sol.problem, str(solution) if isinstance(solution, (str, Path)) else None)
    if problem is not None and problem != sol.problem:
        raise OptionError(f"the solution is for problem {sol.problem!r}, not {problem!r}", field="--problem")
    return check_solution(inst, sol, dict(options or {}))
