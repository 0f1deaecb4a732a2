"""The contract every problem family answers to, as a library (in the spirit of scikit-learn's
``estimator_checks``): what every answer of the toolkit must satisfy, whoever computed it.

A family declares its contract data on its record (:class:`Contract`: a shipped toy instance, tiny
generated cases, an exhaustive oracle for them, the options whose value is free text, and known
exceptions with their reasons); :func:`family_checks` turns it into checks, and one line runs them
all under pytest, for the shipped families or one of your own::

    from mlsched_opt.problems import REGISTRY
    from mlsched_opt.testing import parametrize_with_checks

    @parametrize_with_checks(REGISTRY.values())
    def test_contract(check):
        check()

The checks (each a callable raising ``AssertionError``, or ``unittest.SkipTest`` with the reason):

1. **generate**: the generator's tiny instances validate; the same seed writes a byte-identical
   file, another seed draws another instance;
2. **checker**: every available method answers every instance it applies to with a decision that
   passes the checker, a status its kind may claim, a full report, and the objective the checker
   recomputes;
3. **optimum**: exact is optimal (certified by an independent solver when it is a solver's answer)
   and within the family's bound in its sense; equal to the oracle's where the family has one;
   every answer's ratio to it is >= 1, and 1 for every claimed optimum;
4. **round trip**: the solution file reads back to the same document and verdict, plain JSON only;
5. **determinism**: the same seed gives a byte-identical decision (timings belong in the report);
6. **user errors**: an unknown option, an out-of-domain value, an unknown method is an
   :class:`~mlsched_opt.errors.OptionError` naming the field (``user-errors``); every option declares
   a domain and refuses what is outside it (``option-domains``); on the command line each is one
   line naming it and exit code 2, nothing written (``command-line``, for a registered family);
7. **problem options**: a solution that restates the problem (other problem-defining options) is
   reported by the checker.

A family without a contract gets each check as a skip saying so; a check whose instances are absent
(the toy of an installed wheel) skips with the reason.  The checks use the family they are given
(its checker, its methods), so a family of one's own need not be registered, except for
``command-line``, which goes through ``mlsched`` and so through the registry.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import tempfile
import unittest
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InstanceError, OptionError
from .report import STATUSES, SolveOptions, approximation_ratio

if TYPE_CHECKING:
    from .io.instance import Instance
    from .io.solution import Solution
    from .problems.base import Family, Option

#: how every check solves: one thread (repeatable), a seed, an exact gap
SOLVE = SolveOptions(seed=11, time_limit=20, gap=0.0)
#: what each kind of method may claim on a feasible instance: an algorithm proves nothing
STATUS_OF_KIND = {"exact": {"optimal"}, "oracle": {"optimal", "feasible"}}
ALGORITHM_STATUS = {"feasible"}
REPORT_FIELDS = ("status", "objective", "bound", "gap", "wall_s", "solver")
TIMINGS = ("wall_s", "build_s", "solve_s")
REL = 1e-6
#: the repository's shipped instances (a toy named relative to it is looked for here)
INSTANCES = Path(__file__).resolve().parents[1] / "instances"


@dataclass(frozen=True)
class Case:
    """Generated instances of one family: ``mlsched generate --jobs J --servers S [--slots T] --seed s
    --set <generate>`` for each seed, solved with the problem options ``options``.  ``exact``: the
    exact method and the oracles apply (small enough, and of the kind they take)."""

    jobs: int
    servers: int
    slots: int | None = None
    generate: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = (1, 2)
    exact: bool = True


@dataclass(frozen=True)
class Contract:
    """What a family brings to its contract checks (``Family(contract=...)``: a contract, or a function
    returning one, such as an ``L("module:function")`` reference, so that importing the family imports
    nothing of the checks).

    Attributes
    ----------
    toy
        A small instance file every method answers: a name in the repository's ``instances/`` folder
        or a path (skipped, with the reason, where the file is absent, as in an installed wheel).
    tiny
        Tiny generated instances, small enough for the exact method and exhaustive oracles.
    oracle
        Optional ``(instance, options) -> optimum or None`` (``None``: nothing feasible), written without
        the family's formulation (an enumeration of what the checker accepts): the exact method must
        reach it on every tiny case it applies to.
    free_text
        Options whose value is free text (a file path, a list of names): the only ones without a domain.
    skip
        Known exceptions: check name -> why it does not apply to this family (a family check, or a per-method
        check for every method; the names are the keys of :data:`FAMILY_CHECKS` and :data:`METHOD_CHECKS`).
    """

    toy: str | None = None
    tiny: tuple[Case, ...] = ()
    oracle: Callable[[Instance, Mapping[str, Any]], float | None] | None = None
    free_text: tuple[str, ...] = ()
    skip: Mapping[str, str] = field(default_factory=dict)

    def toy_path(self) -> Path | None:
        if self.toy is None:
            return None
        path = Path(self.toy)
        if not path.is_absolute() and not path.exists():
            path = INSTANCES / self.toy
        return path if path.is_file() else None


@dataclass(frozen=True)
class Subject:
    label: str
    instance: Instance
    options: Mapping[str, Any]
    exact: bool


def contract_of(family: Family) -> Contract | None:
    """The family's contract (calling ``family.contract`` when it is a function returning one)."""
    declared = family.contract
    if declared is None or isinstance(declared, Contract):
        return declared
    made = declared() if callable(declared) else declared
    if not isinstance(made, Contract):
        raise TypeError(f"family {family.name}: contract is {type(made).__name__}, not a mlsched_opt.testing.Contract")
    return made


