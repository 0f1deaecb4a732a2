"""Reading and writing the project's documents (instances, solutions, catalog entries) as JSON or TOML.

Reading never evaluates or unpickles anything: JSON goes through :mod:`json` (duplicate keys
rejected), TOML through :mod:`tomllib`.  Only regular files are read (a FIFO, a device or a
socket is refused before it is opened, so nothing blocks or streams forever), up to the
``file_mb`` limit; a document nested deeper than ``depth`` levels, a non-finite number (JSON
``NaN``/``Infinity``/``1e999``, TOML ``inf``/``nan``) or an integer literal longer than
:data:`MAX_INT_DIGITS` digits is refused with its field path.  Every failure becomes a
:class:`~mlsched_opt.errors.InstanceError` naming the file and, where there is one, the place.

Writing is atomic (:func:`write_atomic`, :func:`atomic_path`): the text goes to a temporary
file in the target's folder, which then replaces the target, so a failed write leaves the old
file intact; and a command never writes onto one of its own inputs.  Every ``OSError`` while
writing becomes a :class:`~mlsched_opt.errors.UserError` naming the path.

Resource limits (:func:`limits`) are our design: every size that makes work or memory grow
(file size, nesting depth, expanded servers, jobs, slots, tasks per job, servers x jobs x
slots) has a default cap that a user raises with ``mlsched --limit NAME=VALUE`` or the
environment variable ``MLSCHED_LIMITS="NAME=VALUE,..."`` (the command line wins).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InstanceError, OptionError, UserError
from .schema import MAX_NUMBER

FORMATS = ("json", "toml")

# --- limits ---------------------------------------------------------------------------------

#: name -> (default, what it bounds).  Defaults leave every shipped instance and benchmark far
#: inside; they exist so that a hostile or mistyped number is refused in milliseconds instead
#: of being expanded until the machine runs out of memory.
LIMITS: dict[str, tuple[int, str]] = {
    "file_mb": (1024, "size of one input file, MiB (a generated 10^6-job packing instance is about 400 MiB of JSON)"),
    "depth": (64, "nesting depth of arrays/objects in one file"),
    "servers": (1_000_000, "servers after expanding every group's count"),
    "jobs": (1_000_000, "jobs in one instance (a JSON file's jobs are counted as it is read, before it is parsed)"),
    "slots": (1_000_000, "time slots (time.slots)"),
    "tasks": (100_000, "workers (or parameter servers) of one job: workers/ps count or max"),
    "cells": (20_000_000,
              "servers x jobs x slots (1 when there is no horizon) of an exact model, checked when it is built "
              "(the whole Alibaba trace, 1,523 x 9,061, fits)"),
    "model_mb": (256, "a policy file (--set model=FILE): its size and the sizes its entries and tensors declare, MiB "
                      "(the shipped policy is 0.2 MiB)"),
    "bench_tasks": (100_000, "tasks of one bench suite (instances x settings x method runs), counted before they are made"),
    "catalog_entries": (1_000, "entry files (.toml, .json) in one workload catalog folder, counted before one is read "
                               "(the shipped catalog has 35)"),
    "trace_rows": (1_000_000, "data rows of one trace file read by `mlsched import`, refused as they stream in "
                              "(the largest shipped trace, Philly's, has 82,247)"),
}
ENV_LIMITS = "MLSCHED_LIMITS"
#: the most digits an integer literal may have (2**53 has 16; Python refuses > 4300 anyway)
MAX_INT_DIGITS = 100

_overrides: dict[str, int] = {}


def _parse_limits(pairs: Iterable[str], where: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for pair in pairs:
        pair = pair.strip()
        if not pair:
            continue
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep:
            raise OptionError(f"expected NAME=VALUE, got {pair!r}", field=where)
        if name not in LIMITS:
            raise OptionError(f"unknown limit {name!r} (known: {', '.join(LIMITS)})", field=where)
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number == int(number) and 1 <= number <= MAX_NUMBER):
            raise OptionError(f"limit {name} must be a whole number in [1, 2**53], got {value.strip()!r}", field=where)
        out[name] = int(number)
    return out


def set_limits(pairs: Iterable[str] = ()) -> None:
    """Set the command-line limit overrides (``NAME=VALUE`` strings); ``()`` clears them."""
    global _overrides
    _overrides = _parse_limits(pairs, "--limit")


def limits() -> dict[str, int]:
    """The limits in force: defaults, then ``$MLSCHED_LIMITS``, then ``--limit``."""
    out = {name: default for name, (default, _) in LIMITS.items()}
    env = os.environ.get(ENV_LIMITS, "")
    if env.strip():
        out.update(_parse_limits(env.split(","), f"${ENV_LIMITS}"))
    out.update(_overrides)
    return out


def over_limit(name: str, value: int, what: str, file: str | None, field: str | None) -> InstanceError:
    """The error for ``value`` above the limit ``name``, saying how to raise it."""
    cap = limits()[name]
    return InstanceError(f"{what} is {value}, over the limit {name}={cap} "
                         f"(raise it with `mlsched --limit {name}=N ...` or ${ENV_LIMITS}={name}=N)", file, field)


# --- reading --------------------------------------------------------------------------------

def format_of(path: str | Path) -> str:
    """The document format implied by a file name: ``json`` or ``toml``."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix in FORMATS:
        return suffix
    raise InstanceError(f"unknown file type {Path(path).suffix or '(none)'}; use .json or .toml", str(path))


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def _not_regular(mode: int) -> str | None:
    for test, what in _KINDS:
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def read_bytes(path: str | Path, feed: Callable[..., None] | None = None) -> bytes:
    """The content of a regular file of at most ``file_mb`` MiB, or an :class:`InstanceError`.

    The file is stat-ed before it is opened (following symlinks), and opened non-blocking, so a
    FIFO, a device such as ``/dev/zero`` or a socket is refused without ever blocking or being
    read; a file that grows past the cap while being read is refused too.  ``feed(chunk)`` sees
    each chunk as it arrives (and ``feed(b"", final=True)`` the end): a scanner that raises stops
    the read there.
    """
    name = str(path)
    cap = limits()["file_mb"] * 2**20
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InstanceError("no such file", name) from None
    except OSError as exc:
        raise InstanceError(f"cannot read file ({exc.strerror or exc})", name) from None
    kind = _not_regular(st.st_mode)
    if kind == "a directory":
        raise InstanceError("is a directory, not a file", name)
    if kind:
        raise InstanceError(f"is {kind}, not a regular file", name)
    if st.st_size > cap:
        raise over_limit("file_mb", -(-st.st_size // 2**20), "the file size in MiB", name, None)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise InstanceError(f"cannot read file ({exc.strerror or exc})", name) from None
    try:
        if _not_regular(os.fstat(fd).st_mode):  # replaced between stat and open
            raise InstanceError("is not a regular file", name)
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 22)
            if not chunk:
                break
            size += len(chunk)
            if size > cap:
                raise over_limit("file_mb", -(-size // 2**20), "the file size in MiB", name, None)
            chunks.append(chunk)
            if feed is not None:
                feed(chunk)
        if feed is not None:
            feed(b"", final=True)
    except OSError as exc:
        raise InstanceError(f"cannot read file ({exc.strerror or exc})", name) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_document(path: str | Path, counts: Callable[[dict[str, Any], str], None] | None = None,
                  count_items: tuple[str, str] | None = None) -> dict[str, Any]:
    """Parse a JSON or TOML file into a dict, or raise :class:`InstanceError` saying why not.

    Guarantees: the result is a dict of JSON-like values (dict, list, str, int, finite float,
    bool, None) nested at most ``depth`` levels, with no integer literal over
    :data:`MAX_INT_DIGITS` digits.  ``counts(doc, file)`` runs right after parsing, before every
    value is walked: a reader's size limits (an instance's jobs and servers) refuse a huge file
    without the walk's seconds.  ``count_items=(KEY, LIMIT)`` counts the items of the top-level
    array ``KEY`` of a JSON file while it streams in, before anything is parsed, and refuses the
    file as soon as they pass the limit ``LIMIT`` (a 10^7-job file is refused after reading the
    first 10^6 jobs' bytes, not the whole file).
    """
    name = str(path)
    fmt = format_of(path)
    scan = _JsonScan(name, limits()["depth"], count_items) if fmt == "json" else None
    raw = read_bytes(path, scan.feed if scan else None)
    if b"\x00" in raw:
        raise InstanceError("binary file (contains NUL bytes); expected UTF-8 text", name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InstanceError(f"not UTF-8 text (bad byte at offset {exc.start})", name) from None
    del raw
    if not text.strip():
        raise InstanceError("file is empty", name)
    if fmt == "json":
        # the depth was checked as the bytes streamed in; a value check walks the document only if
        # parsing met a value it refuses (a walk of every value took 11 s at 100,000 jobs)
        doc, suspect = _parse_json(text, name)
        suspect = suspect or _SURROGATE_ESCAPE.search(text) is not None
    else:
        _check_nesting(text, name)
        doc, suspect = _parse_toml(text, name), True
    if not isinstance(doc, dict):
        raise InstanceError(f"top level must be an object, got {json_type(doc)}", name)
    if counts is not None:
        counts(doc, name)
    if suspect:
        check_values(doc, name)
    return doc


#: a JSON escape that can make a lone UTF-16 surrogate (the only way a JSON string is not text)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

_QUOTE, _BACKSLASH, _BRACE = ord('"'), ord("\\"), ord("{")


class _JsonScan:
    """The structure of a JSON file, chunk by chunk as it is read, with numpy over the bytes.

    Tracks, outside strings, the nesting depth (refused past ``depth``, as :func:`_check_nesting`
    does for TOML) and the items of one top-level array (``count_items``), so that both limits
    hold before the parser sees a byte.  Strings are found by their unescaped quotes: a quote is
    escaped when an odd run of backslashes precedes it (a chunk never ends inside such a run).
    Linear in the bytes, no Python loop over them.
    """

    def __init__(self, name: str, depth_cap: int, count_items: tuple[str, str] | None):
        self.name = name
        self.cap = depth_cap
        self.key, self.limit_name = count_items if count_items else ("", "")
        self.limit = limits()[self.limit_name] if count_items else 0
        self.key_re = re.compile(rb'"' + re.escape(self.key.encode()) + rb'"\s*:\s*\[') if count_items else None
        self.lines = 0           # line breaks before this chunk
        self.in_string = False
        self.depth = 0
        self.items = -1          # -1: the array not found yet; -2: counted and closed
        self.tail = b""          # a trailing run of backslashes, carried into the next chunk

    def feed(self, chunk: bytes, final: bool = False) -> None:
        data = self.tail + chunk
        cut = len(data)
        if not final:
            if self.items == -1 and self.key_re is not None:
                # the array's key must not be split by the chunk's end: the last 64 bytes wait for the
                # next chunk, and so does a key that reaches into them (one with longer whitespace
                # around its colon may be missed: the count after parsing still holds)
                cut = max(cut - 64, 0)
                for match in self.key_re.finditer(data, max(cut - 64, 0)):
                    if match.start() < cut < match.end():
                        cut = match.start()
                        break
            while cut and data[cut - 1] == _BACKSLASH:
                cut -= 1
        self.tail = data[cut:]
        self._scan(data[:cut])
        self.lines += data.count(b"\n", 0, cut)

    def _scan(self, data: bytes) -> None:
        if not data:
            return
        a = np.frombuffer(data, dtype=np.uint8)
        # the tokens that matter, then everything on them alone: quotes, and brackets ([ { are the
        # bytes whose value | 32 is 123, ] } those where it is 125)
        folded = a | 32
        pos = np.flatnonzero((a == _QUOTE) | (folded == 123) | (folded == 125))
        tok = a[pos]
        is_quote = tok == _QUOTE
        if data.find(b"\\") >= 0 and is_quote.any():
            at = np.flatnonzero(is_quote)
            escaped = at[_escaped(a, pos[at])]
            keep = np.ones(pos.size, dtype=bool)
            keep[escaped] = False  # an escaped quote is string content, neither quote nor bracket
            pos, tok, is_quote = pos[keep], tok[keep], is_quote[keep]
        # a bracket is structural when an even number of real quotes (after the carried state) precedes it
        outside = (np.cumsum(is_quote, dtype=np.int32) & 1) == int(self.in_string)
        structural = ~is_quote & outside
        where = pos[structural]
        kinds = tok[structural]
        steps = np.where((kinds | 32) == 123, np.int32(1), np.int32(-1))
        depth = self.depth + np.cumsum(steps, dtype=np.int32)
        if depth.size:
            deep = np.flatnonzero(depth > self.cap)
            if deep.size:
                line = self.lines + data.count(b"\n", 0, int(where[deep[0]])) + 1
                raise over_limit("depth", int(depth[deep[0]]), f"the nesting depth at line {line}", self.name, None)
        quotes = pos[is_quote]
        if self.key_re is not None and self.items != -2:
            self._count(data, quotes, where, kinds == _BRACE, depth)
        self.in_string = bool((self.in_string + quotes.size) % 2)
        if depth.size:
            self.depth = int(depth[-1])

    def _count(self, data: bytes, quotes: np.ndarray, where: np.ndarray, braces: np.ndarray, depth: np.ndarray) -> None:
        start = 0
        if self.items == -1:
            for match in self.key_re.finditer(data):  # type: ignore[union-attr]
                at = match.start()
                k = int(np.searchsorted(where, at))
                level = int(depth[k - 1]) if k else self.depth
                if level != 1 or (int(np.searchsorted(quotes, at)) + self.in_string) % 2:
                    continue  # not a key of the top-level object
                start = int(np.searchsorted(where, match.end() - 1)) + 1  # just past the array's bracket
                self.items = 0
                break
            if self.items == -1:
                return
        # items open at depth 3 (top object 1, the array 2); the array closes when depth falls back to 1
        inner_depth = depth[start:]
        closed = np.flatnonzero(inner_depth < 2)
        stop = int(closed[0]) if closed.size else inner_depth.size
        opened = (braces[start:start + stop]) & (inner_depth[:stop] == 3)
        self.items += int(np.count_nonzero(opened))
        if closed.size:
            self.items = -2 if self.items <= self.limit else self.items
        if self.items > self.limit:
            raise over_limit(self.limit_name, self.items, f"the number of {self.key} (counted as the file is read)",
                             self.name, self.key)


def _escaped(a: np.ndarray, quotes: np.ndarray) -> np.ndarray:
    """Which of ``quotes`` (positions in ``a``) an odd run of backslashes precedes."""
    slashes = np.flatnonzero(a == _BACKSLASH)
    k = np.searchsorted(slashes, quotes)  # backslashes before each quote
    has = (k > 0) & (slashes[np.maximum(k - 1, 0)] == quotes - 1)
    # a run's first backslash: where the gap to the previous one is not 1
    first = np.ones(slashes.size, dtype=bool)
    first[1:] = np.diff(slashes) != 1
    run_start = slashes[np.maximum.accumulate(np.where(first, np.arange(slashes.size), 0))] if slashes.size else slashes
    out = np.zeros(quotes.size, dtype=bool)
    idx = np.flatnonzero(has)
    out[idx] = (quotes[idx] - run_start[k[idx] - 1]) % 2 == 1
    return out


_NESTING_TOKENS = re.compile(r'[\[\]{}"\'#\n\\]')


def _check_nesting(text: str, name: str) -> None:
    """Refuse deep nesting before a recursive parser sees it.

    Counts brackets and braces outside strings (an upper bound of the nesting depth in both
    JSON and TOML: a TOML table header ``[a.b]`` adds no depth, but counting it open and
    closed is harmless).  Linear time, no recursion; a file with fewer opening brackets than
    the limit is not scanned at all.
    """
    cap = limits()["depth"]
    if text.count("[") + text.count("{") <= cap:
        return
    toml = name.lower().endswith(".toml")
    depth = 0
    quote = None
    skip_to = -1
    comment = False
    for match in _NESTING_TOKENS.finditer(text):
        i, ch = match.start(), match.group()
        if i < skip_to:
            continue
        if comment:
            comment = ch != "\n"
        elif quote:
            if ch == "\\" and quote == '"':
                skip_to = i + 2  # the escaped character, whatever it is
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and toml:
            comment = True
        elif ch in "[{":
            depth += 1
            if depth > cap:
                line = text.count("\n", 0, i) + 1
                raise over_limit("depth", depth, f"the nesting depth at line {line}", name, None)
        elif ch in "]}":
            depth -= 1


def json_type(value: Any) -> str:
    """What ``value`` is called in JSON (a parsed document's value, for messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float, _TooLong)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def _not_text(value: str) -> bool:
    # JSON's \ud800-style escapes can make a lone surrogate, which no UTF-8 output can print
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_values(doc: Any, file: str | None) -> None:
    """Refuse non-finite floats and strings that are not text (a lone UTF-16 surrogate) anywhere
    in ``doc``, naming the field (iterative: no recursion).  A field's path is built only from
    keys already found to be text, so the message itself can always be printed."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str) and _not_text(value):
            raise InstanceError("a string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff), which is not text",
                                file, path or None)
        if isinstance(value, dict) and any(_not_text(k) for k in value):
            raise InstanceError("a key holds a lone UTF-16 surrogate escape (\\ud800-\\udfff), which is not text",
                                file, path or None)
        if isinstance(value, float) and not math.isfinite(value):
            what = "NaN" if math.isnan(value) else "an infinite number (or one beyond the float range, like 1e999)"
            raise InstanceError(f"{what} is not allowed; numbers must be finite", file, path or None)
        if isinstance(value, _TooLong):
            raise _too_long(value.digits, file, path)
        if isinstance(value, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return out


class _TooLong:
    """Stands in for an over-long integer literal until :func:`check_values` names its field."""

    def __init__(self, digits: int):
        self.digits = digits


def _too_long(digits: int, file: str | None, path: str) -> InstanceError:
    return InstanceError(f"an integer with {digits} digits is too large (numbers are at most 2**53 = {MAX_NUMBER})", file, path or None)


def _parse_int(token: str) -> int | _TooLong:
    digits = len(token.lstrip("+-"))
    # int() of a long literal is quadratic and refused past 4300 digits: never call it
    return _TooLong(digits) if digits > MAX_INT_DIGITS else int(token)


def _parse_constant(token: str) -> float:
    # NaN/Infinity become floats here so that check_values can name the field they are in
    return float(token.replace("Infinity", "inf"))


def _parse_json(text: str, name: str) -> tuple[Any, bool]:
    """The document, and whether it holds a value :func:`check_values` must name (a non-finite
    number or an over-long integer literal: each is seen here, as the parser makes it)."""
    seen: list[bool] = []

    def number(token: str) -> Any:
        value = _parse_int(token)
        if isinstance(value, _TooLong):
            seen.append(True)
        return value

    def real(token: str) -> float:
        value = float(token)
        if not math.isfinite(value):  # 1e999
            seen.append(True)
        return value

    def constant(token: str) -> float:
        seen.append(True)
        return _parse_constant(token)

    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=constant, parse_int=number, parse_float=real)
    except json.JSONDecodeError as exc:
        hint = " (file truncated?)" if exc.pos >= len(text.rstrip()) else ""
        raise InstanceError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}", name) from None
    except ValueError as exc:
        raise InstanceError(f"invalid JSON: {exc}", name) from None
    except RecursionError:  # the depth scan makes this unreachable; kept as a last guard
        raise InstanceError("nested too deeply", name) from None
    return doc, bool(seen)


def _parse_toml(text: str, name: str) -> Any:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InstanceError(f"invalid TOML: {exc}", name) from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        raise InstanceError(f"invalid TOML: {exc}", name) from None
    except RecursionError:
        raise InstanceError("nested too deeply", name) from None
    _check_int_sizes(doc, name)
    return doc


def _check_int_sizes(doc: Any, file: str) -> None:
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_INT_DIGITS:
            raise _too_long(len(str(abs(value))), file, path)
        if isinstance(value, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))


def canonical_json(doc: Any) -> str:
    """The one serialization used for hashing: sorted keys, no whitespace."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


# --- writing --------------------------------------------------------------------------------

def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def check_writable(path: str | Path, inputs: Iterable[str | Path | None] = ()) -> None:
    """Refuse, before any work is done, an output ``path`` that cannot or must not be written.

    Refused, each with a :class:`UserError` naming ``path``: one of ``inputs`` (the same file by
    resolved path or inode), a missing folder, a directory, a non-regular file, a read-only file
    (by its mode bits, so that root is refused too: overwriting a file its owner protected is
    not our call), and a folder we may not create files in.
    """
    target = Path(path)
    name = str(path)
    for source in inputs:
        if source is not None and _same_file(target, Path(source)):
            raise UserError(f"refusing to overwrite the input file {source}; choose another output path", name)
    folder = target.parent
    if not folder.exists():
        raise UserError(f"folder {str(folder)!r} does not exist", name)
    if not folder.is_dir():
        raise UserError(f"{str(folder)!r} is not a folder", name)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise UserError(f"cannot write ({exc.strerror or exc})", name) from None
    if st is not None:
        kind = _not_regular(st.st_mode)
        if kind:
            raise UserError(f"is {kind}; cannot write a file here", name)
        if not st.st_mode & 0o222:
            raise UserError("file is read-only (no write permission)", name)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"no permission to create files in {str(folder)!r}", name)


def _write_error(exc: OSError, name: str) -> UserError:
    reasons: dict[int | None, str] = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EACCES: "permission denied",
              errno.EPERM: "operation not permitted", errno.EROFS: "read-only file system",
               errno.ENOENT: "folder does not exist", errno.EISDIR: "is a directory"}
    reason = reasons.get(exc.errno, exc.strerror or str(exc))
    return UserError(f"cannot write ({reason})", name)


def _file_mode(target: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


#: the temporary files of the :func:`atomic_path` blocks open now (a set: adding and discarding a str is
#: atomic under the GIL, so a signal handler may read it at any point)
_PENDING: set[str] = set()
#: the targets the :func:`atomic_path` blocks of this process have replaced (a command interrupted
#: after writing says so instead of implying it wrote nothing)
_WRITTEN: list[str] = []


def written_paths() -> list[str]:
    """The files this process has written (replaced atomically), in order."""
    return list(_WRITTEN)


def remove_pending_temporaries() -> None:
    """Delete the temporary file of every :func:`atomic_path` block still open, leaving each target as
    it was: for a signal handler (SIGTERM, SIGINT) that ends the process before those blocks can clean
    up.  Safe there: no lock, no logging, no allocation beyond a copy of the set; errors are ignored
    (a file already gone, or replaced onto its target a moment ago, is no longer ours).  Call it only
    when the process is about to end: a block still running would then fail to replace its target."""
    for tmp in tuple(_PENDING):
        _PENDING.discard(tmp)
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_path(path: str | Path, inputs: Iterable[str | Path | None] = ()) -> Iterator[Path]:
    """A temporary path in ``path``'s folder for a writer that needs a path (e.g. Pyomo's
    ``model.write``); when the block ends without an exception it replaces ``path`` atomically,
    otherwise it is deleted and ``path`` is untouched.  ``OSError`` becomes :class:`UserError`.
    While the block is open the temporary file is listed for :func:`remove_pending_temporaries`.
    """
    target = Path(path)
    name = str(path)
    check_writable(target, inputs)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=f".tmp{target.suffix}")
    except OSError as exc:
        raise _write_error(exc, name) from None
    _PENDING.add(tmp)
    done = False
    try:
        try:
            os.close(fd)
            yield Path(tmp)
            os.chmod(tmp, _file_mode(target))
            os.replace(tmp, target)
            done = True
            _WRITTEN.append(name)
        except OSError as exc:
            raise _write_error(exc, name) from None
    finally:
        _PENDING.discard(tmp)
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_atomic(path: str | Path, text: str | bytes, inputs: Iterable[str | Path | None] = ()) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; see :func:`atomic_path` and :func:`check_writable`."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    with atomic_path(path, inputs) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def write_document(doc: dict[str, Any], path: str | Path, inputs: Iterable[str | Path | None] = ()) -> None:
    """Write the instance ``doc`` as JSON or TOML, by the file's extension, atomically; never a file
    larger than ``file_mb``, which reading it back (``validate``) would refuse."""
    fmt = format_of(path)
    data = (dump_json(doc) if fmt == "json" else dump_toml(doc)).encode("utf-8")
    cap = limits()["file_mb"]
    if len(data) > cap * 2**20:
        raise UserError(f"the instance would be {-(-len(data) // 2**20)} MiB, over the limit file_mb={cap} that reading it "
                        f"back allows; make fewer jobs or servers (--jobs, --servers), or raise the limit with "
                        f"`mlsched --limit file_mb=N ...` (for every command that reads it)", str(path))
    write_atomic(path, data, inputs)


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
