"""The ``mlsched`` command.

Exit codes: 0 success (an infeasible instance is an answer, not a failure); 1 a solution
that fails the checker, or a solver error; 2 a user error (bad file, field or option),
reported in one line naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import click

from . import __version__
from .clock import BOUND_SHARE
from .errors import InstanceError, OptionError, UserError

log = logging.getLogger(__name__)

EXAMPLES_SOLVE = """
\b
Examples:
  mlsched solve instances/demo.toml --method exact
  mlsched solve instances/demo.toml --problem packing --method exact --solver cpsat --gap 0
  mlsched solve instances/demo.toml --method ffd --set objective=servers --json
  mlsched solve instances/demo.toml --method exact --out demo.sol.json
"""


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record arrives: test runners and click's runner
    swap the stream between commands run in one process."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


class _Formatter(logging.Formatter):
    """INFO is what a command has to say (progress, notes) and reads as plain lines; the other levels
    say what they are, and DEBUG (``-v``) where it comes from."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.levelno == logging.INFO:
            return message
        if record.levelno == logging.DEBUG:
            return f"debug: {record.name}: {message}"
        return f"{record.levelname.lower()}: {message}"


def _configure_logging(verbose: int, quiet: bool) -> None:
    """One stderr handler for the package's loggers, installed on the first command and reused by the
    next ones run in the same process.  On the package logger rather than the root one: Pyomo has its
    own handler and propagates, so a root handler would print its warnings twice."""
    if verbose and quiet:
        raise OptionError("-v and --quiet contradict each other", field="--quiet")
    pkg = logging.getLogger(__package__ or "mlsched_opt")
    if not any(isinstance(h, _StderrHandler) for h in pkg.handlers):
        handler = _StderrHandler()
        handler.setFormatter(_Formatter())
        pkg.addHandler(handler)
        pkg.propagate = False
    pkg.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)


def _problem_names() -> list[str]:
    from .problems import REGISTRY

    return list(REGISTRY)


def _method_names(problem: str | None = None) -> list[str]:
    from .problems import REGISTRY

    families = [REGISTRY[problem]] if problem in REGISTRY else REGISTRY.values()
    return list(dict.fromkeys(m for fam in families for m in fam.methods))


def _solver_names() -> list[str]:
    from .solvers import KNOWN_SOLVERS

    return list(KNOWN_SOLVERS)


def _check_problem(name: str, param: str) -> None:
    from .problems import get_family

    get_family(name)


def _check_solver_name(name: str, param: str) -> None:
    # installed or not is check_solver's question, asked once the command runs; here only the names
    # that may ever be handed to a solver factory pass, as before
    names = _solver_names()
    if name not in names:
        raise OptionError(f"unknown solver {name!r}; choose from {', '.join(names)}", field=param)


class _Names(click.Choice):
    """A ``click.Choice`` whose names come from the registry when first needed (help, completion,
    parsing): ``validate`` must not pay for importing every family.

    A value outside the names is refused by ``check`` with the registry's own message (exit 2 naming
    the option); without ``check`` (methods, whose names depend on the problem) the command checks it
    against its family.  With ``sep`` the value is a list (``--solvers highs,cpsat``).
    """

    def __init__(self, load, check=None, sep: str | None = None) -> None:
        self._load, self._check, self.sep = load, check, sep
        self._names: tuple[str, ...] | None = None
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        if self._names is None:
            self._names = tuple(self._load())
        return self._names

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        metavar = super().get_metavar(param, ctx)
        return f"{metavar}{self.sep}..." if self.sep and metavar else metavar

    def convert(self, value, param, ctx):
        name = param.opts[0] if param is not None and param.opts else "value"
        for item in (value.split(self.sep) if self.sep else [value]):
            if self._check is not None and (item.strip() or not self.sep):
                self._check(item.strip() if self.sep else item, name)
        return value

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str):
        from click.shell_completion import CompletionItem

        done, _, last = incomplete.rpartition(self.sep) if self.sep else ("", "", incomplete)
        prefix = done + self.sep if done and self.sep else ""
        names = self.choices
        if self._load is _method_names:  # the methods of the problem already on the command line
            names = tuple(_method_names((ctx.params or {}).get("problem")))
        return [CompletionItem(prefix + n) for n in names if n.startswith(last)]


PROBLEM = _Names(_problem_names, _check_problem)
METHOD = _Names(_method_names)
METHODS = _Names(_method_names, sep=",")
SOLVER = _Names(_solver_names, _check_solver_name)
SOLVERS = _Names(_solver_names, _check_solver_name, sep=",")


def _shorthands(registry) -> dict[str, list[tuple[Any, Any]]]:
    """Flag -> [(family, Option)] of every problem option declared with a ``flag``."""
    out: dict[str, list[tuple[Any, Any]]] = {}
    for fam in registry.values():
        for opt in fam.options:
            if opt.flag:
                out.setdefault(opt.flag, []).append((fam, opt))
    return out


def _shorthand_options(registry) -> list[click.Option]:
    """``solve``'s shorthand options, one per declared flag: ``--samples M`` is ``--set samples=M``.
    The value stays a string here: the family's Option parses it (type and range) and names the flag
    when it is refused, as it would name --set."""
    params = []
    for flag, owners in _shorthands(registry).items():
        names = {opt.name for _, opt in owners}
        if len(names) != 1:
            raise RuntimeError(f"{flag} is declared for options {sorted(names)}: one flag, one option name")
        name = names.pop()
        uses = "; ".join(f"{fam.name}: {opt.help} <{opt.describe()}>" for fam, opt in owners)
        params.append(click.Option([flag, f"shorthand_{name}"], default=None, metavar=name.upper(),
                                   help=f"Shorthand for --set {name}={name.upper()} ({uses})."))
    return params