class _Checked:
    """One family's instances and answers, computed once and shared by its checks."""

    def __init__(self, family: Family) -> None:
        self.family = family
        contract = contract_of(family)
        if contract is None:
            raise unittest.SkipTest(f"family {family.name} declares no contract: give its record "
                                    "contract=mlsched_opt.testing.Contract(toy=..., tiny=...) to check it")
        unknown = set(contract.skip) - {*FAMILY_CHECKS, *METHOD_CHECKS}
        if unknown:  # a misspelt exception would silently skip nothing
            raise ValueError(f"family {family.name}: contract skips {sorted(unknown)}, not checks "
                             f"(checks: {', '.join([*FAMILY_CHECKS, *METHOD_CHECKS])})")
        self.contract: Contract = contract

    @functools.cached_property
    def catalog(self):
        from .io import load_catalog

        return load_catalog()

    def generated(self, case: Case, seed: int) -> dict[str, Any]:
        from .problems.base import GenerateSpec

        spec = GenerateSpec(jobs=case.jobs, servers=case.servers, seed=seed, slots=case.slots,
                            options=self.family.parse_generate_options(case.generate))
        return self.family.generate(spec, self.catalog)

    @functools.cached_property
    def subjects(self) -> tuple[Subject, ...]:
        from .io import from_document, load_instance

        out = []
        toy = self.contract.toy_path()
        if toy is not None:
            out.append(Subject("toy", load_instance(toy), {}, True))
        for case in self.contract.tiny:
            for seed in case.seeds:
                sets = "".join(f",{k}={v}" for k, v in {**case.generate, **case.options}.items())
                label = f"j{case.jobs}-s{case.servers}-t{case.slots}-seed{seed}{sets}"
                out.append(Subject(label, from_document(self.generated(case, seed), catalog=self.catalog), dict(case.options),
                                   case.exact))
        assert len({s.label for s in out}) == len(out), f"{self.family.name}: two contract instances with one label"
        return tuple(out)

    def instances(self) -> tuple[Subject, ...]:
        """The contract's instances, or a skip saying why there are none (a check with none proves nothing)."""
        if not self.subjects:
            missing = f"its toy {self.contract.toy} is absent and " if self.contract.toy else ""
            raise unittest.SkipTest(f"{self.family.name}: {missing}its contract has no tiny cases: no instance to check")
        return self.subjects

    def cases(self, method: str) -> list[Subject]:
        """The instances ``method`` answers (a method whose extra is absent: skipped, with the reason)."""
        m = self.family.method(method)
        if not m.available:
            raise unittest.SkipTest(f"{self.family.name}/{method} needs {m.requires}, not installed")
        return [s for s in self.instances() if s.exact or m.kind not in ("exact", "oracle")]

    @functools.cache  # noqa: B019 -- one cache per family object, which lives as long as the registry
    def answer(self, label: str, method: str) -> Solution:
        subject = next(s for s in self.subjects if s.label == label)
        return self.family.run(subject.instance, method, SOLVE, subject.options)

    def sense(self, subject: Subject) -> str:
        return self.family.sense(self.family.resolve_options(subject.instance, subject.options))

    def check(self, subject: Subject, sol: Solution):
        """The checker of the family under test (not the registry's: it may be one of one's own)."""
        from .checking import check_for_family

        return check_for_family(self.family, subject.instance, sol, subject.options)


