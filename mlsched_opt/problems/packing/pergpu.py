"""GPU by GPU (problem option ``gpus = "per-gpu"``): each GPU of a node is its own capacity of 1.

The rule (the checker's, the exact model's and every method's):

* a server's ``gpu`` capacity must be a whole number ``G``; its GPUs are indexed ``0 .. G-1``;
* a task whose ``gpu`` demand ``d`` is below 1 (a *fractional* task, Alibaba's ``gpu_milli < 1000``)
  takes the share ``d`` of ONE GPU;
* a task whose demand is a whole number ``D >= 1`` (a *whole-GPU* task) takes ``D`` GPUs of its
  server entirely: each of them carries a load of 1, so no other task, fractional or whole, may
  share them (Kubernetes GPU-sharing schedulers, and the paper's simulator, hand out whole GPUs
  only when they are completely free);
* a demand above 1 that is not a whole number has no per-GPU meaning: the instance is refused
  (an :class:`~mlsched_opt.errors.InstanceError` naming the job's field; the checker's rule ``instance``);
* every GPU's load (shares plus whole GPUs) is at most 1 (up to the checker's tolerance,
  :func:`~mlsched_opt.tolerances.core_capacity_limit`); the pooled rules (every resource of a
  server, GPU models, task counts) hold as well.

The decision records the GPUs: part ``gpus`` = ``{job: {"workers" | "ps": {server: [GPU index, ...]}}}``
with one index per fractional task, ``D`` per whole-GPU task, on every server the placement names
for a task that demands GPUs.  Per-GPU is a restriction of pooled (summing a per-GPU assignment's
loads gives a pooled one), so every pooled bound also bounds the per-GPU optimum.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...checking.core import CheckResult
from ...errors import InstanceError
from ...io.instance import Instance, Server
from ...tolerances import core_capacity_limit

if TYPE_CHECKING:  # the checker imports this module: it reads no view
    from .view import PackingView

#: the problem option and its values (:data:`.options.GPU_MODES`)
OPTION = "gpus"
PER_GPU = "per-gpu"
TASKS = (("worker", "workers"), ("ps", "ps"))
#: a demand or capacity within this of a whole number is that number (the importer rounds to 3 decimals)
_WHOLE_TOL = 1e-9


def per_gpu(options: Mapping[str, Any]) -> bool:
    """Whether the options ask for the GPU-by-GPU problem."""
    return options.get(OPTION, "pooled") == PER_GPU


def whole_gpus(need: float) -> int | None:
    """``D`` for a whole-GPU demand, 0 for a fractional (or no) demand, ``None`` for one with no
    per-GPU meaning (above 1 and not whole, or not a finite number)."""
    if not np.isfinite(need) or need < 0:
        return None
    if need < 1 - _WHOLE_TOL:
        return 0
    near = round(need)
    return int(near) if abs(need - near) <= _WHOLE_TOL else None


def gpu_count(server: Server) -> int | None:
    """The server's whole number of GPUs, ``None`` if its ``gpu`` capacity is not one."""
    cap = float(server.capacity.get("gpu", 0.0))
    if not np.isfinite(cap) or cap < 0 or abs(cap - round(cap)) > _WHOLE_TOL or cap > 2**20:
        return None
    return int(round(cap))


@dataclass(frozen=True)
class GpuLayout:
    """The per-GPU arrays of a view: ``count[s]`` GPUs per server; per task kind, ``need[j]`` the
    task's GPU demand and ``whole[j]`` its whole GPUs (0 for a fractional task or none)."""

    count: np.ndarray
    need: dict[str, np.ndarray]
    whole: dict[str, np.ndarray]


