"""The trace readers: Alibaba's pods, Philly's jobs, Pollux's workloads, and the real clusters.

Each reader returns a :class:`~.model.Trace` of ``--jobs`` consecutive jobs in submission order
(``--set start=K``, else a seeded start) with submit times relative to the window's first job.
Files and their columns (the layout of ``../shared/data``, see its ``SOURCES.md``):

* ``alibaba_openb/openb_pod_list_{default,gpuspec33,multigpu50}.csv``: ``name, cpu_milli,
  memory_mib, num_gpu, gpu_milli[, gpu_spec, creation_time]`` (Weng et al., "Beware of
  Fragmentation", USENIX ATC 2023; alibaba/clusterdata cluster-trace-gpu-v2023);
* ``alibaba_openb/openb_node_list_all_node.csv``: ``sn, cpu_milli, memory_mib, gpu, model``;
* ``philly/philly_jobs.csv``: ``timestamp, duration, num_gpus`` (Jeon et al., USENIX ATC 2019,
  as shipped with Pollux's artifact, petuum/adaptdl@c793c70);
* ``pollux/workloads/workload-K.csv``: ``name, time, application, num_replicas, batch_size``
  (Qiao et al., OSDI 2021).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..io.files import ENV_LIMITS
from .model import Cluster, ImportSpec, Node, Trace, TraceJob, pick_nodes, window
from .table import Column, TraceError, data_file, header, read_rows

ALIBABA_NODES = "alibaba_openb/openb_node_list_all_node.csv"
ALIBABA_PODS = {name: f"alibaba_openb/openb_pod_list_{name}.csv" for name in ("default", "gpuspec33", "multigpu50")}
PHILLY = "philly/philly_jobs.csv"
POLLUX_WORKLOAD = "pollux/workloads/workload-{}.csv"
MIB_BYTES = 2**20
#: Sanity bounds on trace cells (our design): no job or node has more GPUs than the largest
#: clusters (the traces' largest is 128), no time or duration exceeds about 31 years.
MAX_GPUS = 100_000
MAX_SECONDS = 1e9


def mib_to_gb(mib: int) -> float:
    """MiB as GB (10^9 bytes), exactly as a float can hold it (no rounding: a demand must not shrink)."""
    return mib * MIB_BYTES / 1e9

#: Pollux application -> catalog workload, and why.
POLLUX_MODELS = {
    "bert": ("bert", "BERT fine-tuning on SQuAD"),
    "cifar10": ("resnet18", "Pollux's cifar10 job trains ResNet-18 on CIFAR-10 (Qiao et al., OSDI 2021, Table 1)"),
    "deepspeech2": ("deepspeech2", "DeepSpeech2"),
    "imagenet": ("resnet50", "Pollux's imagenet job trains ResNet-50 on ImageNet (Qiao et al., OSDI 2021, Table 1)"),
    "ncf": ("ncf", "NeuMF"),
    "yolov3": ("yolov3", "YOLOv3"),
}

#: Pollux names no durations.  Its workload generator (petuum/adaptdl@c793c70 simulator/workload.py)
#: picked each job's application by the GPU time of a Philly job (jobs of at least 60 s): (catalog
#: models, class, low and high GPU-hours, median GPU-hours of the Philly jobs in the class, computed
#: from philly/philly_jobs.csv with those filters; tests/test_import_oasis.py recomputes them).
POLLUX_CLASSES = (
    (("resnet18", "ncf"), "under 1 GPU-hour", 0, 1, 0.217222),
    (("deepspeech2", "bert"), "1-10 GPU-hours", 1, 10, 1.699444),
    (("yolov3",), "10-100 GPU-hours", 10, 100, 24.66),
    (("resnet50",), "100-1,000 GPU-hours", 100, 1000, 236.942222),
)
POLLUX_GPU_HOURS = {model: hours for models, _, _, _, hours in POLLUX_CLASSES for model in models}
POLLUX_RULE = ("durations: a Pollux job's GPU time is the median GPU time of the Philly jobs of its application's class "
               "in Pollux's workload generator (petuum/adaptdl@c793c70 simulator/workload.py: "
               + "; ".join(f"{'/'.join(m)} {label} (median {h:g} h)" for m, label, _, _, h in POLLUX_CLASSES)
               + "), its duration that GPU time over its replicas (our design: the workload names no duration)")

#: Clusters for sources that have none: name -> (GPU model, servers, GPUs, vCPU, memory GB per server, source).
PAPER_CLUSTERS: dict[str, tuple[tuple[str, int, int, float, float], ...]] = {
    # 36 GPUs of each type (Gavel's --cluster_spec 36:36:36), grouped 4 per server (our assumption:
    # Gavel's simulator defaults to 1 per server, which would spread every multi-GPU job); vCPU and
    # memory per GPU as an AWS p3.8xlarge's share (8 vCPU, 61 GiB)
    "gavel": (("V100", 9, 4, 32.0, 262.0), ("P100", 9, 4, 32.0, 262.0), ("K80", 9, 4, 32.0, 262.0)),
    # Pollux's testbed: 16 AWS g4dn.12xlarge nodes, 4 T4 GPUs, 48 vCPU, 192 GiB each
    "pollux": (("T4", 16, 4, 48.0, 206.0),),
}
PAPER_CLUSTER_SOURCE = {
    "gavel": "Gavel's simulated cluster (Narayanan et al., OSDI 2020): 36 V100, 36 P100, 36 K80 (cluster_spec 36:36:36), "
             "4 GPUs per server and a p3.8xlarge's vCPU and memory are our assumption",
    "pollux": "Pollux's testbed (Qiao et al., OSDI 2021): 16 nodes of 4 NVIDIA T4 (AWS g4dn.12xlarge: 48 vCPU, 192 GiB)",
}


def alibaba_nodes(data: Path) -> list[Node]:
    """All 1,523 nodes of the Alibaba cluster, CPU-only ones included, in file order."""
    path = data_file(data, ALIBABA_NODES)
    cols = [Column("sn", "text"), Column("cpu_milli", "integer", minimum=0), Column("memory_mib", "integer", minimum=0),
            Column("gpu", "integer", minimum=0, maximum=MAX_GPUS), Column("model", "text", optional=True)]
    nodes, rows = [], []
    for row, (sn, cpu, mem, gpu, model) in read_rows(path, cols):
        if gpu and not model:
            raise TraceError(f"a node with {gpu} GPUs must name its GPU model", str(path), f"row {row}, column model")
        rows.append(row)
        nodes.append(Node(str(sn), str(model) if gpu else None, int(gpu), int(cpu) / 1000.0, mib_to_gb(int(mem))))
    if not nodes:
        raise TraceError("no nodes", str(path))
    _unique_names([n.name for n in nodes], rows, path, "sn")
    return nodes


def cluster(spec: ImportSpec, gpu_only: bool) -> Cluster:
    """The servers of an import: ``--servers`` nodes of the Alibaba cluster (all of them by
    default), or a paper's cluster with ``--set cluster=gavel|pollux``; ``gpu_only`` keeps GPU nodes."""
    name = spec.options.get("cluster", "alibaba")
    rng = spec.rng("servers")
    if name == "alibaba":
        nodes = alibaba_nodes(spec.data)
        usable = [n for n in nodes if n.gpus > 0] if gpu_only else nodes
        what = "GPU nodes" if gpu_only else "nodes"
        picked = pick_nodes(usable, spec.servers, rng, what, spec.notes)
        gpus = sum(n.gpus for n in picked)
        how = "all" if len(picked) == len(usable) else f"{len(picked):,} drawn with seed {spec.seed}"
        return Cluster("alibaba", tuple(picked),
                       f"cluster: Alibaba openb node list ({ALIBABA_NODES}, Weng et al., USENIX ATC 2023), {how} of its "
                       f"{len(usable):,} {what}, {gpus:,} GPUs")
    if name not in PAPER_CLUSTERS:
        raise TraceError(f"unknown cluster {name!r}; choose alibaba, gavel or pollux", None, "--set cluster")
    nodes = [Node(f"{model}-{i}", model, gpus, cpu, mem)
             for model, count, gpus, cpu, mem in PAPER_CLUSTERS[name] for i in range(count)]
    picked = pick_nodes(nodes, spec.servers, rng, "servers", spec.notes)
    return Cluster(name, tuple(picked), f"cluster: {PAPER_CLUSTER_SOURCE[name]}; {len(picked)} of its {len(nodes)} servers")


