"""The tasks of a suite, and running one: make the instance, run the method, check the answer.

Every (instance, problem options, method variant, solver) is one :class:`Task`, a small plain
object that pickles to any worker.  :func:`run_task` never raises: whatever goes wrong (a
generator, a method, the checker, a time-out of the harness's backstop) becomes a row with
status ``error`` and the message, so that a sweep always completes.

A row is a dict over :data:`COLUMNS`.  The columns a task cannot know (the reference of its
instance, the ratio, ``certified``) are filled in by :func:`mlsched_opt.bench.report.fill_references`
once every row of the instance is in.

Families may add columns of their own to the ``extra`` column (a JSON object) through
:data:`ROW_EXTRAS`: ``problem -> ["package.module:function", ...]``, each
``function(instance, solution, options) -> dict`` called in the worker on every answer with a
decision (a string, so that worker processes import it themselves).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .suite import InstanceSpec, MethodSpec, Suite, check_task_count, describe_setting, digest, row_runs

#: (column, type) of results.csv, in order; types: str, int, float, bool
SCHEMA: tuple[tuple[str, type], ...] = (
    ("suite", str), ("problem", str), ("instance", str), ("seed", int), ("jobs", int), ("servers", int), ("slots", int),
    ("setting", str), ("problem_options", str), ("role", str), ("method", str), ("label", str), ("solver", str),
    ("options", str), ("time_limit", float), ("status", str), ("objective", float), ("bound", float), ("sense", str),
    ("reference", float), ("reference_kind", str), ("ratio", float), ("certified", bool), ("wall_s", float),
    ("check", str), ("violations", int), ("message", str), ("certified_by", str), ("solver_version", str),
    ("instance_sha256", str), ("extra", str), ("version", str), ("key", str),
)
COLUMNS: tuple[str, ...] = tuple(name for name, _ in SCHEMA)
TYPES: dict[str, type] = dict(SCHEMA)

#: problem -> row-extra hooks ("package.module:function"), see the module docstring; every row
#: of an online method also gets its ``decision_ms`` (mean, p95, max per arriving job)
ROW_EXTRAS: dict[str, list[str]] = {"oasis": ["mlsched_opt.problems.oasis.methods:bench_extra"],
                                    "hetero": ["mlsched_opt.problems.hetero.methods:bench_extra"]}

#: the harness's own backstop on a task: HARD_FACTOR * time_limit + HARD_GRACE_S seconds (the
#: methods enforce their time limit themselves; this only stops one that does not)
HARD_FACTOR = 3.0
HARD_GRACE_S = 60.0
#: a local worker is ended this long after the backstop should have stopped its task (the backstop
#: fires only when control returns to Python; a model build or solver stuck in native code ignores it)
KILL_GRACE_S = 30.0


@dataclass(frozen=True)
class Task:
    """One run of the sweep.  ``order`` is its place in the suite (rows are written in it)."""

    key: str
    order: int
    suite: str
    problem: str
    instance: InstanceSpec
    problem_options: Mapping[str, Any]
    role: str                        # reference | method
    method: str
    label: str
    solver: str
    options: Mapping[str, Any]
    time_limit: float
    gap: float
    certify: bool
    seed: int
    catalog: str | None = None
    limits: tuple[str, ...] = ()
    version: str = ""
    setting: str = ""
    extras: tuple[str, ...] = field(default_factory=tuple)
    backstop_s: float = 0.0                    # the in-process backstop (0: from time_limit, see HARD_FACTOR)
    kill_s: float = 0.0                        # the local worker's watchdog (0: backstop + KILL_GRACE_S)

    def backstop(self) -> float:
        return self.backstop_s or HARD_FACTOR * self.time_limit + HARD_GRACE_S

    def kill_after(self) -> float:
        return self.kill_s or self.backstop() + KILL_GRACE_S


def task_key(spec: InstanceSpec, problem_options: Mapping[str, Any], role: str, method: MethodSpec, label: str,
             solver: str, seed: int, version: str) -> str:
    """The content hash that identifies a row across runs (``--resume``)."""
    return digest({
        "instance": spec.content, "problem_options": dict(problem_options), "role": role, "method": method.name,
        "label": label, "options": dict(method.options), "solver": solver, "time_limit": method.time_limit,
        "gap": method.gap, "certify": method.certify, "seed": seed, "threads": 1, "version": version,
    })[:24]


#: The distributions whose versions enter every task key: a new solver can change an answer.
_KEYED_DISTRIBUTIONS = ("highspy", "ortools", "pyscipopt", "pyomo", "numpy", "scipy", "torch")


def code_version(catalog: str | None = None, package: Path | None = None) -> str:
    """The package version and a digest of what decides an answer: the package's own source and
    schema files, the workload catalog layers the suite reads, and the solver and numeric
    libraries' versions.  A row of ``--resume`` is kept only under the same digest, so an edit
    of the code (or ``pip install -U highspy``) re-runs the suite instead of mixing old rows in."""
    from importlib import metadata

    from .. import __version__
    from ..io.catalog import catalog_dirs

    h = hashlib.sha256()
    package = package or Path(__file__).resolve().parents[1]  # the installed mlsched_opt (a test passes a copy)
    roots = [("pkg", package, ("*.py", "*.json"))] + [(f"catalog{i}", d, ("*.toml", "*.json", "*.pt"))
                                                       for i, d in enumerate(catalog_dirs(catalog))]
    for tag, root, patterns in roots:
        files = sorted({f for pattern in patterns for f in Path(root).rglob(pattern) if f.is_file()})
        for f in files:
            h.update(f"{tag}/{f.relative_to(root).as_posix()}\0".encode())
            h.update(hashlib.sha256(f.read_bytes()).digest())
    for dist in _KEYED_DISTRIBUTIONS:
        try:
            h.update(f"{dist}=={metadata.version(dist)}\0".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist} absent\0".encode())
    return f"{__version__}+{h.hexdigest()[:12]}"


def expand(suite: Suite) -> list[Task]:
    """Every task of the suite, in a fixed order: instance, problem options, reference, methods; a suite of
    more than ``bench_tasks`` tasks is refused by their count before any is made."""
    from ..io.files import limits

    check_task_count(suite)
    version = code_version(suite.catalog)
    caps = tuple(f"{k}={v}" for k, v in sorted(limits().items()))
    tasks: list[Task] = []
    for spec in suite.instances:
        for grid in suite.option_grid:
            prob = {**spec.problem_options, **grid}
            setting = describe_setting(spec.setting, prob)
            runs = [("reference", m) for m in suite.reference_methods] + [("method", m) for m in suite.methods]
            for role, m in runs:
                for solver, label in row_runs(m):
                    seed = m.seed if m.seed is not None else (spec.seed or 0)
                    key = task_key(spec, prob, role, m, label, solver, seed, version)
                    tasks.append(Task(key=key, order=len(tasks), suite=suite.name, problem=suite.problem, instance=spec,
                                      problem_options=prob, role=role, method=m.name, label=label, solver=solver,
                                      options=dict(m.options), time_limit=m.time_limit, gap=m.gap, certify=m.certify,
                                      seed=seed, catalog=suite.catalog, limits=caps, version=version, setting=setting,
                                      extras=tuple(ROW_EXTRAS.get(suite.problem, ()))))
    keys = [t.key for t in tasks]
    if len(set(keys)) != len(keys):  # labels are unique and instances distinct: a bug if this fires
        raise AssertionError("two tasks of the suite have the same key")
    return tasks


def base_row(task: Task) -> dict[str, Any]:
    """The row of a task before it runs (what the suite says about it)."""
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    spec = task.instance
    row.update(
        suite=task.suite, problem=task.problem, instance=spec.name, seed=spec.seed, setting=task.setting,
        problem_options=json.dumps(dict(task.problem_options), sort_keys=True), role=task.role, method=task.method,
        label=task.label, solver=task.solver, options=json.dumps(dict(task.options), sort_keys=True),
        time_limit=task.time_limit, check="none", message="", certified=False, version=task.version, key=task.key,
    )
    for k in ("jobs", "servers", "slots"):
        row[k] = spec.setting.get(k)
    return row


def error_row(task: Task, message: str, wall_s: float | None = None) -> dict[str, Any]:
    row = base_row(task)
    row.update(status="error", message=message, wall_s=wall_s)
    return row


class TaskTimeout(Exception):
    """The harness's backstop: a task ran far past its time limit."""


