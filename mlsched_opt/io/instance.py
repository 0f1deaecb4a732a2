"""The instance: a cluster, an optional time horizon, and the jobs.

One format serves every problem family (``instance.schema.json``; reference in
``docs/reference/instance-format.md``).  Loading runs three layers of checks, each ending in a
:class:`~mlsched_opt.errors.InstanceError` that names the file and the field path:

1. parsing (:mod:`mlsched_opt.io.files`): bad bytes, bad syntax, truncation;
2. the schema: types, ranges, required and unknown fields;
3. meaning: unique names, ``min <= max``, known catalog models, and every job's worker
   and parameter server fitting on at least one server allowed to host it.

Problem families then take the view they need (:meth:`Instance.resource_names`,
:meth:`Instance.capacity_matrix`, ...) and name any field they require that is absent.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InstanceError, ModelTooLarge
from .catalog import Catalog, Workload, load_catalog
from .files import canonical_json, limits, over_limit, read_document
from .schema import SchemaViolation, join, load_schema, validate

FORMAT = "mlsched-instance/1"
#: The smallest magnitude a nonzero number of an instance may have.  No quantity of the format is
#: meaningful below a billionth of its unit (GPUs, GB, Gbit/s, seconds, samples, slots), and with
#: every magnitude in [1e-9, 2**53] a quotient of two numbers is at most 1e25 and a product at
#: least 1e-18: the times, rates and utilities derived from a few of them stay finite and nonzero,
#: where 5e-324 as a divisor (a demand, a throughput, a delay_scale) overflows them to inf or NaN.
MIN_MAGNITUDE = 1e-9
STANDARD_RESOURCES = ("gpu", "cpu", "memory_gb", "bandwidth_gbps", "storage_gb")
ROLES = ("any", "worker", "ps")


def resource_vector(spec: Mapping[str, Any] | None) -> dict[str, float]:
    """Flatten a resources object (standard fields plus ``extra``) into ``{name: amount}``."""
    if not spec:
        return {}
    out = {k: float(v) for k, v in spec.items() if k != "extra"}
    out.update({k: float(v) for k, v in spec.get("extra", {}).items()})
    return out


@dataclass(frozen=True)
class Range:
    """An inclusive integer range; a fixed count has ``lo == hi``."""

    lo: int
    hi: int

    @property
    def fixed(self) -> bool:
        return self.lo == self.hi

    @classmethod
    def parse(cls, spec: Mapping[str, int]) -> Range:
        if "count" in spec:
            return cls(spec["count"], spec["count"])
        return cls(spec["min"], spec["max"])


@dataclass(frozen=True)
class Utility:
    """A non-increasing utility of the completion delay ``d``.

    ``sigmoid``: ``gamma1 / (1 + exp(gamma2 (d - gamma3)))`` (OASiS, SMD; ``gamma2 = 0`` gives
    the constant ``gamma1 / 2``); ``linear``: ``max(0, value - slope d)``; ``step``: ``value``
    when ``d <= deadline`` else 0; ``table``: ``values[ceil(d)]``, 0 past the end.
    """

    kind: str
    params: Mapping[str, float]
    delay_unit: str = "slots"
    delay_scale: float = 1.0
    values: tuple[float, ...] = ()

    def __call__(self, delay: float | np.ndarray) -> float | np.ndarray:
        d = np.asarray(delay, dtype=float) / self.delay_scale
        p = self.params
        if self.kind == "sigmoid":
            # exp overflow for very late completions is harmless: utility tends to 0; a zero decay is
            # the constant gamma1/2 even for an infinite delay (0 * inf would be NaN)
            with np.errstate(over="ignore"):
                exponent = p["gamma2"] * (d - p["gamma3"]) if p["gamma2"] else np.zeros_like(d)
                out = p["gamma1"] / (1.0 + np.exp(exponent))
        elif self.kind == "linear":
            out = np.maximum(0.0, p["value"] - p["slope"] * d) if p["slope"] else np.full_like(d, p["value"])
        elif self.kind == "table":
            # the table is exact at integer delays; a tiny float excess must not push d to the next entry.
            # Past the end every delay reads 0: clip before the integer cast, which a delay beyond
            # 2**63 (a small delay_scale) would otherwise wrap to a negative index
            k = np.ceil(np.clip(d, 0.0, len(self.values)) - 1e-9).astype(int)
            table = np.append(np.asarray(self.values, dtype=float), 0.0)
            out = table[np.minimum(k, len(self.values))]
        else:
            out = np.where(d <= p["deadline"], p["value"], 0.0)
        return float(out) if np.ndim(out) == 0 else out

    @classmethod
    def parse(cls, spec: Mapping[str, Any]) -> Utility:
        params = {k: float(v) for k, v in spec.items() if k not in ("kind", "delay_unit", "delay_scale", "values")}
        values = tuple(float(v) for v in spec.get("values", ()))
        return cls(spec["kind"], params, spec.get("delay_unit", "slots"), float(spec.get("delay_scale", 1.0)), values)


@dataclass(frozen=True)
class Server:
    """One server (a group with ``count = n`` expands to ``n`` servers).

    ``field_path`` is where its group sits in the instance file (``cluster.servers[3]``), so that an
    error about the server names the field to fix without going back to the raw document.
    """

    index: int
    name: str
    group: str
    role: str
    gpu_model: str | None
    rack: str | None
    capacity: Mapping[str, float]
    field_path: str

    def hosts(self, task: str) -> bool:
        """Whether this server may host a ``"worker"`` or a ``"ps"``."""
        return self.role in ("any", task)


@dataclass(frozen=True)
class Job:
    """One training job, with catalog overrides already applied to ``workload``."""

    index: int
    id: str
    model: str | None
    workload: Workload | None
    arrival_slot: int
    architecture: str
    sgd: str
    work: Mapping[str, float] | None
    global_batch_size: int | None
    local_batch_size: int | None
    worker_demand: Mapping[str, float]
    ps_demand: Mapping[str, float]
    workers: Range
    ps: Range
    utility: Utility | None
    weight: float
    gpu_models: tuple[str, ...] | None
    limit: Mapping[str, float] | None = None
    speed_model: Mapping[str, Any] | None = None
    step: Mapping[str, float] | None = None
    data_parallel: Mapping[str, Any] | None = None

    @property
    def path(self) -> str:
        """This job's field path in the instance file, for messages."""
        return f"jobs[{self.index}]"

    def may_run_on(self, server: Server, task: str) -> bool:
        """Role and GPU-model eligibility of ``server`` for one ``task`` (``worker``/``ps``) of this job."""
        if not server.hosts(task):
            return False
        return task == "ps" or self.gpu_models is None or server.gpu_model in self.gpu_models

    def demand(self, task: str) -> Mapping[str, float]:
        return self.worker_demand if task == "worker" else self.ps_demand

    @property
    def iterations(self) -> float | None:
        """Total iterations when the work is given as iterations or epochs x chunks x mini-batches."""
        if self.work is None:
            return None
        if "iterations" in self.work:
            return float(self.work["iterations"])
        if "chunks" in self.work:
            w = self.work
            return float(w["epochs"] * w["chunks"] * w["minibatches_per_chunk"])
        return None