#: id(family) -> its instances and answers; a Family holds a dict, so it cannot be a cache key itself
_CHECKED: dict[int, _Checked] = {}


def _checked(family: Family) -> _Checked:
    found = _CHECKED.get(id(family))
    if found is None or found.family is not family:
        found = _CHECKED[id(family)] = _Checked(family)
    return found


def assert_plain_json(value: Any, where: str = "") -> None:
    """Only JSON's own types (no numpy scalars, no tuples), and finite numbers."""
    if isinstance(value, dict):
        for k, v in value.items():
            assert type(k) is str, f"{where}: key {k!r} is not a string"
            assert_plain_json(v, f"{where}.{k}")
    elif isinstance(value, list):
        for n, v in enumerate(value):
            assert_plain_json(v, f"{where}[{n}]")
    else:
        assert value is None or type(value) in (str, int, float, bool), f"{where}: {type(value).__name__} is not plain JSON"
        assert not (type(value) is float and not math.isfinite(value)), f"{where}: {value} is not a finite number"


def _without_timings(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {**doc, "report": {k: v for k, v in doc["report"].items() if k not in TIMINGS}}


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL, abs_tol=REL)


# --- the checks ---------------------------------------------------------------------------------

def check_generate(family: Family) -> None:
    """The generator's tiny instances validate and follow their seed."""
    from .io import from_document, load_instance, write_document

    c = _checked(family)
    if not c.contract.tiny:
        raise unittest.SkipTest(f"{family.name}: its contract has no tiny cases to generate")
    with tempfile.TemporaryDirectory() as tmp:
        for n, case in enumerate(c.contract.tiny):
            for seed in case.seeds:
                doc = c.generated(case, seed)
                assert doc.get("problem") == family.name, f"{family.name}: generated problem {doc.get('problem')!r}"
                files = [Path(tmp) / f"{n}-{seed}-{k}.toml" for k in range(2)]
                for path in files:
                    write_document(c.generated(case, seed), path)
                assert files[0].read_bytes() == files[1].read_bytes(), f"{family.name} seed {seed}: same seed, different file"
                inst = load_instance(files[0], c.catalog)
                assert inst.sha256 == from_document(doc, catalog=c.catalog).sha256 and len(inst.jobs) == case.jobs
                other = c.generated(case, seed + 1000)
                drawn = {k: v for k, v in doc.items() if k not in ("name", "source", "description")}
                assert drawn != {k: v for k, v in other.items() if k not in ("name", "source", "description")}, \
                    f"{family.name}: seeds {seed} and {seed + 1000} draw the same instance"