def _unique_names(names: list, rows: list[int], path: Path, column: str) -> None:
    """Names become instance ids and server names, which must be unique: a repeat is the file's error."""
    seen: dict[object, int] = {}
    for name, row in zip(names, rows):
        if name in seen:
            raise TraceError(f"duplicate {column} {str(name)[:40]!r} (also row {seen[name]})", str(path), f"row {row}, column {column}")
        seen[name] = row


def job_rows(path: Path, columns: list[Column], spec: ImportSpec, what: str = "jobs") -> Iterator[tuple[int, list[Any]]]:
    """:func:`~.table.read_rows` of a job trace, stopped as soon as the window is known to be over
    ``spec.window_limit`` (the ``jobs`` limit in an import): without ``--jobs`` the window is every job
    from ``--set start`` on, so a file of more than ``jobs + start`` jobs is refused at that row, naming
    ``--jobs``, before the rest is read (the real Philly file, 82,247 jobs, was read whole and built
    into an instance first: 136 s)."""
    if spec.jobs is not None or spec.window_limit is None:  # --jobs is checked against the limit before any reading
        yield from read_rows(path, columns)
        return
    cap = spec.window_limit
    start = spec.options.get("start") or 0
    most = cap + start
    for count, item in enumerate(read_rows(path, columns), start=1):
        if count > most:
            after = f" from --set start={start}" if start else ""
            raise TraceError(f"without --jobs the window is every one of its {what}{after}, and there are more than {cap:,}, "
                             f"over the limit jobs={cap}; take a window with --jobs N (N <= {cap:,}), or raise the limit with "
                             f"`mlsched --limit jobs=N ...` (or ${ENV_LIMITS}=jobs=N)", str(path), "--jobs")
        yield item