@dataclass(frozen=True)
class Instance:
    """A parsed, validated instance.  ``document`` is the file's content as read."""

    name: str
    file: str | None
    document: Mapping[str, Any] = field(repr=False)
    servers: tuple[Server, ...]
    jobs: tuple[Job, ...]
    slots: int | None
    slot_s: float
    intra_server_bandwidth_gbps: float | None
    inter_server_bandwidth_gbps: float | None
    default_problem: str | None
    catalog: Catalog | None = field(repr=False, default=None)
    #: problem options stated in the file (``options``); ``--set`` overrides them
    options: Mapping[str, Any] = field(default_factory=dict)
    if TYPE_CHECKING:  # set by __post_init__; declared for the type checker only, so not dataclass fields
        _server_index: dict[str, Server] = field(init=False, repr=False, compare=False)
        _job_index: dict[str, Job] = field(init=False, repr=False, compare=False)

    @cached_property
    def sha256(self) -> str:
        """Hash of the content (not the layout): the JSON and TOML forms of one instance agree.
        Computed once (a solve asks for it several times; at 100,000 jobs it takes seconds)."""
        return hashlib.sha256(canonical_json(self.document).encode()).hexdigest()

    def __repr__(self) -> str:
        gpus = sum(s.capacity.get("gpu", 0) for s in self.servers)
        where = f", file={self.file!r}" if self.file else ""
        horizon = f", {self.slots} slots" if self.slots else ""
        return (f"Instance({self.name!r}, problem={self.default_problem!r}, {len(self.jobs)} jobs, {len(self.servers)} servers "
                f"({gpus:g} GPUs){horizon}{where})")

    def resource_names(self) -> list[str]:
        """Every resource any server or job mentions, standard ones first."""
        seen = {r for s in self.servers for r in s.capacity}
        seen |= {r for j in self.jobs for r in (*j.worker_demand, *j.ps_demand)}
        extras = sorted(seen - set(STANDARD_RESOURCES))
        return [r for r in STANDARD_RESOURCES if r in seen] + extras

    def capacity_matrix(self, resources: list[str] | None = None) -> np.ndarray:
        """Capacities as an array of shape (servers, resources)."""
        names = resources or self.resource_names()
        return np.array([[s.capacity.get(r, 0.0) for r in names] for s in self.servers], dtype=float)

    def demand_matrix(self, task: str, resources: list[str] | None = None) -> np.ndarray:
        """Per-task demand of every job as an array of shape (jobs, resources)."""
        names = resources or self.resource_names()
        return np.array([[j.demand(task).get(r, 0.0) for r in names] for j in self.jobs], dtype=float)

    def server(self, name: str) -> Server | None:
        return self._server_index.get(name)

    def job(self, job_id: str) -> Job | None:
        return self._job_index.get(job_id)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_server_index", {s.name: s for s in self.servers})
        object.__setattr__(self, "_job_index", {j.id: j for j in self.jobs})


