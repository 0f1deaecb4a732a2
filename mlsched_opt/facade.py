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
    """Read, validate and resolve an instance file (``.toml`` or ``.json``), or a bundled example by
    name (``ms.load("demo")``, :func:`examples`); ``catalog`` is a workload catalog of your own laid
    over the shipped one (as ``mlsched --catalog``).

    Raises :class:`~mlsched_opt.errors.UserError` naming the file and the field for anything wrong."""
    from .io import load_instance

    return load_instance(instance_path(path), catalog=catalog)


def examples() -> Mapping[str, Path]:
    """The bundled example instances, name -> file (``demo``, ``oasis-toy``, ...): the checkout's
    ``instances/`` in a source checkout, else the copy installed with the package (``mlsched_opt/instances``)."""
    from .io.catalog import shipped_catalog_dir

    # both sit beside the shipped catalog: instances/ next to models/ in a checkout, and
    # mlsched_opt/instances next to mlsched_opt/models in a wheel (pyproject.toml maps both)
    folder = shipped_catalog_dir().parent / "instances"
    files = sorted(folder.glob("*.toml")) if folder.is_dir() else []
    return MappingProxyType({f.stem: f for f in files})


def instance_path(path: str | Path) -> str | Path:
    """``path`` itself when it names a file (a real file always wins), else the bundled example of that
    name; a bare name (no folder, no suffix) that is neither is refused listing the bundled names.
    Anything else is returned as given, for the reader to say why it cannot be read."""
    from .errors import InstanceError

    if not isinstance(path, str | Path):
        raise InstanceError(f"expected a file path or a bundled example's name (str or Path), got {type(path).__name__}",
                            field="path")
    given = Path(path)
    try:
        if given.exists() or str(path) != given.name or given.suffix:
            return path
    except (OSError, ValueError):  # a NUL byte, a name too long: the reader says so, naming the file
        return path
    bundled = examples()
    if given.name in bundled:
        return bundled[given.name]
    raise InstanceError(f"no such file, nor a bundled example (bundled: {', '.join(bundled) or 'none'})", str(path))


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
