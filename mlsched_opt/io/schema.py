"""A small JSON Schema validator for the subset our schemas use, with user-facing field paths.

We keep runtime dependencies to the solver stack, so this validates the keywords our own
schema files use (``type enum const minimum exclusiveMinimum maximum minLength minItems
properties required additionalProperties items oneOf $ref``) and nothing else; the test
suite cross-checks it against the reference ``jsonschema`` package.  What it adds over a
generic validator is the message: one line with the field path (``jobs[3].demand.worker.gpu``)
and what was expected there.
"""

from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources
from typing import Any

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}

#: every number in our documents is at most this in magnitude (exact in a double); the schema
#: files say so with ``minimum``/``maximum`` too, so that the reference validator agrees
MAX_NUMBER = 2**53

_SUPPORTED = {
    "$schema", "$id", "$ref", "$defs", "title", "description", "default", "type", "enum", "const",
    "minimum", "exclusiveMinimum", "maximum", "minLength", "minItems", "properties", "required",
    "additionalProperties", "items", "oneOf",
}


@cache
def load_schema(name: str) -> dict:
    """Load a schema file shipped in :mod:`mlsched_opt.io` (``instance``, ``solution``, ``workload``)."""
    text = resources.files("mlsched_opt.io").joinpath(f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)


def join(path: str, key: str | int) -> str:
    """Extend a field path: ``join('jobs', 3) == 'jobs[3]'``, ``join('jobs[3]', 'id') == 'jobs[3].id'``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {_short(value)}"
    if isinstance(value, str):
        return f"string {value!r}" if len(value) < 40 else "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _short(value: int | float) -> str:
    if isinstance(value, int) and abs(value) >= 10**20:
        return f"an integer with {len(str(abs(value)))} digits"
    return repr(value)


class SchemaViolation(Exception):
    """First violation found: ``path`` is the field path, ``reason`` the explanation."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path or '(top level)'}: {reason}")


def validate(value: Any, schema: dict, root: dict | None = None, path: str = "") -> None:
    """Raise :class:`SchemaViolation` for the first place where ``value`` breaks ``schema``.

    The schema is compiled once into nested closures (:func:`_compiled`) and the field path is
    built only for a violation, on the way out: a 100,000-job instance took 29 s of schema walk
    when every field's path string was built eagerly.
    """
    root = schema if root is None else root
    try:
        _compiled(schema, root)(value)
    except _Fail as failed:
        raise SchemaViolation(_path(path, failed.keys), failed.reason) from None


class _Fail(Exception):
    """A violation on its way out: ``keys`` collects the path innermost first."""

    def __init__(self, reason: str):
        self.reason = reason
        self.keys: list[str | int] = []


def _path(path: str, keys: list[str | int]) -> str:
    for key in reversed(keys):
        path = join(path, key)
    return path


#: (id(schema), id(root)) -> (schema, root, check): the dicts are kept so that an id is never reused
_COMPILED: dict[tuple[int, int], tuple[dict, dict, Any]] = {}


def _compiled(schema: dict, root: dict) -> Any:
    key = (id(schema), id(root))
    hit = _COMPILED.get(key)
    if hit is not None and hit[0] is schema and hit[1] is root:
        return hit[2]
    unknown = set(schema) - _SUPPORTED
    if unknown:  # a schema edit that this validator would silently ignore is a bug
        raise ValueError(f"schema keyword(s) not supported here: {sorted(unknown)}")
    # a $ref may point back at a schema being compiled: its check is looked up at call time
    cell: list[Any] = []
    _COMPILED[key] = (schema, root, lambda v: cell[0](v))
    check = _compile(schema, root)
    cell.append(check)
    _COMPILED[key] = (schema, root, check)
    return check


def _compile(schema: dict, root: dict) -> Any:
    """One closure per schema node, doing the checks of the eager walk in the same order."""
    steps: list[Any] = []
    if "$ref" in schema:
        steps.append(_compiled(_resolve(root, schema["$ref"]), root))
    if "oneOf" in schema:
        branches = schema["oneOf"]
        compiled = [_compiled(b, root) for b in branches]
        steps.append(lambda v: _one_of(v, branches, compiled))
    kind = schema.get("type")
    if kind is not None:
        test = _TYPES[kind]

        def typed(v: Any) -> None:
            if not test(v):
                raise _Fail(f"expected {kind}, got {_describe(v)}")
        steps.append(typed)
    if "const" in schema:
        const = schema["const"]

        def constant(v: Any) -> None:
            if v != const:
                raise _Fail(f"must be {const!r}")
        steps.append(constant)
    if "enum" in schema:
        enum = schema["enum"]
        choices = ", ".join(repr(c) for c in enum)

        def member(v: Any) -> None:
            if v not in enum:
                raise _Fail(f"must be one of {choices}, got {_describe(v)}")
        steps.append(member)
    steps.append(_numeric(schema))
    steps.append(_sized(schema, root))
    if any(k in schema for k in ("properties", "required", "additionalProperties")):
        steps.append(_object(schema, root))
    steps = [s for s in steps if s is not None]
    if len(steps) == 1:
        return steps[0]

    def run(v: Any) -> None:
        for step in steps:
            step(v)
    return run


