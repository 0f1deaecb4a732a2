"""How an ``mlsched`` process ends early: its watchdog at the time limit, Ctrl-C and SIGTERM.

Only a process of its own arms any of this (:func:`~mlsched_opt.cli.console_main`); called
in-process (tests, a notebook) a command keeps Python's own behaviour, since ending the process
would end the caller.

Signals are read by a thread of their own, woken through :func:`signal.set_wakeup_fd`: Python runs
a signal handler only when the main thread returns to the interpreter, which a solver's native
code may not do for the whole time limit.

- SIGTERM: temporary files of unfinished writes are removed, the process ends with 143.
- The first Ctrl-C asks every anytime method to return its best answer so far
  (:func:`mlsched_opt.clock.request_stop`: the algorithms' loops, HiGHS's MIP through its interrupt
  callback, CP-SAT and SCIP through a thread that stops their search); ``solve`` then checks, prints
  and writes it (marked interrupted, exit 130), and if its method does not return within a grace
  period (a model build, an LP that does not poll) the watchdog ends the command with what the run
  in progress has.  A verb with nothing to keep ends at once.
- A second Ctrl-C ends the process at once, removing temporary files.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

log = logging.getLogger("mlsched_opt.cli")

TERMINATED = 143
INTERRUPTED = 130

_installed = False
#: a duplicate of fd 2 made at installation: a solver's log capture may hold fd 2 and sys.stderr
#: when a signal comes, and what we say must reach the user all the same
_stderr_fd: int | None = None
_interrupts = 0
_on_interrupt: Callable[[], None] | None = None
#: set by :func:`unwind_instead`: signals end the command by unwinding Python (its pools shut down)
_unwind = False


class Watchdog:
    """At ``deadline``, call ``finish`` (which prints what the command has and returns its exit
    code) and end the process, unless the command has :meth:`claim`-ed the output first."""

    def __init__(self, deadline: float, finish: Callable[[], int], backstop_s: float = 5.0):
        self._finish = finish
        self._backstop_s = max(backstop_s, 0.5)
        self._lock = threading.Lock()
        self._claimed = False
        self._deadline = deadline
        self._saved = _saved_std_fds()
        self._timer = self._arm(deadline)

    def _arm(self, at: float) -> threading.Timer:
        timer = threading.Timer(max(at - time.perf_counter(), 0.0), self._fire)
        timer.daemon = True
        timer.start()
        return timer

    def expedite(self, seconds: float) -> None:
        """End the command ``seconds`` from now (a Ctrl-C's grace), if that is sooner than the deadline."""
        at = time.perf_counter() + seconds
        if self._claimed or at >= self._deadline:
            return
        self._timer.cancel()
        self._deadline = at
        self._timer = self._arm(at)

    def _fire(self) -> None:
        if not self._lock.acquire(blocking=False):
            return  # the command is writing its own answer
        # a solver's log capture (Pyomo's capture_output, as for --verbose) may hold fd 1 and 2 and
        # sys.stdout at this moment, feeding a reader thread that os._exit would cut off: the
        # answer goes to where the command's output went when it started
        for fd, saved in self._saved:
            os.dup2(saved, fd)
        if self._saved:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        # the ending (a check of the answer in hand, printing, writing) has its own bounded time
        backstop = threading.Timer(self._backstop_s, _end, (1, "the answer could not be checked and printed in time"))
        backstop.daemon = True
        backstop.start()
        try:
            code = self._finish()
        except BaseException:  # the process ends either way; say why
            log.exception("could not finish at the time limit")
            code = 1
        _remove_temporaries()
        _flush()
        os._exit(code)

    def claim(self) -> None:
        """The command ends itself (with its answer, or an error on its way out); blocks forever if
        the watchdog already is ending it (it ends the process).  Calling it again is harmless."""
        if not self._claimed:
            self._lock.acquire()
            self._claimed = True
            self._timer.cancel()
            for _, saved in self._saved:
                os.close(saved)
            self._saved = []


def _saved_std_fds() -> list[tuple[int, int]]:
    """Duplicates of fd 1 and 2 as they are now, when the process's own streams write there."""
    saved = []
    for stream, fd in ((sys.__stdout__, 1), (sys.__stderr__, 2)):
        try:
            if stream is not None and stream.fileno() == fd:
                saved.append((fd, os.dup(fd)))
        except (OSError, ValueError):   # io.UnsupportedOperation is an OSError: no real descriptor
            pass
    return saved


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _remove_temporaries() -> None:
    from ..io import files

    remove = getattr(files, "remove_pending_temporaries", None)
    if remove is not None:
        with contextlib.suppress(Exception):
            remove()


def on_interrupt(callback: Callable[[], None] | None) -> None:
    """What the first Ctrl-C does besides asking methods to stop (``solve``: shorten its watchdog to
    the grace period); ``None``: a Ctrl-C ends the command at once."""
    global _on_interrupt
    _on_interrupt = callback


def _say(text: str) -> None:
    """A line on the user's stderr, even while a solver's log capture holds fd 2."""
    with contextlib.suppress(Exception):
        if _stderr_fd is not None:
            os.write(_stderr_fd, text.encode("utf-8", "replace"))
        else:
            sys.stderr.write(text)
            sys.stderr.flush()


def _end(code: int, words: str) -> None:
    _remove_temporaries()
    with contextlib.suppress(Exception):
        _say(f"mlsched: {words}{_written_note()}\n")
    _flush()
    os._exit(code)


def _written_note() -> str:
    from ..io import files

    done: list[str] = getattr(files, "written_paths", lambda: [])()
    return f" ({', '.join(map(str, done))} written)" if done else ""


def unwind_instead() -> None:
    """For a verb that starts worker processes (``bench``): a signal ends it by unwinding the main thread
    (KeyboardInterrupt for Ctrl-C, SystemExit 143 for SIGTERM), so that its pools and temporary folders
    shut down on the way out instead of being orphaned by an immediate exit.  Main thread only."""
    global _unwind
    if threading.current_thread() is not threading.main_thread():
        return
    _unwind = True
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(TERMINATED)

    signal.signal(signal.SIGTERM, terminate)


def _handle(signum: int) -> None:
    global _interrupts
    from ..clock import request_stop

    if _unwind:  # the Python-level handlers act, in the main thread
        return
    if signum == signal.SIGTERM:
        _end(TERMINATED, "terminated")
    elif signum == signal.SIGINT:
        _interrupts += 1
        callback = _on_interrupt
        if _interrupts > 1 or callback is None:
            _end(INTERRUPTED, "interrupted")
        request_stop()
        _say("\nmlsched: interrupted: returning the best answer so far (Ctrl-C again to quit at once)\n")
        if callback is not None:
            callback()


def install() -> None:
    """Route SIGINT and SIGTERM to :func:`_handle` on a thread of their own (main thread only; once)."""
    global _installed, _stderr_fd
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    with contextlib.suppress(OSError):
        _stderr_fd = os.dup(2)
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: None)  # the work is done by the watcher below

    def watch() -> None:
        while True:
            try:
                data = os.read(read, 64)
            except InterruptedError:
                continue
            except OSError:
                return
            for signum in data:
                _handle(signum)

    threading.Thread(target=watch, name="mlsched-signals", daemon=True).start()
    _installed = True
