"""The facade's own functions (``import mlsched_opt as ms``): reading, generating, the registry.

``ms.solve``, ``ms.compare`` and ``ms.check`` are the pipeline's (:mod:`mlsched_opt.pipeline`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .io.instance import Instance
    from .problems.base import Family


def load(path: str | Path, catalog: str | Path | None = None) -> Instance:
    """Read, validate and resolve an instance file (``.toml`` or ``.json``); ``catalog`` is a workload
    catalog of your own laid over the shipped one (as ``mlsched --catalog``).

    Raises :class:`~mlsched_opt.errors.UserError` naming the file and the field for anything wrong."""
    from .io import load_instance

    return load_instance(path, catalog=catalog)


def generate(problem: str, *, jobs: int, servers: int, seed: int, slots: int | None = None,
             options: Mapping[str, Any] | None = None, catalog: str | Path | None = None) -> Instance:
    """A random instance of ``problem``, as ``mlsched generate`` writes it (same seed, same instance);
    ``options`` are the family's generator options (``mlsched info`` lists them)."""
    from .io import from_document, load_catalog

    cat = load_catalog(catalog)
    return from_document(generated_document(problem, jobs, servers, seed, slots, options, cat), catalog=cat)


def check_sizes(sizes: Mapping[str, int | None], prefix: str = "") -> None:
    """Sizes asked for (``jobs``, ``servers``, ``slots``) at least 1 and within the limits, refused before
    anything is drawn or read; the field is named ``prefix + name`` (``--jobs`` on the command line)."""
    from .errors import OptionError
    from .io.files import limits, over_limit

    caps = limits()
    for name, value in sizes.items():
        if value is None:
            continue
        if value < 1:
            raise OptionError(f"{name} must be >= 1, got {value}", field=prefix + name)
        if value > caps[name]:
            raise over_limit(name, value, f"the number of {name}", None, prefix + name)


def generated_document(problem: str, jobs: int, servers: int, seed: int, slots: int | None,
                       options: Mapping[str, Any] | None, catalog: Any, prefix: str = "") -> dict[str, Any]:
    """The instance document ``mlsched generate`` writes and :func:`generate` reads, validated (a
    generator's bug must not produce an invalid file); fields named with ``prefix``."""
    from .errors import OptionError
    from .io import from_document
    from .problems import GenerateSpec, get_family

    if seed < 0:
        raise OptionError(f"seed must be >= 0, got {seed}", field=prefix + "seed")
    check_sizes({"jobs": jobs, "servers": servers, "slots": slots}, prefix)
    family = get_family(problem)
    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed, slots=slots,
                        options=family.parse_generate_options(dict(options or {})))
    doc = family.generate(spec, catalog)
    from_document(doc, catalog=catalog)
    return doc


def import_trace(source: str, problem: str, *, jobs: int | None = None, servers: int | None = None, slots: int | None = None,
                 seed: int = 0, options: Mapping[str, Any] | None = None, data: str | Path | None = None,
                 catalog: str | Path | None = None) -> Instance:
    """A real public trace as an instance of ``problem``, as ``mlsched import`` writes it (same arguments,
    same instance): ``source`` is ``alibaba``, ``philly`` or ``pollux``; ``options`` the source's and the
    family's import options (``mlsched info``); ``data`` the folder of the data sets (default
    ``$MLSCHED_SHARED_DATA``, else ``../shared/data``).  The instance's ``source`` field names every
    assumption."""
    from .io import from_document, load_catalog
    from .io.shared_data import use_data
    from .problems import get_family
    from .traces import data_dir, import_instance

    family = get_family(problem)
    folder = data_dir(None if data is None else str(data))
    cat = load_catalog(catalog)
    with use_data(folder):
        doc, _notes = import_instance(source, family, folder, jobs, servers, slots, seed,
                                      {k: str(v) for k, v in (options or {}).items()}, cat)
    return from_document(doc, catalog=cat)


def families() -> Mapping[str, Family]:
    """The registry: problem name -> :class:`~mlsched_opt.problems.base.Family`, read only."""
    from .problems import REGISTRY

    return MappingProxyType({name: REGISTRY[name] for name in REGISTRY})


def family(name: str) -> Family:
    """One family of the registry (its ``methods``, ``options``, ``sense``, ...), or a
    :class:`~mlsched_opt.errors.OptionError` naming the known ones."""
    from .problems import get_family

    return get_family(name)