def load_instance(path: str | Path, catalog: Catalog | str | Path | None = None) -> Instance:
    """Read, validate and resolve an instance file (``.json`` or ``.toml``).

    Raises
    ------
    InstanceError
        With the file, the field path and the reason, for anything wrong with the file.
    """
    _count_before_parsing(path)
    return from_document(read_document(path, counts=_check_counts, count_items=("jobs", "jobs")), file=str(path), catalog=catalog)


#: How fast an instance file is read here, whole (parsing, schema, catalog, checks), in MiB/s:
#: measured on the reference machine (2 cores) on 2,000-job imports (TOML 1.2-1.5, JSON 3.2), the
#: slower end.  Only a file whose size alone says it cannot be read in the time left is refused by
#: it; the watchdog ends any read that is slower still.
READ_MIB_PER_S = {"toml": 1.2, "json": 3.0}
#: a TOML file larger than this has its ``[[jobs]]`` tables counted before it is parsed (tomllib
#: reads about a MiB a second: a file of 100,000 jobs would take a minute to be refused)
PRESCAN_BYTES = 1 << 20


def refuse_slow_read(path: str | Path, seconds_left: float) -> None:
    """Refuse at once (naming ``--time-limit``) a file that cannot be read in ``seconds_left``, by its size."""
    import os

    try:
        size = os.stat(path).st_size
    except OSError:
        return  # reading it reports why
    rate = READ_MIB_PER_S.get(Path(path).suffix.lower().lstrip("."))
    if rate is None or size / 2**20 / rate <= seconds_left:
        return
    need = size / 2**20 / rate

    def short(x: float) -> str:  # two significant figures below 10 ("about 0 s ... 0.1 s left" read as a contradiction)
        return f"{x:.2g}" if x < 10 else f"{x:.0f}"

    raise InstanceError(f"{short(size / 2**20)} MiB takes about {short(need)} s to read here ({rate:g} MiB/s), more than the "
                        f"{short(max(seconds_left, 0))} s left of --time-limit (raise --time-limit)", str(path))


_TOML_JOBS = re.compile(rb"(?m)^[ \t]*\[\[[ \t]*jobs[ \t]*\]\]")


def _count_before_parsing(path: str | Path) -> None:
    """Refuse a large TOML instance with more ``[[jobs]]`` tables than the ``jobs`` limit before it
    is parsed (JSON parses fast enough for :func:`_check_counts` to refuse it in time)."""
    import os

    from .files import read_bytes

    try:
        big = Path(path).suffix.lower() == ".toml" and os.stat(path).st_size > PRESCAN_BYTES
    except OSError:
        return
    if not big:
        return
    jobs = len(_TOML_JOBS.findall(read_bytes(path)))
    if jobs > limits()["jobs"]:
        raise over_limit("jobs", jobs, "the number of jobs", str(path), "jobs")


