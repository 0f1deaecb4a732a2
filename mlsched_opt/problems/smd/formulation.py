"""The exact reference: per-job enumeration, then the outer knapsack as a Pyomo ILP.

Exactness [DER, spec 002 section 2.1].  Capacity (C1) counts each admitted job's declared
limit ``v[i]``, which does not depend on ``(w, p)``; each job's utility depends only on its own
``(w, p)``, constrained only by its own limit (C2).  So for any admission ``x`` the best
allocations are chosen job by job, and since ``mu_i`` is non-increasing that is
``u_i* = mu_i(min tau_i)``.  Hence ``OPT(P) = max {sum u_i* x_i : sum v[i] x_i <= C}``.  The
inner minimum is found by enumerating every integer ``(w, p)`` in the job's box (finite and
two-dimensional, so exhaustive enumeration is exact and cheap), and the knapsack is solved
by HiGHS or CP-SAT with a proof of optimality at the requested gap.  This is the "optimal"
reference of the paper's Fig. 11.  A job whose smallest allocation breaks its own limit
cannot be admitted (P17).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyomo.environ as pyo

from ...io.instance import Instance
from ...tolerances import core_capacity_limit
from .decision import decision, exact_inner, values
from .view import smd_view


def build_model(instance: Instance, options: Mapping[str, Any]) -> pyo.ConcreteModel:
    view = smd_view(instance, options["overlap"])
    allocations = exact_inner(view)
    u = values(view, allocations)
    ids = [j.id for j in view.jobs]
    m = pyo.ConcreteModel(name=f"smd_knapsack_{instance.name}")
    m.J = pyo.Set(initialize=[i for i, a in zip(ids, allocations) if a.feasible], ordered=True)
    m.R = pyo.Set(initialize=view.resources, ordered=True)
    pos = {job_id: k for k, job_id in enumerate(ids)}
    rpos = {r: k for k, r in enumerate(view.resources)}
    limits = view.limits()
    m.x = pyo.Var(m.J, domain=pyo.Binary)
    m.value = pyo.Objective(expr=sum(float(u[pos[j]]) * m.x[j] for j in m.J), sense=pyo.maximize)

    def capacity(mm, r):
        used = [(float(limits[pos[j], rpos[r]]), mm.x[j]) for j in mm.J if limits[pos[j], rpos[r]] > 0]
        if not used:
            return pyo.Constraint.Skip
        return sum(c * x for c, x in used) <= float(core_capacity_limit(view.capacity[rpos[r]]))   # the checker's limit

    m.capacity = pyo.Constraint(m.R, rule=capacity)
    m._smd_allocations = dict(zip(ids, allocations))
    m._smd_knapsack = (ids, u, limits, np.asarray(view.capacity, dtype=float))
    return m


def exact_start(instance: Instance, options: Mapping[str, Any], model: pyo.ConcreteModel, seconds: float) -> str:
    """A greedy knapsack answer as the exact solve's start: jobs by utility per unit of their
    scarcest normalized reservation, each admitted while it fits (the model's own data, so the
    start is a point of the model)."""
    ids, u, limits, capacity = model._smd_knapsack
    share = np.divide(limits, capacity, out=np.zeros_like(limits, dtype=float), where=capacity > 0).max(axis=1, initial=0.0)
    order = np.argsort(-u / np.maximum(share, 1e-12), kind="stable")
    used = np.zeros_like(capacity)
    admitted = set()
    for k in order:
        if ids[k] in model.x and u[k] > 0 and np.all(used + limits[k] <= capacity + 1e-9):
            used += limits[k]
            admitted.add(ids[k])
    model._start = [(var, float(j in admitted)) for j, var in model.x.items()]
    return f"start: greedy knapsack, utility {sum(u[k] for k in range(len(ids)) if ids[k] in admitted):.6g}"


def decision_from_model(instance: Instance, options: Mapping[str, Any], model: pyo.ConcreteModel) -> dict[str, Any]:
    admitted = [j for j in model.J if pyo.value(model.x[j]) > 0.5]
    return decision(admitted, model._smd_allocations)