def check_answers(family: Family, method: str) -> None:
    """Every answer passes the checker, with a full report and a status its kind may claim."""
    c = _checked(family)
    kind = family.method(method).kind
    allowed = STATUS_OF_KIND.get(kind, ALGORITHM_STATUS)
    for subject in c.cases(method):
        sol = c.answer(subject.label, method)
        where = f"{family.name}/{method} on {subject.label}"
        rep = sol.to_dict()["report"]
        assert all(key in rep for key in REPORT_FIELDS), (where, sorted(rep))
        assert rep["status"] in STATUSES and rep["status"] in allowed, (where, rep["status"], rep["message"])
        assert isinstance(rep["solver"], str) and rep["solver"], where
        assert isinstance(rep["wall_s"], (int, float)) and rep["wall_s"] >= 0, where
        assert isinstance(rep["objective"], (int, float)) and math.isfinite(rep["objective"]), where
        assert rep["gap"] is None or rep["gap"] >= 0, where
        if kind not in ("exact", "oracle"):
            assert rep["bound"] is None, f"{where}: an algorithm proves no bound"
        if rep["status"] == "optimal":
            assert rep["bound"] is not None and rep["gap"] <= REL, (where, rep["bound"], rep["gap"])
        assert sol.decision is not None, where
        check = c.check(subject, sol)
        assert check.feasible, (where, [str(v) for v in check.violations])
        assert check.objective is not None and _close(check.objective, rep["objective"]), (where, check.objective, rep["objective"])


def check_optimum(family: Family) -> None:
    """Exact is a certified optimum within the family's bound, and the oracle's where there is one."""
    c = _checked(family)
    exact = family.method("exact")
    for subject in [s for s in c.instances() if s.exact]:
        where = f"{family.name} on {subject.label}"
        rep = c.answer(subject.label, "exact").report
        assert rep.status == "optimal", (where, rep.status, rep.message)
        if exact.kind == "exact":  # a solver's word, confirmed by another; an oracle is its own proof
            assert rep.certified_by, f"{where}: optimal but not certified ({rep.message})"
        assert rep.objective is not None and rep.bound is not None, where
        best, maximize = rep.objective, c.sense(subject) == "max"
        slack = REL * max(1.0, abs(best))
        assert (rep.bound >= best - slack) if maximize else (rep.bound <= best + slack), where
        if c.contract.oracle is not None:
            opts = family.resolve_options(subject.instance, subject.options)
            found = c.contract.oracle(subject.instance, opts)
            assert found is not None and _close(found, best), f"{where}: exact {best}, the oracle {found}"
        if not family.bounded:  # the Pyomo model is a surrogate: its relaxation bounds nothing
            continue
        lp = family.lp_bound(subject.instance, family.resolve_options(subject.instance, subject.options), SOLVE)
        assert lp.status in ("optimal", "feasible") and lp.bound is not None, (where, lp.status)
        assert (lp.bound >= best - slack) if maximize else (lp.bound <= best + slack), \
            f"{where}: the bound {lp.bound} is on the wrong side of the optimum {best}"


def check_ratio(family: Family, method: str) -> None:
    """Every checked answer's ratio to the proven optimum is >= 1, and 1 for a claimed optimum."""
    c = _checked(family)
    for subject in [s for s in c.cases(method) if s.exact]:
        where = f"{family.name}/{method} on {subject.label}"
        best = c.answer(subject.label, "exact").report.objective
        assert best is not None, f"{where}: exact found no optimum"
        sol = c.answer(subject.label, method)
        check = c.check(subject, sol)
        assert check.feasible and check.objective is not None, (where, [str(v) for v in check.violations])
        ratio = approximation_ratio(check.objective, best, c.sense(subject))  # the checker's value, not the claim
        assert ratio >= 1 - REL, f"{where}: {check.objective} beats the proven optimum {best} (ratio {ratio})"
        if method == "exact" or sol.report.status == "optimal":
            assert _close(ratio, 1.0), f"{where}: claims an optimum of {check.objective}, the optimum is {best}"


