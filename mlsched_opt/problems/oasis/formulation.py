"""The offline problem (1)-(13) of OASiS as a MILP, and the single-job problem at fixed prices.

Offline (spec 000 section 8, our linearisation [PROP]): binaries ``u[i, t] = 1`` iff job ``i``
completes in slot ``t``, so the utility, defined only at integer delays, is a constant per
binary:

* ``sum_t u[i, t] = x[i]``                      (admitted jobs complete exactly once)
* ``sum_h y[i, h, t] <= cap_i sum_{t' >= t} u[i, t']``  (no workers after completion; worker cap (3))
* ``sum_h y[i, h, t] >= u[i, t]``               (the completion slot really runs workers (8))
* ``sum_{h, t} y[i, h, t] >= W_i x[i]``   (enough work (2); y is integer; ``W_i`` = :func:`worker_slots_needed`:
  the fewest whole worker-slots the checker's "work" rule accepts)
* capacity (4)/(5) per server, resource and slot; ``b sum_h y <= B sum_k z`` (6); ``sum_k z <= sum_h y`` (7);
  the right-hand sides of (4)-(6) are the checker's limits (:func:`.tolerances.capacity_limit`:
  ``cap (1 + CHECK_TOL) + CHECK_TOL``), so the model accepts exactly the counts the checker accepts;
  variables exist only from the arrival slot on (9)/(10) and on servers the job may use.
* the instance's size ranges (:mod:`.view`, our reading): ``sum_k z <= ps.max``, and for a job with
  ``lo > 1`` or ``ps.min > 1`` a binary ``v[i, t]`` (runs in slot t) with
  ``lo v <= sum_h y <= hi v`` and ``sum_k z >= ps.min v``; a job with an empty range gets no worker
  variables, so (2) keeps ``x = 0``.

Objective ``max sum_{i, t} f_i(t - a_i) u[i, t]``.  The completion slot is the last slot with
workers: a solution may not leave workers after ``t`` with ``u = 1`` (second row), and
``u[i, t] = 1`` needs workers in ``t`` (third row).  The LP relaxation is an upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyomo.environ as pyo

from ...errors import ModelTooLarge
from ...io.instance import Instance
from ...tolerances import capacity_limit
from .decision import MAX_VARIABLES, _bounds, decision, exact_jobs, model_size, worker_slots_needed
from .online import SlotRun
from .view import OasisJob, OasisView, TaskCounts, oasis_view


def build_model(instance: Instance, options: Mapping[str, Any]) -> pyo.ConcreteModel:
    return offline_model(oasis_view(instance, options.get("ranges", "instance")), instance.file)


def offline_model(view: OasisView, file: str | None = None) -> pyo.ConcreteModel:
    """The time-expanded MILP of the module docstring."""
    T = view.slots
    m = pyo.ConcreteModel(name="oasis_offline")
    jobs = {j.index: j for j in exact_jobs(view)}
    wbound, pbound = _bounds(view)
    size = model_size(view, wbound, pbound)
    if size > MAX_VARIABLES:
        # ModelTooLarge, so that an anytime exact method answers without the model instead of refusing
        raise ModelTooLarge(f"the offline MILP would have {size} variables, more than the {MAX_VARIABLES} the exact method "
                            "builds; use an algorithm (--method oasis) or fewer slots, servers or jobs", file, "time.slots")
    Y = [(i, h, t) for i, j in jobs.items() for h in range(view.H) if wbound[i][h] > 0 for t in range(j.arrival, T)]
    Z = [(i, k, t) for i, j in jobs.items() for k in range(view.K) if pbound[i][k] > 0 for t in range(j.arrival, T)]
    U = [(i, t) for i, j in jobs.items() for t in range(j.arrival, T)]
    m.x = pyo.Var(list(jobs), domain=pyo.Binary)
    m.u = pyo.Var(U, domain=pyo.Binary)
    m.y = pyo.Var(Y, domain=pyo.NonNegativeIntegers, bounds=lambda m, i, h, t: (0, int(wbound[i][h])))
    m.z = pyo.Var(Z, domain=pyo.NonNegativeIntegers, bounds=lambda m, i, k, t: (0, int(pbound[i][k])))
    ys: dict[tuple[int, int], list] = {}
    zs: dict[tuple[int, int], list] = {}
    for i, h, t in Y:
        ys.setdefault((i, t), []).append(m.y[i, h, t])
    for i, k, t in Z:
        zs.setdefault((i, t), []).append(m.z[i, k, t])
    workers = {key: sum(v) for key, v in ys.items()}
    pss = {key: sum(v) for key, v in zs.items()}

    m.utility = pyo.Objective(expr=sum(float(jobs[i].value(t)) * m.u[i, t] for i, t in U), sense=pyo.maximize)
    m.complete_once = pyo.Constraint(list(jobs), rule=lambda m, i: sum(m.u[i, t] for t in range(jobs[i].arrival, T)) == m.x[i])
    m.work = pyo.Constraint(list(jobs), rule=lambda m, i: sum(workers.get((i, t), 0) for t in range(jobs[i].arrival, T))
                            >= worker_slots_needed(jobs[i]) * m.x[i])

    def before_completion(m, i, t):
        y = workers.get((i, t))
        if y is None:
            return pyo.Constraint.Skip
        return y <= jobs[i].cap * sum(m.u[i, s] for s in range(t, T))

    def runs_at_completion(m, i, t):
        y = workers.get((i, t))
        return (y if y is not None else 0) >= m.u[i, t]

    def cover(m, i, t):
        y = workers.get((i, t))
        if y is None:
            return pyo.Constraint.Skip
        z = pss.get((i, t), 0)
        # the checker's bandwidth rule b Y <= capacity_limit(B Z); written strictly (b Y <= B Z, a row
        # CP-SAT can scale to integers) when no integer count tells the two apart
        return jobs[i].b * y <= (capacity_limit(jobs[i].B * z) if loose_cover[i] else jobs[i].B * z)

    def ps_le_workers(m, i, t):
        z = pss.get((i, t))
        return pyo.Constraint.Skip if z is None else z <= workers.get((i, t), 0)

    loose_cover = {i: _cover_needs_tolerance(j) for i, j in jobs.items()}
    m.before_completion = pyo.Constraint(U, rule=before_completion)
    m.runs_at_completion = pyo.Constraint(U, rule=runs_at_completion)
    m.ps_cover = pyo.Constraint(U, rule=cover)
    m.ps_le_workers = pyo.Constraint(U, rule=ps_le_workers)

    # size ranges: a job that cannot run at any count has no worker variables (_task_bound), so
    # (2) keeps it out (no fixed variables: not every solver interface treats them alike); the
    # bounds below need a run indicator only when "running" does not already imply them (lo = 1
    # and ps.min <= 1, where y >= 1 and (6) give z >= 1)
    ranged = [(i, t) for i, t in U if (i, t) in workers and (jobs[i].lo > 1 or jobs[i].ps_min > 1)]
    m.v = pyo.Var(ranged, domain=pyo.Binary)
    m.workers_lo = pyo.Constraint(ranged, rule=lambda m, i, t: workers[i, t] >= jobs[i].lo * m.v[i, t])
    m.workers_hi = pyo.Constraint(ranged, rule=lambda m, i, t: workers[i, t] <= jobs[i].hi * m.v[i, t])
    m.ps_lo = pyo.Constraint(ranged, rule=lambda m, i, t: pss.get((i, t), 0) >= jobs[i].ps_min * m.v[i, t])

    def ps_hi(m, i, t):
        z = pss.get((i, t))
        cap = jobs[i].ps_max
        # with ps.max >= cap, (7) and (3) already keep z <= y <= cap
        return pyo.Constraint.Skip if z is None or cap is None or cap >= jobs[i].cap else z <= cap

    m.ps_hi = pyo.Constraint(U, rule=ps_hi)

    def capacity(var, keys, cap, demand_of):
        rows: dict[tuple[int, int, int], list[Any]] = {}
        for i, s, t in keys:
            dem = demand_of(jobs[i])
            for r in np.flatnonzero(dem > 0):
                rows.setdefault((s, int(r), t), []).append(float(dem[r]) * var[i, s, t])
        return {key: sum(terms) <= float(capacity_limit(cap[key[0], key[1]])) for key, terms in sorted(rows.items())}

    wrows = capacity(m.y, Y, view.worker_capacity, lambda j: j.worker)
    prows = capacity(m.z, Z, view.ps_capacity, lambda j: j.ps)
    m.worker_capacity = pyo.Constraint(list(wrows), rule=lambda m, *key: wrows[key])
    m.ps_capacity = pyo.Constraint(list(prows), rule=lambda m, *key: prows[key])
    m._view = view
    return m


def schedule_from_model(m: pyo.ConcreteModel) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray], list[int]]:
    """Worker and PS counts ``[server, slot]`` per admitted job index, and the admitted indices."""
    view: OasisView = m._view
    admitted = [i for i in m.x if pyo.value(m.x[i]) > 0.5]
    work = {i: np.zeros((view.H, view.slots), np.int64) for i in admitted}
    ps = {i: np.zeros((view.K, view.slots), np.int64) for i in admitted}
    for (i, h, t), var in m.y.items():
        if i in work:
            work[i][h, t] = round(pyo.value(var) or 0)
    for (i, k, t), var in m.z.items():
        if i in ps:
            ps[i][k, t] = round(pyo.value(var) or 0)
    return work, ps, admitted


def single_job_model(job: OasisJob, T: int, worker_price: np.ndarray, ps_price: np.ndarray,
                     worker_caps: np.ndarray, ps_caps: np.ndarray, units: str = "worker-slots") -> pyo.ConcreteModel:
    """Problem (27): one job's best schedule at fixed unit prices ``[server, slot]`` within ``*_caps`` tasks.

    ``units="worker-slots"`` is (2)+(3) exactly; ``units="chunks"`` adds integer chunk counts
    ``d[t]`` with ``sum d = E N`` and ``sum_h y[h, t] >= rho d[t]`` (the paper's DP model).
    Rejecting is allowed (``x = 0``, payoff 0), so the optimum is the job's payoff ``mu``.
    """
    m = pyo.ConcreteModel(name="oasis_single_job")
    S = range(job.arrival, T)
    H, K = worker_price.shape[0], ps_price.shape[0]
    m.x = pyo.Var(domain=pyo.Binary)
    m.u = pyo.Var(S, domain=pyo.Binary)
    m.y = pyo.Var(range(H), S, domain=pyo.NonNegativeIntegers, bounds=lambda m, h, t: (0, int(worker_caps[h, t])))
    m.z = pyo.Var(range(K), S, domain=pyo.NonNegativeIntegers, bounds=lambda m, k, t: (0, int(ps_caps[k, t])))
    y = {t: sum(m.y[h, t] for h in range(H)) for t in S}
    z = {t: sum(m.z[k, t] for k in range(K)) for t in S}
    m.payoff = pyo.Objective(
        expr=sum(float(job.value(t)) * m.u[t] for t in S)
        - sum(float(worker_price[h, t]) * m.y[h, t] for h in range(H) for t in S)
        - sum(float(ps_price[k, t]) * m.z[k, t] for k in range(K) for t in S),
        sense=pyo.maximize)
    m.once = pyo.Constraint(expr=sum(m.u[t] for t in S) == m.x)
    m.before = pyo.Constraint(S, rule=lambda m, t: y[t] <= job.cap * sum(m.u[s] for s in range(t, T)))
    m.cover = pyo.Constraint(S, rule=lambda m, t: job.b * y[t] <= job.B * z[t])
    m.ps_le = pyo.Constraint(S, rule=lambda m, t: z[t] <= y[t])
    # the size ranges, as in the offline model (lo > hi leaves v = 0, so no work and x = 0)
    m.v = pyo.Var(S, domain=pyo.Binary)
    m.range_lo = pyo.Constraint(S, rule=lambda m, t: y[t] >= job.lo * m.v[t])
    m.range_hi = pyo.Constraint(S, rule=lambda m, t: y[t] <= max(job.hi, 0) * m.v[t])
    m.ps_lo = pyo.Constraint(S, rule=lambda m, t: z[t] >= job.ps_min * m.v[t])
    m.ps_hi = pyo.Constraint(S, rule=lambda m, t: z[t] <= (job.ps_max if job.ps_max is not None else job.cap))
    if units == "chunks":
        m.d = pyo.Var(S, domain=pyo.NonNegativeIntegers)
        m.chunks = pyo.Constraint(expr=sum(m.d[t] for t in S) >= job.chunks * m.x)
        m.per_slot = pyo.Constraint(S, rule=lambda m, t: y[t] >= job.rho * m.d[t])
    else:
        m.work = pyo.Constraint(expr=sum(y[t] for t in S) >= job.work_slots * m.x)
    return m




def decision_from_model(instance: Instance, options: Mapping[str, Any], model: pyo.ConcreteModel) -> dict[str, Any]:
    view: OasisView = model._view
    workers, ps, admitted = schedule_from_model(model)
    completion = {i: int(np.flatnonzero(w.any(axis=0))[-1]) for i, w in workers.items() if w.any()}
    return decision(view, SlotRun({i: TaskCounts.from_dense(w) for i, w in workers.items()},
                                  {i: TaskCounts.from_dense(z) for i, z in ps.items()}, completion, admitted))


def _cover_needs_tolerance(job: OasisJob) -> bool:
    """Whether some worker count ``Y <= hi`` has a PS count ``Z`` the checker's bandwidth rule
    (``b Y <= capacity_limit(B Z)``) accepts but ``b Y <= B Z`` does not: only then does the exact model
    need the tolerant row (its coefficient ``B (1 + CHECK_TOL)`` is seldom a short decimal)."""
    if job.B <= 0:
        return True
    for y in range(1, max(job.hi, 0) + 1):
        z = math.ceil(job.b * y / job.B)   # least Z with b Y <= B Z, up to rounding: test its neighbours
        for zz in (z - 2, z - 1, z):
            if zz >= 0 and (job.b * y <= capacity_limit(job.B * zz)) != (job.b * y <= job.B * zz):
                return True
    return False
