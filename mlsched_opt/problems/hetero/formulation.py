"""The exact reference: the configuration ILP of spec 003 section 2, as a Pyomo model.

One binary ``y[i, m]`` per job ``i`` and configuration ``n^m`` (a class-count vector the job
can run on), ``sum_m y[i, m] = 1`` per job, ``sum_{i, m} n^m_c y[i, m] <= N_c`` per class, and
minimise the average JCT ``(1/S) sum J_i(n^m) y[i, m]``.  ``J_i(n)`` is computed in closed form
(:mod:`.timing`, integer batches), and throughput and bandwidth depend only on the class, so
the ILP is exact for the model [DER].  It is linear with ``S (prod_c (N_c + 1) - 1)`` binaries
at most; HiGHS or CP-SAT prove its optimum, and its LP relaxation is the bound used to certify
answers on clusters too large to prove.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyomo.environ as pyo

from ...io.instance import Instance
from .configs import config_table
from .decision import decision
from .view import hetero_view


def build_model(instance: Instance, options: Mapping[str, Any]) -> pyo.ConcreteModel:
    view = hetero_view(instance)
    table = config_table(view, options["comm"])
    m = pyo.ConcreteModel(name=f"hetero_configurations_{instance.name}")
    pairs = [(i, k) for i, (n, _) in enumerate(table) for k in range(len(n))]
    m.P = pyo.Set(initialize=pairs, dimen=2, ordered=True)
    m.y = pyo.Var(m.P, domain=pyo.Binary)
    by_job: dict[int, list[tuple[int, int]]] = {i: [] for i in range(view.S)}
    for p in pairs:
        by_job[p[0]].append(p)
    scale = 1.0 / view.S
    m.avg_jct = pyo.Objective(expr=sum(scale * float(table[i][1][k]) * m.y[i, k] for i, k in pairs), sense=pyo.minimize)
    # a job with no configuration at all (memory caps, GPU models, size range) keeps its row:
    # "place it" is then written over a variable fixed at 0, so both solvers report the model
    # infeasible instead of Pyomo refusing an empty row that resolves to the constant False
    stuck = [i for i in range(view.S) if not by_job[i]]
    m.unplaceable = pyo.Var(stuck, domain=pyo.Binary, bounds=(0, 0))
    m.one = pyo.Constraint(range(view.S), rule=lambda mm, i: (sum(mm.y[p] for p in by_job[i]) if by_job[i] else mm.unplaceable[i]) == 1)

    def capacity(mm, c):
        used = [(int(table[i][0][k, c]), mm.y[i, k]) for i, k in pairs if table[i][0][k, c] > 0]
        return sum(a * y for a, y in used) <= int(view.counts[c]) if used else pyo.Constraint.Skip

    m.capacity = pyo.Constraint(range(view.G), rule=capacity)
    m._hetero = (view, table)
    # HiGHS's MIP presolve on this shape (S + G rows, up to hundreds of thousands of configuration
    # columns) is what takes the time, and past its time limit: at 96 GPUs (287k columns) it sat in
    # presolve beyond a 120 s limit at 9.7 GB and growing; with its reductions off HiGHS proved that
    # optimum in 54 s at 3.4 GB, and at 48 GPUs in 0.5 s instead of 35 s (upstream HiGHS#2326 reports
    # the same shape).  A presolve-off re-solve (certification) drops it with presolve itself.
    m._highs_options = {"presolve_reduction_limit": 0}
    return m


def decision_from_model(instance: Instance, options: Mapping[str, Any], model: pyo.ConcreteModel) -> dict[str, Any]:
    view, table = model._hetero
    x = np.zeros((view.S, view.G), dtype=np.int64)
    for i, k in model.P:
        if pyo.value(model.y[i, k]) > 0.5:
            x[i] = table[i][0][k]
    return decision(view, x, options)
