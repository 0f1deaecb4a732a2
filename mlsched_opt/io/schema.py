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
    """Raise :class:`SchemaViolation` for the first place where ``value`` breaks ``schema``."""
    root = schema if root is None else root
    unknown = set(schema) - _SUPPORTED
    if unknown:  # a schema edit that this validator would silently ignore is a bug
        raise ValueError(f"schema keyword(s) not supported here: {sorted(unknown)}")
    if "$ref" in schema:
        validate(value, _resolve(root, schema["$ref"]), root, path)
    if "oneOf" in schema:
        _one_of(value, schema["oneOf"], root, path)
    if "type" in schema and not _TYPES[schema["type"]](value):
        raise SchemaViolation(path, f"expected {schema['type']}, got {_describe(value)}")
    if "const" in schema and value != schema["const"]:
        raise SchemaViolation(path, f"must be {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(repr(c) for c in schema["enum"])
        raise SchemaViolation(path, f"must be one of {choices}, got {_describe(value)}")
    if _TYPES["number"](value):
        if schema.get("type") in ("number", "integer"):
            # whatever the schema file says: no field of ours takes these (a hostile number
            # must not reach a model builder, an overflow or a loop bound)
            if isinstance(value, float) and not math.isfinite(value):
                raise SchemaViolation(path, f"must be a finite number, got {value!r}")
            if abs(value) > MAX_NUMBER:
                raise SchemaViolation(path, f"must be at most 2**53 = {MAX_NUMBER} in magnitude, got {_short(value)}")
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaViolation(path, f"must be >= {schema['minimum']}, got {_short(value)}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            raise SchemaViolation(path, f"must be > {schema['exclusiveMinimum']}, got {_short(value)}")
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaViolation(path, f"must be <= {schema['maximum']}, got {_short(value)}")
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        raise SchemaViolation(path, "must not be empty")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise SchemaViolation(path, f"needs at least {schema['minItems']} item(s)")
        if "items" in schema:
            for i, item in enumerate(value):
                validate(item, schema["items"], root, join(path, i))
    if isinstance(value, dict):
        _object(value, schema, root, path)


def _object(value: dict, schema: dict, root: dict, path: str) -> None:
    props = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            raise SchemaViolation(join(path, key), "missing required field")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            validate(item, props[key], root, join(path, key))
        elif extra is False:
            known = ", ".join(sorted(props)) or "none"
            raise SchemaViolation(join(path, key), f"unknown field (allowed here: {known})")
        elif isinstance(extra, dict):
            validate(item, extra, root, join(path, key))


def _one_of(value: Any, branches: list[dict], root: dict, path: str) -> None:
    failures: list[tuple[dict, SchemaViolation]] = []
    for branch in branches:
        try:
            validate(value, branch, root, path)
        except SchemaViolation as exc:
            failures.append((branch, exc))
    passed = len(branches) - len(failures)
    if passed == 1:
        return
    titles = " | ".join(b.get("title", "?") for b in branches)
    if passed > 1:
        raise SchemaViolation(path, f"matches more than one of: {titles}")
    if isinstance(value, dict):
        # Report the branch the user evidently meant: the one whose discriminator ("kind")
        # matches, else the one whose required fields are all present.
        meant = [
            (b, e) for b, e in failures
            if "kind" in value and b.get("properties", {}).get("kind", {}).get("const") == value["kind"]
        ]
        if not meant and "kind" in value and any("kind" in b.get("properties", {}) for b in branches):
            raise SchemaViolation(join(path, "kind"), f"must be one of {titles.replace(' | ', ', ')}")
        if not meant:
            meant = [(b, e) for b, e in failures if all(k in value for k in b.get("required", []))]
        if len(meant) == 1:
            raise meant[0][1]
    raise SchemaViolation(path, f"expected one of: {titles}")


def _resolve(root: dict, ref: str) -> dict:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref is supported, got {ref}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node
