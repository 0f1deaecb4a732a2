"""The linearized-interference surrogate of spec 004 section 6c [PROP], as a Pyomo MILP.

Integer ``w[j,m]``, ``p[j,m]`` (workers, PSs of job j on server m), binary ``x[j,m]`` (j has a
worker on m) and, for all-reduce jobs, binary ``spans[j]``.  The step time of j's workers on m is
linear in the task counts there:

    tau[j,m] = t_comp(j) * (1 + sum_k alpha[l(j), l(k)] * (w[k,m] + p[k,m]) - alpha[l(j), l(j)])
               + comm[j,m]

with ``alpha[a, b]`` fitted from the true world's pairwise runs (one worker + one PS of ``a``
beside one + one of ``b``: half the step-time increase, per co-located task; the job's own tasks
count too, spec pitfall P12), ``comm`` = ``t_loc p/P + t_rem fan (P - p)/P`` for a PS job
(``fan = sqrt(max(1, W/P))``, every worker counted remote) and ``t_loc + (t_rem - t_loc) spans``
for an all-reduce job.  The synchronous barrier is an epigraph: an integer ``T[j]`` (units of
1e-4 s) with ``T[j] >= tau[j,m] - bigM (1 - x[j,m])``.  The objective is the average over jobs of
``iterations(j) * T[j]`` in intervals: each job's duration if its first co-runners stayed, a
proxy for the average JCT.  Coefficients are rounded to 1e-6 s so that CP-SAT gets exact integer
rows; :func:`surrogate_values` evaluates the same rounded model with numpy, which is how the
tests check that a proven surrogate optimum equals exhaustive search on the surrogate.

The surrogate's placement is then scored in the true simulator (``--method surrogate``).  It is the
family's ``build_model`` (what ``mlsched export`` writes) although it is not exact: the true world's
step times are not linear, so the family is registered with ``bounded=False`` and its ``exact`` is the
exhaustive search of :mod:`.exact`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyomo.environ as pyo

from ...io.instance import Instance
from ...tolerances import capacity_limit
from .baselines import pair_table
from .decision import placement_decision
from .view import HarmonyView, view_of

UNIT = 1e-4  # seconds per unit of T


@dataclass(frozen=True)
class SurrogateCoefficients:
    """tau[j, m] in units of UNIT = base[j] + coef[j] @ tasks[:, m] + loc[j] * p[j, m] + span[j] * spans[j]."""

    base: np.ndarray
    coef: np.ndarray
    loc: np.ndarray
    span: np.ndarray
    iterations: np.ndarray


def coefficients(view: HarmonyView) -> SurrogateCoefficients:
    world, jobs = view.world, view.jobs
    sd = pair_table(world)
    alpha = (1.0 / (1.0 - sd) - 1.0) / 2.0
    k = jobs.kind
    c = world.t_comp[k]
    a = alpha[k][:, k]
    P = np.maximum(jobs.P, 1)
    fan = np.sqrt(np.maximum(1.0, jobs.W / P))
    rem = world.t_rem[k] * fan / P
    r = lambda x: np.round(np.asarray(x, float) / UNIT, 2)  # noqa: E731
    base = np.where(jobs.is_ps, c * (1 - np.diag(a)) + rem * P, c * (1 - np.diag(a)) + world.t_loc[k])
    loc = np.where(jobs.is_ps, world.t_loc[k] / P - rem, 0.0)
    span = np.where(jobs.is_ps, 0.0, world.t_rem[k] - world.t_loc[k])
    iterations = view.samples / (jobs.W * world.batch[k])
    return SurrogateCoefficients(r(base), r(c[:, None] * a), r(loc), r(span), iterations)


def surrogate_values(view: HarmonyView, w: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The surrogate objective of placements ``(B, J, M)`` (what the MILP minimizes)."""
    co = coefficients(view)
    tasks = w + p
    spans = ((w > 0).sum(axis=2) > 1)
    tau = (co.base[None, :, None] + np.einsum("jk,bkm->bjm", co.coef, tasks) + co.loc[None, :, None] * p
           + (co.span[None, :] * spans)[..., None])
    T = np.where(w > 0, np.ceil(tau - 1e-7), 0).max(axis=2)
    return (co.iterations * T * UNIT).sum(axis=1) / view.slot_s / view.J


