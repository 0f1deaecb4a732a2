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
from ...io.solution import plain
from .inner import Allocation, best_integer
from .view import SmdView, smd_view


def exact_inner(view: SmdView) -> list[Allocation]:
    return [best_integer(job) for job in view.jobs]


def values(view: SmdView, allocations: list[Allocation]) -> np.ndarray:
    """``u_i = weight_i mu_i(tau_i)`` per job (0 when it has no feasible allocation)."""
    weight = np.array([view.instance.jobs[j.index].weight for j in view.jobs])
    return np.array([w * float(j.utility(a.tau)) if a.feasible else 0.0
                     for w, j, a in zip(weight, view.jobs, allocations)])


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
        return sum(c * x for c, x in used) <= float(view.capacity[rpos[r]])

    m.capacity = pyo.Constraint(m.R, rule=capacity)
    m._smd_allocations = dict(zip(ids, allocations))
    return m


def decision_from_model(instance: Instance, options: Mapping[str, Any], model: pyo.ConcreteModel) -> dict[str, Any]:
    admitted = [j for j in model.J if pyo.value(model.x[j]) > 0.5]
    return decision(admitted, model._smd_allocations)


def decision(admitted: list[str], allocations: Mapping[str, Allocation], stats: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The decision as plain JSON values (str, int, float, bool, list, dict): numpy scalars from
    the grid, the rounding draws or the knapsack never reach a solution file."""
    out: dict[str, Any] = {
        "admitted": list(admitted),
        "extra": {"allocation": {j: {"workers": allocations[j].w, "ps": allocations[j].p} for j in admitted}},
    }
    if stats:  # counts only: timings go to the report, so the same seed gives the same decision
        out["extra"]["stats"] = {k: v for k, v in stats.items() if not k.endswith("_s")}
    return plain(out)
