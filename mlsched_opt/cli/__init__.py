"""The ``mlsched`` command: a thin layer over the library (it parses and prints).

One module per verb, each imported when its verb runs; the work is the library's
(:mod:`mlsched_opt.pipeline` for solving, checking and rating answers).

Exit codes: 0 an answer (an infeasible instance is an answer, not a failure); 1 a solution that
fails the checker, a solver error or an unresolved dispute; 2 a user error (bad file, field or
option), reported in one line naming the file and the field; 3 no answer within ``--time-limit``;
130 interrupted (Ctrl-C); 143 terminated (SIGTERM).
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

import click

from .. import _IMPORTED
from .app import COMMAND, cli

#: what the interpreter's own start may take before it imports the package, on a loaded machine
_STARTUP_MAX_S = 0.5


__all__ = ["cli", "console_main", "decision_table", "main"]


def __getattr__(name: str) -> Any:
    # what the package exported when it was one module (the decision table is the library's now)
    if name == "decision_table":
        from ..render import decision_table

        return decision_table
    raise AttributeError(name)


def console_main() -> None:
    """The ``mlsched`` command (console script, ``python -m mlsched_opt``): a process of its own, so
    its clock starts when the process started, its watchdog may end it, and it handles its signals."""
    import os

    from . import signals

    signals.install()
    try:
        main(None, process=True)
    except SystemExit as done:
        if not COMMAND.get("fast_exit"):
            raise
        # the answer is out: skip tearing down a large instance's millions of objects (tens of seconds
        # at 100,000 jobs), which would break the time limit's promise after the work is done
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed pipe: nothing more to say
                stream.flush()
        os._exit(code)


def command_age(age: float) -> float:
    """The process's age, unless it is older than our code by more than an interpreter's start: a
    wrapper forked it, waited, then exec-ed us (``sh -c 'setup; exec mlsched ...'``), and the limit
    counts from the exec, about when this package was imported."""
    ours = time.perf_counter() - _IMPORTED
    return min(age, ours + _STARTUP_MAX_S)


def main(argv: list[str] | None = None, *, process: bool = False) -> None:
    """Entry point: user errors end in one line and exit code 2, never a traceback.

    Called in-process (tests, a notebook), the command's clock starts at this call and no
    watchdog is armed (it would end the caller); ``process=True`` is for :func:`console_main`.
    """
    from ..clock import clear_stop, process_age
    from ..errors import UserError

    COMMAND["watchdog"] = process
    COMMAND["start"] = time.perf_counter() - (command_age(process_age()) if process else 0.0)
    clear_stop()
    try:
        code = cli.main(args=argv, prog_name="mlsched", standalone_mode=False)
    except UserError as exc:
        click.echo(f"mlsched: error: {exc.message()}", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    finally:
        from ..io.files import set_limits

        set_limits(())  # --limit holds for one command (main runs many times in one test process)
        COMMAND.update(watchdog=False, start=None, fast_exit=COMMAND.get("fast_exit", False) and process)
    sys.exit(code if isinstance(code, int) else 0)
