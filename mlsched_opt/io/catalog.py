"""The workload catalog: one TOML file per DNN training workload under ``models/``.

Instances name a workload (``jobs[i].model``) instead of repeating its figures; a job may
replace catalog fields with ``jobs[i].overrides``.  Each entry is validated against
``workload.schema.json`` when the catalog is loaded, so a typo in a catalog file is caught as
early as one in an instance.

Where the catalog comes from:

- the *shipped* catalog (:func:`shipped_catalog_dir`): the repository's ``models/`` when
  mlsched_opt runs from a source checkout (editable install, ``PYTHONPATH``), else the copy
  installed with the package as package data (``mlsched_opt/models`` in the wheel);
- a *user* catalog (``--catalog DIR`` / ``$MLSCHED_CATALOG``) lies on top of it: its entries
  are added to the shipped ones, and an entry with a shipped name replaces that entry whole
  (field-level changes belong in ``jobs[i].overrides``).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InstanceError
from .files import limits, over_limit, read_document
from .schema import SchemaViolation, join, load_schema, validate

ENV_VAR = "MLSCHED_CATALOG"


def shipped_catalog_dir() -> Path:
    """The catalog that comes with mlsched-opt (the trained harmony policy sits in it too): the
    checkout's ``models/`` when running from a source checkout, else the installed package data."""
    return _shipped_dir()


@cache
def _shipped_dir() -> Path:
    root = Path(__file__).resolve().parents[2]
    try:  # a checkout: models/ beside this project's pyproject.toml (not any folder called models)
        if (root / "models").is_dir() and 'name = "mlsched-opt"' in (root / "pyproject.toml").read_text(encoding="utf-8"):
            return root / "models"
    except OSError:
        pass
    # an installed wheel: models/ is mapped into the package at build time (pyproject.toml)
    return Path(str(resources.files("mlsched_opt").joinpath("models")))


def default_catalog_dir() -> Path:
    """``$MLSCHED_CATALOG`` if set, else the shipped catalog (:func:`shipped_catalog_dir`)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    return shipped_catalog_dir()


def catalog_dirs(directory: str | Path | None = None) -> tuple[Path, ...]:
    """The catalog's layers, bottom first: the shipped catalog, then ``directory`` (default
    ``$MLSCHED_CATALOG``) when one is given and is not the shipped catalog itself."""
    base = shipped_catalog_dir().resolve()
    top = directory or os.environ.get(ENV_VAR)
    if not top:
        return (base,)
    top_dir = Path(top).resolve()
    return (base,) if top_dir == base else (base, top_dir)


@dataclass(frozen=True)
class Workload:
    """One catalog entry, validated; ``data`` is the document as written."""

    name: str
    data: Mapping[str, Any] = field(repr=False)

    @property
    def gradient_mb(self) -> float | None:
        size = self.data.get("size")
        return None if size is None else float(size["gradient_mb"])

    def throughput_samples_per_s(self, gpu_model: str, gpus: int = 1, placement: str = "consolidated") -> float | None:
        """Measured samples/s on ``gpus`` GPUs of ``gpu_model``, or ``None`` when not measured."""
        for row in self.data.get("throughput", []):
            if (row["gpu_model"], row["gpus"], row.get("placement", "consolidated")) == (gpu_model, gpus, placement):
                return row["steps_per_s"] * row["batch_size"] * gpus
        return None

    def with_overrides(self, overrides: Mapping[str, Any], file: str | None, path: str) -> Workload:
        """A copy with top-level fields replaced, validated like a catalog file (errors name ``path``)."""
        if "name" in overrides:
            raise InstanceError("the catalog name cannot be overridden; use a different model", file, join(path, "name"))
        merged = {**self.data, **overrides}
        _validate(merged, file, path)
        return Workload(self.name, merged)


def _validate(doc: dict[str, Any], file: str | None, prefix: str = "") -> None:
    try:
        validate(doc, load_schema("workload"))
    except SchemaViolation as exc:
        raise InstanceError(exc.reason, file, join(prefix, exc.path) if prefix else exc.path or None) from None


class Catalog(Mapping[str, Workload]):
    """Workloads by name, read from directories of ``*.toml`` / ``*.json`` files (the layers,
    bottom first; an entry of a higher layer replaces one of the same name below it).

    ``directory`` is the top layer: the user catalog when there is one, else the shipped one;
    ``load_catalog(catalog.directory)`` loads the same catalog again.
    """

    def __init__(self, workloads: dict[str, Workload], directory: Path, directories: tuple[Path, ...] = ()):
        self._workloads = workloads
        self.directory = directory
        self.directories = directories or (directory,)

    def __getitem__(self, name: str) -> Workload:
        return self._workloads[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._workloads))

    def __len__(self) -> int:
        return len(self._workloads)

    def lookup(self, name: str, file: str | None, path: str) -> Workload:
        """The workload called ``name``, or an :class:`InstanceError` suggesting close names."""
        if name in self._workloads:
            return self._workloads[name]
        close = difflib.get_close_matches(name, list(self._workloads), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(self)}"
        where = " over ".join(str(d) for d in reversed(self.directories))
        raise InstanceError(f"unknown model {name!r} (catalog {where}){hint}", file, path)


@cache
def _load_layers(directories: tuple[str, ...]) -> Catalog:
    workloads: dict[str, Workload] = {}
    for directory in directories:
        workloads.update(_load_directory(directory))
    paths = tuple(Path(d) for d in directories)
    return Catalog(workloads, paths[-1], paths)


@cache
def _load_directory(directory: str) -> dict[str, Workload]:
    root = Path(directory)
    if not root.is_dir():
        raise InstanceError(f"workload catalog directory not found (set ${ENV_VAR} or pass --catalog)", directory)
    workloads: dict[str, Workload] = {}
    for path in _entry_files(root, directory):
        doc = read_document(path)
        _validate(doc, str(path))
        if doc["name"] != path.stem:
            raise InstanceError(f"name {doc['name']!r} must match the file name {path.stem!r}", str(path), "name")
        workloads[doc["name"]] = Workload(doc["name"], doc)
    return workloads


def _entry_files(root: Path, directory: str) -> list[Path]:
    """The folder's entry files (``*.toml``, ``*.json``) in name order, refused by their number
    (``catalog_entries``) before one is read: reading and validating an entry takes about a
    millisecond, so a folder of 100,000 kept ``validate`` busy past two minutes."""
    try:
        with os.scandir(root) as listing:
            paths = [Path(entry.path) for entry in listing if Path(entry.name).suffix in (".toml", ".json")]
    except OSError as exc:
        raise InstanceError(f"cannot read the workload catalog folder ({exc.strerror or exc})", directory) from None
    if len(paths) > limits()["catalog_entries"]:
        raise over_limit("catalog_entries", len(paths), "the number of catalog entries (.toml and .json files)", directory, None)
    return sorted(paths)


def load_catalog(directory: str | Path | None = None) -> Catalog:
    """Load (once per directory and process) the shipped catalog with ``directory`` (default
    ``$MLSCHED_CATALOG``, if set) on top of it; see :func:`catalog_dirs`."""
    return _load_layers(tuple(str(d) for d in catalog_dirs(directory)))