def layout(view: PackingView) -> GpuLayout:
    """The view's GPU layout; an :class:`InstanceError` naming the field where the instance has no
    per-GPU meaning (a non-whole GPU count, a demand above 1 that is not whole)."""
    inst = view.instance
    count = np.zeros(len(inst.servers), dtype=np.int64)
    for s in inst.servers:
        g = gpu_count(s)
        if g is None:
            raise InstanceError(f"gpus = per-gpu needs a whole number of GPUs per server; {s.name} has "
                                f"{s.capacity.get('gpu')!r}", inst.file, f"cluster.servers.{s.name}.capacity.gpu")
        count[s.index] = g
    g_at = view.resources.index("gpu") if "gpu" in view.resources else None
    need, whole = {}, {}
    for task, _key in TASKS:
        d = view.demand[task][:, g_at] if g_at is not None else np.zeros(len(inst.jobs))
        w = np.zeros(len(d), dtype=np.int64)
        for j in np.flatnonzero(d > 0):
            got = whole_gpus(float(d[j]))
            if got is None:
                raise InstanceError(f"gpus = per-gpu takes a GPU demand below 1 (a share of one GPU) or a whole number "
                                    f"of GPUs; job {inst.jobs[j].id} asks for {d[j]:g}", inst.file,
                                    f"{inst.jobs[j].path}.demand.{task}.gpu")
            w[j] = got
        need[task], whole[task] = d.astype(float), w
    return GpuLayout(count, need, whole)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_gpus(result: CheckResult, instance: Instance, decision: Mapping[str, Any],
               placed: Mapping[str, Mapping[str, Mapping[str, int]]]) -> None:
    """The per-GPU rules of the module docstring on a decision whose task counts were read:
    ``placed[job][task] = {server: count}`` for the admitted jobs.  Any value is read without
    crashing; what is wrong is a violation (rules ``domain``, ``gpu-assignment``, ``gpu-capacity``,
    ``instance``)."""
    part = decision.get("gpus")
    if part is None:
        part = {}
    if not isinstance(part, Mapping):
        result.add("domain", "gpus", f"must be a mapping job -> {{workers, ps}} -> server -> [GPU index], got {type(part).__name__}")
        part = {}
    for key in part:
        if key not in placed and part[key]:
            result.add("gpu-assignment", f"gpus.{key}", "names GPUs for a job that is not admitted (or does not exist)")
    bad_servers = {s.name for s in instance.servers if gpu_count(s) is None}
    load: dict[tuple[int, int], float] = {}
    for job_id, tasks in placed.items():
        job = instance.job(job_id)
        if job is None:
            continue
        entry = part.get(job_id)
        if entry is None:
            entry = {}
        if not isinstance(entry, Mapping):
            result.add("domain", f"gpus.{job_id}", f"must be a mapping {{workers, ps}}, got {type(entry).__name__}")
            entry = {}
        for k in entry:
            if k not in ("workers", "ps") and entry[k]:
                result.add("decision", f"gpus.{job_id}.{k}", "not read by the packing checker, which reads workers, ps")
        for task, key in TASKS:
            need = float(job.demand(task).get("gpu", 0.0))
            counts = tasks.get(task, {})
            given = entry.get(key)
            if given is None:
                given = {}
            if not isinstance(given, Mapping):
                result.add("domain", f"gpus.{job_id}.{key}", f"must be a mapping server -> [GPU index], got {type(given).__name__}")
                given = {}
            for name in given:
                if (name not in counts or need <= 0) and given[name]:
                    result.add("gpu-assignment", f"gpus.{job_id}.{key}.{name}",
                               "names GPUs where the placement puts no task of this kind that demands GPUs")
            if need <= 0:
                continue
            whole = whole_gpus(need)
            if whole is None:
                result.add("instance", f"{job.path}.demand.{task}.gpu",
                           f"gpus = per-gpu takes a share below 1 or a whole number of GPUs, got {need:g}")
                continue
            for name, n in counts.items():
                server = instance.server(name)
                if server is None:
                    continue
                if name in bad_servers:
                    result.add("instance", f"cluster.servers.{name}.capacity.gpu",
                               f"gpus = per-gpu needs a whole number of GPUs, got {server.capacity.get('gpu')!r}")
                    continue
                g = gpu_count(server) or 0
                ids = given.get(name)
                want = n * max(whole, 1)
                if (not isinstance(ids, list) or len(ids) != want
                        or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < g for i in ids)):
                    result.add("gpu-assignment", f"gpus.{job_id}.{key}.{name}",
                               f"needs a list of {want} GPU indices in 0..{g - 1} ({n} task(s) of "
                               f"{'a share of one GPU' if whole == 0 else f'{whole} whole GPU(s)'}), got {_short(ids)}")
                    continue
                share = need if whole == 0 else 1.0
                for i in ids:
                    load[(server.index, i)] = load.get((server.index, i), 0.0) + share
    limit = core_capacity_limit(1.0)
    for (s, i), v in sorted(load.items()):
        if v > limit:
            result.add("gpu-capacity", f"{instance.servers[s].name}, GPU {i}",
                       f"holds {v:g} > 1 (shares and whole GPUs of one GPU; a whole GPU is not shared)")


