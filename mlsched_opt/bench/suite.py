"""Benchmark suites: one TOML file describes a whole approximation-ratio study (``mlsched bench``).

A suite names one problem family, the instances (generated, read from files, or imported from
real traces), the reference every answer is measured against, and the methods under test.
:func:`load_suite` reads and validates it; every mistake is a
:class:`~mlsched_opt.errors.UserError` naming the suite file and the key (``methods[1].options.units``),
so that ``mlsched bench`` ends with exit code 2 before any task runs.  Unknown keys are errors.

Format
------
.. code-block:: toml

    name = "packing-small"         # optional (default: the file's stem)
    problem = "packing"            # required: a family of `mlsched info`
    description = "..."            # optional, copied into report.md
    time_limit = 60                # optional: seconds per task (default 60), for every method
    catalog = "../models"          # optional: workload catalog, relative to this file

    [options]                      # optional: the family's options (`--set`) for every run;
    objective = ["weight", "servers"]   # a list is a grid: one setting per value

    [instances]                    # at least one of generate, files, import
    generate = { jobs = [6, 8], servers = [3], seeds = [1, 2, 3], set = { objective = "weight" } }
    #   jobs, servers, slots: an integer or a list of them (slots optional); seeds: a list;
    #   set: generator options of the family, and problem options (those marked [problem] in
    #   `mlsched info`) which join [options]; a list value is a grid.  Several generate blocks:
    #   [[instances.generate]] tables.
    files = ["instances/demo.toml"]          # globs, relative to this file
    import = { source = "philly", jobs = [50], servers = [20], seeds = [1], set = { arrivals = "fit" } }
    #   like `mlsched import SOURCE --problem P`: jobs, servers, slots optional (an integer or
    #   a list); seeds default [0]; set: source and family import options (lists are grids);
    #   data: the data folder (default $MLSCHED_SHARED_DATA, else ../shared/data)

    [reference]                    # what a ratio is measured against
    method = "exact"               # "exact", "lp" (the LP relaxation: a bound), an oracle
                                   # method of the family, "best" (the best checked answer of
                                   # the instance: a ratio to the best known, never certified;
                                   # for studies beyond exact reach) or "none" (no ratio)
    solvers = ["highs", "cpsat"]   # exact: one reference run per solver (default highs, cpsat)
    time_limit = 30                # optional (default: the suite's)
    gap = 1e-6                     # optional: relative gap at which optimality may be claimed
    certify = true                 # optional: confirm every optimum by an independent solver
    options = { }                  # optional: options of an oracle method

    [[methods]]                    # the methods under test, one table each
    name = "ffd"                   # required: a method of the family
    label = "FFD"                  # optional (default: the name); unique in the suite
    options = { }                  # method options; a list value is a grid of variants,
                                   # each labelled "LABEL[key=value,...]"
    time_limit = 10                # optional (default: the suite's)
    solver = "highs"               # optional: the solver a method uses for its own LPs/MILPs
    solvers = ["highs"]            # exact methods only: one row per solver
    gap = 1e-6                     # exact methods only
    certify = true                 # exact methods only
    seed = 0                       # optional: the method's seed (default: the instance's seed)

    [report]
    plots = ["package.module:function"]   # optional extra plot hooks (see bench.report)

Every run uses one solver thread (``SolveOptions(threads=1)``), so the same suite gives the
same objectives whatever the executor.  ``mlsched bench --set KEY=VALUE`` overrides a key of the
file before validation: ``KEY`` is a dotted path (``reference.time_limit``,
``instances.generate.seeds``, ``methods.0.time_limit``) and ``VALUE`` a TOML value (``[1, 2]``,
``"cpsat"``, ``true``; a bare word is a string).
"""

from __future__ import annotations

import glob
import hashlib
import itertools
import math
import tomllib
from collections.abc import Iterable, Mapping, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError

#: the reference kinds besides an oracle method's name
REFERENCE_KINDS = ("exact", "lp", "best", "none")
DEFAULT_TIME_LIMIT = 60.0
#: a time limit beyond this (about 115 days) is a mistyped number
MAX_TIME_LIMIT = 1e7
DEFAULT_GAP = 1e-6
DEFAULT_SOLVERS = ("highs", "cpsat")

