"""Real traces in: ``mlsched import SOURCE --problem P`` turns public data into instances.

A source reader (:mod:`.sources`) reads a window of real jobs into a :class:`~.model.Trace`; the
family's importer (``problems/<family>/trace.py``, registered as ``Family.trace``) turns it into
an instance of that family on a real cluster.  ``gavel`` is not a job trace: it writes the
workload catalog from Gavel's throughput file (:mod:`.gavel`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import OptionError
from ..io.catalog import Catalog
from ..io.files import limits, over_limit
from ..io.shared_data import HINT, looked_in, shared_data_dir
from .model import Cluster, ImportSpec, Node, Trace, TraceJob
from .table import TraceError

__all__ = ["SOURCES", "Cluster", "ImportSpec", "Node", "Trace", "TraceError", "TraceJob", "data_dir", "import_instance",
           "source_options", "source_table"]


@dataclass(frozen=True)
class Source:
    name: str
    summary: str
    read: Callable[[ImportSpec], Trace]
    options: tuple[Any, ...]


def source_table() -> dict[str, Source]:
    from ..problems.base import Option
    from . import sources as s

    start = Option("start", -1, None, "first job of the window, in submission order from 0 (-1: a seeded start)",
                   minimum=-1, maximum=10**7)
    cluster = Option("cluster", "alibaba", ("alibaba", "gavel", "pollux"),
                     "servers: --servers nodes of Alibaba's cluster, or the cluster of the Gavel or Pollux paper")
    return {
        "alibaba": Source("alibaba", "Alibaba production pods on the 1,523-node cluster (ATC 2023)", s.alibaba_pods, (
            Option("pods", "default", tuple(s.ALIBABA_PODS), "pod list: default, gpuspec33 (GPU-model constraints) or multigpu50"),
            start)),
        "philly": Source("philly", "Microsoft Philly jobs: submit time, duration, GPUs (ATC 2019)", s.philly_jobs, (start, cluster)),
        "pollux": Source("pollux", "Pollux workloads: submit time, model, replicas, batch size (OSDI 2021)", s.pollux_jobs, (
            Option("workload", 1, None, "which of Pollux's 8 workloads (workload-K.csv)", minimum=1, maximum=8), start, cluster)),
    }


SOURCES = ("alibaba", "philly", "pollux", "gavel")


def data_dir(given: str | None) -> Path:
    """``--data``, else the shared data folder (:mod:`~mlsched_opt.io.shared_data`: ``$MLSCHED_SHARED_DATA``,
    ``../shared/data`` or ``shared/data`` from the current folder, beside a checkout)."""
    if given:
        path = Path(given)
        if not path.is_dir():
            raise OptionError(f"data folder not found: {given}", field="--data")
        return path
    found = shared_data_dir()
    if found is None:
        raise OptionError(f"no data folder: {HINT} (looked in {looked_in()})", field="--data")
    return found


def source_options(source: str, family: Any) -> tuple[Any, ...]:
    """The ``--set`` options of importing ``source`` into ``family``: the source's, then the family's."""
    src = _source(source)
    own = family.trace.options if family.trace else ()
    names = {o.name for o in src.options}
    return src.options + tuple(o for o in own if o.name not in names)


def _source(source: str) -> Source:
    table = source_table()
    if source not in table:
        raise OptionError(f"unknown source {source!r}; choose from {', '.join(SOURCES)}", field="SOURCE")
    return table[source]


def import_instance(source: str, family: Any, data: Path, jobs: int | None, servers: int | None, slots: int | None,
                    seed: int, sets: Mapping[str, str], catalog: Catalog) -> tuple[dict[str, Any], list[str]]:
    """The instance document of ``family`` from ``source``, and notes for the user (what was taken)."""
    from ..problems.base import parse_values

    src = _source(source)
    if family.trace is None or source not in family.trace.sources:
        feeds = sorted(n for n, f in _families().items() if f.trace and source in f.trace.sources)
        raise OptionError(f"{source} does not feed problem {family.name}; it feeds {', '.join(feeds)}", field="--problem")
    caps = limits()
    for name, value in (("jobs", jobs), ("servers", servers), ("slots", slots)):
        if value is not None and value < 1:
            raise OptionError(f"--{name} must be at least 1, got {value}", field=f"--{name}")
        if value is not None and value > caps[name]:
            raise over_limit(name, value, f"the number of {name}", None, f"--{name}")
    if seed < 0:
        raise OptionError(f"seed must be >= 0, got {seed}", field="--seed")
    options = parse_values(source_options(source, family), sets, "--set", f"importing {source} into {family.name}")
    if options.get("start", -1) < 0:
        options["start"] = None
    spec = ImportSpec(source, family.name, data, jobs, servers, slots, seed, options, dict(sets), [], window_limit=caps["jobs"])
    trace = src.read(spec)
    doc = family.trace.build(trace, spec, catalog)
    _check_built(doc)
    return doc, spec.notes


def _check_built(doc: Mapping[str, Any]) -> None:
    """Refuse an imported instance over the jobs, servers or slots limit naming the flag that makes it
    smaller, before anything reads it back (where the message could only blame the output file)."""
    caps = limits()
    servers = (doc.get("cluster") or {}).get("servers") or []
    counts = {"jobs": len(doc.get("jobs") or []),
              "servers": sum(s.get("count", 1) if isinstance(s, Mapping) else 1 for s in servers),
              "slots": (doc.get("time") or {}).get("slots") or 0}
    for name, value in counts.items():
        if isinstance(value, int) and value > caps[name]:
            raise over_limit(name, value, f"the imported instance's number of {name}", None, f"--{name}")


def _families() -> Mapping[str, Any]:
    from ..problems import REGISTRY

    return REGISTRY


def describe(trace: Trace, cluster: Cluster | None, spec: ImportSpec, extra: list[str] | tuple[str, ...] = ()) -> str:
    """The instance's ``source``: the command, the trace window, the cluster, every assumption."""
    parts = [spec.command(), trace.provenance()]
    if cluster is not None:
        parts.append(cluster.provenance)
    parts += list(extra)
    return "; ".join(parts)
