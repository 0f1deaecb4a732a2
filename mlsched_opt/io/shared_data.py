"""Where the shared public data sets live (read at run time, never copied into the repository)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UserError

ROOT = Path(__file__).resolve().parents[2]


def shared_data_dir() -> Path | None:
    """``$MLSCHED_SHARED_DATA``, or ``shared/data`` beside the repository (or one level further up)."""
    for candidate in (os.environ.get("MLSCHED_SHARED_DATA"), ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def shared_file(relative: str) -> Path:
    """A file of the shared data, or a :class:`UserError` that says where it was looked for."""
    base = shared_data_dir()
    path = base / relative if base else None
    if path is None or not path.is_file():
        raise UserError(f"shared data file not found; set MLSCHED_SHARED_DATA to the folder holding it "
                        f"(looked in $MLSCHED_SHARED_DATA and {ROOT.parent / 'shared' / 'data'})", file=relative)
    return path
