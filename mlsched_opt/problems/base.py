"""What a problem family provides to the toolkit, and the shared way of running a method.

A family is one subpackage under :mod:`mlsched_opt.problems` that builds a :class:`Family`
and registers it.  The CLI, the comparison harness and the checker only talk to families
through this interface.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np

from ..checking.core import CheckResult, run_check
from ..errors import InstanceError, OptionError
from ..io.instance import Instance, check_model_size
from ..io.schema import MAX_NUMBER
from ..io.solution import Solution
from ..report import SolveOptions, SolveReport
from ..tolerances import SAME_VALUE_TOL
from .anytime import anytime_exact
from .result import Decision, MethodResult, beyond_its_bound

if TYPE_CHECKING:  # Pyomo and the solvers load when a model is built or solved, not with the registry
    import pyomo.environ as pyo

#: the solvers that take a start (an incumbent or hints) from a family's heuristic answer
STARTED_SOLVERS = ("highs", "cpsat")
#: share of the exact solve's time limit its start may take
START_SHARE = 0.1


class Lazy:
    """A function named ``"package.module:attribute"``, imported when first called.

    A family's record names its methods, model and bound this way, so that the registry, ``mlsched
    --help`` and a heuristic that needs no solver import neither Pyomo nor the solvers: each module
    loads when its function first runs."""

    __slots__ = ("_fn", "target")

    def __init__(self, target: str) -> None:
        self.target = target
        self._fn: Callable[..., Any] | None = None

    def load(self) -> Callable[..., Any]:
        if self._fn is None:
            module, _, attr = self.target.partition(":")
            self._fn = getattr(importlib.import_module(module), attr)
        return self._fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Lazy({self.target!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Lazy, (self.target,))


def resolve(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The function itself behind a :class:`Lazy` reference (imported now), or ``fn`` unchanged."""
    return fn.load() if isinstance(fn, Lazy) else fn


def lazy(package: str) -> Callable[[str], Lazy]:
    """``L = lazy(__name__)`` in a family's ``__init__``; then ``L("methods:ffd")`` names
    ``<package>.methods.ffd`` without importing it."""
    return lambda target: Lazy(f"{package}.{target}")