class _SolveCommand(click.Command):
    """``solve``, whose shorthand options come from the families' declarations: added when the command
    is first parsed, completed or shown, so that other commands never import the registry."""

    _shorthands_added = False

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if not self._shorthands_added:
            from .problems import REGISTRY

            at = next(i for i, p in enumerate(self.params) if p.name == "out")
            self.params[at:at] = _shorthand_options(REGISTRY)
            self._shorthands_added = True
        return super().get_params(ctx)


class _LazyHelp(click.Option):
    """An option whose help text is computed from the registry when --help is shown."""

    def __init__(self, *args, help_from=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._help_from = help_from

    def get_help_record(self, ctx: click.Context):
        if self._help_from is not None:
            self.help, self._help_from = self._help_from(), None
        return super().get_help_record(ctx)


def _per_family_methods() -> str:
    from .problems import REGISTRY

    return "; ".join(f"{fam.name}: {', '.join(m for m in fam.methods if m != 'exact')}" for fam in REGISTRY.values())


def _method_help() -> str:
    return f"exact, or an algorithm of the problem's family ({_per_family_methods()}; see `mlsched info`)."


def _methods_help() -> str:
    return f"Comma-separated methods (default: all of the family's but oracles; exact, or {_per_family_methods()})."


def _fmt(value: Any, digits: int = 6) -> str:
    """A number as people read it: '-' for none, integers without '.0', 6 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:
            return "-"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.{digits}g}"
    return str(value)


def _ranges(slots: list[int]) -> str:
    """Slots as ranges: [0, 1, 2, 5] -> '0-2, 5'."""
    spans: list[list[int]] = []
    for s in sorted(set(slots)):
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


def _counts(per_slot: list[dict[str, Any]]) -> str:
    """Servers and counts over one or more slots: 'v100/0:1 k80:3', a count that varies as '3-4'."""
    seen: dict[str, list[Any]] = {}
    for mapping in per_slot:
        for server, n in (mapping or {}).items():
            seen.setdefault(server, []).append(n)
    parts = []
    for server, ns in seen.items():
        lo, hi = min(ns), max(ns)
        if len(ns) < len(per_slot):  # absent in some slots
            lo = 0
        parts.append(f"{server}:{_fmt(lo)}" if lo == hi else f"{server}:{_fmt(lo)}-{_fmt(hi)}")
    return " ".join(parts) or "-"


def _cell(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def decision_table(decision: dict[str, Any] | None, job_ids: list[str], limit: int = 20) -> list[str]:
    """Who runs where and when, one row per job, from any family's decision: a static ``placement``
    (job -> workers/ps per server), a slotted ``schedule`` (job -> [{slot, workers, ps}]), a
    ``start`` per job, and every ``extra`` entry keyed by job (a number per job becomes a column;
    counts without servers, as smd's ``allocation``, fill workers/ps).  Other ``extra`` entries
    become one line each; at most ``limit`` rows, then how many more."""
    if not decision:
        return ["decision: none"]
    placement = decision.get("placement") or {}
    schedule = decision.get("schedule") or {}
    start = decision.get("start") or {}
    extra = decision.get("extra") or {}
    known = set(job_ids)
    per_job = {k: v for k, v in extra.items() if isinstance(v, dict) and v and set(v) <= known}
    counts = {k: v for k, v in per_job.items() if all(isinstance(x, dict) and ("workers" in x or "ps" in x) for x in v.values())}
    columns = [k for k, v in per_job.items() if k not in counts and all(x is None or isinstance(x, (int, float, str)) for x in v.values())]
    listed = [*decision.get("admitted", []), *placement, *schedule, *start, *(j for v in counts.values() for j in v)]
    order = {j: i for i, j in enumerate(job_ids)}
    jobs = sorted(dict.fromkeys(listed), key=lambda j: order.get(j, len(order)))
    header = ["job", "workers", "ps"] + (["slots"] if schedule else []) + (["start"] if start else []) + columns
    rows = []
    for job in jobs:
        if job in placement:
            where = placement[job] or {}
            workers, ps = _counts([where.get("workers") or {}]), _counts([where.get("ps") or {}])
        elif job in schedule:
            steps = schedule[job] or []
            workers = _counts([s.get("workers") or {} for s in steps])
            ps = _counts([s.get("ps") or {} for s in steps])
        else:
            alloc: dict[str, Any] = next((v[job] for v in counts.values() if job in v), {})
            workers, ps = _fmt(alloc.get("workers")), _fmt(alloc.get("ps"))
        row = [job, workers, ps]
        if schedule:
            row.append(_ranges([s["slot"] for s in schedule.get(job) or [] if isinstance(s.get("slot"), int)]) or "-")
        if start:
            row.append(_fmt(start.get(job)))
        row += [_fmt(per_job[c].get(job)) for c in columns]
        rows.append([_cell(str(c)) for c in row])
    lines = []
    if rows:
        shown = rows[:limit]
        widths = [max(len(r[i]) for r in [header, *shown]) for i in range(len(header))]
        lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in shown]
        if len(rows) > limit:
            lines.append(f"... {len(rows) - limit} more jobs (--out FILE writes the whole decision)")
    else:
        lines.append("no job runs")
    if "admitted" in decision:
        left = [j for j in job_ids if j not in set(decision["admitted"])]
        if left:
            lines.append(f"not admitted ({len(left)}): {_cell(', '.join(left), 80)}")
    for key, value in extra.items():
        if key in per_job:
            continue
        if isinstance(value, list) and value:
            lines.append(f"{key} ({len(value)}): {_cell(', '.join(map(str, value)), 80)}")
        elif isinstance(value, dict):
            scalars = [f"{k} {_fmt(v, 4)}" for k, v in value.items() if v is None or isinstance(v, (int, float, str))]
            if scalars:
                lines.append(f"{key}: {_cell(', '.join(scalars), 100)}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            lines.append(f"{key}: {_fmt(value)}")
    return lines


def _parse_sets(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise OptionError(f"expected KEY=VALUE, got {pair!r}", field="--set")
        key, value = pair.split("=", 1)
        if key.strip() in out:  # which one was meant is a guess we do not make
            raise OptionError(f"{key.strip()} is set twice ({out[key.strip()]!r} and {value.strip()!r})", field="--set")
        out[key.strip()] = value.strip()
    return out


def _load(path: str, catalog: str | None):
    from .io import load_instance

    return load_instance(path, catalog=catalog)


def _catalog_files(catalog) -> list[Path]:
    """Every file of a catalog (the one an instance was resolved against, or a generator's): inputs
    of the command too, which no output may overwrite."""
    folders = getattr(catalog, "directories", None) or ()
    return [f for folder in folders if Path(folder).is_dir() for f in Path(folder).iterdir() if f.is_file()]


def _family_for(instance, problem: str | None):
    from .problems import get_family

    name = problem or instance.default_problem
    if not name:
        raise OptionError("no problem given and the instance names none (set `problem` in the file)", field="--problem")
    return get_family(name)


def _solve_options(solver: str, time_limit: float, gap: float, threads: int | None, seed: int, certify: bool = True):
    import dataclasses

    from .solvers import SolveOptions, check_solver

    check_solver(solver)
    extra = {}
    # the solver's own log under -v, once SolveOptions has a field for it (the back ends decide where it goes)
    if "log" in {f.name for f in dataclasses.fields(SolveOptions)}:
        extra["log"] = log.isEnabledFor(logging.DEBUG)
    if threads is None:
        from .clock import default_threads

        threads = default_threads()
    return SolveOptions(solver=solver, time_limit=time_limit, gap=gap, threads=threads, seed=seed, certify=certify, **extra)


def solver_options(f):
    """The options every solving command shares."""
    f = click.option("--seed", type=int, default=0, show_default=True, help="Random seed (solver and randomized methods).")(f)
    f = click.option("--threads", type=int, default=None, show_default="every usable core, or $MLSCHED_THREADS",
                     help="Solver threads (1 = repeatable runs).")(f)
    f = click.option("--gap", type=float, default=1e-6, show_default=True, help="Relative gap at which 'optimal' may be claimed.")(f)
    f = click.option("--time-limit", type=float, default=60.0, show_default=True,
                     help="Seconds for the whole command (solve) or each row (compare); always enforced.")(f)
    f = click.option("--solver", type=SOLVER, default="highs", show_default=True,
                     help="highs, cpsat, scip (pyscipopt), or cbc, glpk, gurobi, cplex when installed (see `mlsched info`).")(f)
    f = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Problem option, e.g. --set objective=servers.")(f)
    f = click.option("--certify/--no-certify", default=True, show_default=True,
                     help="Confirm every 'optimal' or 'infeasible' of an exact solve by an independent solver.")(f)
    return f


def _limits_epilog() -> str:
    from .io.files import LIMITS

    rows = "\n".join(f"  {name + '=' + str(default):<18} {what}" for name, (default, what) in LIMITS.items())
    return ("\b\nLimits (refused with exit 2 and the field named; raise with --limit NAME=N or\n"
            "MLSCHED_LIMITS=\"NAME=N,...\"; the command line wins):\n" + rows)


class _Commands(click.Group):
    """The commands, with ``bench`` imported only when it is run or listed (its module pulls in the
    comparison harness: 0.3 s that no other command should pay at start-up)."""

    LAZY: ClassVar[dict[str, tuple[str, str]]] = {"bench": ("mlsched_opt.bench.cli", "bench")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.LAZY and name not in self.commands:
            module, attr = self.LAZY[name]
            self.add_command(getattr(importlib.import_module(module), attr))
        return super().get_command(ctx, name)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]}, epilog=_limits_epilog())
@click.version_option(__version__, prog_name="mlsched")
@click.option("--catalog", envvar="MLSCHED_CATALOG", default=None, metavar="DIR",
              help="A workload catalog of your own, laid over the shipped one (entries added, or replaced by name); env MLSCHED_CATALOG.")
@click.option("--limit", "limit", multiple=True, metavar="NAME=N",
              help="Raise (or lower) a size limit for this run, e.g. --limit servers=100000 (see Limits below).")
@click.option("-v", "--verbose", count=True, help="Log what is done, step by step, on stderr (and the solver's log where it can).")
@click.option("-q", "--quiet", is_flag=True, help="Nothing on stderr but warnings and errors (no progress, no notes).")
@click.pass_context
def cli(ctx: click.Context, catalog: str | None, limit: tuple[str, ...], verbose: int, quiet: bool) -> None:
    """Optimization models for scheduling distributed deep-learning jobs on GPU clusters.

    \b
    Start here:
      mlsched info                                   problems, methods, solvers
      mlsched validate instances/demo.toml           check an instance file
      mlsched compare instances/demo.toml            every method against the optimum
      mlsched solve instances/demo.toml --method exact
      mlsched completion bash                        shell completion (see its --help)
    """
    from .io.files import limits, set_limits

    _configure_logging(verbose, quiet)
    set_limits(limit)
    limits()  # a malformed $MLSCHED_LIMITS is reported before any work
    ctx.obj = {"catalog": catalog}


@cli.command()
@click.argument("file")
@click.pass_context
def validate(ctx: click.Context, file: str) -> int:
    """Validate an instance FILE (.json or .toml) and summarize it.

    \b
    Example:
      mlsched validate instances/demo.toml
    """
    inst = _load(file, ctx.obj["catalog"])
    gpus = sum(s.capacity.get("gpu", 0) for s in inst.servers)
    click.echo(f"{file}: valid ({inst.name})")
    click.echo(f"  servers: {len(inst.servers)} ({gpus:g} GPUs), jobs: {len(inst.jobs)}, resources: {', '.join(inst.resource_names())}")
    if inst.slots:
        click.echo(f"  time: {inst.slots} slots of {inst.slot_s:g} s")
    click.echo(f"  sha256: {inst.sha256}")
    return 0


@cli.command(cls=_SolveCommand, epilog=EXAMPLES_SOLVE)
@click.argument("file")
@click.option("--problem", type=PROBLEM, default=None, help="Problem family (default: the instance's `problem`).")
@click.option("--method", type=METHOD, default="exact", show_default=True, metavar="METHOD", cls=_LazyHelp, help_from=_method_help)
@solver_options
@click.option("--bound/--no-bound", default=True, show_default=True,
              help="After an approximation, prove a bound on the optimum in the time left (the family's relaxation) "
                   "and report the certified ratio.")
@click.option("--out", "out", default=None, metavar="SOLUTION.json", help="Write the solution file here.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.pass_context
def solve(ctx, file, problem, method, sets, certify, solver, time_limit, gap, threads, seed, bound, out, as_json,
          **shorthands) -> int:
    """Solve an instance FILE with one method; the answer is checked independently.

    --time-limit bounds the whole command (reading, the method, the bound, the check and the
    writing): an exact solve stops with its incumbent or `time-limit-no-solution`, an
    approximation returns its best answer so far.
    """
    from .clock import CommandClock, TerminalProgress, Watchdog, listening
    from .io.files import check_writable
    from .problems import REGISTRY
    from .solvers import SolveOptions

    limit = SolveOptions(time_limit=time_limit).time_limit  # refused here if not a positive number
    clock = CommandClock(_COMMAND["start"] if _COMMAND["start"] is not None else time.perf_counter(), limit)
    started = time.perf_counter()
    inst = _load(file, ctx.obj["catalog"])
    log.debug("read %s: %d jobs, %d servers (%.3f s)", file, len(inst.jobs), len(inst.servers), time.perf_counter() - started)
    family = _family_for(inst, problem)
    kind = family.method(method).kind
    raw: dict[str, Any] = _parse_sets(sets)
    declared = _shorthands(REGISTRY)
    for key, value in shorthands.items():
        if value is None:
            continue
        flag = next(f for f, owners in declared.items() if f"shorthand_{owners[0][1].name}" == key)
        mine = [opt for fam, opt in declared[flag] if fam is family]
        if not mine:
            have = ", ".join(fam.name for fam, _ in declared[flag])
            raise OptionError(f"{flag} is an option of {have}; problem {family.name} has none", field=flag)
        raw[mine[0].name] = mine[0].parse(value, flag)
    options = family.resolve_options(inst, raw)
    log.debug("problem %s, method %s, options %s", family.name, method, options)
    # an option naming an existing file (a trained policy) is an input no output may overwrite
    named = [v for v in raw.values() if isinstance(v, str) and v and Path(v).is_file()]
    inputs = (file, *named, *_catalog_files(inst.catalog))
    if out:
        check_writable(out, inputs)  # before the solve, which may take long
        if Path(out).suffix.lower() != ".json":  # `check` reads solutions only as .json
            raise OptionError(f"solution files are JSON: {out!r} must end in .json", field="--out")
    with_bound = bound and kind != "exact" and family.bounded
    keep = BOUND_SHARE * max(clock.left() - clock.reserve, 0.0) if with_bound else 0.0
    solve_options = _solve_options(solver, clock.budget(keep), gap, threads, seed, certify)
    state: dict[str, Any] = {"solution": None, "phase": f"--method {method}"}
    ending = _SolveEnding(family, method, inst, options, file, out, inputs, as_json, clock, state,
                          solver if kind == "exact" else method)
    watchdog = Watchdog(clock.deadline, ending.at_deadline) if _COMMAND["watchdog"] else None
    try:
        log.debug("running %s with %s (whole command: %.1f s left)", method, solve_options, clock.left())
        # progress on a terminal (INFO: --quiet asks for none)
        ending.bar = TerminalProgress(f"--method {method}", clock) if log.isEnabledFor(logging.INFO) else None
        try:
            with listening(ending.bar if ending.bar is not None else (lambda *_: None)):
                sol = family.run(inst, method, solve_options, options)
        finally:
            ending.close_bar()
        state["solution"] = sol
        log.debug("%s: %s in %.3f s", method, sol.report.status, sol.report.wall_s)
        state["phase"] = "the check"
        check = ending.check(sol)
        # a method that proved its own bound keeps it: an oracle's optimum is its own bound, and its
        # bound when stopped early is not replaced by a relaxation's (which is not compared with it)
        if with_bound and (check is None or check.feasible) and sol.report.bound is None:
            state["phase"] = "the bound"
            sol = ending.add_bound(sol, dataclasses.replace(solve_options, time_limit=clock.budget()))
            state["solution"] = sol
    finally:
        # the command ends itself from here on, with its answer or with an error on its way out
        if watchdog is not None:
            watchdog.claim()
    return ending.finish(sol, check)


def _noted(sol, note: str, **changes: Any):
    """``sol`` with ``note`` added to its report's message (and ``changes`` made to the report)."""
    report = sol.report
    return dataclasses.replace(sol, report=dataclasses.replace(
        report, message="; ".join(filter(None, [report.message, note])), **changes))


class _SolveEnding:
    """How ``solve`` ends: the check, the bound, the output, and the same output when the
    watchdog ends the command at its time limit."""

    def __init__(self, family, method, inst, options, file, out, inputs, as_json, clock, state, solver):
        self.family, self.method, self.inst, self.options, self.solver = family, method, inst, options, solver
        self.file, self.out, self.inputs, self.as_json, self.clock, self.state = file, out, inputs, as_json, clock, state
        self.checked: dict[int, Any] = {}
        self.checking = threading.Event()  # set while the main thread runs the checker
        self.check_done = threading.Event()
        self.bar = None

    def close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def check(self, sol):
        """The checker's verdict on ``sol``'s decision (once per decision).  Called by the watchdog
        while the main thread is checking the same answer, it waits a little for that verdict
        instead of running a second checker beside it (None if it does not come)."""
        from .clock import CHECK_WAIT_SHARE
        from .problems import check_solution

        if sol.decision is None:
            return None
        key = id(sol.decision)
        if key in self.checked:
            return self.checked[key]
        if self.checking.is_set() and threading.current_thread() is not threading.main_thread():
            self.check_done.wait(CHECK_WAIT_SHARE * self.clock.limit)
            return self.checked.get(key)
        self.checking.set()
        result = check_solution(self.inst, sol, self.options)
        self.checked[key] = result
        self.check_done.set()
        log.debug("checker: %s", "feasible" if result.feasible else f"{len(result.violations)} violations")
        return result

    def add_bound(self, sol, solve_options):
        """The family's proven bound on the optimum, in the report of an approximation's answer."""
        from .report import approximation_ratio
        from .solvers.certify import better

        rep = sol.report
        label = self.family.bound_label.replace(" (bound)", "")
        try:
            found = self.family.lp_bound(self.inst, self.options, solve_options)
        except UserError as exc:  # a model too large to build for the bound: the answer stands alone
            return _noted(sol, f"no bound: {exc.message()}")
        except Exception as exc:  # a failing bound must not cost the checked answer
            log.debug("the bound failed", exc_info=True)
            return _noted(sol, f"no bound: the {label} failed ({type(exc).__name__}: {exc})")
        value = found.bound if found.status in ("optimal", "feasible") else None
        if value is None:
            return _noted(sol, f"no bound: the {label} ended {found.status} in {found.wall_s:.2f} s")
        # compare's rule: beaten beyond the solvers' accuracy, the bound is wrong
        if rep.objective is not None and better(rep.objective, value, rep.sense, solve_options.gap):
            return _noted(sol, f"the {label} {value:.6g} is beaten by the checked answer {rep.objective:.6g}: it is not a "
                               f"bound (a defect of the relaxation or the solver; please report it)", status="disputed")
        note = f"bound {value:.6g} by the {label} ({found.solver}, {found.wall_s:.2f} s)"
        if rep.objective is not None:
            note += f": ratio <= {approximation_ratio(rep.objective, value, rep.sense):.6g} (certified)"
        return _noted(sol, note, bound=value, solve_s=rep.solve_s + found.wall_s)

    def at_deadline(self) -> int:
        """The watchdog's ending: the answer in hand (checked), or no solution, said as such."""
        from .io.solution import Solution
        from .solvers import SolveReport

        note = f"stopped at the command's time limit ({self.clock.limit:g} s) in {self.state['phase']}"
        sol = self.state["solution"]
        if sol is None:
            report = SolveReport(status="time-limit-no-solution", objective=None, bound=None,
                                 sense=self.family.sense(self.options), solver=self.solver, solver_version="",
                                 solve_s=self.clock.elapsed(), message=note)
            sol = Solution.for_instance(self.inst, self.family.name, self.method, report, None, self.options)
        else:
            sol = _noted(sol, note)
        self.close_bar()
        check = self.check(sol)
        if sol.decision is not None and check is None:  # the checker itself ran out of time: never claim a checked answer
            return max(self.finish(_noted(sol, "not checked: the checker did not finish in time"), None), 1)
        return self.finish(sol, check)

    def finish(self, sol, check) -> int:
        write_error = None
        out = self.out
        if out:
            try:
                sol.write(out, self.inputs)
            except UserError as exc:  # the answer is printed all the same, then exit 2
                write_error = exc
                out = None
        rep = sol.report
        family, method, inst = self.family, self.method, self.inst
        if self.as_json:
            doc: dict[str, Any] = {"problem": family.name, "method": method, "instance": self.file, **rep.to_dict()}
            doc["check"] = None if check is None else check.to_dict()
            if out:
                doc["solution_file"] = out
            click.echo(json.dumps(doc))
        else:
            click.echo(f"{family.name} / {method} on {inst.name}: {rep.status}")
            gap_text = "-" if rep.gap is None else f"{rep.gap:.3g}" if rep.gap else "0"
            click.echo(f"  objective {_fmt(rep.objective)}   bound {_fmt(rep.bound)}   gap {gap_text}")
            solver_text = " ".join(str(s) for s in (rep.solver, rep.solver_version) if s)
            translate = f", translate {rep.translate_s:.3f}" if rep.translate_s else ""
            click.echo(f"  wall {rep.wall_s:.3f} s (build {rep.build_s:.3f}{translate}, solve {rep.solve_s:.3f})"
                       + (f"   solver {solver_text}" if solver_text else "")
                       + f"   command {self.clock.elapsed():.1f} s of {self.clock.limit:g}")
            if rep.message:
                click.echo(f"  note: {rep.message}")
            if check is not None:
                click.echo("  check: ok" if check.feasible else f"  check: FAILED ({len(check.violations)} violations)")
            if out:
                click.echo(f"  solution written to {out}")
            if sol.decision is not None:
                click.echo("")
                for line in decision_table(sol.decision, [j.id for j in inst.jobs]):
                    click.echo(f"  {line}")
        if check is not None and not check.feasible:
            for v in check.violations:
                click.echo(f"  violation: {v}", err=True)
        if write_error is not None:
            if threading.current_thread() is not threading.main_thread():  # the watchdog: no caller to raise to
                click.echo(f"mlsched: error: {write_error.message()}", err=True)
                return 2
            raise write_error
        if check is not None and not check.feasible:
            return 1
        if rep.status == "disputed":
            click.echo(f"DISPUTED: {rep.message}", err=True)
        return 1 if rep.status in ("error", "disputed") else 0


@cli.command()
@click.argument("file")
@click.argument("solution")
@click.option("--problem", type=PROBLEM, default=None, help="Problem family (default: the solution's).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Problem option (default: the instance's options, else the family's defaults; never the solution's).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.pass_context
def check(ctx, file, solution, problem, sets, as_json) -> int:
    """Check SOLUTION (JSON) against the instance FILE, trusting nothing but the decision.

    The problem is the instance's with its options and --set: a solution that records other
    problem options breaks the rule `problem-options`.  Exit 0 when the decision is feasible
    and the stated objective is right; 1 otherwise, with every violation listed.

    \b
    Example:
      mlsched solve instances/demo.toml --method ffd --out ffd.sol.json
      mlsched check instances/demo.toml ffd.sol.json
    """
    from .io.solution import read_solution
    from .problems import REGISTRY, check_solution

    inst = _load(file, ctx.obj["catalog"])
    sol = read_solution(solution)
    if sol.problem not in REGISTRY:
        raise InstanceError(f"unknown problem {sol.problem!r}; the known ones are {', '.join(REGISTRY)}", solution, "problem")
    if problem is not None and problem != sol.problem:
        raise OptionError(f"the solution is for problem {sol.problem!r}, not {problem!r}", field="--problem")
    result = check_solution(inst, sol, _parse_sets(sets))
    if as_json:
        click.echo(json.dumps(result.to_dict()))
    elif result.feasible:
        click.echo(f"ok: feasible, objective {result.objective:g} as stated")
    else:
        click.echo(f"{len(result.violations)} violation(s):")
        for v in result.violations:
            click.echo(f"  {v}")
    return 0 if result.feasible else 1


@cli.command()
@click.argument("file")
@click.option("--problem", type=PROBLEM, default=None, help="Problem family (default: the instance's `problem`).")
@click.option("--format", "fmt", type=click.Choice(["mps", "lp"]), default=None, help="Default: from the output's extension.")
@click.option("-o", "--output", required=True, metavar="PATH", help="Where to write the model.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Problem option.")
@click.pass_context
def export(ctx, file, problem, fmt, output, sets) -> int:
    """Write the family's Pyomo model of FILE as MPS or LP, with readable names.

    That model is the exact formulation where the family's exact method solves it; where the exact
    method is something else (an oracle: an exhaustive search), the model is a surrogate of the
    problem, and the message says so.

    \b
    Example:
      mlsched export instances/demo.toml --format lp -o demo.lp
    """
    from .io.files import atomic_path, check_writable
    from .solvers import EXPORT_FORMATS, export_model

    inst = _load(file, ctx.obj["catalog"])
    family = _family_for(inst, problem)
    options = family.resolve_options(inst, _parse_sets(sets))
    fmt = fmt or Path(output).suffix.lstrip(".").lower()
    if fmt not in EXPORT_FORMATS:
        raise OptionError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r} (use --format or a .mps/.lp name)",
                          field="--format")
    inputs = (file, *_catalog_files(inst.catalog))
    check_writable(output, inputs)  # before building the model
    family.check_model_size(inst, "the exported model")
    model = family.build_model(inst, options)
    with atomic_path(output, inputs) as tmp:
        export_model(model, tmp, fmt)
    size = f"{model.nvariables()} variables, {model.nconstraints()} constraints"
    exact = family.methods.get("exact")
    if exact is not None and exact.kind == "exact":
        what = "the exact formulation, as --method exact solves it"
    elif exact is not None:  # the exact answer comes from a search, not from this model: say it is a stand-in
        what = f"the surrogate model, not the exact problem (--method exact is an {exact.kind}: {exact.summary})"
    else:
        what = "the family's model (it has no exact method)"
    click.echo(f"wrote {output} ({fmt}, {size}): {what}")
    return 0


def _instance_output(ctx: click.Context, problem: str, output: str, sizes: dict[str, int | None]):
    """What ``generate`` and ``import`` check before any work: the sizes asked for against the
    limits, the output's format and writability (never over a catalog file); returns the family,
    the catalog and the input files."""
    from .io import load_catalog
    from .io.files import check_writable, format_of, limits, over_limit
    from .problems import get_family

    caps = limits()
    for name, value in sizes.items():
        if value is not None and value > caps[name]:
            raise over_limit(name, value, f"the number of {name}", None, f"--{name}")
    format_of(output)
    family = get_family(problem)
    catalog = load_catalog(ctx.obj["catalog"])
    inputs = _catalog_files(catalog)
    check_writable(output, inputs)
    return family, catalog, inputs


@cli.command()
@click.option("--problem", type=PROBLEM, required=True, help="Problem family.")
@click.option("--jobs", type=click.IntRange(min=1), required=True)
@click.option("--servers", type=click.IntRange(min=1), required=True)
@click.option("--slots", type=click.IntRange(min=1), default=None, help="Time slots (slotted problems).")
@click.option("--seed", type=int, required=True)
@click.option("-o", "--output", required=True, metavar="FILE", help="Instance file to write (.toml or .json).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Generator option (see `mlsched info`).")
@click.pass_context
def generate(ctx, problem, jobs, servers, slots, seed, output, sets) -> int:
    """Write a random instance; the same seed gives the same file.

    \b
    Examples:
      mlsched generate --problem packing --jobs 12 --servers 4 --seed 7 -o my.toml
      mlsched generate --problem smd --jobs 30 --servers 2 --seed 1 --set sgd=sync -o smd.toml
    """
    from .io import from_document, write_document
    from .problems import GenerateSpec

    if seed < 0:
        raise OptionError(f"seed must be >= 0, got {seed}", field="--seed")
    # the sizes a generator would draw are refused before it draws them, like a file's would be
    family, catalog, inputs = _instance_output(ctx, problem, output, {"jobs": jobs, "servers": servers, "slots": slots})
    options = family.parse_generate_options(_parse_sets(sets))
    doc = family.generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed, slots=slots, options=options), catalog)
    from_document(doc, file=output, catalog=catalog)  # a generator bug must not produce an invalid file
    write_document(doc, output, inputs)
    click.echo(f"wrote {output}")
    return 0