def check_round_trip(family: Family, method: str) -> None:
    """The solution file reads back to the same document and verdict, in plain JSON only."""
    from .io.solution import read_solution

    c = _checked(family)
    with tempfile.TemporaryDirectory() as tmp:
        for subject in c.cases(method):
            where = f"{family.name}/{method} on {subject.label}"
            sol = c.answer(subject.label, method)
            assert_plain_json(sol.to_dict(), where)
            path = Path(tmp) / f"{subject.label}.json"
            sol.write(path)
            back = read_solution(path)
            assert _without_timings(back.to_dict()) == _without_timings(sol.to_dict()), where
            before, after = c.check(subject, sol), c.check(subject, back)
            assert (after.feasible, after.objective, [str(v) for v in after.violations]) == \
                   (before.feasible, before.objective, [str(v) for v in before.violations]), where


def check_determinism(family: Family, method: str) -> None:
    """The same seed gives a byte-identical decision, under each native MILP solver where one is used."""
    c = _checked(family)
    solvers = ("highs", "cpsat") if family.method(method).kind in ("exact", "oracle") else ("highs",)
    for subject in c.cases(method):
        for solver in solvers:
            where = f"{family.name}/{method} ({solver}) on {subject.label}"
            if solver == "highs":
                runs = [c.answer(subject.label, method), family.run(subject.instance, method, SOLVE, subject.options)]
            else:
                options = SolveOptions(seed=SOLVE.seed, time_limit=SOLVE.time_limit, gap=0.0, solver=solver, certify=False)
                runs = [family.run(subject.instance, method, options, subject.options) for _ in range(2)]
            texts = [json.dumps(s.decision, sort_keys=True, allow_nan=False) for s in runs]
            assert texts[0] == texts[1], f"{where}: same seed, different decision"
            assert (runs[0].report.status, runs[0].report.objective) == (runs[1].report.status, runs[1].report.objective), where


def check_user_errors(family: Family) -> None:
    """An unknown option, method or option of the generator is an OptionError naming its field."""
    from .io import from_document

    c = _checked(family)
    subject = c.instances()[0]
    for method in family.methods:
        try:
            family.run(subject.instance, method, SOLVE, {**subject.options, "no_such_option": "1"})
        except OptionError as exc:
            assert exc.field == "--set" and "no_such_option" in exc.reason, (method, exc.field, exc.reason)
        else:
            raise AssertionError(f"{family.name}/{method} accepted an unknown option")
    for attempt, field_, named in ((lambda: family.method("no-such-method"), "--method", ("no-such-method", *family.methods)),
                                   (lambda: family.run(subject.instance, "no-such-method", SOLVE), "--method", ("no-such-method",)),
                                   (lambda: family.parse_generate_options({"no_such_option": 1}), "--set", ("no_such_option",))):
        try:
            attempt()
        except OptionError as exc:  # what was refused, and what to choose from
            assert exc.field == field_ and all(name in exc.reason for name in named), (exc.field, field_, exc.reason, named)
        else:
            raise AssertionError(f"{family.name}: accepted what should be refused naming {field_}")
    if c.contract.tiny:  # an unknown option in the instance's own options table names its place in the file
        case = c.contract.tiny[0]
        inst = from_document({**c.generated(case, case.seeds[0]), "options": {"no_such_option": 1}}, catalog=c.catalog)
        try:
            family.run(inst, "exact", SOLVE)
        except InstanceError as exc:
            assert exc.field == "options.no_such_option", exc.field
        else:
            raise AssertionError(f"{family.name}: an unknown option in the file's options table was accepted")


def option_groups(family: Family) -> dict[str, tuple[tuple[Option, ...], Callable[[Mapping[str, Any]], dict[str, Any]]]]:
    """Each kind of option of a family: (its options, how the family parses a ``--set`` of them)."""
    from .problems.base import parse_values

    trace_options = family.trace.options if family.trace else ()
    return {
        "problem": (family.options, family.parse_options),
        "generate": (family.generate_options, family.parse_generate_options),
        "train": (family.train_options, lambda raw: parse_values(family.train_options, raw, "--set", f"{family.name} training")),
        "import": (trace_options, lambda raw: parse_values(trace_options, raw, "--set", f"importing into {family.name}")),
    }