def _check_counts(doc: Mapping[str, Any], file: str | None) -> None:
    """The sizes that make validation itself long (jobs, expanded servers), refused before the schema
    walks them; what is malformed here is left for the schema to name."""
    cap = limits()
    jobs = doc.get("jobs")
    if isinstance(jobs, list) and len(jobs) > cap["jobs"]:
        raise over_limit("jobs", len(jobs), "the number of jobs", file, "jobs")
    cluster = doc.get("cluster")
    groups = cluster.get("servers") if isinstance(cluster, dict) else None
    if isinstance(groups, list):
        total = 0
        for i, group in enumerate(groups):
            count = group.get("count", 1) if isinstance(group, dict) else 1
            total += count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
            if total > cap["servers"]:
                raise over_limit("servers", total, "the server count after expanding groups", file,
                                 f"cluster.servers[{i}].count" if isinstance(group, dict) and "count" in group else "cluster.servers")


def from_document(doc: Mapping[str, Any], file: str | None = None, catalog: Catalog | str | Path | None = None) -> Instance:
    """Validate an already parsed instance document (see :func:`load_instance`)."""
    if isinstance(doc, Mapping):
        _check_counts(doc, file)
    try:
        validate(doc, load_schema("instance"))
    except SchemaViolation as exc:
        raise InstanceError(exc.reason, file, exc.path or None) from None
    _check_magnitudes(doc, file)
    _check_sizes(doc, file)
    servers = _servers(doc["cluster"]["servers"], file)
    needs_catalog = any("model" in j for j in doc["jobs"])
    cat = catalog if isinstance(catalog, Catalog) else (load_catalog(catalog) if needs_catalog or catalog else None)
    time = doc.get("time", {})
    slots = time.get("slots")
    jobs = tuple(_job(i, spec, file, cat, slots) for i, spec in enumerate(doc["jobs"]))
    _unique([j.id for j in jobs], "jobs", "id", file)
    shapes = _shapes(servers)
    for job in jobs:
        _check_fits(job, shapes, file)
    cluster = doc["cluster"]
    return Instance(
        name=doc.get("name") or (Path(file).stem if file else "instance"),
        file=file,
        document=doc,
        servers=servers,
        jobs=jobs,
        slots=slots,
        slot_s=float(time.get("slot_s", 3600.0)),
        intra_server_bandwidth_gbps=cluster.get("intra_server_bandwidth_gbps"),
        inter_server_bandwidth_gbps=cluster.get("inter_server_bandwidth_gbps"),
        default_problem=doc.get("problem"),
        catalog=cat,
        options=dict(doc.get("options", {})),
    )


def _check_magnitudes(doc: Mapping[str, Any], file: str | None) -> None:
    """Refuse a nonzero number below :data:`MIN_MAGNITUDE` in magnitude, naming the field (the
    problem ``options`` are left to each option's own range).  The walk builds no field path: only
    when a number is refused is the walk repeated with paths to name it (at 100,000 jobs the paths
    alone took 7 s)."""
    if _first_tiny(doc, with_paths=False) is None:
        return
    found = _first_tiny(doc, with_paths=True)
    assert found is not None
    value, path = found
    raise InstanceError(f"{value!r} is too small: a nonzero number must be at least {MIN_MAGNITUDE:g} in magnitude "
                        "(as a divisor, a smaller one overflows the times and rates derived from it)", file, path)