@cli.command("import")
@click.argument("source", metavar="SOURCE")
@click.option("--problem", type=PROBLEM, default=None, help="Problem family to import into (see `mlsched info`); not for gavel.")
@click.option("-o", "--output", required=True, metavar="FILE",
              help="Instance file to write (.toml or .json); for gavel, the catalog directory.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Jobs in the window (default: all of the source's).")
@click.option("--servers", type=click.IntRange(min=1), default=None, help="Servers of the cluster (default: all).")
@click.option("--slots", type=click.IntRange(min=1), default=None, help="Time slots (default: the family's, or what the arrivals need).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of every draw (window, servers, workloads).")
@click.option("--data", default=None, metavar="DIR",
              help="Folder of the data sets (layout of ../shared/data); default $MLSCHED_SHARED_DATA, else ../shared/data.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Source or family option (see below).")
@click.pass_context
def import_(ctx, source, problem, output, jobs, servers, slots, seed, data, sets) -> int:
    """Turn a real trace SOURCE into an instance: alibaba, philly, pollux (jobs) or gavel (the catalog).

    Same arguments, same file.  The instance's `source` names the file, the rows, the seed and
    every assumption.

    \b
    Examples:
      mlsched import alibaba --problem packing --jobs 200 -o pods.toml
      mlsched import alibaba --problem hetero --jobs 100 --set pods=gpuspec33 -o hetero.toml
      mlsched import philly --problem oasis --jobs 50 --servers 20 --seed 3 -o philly.toml
      mlsched import pollux --problem locality --set workload=2 --set cluster=pollux -o pollux.toml
      mlsched import gavel -o models/
    """
    from .io import from_document, write_document
    from .traces import SOURCES, data_dir, import_instance

    if source not in SOURCES:
        raise OptionError(f"unknown source {source!r}; choose from {', '.join(SOURCES)}", field="SOURCE")
    folder = data_dir(data)
    if source == "gavel":
        from .traces.gavel import import_catalog

        if problem or jobs or servers or slots or sets:
            raise OptionError("gavel writes the workload catalog: it takes only -o DIR (and --data)", field="SOURCE")
        base = Path(ctx.obj["catalog"]) if ctx.obj["catalog"] else None  # entries kept are the catalog's in use
        for line in import_catalog(folder, Path(output), base):
            click.echo(line)
        return 0
    if not problem:
        raise OptionError(f"importing {source} needs --problem (see `mlsched info`)", field="--problem")
    family, catalog, inputs = _instance_output(ctx, problem, output, {"jobs": jobs, "servers": servers, "slots": slots})
    doc, notes = import_instance(source, family, folder, jobs, servers, slots, seed, _parse_sets(sets), catalog)
    inst = from_document(doc, file=output, catalog=catalog)  # an importer bug must not produce an invalid file
    write_document(doc, output, inputs)
    for note in notes:
        log.info("note: %s", note)
    gpus = sum(s.capacity.get("gpu", 0) for s in inst.servers)
    click.echo(f"wrote {output} ({len(inst.jobs):,} jobs, {len(inst.servers):,} servers, {gpus:,g} GPUs)")
    return 0


