"""Where the shared public data sets live (read at run time, never copied into the repository).

The folder is, in order: the command's ``--data DIR`` (:func:`use_data`, for the files a family
reads itself, e.g. Pollux's placements for ``calibration=pollux``), ``$MLSCHED_SHARED_DATA``
(authoritative when set: a wrong path is reported, not passed over), ``../shared/data`` and
``shared/data`` from the current folder, then ``../shared/data`` (or one level further up) beside
the checkout, for a checkout or an editable install.  An installed wheel has no checkout: the
folder it lives in (``site-packages``) is never searched nor named in a message.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from ..errors import UserError

#: The folder holding the package: a checkout's root, or ``site-packages`` for an installed wheel.
ROOT = Path(__file__).resolve().parents[2]
ENV = "MLSCHED_SHARED_DATA"
HINT = f"pass --data DIR or set {ENV}"
_CHOSEN: ContextVar[Path | None] = ContextVar("mlsched_shared_data", default=None)


@contextmanager
def use_data(folder: Path | str) -> Iterator[None]:
    """Within: ``folder`` (a command's ``--data``) is the shared data folder, for every file read from it."""
    token = _CHOSEN.set(Path(folder))
    try:
        yield
    finally:
        _CHOSEN.reset(token)


def is_checkout(root: Path) -> bool:
    """Whether ``root`` is the repository (a checkout or an editable install), not ``site-packages``."""
    return (root / "pyproject.toml").is_file() and (root / "mlsched_opt").is_dir()


def candidates() -> list[tuple[str, Path]]:
    """``(how the user would name it, folder)`` in the order they are tried (see the module docstring)."""
    chosen = _CHOSEN.get()
    if chosen is not None:
        return [("--data", chosen)]
    env = os.environ.get(ENV)
    if env:
        return [(f"${ENV}", Path(env))]
    here = Path.cwd()
    out = [("../shared/data", here.parent / "shared" / "data"), ("shared/data", here / "shared" / "data")]
    if is_checkout(ROOT):
        out += [("beside the checkout", ROOT.parent / "shared" / "data"), ("beside the checkout", ROOT.parent.parent / "shared" / "data")]
    return out


def shared_data_dir() -> Path | None:
    """The first folder of :func:`candidates` that exists, or ``None``."""
    return next((path for _, path in candidates() if path.is_dir()), None)


def looked_in() -> str:
    """Where the folder was looked for, for a message: what the user can act on, never ``site-packages``."""
    places = []
    for name, path in candidates():
        if name.startswith(("$", "--")):
            places.append(f"{name} = {path}" + ("" if path.is_dir() else " (not a folder)"))
        elif name == "beside the checkout":
            places.append(str(path))
        else:
            places.append(f"{name} from {Path.cwd()}")
    return ", ".join(dict.fromkeys(places))


def shared_file(relative: str) -> Path:
    """A file of the shared data, or a :class:`UserError` that says where it was looked for and what to do."""
    base = shared_data_dir()
    path = base / relative if base else None
    if path is None or not path.is_file():
        where = f"not in {base}" if base else f"no data folder (looked in {looked_in()})"
        raise UserError(f"shared data file not found: {where}; {HINT} (the folder with the layout of ../shared/data)", file=relative)
    return path