_TOP = ("name", "problem", "description", "time_limit", "catalog", "options", "instances", "reference", "methods", "report")
_INSTANCES = ("generate", "files", "import")
_GENERATE = ("jobs", "servers", "slots", "seeds", "set")
_IMPORT = ("source", "jobs", "servers", "slots", "seeds", "set", "data")
_REFERENCE = ("method", "solvers", "time_limit", "gap", "certify", "options")
_METHOD = ("name", "label", "options", "time_limit", "solver", "solvers", "gap", "certify", "seed")
_REPORT = ("plots",)


@dataclass(frozen=True)
class InstanceSpec:
    """One instance of the suite, before it is made: how to generate, read or import it.

    ``content`` identifies what the instance is (the generation or import spec, or the sha256 of
    a file's bytes): it enters every task key.  ``setting`` is the spec without the seed (the
    group a summary aggregates over seeds)."""

    kind: str                                  # generate | file | import
    name: str
    seed: int | None
    params: Mapping[str, Any]
    setting: Mapping[str, Any]
    content: Mapping[str, Any]
    problem_options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MethodSpec:
    """One method variant (one point of its option grid), or the reference."""

    name: str
    label: str
    kind: str                                  # the family's kind: exact, oracle, heuristic, ... or "lp"
    options: Mapping[str, Any]
    time_limit: float
    solvers: tuple[str, ...]
    gap: float = DEFAULT_GAP
    certify: bool = True
    seed: int | None = None
    where: str = ""                            # key path in the suite (for messages)


@dataclass(frozen=True)
class Suite:
    name: str
    problem: str
    file: str
    directory: str
    description: str
    time_limit: float
    catalog: str | None
    option_grid: tuple[Mapping[str, Any], ...]
    instances: tuple[InstanceSpec, ...]
    reference: str                             # exact | lp | none | an oracle method
    reference_methods: tuple[MethodSpec, ...]  # the reference's runs (none for "none")
    methods: tuple[MethodSpec, ...]
    plots: tuple[str, ...] = ()
    document: Mapping[str, Any] = field(default_factory=dict, repr=False)


# --- helpers ----------------------------------------------------------------------------------

