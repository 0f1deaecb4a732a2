"""Reading and writing the project's documents (instances, solutions, catalog entries) as JSON or TOML.

Reading never evaluates or unpickles anything: JSON goes through :mod:`json` (duplicate keys,
NaN and Infinity rejected), TOML through :mod:`tomllib`.  Every failure becomes a
:class:`~mlsched_opt.errors.InstanceError` naming the file and, where there is one, the place.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from ..errors import InstanceError

FORMATS = ("json", "toml")


def format_of(path: str | Path) -> str:
    """The document format implied by a file name: ``json`` or ``toml``."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix in FORMATS:
        return suffix
    raise InstanceError(f"unknown file type {Path(path).suffix or '(none)'}; use .json or .toml", str(path))


def read_document(path: str | Path) -> dict[str, Any]:
    """Parse a JSON or TOML file into a dict, or raise :class:`InstanceError` saying why not."""
    name = str(path)
    fmt = format_of(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InstanceError("no such file", name) from None
    except IsADirectoryError:
        raise InstanceError("is a directory, not a file", name) from None
    except OSError as exc:
        raise InstanceError(f"cannot read file ({exc.strerror})", name) from None
    if b"\x00" in raw:
        raise InstanceError("binary file (contains NUL bytes); expected UTF-8 text", name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InstanceError(f"not UTF-8 text (bad byte at offset {exc.start})", name) from None
    if not text.strip():
        raise InstanceError("file is empty", name)
    doc = _parse_json(text, name) if fmt == "json" else _parse_toml(text, name)
    if not isinstance(doc, dict):
        raise InstanceError(f"top level must be an object, got {type(doc).__name__}", name)
    return doc


def _reject_constant(token: str) -> float:
    raise ValueError(f"{token} is not allowed")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _parse_json(text: str, name: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        hint = " (file truncated?)" if exc.pos >= len(text.rstrip()) else ""
        raise InstanceError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}", name) from None
    except ValueError as exc:
        raise InstanceError(f"invalid JSON: {exc}", name) from None


def _parse_toml(text: str, name: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InstanceError(f"invalid TOML: {exc}", name) from None


def canonical_json(doc: Any) -> str:
    """The one serialization used for hashing: sorted keys, no whitespace."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def write_document(doc: dict[str, Any], path: str | Path) -> None:
    """Write ``doc`` as JSON or TOML, by the file's extension."""
    fmt = format_of(path)
    text = dump_json(doc) if fmt == "json" else dump_toml(doc)
    Path(path).write_text(text, encoding="utf-8")


def dump_json(doc: Any) -> str:
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


# --- a small TOML writer: tables for top-level objects, [[arrays]] for lists of objects,
# --- inline tables below that.  tomllib reads back exactly what it writes (tested).

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped, the rest verbatim
    (JSON's escaping would write astral characters as surrogate pairs, which TOML rejects)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("TOML output does not take NaN or infinity here")
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_scalar(v)}" for k, v in value.items()) + " }" if value else "{}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def dump_toml(doc: dict[str, Any]) -> str:
    lines: list[str] = []
    _emit_table(doc, "", lines)
    return "\n".join(lines).strip() + "\n"


def _emit_table(table: dict[str, Any], prefix: str, lines: list[str]) -> None:
    nested = []
    for key, value in table.items():
        if isinstance(value, dict) or _is_table_array(value):
            nested.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_scalar(value)}")
    for key, value in nested:
        name = f"{prefix}.{_key(key)}" if prefix else _key(key)
        if isinstance(value, dict):
            lines += ["", f"[{name}]"]
            _emit_table(value, name, lines)
        else:
            for item in value:
                lines += ["", f"[[{name}]]"]
                # below an array element, objects are written inline to keep each element in one block
                for k, v in item.items():
                    lines.append(f"{_key(k)} = {_scalar(v)}")
