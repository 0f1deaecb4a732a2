"""Where the tasks of a sweep run: a local process pool, or a Dask cluster.

:func:`execute` hands every task to ``fn`` (default :func:`~mlsched_opt.bench.tasks.run_task`)
and calls ``on_row`` in this process with each row as it arrives, so that the caller writes
it at once (a crash of the sweep loses no finished task).  Rows arrive in completion order;
their content does not depend on the executor (one solver thread per task, seeds from the suite).

``local``
    :class:`concurrent.futures.ProcessPoolExecutor`, ``workers`` processes (default
    :func:`~mlsched_opt.clock.usable_cpus`), started from a fork server that has imported the package once.  A worker
    that dies (a segfault in a solver, the kernel's out-of-memory killer) breaks the pool: the
    tasks that were running then run again one per pool, so that the one that kills its worker is
    found and becomes an ``error`` row; the tasks that had not started go on in a new pool.
``dask``
    a :class:`distributed.LocalCluster` of ``workers`` single-threaded worker processes, or the
    cluster whose scheduler is at ``scheduler`` (``tcp://host:8786``), whose workers must have
    this package installed.  A task whose worker dies is retried by Dask, then becomes an ``error`` row.

Progress goes to stderr: a line that rewrites itself on a terminal, a line per tenth of the
sweep otherwise, with the tasks done, errors, elapsed time and the estimated time left.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from ..clock import usable_cpus
from .tasks import Task, error_row, run_task

EXECUTORS = ("local", "dask")
#: modules the fork server imports once, so that every worker starts warm
PRELOAD = ["mlsched_opt.bench.tasks", "mlsched_opt.problems", "mlsched_opt.checking"]


def _fmt_s(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """A sweep's progress on stderr: a tqdm bar on a terminal (tasks done, errors, rate, ETA), and in a
    log one line every tenth or every minute (``bench: 12/40 (30%) errors 0, elapsed 0:12, ETA 0:28``)."""

    def __init__(self, total: int, stream: TextIO | None = None, label: str = "bench"):
        self.total, self.done, self.errors = total, 0, 0
        self.stream = stream if stream is not None else sys.stderr
        self.label = label
        self.start = time.perf_counter()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_decile = -1
        self._last_print = self.start
        self.every_s = 60.0
        # progress is INFO: `mlsched --quiet bench` sets the package logger to WARNING and asks for none
        # (a library caller that configured no logging still gets progress)
        self.silent = logging.getLogger("mlsched_opt").level >= logging.WARNING
        self._bar: Any = None

    def line(self) -> str:
        elapsed = time.perf_counter() - self.start
        pct = 100.0 * self.done / self.total if self.total else 100.0
        eta = "-" if not self.done else _fmt_s(elapsed / self.done * (self.total - self.done))
        return (f"{self.label}: {self.done}/{self.total} ({pct:.0f}%) errors {self.errors}, "
                f"elapsed {_fmt_s(elapsed)}, ETA {eta}")

    def update(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.errors += row.get("status") == "error"
        if self.silent:
            return
        if self.tty:
            if self._bar is None:
                from tqdm import tqdm

                self._bar = tqdm(total=self.total, desc=self.label, unit=" tasks", file=self.stream, dynamic_ncols=True)
            self._bar.update(1)
            self._bar.set_postfix_str(f"errors {self.errors}", refresh=False)
            if self.done == self.total:
                self._bar.close()
            return
        decile = 10 * self.done // max(self.total, 1)
        now = time.perf_counter()
        if decile != self._last_decile or now - self._last_print >= self.every_s:  # a log: every tenth, or every minute
            self._last_decile, self._last_print = decile, now
            print(self.line(), file=self.stream, flush=True)


def execute(tasks: list[Task], on_row: Callable[[dict[str, Any]], None], executor: str = "local",
            workers: int | None = None, scheduler: str | None = None, fn: Callable[[Task], dict[str, Any]] | None = None,
            progress: Progress | None = None) -> None:
    """Run ``fn`` (default :func:`run_task`; a module-level function, which workers import by
    name) on every task; ``on_row(row)`` in this process for each, as it completes."""
    if not tasks:
        return
    fn = fn if fn is not None else run_task
    progress = progress if progress is not None else Progress(len(tasks))

    def deliver(row: dict[str, Any]) -> None:
        on_row(row)
        progress.update(row)

    if executor == "local":
        _local(tasks, deliver, workers or usable_cpus(), fn)
    elif executor == "dask":
        _dask(tasks, deliver, workers, scheduler, fn)
    else:
        raise ValueError(f"unknown executor {executor!r}")


# --- local ---------------------------------------------------------------------------------------

def _context():
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")


def _tracked(fn: Callable[[Task], dict[str, Any]], folder: str, task: Task) -> dict[str, Any]:
    """``fn(task)``, with a marker file in ``folder`` while it runs (what a dead pool was running).

    The task's in-process backstop (SIGALRM) fires only when control returns to Python; a model
    build or a solver stuck in native code ignores it.  ``faulthandler``'s watchdog runs on its own
    C thread, without the GIL: past ``task.kill_after()`` it writes the stacks into
    the marker and ends the worker, which the pool reports as broken; the marker then says why."""
    import faulthandler

    marker = os.path.join(folder, task.key)
    try:
        with open(marker, "w") as fh:
            faulthandler.dump_traceback_later(task.kill_after(), exit=True, file=fh)
            try:
                return fn(task)
            finally:
                faulthandler.cancel_dump_traceback_later()
    finally:
        os.unlink(marker)


def _watchdog_dump(folder: str, name: str) -> str | None:
    """The stacks the watchdog wrote into a task's marker (it fired), else ``None``."""
    try:
        with open(os.path.join(folder, name)) as fh:
            text = fh.read(1 << 16)
    except OSError:
        return None
    return text if text.startswith("Timeout") else None