def build_model(instance: Instance, options: Mapping[str, Any]) -> pyo.ConcreteModel:
    view = view_of(instance, options)
    co = coefficients(view)
    J, M = range(view.J), range(view.M)
    per_server = _max_tasks_per_server(view)
    bigM = co.base + np.maximum(co.coef, 0).sum(axis=1) * per_server + np.abs(co.loc) * view.jobs.P + co.span
    m = pyo.ConcreteModel(name=f"harmony-surrogate {view.J} jobs x {view.M} servers")
    m.J, m.M = pyo.Set(initialize=J), pyo.Set(initialize=M)
    m.w = pyo.Var(m.J, m.M, domain=pyo.NonNegativeIntegers, bounds=lambda _, j, s: (0, int(view.jobs.W[j])))
    m.p = pyo.Var(m.J, m.M, domain=pyo.NonNegativeIntegers, bounds=lambda _, j, s: (0, int(view.jobs.P[j])))
    m.x = pyo.Var(m.J, m.M, domain=pyo.Binary)
    m.spans = pyo.Var(m.J, domain=pyo.Binary)
    m.T = pyo.Var(m.J, domain=pyo.NonNegativeIntegers, bounds=lambda _, j: (0, int(np.ceil(bigM[j])) + 1))
    m.workers = pyo.Constraint(m.J, rule=lambda m, j: sum(m.w[j, s] for s in M) == int(view.jobs.W[j]))
    m.ps = pyo.Constraint(m.J, rule=lambda m, j: sum(m.p[j, s] for s in M) == int(view.jobs.P[j]))
    m.host_hi = pyo.Constraint(m.J, m.M, rule=lambda m, j, s: m.w[j, s] <= int(view.jobs.W[j]) * m.x[j, s])
    m.host_lo = pyo.Constraint(m.J, m.M, rule=lambda m, j, s: m.x[j, s] <= m.w[j, s])
    m.span_def = pyo.Constraint(m.J, rule=lambda m, j: (view.M - 1) * m.spans[j] >= sum(m.x[j, s] for s in M) - 1
                                if view.M > 1 else m.spans[j] == 0)
    K = range(len(view.resources))
    m.capacity = pyo.Constraint(m.M, K, rule=lambda m, s, r: sum(
        view.worker_demand[j, r] * m.w[j, s] + view.ps_demand[j, r] * m.p[j, s] for j in J) <= float(capacity_limit(view.capacity[s, r])))

    def barrier(m, j, s):
        tau = (float(co.base[j]) + sum(float(co.coef[j, k]) * (m.w[k, s] + m.p[k, s]) for k in J)
               + float(co.loc[j]) * m.p[j, s] + float(co.span[j]) * m.spans[j])
        return m.T[j] >= tau - float(np.ceil(bigM[j])) * (1 - m.x[j, s])

    m.barrier = pyo.Constraint(m.J, m.M, rule=barrier)
    scale = UNIT / view.slot_s / view.J
    m.obj = pyo.Objective(expr=sum(float(co.iterations[j] * scale) * m.T[j] for j in J), sense=pyo.minimize)
    return m


def _max_tasks_per_server(view: HarmonyView) -> int:
    d = np.minimum(np.where(view.worker_demand > 0, view.worker_demand, np.inf),
                   np.where(view.ps_demand > 0, view.ps_demand, np.inf)).min(axis=0)
    with np.errstate(divide="ignore"):
        return int(np.nanmin(np.floor(capacity_limit(view.capacity.max(axis=0)) / d)))


def decision_from_model(instance: Instance, options: Mapping[str, Any], model: pyo.ConcreteModel) -> dict:
    view = view_of(instance, options)
    value = lambda var: int(round(pyo.value(var)))  # noqa: E731
    w = np.array([[value(model.w[j, s]) for s in range(view.M)] for j in range(view.J)])
    p = np.array([[value(model.p[j, s]) for s in range(view.M)] for j in range(view.J)])
    return placement_decision(view, view.arrival, w, p)
