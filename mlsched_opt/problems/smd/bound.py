"""The smd family's proven bound: the knapsack's LP relaxation on arrays (HiGHS, no Pyomo)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import sparse

from ...io.instance import Instance
from ...report import SolveOptions, SolveReport
from ...solvers.highs_lp import INF, ArrayLP, highspy_version
from ...tolerances import core_capacity_limit
from .decision import values
from .inner import Allocation, best_integer
from .view import smd_view


def lp_relaxation(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """The LP relaxation of :func:`.formulation.build_model`, on arrays and solved by HiGHS directly: an upper
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