def _order(submit: list[float], rows: list[int]) -> np.ndarray:
    """Submission order, ties by row (the files are not sorted)."""
    return np.lexsort((np.array(rows), np.array(submit)))


def alibaba_pods(spec: ImportSpec) -> Trace:
    """A window of pods: CPU (cores), memory (GB), GPUs and GPU share, allowed GPU models, and the
    lifetime (deletion - creation time, s) as the duration where the list has times."""
    which = spec.options.get("pods", "default")
    relative = ALIBABA_PODS[which]
    path = data_file(spec.data, relative)
    cols = [Column("name", "text"), Column("cpu_milli", "integer", minimum=0), Column("memory_mib", "integer", minimum=0),
            Column("num_gpu", "integer", minimum=0, maximum=MAX_GPUS), Column("gpu_milli", "integer", minimum=0)]
    present = header(path)
    has_spec = "gpu_spec" in present
    has_time = {"creation_time", "deletion_time"} <= present
    if has_spec:
        cols.append(Column("gpu_spec", "text", optional=True))
    if has_time:
        cols += [Column("creation_time", "number", minimum=0, maximum=MAX_SECONDS),
                 Column("deletion_time", "number", minimum=0, maximum=MAX_SECONDS)]
    rows: list[int] = []
    names: list[str] = []
    cpu: list[int] = []
    mem: list[int] = []
    gpu: list[int] = []
    milli: list[int] = []
    specs: list[str | None] = []
    times: list[float] = []
    ends: list[float | None] = []
    for row, values in job_rows(path, cols, spec, "pods"):
        name, c, m, g, gm = values[:5]
        if g and not 0 < gm <= 1000:
            raise TraceError(f"gpu_milli {gm} must be in 1..1000 for a pod with GPUs", str(path), f"row {row}, column gpu_milli")
        if g and g > 1 and gm != 1000:
            raise TraceError(f"a pod with {g} GPUs must take whole GPUs (gpu_milli 1000), got {gm}", str(path),
                             f"row {row}, column gpu_milli")
        rows.append(row)
        names.append(name)
        cpu.append(c)
        mem.append(m)
        gpu.append(g)
        milli.append(gm)
        specs.append(values[5] if has_spec else None)
        times.append(values[-2] if has_time else float(len(times)))
        end = values[-1] if has_time else None
        ends.append(end)
        if end is not None and end < times[-1]:
            raise TraceError(f"deletion_time {end:g} is before creation_time {times[-1]:g}", str(path),
                             f"row {row}, column deletion_time")
    _unique_names(names, rows, path, "name")
    order = _order(times, rows)
    first, n = window(len(order), spec.jobs, spec.options.get("start"), spec.rng("window"), "pods", spec.notes, str(path))
    picked = order[first:first + n]
    t0 = times[picked[0]]
    jobs = []
    for i in picked:
        allowed = tuple(sorted(set(str(specs[i]).split("|")))) if specs[i] else None
        if allowed and not all(m.strip() and m == m.strip() for m in allowed):
            raise TraceError(f"gpu_spec {str(specs[i])[:40]!r} has an empty or padded GPU model", str(path),
                             f"row {rows[i]}, column gpu_spec")
        jobs.append(TraceJob(id=str(names[i]), row=rows[i], submit_s=float(times[i] - t0), gpus=int(gpu[i]),
                             duration_s=None if ends[i] is None else float(ends[i] - times[i]),
                             gpu_share=(milli[i] / 1000.0 if gpu[i] else 1.0), cpu=cpu[i] / 1000.0,
                             memory_gb=mib_to_gb(mem[i]), gpu_models=allowed))
    when = "creation time" if has_time else "file order (the file has no creation_time)"
    return Trace("alibaba", relative, tuple(jobs), f"pods {first + 1:,}..{first + n:,} of {len(order):,} by {when}",
                 time_column="creation_time" if has_time else "")