def _watchdog_row(task: Task, dump: str) -> dict[str, Any]:
    limit = task.kill_after()
    row = error_row(task, f"stopped by the harness after {limit:g} s: the task was stuck in native code (a model build "
                          f"or a solver) far past its time limit of {task.time_limit:g} s; the sweep went on", wall_s=limit)
    row["_traceback"] = dump  # where it was stuck, for errors.log
    return row


def _local(tasks: list[Task], deliver: Callable[[dict[str, Any]], None], workers: int,
           fn: Callable[[Task], dict[str, Any]]) -> None:
    import functools
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mlsched-bench-") as folder:
        tracked = functools.partial(_tracked, fn, folder)
        pending = list(tasks)
        while pending:
            unfinished = _pool_round(pending, deliver, min(workers, len(pending)), tracked)
            if not unfinished:
                return
            # the tasks that were running when a worker died: the culprit and its neighbours
            running = set(os.listdir(folder))
            stuck = {name: dump for name in running if (dump := _watchdog_dump(folder, name)) is not None}
            for name in running:
                os.unlink(os.path.join(folder, name))
            for t in unfinished:  # the watchdog names its task: no re-run
                if t.key in stuck:
                    deliver(_watchdog_row(t, stuck[t.key]))
            unfinished = [t for t in unfinished if t.key not in stuck]
            if stuck:  # the culprit is known: its neighbours were only collateral and run on as usual
                pending = unfinished
                continue
            suspects = [t for t in unfinished if t.key in running] or unfinished
            pending = [t for t in unfinished if t not in suspects]
            for task in suspects:  # one per pool: the one that kills its worker is known
                for t in _pool_round([task], deliver, 1, tracked):
                    dump = _watchdog_dump(folder, t.key)
                    deliver(_watchdog_row(t, dump) if dump is not None else
                            error_row(t, "the worker process died while running this task (a crash in native "
                                         "code, or killed for memory); the sweep went on"))
                for name in os.listdir(folder):
                    os.unlink(os.path.join(folder, name))


def _pool_round(tasks: list[Task], deliver, workers: int, fn) -> list[Task]:
    """Run ``tasks`` in one pool; the tasks left unfinished when the pool broke."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    unfinished: list[Task] = []
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=_context())
    try:
        futures = {pool.submit(fn, t): t for t in tasks}
        for fut in as_completed(futures):
            task = futures[fut]
            try:
                row = fut.result()
            except BrokenProcessPool:
                unfinished.append(task)
                continue
            except Exception as exc:  # noqa: BLE001 -- e.g. a row or task that does not pickle
                row = error_row(task, f"{type(exc).__name__}: {exc}")
            deliver(row)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    unfinished.sort(key=lambda t: t.order)
    return unfinished


# --- dask ----------------------------------------------------------------------------------------

def dask_cluster(workers: int | None, processes: bool = True):
    """A LocalCluster of single-threaded workers (no dashboard) and its client.  Its worker
    processes fork from the same server as the local pool's (the package imported once), where
    the platform has one; else Dask spawns them."""
    import dask
    from distributed import Client, LocalCluster

    method = dask.config.get("distributed.worker.multiprocessing-method")
    ctx = _context()
    if processes and ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        ctx.set_forkserver_preload([*PRELOAD, "distributed"])
        forkserver.ensure_running()  # started now, with this preload (Dask would set its own)
        method = "forkserver"
    with dask.config.set({"distributed.worker.multiprocessing-method": method}):
        cluster = LocalCluster(n_workers=workers or usable_cpus(), threads_per_worker=1, processes=processes,
                               dashboard_address=None)
    return cluster, Client(cluster)


def _dask(tasks: list[Task], deliver, workers: int | None, scheduler: str | None, fn) -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        from ..errors import OptionError

        raise OptionError("the dask executor needs dask[distributed] (pip install -e '.[bench]')", field="--executor") from None
    from distributed import Client, as_completed

    cluster = None
    if scheduler:
        try:
            client = Client(scheduler)
        except (OSError, TimeoutError, ValueError) as exc:
            from ..errors import OptionError

            raise OptionError(f"cannot reach a Dask scheduler at {scheduler}: {exc}", field="--scheduler") from None
    else:
        cluster, client = dask_cluster(workers)
    try:
        # pure=False: two equal tasks still run twice; keys name the row for Dask's dashboard
        futures = client.map(fn, tasks, pure=False, key=[f"bench-{t.key}-{time.time_ns()}" for t in tasks])
        by_key = {f.key: t for f, t in zip(futures, tasks)}
        for fut in as_completed(futures):
            task = by_key[fut.key]
            try:
                row = fut.result()
            except Exception as exc:  # noqa: BLE001 -- KilledWorker and the like: a row, not a dead sweep
                row = error_row(task, f"{type(exc).__name__}: {exc}")
            deliver(row)
            fut.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
