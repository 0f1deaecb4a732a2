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

    need("catalog", catalog, str | Path, "a folder (str or Path) or None", optional=True)
    return load_instance(instance_path(path), catalog=catalog)


def _type_name(value: Any) -> str:
    return "a bool" if isinstance(value, bool) else f"{type(value).__name__} {value!r}"[:80]


def need_int(name: str, value: Any, low: int, high: int | None = None, optional: bool = False) -> None:
    """``value`` an int (a bool is not one) in ``[low, high]``, else an :class:`ArgumentError` naming ``name``."""
    from .errors import ArgumentError

    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"expected a whole number (int), got {_type_name(value)}", field=name)
    if value < low or (high is not None and value > high):
        span = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ArgumentError(f"must be {span}, got {value}", field=name)


def need_real(name: str, value: Any, low: float, high: float, *, open_low: bool = False, open_high: bool = False) -> None:
    """``value`` a finite real number (int or float, not a bool) within the bounds, else an :class:`ArgumentError`."""
    import math

    from .errors import ArgumentError

    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentError(f"expected a number, got {_type_name(value)}", field=name)
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not (math.isfinite(number) and (low < number if open_low else low <= number) and (number < high if open_high else number <= high)):
        span = f"{'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
        raise ArgumentError(f"must be a finite number in {span}, got {str(value)[:40]}", field=name)


def need(name: str, value: Any, kinds: Any, what: str, optional: bool = False) -> None:
    """``value`` an instance of ``kinds`` (or None when ``optional``), else an :class:`ArgumentError`."""
    from .errors import ArgumentError

    if value is None and optional:
        return
    if not isinstance(value, kinds):
        raise ArgumentError(f"expected {what}, got {_type_name(value)}", field=name)


#: the longest a run may be given (a year): a larger limit is a mistake, and deadlines stay finite floats
MAX_TIME_LIMIT_S = 365 * 86400.0


def check_solve_arguments(*, method: Any = "exact", problem: Any = None, solver: Any = None, time_limit: Any = 60.0,
                          gap: Any = 1e-6, threads: Any = None, seed: Any = 0, certify: Any = True, bound: Any = True,
                          options: Any = None, catalog: Any = None) -> None:
    """What ``ms.solve`` and ``ms.compare`` share, checked before anything runs: each wrong type or value
    is an :class:`~mlsched_opt.errors.ArgumentError` naming the keyword argument."""
    from .report import MAX_THREADS

    need("method", method, str, "a method name (str)")
    need("problem", problem, str, "a problem name (str) or None", optional=True)
    need("solver", solver, str, "a solver name (str) or None", optional=True)
    need_real("time_limit", time_limit, 0, MAX_TIME_LIMIT_S, open_low=True)
    need_real("gap", gap, 0, 1, open_high=True)
    need_int("threads", threads, 1, MAX_THREADS, optional=True)
    need_int("seed", seed, 0, 2**31 - 1)
    need("certify", certify, bool, "True or False")
    need("bound", bound, bool, "True or False")
    need_options(options)
    need("catalog", catalog, str | Path, "a folder (str or Path) or None", optional=True)


def need_options(options: Any, name: str = "options") -> None:
    """Problem options: None or a mapping of option names (str) to values."""
    from .errors import ArgumentError

    need(name, options, Mapping, "a mapping of option names to values, or None", optional=True)
    for key in options or {}:
        if not isinstance(key, str):
            raise ArgumentError(f"option names are strings, got {_type_name(key)}", field=name)


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
    from .errors import ArgumentError, InstanceError

    if not isinstance(path, str | Path):
        raise ArgumentError(f"expected a file path or a bundled example's name (str or Path), got {type(path).__name__}",
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

    need("problem", problem, str, "a problem name (str)")
    need_int("jobs", jobs, 1)
    need_int("servers", servers, 1)
    need_int("seed", seed, 0)
    need_int("slots", slots, 1, optional=True)
    need_options(options)
    need("catalog", catalog, str | Path, "a folder (str or Path) or None", optional=True)
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

    need("source", source, str, "a trace source name (str)")
    need("problem", problem, str, "a problem name (str)")
    for key, value in (("jobs", jobs), ("servers", servers), ("slots", slots)):
        need_int(key, value, 1, optional=True)
    need_int("seed", seed, 0)
    need_options(options)
    need("data", data, str | Path, "a folder (str or Path) or None", optional=True)
    need("catalog", catalog, str | Path, "a folder (str or Path) or None", optional=True)
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

    need("name", name, str, "a problem name (str)")
    return get_family(name)