@cli.command()
@click.argument("file")
@click.option("--problem", type=PROBLEM, default=None, help="Problem family (default: the instance's `problem`).")
@click.option("--methods", type=METHODS, default=None, metavar="METHOD,...", cls=_LazyHelp, help_from=_methods_help)
@click.option("--solvers", "solvers", type=SOLVERS, default="highs,cpsat", show_default=True, help="Solvers for the exact method.")
@solver_options
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@click.pass_context
def compare(ctx, file, problem, methods, solvers, sets, certify, solver, time_limit, gap, threads, seed, as_json) -> int:
    """Run methods on FILE, check every answer, and print ratios to the proven optimum.

    The exact method runs once per solver in --solvers; the LP relaxation adds a bound.

    \b
    Example:
      mlsched compare instances/demo.toml
      mlsched compare instances/demo.toml --set objective=servers --solvers highs
    """
    from .bench import compare as run_compare, format_table

    inst = _load(file, ctx.obj["catalog"])
    family = _family_for(inst, problem)
    # oracles (exhaustive enumeration) run only when asked for: they are for tiny instances
    names = methods.split(",") if methods else [m.name for m in family.methods.values() if m.kind != "oracle" and m.available]
    if not methods and not as_json:
        for m in family.methods.values():
            if not m.available:
                log.info("skipping %s: needs %s (pip install -e '.[rl]')", m.name, m.requires)
    solver_list = [s.strip() for s in solvers.split(",") if s.strip()]
    pairs = []
    for name in names:
        m = family.method(name.strip())
        pairs += [(m.name, s) for s in solver_list] if m.kind == "exact" else [(m.name, solver)]
    for _, s in pairs:
        _solve_options(s, time_limit, gap, threads, seed)
    options = family.resolve_options(inst, _parse_sets(sets))
    base = _solve_options(solver, time_limit, gap, threads, seed, certify)
    progress = None if as_json else log.info
    rows = run_compare(inst, family, pairs, options, base, progress=progress)
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in rows]))
    else:
        opts = options
        click.echo(f"{family.name} on {inst.name} ({len(inst.jobs)} jobs, {len(inst.servers)} servers; "
                   f"{', '.join(f'{k}={_fmt(v)}' for k, v in opts.items())}; sense {family.sense(opts)}; gap {gap:g})")
        click.echo(format_table(rows))
        click.echo("ratio: how far from the proven optimum (1 = optimal); '<=' when only a bound is proven")
        for r in rows:
            if r.report.status == "disputed":
                click.echo(f"DISPUTED {r.label}: {r.report.message}", err=True)
    bad = [r for r in rows if (r.check is not None and not r.check.feasible) or r.report.status == "disputed"]
    return 1 if bad else 0


