"""The exact packing ILP as a Pyomo model.

Variables: ``admit[j]`` (binary), ``workers[j, s]`` and ``ps[j, s]`` (integer counts, only for
servers that may host one such task), and in ``servers`` mode ``used[s]`` (binary).

* ``weight`` mode: maximize the admitted weight ``sum_j weight_j admit_j``.
* ``servers`` mode: every job is placed; minimize the number of servers used.

Constraints: an admitted job gets exactly its workers and PSs; every server's capacity holds
in every resource, up to the load the checker accepts (:func:`.view.checker_limits`).
Under ``gpus = per-gpu`` the rows of :func:`.pergpu.add_gpu_block` place every GPU task on GPUs.
In ``servers`` mode a server's capacity is ``capacity * used[s]``, with
``workers[j, s] <= count_j used[s]`` to tighten the LP relaxation, and identical servers of
one group are opened in order (``used[s_k] >= used[s_k+1]``) to break their symmetry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyomo.environ as pyo

from ...io.instance import Instance
from .decision import TASKS
from .pergpu import add_gpu_block, gpus_from_model, per_gpu
from .view import PackingView, checker_limits, packing_view


def build_model(instance: Instance, options: Mapping[str, Any]) -> pyo.ConcreteModel:
    view = packing_view(instance)
    m = _model(checker_limits(view), options["objective"])
    if per_gpu(options):
        add_gpu_block(m, view)  # the GPU-by-GPU rows of pergpu.py on the same count variables
    return m


def _model(view: PackingView, objective: str) -> pyo.ConcreteModel:
    inst = view.instance
    jobs = [j.id for j in inst.jobs]
    servers = [s.name for s in inst.servers]
    m = pyo.ConcreteModel(name=f"packing_{objective}_{inst.name}")
    m.J = pyo.Set(initialize=jobs, ordered=True)
    m.S = pyo.Set(initialize=servers, ordered=True)
    m.admit = pyo.Var(m.J, domain=pyo.Binary)
    jindex = {j: i for i, j in enumerate(jobs)}
    sindex = {s: i for i, s in enumerate(servers)}
    rindex = {r: i for i, r in enumerate(view.resources)}
    pairs: dict[str, list[tuple[str, str]]] = {}
    servers_of: dict[str, dict[str, list[str]]] = {}
    for task, var_name in TASKS:
        count, ok = view.count(task), view.eligible[task]
        servers_of[task] = {jobs[j]: [servers[s] for s in range(len(servers)) if ok[j, s]] if count[j] > 0 else []
                            for j in range(len(jobs))}
        pairs[task] = [(j, s) for j in jobs for s in servers_of[task][j]]
        setattr(m, f"{var_name}_pairs", pyo.Set(initialize=pairs[task], dimen=2, ordered=True))
        setattr(m, var_name, pyo.Var(getattr(m, f"{var_name}_pairs"), domain=pyo.NonNegativeIntegers,
                                     bounds=lambda _m, j, s, c=count: (0, int(c[jindex[j]]))))

    def placed(task: str, var_name: str):
        count = view.count(task)

        def rule(mm, j):
            terms = [getattr(mm, var_name)[j, s] for s in servers_of[task][j]]
            n = int(count[jindex[j]])
            if n == 0:
                return pyo.Constraint.Skip
            if not terms:
                return mm.admit[j] == 0  # no server may host this task: the job cannot be admitted
            return sum(terms) == n * mm.admit[j]

        return rule

    m.workers_placed = pyo.Constraint(m.J, rule=placed("worker", "workers"))
    m.ps_placed = pyo.Constraint(m.J, rule=placed("ps", "ps"))

    if objective == "servers":
        m.used = pyo.Var(m.S, domain=pyo.Binary)
        for j in jobs:
            m.admit[j].fix(1)
    by_server: dict[str, list] = {s: [] for s in servers}
    for task, var_name in TASKS:
        for j, s in pairs[task]:
            by_server[s].append((task, jindex[j], getattr(m, var_name)[j, s]))
    rows = [(s, r) for s in servers for r in range(len(view.resources))
            if any(view.demand[task][j, r] > 0 for task, j, _ in by_server[s])]

    def capacity_rule(mm, s, res):
        r, si = rindex[res], sindex[s]
        load = sum(view.demand[task][j, r] * v for task, j, v in by_server[s] if view.demand[task][j, r] > 0)
        cap = view.capacity[si, r]
        return load <= cap * (mm.used[s] if objective == "servers" else 1)

    m.capacity = pyo.Constraint([(s, view.resources[r]) for s, r in rows], rule=capacity_rule)

    if objective == "servers":
        m.open_before_use = pyo.Constraint(
            [(task, j, s) for task, var_name in TASKS for j, s in pairs[task]],
            rule=lambda mm, task, j, s: getattr(mm, dict(TASKS)[task])[j, s] <= int(view.count(task)[jindex[j]]) * mm.used[s])
        order = [(a.name, b.name) for a, b in zip(inst.servers, inst.servers[1:]) if a.group == b.group]
        m.symmetry = pyo.Constraint(order, rule=lambda mm, a, b: mm.used[a] >= mm.used[b])
        m.objective = pyo.Objective(expr=sum(m.used[s] for s in m.S), sense=pyo.minimize)
    else:
        weight = {j.id: j.weight for j in inst.jobs}
        m.objective = pyo.Objective(expr=sum(weight[j] * m.admit[j] for j in m.J), sense=pyo.maximize)
    return m


def decision_from_model(instance: Instance, options: Mapping[str, Any], m: pyo.ConcreteModel) -> dict[str, Any]:
    admitted = [j for j in m.J if pyo.value(m.admit[j]) > 0.5]
    placement: dict[str, dict[str, dict[str, int]]] = {j: {"workers": {}, "ps": {}} for j in admitted}
    for _task, var_name in TASKS:
        var = getattr(m, var_name)
        for (j, s) in var:
            n = int(round(pyo.value(var[j, s]) or 0))
            if n and j in placement:
                placement[j][var_name][s] = n
    if hasattr(m, "gpu_index"):
        gpus = gpus_from_model(m)
        return {"admitted": admitted, "placement": placement, "gpus": {j: gpus[j] for j in admitted if j in gpus}}
    return {"admitted": admitted, "placement": placement}
