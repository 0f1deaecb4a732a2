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

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyomo.environ as pyo
from scipy import sparse

from ...io.instance import Instance
from ...io.solution import plain
from ...solvers import SolveOptions, SolveReport
from ...solvers.highs_lp import INF, ArrayLP, highspy_version
from ...tolerances import core_capacity_limit
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


def lp_relaxation(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """The LP relaxation of :func:`build_model`, on arrays and solved by HiGHS directly: an upper
    bound on the total utility of every feasible decision.

    Same LP as relaxing the Pyomo model (a test checks they agree): one column per job with a
    feasible allocation, its exact inner optimum ``u_i*`` as cost (the configuration LP with one
    column per ``(w, p)`` has the same value, since every configuration of a job reserves the
    same declared limit and ``u_i*`` is the best of them), ``0 <= x <= 1`` and the capacity rows.
    It has only as many rows as resources, so HiGHS solves it in milliseconds at thousands of
    jobs; the per-job enumeration before it stops at ``solve_options.time_limit`` and then no
    bound is reported (status ``time-limit-no-solution``).
    """
    start = time.perf_counter()
    deadline = start + solve_options.time_limit
    view = smd_view(instance, options["overlap"])
    allocations: list[Allocation] = []
    for job in view.jobs:
        if time.perf_counter() > deadline:
            return _bound_report("time-limit-no-solution", None, solve_options, time.perf_counter() - start, 0.0,
                                 f"the time limit ended the per-job enumeration after {len(allocations)} of {len(view.jobs)} jobs")
        allocations.append(best_integer(job))
    u = values(view, allocations)
    cols = np.flatnonzero([a.feasible for a in allocations])
    limits = view.limits()[cols]
    a = sparse.csc_matrix(limits.T)
    build_s = time.perf_counter() - start
    left = deadline - time.perf_counter()
    if len(cols) == 0:
        return _bound_report("optimal", 0.0, solve_options, build_s, 0.0, "no job can run: the bound is 0")
    if left <= 0:
        return _bound_report("time-limit-no-solution", None, solve_options, build_s, 0.0, "no time was left to solve the LP")
    rows = len(view.resources)
    limit = core_capacity_limit(np.asarray(view.capacity, dtype=float))   # the checker's (C1) limits
    result = ArrayLP(u[cols], a, np.full(rows, -INF), limit, np.zeros(len(cols)), np.ones(len(cols)),
                     maximize=True, time_limit=left).solve()
    solve_s = time.perf_counter() - start - build_s
    # only a proven optimum bounds the integer optimum: a time-limited primal point does not
    status = {"optimal": "optimal", "infeasible": "infeasible"}.get(
        result.status, "time-limit-no-solution" if result.status == "time-limit" else "error")
    value = result.objective if status == "optimal" else None
    note = f"LP relaxation of the knapsack over {len(cols)} jobs x {rows} resources"
    return _bound_report(status, value, solve_options, build_s, solve_s, note)


def _bound_report(status: str, value: float | None, solve_options: SolveOptions, build_s: float, solve_s: float,
                  message: str) -> SolveReport:
    return SolveReport(status=status, objective=value, bound=value, sense="max", solver="highs (knapsack LP, arrays)",
                       solver_version=highspy_version(), options={"time_limit": solve_options.time_limit},
                       build_s=build_s, solve_s=solve_s, message=message)


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