def assign(view: PackingView, decision: Mapping[str, Any], objective: str) -> dict[str, Any] | None:
    """A pooled decision made per-GPU: on each server, the tasks that demand GPUs, whole-GPU tasks
    first and shares in decreasing size, each share on the first GPU with room (first-fit
    decreasing); a job any of whose tasks finds no GPU is dropped (``weight``) or the answer is
    ``None`` (``servers``: every job must be placed).  Used by the pooled heuristics (``ffd``,
    ``ffd-large``, ``bfd``) under per-gpu; it proves nothing when it drops a job."""
    lay = layout(view)
    index = {job.id: j for j, job in enumerate(view.jobs)}
    sindex = {s.name: s.index for s in view.instance.servers}
    items: dict[int, list[tuple[float, int, str, str, int]]] = {}
    for job_id, tasks in decision["placement"].items():
        j = index[job_id]
        for task, key in TASKS:
            if lay.need[task][j] <= 0:
                continue
            for name, n in tasks.get(key, {}).items():
                items.setdefault(sindex[name], []).append((-float(lay.need[task][j]), j, task, name, int(n)))
    dropped: set[int] = set()
    gpus: dict[str, dict[str, dict[str, list[int]]]] = {}
    for s, todo in items.items():
        free = np.ones(int(lay.count[s]))
        for _neg, j, task, name, n in sorted(todo, key=lambda t: (lay.whole[t[2]][t[1]] == 0, t[0], t[1])):
            ids: list[int] = []
            for _ in range(n):
                if lay.whole[task][j]:
                    d = int(lay.whole[task][j])
                    open_ = np.flatnonzero(free >= 1 - 1e-9)
                    if len(open_) < d:
                        break
                    take = open_[:d]
                else:
                    room = np.flatnonzero(free >= lay.need[task][j] - 1e-9)
                    if not len(room):
                        break
                    take = room[:1]
                free[take] -= 1.0 if lay.whole[task][j] else lay.need[task][j]
                ids += [int(i) for i in take]
            else:
                key = dict(TASKS)[task]
                gpus.setdefault(view.jobs[j].id, {}).setdefault(key, {})[name] = ids
                continue
            dropped.add(j)
    if dropped and objective == "servers":
        return None
    # a dropped job's GPUs stay taken on the servers already assigned: a safe over-reservation
    keep = [j for j in decision["admitted"] if index[j] not in dropped]
    return {"admitted": keep, "placement": {j: decision["placement"][j] for j in keep},
            "gpus": {j: gpus[j] for j in keep if j in gpus}}


def refuse(method: str, options: Mapping[str, Any]) -> None:
    """An :class:`~mlsched_opt.errors.OptionError` naming option ``gpus`` for a method that packs pooled GPUs only."""
    if per_gpu(options):
        from ...errors import OptionError

        raise OptionError(f"--method {method} packs a node's GPUs as one pool; under gpus = per-gpu use exact, ffd, ffd-large, "
                          "bfd or an online method (fgd, best-fit, dot-product, gpu-packing, gpu-clustering, random-fit)",
                          field="gpus")


def add_gpu_block(m: Any, view: PackingView) -> None:
    """The per-GPU rows on the Pyomo model of :mod:`.formulation` (its ``workers``/``ps`` count
    variables): ``gpu[task, j, s, g]`` (integer) counts the tasks of ``j`` on GPU ``g`` of ``s``
    (fractional tasks) or the whole GPUs they take there (0 or 1, by the load row); their sum over
    ``g`` is the tasks' count times their whole GPUs (1 for a share); every GPU's load, shares plus
    whole GPUs, is at most the checker's limit on 1.  Variables only for pairs whose task demands GPUs."""
    import pyomo.environ as pyo

    lay = layout(view)
    jindex = {job.id: j for j, job in enumerate(view.jobs)}
    sindex = {s.name: s.index for s in view.instance.servers}
    index = []
    for task, var_name in TASKS:
        for j, s in getattr(m, var_name):
            if lay.need[task][jindex[j]] > 0:
                index += [(task, j, s, g) for g in range(int(lay.count[sindex[s]]))]
    m.gpu_index = pyo.Set(initialize=index, dimen=4, ordered=True)
    m.gpu = pyo.Var(m.gpu_index, domain=pyo.NonNegativeIntegers)
    by_pair: dict[tuple[str, str, str], list[Any]] = {}
    by_gpu: dict[tuple[str, int], list[Any]] = {}
    for task, j, s, g in index:
        by_pair.setdefault((task, j, s), []).append(m.gpu[task, j, s, g])
        w = int(lay.whole[task][jindex[j]])
        by_gpu.setdefault((s, g), []).append((1.0 if w else float(lay.need[task][jindex[j]])) * m.gpu[task, j, s, g])
    counts = dict(TASKS)

    def split(mm: Any, task: str, j: str, s: str) -> Any:
        w = int(lay.whole[task][jindex[j]])
        return sum(by_pair.get((task, j, s), [])) == max(w, 1) * getattr(mm, counts[task])[j, s]

    pairs = [(task, j, s) for task, var_name in TASKS for j, s in getattr(m, var_name) if lay.need[task][jindex[j]] > 0]
    m.gpu_split = pyo.Constraint(pairs, rule=split)
    limit = core_capacity_limit(1.0)
    m.gpu_load = pyo.Constraint(list(by_gpu), rule=lambda mm, s, g: sum(by_gpu[(s, g)]) <= limit)


def gpus_from_model(m: Any) -> dict[str, dict[str, dict[str, list[int]]]]:
    """The decision's ``gpus`` part from a solved model with :func:`add_gpu_block`'s variables."""
    import pyomo.environ as pyo

    out: dict[str, dict[str, dict[str, list[int]]]] = {}
    for task, j, s, g in m.gpu_index:
        n = int(round(pyo.value(m.gpu[task, j, s, g]) or 0))
        if n > 0:
            out.setdefault(j, {}).setdefault(dict(TASKS)[task], {}).setdefault(s, []).extend([g] * n)
    return out