@cli.command()
@click.option("--problem", type=PROBLEM, required=True, help="Problem family with a learned method (harmony).")
@click.option("--episodes", type=click.IntRange(min=1), required=True, help="Reinforcement-learning episodes (one generated trace each).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seeds the traces, the networks and the exploration.")
@click.option("-o", "--output", required=True, metavar="MODEL", help="Where to write the trained policy (e.g. models/harmony-drl.pt).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Training option (see `mlsched info`).")
def train(problem, episodes, seed, output, sets) -> int:
    """Train a family's learned policy on generated traces; the same seed gives the same policy.

    \b
    Example:
      mlsched train --problem harmony --episodes 200 --seed 0 -o models/harmony-drl.pt
    """
    from .io.files import check_writable
    from .problems import get_family
    from .problems.base import TrainSpec

    family = get_family(problem)
    if family.train is None:
        raise OptionError(f"problem {family.name} has no learned method to train", field="--problem")
    check_writable(output)  # before the training, not after it
    spec = TrainSpec(episodes=episodes, seed=seed, output=output, options=_parse_sets(sets))
    if not log.isEnabledFor(logging.INFO):  # --quiet
        path = family.train(spec)
    elif sys.stderr.isatty():
        with click.progressbar(length=episodes, label=f"training {family.name}", file=sys.stderr,
                               item_show_func=lambda msg: msg) as bar:
            spec.progress = lambda episode, message: bar.update(episode - bar.pos, message)
            path = family.train(spec)
    else:  # a log file gets a line every 5% instead of a bar it cannot show
        every = max(1, episodes // 20)

        def progress(episode: int, message: str) -> None:
            if episode % every == 0 or episode == episodes:
                log.info("episode %d/%d: %s", episode, episodes, message)

        spec.progress = progress
        log.info("training %s: reward model, warm-up, then %d episodes", family.name, episodes)
        path = family.train(spec)
    click.echo(f"wrote {path}")
    return 0


@cli.command()
@click.pass_context
def info(ctx) -> int:
    """List problems, their methods and options, solvers on this machine, and the workload catalog."""
    from .io import load_catalog
    from .problems import REGISTRY
    from .solvers import available_solvers
    from .traces import source_table

    click.echo("problems:")
    for fam in REGISTRY.values():
        click.echo(f"  {fam.name}: {fam.summary}")
        for m in fam.methods.values():
            g = f" [guarantee: {m.guarantee}]" if m.guarantee else ""
            click.echo(f"    --method {m.name} ({m.kind}): {m.summary}{g}")
        for o in fam.options:
            kind = " [problem]" if o.problem else ""
            short = f" (solve {o.flag})" if o.flag else ""
            default = o.default if o.default not in ("", None) else "none"
            click.echo(f"    --set {o.name}=<{o.describe()}> (default {default}){kind}{short}: {o.help}")
        for verb, opts in (("generate", fam.generate_options), ("train", fam.train_options)):
            for o in opts:
                click.echo(f"    {verb} --set {o.name}=<{o.describe()}> (default {o.default}): {o.help}")
        if fam.trace is not None:
            click.echo(f"    import from: {', '.join(fam.trace.sources)}")
            for o in fam.trace.options:
                click.echo(f"    import --set {o.name}=<{o.describe()}> (default {o.default}): {o.help}")
    click.echo("trace sources (mlsched import SOURCE):")
    for src in source_table().values():
        click.echo(f"  {src.name}: {src.summary}")
        for o in src.options:
            click.echo(f"    import --set {o.name}=<{o.describe()}> (default {o.default}): {o.help}")
    click.echo("  gavel: the workload catalog from Gavel's throughput file (mlsched import gavel -o models/)")
    click.echo("solvers:")
    for name, version in available_solvers().items():
        click.echo(f"  {name}: {version or 'not installed'}")
    try:
        cat = load_catalog(ctx.obj["catalog"])
        click.echo(f"workload catalog ({' over '.join(str(d) for d in reversed(cat.directories))}): {', '.join(cat)}")
    except UserError as exc:
        click.echo(f"workload catalog: unavailable ({exc.message()})")
    return 0


SHELLS = ("bash", "zsh", "fish")


@cli.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> int:
    """Print the completion script for SHELL: commands, options, and problem, method and solver names.

    \b
    bash:  eval "$(mlsched completion bash)"       (in ~/.bashrc)
    zsh:   eval "$(mlsched completion zsh)"        (in ~/.zshrc)
    fish:  mlsched completion fish > ~/.config/fish/completions/mlsched.fish

    Click's own mechanism underneath: the script calls `_MLSCHED_COMPLETE=bash_complete mlsched`,
    and `_MLSCHED_COMPLETE=bash_source mlsched` prints the same script.  Completing a problem,
    method or solver name loads the problem registry (about a second).
    """
    from click.shell_completion import get_completion_class

    completer = get_completion_class(shell)
    assert completer is not None  # `shell` is a click.Choice of the shells click completes
    script = completer(cli, {}, "mlsched", "_MLSCHED_COMPLETE").source()
    click.echo(script)
    return 0


#: the command being run: when it started (the process start for a real ``mlsched`` process, the
#: call of :func:`main` in-process) and whether ``solve`` may arm its watchdog (only in a real
#: process: see :mod:`.clock`)
_COMMAND: dict[str, Any] = {"watchdog": False, "start": None}


def console_main() -> None:
    """The ``mlsched`` command (console script, ``python -m mlsched_opt``): a process of its own, so
    its clock starts when the process started and its watchdog may end it."""
    main(None, process=True)


def main(argv: list[str] | None = None, *, process: bool = False) -> None:
    """Entry point: user errors end in one line and exit code 2, never a traceback.

    Called in-process (tests, a notebook), the command's clock starts at this call and no
    watchdog is armed (it would end the caller); ``process=True`` is for :func:`console_main`.
    """
    from .clock import process_age
    from .io.files import set_limits

    _COMMAND["watchdog"] = process
    _COMMAND["start"] = time.perf_counter() - (process_age() if process else 0.0)

    try:
        code = cli.main(args=argv, prog_name="mlsched", standalone_mode=False)
    except UserError as exc:
        click.echo(f"mlsched: error: {exc.message()}", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    finally:
        set_limits(())  # --limit holds for one command (main runs many times in one test process)
        _COMMAND.update(watchdog=False, start=None)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    console_main()
