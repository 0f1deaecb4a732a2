"""Philly and Pollux jobs as harmony instances (``mlsched import philly|pollux --problem harmony``).

The instance has the shape :mod:`.generate` writes (spec ``papers/004_harmony.md`` section 3, our
design where the spec proposes); every figure the trace has is the trace's, every other one is
named in the instance's ``source``.  The rules:

* **Servers**: the harmony family assumes identical servers (its exact search canonicalizes over
  server permutations, a job's standalone speed is computed on server 0's shape), so with the
  default ``cluster=alibaba`` the servers are Alibaba's GPU nodes of the most common shape (549
  nodes of 8 GPUs, 96 cores, 384 GiB), ``--servers`` of them drawn with the seed [our design];
  ``--set cluster=gavel|pollux`` takes that paper's cluster (identical shapes already).  Each
  server has its GPUs, cores and memory.  The interference world has no GPU-model speeds: the
  nodes' GPU models are kept as ``gpu_model`` but do not change any speed.
* **Types** (:func:`~mlsched_opt.traces.mapping.assign_models`): Philly names no model, so each
  job draws uniformly with the seed among the world's types (``--set world``: the spec's six, or
  Gavel's fitted ones with ``world=gavel``); a Pollux job keeps its model when it is a type of the
  world, otherwise it gets the same seeded draw and the ``source`` counts the replacements.
* **Architecture and PSs**: no trace says; as the generator, all-reduce with probability
  ``allreduce_share`` (0.4) and P uniform in 1..2 for PS jobs, drawn with the seed.  Demands are
  the generator's: a worker (2 cores, 1 GPU, 4 GB), a PS (2 cores, 4 GB).
* **Workers**: W = the trace's GPU count (Philly ``num_gpus``, Pollux ``num_replicas``; 0 counts
  as 1), capped at ``max_workers`` (4, the generator's largest W) and at what fits the empty
  cluster as a gang with its PSs; the ``source`` counts the capped jobs.
* **Work**: the job alone on the empty cluster at its best placement (its standalone
  speed ``v``, samples/s) trains for its real duration: ``v x duration`` samples, as
  ``max(1, round(duration / slot_s))`` epochs [the generator's epochs of about one interval].
  Pollux's durations are the shared reader's (:data:`~mlsched_opt.traces.sources.POLLUX_RULE`).
* **Arrivals** (:func:`~mlsched_opt.traces.mapping.arrival_slots`): ``arrivals=real`` (default)
  puts a job in interval ``floor(submit / slot_s)`` (``slot_s`` 300, the generator's);
  ``arrivals=fit`` rescales the window's span onto ``--slots`` (default 8) intervals;
  ``static=true`` puts every job in interval 0 (spec 6a's static batch: the ``exact`` search and
  the ``surrogate`` need it) and says the real submit times were dropped.
* The instance carries ``options.world`` so that solving uses the world the types come from.

Work per job is one pass in Python with cached standalone speeds (a few (type, W, P) shapes);
nothing loops over (job x server).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UserError
from ...io.catalog import Catalog
from ...traces import Cluster, ImportSpec, Node, Trace, describe
from ...traces.mapping import ARRIVALS, arrival_slots, assign_models
from ...traces.model import pick_nodes
from ...traces.sources import ALIBABA_NODES, alibaba_nodes, cluster
from ..base import Option
from .generate import OPTIONS as GENERATE_OPTIONS, PS, WORKER
from .options import WORLDS
from .placements import standalone_speed
from .view import greedy_gang, make_world

_GEN = {o.name: o for o in GENERATE_OPTIONS}
RESOURCES = ("cpu", "gpu", "memory_gb")
FIT_SLOTS = 8

OPTIONS = (
    ARRIVALS,
    _GEN["slot_s"],
    Option("world", "default", WORLDS, "interference world whose types the jobs get (written to the instance's options)"),
    Option("max_workers", 4, None, "cap on W, the trace's GPU count (the generator's largest W is 4; at most 8: a job's "
           "standalone speed is found by enumerating its placements, which takes seconds per (type, W, P) at W = 8)",
           minimum=1, maximum=8),
    _GEN["allreduce_share"],
    Option("static", False, None, "every job arrives in interval 0 (a static batch, for --method exact and surrogate)"),
)


def from_trace(trace: Trace, spec: ImportSpec, catalog: Catalog) -> dict[str, Any]:
    opts = {o.name: spec.options.get(o.name, o.default) for o in OPTIONS}
    world = make_world(opts["world"], catalog)
    nodes, shape = _servers(spec)
    M = len(nodes.nodes)
    cap = np.array([shape[r] for r in RESOURCES], float)
    wd = np.array([WORKER.get(r, 0) for r in RESOURCES], float)
    pd = np.array([PS.get(r, 0) for r in RESOURCES], float)
    slot_s = float(opts["slot_s"])
    n = len(trace.jobs)
    notes: list[str] = []

    # arrivals
    if opts["static"]:
        at, T = np.zeros(n, int), 1
        notes.append("static=true: every job arrives in interval 0 (spec 6a's static batch); the real submit times are dropped")
    else:
        at, T, said = arrival_slots(trace, slot_s, spec.slots, opts["arrivals"], 1 if opts["arrivals"] == "real" else FIT_SLOTS)
        notes.append(said)

    # types
    types = list(world.types)
    models, said = assign_models(trace, types, spec, redraw=True, what=f"types of the {opts['world']} world")
    notes.append(said)

    # architecture, PSs, workers
    allreduce = spec.rng("architecture").random(n) < float(opts["allreduce_share"])
    P = np.where(allreduce, 0, spec.rng("ps").integers(1, 3, size=n))
    gpus = np.array([j.gpus for j in trace.jobs], dtype=int)
    W = np.clip(gpus, 1, int(opts["max_workers"]))
    shrunk = 0
    fit: dict[tuple[int, int], tuple[int, int]] = {}
    for k in range(n):
        key = (int(W[k]), int(P[k]))
        if key not in fit:
            fit[key] = _fit(*key, M, cap, wd, pd)
        w_fit, p_fit = fit[key]
        shrunk += (w_fit, p_fit) != key
        W[k], P[k] = w_fit, p_fit
    capped = int((gpus > int(opts["max_workers"])).sum())
    rule = (f"W: the trace's GPU count, capped at max_workers {opts['max_workers']}: {capped} of {n} jobs capped")
    if shrunk:
        rule += f"; {shrunk} jobs cut further to fit the empty cluster as a gang"
    if (gpus < 1).any():
        rule += f"; {int((gpus < 1).sum())} jobs with 0 GPUs get 1 worker"
    notes.append(rule)
    notes.append(f"architecture: all-reduce with probability {opts['allreduce_share']:g}, else PS with P uniform in 1..2, "
                 f"drawn with the seed (the generator's rule; the trace has neither); demands: a worker "
                 f"{_fmt(WORKER)}, a PS {_fmt(PS)} (the generator's)")

    # work
    speed = np.array([standalone_speed(world, world.index(models[k]), not bool(allreduce[k]), int(W[k]), int(P[k]), M, cap, wd, pd)
                      for k in range(n)])
    missing = [j for j in trace.jobs if j.duration_s is None]
    if missing:
        raise UserError("the harmony importer needs a duration for every job", trace.file, f"row {missing[0].row}")
    dur = np.array([j.duration_s for j in trace.jobs], dtype=float)
    epochs = np.maximum(1, np.rint(dur / slot_s)).astype(np.int64)
    per_epoch = np.maximum(1, np.rint(speed * dur / epochs)).astype(np.int64)
    notes.append("work: the job alone at its best placement on the empty cluster (its standalone speed) trains for its "
                 "real duration, as round(duration / slot_s) epochs (at least 1)")

    jobs = []
    for k, job in enumerate(trace.jobs):
        real = "" if job.duration_s is None else f", ran {job.duration_s:g} s"
        entry: dict[str, Any] = {"id": job.id, "model": models[k],
                                 "description": f"{trace.source} row {job.row}: {job.gpus} GPU(s){real}",
                                 "architecture": "allreduce" if allreduce[k] else "ps", "workers": {"count": int(W[k])}}
        if not allreduce[k]:
            entry["ps"] = {"count": int(P[k])}
        entry["work"] = {"epochs": int(epochs[k]), "samples_per_epoch": int(per_epoch[k])}
        entry["demand"] = {"worker": dict(WORKER), **({} if allreduce[k] else {"ps": dict(PS)})}
        entry["arrival_slot"] = int(at[k])
        jobs.append(entry)
    servers = [{"name": s.name, "gpu_model": s.gpu_model, "capacity": dict(shape)} for s in nodes.nodes]
    extra = ["speed: the interference world has no GPU-model speeds; the servers' GPU models do not change any speed",
             *notes, f"interference world {opts['world']}: {world.source or 'the catalog'}"]
    return {
        "format": "mlsched-instance/1",
        "name": f"{trace.source}-harmony-{n}j-{M}s-seed{spec.seed}",
        "description": f"{n} {trace.source} jobs on {M} identical real servers ({_fmt(shape)}), {opts['world']} world, "
                       f"intervals of {slot_s:g} s",
        "source": describe(trace, nodes, spec, extra),
        "problem": "harmony",
        "options": {"world": opts["world"]},
        "time": {"slots": int(T), "slot_s": slot_s},
        "cluster": {"servers": servers},
        "jobs": jobs,
    }


def _servers(spec: ImportSpec) -> tuple[Cluster, dict[str, float]]:
    """Identical GPU servers: Alibaba's most common GPU-node shape, or a paper's cluster."""
    if spec.options.get("cluster", "alibaba") != "alibaba":
        found = cluster(spec, gpu_only=True)
        shapes = {_shape(n) for n in found.gpu_nodes}
        if len(shapes) != 1:
            raise UserError(f"the harmony family needs identical servers; cluster {found.name} has {len(shapes)} shapes",
                            field="--set cluster")
        return Cluster(found.name, found.gpu_nodes, found.provenance), dict(shapes.pop())
    gpu_nodes = [n for n in alibaba_nodes(spec.data) if n.gpus > 0 and n.gpu_model]
    if not gpu_nodes:
        raise UserError("the Alibaba node list has no GPU node", file=ALIBABA_NODES, field="--servers")
    groups: dict[tuple, list[Node]] = {}
    for node in gpu_nodes:
        groups.setdefault(_shape(node), []).append(node)
    shape, members = max(groups.items(), key=lambda kv: len(kv[1]))   # ties: the first shape in file order
    picked = pick_nodes(members, spec.servers, spec.rng("servers"), "GPU nodes of the most common shape", spec.notes)
    how = "all" if len(picked) == len(members) else f"{len(picked):,} drawn with seed {spec.seed}"
    models = sorted({n.gpu_model for n in members if n.gpu_model})
    prov = (f"cluster: Alibaba openb node list ({ALIBABA_NODES}, Weng et al., USENIX ATC 2023), {how} of its {len(members):,} "
            f"GPU nodes of the most common shape ({_fmt(dict(shape))}, GPU model {', '.join(models)}; {len(gpu_nodes):,} GPU "
            f"nodes in all): the harmony family assumes identical servers")
    return Cluster("alibaba", tuple(picked), prov), dict(shape)


def _shape(node: Node) -> tuple[tuple[str, float], ...]:
    if node.cpu is None or node.memory_gb is None:
        raise UserError(f"node {node.name} has no CPU or memory figure; the harmony family needs both", field="--set cluster")
    return (("cpu", float(node.cpu)), ("gpu", int(node.gpus)), ("memory_gb", float(node.memory_gb)))


def _fit(W: int, P: int, M: int, cap: np.ndarray, wd: np.ndarray, pd: np.ndarray) -> tuple[int, int]:
    """The largest (W, P) at most the given that the family's own gang test accepts (workers cut
    first, then PSs): :func:`~.view.greedy_gang`, the simulator's placement on the empty cluster,
    each task on the server with the most free capacity; on identical servers a job never uses
    more servers than it has tasks."""
    while True:
        if greedy_gang(np.tile(cap, (min(M, W + P), 1)), wd, W, pd, P) is not None:
            return W, P
        if W > 1:
            W -= 1
        elif P > 1:
            P -= 1
        else:
            raise UserError(f"one worker ({_fmt(WORKER)}) and {P} PS ({_fmt(PS)}) fit no server of this cluster",
                            field="--set cluster")


def _fmt(d: dict) -> str:
    return ", ".join(f"{v:g} {k.replace('_gb', ' GB')}" for k, v in d.items())