def philly_jobs(spec: ImportSpec) -> Trace:
    """A window of Philly jobs: submit time, duration (s), GPUs."""
    path = data_file(spec.data, PHILLY)
    cols = [Column("timestamp", "timestamp"), Column("duration", "number", minimum=0, maximum=MAX_SECONDS),
            Column("num_gpus", "integer", minimum=0, maximum=MAX_GPUS)]
    rows, times, durations, gpus = [], [], [], []
    for row, (t, d, g) in job_rows(path, cols, spec):
        rows.append(row)
        times.append(t)
        durations.append(d)
        gpus.append(g)
    order = _order(times, rows)
    first, n = window(len(order), spec.jobs, spec.options.get("start"), spec.rng("window"), "jobs", spec.notes, str(path))
    picked = order[first:first + n]
    t0 = times[picked[0]]
    jobs = tuple(TraceJob(id=f"philly-{rows[i]}", row=rows[i], submit_s=float(times[i] - t0), gpus=int(gpus[i]),
                          duration_s=float(durations[i])) for i in picked)
    return Trace("philly", PHILLY, jobs, f"jobs {first + 1:,}..{first + n:,} of {len(order):,} by submit time",
                 time_column="timestamp")


def pollux_jobs(spec: ImportSpec) -> Trace:
    """A window of a Pollux workload: submit time, model (mapped to the catalog), replicas, batch
    size, and a duration by :data:`POLLUX_RULE`."""
    number = spec.options.get("workload", 1)
    relative = POLLUX_WORKLOAD.format(number)
    path = data_file(spec.data, relative)
    cols = [Column("name", "text"), Column("time", "number", minimum=0, maximum=MAX_SECONDS), Column("application", "text"),
            Column("num_replicas", "integer", minimum=1, maximum=MAX_GPUS), Column("batch_size", "integer", minimum=1, maximum=2**31)]
    rows, names, times, models, replicas, batches = [], [], [], [], [], []
    for row, (name, t, app, r, b) in job_rows(path, cols, spec):
        if app not in POLLUX_MODELS:
            raise TraceError(f"application {app!r} has no catalog workload (known: {', '.join(POLLUX_MODELS)})", str(path),
                             f"row {row}, column application")
        rows.append(row)
        names.append(name)
        times.append(t)
        models.append(POLLUX_MODELS[str(app)][0])
        replicas.append(r)
        batches.append(b)
    _unique_names(names, rows, path, "name")
    order = _order(times, rows)
    first, n = window(len(order), spec.jobs, spec.options.get("start"), spec.rng("window"), "jobs", spec.notes, str(path))
    picked = order[first:first + n]
    t0 = times[picked[0]]
    jobs = tuple(TraceJob(id=str(names[i]), row=rows[i], submit_s=float(times[i] - t0), gpus=int(replicas[i]),
                          duration_s=POLLUX_GPU_HOURS[models[i]] * 3600.0 / int(replicas[i]),
                          model=models[i], batch_size=int(batches[i])) for i in picked)
    mapping = "; ".join(f"{app} -> {cat}" + (f" ({why})" if why.startswith("Pollux") else "")
                        for app, (cat, why) in POLLUX_MODELS.items() if cat != app)
    return Trace("pollux", relative, jobs, f"jobs {first + 1}..{first + n} of {len(order)} by submit time",
                 (f"models mapped to the catalog: {mapping}", POLLUX_RULE), time_column="time")
