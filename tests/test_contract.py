"""One contract over every family and method (in the spirit of scikit-learn's
``parametrize_with_checks``): what every answer of the toolkit must satisfy, whoever computed it.
Each check is one test parametrized over the registry, ``[family]`` or ``[family-method]``:

1. **generate**: the generator's tiny instances validate, and the same seed writes a
   byte-identical file while another seed draws another instance;
2. **checker**: every available method answers every instance it applies to with a decision
   that passes :func:`check_solution`, a status its kind may claim, the report's fields, and the
   objective the checker recomputes;
3. **optimum**: exact is optimal (certified by an independent solver when it is a solver's
   answer) and within the LP bound in the family's sense; every answer's ratio to it
   (:func:`approximation_ratio`, >= 1, 1 = optimal) is >= 1, and 1 for every claimed optimum;
4. **round trip**: the solution file reads back to the same document and the same verdict, and
   holds plain JSON only (no numpy scalars, no NaN or infinity);
5. **determinism**: the same seed gives a byte-identical decision (timings belong in the report);
6. **user errors**: an unknown option, an out-of-domain value, an unknown method or problem is an
   :class:`OptionError` naming the field, and exit code 2 from the CLI; every option declares a
   domain;

and a solution that restates the problem (other problem-defining options) is reported.

The instances are the family's shipped toy and the generated instances of the table below
(:data:`TINY`): tiny, so that exact solvers and exhaustive oracles finish in well under a second.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from mlsched_opt.comparison import approximation_ratio
from mlsched_opt.errors import InstanceError, OptionError
from mlsched_opt.io import from_document, load_catalog, load_instance, write_document
from mlsched_opt.io.instance import Instance
from mlsched_opt.io.solution import Solution, read_solution
from mlsched_opt.problems import REGISTRY, GenerateSpec, Option, check_solution
from mlsched_opt.problems.base import parse_values, resolve
from mlsched_opt.solvers import STATUSES, SolveOptions

from .conftest import ROOT


@dataclass(frozen=True)
class Case:
    """Generated instances of one family: ``mlsched generate --jobs J --servers S [--slots T]
    --seed s --set <generate>`` for each seed, solved with the problem options ``options``.
    ``exact``: the exact method and the oracles apply (small enough, and of the kind they take)."""

    jobs: int
    servers: int
    slots: int | None = None
    generate: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = (1, 2)
    exact: bool = True


#: THE table: per family, its tiny generated instances (a toy from instances/ is added to them)
TINY: dict[str, tuple[Case, ...]] = {
    "packing": (Case(6, 2),
                Case(4, 4, options={"objective": "servers"})),  # every job must fit: more servers
    "smd": (Case(5, 3),
            Case(5, 3, options={"overlap": "sequential"}, seeds=(1,))),
    # few slots and short jobs, so that the offline MILP proves its optimum at once
    "oasis": (Case(5, 2, slots=6, generate={"epochs_min": 1, "epochs_max": 5}),
              Case(5, 2, slots=6, generate={"epochs_min": 1, "epochs_max": 5}, options={"ranges": "paper"}, seeds=(1,))),
    # 2 GPUs per server: the configuration ILP and both exhaustive oracles stay tiny
    "hetero": (Case(4, 3, generate={"gpus_per_server": 2}),
               Case(4, 3, generate={"gpus_per_server": 2}, options={"comm": "ps"}, seeds=(1,))),
    "locality": (Case(3, 2, slots=6, generate={"work_max": 8.0}),
                 Case(3, 2, slots=6, generate={"work_max": 8.0}, options={"ps_placement": "with-workers"}, seeds=(1,))),
    # exact search takes static batches only (every job at interval 0) of at most 4 jobs, short
    # ones (under starts=any it also enumerates start intervals); the online trace is for the others
    "harmony": (Case(3, 3, generate={"static": True, "min_intervals": 1.0, "max_intervals": 8.0}),
                Case(3, 3, generate={"static": True, "min_intervals": 1.0, "max_intervals": 8.0},
                     options={"starts": "simultaneous"}, seeds=(1,)),
                Case(25, 4, seeds=(5,), exact=False)),
}
#: the small shipped instance of each family
TOYS = {
    "packing": "demo.toml", "smd": "smd-toy.toml", "oasis": "oasis-toy.toml", "hetero": "hetero-toy.toml",
    "locality": "locality-toy.toml", "harmony": "harmony-toy.toml",
}
#: options whose value is free text (a file path, a list of names): the only ones without a domain
FREE_TEXT = {("harmony", "model"), ("hetero", "types")}

SOLVE = SolveOptions(seed=11, time_limit=20, gap=0.0)
#: what each kind of method may claim on a feasible instance: an algorithm proves nothing
STATUS_OF_KIND = {"exact": {"optimal"}, "oracle": {"optimal", "feasible"}}
ALGORITHM_STATUS = {"feasible"}
REPORT_FIELDS = ("status", "objective", "bound", "gap", "wall_s", "solver")
TIMINGS = ("wall_s", "build_s", "solve_s")
REL = 1e-6

FAMILIES = sorted(REGISTRY)
METHODS = [pytest.param(f, m, id=f"{f}-{m}") for f in FAMILIES for m in REGISTRY[f].methods]


def test_every_family_has_a_contract_table_entry():
    assert set(TINY) == set(REGISTRY) and set(TOYS) == set(REGISTRY)


# --- the instances and the answers (computed once, shared by the checks) ---------------------

@dataclass(frozen=True)
class Subject:
    label: str
    instance: Instance
    options: Mapping[str, Any]
    exact: bool


@functools.cache
def catalog():
    return load_catalog()


def generated(family: str, case: Case, seed: int) -> dict[str, Any]:
    fam = REGISTRY[family]
    spec = GenerateSpec(jobs=case.jobs, servers=case.servers, seed=seed, slots=case.slots,
                        options=fam.parse_generate_options(case.generate))
    return fam.generate(spec, catalog())


def _label(case: Case, seed: int) -> str:
    sets = "".join(f",{k}={v}" for k, v in {**case.generate, **case.options}.items())
    return f"j{case.jobs}-s{case.servers}-t{case.slots}-seed{seed}{sets}"


@functools.cache
def subjects(family: str) -> tuple[Subject, ...]:
    out = [Subject("toy", load_instance(ROOT / "instances" / TOYS[family]), {}, True)]
    for case in TINY[family]:
        for seed in case.seeds:
            inst = from_document(generated(family, case, seed), catalog=catalog())
            out.append(Subject(_label(case, seed), inst, dict(case.options), case.exact))
    assert len({s.label for s in out}) == len(out), f"{family}: two contract instances with one label"
    return tuple(out)


def applies(family: str, method: str, subject: Subject) -> bool:
    return subject.exact or REGISTRY[family].method(method).kind not in ("exact", "oracle")


def cases(family: str, method: str) -> list[Subject]:
    """The instances ``method`` answers (skipping, with the reason, a method whose extra is absent)."""
    m = REGISTRY[family].method(method)
    if not m.available:
        pytest.skip(f"{family}/{method} needs {m.requires}, not installed")
    return [s for s in subjects(family) if applies(family, method, s)]


@functools.cache
def _answer(family: str, label: str, method: str) -> Solution:
    subject = next(s for s in subjects(family) if s.label == label)
    return REGISTRY[family].run(subject.instance, method, SOLVE, subject.options)


def answer(family: str, subject: Subject, method: str) -> Solution:
    return _answer(family, subject.label, method)


def sense(family: str, subject: Subject) -> str:
    fam = REGISTRY[family]
    return fam.sense(fam.resolve_options(subject.instance, subject.options))


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


def without_timings(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {**doc, "report": {k: v for k, v in doc["report"].items() if k not in TIMINGS}}


# --- 1. generate -------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_generated_instances_validate_and_follow_their_seed(family, tmp_path):
    for n, case in enumerate(TINY[family]):
        for seed in case.seeds:
            doc = generated(family, case, seed)
            assert doc.get("problem") == family
            files = [tmp_path / f"{n}-{seed}-{k}.toml" for k in range(2)]
            for path in files:
                write_document(generated(family, case, seed), path)
            assert files[0].read_bytes() == files[1].read_bytes(), f"{family} seed {seed}: same seed, different file"
            inst = load_instance(files[0], catalog())
            assert inst.sha256 == from_document(doc, catalog=catalog()).sha256 and len(inst.jobs) == case.jobs
            other = generated(family, case, seed + 1000)
            drawn = {k: v for k, v in doc.items() if k not in ("name", "source", "description")}
            assert drawn != {k: v for k, v in other.items() if k not in ("name", "source", "description")}, \
                f"{family}: seeds {seed} and {seed + 1000} draw the same instance"


# --- 2. every answer passes the checker --------------------------------------------------------

@pytest.mark.parametrize("family,method", METHODS)
def test_every_answer_passes_the_checker_with_a_full_report(family, method):
    kind = REGISTRY[family].method(method).kind
    allowed = STATUS_OF_KIND.get(kind, ALGORITHM_STATUS)
    for subject in cases(family, method):
        sol = answer(family, subject, method)
        where = f"{family}/{method} on {subject.label}"
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
        check = check_solution(subject.instance, sol, subject.options)
        assert check.feasible, (where, [str(v) for v in check.violations])
        assert check.objective == pytest.approx(rep["objective"], rel=REL, abs=REL), where


# --- 3. exact, the LP bound and the approximation ratio -----------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_exact_is_a_certified_optimum_within_the_lp_bound(family):
    fam = REGISTRY[family]
    exact = fam.method("exact")
    for subject in [s for s in subjects(family) if s.exact]:
        where = f"{family} on {subject.label}"
        rep = answer(family, subject, "exact").report
        assert rep.status == "optimal", (where, rep.status, rep.message)
        if exact.kind == "exact":  # a solver's word, confirmed by another; an oracle is its own proof
            assert rep.certified_by, f"{where}: optimal but not certified ({rep.message})"
        best = rep.objective
        if sense(family, subject) == "max":
            assert rep.bound >= best - REL * max(1.0, abs(best)), where
        else:
            assert rep.bound <= best + REL * max(1.0, abs(best)), where
        if not fam.bounded:  # the Pyomo model is a surrogate: its relaxation bounds nothing
            continue
        lp = fam.lp_bound(subject.instance, fam.resolve_options(subject.instance, subject.options), SOLVE)
        assert lp.status == "optimal" and lp.objective is not None, (where, lp.status)
        slack = REL * max(1.0, abs(best))
        if sense(family, subject) == "max":
            assert lp.objective >= best - slack, f"{where}: LP bound {lp.objective} below the optimum {best}"
        else:
            assert lp.objective <= best + slack, f"{where}: LP bound {lp.objective} above the optimum {best}"


@pytest.mark.parametrize("family,method", METHODS)
def test_ratio_to_the_optimum_is_at_least_one(family, method):
    for subject in [s for s in cases(family, method) if s.exact]:
        where = f"{family}/{method} on {subject.label}"
        best = answer(family, subject, "exact").report.objective
        sol = answer(family, subject, method)
        check = check_solution(subject.instance, sol, subject.options)
        assert check.feasible and check.objective is not None, (where, [str(v) for v in check.violations])
        value = check.objective  # the checker's value, not the claim
        ratio = approximation_ratio(value, best, sense(family, subject))
        assert ratio >= 1 - REL, f"{where}: {value} beats the proven optimum {best} (ratio {ratio})"
        if method == "exact" or sol.report.status == "optimal":
            assert ratio == pytest.approx(1.0, rel=REL), f"{where}: claims an optimum of {value}, the optimum is {best}"


# --- 4. JSON round trip -------------------------------------------------------------------------

@pytest.mark.parametrize("family,method", METHODS)
def test_solution_file_round_trips_with_the_same_verdict(family, method, tmp_path):
    for subject in cases(family, method):
        where = f"{family}/{method} on {subject.label}"
        sol = answer(family, subject, method)
        assert_plain_json(sol.to_dict(), where)
        path = tmp_path / f"{subject.label}.json"
        sol.write(path)
        back = read_solution(path)
        assert without_timings(back.to_dict()) == without_timings(sol.to_dict()), where
        before, after = (check_solution(subject.instance, s, subject.options) for s in (sol, back))
        assert (after.feasible, after.objective, [str(v) for v in after.violations]) == \
               (before.feasible, before.objective, [str(v) for v in before.violations]), where


# --- 5. determinism -----------------------------------------------------------------------------

@pytest.mark.parametrize("family,method", METHODS)
def test_same_seed_same_decision(family, method):
    fam = REGISTRY[family]
    # methods that call a solver: under each native MILP solver (one thread, a seed)
    solvers = ("highs", "cpsat") if fam.method(method).kind in ("exact", "oracle") else ("highs",)
    for subject in cases(family, method):
        for solver in solvers:
            where = f"{family}/{method} ({solver}) on {subject.label}"
            if solver == "highs":
                runs = [answer(family, subject, method), fam.run(subject.instance, method, SOLVE, subject.options)]
            else:
                options = SolveOptions(seed=SOLVE.seed, time_limit=SOLVE.time_limit, gap=0.0, solver=solver, certify=False)
                runs = [fam.run(subject.instance, method, options, subject.options) for _ in range(2)]
            texts = [json.dumps(s.decision, sort_keys=True, allow_nan=False) for s in runs]
            assert texts[0] == texts[1], f"{where}: same seed, different decision"
            assert (runs[0].report.status, runs[0].report.objective) == (runs[1].report.status, runs[1].report.objective), where


# --- 6. user errors -----------------------------------------------------------------------------

@pytest.mark.parametrize("family,method", METHODS)
def test_an_unknown_option_is_a_user_error_naming_it(family, method):
    fam = REGISTRY[family]
    subject = subjects(family)[0]
    with pytest.raises(OptionError) as exc:
        fam.run(subject.instance, method, SOLVE, {**subject.options, "no_such_option": "1"})
    assert exc.value.field == "--set" and "no_such_option" in exc.value.reason


@pytest.mark.parametrize("family", FAMILIES)
def test_unknown_methods_options_and_problems_are_user_errors_and_exit_2(family, run, tmp_path):
    fam = REGISTRY[family]
    subject = subjects(family)[0]
    with pytest.raises(OptionError) as exc:
        fam.method("no-such-method")
    assert exc.value.field == "--method" and "no-such-method" in exc.value.reason
    assert all(name in exc.value.reason for name in fam.methods)  # what to choose from
    with pytest.raises(OptionError) as exc:
        fam.run(subject.instance, "no-such-method", SOLVE)
    assert exc.value.field == "--method"
    with pytest.raises(OptionError) as exc:
        fam.parse_generate_options({"no_such_option": 1})
    assert exc.value.field == "--set" and "no_such_option" in exc.value.reason
    # an unknown option in the instance's own options table names its place in the file
    doc = generated(family, TINY[family][0], TINY[family][0].seeds[0])
    inst = from_document({**doc, "options": {"no_such_option": 1}}, catalog=catalog())
    with pytest.raises(InstanceError) as exc:
        fam.run(inst, "exact", SOLVE)
    assert exc.value.field == "options.no_such_option"

    toy = ROOT / "instances" / TOYS[family]
    algorithm = next(name for name, m in fam.methods.items() if m.kind not in ("exact", "oracle"))
    for args, named in ((("--method", "no-such-method"), "no-such-method"),
                        (("--method", algorithm, "--set", "no_such_option=1"), "no_such_option")):
        code, _, err = run("solve", toy, *args)
        assert code == 2 and named in err and "Traceback" not in err, (args, code, err)
    gen = ("generate", "--jobs", "2", "--servers", "1", "--seed", "0", "-o", tmp_path / "x.toml")
    code, _, err = run(*gen, "--problem", family, "--set", "no_such_option=1")
    assert code == 2 and "no_such_option" in err, err
    code, _, err = run(*gen, "--problem", f"no-such-{family}")
    assert code == 2 and "--problem" in err, err
    assert not (tmp_path / "x.toml").exists()


def option_groups(family: str) -> dict[str, tuple[tuple[Option, ...], Any]]:
    """Each kind of option of a family: (its options, how the family parses a ``--set`` of them)."""
    fam = REGISTRY[family]
    return {
        "problem": (fam.options, fam.parse_options),
        "generate": (fam.generate_options, fam.parse_generate_options),
        "train": (fam.train_options, lambda raw: parse_values(fam.train_options, raw, "--set", f"{family} training")),
        "import": (fam.trace.options if fam.trace else (),
                   lambda raw: parse_values(fam.trace.options, raw, "--set", f"importing into {family}")),
    }


OPTIONS = [pytest.param(f, group, o.name, id=f"{f}-{group}-{o.name}")
           for f in FAMILIES for group, (opts, _) in option_groups(f).items() for o in opts]


def text(value: Any) -> str:
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
    values: list[Any] = [lo - 1, hi * 2 + 1]
    if lo > 0:
        values.append(0 if integer else 0.0)
        if not integer:
            values.append(lo / 2)
    values = [int(v) if integer else float(v) for v in values]
    values += [text(v) for v in values] + ["nan", "inf", "-inf", "", "abc"]
    if integer:
        values += [1.5, "1.5", str(2**70)]
    return values


@pytest.mark.parametrize("family,group,name", OPTIONS)
def test_every_option_has_a_domain_and_refuses_what_is_outside_naming_itself(family, group, name, run, tmp_path):
    options, parse = option_groups(family)[group]
    opt = next(o for o in options if o.name == name)
    if isinstance(opt.default, str) and opt.choices is None:
        assert (family, name) in FREE_TEXT, f"{family} {group} option {name}: a string without choices"
    elif isinstance(opt.default, (int, float)) and not isinstance(opt.default, bool) and opt.choices is None:
        assert opt.minimum is not None and opt.maximum is not None, f"{family} {group} option {name}: no bounds"
        assert opt.minimum <= opt.default <= opt.maximum, name
    assert parse({})[name] == opt.default and parse({name: opt.default})[name] == opt.default
    assert parse({name: text(opt.default)})[name] == opt.default  # the default, as a user writes it
    bad = outside(opt)
    for value in bad:
        with pytest.raises(OptionError) as exc:
            parse({name: value})
        assert exc.value.field == "--set" and name in exc.value.reason, (value, exc.value.reason)
    # the command line: exit 2, one line naming the option
    typed = [v for v in bad if isinstance(v, str)]
    if group == "problem":
        toy = ROOT / "instances" / TOYS[family]
        method = next(m for m, meth in REGISTRY[family].methods.items() if meth.kind not in ("exact", "oracle"))
        for value in typed:
            code, _, err = run("solve", toy, "--method", method, "--set", f"{name}={value}")
            assert code == 2 and name in err and "Traceback" not in err, (value, code, err)
    elif group == "generate":
        out = tmp_path / "x.toml"
        for value in typed:
            code, _, err = run("generate", "--problem", family, "--jobs", "2", "--servers", "1", "--seed", "0",
                               "--set", f"{name}={value}", "-o", out)
            assert code == 2 and name in err and "Traceback" not in err, (value, code, err)
        assert not out.exists()


# --- problem options belong to the problem, not to a solution ------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_a_solution_cannot_restate_the_problem(family):
    """Problem options come from the instance and the command line; a solution that records other
    values of a problem-defining option is reported, whatever its decision."""
    fam = REGISTRY[family]
    forgeable = [o for o in fam.options if o.problem and o.choices and len(o.choices) > 1]
    assert [o for o in fam.options if o.problem], f"{family} declares no problem-defining option"
    if not forgeable:
        pytest.skip("no problem option with alternatives to forge")
    inst = load_instance(ROOT / "instances" / TOYS[family])
    method = next(name for name, m in fam.methods.items() if m.kind not in ("exact", "oracle") and m.available)
    sol = fam.run(inst, method, SolveOptions(seed=1), {})
    assert sol.decision is not None
    opt = forgeable[0]
    other = next(c for c in opt.choices if c != fam.parse_options({})[opt.name])
    sol.problem_options = {**sol.problem_options, opt.name: other}
    result = check_solution(inst, sol)
    assert any(v.rule == "problem-options" for v in result.violations), [str(v) for v in result.violations]


# --- one family contract: the same files for the same roles ---------------------------------------

ROLES = ("view", "formulation", "methods", "baselines", "check", "generate", "trace")


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_has_the_same_modules_for_the_same_roles(family):
    import importlib

    from mlsched_opt.problems import MethodKind

    package = f"mlsched_opt.problems.{family}"
    for role in ROLES:
        importlib.import_module(f"{package}.{role}")
    formulation = importlib.import_module(f"{package}.formulation")
    fam = REGISTRY[family]
    assert resolve(fam.build_model) is formulation.build_model and resolve(fam.decision_from_model) is formulation.decision_from_model
    assert resolve(fam.check) is importlib.import_module(f"{package}.check").check
    assert all(isinstance(m.kind, MethodKind) for m in fam.methods.values())


@pytest.mark.parametrize("module, below", [
    ("mlsched_opt.io", ("mlsched_opt.solvers", "mlsched_opt.checking", "mlsched_opt.problems")),
    ("mlsched_opt.checking", ("mlsched_opt.solvers", "mlsched_opt.problems")),
    ("mlsched_opt.solvers", ("mlsched_opt.checking", "mlsched_opt.problems")),
    # every command imports the registry; PyTorch (the rl extra) is for drl and train alone
    ("mlsched_opt.cli, mlsched_opt.problems", ("torch", "gymnasium")),
])
def test_layers_import_only_downwards(module, below):
    """io < checking, solvers < problems: a layer never imports one above it (a fresh interpreter)."""
    import subprocess
    import sys

    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.startswith({below!r})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out