def _numeric(schema: dict) -> Any:
    finite = schema.get("type") in ("number", "integer")
    lo, lo_x, hi = schema.get("minimum"), schema.get("exclusiveMinimum"), schema.get("maximum")
    if not finite and lo is None and lo_x is None and hi is None:
        return None

    def numeric(v: Any) -> None:
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            return
        if finite:
            # whatever the schema file says: no field of ours takes these (a hostile number
            # must not reach a model builder, an overflow or a loop bound)
            if isinstance(v, float) and not math.isfinite(v):
                raise _Fail(f"must be a finite number, got {v!r}")
            if abs(v) > MAX_NUMBER:
                raise _Fail(f"must be at most 2**53 = {MAX_NUMBER} in magnitude, got {_short(v)}")
        if lo is not None and v < lo:
            raise _Fail(f"must be >= {lo}, got {_short(v)}")
        if lo_x is not None and v <= lo_x:
            raise _Fail(f"must be > {lo_x}, got {_short(v)}")
        if hi is not None and v > hi:
            raise _Fail(f"must be <= {hi}, got {_short(v)}")
    return numeric


def _sized(schema: dict, root: dict) -> Any:
    min_length, min_items = schema.get("minLength", 0), schema.get("minItems", 0)
    items = _compiled(schema["items"], root) if "items" in schema else None
    if not min_length and not min_items and items is None:
        return None

    def sized(v: Any) -> None:
        if isinstance(v, str) and len(v) < min_length:
            raise _Fail("must not be empty")
        if isinstance(v, list):
            if len(v) < min_items:
                raise _Fail(f"needs at least {min_items} item(s)")
            if items is not None:
                for i, item in enumerate(v):
                    try:
                        items(item)
                    except _Fail as fail:
                        fail.keys.append(i)
                        raise
    return sized


def _object(schema: dict, root: dict) -> Any:
    props = {k: _compiled(p, root) for k, p in schema.get("properties", {}).items()}
    required = list(schema.get("required", []))
    extra = schema.get("additionalProperties", True)
    extra_check = _compiled(extra, root) if isinstance(extra, dict) else None
    known = ", ".join(sorted(props)) or "none"

    def obj(v: Any) -> None:
        if not isinstance(v, dict):
            return
        for key in required:
            if key not in v:
                fail = _Fail("missing required field")
                fail.keys.append(key)
                raise fail
        for key, item in v.items():
            check = props.get(key)
            if check is None:
                if extra is False:
                    fail = _Fail(f"unknown field (allowed here: {known})")
                    fail.keys.append(key)
                    raise fail
                check = extra_check
                if check is None:
                    continue
            try:
                check(item)
            except _Fail as fail:
                fail.keys.append(key)
                raise
    return obj


def _one_of(value: Any, branches: list[dict], compiled: list[Any]) -> None:
    failures: list[tuple[dict, _Fail]] = []
    for branch, check in zip(branches, compiled):
        try:
            check(value)
        except _Fail as failed:
            failures.append((branch, failed))
    passed = len(branches) - len(failures)
    if passed == 1:
        return
    titles = " | ".join(b.get("title", "?") for b in branches)
    if passed > 1:
        raise _Fail(f"matches more than one of: {titles}")
    if isinstance(value, dict):
        # Report the branch the user evidently meant: the one whose discriminator ("kind")
        # matches, else the one whose required fields are all present.
        meant = [
            (b, e) for b, e in failures
            if "kind" in value and b.get("properties", {}).get("kind", {}).get("const") == value["kind"]
        ]
        if not meant and "kind" in value and any("kind" in b.get("properties", {}) for b in branches):
            wrong_kind = _Fail(f"must be one of {titles.replace(' | ', ', ')}")
            wrong_kind.keys.append("kind")
            raise wrong_kind
        if not meant:
            meant = [(b, e) for b, e in failures if all(k in value for k in b.get("required", []))]
        if len(meant) == 1:
            raise meant[0][1]
    raise _Fail(f"expected one of: {titles}")


def _resolve(root: dict, ref: str) -> dict:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref is supported, got {ref}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node