def _first_tiny(doc: Mapping[str, Any], with_paths: bool) -> tuple[Any, str] | None:
    if not with_paths:
        stack: list[Any] = [v for k, v in doc.items() if k != "options"]
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
            elif type(value) is float and 0 < abs(value) < MIN_MAGNITUDE:
                return value, ""
        return None
    paths: list[tuple[Any, str]] = [(v, k) for k, v in reversed(list(doc.items())) if k != "options"]
    while paths:  # depth first, in file order: the first offending field is the one named
        value, path = paths.pop()
        if isinstance(value, dict):
            paths.extend((v, join(path, k)) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            paths.extend((value[i], join(path, i)) for i in reversed(range(len(value))))
        elif type(value) is float and 0 < abs(value) < MIN_MAGNITUDE:
            return value, path
    return None


def _check_sizes(doc: Mapping[str, Any], file: str | None) -> None:
    """Refuse, before anything is expanded or built, sizes beyond :func:`~mlsched_opt.io.files.limits`.

    Families build models and searches whose size grows with servers x jobs x slots and with
    the task counts of a job; these are the numbers that bound that work (our design: the
    limits are generous defaults a user may raise, see ``mlsched --help``).
    """
    cap = limits()
    total = 0
    for i, group in enumerate(doc["cluster"]["servers"]):
        total += group.get("count", 1)
        if total > cap["servers"]:
            raise over_limit("servers", total, "the server count after expanding groups", file,
                             f"cluster.servers[{i}].count" if "count" in group else "cluster.servers")
    jobs = doc["jobs"]
    if len(jobs) > cap["jobs"]:
        raise over_limit("jobs", len(jobs), "the number of jobs", file, "jobs")
    slots = doc.get("time", {}).get("slots")
    if slots is not None and slots > cap["slots"]:
        raise over_limit("slots", slots, "the horizon", file, "time.slots")
    for i, job in enumerate(jobs):
        for key in ("workers", "ps"):
            spec = job.get(key, {})
            most = max(spec.get("count", 0), spec.get("max", 0))
            if most > cap["tasks"]:
                raise over_limit("tasks", most, f"the {key} count", file, f"jobs[{i}].{key}")


def check_model_size(instance: Instance, what: str = "the exact model", cells: int | None = None) -> None:
    """Refuse to build a model of more cells than the ``cells`` limit: ``servers x jobs x slots``
    unless the family says how its model grows (``cells``).

    A slotted exact formulation (and the LP relaxation or export built from it) has a variable
    per (job, server, slot); loading an instance does not (the approximations keep sparse
    schedules), so this guard is applied where such a model is built, not when the file is read.
    """
    shape = f"servers x jobs x slots = {len(instance.servers)} x {len(instance.jobs)} x {instance.slots or 1} = "
    if cells is None:
        cells = len(instance.servers) * len(instance.jobs) * (instance.slots or 1)
    else:
        shape = ""
    cap = limits()["cells"]
    if cells > cap:
        raise ModelTooLarge(f"{what} would have {shape}{cells:,} cells, over the limit cells={cap:,} (an approximation method "
                          f"answers at this size; raise it with `mlsched --limit cells=N ...` or $MLSCHED_LIMITS=cells=N)",
                          field="--method")

def _unique(names: list[str], where: str, key: str, file: str | None) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise InstanceError(f"duplicate {key} {name!r} (also at {where}[{seen[name]}])", file, f"{where}[{i}].{key}")
        seen[name] = i


def _servers(groups: list[dict[str, Any]], file: str | None) -> tuple[Server, ...]:
    _unique([g["name"] for g in groups], "cluster.servers", "name", file)
    out: list[Server] = []
    for g_index, g in enumerate(groups):
        count = g.get("count", 1)
        for k in range(count):
            out.append(Server(
                index=len(out),
                name=g["name"] if count == 1 else f"{g['name']}/{k}",
                group=g["name"],
                role=g.get("role", "any"),
                gpu_model=g.get("gpu_model"),
                rack=g.get("rack"),
                capacity=resource_vector(g["capacity"]),
                field_path=f"cluster.servers[{g_index}]",
            ))
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InstanceError(f"server name {dup!r} is produced twice (a group name clashes with an expanded name)", file, "cluster.servers")
    return tuple(out)


def _job(i: int, spec: dict[str, Any], file: str | None, catalog: Catalog | None, slots: int | None) -> Job:
    path = f"jobs[{i}]"
    workload = None
    if "model" in spec:
        assert catalog is not None
        workload = catalog.lookup(spec["model"], file, join(path, "model"))
        if "overrides" in spec:
            workload = workload.with_overrides(spec["overrides"], file, join(path, "overrides"))
    elif "overrides" in spec:
        raise InstanceError("overrides need a model to override", file, join(path, "overrides"))
    arrival = spec.get("arrival_slot", 0)
    if slots is not None and arrival >= slots:
        raise InstanceError(f"arrival slot {arrival} is outside the horizon (time.slots = {slots}, slots count from 0)", file,
                            join(path, "arrival_slot"))
    values = spec.get("utility", {}).get("values", [])
    for k in range(1, len(values)):
        if values[k] > values[k - 1]:
            raise InstanceError(f"a utility must not increase with delay: values[{k}] = {values[k]:g} "
                                f"> values[{k - 1}] = {values[k - 1]:g}", file, join(path, f"utility.values[{k}]"))
    architecture = spec.get("architecture", "ps")
    workers = Range.parse(spec["workers"])
    if workers.lo > workers.hi:
        raise InstanceError(f"min {workers.lo} > max {workers.hi}", file, join(path, "workers"))
    if workers.hi == 0:
        raise InstanceError("a job needs at least one worker", file, join(path, "workers"))
    if architecture == "allreduce":
        if "ps" in spec and Range.parse(spec["ps"]).hi > 0:
            raise InstanceError("an all-reduce job has no parameter servers; remove ps or use architecture = 'ps'", file, join(path, "ps"))
        ps = Range(0, 0)
    else:
        ps = Range.parse(spec["ps"]) if "ps" in spec else Range(1, workers.hi)
        if ps.lo > ps.hi:
            raise InstanceError(f"min {ps.lo} > max {ps.hi}", file, join(path, "ps"))
        if ps.hi > 0 and "ps" not in spec["demand"]:
            raise InstanceError("a parameter-server job needs demand.ps (or ps = {count = 0})", file, join(path, "demand.ps"))
    return Job(
        index=i,
        id=spec["id"],
        model=spec.get("model"),
        workload=workload,
        arrival_slot=arrival,
        architecture=architecture,
        sgd=spec.get("sgd", "sync"),
        work=spec.get("work"),
        global_batch_size=spec.get("global_batch_size"),
        local_batch_size=spec.get("local_batch_size"),
        worker_demand=resource_vector(spec["demand"]["worker"]),
        ps_demand=resource_vector(spec["demand"].get("ps")),
        workers=workers,
        ps=ps,
        utility=Utility.parse(spec["utility"]) if "utility" in spec else None,
        weight=float(spec.get("weight", 1.0)),
        gpu_models=tuple(spec["gpu_models"]) if "gpu_models" in spec else None,
        limit=resource_vector(spec["limit"]) if "limit" in spec else None,
        speed_model=spec.get("speed_model"),
        step=spec.get("step"),
        data_parallel=spec.get("data_parallel"),
    )


def _shapes(servers: tuple[Server, ...]) -> tuple[Server, ...]:
    """One server per distinct (role, GPU model, capacity): what eligibility and fit depend on.
    A real cluster has a handful (Alibaba's 1,523 nodes: 16), so the fit check of every job costs
    jobs x shapes, not jobs x servers."""
    seen: dict[tuple, Server] = {}
    for s in servers:
        seen.setdefault((s.role, s.gpu_model, tuple(sorted(s.capacity.items()))), s)
    return tuple(seen.values())


def _check_fits(job: Job, servers: tuple[Server, ...], file: str | None) -> None:
    """A job whose single worker (or PS) fits on no eligible server can never run: say which resource."""
    tasks = ["worker"] + (["ps"] if job.ps.lo > 0 else [])
    for task in tasks:
        demand = job.demand(task)
        eligible = [s for s in servers if job.may_run_on(s, task)]
        if not eligible:
            what = f"GPU model in {list(job.gpu_models)} and " if task == "worker" and job.gpu_models else ""
            raise InstanceError(f"no server may host a {task} of this job (needs {what}role {task!r} or 'any')", file,
                                f"{job.path}.demand.{task}")
        if any(all(s.capacity.get(r, 0.0) >= a for r, a in demand.items()) for s in eligible):
            continue
        # name the resource that no eligible server has enough of, the most telling one first
        for resource, amount in demand.items():
            best = max(s.capacity.get(resource, 0.0) for s in eligible)
            if best < amount:
                field = resource if resource in STANDARD_RESOURCES else f"extra.{resource}"
                raise InstanceError(
                    f"one {task} needs {_fmt(amount)} {resource} but the largest eligible server has {_fmt(best)}: "
                    "the job fits on no server",
                    file, f"{job.path}.demand.{task}.{field}")
        raise InstanceError(f"one {task} fits on no single eligible server (each lacks some resource)", file, f"{job.path}.demand.{task}")


def _fmt(x: float) -> str:
    return str(int(x)) if math.isfinite(x) and x == int(x) else f"{x:g}"
