"""Reading trace files: typed CSV columns, errors that name the file, the row and the column.

Trace files are large (82,247 Philly rows), so rows are read once, streaming, into plain lists;
no row is kept as a dict.  A row is numbered as a spreadsheet shows it: the header is row 1.
What one file may make us read is bounded as it streams: at most ``trace_rows`` data rows (a
limit, :func:`mlsched_opt.io.files.limits`) and lines of at most :data:`MAX_LINE_CHARS`
characters, each refused at the row where it is passed, before the rest is read.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..io.files import ENV_LIMITS, limits

#: Largest trace file read (bytes); the shared data's largest is 3.7 MB.
MAX_TRACE_BYTES = 512 * 2**20
#: Longest line of a trace file (characters): the shared data's longest is under 200; a line of
#: millions of commas would otherwise become a row of millions of cells in memory
MAX_LINE_CHARS = 2**20


class TraceError(UserError):
    """A trace file is missing, malformed, or does not hold what an import needs."""


def at(row: int, column: str | None = None) -> str:
    """The field part of a trace error: ``row 17, column duration``."""
    return f"row {row}" + (f", column {column}" if column else "")


def _number(text: str) -> float:
    if "_" in text:  # Python's float() takes 1_000; a CSV number does not
        raise ValueError("digit separator")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("not finite")
    return value


def _integer(text: str) -> int:
    value = _number(text)
    if not value.is_integer():
        raise ValueError("not an integer")
    return int(value)


def _timestamp(text: str) -> float:
    # ISO 8601 (Philly: "2017-10-09 07:01:55"; fromisoformat is C code, 10x strptime). A stamp
    # without a zone is read as UTC, so the result does not depend on the machine's zone.
    stamp = datetime.fromisoformat(text)
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


def _text(text: str) -> str:
    return text


#: column kind -> (parser, what the message says it must be)
KINDS: dict[str, tuple[Callable[[str], object], str]] = {
    "number": (_number, "a finite number"),
    "integer": (_integer, "an integer"),
    "timestamp": (_timestamp, "an ISO time such as 2017-10-09 07:01:55"),
    "text": (_text, "text"),
}


#: Largest number a trace cell may hold unless its column says less (io.schema.MAX_NUMBER, 2**53).
MAX_CELL = float(2**53)


@dataclass(frozen=True)
class Column:
    """A column a reader needs: its name, kind, whether it may be empty, and its value range."""

    name: str
    kind: str = "number"
    optional: bool = False
    minimum: float | None = None
    maximum: float = MAX_CELL


def data_file(data: Path, relative: str) -> Path:
    """``data / relative``, or a :class:`TraceError` naming it (a regular file is required)."""
    path = data / relative
    if not path.is_file():
        where = "not found" if not path.exists() else "not a regular file"
        raise TraceError(f"trace file {where} (the data folder is --data or $MLSCHED_SHARED_DATA, in the layout of "
                         f"../shared/data)", str(path))
    if path.stat().st_size > MAX_TRACE_BYTES:
        raise TraceError(f"trace file larger than {MAX_TRACE_BYTES >> 20} MB", str(path))
    return path


def header(path: Path) -> set[str]:
    """The header row's column names, parsed as :func:`read_rows` parses them (for optional columns)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            first = next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return set()  # read_rows reports it, with the row
    return {h.strip() for h in first}


def bounded_lines(fh: Any, name: str) -> Iterator[str]:
    """The file's lines, each refused when longer than :data:`MAX_LINE_CHARS` before more of it is read."""
    number = 0
    while True:
        line = fh.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise TraceError(f"line {number:,} is longer than {MAX_LINE_CHARS:,} characters; a trace line is a few dozen", name)
        yield line


def too_many_rows(name: str, number: int) -> TraceError:
    """The error for a trace file with more data rows than the limit ``trace_rows`` (``number``: the first row over)."""
    cap = limits()["trace_rows"]
    return TraceError(f"the file has more than {cap:,} data rows, over the limit trace_rows={cap} "
                      f"(raise it with `mlsched --limit trace_rows=N ...` or ${ENV_LIMITS}=trace_rows=N)", name, at(number))


# values are Any: each one's type follows its Column's kind, which a static list type cannot carry
def read_rows(path: Path, columns: list[Column]) -> Iterator[tuple[int, list[Any]]]:
    """``(row number, values)`` for each data row, values parsed by ``columns`` (``None`` for an
    empty optional cell).  A missing column, a short row or a bad cell is a :class:`TraceError`;
    so is a file of more than ``trace_rows`` data rows, refused at the first row over, unread beyond it."""
    name = str(path)
    most = limits()["trace_rows"] + 1  # the header is row 1
    try:
        # outside `with` so that only the open maps to "cannot read"; a spreadsheet's byte-order mark is not part of the header
        fh = open(path, newline="", encoding="utf-8-sig")  # noqa: SIM115
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror}", name) from None
    with fh:
        reader = csv.reader(bounded_lines(fh, name))
        try:
            header = next(reader, None)
            if header is None:
                raise TraceError("empty file (no header row)", name, at(1))
            index = {h.strip(): i for i, h in enumerate(header)}
            missing = [c.name for c in columns if c.name not in index]
            if missing:
                raise TraceError(f"missing column {', '.join(missing)} (header has {', '.join(header)})", name,
                                 at(1, missing[0]))
            picks = [(index[c.name], c, *KINDS[c.kind]) for c in columns]
            for number, row in enumerate(reader, start=2):
                if number > most:
                    raise too_many_rows(name, number)
                if not row:
                    continue
                values: list[object] = []
                for i, col, parse, what in picks:
                    cell = row[i].strip() if i < len(row) else None
                    if cell is None:
                        raise TraceError(f"row has {len(row)} cells, fewer than the header's {len(header)}", name, at(number))
                    if cell == "":
                        if not col.optional:
                            raise TraceError(f"empty cell; must be {what}", name, at(number, col.name))
                        values.append(None)
                        continue
                    try:
                        value = parse(cell)
                    except (ValueError, OverflowError):
                        raise TraceError(f"{cell[:40]!r} is not {what}", name, at(number, col.name)) from None
                    if col.minimum is not None and value < col.minimum:  # type: ignore[operator]
                        raise TraceError(f"{cell!r} is below {col.minimum:g}", name, at(number, col.name))
                    if col.kind in ("number", "integer") and value > col.maximum:  # type: ignore[operator]
                        raise TraceError(f"{cell[:40]!r} is above {col.maximum:g}", name, at(number, col.name))
                    values.append(value)
                yield number, values
        except UnicodeDecodeError:
            raise TraceError("not UTF-8 text", name) from None
        except csv.Error as exc:
            raise TraceError(f"not a CSV file ({exc})", name, at(reader.line_num)) from None
