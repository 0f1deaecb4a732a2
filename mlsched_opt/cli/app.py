"""The ``mlsched`` group: global options (anywhere on the line), logging, and verbs loaded when used.

Importing this module loads click and the standard library only: each verb's module is imported
when that verb runs (or when ``--help`` lists the verbs), and a verb imports the heavy parts of the
library (the families, the solvers) inside its function, after its clock and watchdog are armed.
"""

from __future__ import annotations

import importlib
import logging
import sys
import time
from typing import Any, ClassVar

import click

from .. import __version__

log = logging.getLogger("mlsched_opt.cli")

#: verb -> (module, attribute); the order of ``mlsched --help`` is alphabetical (click's)
VERBS: dict[str, tuple[str, str]] = {
    "bench": ("mlsched_opt.bench.cli", "bench"),
    "check": ("mlsched_opt.cli.check", "check"),
    "compare": ("mlsched_opt.cli.compare", "compare"),
    "completion": ("mlsched_opt.cli.completion", "completion"),
    "export": ("mlsched_opt.cli.export", "export"),
    "generate": ("mlsched_opt.cli.generate", "generate"),
    "import": ("mlsched_opt.cli.imports", "import_"),
    "info": ("mlsched_opt.cli.info", "info"),
    "solve": ("mlsched_opt.cli.solve", "solve"),
    "train": ("mlsched_opt.cli.train", "train"),
    "validate": ("mlsched_opt.cli.validate", "validate"),
}

#: the command being run: when it started (the process start for a real ``mlsched`` process, the
#: call of :func:`~mlsched_opt.cli.main` in-process) and whether ``solve`` may arm its watchdog
#: (only in a process of its own: ending the process would end an in-process caller)
COMMAND: dict[str, Any] = {"watchdog": False, "start": None, "fast_exit": False}


def command_start() -> float:
    return COMMAND["start"] if COMMAND["start"] is not None else time.perf_counter()


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


def configure_logging(verbose: int, quiet: bool) -> None:
    """One stderr handler for the package's loggers, installed on the first command and reused by the
    next ones run in the same process.  On the package logger rather than the root one: Pyomo has its
    own handler and propagates, so a root handler would print its warnings twice."""
    from ..errors import OptionError

    if verbose and quiet:
        raise OptionError("-v and --quiet contradict each other", field="--quiet")
    pkg = logging.getLogger("mlsched_opt")
    if not any(isinstance(h, _StderrHandler) for h in pkg.handlers):
        handler = _StderrHandler()
        handler.setFormatter(_Formatter())
        pkg.addHandler(handler)
        pkg.propagate = False
    pkg.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)


def _state(ctx: click.Context) -> dict[str, Any]:
    root = ctx.find_root()
    if root.obj is None:
        root.obj = {"catalog": None, "verbose": 0, "quiet": False, "limits": []}
    return root.obj


def _apply(ctx: click.Context) -> None:
    from ..io.files import limits, set_limits

    state = _state(ctx)
    configure_logging(state["verbose"], state["quiet"])
    set_limits(state["limits"])
    limits()  # a malformed $MLSCHED_LIMITS is reported before any work


def _global(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A global option given before or after the verb: both places add to one state."""
    state = _state(ctx)
    if param.name == "verbose":
        state["verbose"] += value or 0
    elif param.name == "quiet":
        state["quiet"] = state["quiet"] or bool(value)
    elif param.name == "limit":
        state["limits"] = [*state["limits"], *(value or ())]
    elif param.name == "catalog" and value is not None:
        state["catalog"] = value
    return value


def global_options(f, envvar: str | None = None):
    """``--catalog``, ``--limit``, ``-v``, ``-q``: on the group and on every verb, so that
    ``mlsched solve FILE -v`` means what ``mlsched -v solve FILE`` means.  Only the group reads
    ``$MLSCHED_CATALOG`` (``envvar``): a verb's own ``--catalog`` is given on the line or not at all."""
    f = click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_global,
                     help="Nothing on stderr but warnings and errors (no progress, no notes).")(f)
    f = click.option("-v", "--verbose", count=True, expose_value=False, callback=_global,
                     help="Log what is done, step by step, on stderr (and the solver's log where it can).")(f)
    f = click.option("--limit", "limit", multiple=True, metavar="NAME=N", expose_value=False, callback=_global,
                     help="Raise (or lower) a size limit for this run, e.g. --limit servers=100000 (see `mlsched --help`).")(f)
    f = click.option("--catalog", envvar=envvar, default=None, metavar="DIR", expose_value=False, callback=_global,
                     help="A workload catalog of your own, laid over the shipped one (entries added, or replaced by name); "
                          "env MLSCHED_CATALOG.")(f)
    return f


class Verb(click.Command):
    """A verb: its global options are applied (logging, limits) once its own are parsed.  ``fast_exit``:
    its process may end without the interpreter's teardown once its answer is out (a verb that leaves
    worker processes or pools to shut down, ``bench``, says no)."""

    fast_exit: ClassVar[bool] = True

    def invoke(self, ctx: click.Context) -> Any:
        _apply(ctx)
        COMMAND["fast_exit"] = self.fast_exit
        return super().invoke(ctx)


def verb(*args: Any, **kwargs: Any):
    """``@verb(...)``: a click command of class :class:`Verb` (or a subclass) with the global options."""
    kwargs.setdefault("cls", Verb)

    def decorate(f):
        return click.command(*args, **kwargs)(global_options(f))

    return decorate


def catalog_of(ctx: click.Context) -> str | None:
    return _state(ctx)["catalog"]


def _limits_epilog() -> str:
    from ..io.files import LIMITS

    rows = "\n".join(f"  {name + '=' + str(default):<22} {what}" for name, (default, what) in LIMITS.items())
    return ("\b\nLimits (refused with exit 2 and the field named; raise with --limit NAME=N or\n"
            "MLSCHED_LIMITS=\"NAME=N,...\"; the command line wins):\n" + rows +
            "\n\n\b\nExit codes: 0 an answer (infeasible included); 1 a checker failure, a solver error or a dispute;\n"
            "2 a user error; 3 no answer within --time-limit; 130 interrupted (Ctrl-C); 143 terminated.")


class Commands(click.Group):
    """The verbs, each imported from its own module only when it is run or listed."""

    LAZY: ClassVar[dict[str, tuple[str, str]]] = VERBS

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.LAZY and name not in self.commands:
            module, attr = self.LAZY[name]
            command = getattr(importlib.import_module(module), attr)
            if not isinstance(command, Verb):
                raise TypeError(f"verb {name} ({module}:{attr}) must be made with cli.app.verb: its global options apply after it")
            self.add_command(command, name)
        return super().get_command(ctx, name)


class _Epilog(Commands):
    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self.epilog = _limits_epilog()
        super().format_epilog(ctx, formatter)


@click.group(cls=_Epilog, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mlsched")
@lambda f: global_options(f, envvar="MLSCHED_CATALOG")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Optimization models for scheduling distributed deep-learning jobs on GPU clusters.

    \b
    Start here:
      mlsched info                                   problems, methods, solvers, bundled instances
      mlsched validate demo                          check an instance (a file, or a bundled one by name)
      mlsched compare demo                           every method against the optimum
      mlsched solve demo --method exact
      mlsched completion bash                        shell completion (see its --help)
    """
    _apply(ctx)