def option_text(value: Any) -> str:
    """How a user writes ``value`` after ``--set NAME=``."""
    return str(value).lower() if isinstance(value, bool) else repr(value) if isinstance(value, float) else str(value)


def outside(opt: Option) -> list[Any]:
    """Values beyond the option's domain: as Python values and as command-line text."""
    if isinstance(opt.default, bool):
        return ["maybe", 2, "2"]
    if opt.choices is not None:
        return [f"no-such-{opt.name}", "", 0]
    if isinstance(opt.default, str):
        return []
    integer = isinstance(opt.default, int)
    lo, hi = opt.minimum, opt.maximum
    assert lo is not None and hi is not None
    values: list[Any] = [lo - 1, hi * 2 + 1]
    if lo > 0:
        values.append(0 if integer else 0.0)
        if not integer:
            values.append(lo / 2)
    values = [int(v) if integer else float(v) for v in values]
    values += [option_text(v) for v in values] + ["nan", "inf", "-inf", "", "abc"]
    if integer:
        values += [1.5, "1.5", str(2**70)]
    return values


def check_option_domains(family: Family) -> None:
    """Every option declares a domain (or is declared free text) and refuses what is outside, naming itself."""
    c = _checked(family)
    for group, (options, parse) in option_groups(family).items():
        for opt in options:
            where = f"{family.name} {group} option {opt.name}"
            if isinstance(opt.default, str) and opt.choices is None:
                assert opt.name in c.contract.free_text, f"{where}: a string without choices"
            elif isinstance(opt.default, (int, float)) and not isinstance(opt.default, bool) and opt.choices is None:
                assert opt.minimum is not None and opt.maximum is not None, f"{where}: no bounds"
                assert opt.minimum <= opt.default <= opt.maximum, where
            assert parse({})[opt.name] == opt.default and parse({opt.name: opt.default})[opt.name] == opt.default, where
            assert parse({opt.name: option_text(opt.default)})[opt.name] == opt.default, where
            for value in outside(opt):
                try:
                    parse({opt.name: value})
                except OptionError as exc:
                    assert exc.field == "--set" and opt.name in exc.reason, (where, value, exc.reason)
                else:
                    raise AssertionError(f"{where}: accepted {value!r}")


def check_problem_options(family: Family) -> None:
    """A solution that restates a problem-defining option is reported by the checker."""
    from .checking import check_for_family

    c = _checked(family)
    assert [o for o in family.options if o.problem], f"{family.name} declares no problem-defining option"
    forgeable = [o for o in family.options if o.problem and o.choices and len(o.choices) > 1]
    if not forgeable or not c.subjects:
        raise unittest.SkipTest("no problem option with alternatives to forge, or no instance")
    subject = c.subjects[0]
    method = next(name for name, m in family.methods.items() if m.kind not in ("exact", "oracle") and m.available)
    sol = family.run(subject.instance, method, SolveOptions(seed=1), subject.options)
    assert sol.decision is not None
    opt = forgeable[0]
    assert opt.choices is not None
    other = next(choice for choice in opt.choices if choice != family.parse_options(dict(subject.options))[opt.name])
    sol.problem_options = {**sol.problem_options, opt.name: other}
    result = check_for_family(family, subject.instance, sol, subject.options)
    assert any(v.rule == "problem-options" for v in result.violations), [str(v) for v in result.violations]


def _command(*args: Any) -> tuple[int, str]:
    """``mlsched ARGS`` in this process: (exit code, what it wrote to stderr)."""
    from .cli import main

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            return (exc.code if isinstance(exc.code, int) else 1), err.getvalue()
    return 0, err.getvalue()


