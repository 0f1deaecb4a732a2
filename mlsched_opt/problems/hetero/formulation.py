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

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyomo.environ as pyo
from scipy import sparse

from ...io.instance import Instance
from ...solvers import SolveOptions, SolveReport
from ...solvers.highs_lp import ArrayLP, highspy_version
from .configs import decision, ranged_table
from .view import HeteroView, hetero_view


def config_table(view: HeteroView, comm: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per job: the configurations it can run on and their JCTs (the ILP's columns)."""
    vectors, table = ranged_table(view, comm)
    return [(vectors[np.isfinite(row)], row[np.isfinite(row)]) for row in table]


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


def lp_relaxation(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """The configuration ILP's LP relaxation, built as a sparse array and solved by HiGHS directly.

    Same LP as relaxing :func:`build_model` (a test checks they agree); it has only ``S + G``
    rows, so HiGHS solves it in seconds even with hundreds of thousands of columns, where
    building the Pyomo model takes minutes.  Its value bounds the optimum from below.
    """
    start = time.perf_counter()
    view = hetero_view(instance)
    table = config_table(view, options["comm"])
    cols = [(i, n, j) for i, (n, j) in enumerate(table)]
    sizes = [len(j) for _, _, j in cols]
    total = sum(sizes)
    job_of = np.repeat(np.arange(view.S), sizes)
    counts = np.vstack([n for _, n, _ in cols]) if total else np.zeros((0, view.G), dtype=np.int64)
    rows = np.concatenate([job_of, *(np.full(total, view.S + c) for c in range(view.G))])
    col_idx = np.concatenate([np.arange(total)] * (1 + view.G))
    vals = np.concatenate([np.ones(total), *(counts[:, c].astype(float) for c in range(view.G))])
    keep = vals != 0
    a = sparse.csc_matrix((vals[keep], (rows[keep], col_idx[keep])), shape=(view.S + view.G, total))
    row_lo = np.concatenate([np.ones(view.S), np.full(view.G, -np.inf)])
    row_hi = np.concatenate([np.ones(view.S), view.counts.astype(float)])
    cost = np.concatenate([j for _, _, j in cols]) / view.S if total else np.zeros(0)
    build_s = time.perf_counter() - start
    result = ArrayLP(cost, a, row_lo, row_hi, np.zeros(total), np.ones(total), time_limit=solve_options.time_limit).solve()
    otherwise = "time-limit-no-solution" if result.status == "time-limit" else "error"
    status = {"optimal": "optimal", "infeasible": "infeasible"}.get(result.status, otherwise)
    value = result.objective if status == "optimal" else None
    return SolveReport(status=status, objective=value, bound=value, sense="min", solver="highs (configuration LP, direct)",
                       solver_version=highspy_version(), options={"time_limit": solve_options.time_limit},
                       build_s=build_s, solve_s=time.perf_counter() - start - build_s)


def decision_from_model(instance: Instance, options: Mapping[str, Any], model: pyo.ConcreteModel) -> dict[str, Any]:
    view, table = model._hetero
    x = np.zeros((view.S, view.G), dtype=np.int64)
    for i, k in model.P:
        if pyo.value(model.y[i, k]) > 0.5:
            x[i] = table[i][0][k]
    return decision(view, x, options)


def diagnose(instance: Instance, options: Mapping[str, Any]) -> str | None:
    """Why the instance is infeasible (called once a solve or an exhaustive search proved it is)."""
    view = hetero_view(instance)
    need = sum(j.k_range[0] for j in view.jobs)
    if need > view.K:
        return f"the jobs need at least {need} GPUs together (workers.min), the cluster has {view.K}"
    table = config_table(view, options["comm"])
    for job, (configs, _) in zip(view.jobs, table):
        if len(configs) == 0:
            return f"job {job.id} has no feasible worker set (memory caps, GPU models, or workers range)"
    fewest = [int(configs.sum(axis=1).min()) for configs, _ in table]
    if sum(fewest) > view.K:
        return (f"with their memory caps, GPU models and ranges the jobs need at least {sum(fewest)} GPUs together, "
                f"the cluster has {view.K}")
    return "no combination of the jobs' feasible worker sets (memory caps, GPU models, ranges) fits the cluster together"