@dataclass(frozen=True)
class Option:
    """A problem option (``--set NAME=VALUE`` on the command line).

    Every value has a declared domain: ``choices``, or for numbers ``minimum``/``maximum``
    (inclusive) and always finite (NaN, infinities and integers beyond 2**53 are refused, so no
    loop is ever driven by a hostile number).  ``problem=True`` marks an option that defines the
    problem itself (what the checker accepts, or the objective) rather than how a method solves
    it: the checker takes those from the instance and the command line, never from a solution.
    """

    name: str
    default: Any
    choices: tuple[Any, ...] | None = None
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    problem: bool = False
    flag: str | None = None

    def parse(self, raw: Any, source: str) -> Any:
        value = raw
        if isinstance(raw, str) and isinstance(self.default, bool):
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise OptionError(f"{self.name} must be true or false, got {raw!r}", field=source)
            return raw.lower() in ("true", "1", "yes")
        if isinstance(raw, str) and not isinstance(self.default, str):
            try:
                value = type(self.default)(raw.strip())
            except (ValueError, OverflowError):
                raise OptionError(f"{self.name} must be a {type(self.default).__name__}, got {raw!r}", field=source) from None
        if isinstance(self.default, str) and not isinstance(value, str):
            raise OptionError(f"{self.name} must be a string, got {value!r}", field=source)
        if isinstance(self.default, bool) and not isinstance(value, bool):
            raise OptionError(f"{self.name} must be true or false, got {value!r}", field=source)
        if isinstance(self.default, (int, float)) and not isinstance(self.default, bool):
            value = self._number(value, source)
        if self.choices is not None and value not in self.choices:
            raise OptionError(f"{self.name} must be one of {', '.join(map(str, self.choices))}, got {raw!r}", field=source)
        return value

    def _number(self, value: Any, source: str) -> Any:
        kind = type(self.default).__name__
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise OptionError(f"{self.name} must be a {kind}, got {value!r}", field=source)
        if isinstance(self.default, int) and isinstance(value, float):
            if not value.is_integer():
                raise OptionError(f"{self.name} must be an integer, got {value!r}", field=source)
            value = int(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise OptionError(f"{self.name} must be a finite number, got {value!r}", field=source)
        if abs(value) > MAX_NUMBER:
            raise OptionError(f"{self.name} is out of range (|value| <= {MAX_NUMBER:.0e}), got {value!r}", field=source)
        if self.minimum is not None and value < self.minimum:
            raise OptionError(f"{self.name} must be >= {self.minimum:g}, got {value!r}", field=source)
        if self.maximum is not None and value > self.maximum:
            raise OptionError(f"{self.name} must be <= {self.maximum:g}, got {value!r}", field=source)
        return float(value) if isinstance(self.default, float) else value

    def describe(self) -> str:
        """The domain as ``mlsched info`` shows it."""
        if self.choices:
            return "|".join(map(str, self.choices))
        kind = type(self.default).__name__
        lo = "" if self.minimum is None else f"{self.minimum:g} <= "
        hi = "" if self.maximum is None else f" <= {self.maximum:g}"
        return f"{lo}{kind}{hi}"


class MethodKind(StrEnum):
    """What a method is, which decides what it may claim and where it runs.

    A :class:`~enum.StrEnum`: a kind equals, formats and serializes as its value (``"exact"``), so
    comparisons with strings and JSON output read as before.
    """

    #: a solver on the exact formulation, with a proof (optimal, infeasible)
    EXACT = "exact"
    #: exact by exhaustive enumeration, for tiny instances; not run by default in comparisons
    ORACLE = "oracle"
    #: an offline algorithm: a feasible decision, nothing proven about the optimum
    HEURISTIC = "heuristic"
    #: an online algorithm: decides as jobs arrive, without knowing later arrivals
    ONLINE = "online"
    #: a method the literature compares against (offline or online); no guarantee
    BASELINE = "baseline"


@dataclass(frozen=True)
class Method:
    """A way to solve the problem, of a :class:`MethodKind`: ``exact`` (a solver with a proof),
    ``oracle`` (exact by exhaustive enumeration, for tiny instances; not run by default in
    comparisons) or an algorithm (``heuristic``, ``online``, ``baseline``).

    ``run(instance, problem_options, solve_options)`` returns a :class:`MethodResult`.
    ``guarantee`` states what is proven about the answer (empty for exact methods); ``requires``
    names an optional module (an extra) the method needs.
    """

    name: str
    kind: MethodKind
    run: Callable[[Instance, Mapping[str, Any], SolveOptions], MethodResult]
    summary: str
    guarantee: str = ""
    requires: str = ""

    @property
    def available(self) -> bool:
        """Whether the optional module this method needs (``requires``, e.g. ``torch``) is installed."""
        return not self.requires or importlib.util.find_spec(self.requires) is not None


@dataclass(frozen=True)
class GenerateSpec:
    """What ``mlsched generate`` asks for; ``options`` are the family's generator options, parsed."""

    jobs: int
    servers: int
    seed: int
    slots: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class TrainSpec:
    """What ``mlsched train`` asks for; ``options`` raw (the family parses them);
    ``progress(episode, message)`` is called after every episode."""

    episodes: int
    seed: int
    output: str
    options: Mapping[str, Any] = field(default_factory=dict)
    progress: Callable[[int, str], None] | None = None


@dataclass(frozen=True)
class TraceImport:
    """How a family takes real traces (``mlsched import``): the sources it reads, its own
    ``--set`` options, and ``build(trace, spec, catalog) -> instance document``."""

    sources: tuple[str, ...]
    build: Callable[..., dict[str, Any]]
    options: tuple[Option, ...] = ()


@dataclass(frozen=True)
class Family:
    """One problem family.

    Attributes
    ----------
    build_model
        ``(instance, options) -> pyo.ConcreteModel``: the declarative exact formulation (for
        ``--method exact``, the LP bound and ``mlsched export``).
    decision_from_model
        ``(instance, options, solved_model) -> decision``.
    check
        ``(instance, decision, options, result)``: adds violations and sets ``result.objective``;
        must not use the family's own formulations or algorithms.
    sense
        ``options -> "min" | "max"``.
    generate
        ``(GenerateSpec, catalog) -> instance document``.
    diagnose
        ``(instance, options) -> reason | None``: an obvious reason for infeasibility, if any.
    generate_options
        Options of the generator (``mlsched generate --set NAME=VALUE``).
    relaxation
        Optional ``(instance, options, solve_options) -> SolveReport``: the exact formulation's
        LP relaxation computed directly (same value as relaxing the Pyomo model, for models too
        large to build quickly).
    bounded
        Whether :meth:`Family.lp_bound` bounds the family's objective: the ``relaxation`` when one is
        given, else the LP relaxation of ``build_model`` (``False`` when that model is a surrogate
        and no relaxation is given: comparisons then add no bound row).
    bound_label
        How comparisons and benchmarks name the bound's row (``lp-relaxation (bound)`` unless the
        family's bound is not an LP relaxation).
    train
        Optional ``(TrainSpec) -> path``: trains a learned method's model (``mlsched train``),
        whose options (``--set``) are ``train_options``.
    rescore
        Optional ``(instance, options, decision) -> objective``: the value of the decision read
        from a solved model, for formulations whose objective variables may lag the schedule in an
        unproven incumbent (a completion indicator later than the work); a better value replaces
        the report's objective and the message says so.
    trace
        Optional :class:`TraceImport`: the real traces the family imports (``mlsched import``).
    model_cells
        Optional ``instance -> cells``: how the exact model grows, for the ``cells`` limit
        (default ``servers x jobs x slots``, a variable per job, server and slot).
    start
        Optional ``(instance, options, model, seconds) -> note``: sets ``model._start`` to
        (variable, value) pairs of a heuristic answer (a partial one is completed by the solver)
        within ``seconds``, for the exact solve's start (HiGHS ``setSolution``, CP-SAT hints).
    quick
        The family's quickest algorithm: ``--method exact`` answers with it first and keeps the
        better checked answer (:mod:`.anytime`), so an exact solve is anytime at every size.
    contract
        A :class:`mlsched_opt.testing.Contract`, or a function returning one (so that importing the family
        imports none of the checks): the family's data for the contract checks every family answers to
        (:func:`mlsched_opt.testing.family_checks`): its toy, tiny cases, oracle, exceptions.
    """

    name: str
    summary: str
    build_model: Callable[[Instance, Mapping[str, Any]], pyo.ConcreteModel]
    decision_from_model: Callable[[Instance, Mapping[str, Any], pyo.ConcreteModel], Decision]
    check: Callable[[Instance, Decision, Mapping[str, Any], CheckResult], None]
    sense: Callable[[Mapping[str, Any]], str]
    generate: Callable[..., dict[str, Any]]
    algorithms: tuple[Method, ...] = ()
    options: tuple[Option, ...] = ()
    diagnose: Callable[[Instance, Mapping[str, Any]], str | None] | None = None
    generate_options: tuple[Option, ...] = ()
    relaxation: Callable[[Instance, Mapping[str, Any], SolveOptions], SolveReport] | None = None
    rescore: Callable[[Instance, Mapping[str, Any], Decision], float] | None = None
    bounded: bool = True
    bound_label: str = "lp-relaxation (bound)"
    train: Callable[..., Any] | None = None
    train_options: tuple[Option, ...] = ()
    trace: TraceImport | None = None
    start: Callable[[Instance, Mapping[str, Any], pyo.ConcreteModel, float], str] | None = None
    model_cells: Callable[[Instance], int] | None = None
    quick: str | None = None
    contract: Any = None
    methods: dict[str, Method] = field(init=False)

    def __post_init__(self) -> None:
        # a family whose exact method is not its Pyomo model (exhaustive search) lists its own "exact"
        exact = Method("exact", MethodKind.EXACT, self._run_exact, "the exact formulation, solved to proven optimality (--solver, --gap)")
        methods = {m.name: m for m in (exact, *self.algorithms)}
        if self.quick is not None and methods["exact"].kind == MethodKind.EXACT:
            if self.quick not in methods or methods[self.quick].kind in (MethodKind.EXACT, MethodKind.ORACLE):
                raise ValueError(f"family {self.name}: quick start {self.quick!r} must be one of its algorithms")
            methods["exact"] = dataclasses.replace(methods["exact"], run=anytime_exact(self, methods["exact"].run))
        object.__setattr__(self, "methods", methods)

    def method(self, name: str) -> Method:
        if name not in self.methods:
            raise OptionError(f"unknown method {name!r} for problem {self.name}; choose from {', '.join(self.methods)}", field="--method")
        return self.methods[name]

    def parse_options(self, raw: Mapping[str, Any], source: str = "--set") -> dict[str, Any]:
        return parse_values(self.options, raw, source, f"problem {self.name}")

    def resolve_options(self, instance: Instance, raw: Mapping[str, Any] | None = None, source: str = "--set") -> dict[str, Any]:
        """The problem options of a run: the instance's ``options`` (when the instance is of this
        family), overridden by ``raw`` (the command line), then parsed with their domains.

        Returns :class:`ProblemOptions`; given those of this family and instance back, it returns
        them as they are (parsing again would give the same values), so a solve parses once
        although the method run and the checker both resolve what they are handed."""
        if isinstance(raw, ProblemOptions) and raw.family == self.name and raw.instance_sha256 == instance.sha256:
            return raw
        merged: dict[str, Any] = {}
        if instance.options and instance.default_problem in (None, self.name):
            known = {o.name: o for o in self.options}
            for key, value in instance.options.items():
                where = f"options.{key}"
                if key not in known:
                    raise InstanceError(f"unknown option for problem {self.name} (options: {', '.join(known) or 'none'})",
                                        instance.file, where)
                try:
                    known[key].parse(value, where)
                except OptionError as exc:
                    raise InstanceError(exc.reason, instance.file, where) from None
                merged[key] = value
        merged.update(raw or {})
        return ProblemOptions(self.parse_options(merged, source), self.name, instance.sha256)

    def problem_option_mismatches(self, stated: Mapping[str, Any], options: Mapping[str, Any]) -> list[str]:
        """Problem-defining options whose value in ``stated`` (e.g. a solution file) differs from ``options``."""
        out = []
        for opt in self.options:
            if not opt.problem or opt.name not in stated:
                continue
            try:
                same = opt.parse(stated[opt.name], "problem_options") == options[opt.name]
            except (OptionError, TypeError, ValueError):
                same = False
            if not same:
                out.append(f"{opt.name}={stated[opt.name]!r} (the problem has {opt.name}={options[opt.name]!r})")
        return out

    def parse_generate_options(self, raw: Mapping[str, Any], source: str = "--set") -> dict[str, Any]:
        return parse_values(self.generate_options, raw, source, f"the {self.name} generator")

    def _run_exact(self, instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
        from ..solvers import solve
        from ..solvers.certify import certify

        start = time.perf_counter()
        deadline = start + solve_options.time_limit
        self.check_model_size(instance, "the exact model")
        model = self.build_model(instance, options)
        start_note = ""
        if self.start is not None and solve_options.solver in STARTED_SOLVERS:
            # a heuristic answer as the solver's start: an incumbent from the first second, so a
            # solve cut short by the limit still returns an answer at least as good as the heuristic
            start_note = self.start(instance, options, model, START_SHARE * solve_options.time_limit)
        build_s = time.perf_counter() - start
        # the solver gets what is left of the time limit, so that building counts against it too
        left = max(deadline - time.perf_counter(), 0.01)
        report = solve(model, dataclasses.replace(solve_options, time_limit=left), build_s=build_s)
        report = dataclasses.replace(report, options=solve_options.to_dict())
        if start_note:
            report.message = "; ".join(filter(None, [start_note, report.message]))
        decision = self.decision_from_model(instance, options, model) if report.has_solution else None
        if decision is not None and self.rescore is not None and report.objective is not None:
            value = self.rescore(instance, options, decision)
            improved = (value < report.objective - SAME_VALUE_TOL if report.sense == "min"
                        else value > report.objective + SAME_VALUE_TOL)
            if improved:
                note = f"the incumbent's schedule is worth {value:g}, better than its objective variables say ({report.objective:g})"
                report = dataclasses.replace(report, objective=value, message="; ".join(filter(None, [report.message, note])))
        # what a solver says of its own incumbent and bound is a claim too: never past each other
        report = beyond_its_bound(report, solve_options.gap)
        if solve_options.certify and report.status in ("optimal", "infeasible"):
            solved_s = time.perf_counter()
            report, decision = certify(model, report, decision, solve_options, deadline,
                                       extract=lambda m: self.decision_from_model(instance, options, m),
                                       evaluate=lambda d: self._evaluate(instance, options, d))
            report = dataclasses.replace(report, solve_s=report.solve_s + (time.perf_counter() - solved_s))
        if report.status == "infeasible" and self.diagnose is not None:
            reason = self.diagnose(instance, options)
            if reason:
                report.message = "; ".join(filter(None, [report.message, reason]))
        return MethodResult(report, decision)

    def check_model_size(self, instance: Instance, what: str) -> None:
        """Refuse to build ``what`` (the exact model, its relaxation, an export) beyond the ``cells``
        limit, sized by the family's ``model_cells`` when it states one."""
        check_model_size(instance, what, None if self.model_cells is None else self.model_cells(instance))

    def _evaluate(self, instance: Instance, options: Mapping[str, Any], decision: Decision) -> tuple[float | None, str]:
        """The checker's verdict on a decision: its objective, or why it is rejected."""
        result = CheckResult()
        run_check(self.check, instance, decision, options, result, self.name)
        if not result.feasible:
            return None, "; ".join(map(str, result.violations[:3]))
        return result.objective, ""

    def lp_bound(self, instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
        """A proven bound on the optimum, not a decision: the family's ``relaxation`` when it has one,
        else the LP relaxation of the exact formulation."""
        if self.relaxation is not None:
            return self.relaxation(instance, options, solve_options)
        from ..solvers import relaxation

        start = time.perf_counter()
        self.check_model_size(instance, "the LP relaxation")
        model = self.build_model(instance, options)
        build_s = time.perf_counter() - start
        report = relaxation(model, solve_options)
        report.build_s += build_s
        return report

    def run(self, instance: Instance, method: str, solve_options: SolveOptions,
            options: Mapping[str, Any] | None = None) -> Solution:
        """Run ``method`` and wrap its answer as a :class:`Solution` (options already parsed or raw; the
        instance's own ``options`` table fills in what they leave out)."""
        opts = self.resolve_options(instance, options or {})
        result = self.method(method).run(instance, opts, solve_options)
        return Solution.for_instance(instance, self.name, method, result.report, result.decision, opts)


class ProblemOptions(dict[str, Any]):
    """A family's problem options resolved for one instance (:meth:`Family.resolve_options`),
    read-only so that what was parsed stays what is used."""

    def __init__(self, values: Mapping[str, Any], family: str, instance_sha256: str):
        super().__init__(values)
        self.family = family
        self.instance_sha256 = instance_sha256

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("resolved problem options are read-only; copy them with dict(options)")

    __setitem__ = __delitem__ = __ior__ = update = pop = popitem = setdefault = clear = _read_only  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled for process executors: rebuilt through __init__, never item by item
        return (ProblemOptions, (dict(self), self.family, self.instance_sha256))


def parse_values(options: tuple[Option, ...], raw: Mapping[str, Any], source: str, owner: str) -> dict[str, Any]:
    """Every option's value: ``raw``'s where given (parsed with its domain), else its default;
    an unknown key is an :class:`OptionError` naming ``owner`` and the known options."""
    known = {o.name: o for o in options}
    for key in raw:
        if key not in known:
            allowed = ", ".join(known) or "none"
            raise OptionError(f"unknown option {key!r} for {owner} (options: {allowed})", field=source)
    return {name: opt.parse(raw.get(name, opt.default), source) for name, opt in known.items()}


# p50 is optional: messages written before it was reported have mean, p95 and max only
_TIMING = re.compile(r"([0-9.]+) ms per arriving job \((?:p50 ([0-9.]+), )?p95 ([0-9.]+), max ([0-9.]+)\)")


def decision_stats(decision_s: Sequence[float]) -> dict[str, float]:
    """An online method's decision time per arriving job, in milliseconds: ``mean``, ``p50``, ``p95``, ``max``
    (the report's ``decision_ms``; wall-clock figures never enter the decision, so that it depends only
    on the instance, the options and the seed)."""
    ms = 1000 * np.asarray(decision_s if len(decision_s) else [0.0], dtype=float)
    p50, p95 = np.percentile(ms, [50, 95])
    return {"mean": round(float(ms.mean()), 4), "p50": round(float(p50), 4), "p95": round(float(p95), 4),
            "max": round(float(ms.max()), 4)}


def timing_phrase(decision_s: Sequence[float]) -> str:
    """The same figures in words, for the report's message."""
    stats = decision_stats(decision_s)
    return f"{stats['mean']:.2f} ms per arriving job (p50 {stats['p50']:.2f}, p95 {stats['p95']:.2f}, max {stats['max']:.2f})"


def timings(message: str | None) -> dict[str, float]:
    """The per-job decision times that :func:`timing_phrase` wrote in a message (a report of a solution
    file written before reports had ``decision_ms``)."""
    hit = _TIMING.search(message or "")
    if hit is None:
        return {}
    return {k: float(v) for k, v in zip(("mean", "p50", "p95", "max"), hit.groups()) if v is not None}


def heuristic_report(sense: str, objective: float | None, elapsed_s: float, name: str,
                     options: Mapping[str, Any], message: str = "", decision_s: Sequence[float] | None = None) -> SolveReport:
    """The report of an algorithm run: no bound (an algorithm proves nothing about the optimum); an
    online method passes its per-job decision times (``decision_s``, seconds)."""
    return SolveReport(
        status="feasible" if objective is not None else "failed",
        objective=objective, bound=None, sense=sense, solver=name, solver_version="mlsched-opt",
        options=dict(options), solve_s=elapsed_s, message=message,
        decision_ms=None if decision_s is None else decision_stats(decision_s),
    )