def check_command_line(family: Family) -> None:
    """On the command line each user error of ``user-errors`` and ``option-domains`` is one line naming
    what was refused, exit code 2, no traceback, and nothing written."""
    from .io import write_document
    from .problems import REGISTRY

    if REGISTRY.get(family.name) is not family:
        raise unittest.SkipTest(f"{family.name}: not the registered family of that name (REGISTRY[{family.name!r}] = ...), "
                                "so mlsched cannot reach it")
    c = _checked(family)
    algorithm = next(name for name, m in family.methods.items() if m.kind not in ("exact", "oracle"))
    with tempfile.TemporaryDirectory() as tmp:
        target = c.contract.toy_path()
        if target is None:
            if not c.contract.tiny:
                raise unittest.SkipTest(f"{family.name}: no toy and no tiny case to solve on the command line")
            target = Path(tmp) / "instance.toml"
            write_document(c.generated(c.contract.tiny[0], c.contract.tiny[0].seeds[0]), target)
        out = Path(tmp) / "out.toml"
        generate = ("generate", "--jobs", "2", "--servers", "1", "--seed", "0", "-o", out)
        attempts: list[tuple[tuple[Any, ...], str]] = [
            (("solve", target, "--method", "no-such-method"), "no-such-method"),
            (("solve", target, "--method", algorithm, "--set", "no_such_option=1"), "no_such_option"),
            ((*generate, "--problem", family.name, "--set", "no_such_option=1"), "no_such_option"),
            ((*generate, "--problem", f"no-such-{family.name}"), "--problem"),
        ]
        for group, command in (("problem", ("solve", target, "--method", algorithm)), ("generate", (*generate, "--problem", family.name))):
            options, _ = option_groups(family)[group]
            attempts += [((*command, "--set", f"{opt.name}={value}"), opt.name)
                         for opt in options for value in outside(opt) if isinstance(value, str)]
        for args, named in attempts:
            code, err = _command(*args)
            assert code == 2 and named in err and "Traceback" not in err, (args[:1] + args[2:], code, err)
            assert not out.exists(), f"{family.name}: {args[:1] + args[2:]} refused, yet wrote {out.name}"


#: the checks of a family as a whole, and those run once per method, by the name a contract's ``skip`` uses
FAMILY_CHECKS: dict[str, Callable[[Family], None]] = {
    "generate": check_generate, "optimum": check_optimum, "user-errors": check_user_errors,
    "option-domains": check_option_domains, "command-line": check_command_line, "problem-options": check_problem_options,
}
METHOD_CHECKS: dict[str, Callable[[Family, str], None]] = {
    "checker": check_answers, "ratio": check_ratio, "round-trip": check_round_trip, "determinism": check_determinism,
}


def _guarded(name: str, family: Family, run: Callable[[], None]) -> Callable[[], None]:
    def check() -> None:
        reason = _checked(family).contract.skip.get(name)  # a family without a contract: a skip saying so
        if reason:
            raise unittest.SkipTest(f"{family.name}: {name} does not apply ({reason})")
        run()

    check.__name__ = name
    return check


def family_checks(family: Family) -> Iterator[tuple[str, Callable[[], None]]]:
    """Every contract check of ``family``, as (id, check); a check raises ``AssertionError`` when the family
    breaks the contract, ``unittest.SkipTest`` with the reason when it does not apply."""
    for name, check_fn in FAMILY_CHECKS.items():
        yield f"{family.name}-{name}", _guarded(name, family, functools.partial(check_fn, family))
    for method in family.methods:
        for name, method_fn in METHOD_CHECKS.items():
            yield f"{family.name}-{method}-{name}", _guarded(name, family, functools.partial(method_fn, family, method))


def parametrize_with_checks(families: Iterable[Family]):
    """A pytest decorator: one test per contract check of each family (ids ``family-method-check``)."""
    import pytest

    params = [pytest.param(check, id=name) for family in families for name, check in family_checks(family)]
    return pytest.mark.parametrize("check", params)