@contextlib.contextmanager
def _backstop(seconds: float) -> Iterator[None]:
    """Raise :class:`TaskTimeout` after ``seconds`` (main thread of a process only: a local
    worker; Dask's threads run without it)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def fire(signum, frame):
        raise TaskTimeout(f"the task ran {seconds:g} s, far past its time limit; stopped by the harness")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def make_instance(task: Task, family, catalog):
    """The instance of ``task``: generated, read or imported, as the suite says."""
    from ..io import from_document, load_instance
    from ..problems import GenerateSpec

    spec = task.instance
    p = spec.params
    if spec.kind == "generate":
        options = family.parse_generate_options(p["options"], "instances.generate.set")
        doc = family.generate(GenerateSpec(jobs=p["jobs"], servers=p["servers"], seed=p["seed"], slots=p["slots"],
                                           options=options), catalog)
        return from_document(doc, catalog=catalog)
    if spec.kind == "file":
        return load_instance(p["path"], catalog=catalog)
    if spec.kind == "import":
        try:
            from ..traces import import_instance
        except ImportError:
            raise RuntimeError("import not available: this installation has no trace importers") from None
        from pathlib import Path

        from ..io.shared_data import use_data

        with use_data(p["data"]):  # the files a family reads itself (e.g. Pollux's placements) come from the same folder
            doc, _notes = import_instance(p["source"], family, Path(p["data"]), p["jobs"], p["servers"], p["slots"],
                                          p["seed"], p["set"], catalog)
        return from_document(doc, catalog=catalog)
    raise ValueError(f"unknown instance kind {spec.kind!r}")


def _message(exc: BaseException) -> str:
    from ..errors import UserError

    if isinstance(exc, UserError):
        return exc.message()
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _finite(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _hook(spec: str) -> Callable[..., Any]:
    from importlib import import_module

    module, _, name = spec.partition(":")
    return getattr(import_module(module), name)


_OWN_LOCKS_PID: int | None = None


def _own_process_locks() -> None:
    """Give this worker process its own Pyomo output-capture lock.

    Pyomo guards ``capture_output`` with a ``multiprocessing.Lock`` made when it is imported.
    Workers forked from a server that imported Pyomo (our fork server, Dask's) would all share
    that one semaphore: a worker killed while holding it (a crash in native code, or a broken
    pool terminating the other workers) would leave every later solve of the sweep waiting 200 s
    for it, then failing.  The main process keeps its lock (threads share it on purpose)."""
    global _OWN_LOCKS_PID
    import multiprocessing
    import os

    if os.getpid() == _OWN_LOCKS_PID:
        return
    _OWN_LOCKS_PID = os.getpid()
    if multiprocessing.parent_process() is None:
        return
    from pyomo.common import dependencies

    if hasattr(dependencies, "capture_output_lock"):
        dependencies.capture_output_lock = multiprocessing.Lock()


def run_task(task: Task) -> dict[str, Any]:
    """Run one task; always returns its row (status ``error`` and the message when anything
    raised; the traceback under the private key ``_traceback``, which no file column holds)."""
    _own_process_locks()
    start = time.perf_counter()
    row = base_row(task)
    try:
        with _backstop(task.backstop()):
            _run(task, row)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 -- any failure is a row, never a dead sweep
        row.update(status="error", message=_message(exc), check="none", objective=None, bound=None)
        row["_traceback"] = traceback.format_exc()
        if row.get("wall_s") is None:
            row["wall_s"] = time.perf_counter() - start
    return row


def _run(task: Task, row: dict[str, Any]) -> None:
    with _limits(task.limits):  # the parent's --limit, in a worker process too
        _solve(task, row)


@contextlib.contextmanager
def _limits(wanted: tuple[str, ...]) -> Iterator[None]:
    from ..io.files import limits, set_limits

    if not wanted or tuple(f"{k}={v}" for k, v in sorted(limits().items())) == wanted:
        yield  # already in force (the parent process itself, or a worker that inherited them)
        return
    set_limits(wanted)
    try:
        yield
    finally:
        set_limits(())


def _solve(task: Task, row: dict[str, Any]) -> None:
    """One task through the library's pipeline (:func:`mlsched_opt.pipeline.solve`, as ``mlsched solve``
    runs it, without the per-answer bound: the suite's reference rows are the bounds), into its row."""
    from ..io import load_catalog
    from ..pipeline import solve as run_pipeline
    from ..problems import get_family
    from ..problems.base import timings
    from ..solvers import SolveOptions

    family = get_family(task.problem)
    catalog = load_catalog(task.catalog)
    inst = make_instance(task, family, catalog)
    row.update(jobs=len(inst.jobs), servers=len(inst.servers), slots=inst.slots, instance_sha256=inst.sha256)
    opts = family.resolve_options(inst, {**task.problem_options, **task.options}, source="suite options")
    row["sense"] = family.sense(opts)
    if task.method == "lp":
        solve = SolveOptions(solver=task.solver, time_limit=task.time_limit, gap=task.gap, threads=1, seed=task.seed,
                             certify=task.certify)
        rep = family.lp_bound(inst, opts, solve)
        value = rep.objective if rep.objective is not None else rep.bound
        row.update(status=rep.status, objective=_finite(value), bound=_finite(value), wall_s=rep.wall_s,
                   message=rep.message, solver_version=rep.solver_version, check="none")
        return
    run = run_pipeline(inst, task.method, problem=family.name, solver=task.solver, time_limit=task.time_limit, gap=task.gap,
                       threads=1, seed=task.seed, certify=task.certify, bound=False, options=opts, options_source="suite options")
    sol, rep, check = run.solution, run.report, run.check
    row.update(status=rep.status, objective=_finite(rep.objective), bound=_finite(rep.bound), wall_s=rep.wall_s,
               message=rep.message, certified_by=", ".join(rep.certified_by), solver_version=rep.solver_version)
    if check is None:
        row["check"] = "none"
        return
    row["violations"] = len(check.violations)
    if check.feasible:
        row["check"] = "ok"
    else:
        row["check"] = "failed"
        shown = "; ".join(map(str, check.violations[:3]))
        more = f" (and {len(check.violations) - 3} more)" if len(check.violations) > 3 else ""
        row["message"] = "; ".join(filter(None, [rep.message, f"checker: {shown}{more}"]))
    extra: dict[str, Any] = {}
    ms = dict(rep.decision_ms or {}) or timings(rep.message)  # an online method's decision time per arriving job (ms)
    if ms:
        extra["decision_ms"] = ms
    for hook in task.extras:
        extra.update(_hook(hook)(inst, sol, opts) or {})
    if extra:
        row["extra"] = json.dumps(extra, sort_keys=True, default=str)