class _Reader:
    """Validation of one suite document, every error naming the file and the key."""

    def __init__(self, file: str):
        self.file = file

    def error(self, reason: str, where: str) -> UserError:
        return UserError(reason, file=self.file, field=where or None)

    def table(self, value: Any, where: str, allowed: Iterable[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(f"expected a table, got {_kind(value)}", where)
        allowed = tuple(allowed)
        for key in value:
            if key not in allowed:
                raise self.error(f"unknown key {key!r} (allowed: {', '.join(allowed)})", _join(where, key))
        return value

    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"expected a non-empty string, got {_show(value)}", where)
        return value.strip()

    def boolean(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            raise self.error(f"expected true or false, got {_show(value)}", where)
        return value

    def number(self, value: Any, where: str, minimum: float = 0.0, strict: bool = True, maximum: float | None = None) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(f"expected a number, got {_show(value)}", where)
        if value < minimum or (strict and value == minimum) or (maximum is not None and value >= maximum):
            lo = f"> {minimum:g}" if strict else f">= {minimum:g}"
            hi = f" and < {maximum:g}" if maximum is not None else ""
            raise self.error(f"must be {lo}{hi}, got {value!r}", where)
        return float(value)

    def integer(self, value: Any, where: str, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"expected an integer, got {_show(value)}", where)
        if value < minimum:
            raise self.error(f"must be >= {minimum}, got {value}", where)
        return value

    def integers(self, value: Any, where: str, minimum: int, optional: bool = False) -> list[int | None]:
        """An integer or a non-empty list of distinct integers."""
        if value is None and optional:
            return [None]
        items = value if isinstance(value, list) else [value]
        if not items:
            raise self.error("expected an integer or a non-empty list of integers, got []", where)
        out: list[int | None] = [self.integer(v, f"{where}[{i}]" if isinstance(value, list) else where, minimum)
                                 for i, v in enumerate(items)]
        if len(set(out)) != len(out):
            raise self.error(f"repeated value in {value}", where)
        return out

    def strings(self, value: Any, where: str) -> list[str]:
        items = value if isinstance(value, list) else [value]
        if not items:
            raise self.error("expected a non-empty list of strings, got []", where)
        return [self.string(v, f"{where}[{i}]" if isinstance(value, list) else where) for i, v in enumerate(items)]

    def grid(self, value: Any, where: str) -> list[tuple[str, list[Any]]]:
        """A table whose values are scalars or lists of scalars (a grid axis)."""
        table = self.table(value, where, value.keys() if isinstance(value, dict) else ())
        axes = []
        for key, v in table.items():
            values = list(v) if isinstance(v, list) else [v]
            if not values:
                raise self.error("an empty list gives no runs; give at least one value", _join(where, key))
            for i, item in enumerate(values):
                if isinstance(item, (dict, list)) or item is None:
                    raise self.error(f"expected a scalar (string, number, boolean), got {_kind(item)}",
                                     f"{_join(where, key)}[{i}]" if isinstance(v, list) else _join(where, key))
            axes.append((key, values))
        return axes


def _join(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)


def _kind(value: Any) -> str:
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number"}.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    return f"{_kind(value)} ({value!r})" if not isinstance(value, (dict, list)) else _kind(value)


def _product(r: _Reader, axes: list[tuple[str, list[Any]]], where: str) -> list[dict[str, Any]]:
    """Every point of a grid, after its size (a lower bound of the suite's tasks) is found within ``bench_tasks``."""
    _check_tasks(r, _count(*(v for _, v in axes)), f"the points of the grid {where}", where)
    if not axes:
        return [{}]
    keys = [k for k, _ in axes]
    return [dict(zip(keys, combo)) for combo in itertools.product(*(v for _, v in axes))]


def _parse_option(reader: _Reader, options: Iterable[Any], key: str, value: Any, where: str, owner: str) -> Any:
    from ..errors import OptionError

    known = {o.name: o for o in options}
    if key not in known:
        raise reader.error(f"unknown option {key!r} for {owner} (options: {', '.join(known) or 'none'})", where)
    try:
        return known[key].parse(value, where)
    except OptionError as exc:
        raise reader.error(exc.reason, where) from None


def _check_tasks(r: _Reader, count: int, what: str, where: str) -> None:
    """Refuse ``count`` tasks (or more) over the limit ``bench_tasks``, counted before anything is expanded:
    a few lists of a thousand values in a small file make a grid of a billion tasks."""
    from ..io.files import limits, over_limit

    if count > limits()["bench_tasks"]:
        raise over_limit("bench_tasks", count, what, r.file, where or None)


def _task_factors(suite: Suite) -> dict[str, int]:
    return {"instances": len(suite.instances), "options": len(suite.option_grid),
            "methods": sum(len(row_runs(m)) for m in (*suite.reference_methods, *suite.methods))}


def _count(*axes: Sized) -> int:
    """The size of the product of ``axes``: what iterating it would make, without making it."""
    total = 1
    for axis in axes:
        total *= len(axis)
    return total


def task_count(suite: Suite) -> int:
    """The number of tasks :func:`~mlsched_opt.bench.tasks.expand` makes of ``suite``, by arithmetic."""
    factors = _task_factors(suite)
    return factors["instances"] * factors["options"] * factors["methods"]


def check_task_count(suite: Suite) -> None:
    """Refuse a suite of more than ``bench_tasks`` tasks, naming its largest factor as the field."""
    factors = _task_factors(suite)
    what = (f"the number of tasks ({factors['instances']} instances x {factors['options']} settings of [options] "
            f"x {factors['methods']} reference and method runs)")
    _check_tasks(_Reader(suite.file), task_count(suite), what, max(factors, key=lambda k: factors[k]))


def _describe(values: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())


def digest(value: Any) -> str:
    """The sha256 of a JSON-like value, in a canonical form (sorted keys)."""
    from ..io.files import canonical_json

    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


# --- --set overrides ---------------------------------------------------------------------------

def apply_sets(doc: dict[str, Any], pairs: Iterable[str]) -> dict[str, Any]:
    """``KEY=VALUE`` overrides of the suite document (a dotted ``KEY``; a TOML ``VALUE``)."""
    from ..errors import OptionError

    for pair in pairs:
        if "=" not in pair:
            raise OptionError(f"expected KEY=VALUE, got {pair!r}", field="--set")
        key, raw = (part.strip() for part in pair.split("=", 1))
        if not key or any(not part for part in key.split(".")):
            raise OptionError(f"expected a dotted key such as reference.time_limit, got {key!r}", field="--set")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw  # a bare word: a string
        node: Any = doc
        parts = key.split(".")
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                if not part.isdigit() or int(part) >= len(node):
                    raise OptionError(f"{'.'.join(parts[:i]) or 'the suite'} is a list of {len(node)}: "
                                      f"{part!r} is no index of it", field=f"--set {key}")
                if last:
                    node[int(part)] = value
                else:
                    node = node[int(part)]
            elif isinstance(node, dict):
                if last:
                    node[part] = value
                else:
                    node = node.setdefault(part, {})
            else:
                raise OptionError(f"{'.'.join(parts[:i])} is not a table", field=f"--set {key}")
    return doc


# --- the suite -------------------------------------------------------------------------------

def load_suite(path: str | Path, sets: Iterable[str] = (), catalog: str | None = None) -> Suite:
    """Read and validate the suite file ``path`` (``sets``: ``--set KEY=VALUE`` overrides;
    ``catalog``: the command line's catalog, used when the suite names none)."""
    from ..io.files import read_document

    file = str(path)
    doc = apply_sets(read_document(path), sets)
    return parse_suite(doc, file, catalog)


def parse_suite(doc: Mapping[str, Any], file: str, catalog: str | None = None) -> Suite:
    """Validate a parsed suite document (see :func:`load_suite`)."""
    from ..problems import REGISTRY

    r = _Reader(file)
    r.table(doc, "", _TOP)
    directory = Path(file).resolve().parent
    name = r.string(doc["name"], "name") if "name" in doc else Path(file).stem
    if "problem" not in doc:
        raise r.error(f"missing: the problem family ({', '.join(REGISTRY)})", "problem")
    problem = r.string(doc["problem"], "problem")
    if problem not in REGISTRY:
        raise r.error(f"unknown problem {problem!r}; choose from {', '.join(REGISTRY)}", "problem")
    family = REGISTRY[problem]
    description = doc["description"] if isinstance(doc.get("description"), str) else ""
    if "description" in doc and not isinstance(doc["description"], str):
        raise r.error(f"expected a string, got {_kind(doc['description'])}", "description")
    time_limit = r.number(doc["time_limit"], "time_limit", maximum=MAX_TIME_LIMIT) if "time_limit" in doc else DEFAULT_TIME_LIMIT
    if "catalog" in doc:
        folder = directory / r.string(doc["catalog"], "catalog")
        if not folder.is_dir():
            raise r.error(f"no such folder: {folder}", "catalog")
        catalog = str(folder)
    if catalog is not None:
        catalog = str(Path(catalog).resolve())  # workers may run elsewhere in the file system
    cat = _catalog(r, catalog)

    option_grid = _problem_options(r, family, doc.get("options", {}), "options")
    if "instances" not in doc:
        raise r.error("missing: at least one of generate, files, import", "instances")
    instances = _instances(r, family, doc["instances"], directory, cat, {k for g in option_grid for k in g})
    if "reference" not in doc:
        raise r.error(f"missing: method = {' | '.join(repr(k) for k in REFERENCE_KINDS)} or an oracle method", "reference")
    reference, ref_methods = _reference(r, family, doc["reference"], time_limit)
    methods_doc = doc.get("methods", [])
    if not isinstance(methods_doc, list):
        raise r.error("expected an array of tables ([[methods]])", "methods")
    methods: list[MethodSpec] = []
    default_solvers = ref_methods[0].solvers if reference == "exact" else ("highs",)
    for i, m in enumerate(methods_doc):
        methods += _method(r, family, m, f"methods[{i}]", time_limit, default_solvers)
        _check_tasks(r, sum(len(row_runs(m)) for m in methods), "the number of method runs", "methods")
    labels: dict[str, str] = {label: m.where for m in ref_methods for _, label in row_runs(m)}
    for m in methods:
        for _, label in row_runs(m):
            if label in labels:
                raise r.error(f"label {label!r} is already used by {labels[label] or 'the reference'}; "
                              "give this method a label of its own", f"{m.where}.label")
            labels[label] = m.where
    if not methods and reference in ("none", "best"):
        raise r.error("nothing to run: no [[methods]] and no reference", "methods")
    plots: tuple[str, ...] = ()
    if "report" in doc:
        rep = r.table(doc["report"], "report", _REPORT)
        if "plots" in rep:
            plots = tuple(r.strings(rep["plots"], "report.plots"))
            for i, hook in enumerate(plots):
                if ":" not in hook:
                    raise r.error(f"expected 'package.module:function', got {hook!r}", f"report.plots[{i}]")
    suite = Suite(name=name, problem=problem, file=file, directory=str(directory), description=description,
                  time_limit=time_limit, catalog=catalog, option_grid=tuple(option_grid), instances=tuple(instances),
                  reference=reference, reference_methods=tuple(ref_methods), methods=tuple(methods), plots=plots,
                  document=dict(doc))
    check_task_count(suite)
    return suite


def _catalog(r: _Reader, catalog: str | None):
    from ..io import load_catalog

    try:
        return load_catalog(catalog)
    except UserError as exc:
        raise r.error(f"the workload catalog cannot be read: {exc.message()}", "catalog") from None


def _problem_options(r: _Reader, family, value: Any, where: str) -> list[dict[str, Any]]:
    axes = r.grid(value, where)
    for key, values in axes:
        listed = isinstance(value[key], list)
        for i, v in enumerate(values):
            at = f"{_join(where, key)}[{i}]" if listed else _join(where, key)
            values[i] = _parse_option(r, family.options, key, v, at, f"problem {family.name}")
    return _product(r, axes, where)


def _instances(r: _Reader, family, value: Any, directory: Path, catalog, global_keys: set[str]) -> list[InstanceSpec]:
    table = r.table(value, "instances", _INSTANCES)
    if not any(k in table for k in _INSTANCES):
        raise r.error("give at least one of generate, files, import", "instances")
    out: list[InstanceSpec] = []
    if "generate" in table:
        blocks = table["generate"] if isinstance(table["generate"], list) else [table["generate"]]
        for i, block in enumerate(blocks):
            where = f"instances.generate[{i}]" if isinstance(table["generate"], list) else "instances.generate"
            out += _generate(r, family, block, where, global_keys)
            _check_tasks(r, len(out), "the number of instances", "instances")
    if "files" in table:
        out += _files(r, family, table["files"], "instances.files", directory, catalog)
        _check_tasks(r, len(out), "the number of instances", "instances")
    if "import" in table:
        blocks = table["import"] if isinstance(table["import"], list) else [table["import"]]
        for i, block in enumerate(blocks):
            where = f"instances.import[{i}]" if isinstance(table["import"], list) else "instances.import"
            out += _import(r, family, block, where, directory, global_keys)
            _check_tasks(r, len(out), "the number of instances", "instances")
    seen: dict[tuple[str, str], str] = {}
    for spec in out:
        ident = (spec.name, digest(spec.problem_options))
        if ident in seen:
            raise r.error(f"instance {spec.name!r} is listed twice", "instances")
        seen[ident] = spec.name
    return out


def _sizes(r: _Reader, table: Mapping[str, Any], where: str, optional: bool) -> dict[str, list[int | None]]:
    from ..io.files import limits

    caps = limits()
    out: dict[str, list[int | None]] = {}
    for key in ("jobs", "servers", "slots"):
        if key not in table:
            if not optional and key != "slots":
                raise r.error(f"missing: the number of {key} (an integer or a list)", _join(where, key))
            out[key] = [None]
            continue
        values = r.integers(table[key], _join(where, key), 1)
        for v in values:
            if v is not None and v > caps[key]:
                raise r.error(f"{v} {key} is over the limit {key}={caps[key]} (raise it with `mlsched --limit {key}=N`)",
                              _join(where, key))
        out[key] = values
    return out


def _seeds(r: _Reader, table: Mapping[str, Any], where: str, default: list[int] | None) -> list[int]:
    if "seeds" not in table:
        if default is None:
            raise r.error("missing: a list of seeds, e.g. seeds = [1, 2, 3]", _join(where, "seeds"))
        return default
    value = table["seeds"]
    if not isinstance(value, list):
        raise r.error(f"expected a list of seeds, e.g. [1, 2, 3], got {_show(value)}", _join(where, "seeds"))
    seeds = [r.integer(v, f"{where}.seeds[{i}]", 0) for i, v in enumerate(value)]
    if not seeds:
        raise r.error("an empty list gives no instances", _join(where, "seeds"))
    if len(set(seeds)) != len(seeds):
        raise r.error(f"repeated seed in {value}", _join(where, "seeds"))
    if max(seeds) >= 2**31:
        raise r.error("seeds must be < 2**31", _join(where, "seeds"))
    return seeds


def _split_set(r: _Reader, family, value: Any, where: str, own: Iterable[Any], owner: str,
               global_keys: set[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``set = {...}``: the generator's (or importer's) own options, and problem options."""
    own = tuple(own)
    own_names = {o.name for o in own}
    problem_names = {o.name for o in family.options}
    axes = r.grid(value, where)
    mine, problem = [], []
    for key, values in axes:
        at = _join(where, key)
        if key in own_names:
            parsed = [_parse_option(r, own, key, v, at, owner) for v in values]
            mine.append((key, parsed))
        elif key in problem_names:
            if key in global_keys:
                raise r.error(f"{key} is set both here and in [options]; set it in one place", at)
            parsed = [_parse_option(r, family.options, key, v, at, f"problem {family.name}") for v in values]
            problem.append((key, parsed))
        else:
            names = sorted(own_names) + sorted(problem_names)
            raise r.error(f"unknown option {key!r} for {owner} or problem {family.name} (options: {', '.join(names) or 'none'})", at)
    return _product(r, mine, where), _product(r, problem, where)


def _generate(r: _Reader, family, value: Any, where: str, global_keys: set[str]) -> list[InstanceSpec]:
    table = r.table(value, where, _GENERATE)
    sizes = _sizes(r, table, where, optional=False)
    seeds = _seeds(r, table, where, None)
    gen_grid, prob_grid = _split_set(r, family, table.get("set", {}), _join(where, "set"), family.generate_options,
                                     f"the {family.name} generator", global_keys)
    _check_tasks(r, _count(*sizes.values(), seeds, gen_grid, prob_grid), "the number of instances of the block", where)
    out = []
    for jobs, servers, slots, gen, prob in itertools.product(sizes["jobs"], sizes["servers"], sizes["slots"], gen_grid, prob_grid):
        setting = {"jobs": jobs, "servers": servers, **({"slots": slots} if slots else {}), **gen}
        base = f"{family.name}-j{jobs}-s{servers}" + (f"-t{slots}" if slots else "") + "".join(f"-{k}={v}" for k, v in gen.items())
        for seed in seeds:
            params = {"jobs": jobs, "servers": servers, "slots": slots, "seed": seed, "options": gen}
            out.append(InstanceSpec("generate", f"{base}-seed{seed}", seed, params, setting,
                                    {"generate": params}, prob))
    return out


def _files(r: _Reader, family, value: Any, where: str, directory: Path, catalog) -> list[InstanceSpec]:
    from ..io import from_document
    from ..io.files import read_bytes, read_document

    patterns = r.strings(value, where)
    out: list[InstanceSpec] = []
    seen: set[str] = set()
    for i, pattern in enumerate(patterns):
        at = f"{where}[{i}]" if isinstance(value, list) else where
        full = pattern if Path(pattern).is_absolute() else str(directory / pattern)
        matches = sorted(glob.glob(full, recursive=True))
        if not matches:
            raise r.error(f"no file matches {pattern!r} (relative to {directory})", at)
        _check_tasks(r, len(seen) + len(matches), "the number of instance files", at)  # before any is read
        for match in matches:
            path = Path(match).resolve()
            if str(path) in seen:
                continue
            seen.add(str(path))
            inst = from_document(read_document(path), file=str(path), catalog=catalog)  # the file's own errors, with its name
            if inst.default_problem not in (None, family.name):
                raise r.error(f"{match} is an instance of problem {inst.default_problem}, not {family.name}", at)
            try:
                name = path.relative_to(directory).as_posix()
            except ValueError:
                name = str(path)
            content = {"file": hashlib.sha256(read_bytes(path)).hexdigest()}
            setting = {"jobs": len(inst.jobs), "servers": len(inst.servers), **({"slots": inst.slots} if inst.slots else {})}
            out.append(InstanceSpec("file", name, None, {"path": str(path)}, setting, content, {}))
    return out


def _import(r: _Reader, family, value: Any, where: str, directory: Path, global_keys: set[str]) -> list[InstanceSpec]:
    try:
        from ..traces import import_instance, source_options, source_table  # noqa: F401
    except ImportError:
        raise r.error("import not available: this installation has no trace importers (mlsched_opt.traces)", where) from None
    from ..errors import OptionError
    from ..traces import data_dir

    table = r.table(value, where, _IMPORT)
    if "source" not in table:
        raise r.error(f"missing: the trace source ({', '.join(source_table())})", _join(where, "source"))
    source = r.string(table["source"], _join(where, "source"))
    if source not in source_table():
        raise r.error(f"unknown source {source!r}; choose from {', '.join(source_table())}", _join(where, "source"))
    if family.trace is None or source not in family.trace.sources:
        feeds = ", ".join(family.trace.sources) if family.trace else "none"
        raise r.error(f"{source} does not feed problem {family.name} (its sources: {feeds})", _join(where, "source"))
    sizes = _sizes(r, table, where, optional=True)
    seeds = _seeds(r, table, where, [0])
    data = None
    if "data" in table:
        data = str(directory / r.string(table["data"], _join(where, "data")))
    try:
        folder = data_dir(data)
    except OptionError as exc:
        raise r.error(exc.reason, _join(where, "data")) from None
    own, prob_grid = _split_set(r, family, table.get("set", {}), _join(where, "set"), source_options(source, family),
                                f"importing {source} into {family.name}", global_keys)
    try:
        fingerprint = _folder_fingerprint(Path(folder))
    except OSError as exc:  # unreadable, or gone while read
        raise r.error(f"cannot read the trace data: {exc}", _join(where, "data")) from None
    _check_tasks(r, _count(*sizes.values(), seeds, own, prob_grid), "the number of instances of the block", where)
    out = []
    for jobs, servers, slots, sets, prob in itertools.product(sizes["jobs"], sizes["servers"], sizes["slots"], own, prob_grid):
        setting = {"source": source, **{k: v for k, v in (("jobs", jobs), ("servers", servers), ("slots", slots)) if v}, **sets}
        base = (f"{source}-j{jobs or 'all'}-s{servers or 'all'}" + (f"-t{slots}" if slots else "")
                + "".join(f"-{k}={v}" for k, v in sets.items()))
        for seed in seeds:
            params = {"source": source, "jobs": jobs, "servers": servers, "slots": slots, "seed": seed,
                      "set": {k: str(v) for k, v in sets.items()}, "data": str(Path(folder).resolve())}
            content = {"import": {k: v for k, v in params.items() if k != "data"}, "data": fingerprint}
            out.append(InstanceSpec("import", f"{base}-seed{seed}", seed, params, setting, content, prob))
    return out


def row_runs(m: MethodSpec) -> list[tuple[str, str]]:
    """The (solver, label) of each row ``m`` makes: one per solver for an exact method, else one
    (its first solver)."""
    if m.kind == "exact":
        return [(solver, f"{m.label} ({solver})") for solver in m.solvers]
    return [(m.solvers[0], m.label)]


def _folder_fingerprint(folder: Path) -> str:
    """What the trace folder holds, for the task key: each file's path, size and the sha256 of
    its first MiB (the traces run to hundreds of MB; an edit that keeps the size and the head is
    the one change this misses)."""
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        with f.open("rb") as fh:
            head = fh.read(1 << 20)
        h.update(f"{f.relative_to(folder).as_posix()}\0{f.stat().st_size}\0".encode())
        h.update(hashlib.sha256(head).digest())
    return h.hexdigest()[:16]


def _check_solver(r: _Reader, solver: str, where: str) -> None:
    from ..solvers import check_solver

    try:
        check_solver(solver)
    except UserError as exc:
        raise r.error(exc.reason, where) from None


def _reference(r: _Reader, family, value: Any, time_limit: float) -> tuple[str, list[MethodSpec]]:
    table = r.table(value, "reference", _REFERENCE)
    if "method" not in table:
        raise r.error(f"missing: {' | '.join(repr(k) for k in REFERENCE_KINDS)} or an oracle method", "reference.method")
    method = r.string(table["method"], "reference.method")
    oracles = [m.name for m in family.methods.values() if m.kind == "oracle"]
    tl = r.number(table["time_limit"], "reference.time_limit", maximum=MAX_TIME_LIMIT) if "time_limit" in table else time_limit
    gap = r.number(table["gap"], "reference.gap", 0.0, strict=False, maximum=1.0) if "gap" in table else DEFAULT_GAP
    certify = r.boolean(table["certify"], "reference.certify") if "certify" in table else True
    exact_kind = family.methods["exact"].kind
    for key in ("solvers", "gap", "certify"):
        if key in table and not (method == "exact" or (method in oracles and key != "solvers")):
            raise r.error(f"{key} applies to method = \"exact\" only", f"reference.{key}")
    if "options" in table and method in ("exact", "lp", "best", "none"):
        raise r.error("options apply to an oracle reference; set the family's options in [options]", "reference.options")
    if method in ("none", "best"):
        if len(table) > 1:
            raise r.error(f"method = \"{method}\" takes no other key", "reference")
        return method, []
    if method == "lp":
        if not family.bounded:
            raise r.error(f"problem {family.name} has no LP bound (its model is a surrogate); use an oracle or \"exact\"",
                          "reference.method")
        return method, [MethodSpec("lp", family.bound_label, "lp", {}, tl, ("highs",), where="reference")]
    if method == "exact":
        solvers = tuple(r.strings(table["solvers"], "reference.solvers")) if "solvers" in table else DEFAULT_SOLVERS
        if len(set(solvers)) != len(solvers):
            raise r.error(f"repeated solver in {list(solvers)}", "reference.solvers")
        for i, s in enumerate(solvers):
            _check_solver(r, s, f"reference.solvers[{i}]")
        label = "exact" if exact_kind == "exact" else f"exact ({exact_kind})"
        return method, [MethodSpec("exact", label, exact_kind, {}, tl, solvers, gap, certify, where="reference")]
    if method not in oracles:
        choices = ", ".join(repr(k) for k in (*REFERENCE_KINDS, *oracles))
        raise r.error(f"{method!r} is no reference for problem {family.name}: choose {choices}", "reference.method")
    raw = table.get("options", {})
    if not isinstance(raw, dict):
        raise r.error(f"expected a table, got {_kind(raw)}", "reference.options")
    options = {key: _method_option(r, family, key, v, f"reference.options.{key}") for key, v in raw.items()}
    return method, [MethodSpec(method, method, "oracle", options, tl, ("highs",), gap, certify, where="reference")]


def _method_option(r: _Reader, family, key: str, value: Any, where: str) -> Any:
    parsed = _parse_option(r, family.options, key, value, where, f"problem {family.name}")
    if any(o.name == key and o.problem for o in family.options):
        raise r.error(f"{key} defines the problem (and so the reference): set it in [options], not per method", where)
    return parsed


def _method(r: _Reader, family, value: Any, where: str, time_limit: float, default_solvers: tuple[str, ...]) -> list[MethodSpec]:
    table = r.table(value, where, _METHOD)
    if "name" not in table:
        raise r.error(f"missing: a method of problem {family.name} ({', '.join(family.methods)})", f"{where}.name")
    name = r.string(table["name"], f"{where}.name")
    if name not in family.methods:
        raise r.error(f"unknown method {name!r} for problem {family.name}; choose from {', '.join(family.methods)}", f"{where}.name")
    method = family.methods[name]
    if not method.available:
        raise r.error(f"method {name} needs {method.requires}, which is not installed (pip install -e '.[rl]')", f"{where}.name")
    label = r.string(table["label"], f"{where}.label") if "label" in table else name
    tl = r.number(table["time_limit"], f"{where}.time_limit", maximum=MAX_TIME_LIMIT) if "time_limit" in table else time_limit
    is_exact = method.kind == "exact"
    for key in ("solvers", "gap", "certify"):
        if key in table and not is_exact:
            raise r.error(f"{key} applies to exact methods; {name} is {method.kind}", f"{where}.{key}")
    if "solver" in table and is_exact:
        raise r.error("an exact method takes solvers = [...] (one row per solver)", f"{where}.solver")
    if is_exact:
        solvers = tuple(r.strings(table["solvers"], f"{where}.solvers")) if "solvers" in table else default_solvers
        if len(set(solvers)) != len(solvers):
            raise r.error(f"repeated solver in {list(solvers)}", f"{where}.solvers")
        for i, s in enumerate(solvers):
            _check_solver(r, s, f"{where}.solvers[{i}]")
    else:
        solvers = (r.string(table["solver"], f"{where}.solver"),) if "solver" in table else ("highs",)
        _check_solver(r, solvers[0], f"{where}.solver")
    gap = r.number(table["gap"], f"{where}.gap", 0.0, strict=False, maximum=1.0) if "gap" in table else DEFAULT_GAP
    certify = r.boolean(table["certify"], f"{where}.certify") if "certify" in table else True
    seed = None
    if "seed" in table:
        seed = r.integer(table["seed"], f"{where}.seed", 0)
        if seed >= 2**31:
            raise r.error("seeds must be < 2**31", f"{where}.seed")
    axes = r.grid(table.get("options", {}), f"{where}.options")
    for key, values in axes:
        for i, v in enumerate(values):
            at = f"{where}.options.{key}" + (f"[{i}]" if isinstance(table["options"][key], list) else "")
            values[i] = _method_option(r, family, key, v, at)
    grid_keys = [k for k, v in axes if isinstance(table["options"][k], list)]
    out = []
    for combo in _product(r, axes, f"{where}.options"):
        variant = label + (f"[{','.join(f'{k}={combo[k]}' for k in grid_keys)}]" if grid_keys else "")
        out.append(MethodSpec(name, variant, method.kind, combo, tl, solvers, gap, certify, seed, where))
    return out


def describe_setting(setting: Mapping[str, Any], problem_options: Mapping[str, Any]) -> str:
    """The setting of an instance as one string (its spec without the seed, and the problem options)."""
    return _describe({**setting, **problem_options})
