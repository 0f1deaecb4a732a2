"""Real traces as hetero instances (``mlsched import alibaba|philly|pollux --problem hetero``).

The hetero family (spec ``papers/003_hetero_sampling.md``) places every job at once on a
disjoint set of GPUs and needs per job a global batch ``Pi``, iterations ``T``, a throughput
per GPU model, a gradient size (or ``D / r``) and a job-size range.  The rules below fill them
from a trace window; every one is written into the instance's ``source``.  Marked [ours] where
the rule is our design rather than a figure of the trace.

* **Jobs.**  The window's jobs in submission order.  Jobs with no GPU (Alibaba's CPU-only pods)
  are skipped and counted.  hetero is static (spec section 1: all jobs start at ``t = 0``), so
  submit times are not mapped to slots (``--slots`` is refused); each job's ``description``
  keeps its trace row and submit time.
* **Cluster.**  The GPU nodes of ``--set cluster=alibaba`` (default: all 1,213 of Alibaba's
  GPU nodes, or ``--servers`` drawn with the seed), ``gavel`` or ``pollux``
  (:func:`mlsched_opt.traces.sources.cluster`); Alibaba pods always take the Alibaba cluster.
  Every node gets ``--set bandwidth_gbps`` (10 Gb/s, the spec's; the traces have none) [ours].
* **Workloads.**  Pollux names its models (mapped to the catalog by the reader); Philly and
  Alibaba do not, so each job draws one uniformly, seeded, from the generator's five workloads
  (:data:`.generate.WORKLOADS`) by :func:`mlsched_opt.traces.mapping.assign_models`.
* **Throughputs.**  The catalog's measured 1-GPU figures (Gavel K80/P100/V100, Pollux T4); a
  GPU model a workload was not measured on gets a figure by the relative-speed table of
  :mod:`.alibaba` (cited ratios; G2 and G3 an explicit assumption), each overridable with
  ``--set speed_<model>=x``.
* **Global batch Pi.**  Pollux's ``batch_size``; else the generator's table (spec section 4:
  256 for the ResNets and Transformer, 160 for LM, 8192 for Recommendation).
* **Iterations T** [ours].  From a real duration ``d`` (Philly; Alibaba's deletion - creation):
  ``T = round(d x share x X(g) / Pi)`` clipped to ``[1, iterations_cap]`` (10^7 by default),
  where ``X(g)`` is the workload's catalog samples/s on ``g`` (the trace's GPU count) GPUs of
  the ``--set reference`` model (V100): measured at the largest measured GPU count ``s <= g``
  (Gavel: 1, 2, 4, 8) and scaled by ``g / s``; ``share`` is an Alibaba pod's GPU fraction (1
  otherwise).  That is the number of iterations the job would have run in its real lifetime on
  ``g`` reference GPUs.  Pollux's workloads give no duration: ``T`` is drawn uniformly in
  ``[iterations_min, iterations_max]`` (the generator's 1,000..20,000), seeded.
* **Job size** [ours].  ``min 1``, ``max`` the trace's GPU count (a fractional Alibaba pod
  takes one whole GPU: hetero places whole GPUs), capped at the GPUs of the models the job may
  use; ``--set workers=cluster`` gives every job the whole usable cluster as its maximum, as
  the generator does.  Capped jobs are counted.
* **Communication.**  ``D`` is the catalog's ``gradient_mb`` at the node links (ring
  all-reduce); a workload without one (Pollux's deepspeech2, ncf, yolov3) gets ``D / r``
  directly (``comm_s``) from Pollux's measured sync time: the median over the rows of its
  ``scalability.csv`` with one replica per node (``num_nodes = num_replicas = K``, so all the
  traffic crosses the network) of ``sync_time x K / (2 (K - 1))``, the ring formula inverted
  [ours]; measured on Pollux's testbed network, not rescaled to the cluster's links.
* **CPU, memory** (Alibaba's pod demands) are not part of the hetero model and are not written.

An import that cannot be placed at all raises a :class:`~mlsched_opt.errors.UserError`: a job
whose allowed GPU models the cluster lacks, or a window with more jobs than its GPUs can host
one each (Hall's condition over the sets of GPU models the jobs may use).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np

from ...errors import OptionError, UserError
from ...io.catalog import Catalog, Workload
from ...traces import ImportSpec, Trace, describe
from ...traces.mapping import assign_models
from ...traces.sources import POLLUX_MODELS, alibaba_nodes, cluster
from ...traces.table import Column, TraceError, data_file, read_rows
from ..base import Option
from .alibaba import BANDWIDTH_GBPS, REFERENCES, SPEEDS, mapped_throughputs, reference_of, speed_note, speed_table
from .generate import MAX_ITERATIONS, WORKLOADS
from .view import MIN_LINK_GBPS

ITERATIONS_CAP = 10**7
#: Pollux's measured sync times, per application (``scalability.csv``)
POLLUX_SCALABILITY = "pollux/{}/scalability.csv"
#: most GPU models whose every subset is checked for Hall's condition (2^G subsets)
MAX_HALL_MODELS = 16

OPTIONS = (
    Option("reference", "V100", ("K80", "P100", "V100"), "GPU model on which a trace duration is converted to iterations"),
    Option("iterations_cap", ITERATIONS_CAP, None, "most iterations T derived from a duration (T is clipped to 1..cap)",
           minimum=1, maximum=MAX_ITERATIONS),
    Option("iterations_min", 1000, None, "fewest iterations T drawn for a job without a duration (Pollux)",
           minimum=1, maximum=MAX_ITERATIONS),
    Option("iterations_max", 20000, None, "most iterations T drawn for a job without a duration (Pollux)",
           minimum=1, maximum=MAX_ITERATIONS),
    Option("workers", "trace", ("trace", "cluster"),
           "a job's most workers: its GPU count in the trace, or every GPU it may use (the generator's rule)"),
    Option("bandwidth_gbps", BANDWIDTH_GBPS, None, "link bandwidth of every node, Gb/s (the traces give none)",
           minimum=MIN_LINK_GBPS, maximum=1e6),
    *(Option(f"speed_{m}", s, None, f"{m} speed relative to a V100, for workloads not measured on {m}"
             + (" (an assumption: anonymized model)" if assumed else ""), minimum=1e-3, maximum=100.0)
      for m, (s, assumed, _) in SPEEDS.items() if m != "V100"),
)


def from_trace(trace: Trace, spec: ImportSpec, catalog: Catalog) -> dict[str, Any]:
    opts = spec.options
    if spec.slots is not None:
        raise OptionError("hetero places every job at t = 0 (a static problem, spec 003 section 1): it has no time "
                          "slots; leave out --slots", field="--slots")
    if opts["iterations_min"] > opts["iterations_max"]:
        raise OptionError(f"need iterations_min <= iterations_max, got {opts['iterations_min']} > {opts['iterations_max']}",
                          field="--set iterations_min")
    overrides = {m: float(opts[f"speed_{m}"]) for m in SPEEDS if f"speed_{m}" in spec.sets}
    speeds = speed_table({m: float(opts[f"speed_{m}"]) for m in SPEEDS if m != "V100"})
    facts: list[str] = ["hetero is static (spec 003 section 1): every job starts at t = 0, so submit times set only "
                        "the job order (each job's description keeps its trace row and submit time)"]

    jobs = [j for j in trace.jobs if j.gpus > 0]
    skipped = len(trace.jobs) - len(jobs)
    if not jobs:
        raise TraceError(f"the window's {len(trace.jobs):,} jobs all have no GPU; hetero places GPU jobs only "
                         "(raise --jobs or move --set start)", trace.file, "--jobs")
    if skipped:
        facts.append(f"{skipped:,} of the window's {len(trace.jobs):,} jobs have no GPU (CPU-only) and were skipped")
    trace = dataclasses.replace(trace, jobs=tuple(jobs))

    # --- the cluster: GPU nodes whose model has a speed or a measurement
    nodes = cluster(spec, gpu_only=True)  # the alibaba source has no cluster option: its pods take Alibaba's nodes
    if nodes.name == "alibaba":
        cpu_only = sum(1 for n in alibaba_nodes(spec.data) if n.gpus == 0)
        if cpu_only:
            facts.append(f"{cpu_only:,} of the node list's nodes have no GPU (CPU-only) and were left out: hetero "
                         "places one worker per GPU, so they can host none")
    servers: list[dict[str, Any]] = []
    unknown: dict[str, int] = {}
    for node in nodes.gpu_nodes:
        gpu_model = node.gpu_model
        assert gpu_model, node.name  # gpu_nodes keeps the nodes that name their GPU model
        if gpu_model not in speeds and not any(_measured(w, gpu_model) for w in catalog.values()):
            unknown[gpu_model] = unknown.get(gpu_model, 0) + node.gpus
            continue
        capacity: dict[str, Any] = {"gpu": node.gpus}
        if node.cpu is not None:
            capacity["cpu"] = node.cpu
        if node.memory_gb is not None:
            capacity["memory_gb"] = node.memory_gb
        capacity["bandwidth_gbps"] = opts["bandwidth_gbps"]
        servers.append({"name": node.name, "gpu_model": gpu_model, "capacity": capacity})
    if unknown:
        facts.append("left out (GPU model with no speed and no measurement): "
                     + ", ".join(f"{m} ({g} GPUs)" for m, g in sorted(unknown.items())))
    if not servers:
        raise UserError("the cluster has no GPU node hetero can use", field="--servers")
    models = sorted({s["gpu_model"] for s in servers})
    gpus_of = {m: sum(s["capacity"]["gpu"] for s in servers if s["gpu_model"] == m) for m in models}

    # --- workloads and what each needs
    eligible = sorted({m for m in WORKLOADS if m in catalog} | {j.model for j in jobs if j.model is not None})
    assigned, how = assign_models(trace, [m for m in eligible if m in catalog], spec)
    facts.append(how)
    info = {name: _workload(catalog[name], models, speeds, spec, trace.file) for name in sorted(set(assigned))}
    comm_rules = sorted(name for name in info if "comm_s" in info[name]["dp"])
    if comm_rules:
        facts.append(f"D / r of {', '.join(comm_rules)} (no gradient size in the catalog): Pollux's measured sync time, "
                     "median over its scalability.csv rows with one replica per node of sync_time x K / (2 (K - 1)) "
                     "(the ring formula inverted), measured on Pollux's testbed network")

    # --- per job: Pi, T, job size
    n = len(jobs)
    g = np.array([j.gpus for j in jobs], dtype=np.int64)
    pi = np.array([j.batch_size if j.batch_size is not None else WORKLOADS.get(m, 0) for j, m in zip(jobs, assigned)],
                  dtype=np.int64)
    if (pi < 1).any():
        k = int(np.argmax(pi < 1))
        raise TraceError(f"workload {assigned[k]!r} has no global batch: the trace gives none and the generator's table "
                         f"({', '.join(sorted(WORKLOADS))}) has none", trace.file, f"row {jobs[k].row}")
    has_d = np.array([j.duration_s is not None for j in jobs])
    d = np.array([j.duration_s if j.duration_s is not None else 0.0 for j in jobs], dtype=float)
    share = np.array([j.gpu_share for j in jobs], dtype=float)
    ref = opts["reference"]
    rate = np.array([_scaled(catalog[m], ref, int(k), speeds) if j.duration_s is not None else 0.0
                     for j, m, k in zip(jobs, assigned, g)], dtype=float)
    raw = np.rint(d * share * rate / pi)
    cap = opts["iterations_cap"]
    T = np.clip(raw, 1, cap).astype(np.int64)
    if (~has_d).any():
        drawn = spec.rng("iterations").integers(opts["iterations_min"], opts["iterations_max"] + 1, size=n)
        T = np.where(has_d, T, drawn)
    if has_d.any():
        low, high = int((has_d & (raw < 1)).sum()), int((has_d & (raw > cap)).sum())
        clipped = ", ".join(c for c in (f"{low:,} raised to 1" if low else "", f"{high:,} lowered to {cap:,}" if high else "") if c)
        facts.append(f"T = round(duration x GPU share x X(g) / Pi), X(g) = the workload's catalog samples/s on g {ref} GPUs "
                     f"(g = the trace's GPU count; measured at the largest measured count s <= g, scaled by g / s), "
                     f"clipped to 1..{cap:,}" + (f" ({clipped})" if clipped else ""))
    if (~has_d).any():
        facts.append(f"T of the {int((~has_d).sum()):,} jobs without a duration: uniform in {opts['iterations_min']:,}.."
                     f"{opts['iterations_max']:,} with seed {spec.seed} (the generator's range; the trace gives none)")
    given = sum(j.batch_size is not None for j in jobs)
    table = ("the generator's table (spec 003 section 4: " + ", ".join(f"{m} {b}" for m, b in sorted(WORKLOADS.items())) + ")")
    facts.append("Pi: " + ("the trace's batch_size" if given == n else table if not given else
                           f"the trace's batch_size where given, else {table}"))

    # --- the GPU models each job may use, job sizes, and whether all jobs fit at once
    masks: list[int] = []  # Python ints: one bit per GPU model, however many models
    bit = {m: 1 << i for i, m in enumerate(models)}
    usable_of: dict[tuple[str, tuple[str, ...] | None], int] = {}
    for i, (j, m) in enumerate(zip(jobs, assigned)):
        key = (m, j.gpu_models)
        if key not in usable_of:
            fig = info[m]["models"]
            usable_of[key] = sum(bit[x] for x in models if x in fig and (j.gpu_models is None or x in j.gpu_models))
        masks.append(usable_of[key])
        if masks[i] == 0:
            allowed = "|".join(j.gpu_models) if j.gpu_models else "any"
            raise UserError(f"job {j.id} ({trace.file} row {j.row}, workload {m}, GPU models {allowed}) can run on none of "
                            f"the cluster's GPU models ({', '.join(models)}); raise --servers or change --seed",
                            field="--servers")
    room_of = {msk: sum(gpus_of[x] for x in models if msk & bit[x]) for msk in set(masks)}
    usable = np.array([room_of[msk] for msk in masks], dtype=np.int64)
    _hall(masks, models, gpus_of, jobs)
    wide = opts["workers"] == "cluster"
    share_whole = int(((share < 1) & (g == 1)).sum())
    kmax = usable if wide else np.minimum(g, usable)
    capped = 0 if wide else int((g > usable).sum())
    facts.append("job size: min 1, max " + ("every GPU the job may use (--set workers=cluster)" if wide else
                 "the trace's GPU count" + (f" ({capped:,} capped at the GPUs of the models the job may use)" if capped else ""))
                 + (f"; {share_whole:,} fractional-GPU pods take one whole GPU (hetero places whole GPUs)" if share_whole else ""))
    mapped = {x for name in info for x in info[name]["dp"].get("samples_per_s", {})}
    mapped |= {reference_of(catalog[name]) for name in info if info[name]["dp"].get("samples_per_s")}
    note = speed_note(sorted(mapped), overrides)
    if note:
        facts.append(note)
    facts.append(f"every node's link {opts['bandwidth_gbps']:g} Gb/s (assumed: the traces give none)")
    if trace.source == "alibaba":
        facts.append("pods' CPU and memory are not part of the hetero model")

    out = []
    for i, (j, m) in enumerate(zip(jobs, assigned)):
        frac = f" x {j.gpu_share:g}" if j.gpu_share < 1 else ""
        dur = f", duration {j.duration_s:.10g} s" if j.duration_s is not None else ""
        job: dict[str, Any] = {
            "id": j.id,
            "description": f"{trace.file} row {j.row}, submitted +{j.submit_s:.10g} s, {j.gpus} GPU{'s' if j.gpus > 1 else ''}{frac}{dur}",
            "model": m, "architecture": "allreduce", "global_batch_size": int(pi[i]),
            "work": {"iterations": int(T[i])},
            "workers": {"min": 1, "max": int(kmax[i])},
            "demand": {"worker": {"gpu": 1}},
        }
        if j.gpu_models:
            job["gpu_models"] = list(j.gpu_models)
        if info[m]["dp"]:
            job["data_parallel"] = dict(info[m]["dp"])
        out.append(job)
    total = sum(gpus_of.values())
    return {
        "format": "mlsched-instance/1",
        "name": f"hetero-{trace.source}-{n}j-{total}g-seed{spec.seed}",
        "description": f"{n:,} {trace.source} jobs placed at once on {len(servers):,} real nodes "
                       f"({total:,} GPUs: {', '.join(f'{gpus_of[m]:,} {m}' for m in models)}), min average JCT",
        "source": describe(trace, nodes, spec, facts),
        "problem": "hetero",
        "cluster": {"inter_server_bandwidth_gbps": opts["bandwidth_gbps"], "servers": servers},
        "jobs": out,
    }


def _measured(workload: Workload, model: str | None) -> bool:
    return model is not None and workload.throughput_samples_per_s(model) is not None


def _workload(w: Workload, models: list[str], speeds: dict[str, float], spec: ImportSpec, file: str) -> dict[str, Any]:
    """The GPU models a workload has a figure on, and its ``data_parallel`` table (mapped
    throughputs; ``comm_s`` when the catalog has no gradient size)."""
    extra = mapped_throughputs(w, models, speeds)
    have = {m for m in models if _measured(w, m)} | set(extra)
    dp: dict[str, Any] = {}
    if extra:
        dp["samples_per_s"] = dict(sorted(extra.items()))
    if not w.gradient_mb:
        dp["comm_s"] = _pollux_comm_s(w.name, spec, file)
    return {"models": have, "dp": dp}


def _pollux_comm_s(name: str, spec: ImportSpec, file: str) -> float:
    """``D / r`` (s) of a Pollux workload from its measured sync times (see the module docstring)."""
    app = next((a for a, (cat, _) in sorted(POLLUX_MODELS.items()) if cat == name), None)
    if app is None:
        raise TraceError(f"workload {name!r} has no gradient size in the catalog (size.gradient_mb) and no Pollux sync "
                         "times; hetero needs one", file, "--catalog")
    path = data_file(spec.data, POLLUX_SCALABILITY.format(app))
    cols = [Column("num_nodes", "integer", minimum=1), Column("num_replicas", "integer", minimum=1),
            Column("sync_time", "number", minimum=0)]
    values = [float(s) * int(k) / (2.0 * (int(k) - 1)) for _, (nodes, k, s) in read_rows(path, cols)
              if nodes == k and int(k) > 1]
    if not values:
        raise TraceError("no row with one replica per node (num_nodes = num_replicas > 1): no sync time to take", str(path))
    return float(f"{float(np.median(values)):.6g}")


def _scaled(w: Workload, ref: str, g: int, speeds: dict[str, float]) -> float:
    """Samples/s of ``w`` on ``g`` GPUs of ``ref``: measured at the largest measured count ``s <= g``,
    times ``g / s``; without a measurement on ``ref``, the speed table's 1-GPU figure times ``g``."""
    scales = [r["gpus"] for r in w.data.get("throughput", [])
              if r["gpu_model"] == ref and r.get("placement", "consolidated") == "consolidated" and r["gpus"] <= g]
    if scales:
        s = max(scales)
        measured = w.throughput_samples_per_s(ref, s)
        assert measured is not None  # s is a measured count
        return float(measured) * g / s
    one = w.throughput_samples_per_s(ref) or mapped_throughputs(w, [ref], speeds).get(ref)
    if not one:
        raise UserError(f"workload {w.name!r} has no throughput on {ref} nor on any of {', '.join(REFERENCES)}: "
                        "its duration cannot be turned into iterations", field="--set reference")
    return float(one) * g


def _hall(masks: list[int], models: list[str], gpus_of: dict[str, int], jobs: list[Any]) -> None:
    """Every job needs one GPU of a model it may use, all at once: for every set U of models, the
    jobs that may use only models in U must not outnumber U's GPUs (Hall's condition).  Beyond
    :data:`MAX_HALL_MODELS` models only the whole set is checked (the solvers find the rest)."""
    kinds = Counter(masks)
    full = (1 << len(models)) - 1
    for u in (range(1, full + 1) if len(models) <= MAX_HALL_MODELS else (full,)):
        need = sum(c for k, c in kinds.items() if k & ~u == 0)
        names = [m for b, m in enumerate(models) if u >> b & 1]
        room = sum(gpus_of[m] for m in names)
        if need > room:
            if u == full:
                why = f"{len(jobs):,} jobs need at least {len(jobs):,} GPUs, the cluster has {room:,}"
            else:
                why = f"{need:,} jobs may run only on {'/'.join(names)} GPUs, of which the cluster has {room:,}"
            raise UserError(f"hetero places every job at once, one GPU at least each: {why}; lower --jobs or raise "
                            "--servers", field="--jobs")
