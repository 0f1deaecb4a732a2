"""The wall-clock promise of one command (``--time-limit`` bounds the whole command), and the
cores it may use.

Loading, building, translating, solving, the algorithm, the bound, the checker and the writing
all count.  :class:`CommandClock` hands each phase what is left of the budget (methods treat
their ``time_limit`` as a deadline and are anytime, checking it with :func:`past`, which a Ctrl-C
also trips); the CLI's watchdog (:mod:`mlsched_opt.cli.signals`) is the backstop for a phase that
does not return in time.  :func:`offer` publishes a method's best answer so far, for whoever must
end a run early.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

log = logging.getLogger(__name__)

#: share of the limit kept for checking the answer and writing it (the promise is the limit + 10 %)
RESERVE_SHARE = 0.05
#: share of the limit the watchdog waits, past the deadline, for a check already running (a second
#: check of the same answer would only slow both)
CHECK_WAIT_SHARE = 0.05
#: share of what is left that an approximation leaves for its proven bound
BOUND_SHARE = 0.2
#: the least a phase is given: it still starts, and an anytime method returns at once
MIN_PHASE_S = 0.01


def process_age() -> float:
    """Seconds since this process started (interpreter start-up and imports count against the
    limit too); 0 where the system does not say."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            # field 22 (after the parenthesized name, which may hold spaces) is the start time in ticks
            started = int(fh.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        return max(uptime - started, 0.0)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


@dataclass(frozen=True)
class CommandClock:
    """The deadline of one command, ``limit`` seconds after ``start`` (a ``perf_counter`` value)."""

    start: float
    limit: float

    @property
    def deadline(self) -> float:
        return self.start + self.limit

    @property
    def reserve(self) -> float:
        return RESERVE_SHARE * self.limit

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def budget(self, keep: float = 0.0) -> float:
        """Seconds a phase may take so that ``keep`` seconds and the reserve remain."""
        return max(self.left() - self.reserve - keep, MIN_PHASE_S)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


def usable_cpus() -> int:
    """The cores this process may run on (its affinity mask, which ``taskset`` or a container's
    cpuset narrows; a CPU quota such as ``docker --cpus`` does not show here), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_threads() -> int:
    """Solver threads of a single ``solve`` or ``compare``: ``$MLSCHED_THREADS`` if set, else every
    usable core (a sweep runs one thread per task instead).  ``--threads 1`` (or
    ``MLSCHED_THREADS=1``) makes runs repeatable: CP-SAT's parallel workers race to their answers."""
    raw = os.environ.get("MLSCHED_THREADS", "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            from .errors import OptionError

            raise OptionError(f"must be a whole number of threads, got {raw!r}", field="$MLSCHED_THREADS") from None
        return value
    return usable_cpus()


# --- stopping early: the deadline, or the user's Ctrl-C ----------------------------------------

_stop = threading.Event()


def request_stop() -> None:
    """Ask every anytime loop to return its best answer now (the first Ctrl-C of a command)."""
    _stop.set()


def stop_requested() -> bool:
    return _stop.is_set()


def clear_stop() -> None:
    """A new command starts with no stop requested (commands run one after another in one process
    in tests and notebooks)."""
    _stop.clear()


def past(deadline: float | None) -> bool:
    """Whether an anytime loop must return what it has: its ``deadline`` (a ``perf_counter``
    value; ``None`` for none) has passed, or the user asked the run to stop (Ctrl-C).  Every
    method's deadline check goes through here, so that an interrupt ends a method the way its time
    limit would, with its best answer so far."""
    return _stop.is_set() or (deadline is not None and time.perf_counter() > deadline)


# --- the run in progress: what a method has found so far --------------------------------------

_incumbent_listeners: list[Callable[[Any, Any], None]] = []


def offer(report: Any, decision: Any) -> None:
    """A method's best answer so far (a :class:`~mlsched_opt.report.SolveReport` and its decision),
    for whoever must end the run early (the watchdog at the time limit, a Ctrl-C): an exact method
    offers its heuristic start and every improvement, so a run cut off in a solver's native code
    still has an answer.  Nearly free when no one listens."""
    if _incumbent_listeners:
        _incumbent_listeners[-1](report, decision)


@contextmanager
def watching(listener: Callable[[Any, Any], None]) -> Iterator[None]:
    """Receive :func:`offer`-ed answers while the block runs (the innermost listener gets them)."""
    _incumbent_listeners.append(listener)
    try:
        yield
    finally:
        _incumbent_listeners.remove(listener)


# --- progress of a long run --------------------------------------------------------------------

_listeners: list[Callable[[int, int, str], None]] = []
_status_listeners: list[Callable[[str], None]] = []


def progress(done: int, total: int, unit: str = "jobs") -> None:
    """A method's loop says how far it is (``done`` of ``total`` ``unit``); nearly free when no
    one listens, so a loop may call it once per job."""
    if _listeners:
        _listeners[-1](done, total, unit)


def status(text: str) -> None:
    """A search says where it stands (``incumbent 42, bound 43, gap 2.3%``): an exact solve's
    solver callbacks call it on every improvement, so a user sees the gap close without ``-v``'s logs."""
    if _status_listeners:
        _status_listeners[-1](text)


def search_status(objective: float | None, bound: float | None) -> None:
    """:func:`status` of an incumbent and a bound, in the toolkit's words."""
    if not _status_listeners:
        return
    from .report import relative_gap

    gap = relative_gap(objective, bound)
    parts = [f"incumbent {objective:.6g}" if objective is not None else "no incumbent",
             f"bound {bound:.6g}" if bound is not None else "no bound"]
    if gap is not None:
        parts.append(f"gap {100 * gap:.3g}%")
    status(", ".join(parts))


@contextmanager
def listening(listener: Callable[[int, int, str], None], on_status: Callable[[str], None] | None = None) -> Iterator[None]:
    _listeners.append(listener)
    if on_status is not None:
        _status_listeners.append(on_status)
    try:
        yield
    finally:
        _listeners.remove(listener)
        if on_status is not None:
            _status_listeners.remove(on_status)


class ProgressBar:
    """A run's progress as a tqdm bar on stderr: a method's loop (``812/2000 jobs``, with tqdm's rate
    and ETA) and a search's standing (incumbent, bound, gap) after it.  Nothing when the stream is not
    a terminal (a log or a pipe stays clean); in a notebook, ``notebook=True`` draws tqdm's widget.
    The bar is made on the first report, so a run that reports nothing draws nothing."""

    def __init__(self, label: str, stream: TextIO | None = None, every_s: float = 0.5, notebook: bool = False):
        self.label, self.every_s, self.notebook = label, every_s, notebook
        self.stream = stream if stream is not None else sys.stderr
        self.active = notebook or (hasattr(self.stream, "isatty") and self.stream.isatty())
        self._bar: Any = None
        self._unit = ""

    def _open(self, total: int | None, unit: str) -> Any:
        if self._bar is not None and (unit == self._unit or total is None):
            return self._bar
        self.close()
        if self.notebook:
            from tqdm.auto import tqdm
        else:
            from tqdm import tqdm
        self._unit = unit
        self._bar = tqdm(total=total, desc=self.label, unit=f" {unit}" if unit else "it", file=self.stream, leave=False,
                         mininterval=self.every_s, dynamic_ncols=True)
        return self._bar

    def __call__(self, done: int, total: int, unit: str) -> None:
        if not self.active:
            return
        bar = self._open(total, unit)
        bar.total = total
        bar.n = done
        bar.refresh() if done >= total else bar.update(0)

    def show(self, text: str) -> None:
        """A search's standing (:func:`status`), after the label."""
        if not self.active:
            return
        bar = self._open(None, self._unit or "")
        bar.set_postfix_str(text, refresh=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
