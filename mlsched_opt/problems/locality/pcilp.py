"""The per-job, per-deadline mixed packing/covering 0-1 program (PC-ILP) of spec 001 section 2.3.

**Reconstruction.**  The paper's body (Yu, Liu, Wu, Ji, Bentley, IEEE TNSE 2022) was not
available; this program is the spec's reconstruction, implemented as our design.

A job with workload ``V`` (samples), per-worker throughput ``q_in`` (all its workers and PSs on
one machine) or ``q_ex`` (anything else) per slot, per-worker and per-PS demand vectors ``alpha``
and ``beta``, PS fan-in ``gamma`` (``ceil(n / gamma)`` PSs for ``n`` workers, tied to the
workers' machine by observation O3) and at most ``w_max`` concurrent workers, must finish by
slot ``deadline`` using the residual capacity ``residual[h, r, t]``.  Variables are 0/1
*patterns* ``(kind, t, h, n)``: ``kind = 0`` co-locates the whole job on machine ``h`` with ``n``
workers in slot ``t``; ``kind = 1`` puts ``n`` workers (and their PSs) of a spread job on ``h``.
Rows:

* (K1) packing, exclusivity, per (h, t): all co-located patterns of slot t plus the spread
  patterns on h, at most 1;
* (K2) packing, concurrency, per t: workers at most ``w_max``;
* (K3) packing, capacity: implied, because admissible patterns fit the residual capacity and K1
  allows one pattern per machine;
* (V1) covering: total work ``sum n q`` at least ``(1 + eps) V``.

Cost of a pattern: ``sum_r kappa[h, r, t] d_r(n)`` with ``d(n) = alpha n + beta ceil(n/gamma)``
(``kappa = 1``: resource-slots; OASiS-style prices for V-PD).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
from scipy import sparse

from ...solvers.highs_lp import ArrayLP

CO_LOCATED, SPREAD = 0, 1


@dataclass(frozen=True)
class LocalityJob:
    """One job as the PC-ILP sees it (rates in samples per slot per worker)."""

    id: str
    arrival: int
    work: float
    q_in: float
    q_ex: float
    alpha: np.ndarray
    beta: np.ndarray
    gamma: int
    w_max: int
    weight: float = 1.0

    def demand(self, n: np.ndarray | int) -> np.ndarray:
        """``d(n) = alpha n + beta ceil(n / gamma)``, shape (..., R)."""
        n = np.asarray(n)
        ps = np.ceil(n / self.gamma)
        return n[..., None] * self.alpha + ps[..., None] * self.beta


@dataclass(frozen=True)
class Patterns:
    """The PC-ILP of one job and deadline as arrays: one entry per admissible pattern."""

    job: LocalityJob
    start: int
    deadline: int
    kind: np.ndarray
    slot: np.ndarray
    machine: np.ndarray
    workers: np.ndarray
    cost: np.ndarray
    rate: np.ndarray
    target: float
    H: int

    @property
    def size(self) -> int:
        return len(self.kind)

    @property
    def work(self) -> np.ndarray:
        return self.workers * self.rate

    def rows(self) -> tuple[sparse.csr_matrix, np.ndarray, np.ndarray]:
        """``(A, lo, hi)`` of K1 (per (t, h)), K2 (per t) and V1 (last row)."""
        slots = self.deadline - self.start + 1
        k1_rows, k1_cols = [], []
        for v in range(self.size):
            t = self.slot[v] - self.start
            if self.kind[v] == CO_LOCATED:  # blocks every machine of its slot
                k1_rows += [t * self.H + h for h in range(self.H)]
                k1_cols += [v] * self.H
            else:
                k1_rows.append(t * self.H + self.machine[v])
                k1_cols.append(v)
        n_k1 = slots * self.H
        rows = np.concatenate([k1_rows, n_k1 + (self.slot - self.start), np.full(self.size, n_k1 + slots)])
        cols = np.concatenate([k1_cols, np.arange(self.size), np.arange(self.size)])
        vals = np.concatenate([np.ones(len(k1_cols)), self.workers.astype(float), self.work])
        a = sparse.csr_matrix((vals, (rows.astype(int), cols.astype(int))), shape=(n_k1 + slots + 1, self.size))
        lo = np.concatenate([np.full(n_k1 + slots, -np.inf), [self.target]])
        hi = np.concatenate([np.ones(n_k1), np.full(slots, float(self.job.w_max)), [np.inf]])
        return a, lo, hi


def patterns(job: LocalityJob, start: int, deadline: int, residual: np.ndarray, kappa: np.ndarray | None = None,
             eps: float = 0.0) -> Patterns:
    """Every admissible pattern of ``job`` in slots ``start..deadline`` (``residual``: (H, R, T))."""
    h_count, _, _ = residual.shape
    n = np.arange(1, job.w_max + 1)
    demand = job.demand(n)                                              # (N, R)
    kind, slot, machine, workers, cost, rate = [], [], [], [], [], []
    for t in range(start, deadline + 1):
        for h in range(h_count):
            fits = (demand <= residual[h, :, t] + 1e-9).all(axis=1)
            for k in n[fits]:
                c = float(demand[k - 1] @ (np.ones(residual.shape[1]) if kappa is None else kappa[h, :, t]))
                for which, q in ((CO_LOCATED, job.q_in), (SPREAD, job.q_ex)):
                    kind.append(which)
                    slot.append(t)
                    machine.append(h)
                    workers.append(k)
                    cost.append(c)
                    rate.append(q)
    arr = lambda x, dt=float: np.array(x, dtype=dt)  # noqa: E731
    return Patterns(job, start, deadline, arr(kind, np.int64), arr(slot, np.int64), arr(machine, np.int64),
                    arr(workers, np.int64), arr(cost), arr(rate), (1.0 + eps) * job.work, h_count)


@dataclass(frozen=True)
class Plan:
    """Chosen patterns (indices into :class:`Patterns`), with their work and cost."""

    chosen: np.ndarray
    work: float
    cost: float

    def covers(self, target: float) -> bool:
        return self.work >= target - 1e-9


def solve_lp(p: Patterns, time_limit: float = 30.0, integer: bool = False) -> np.ndarray | None:
    """The LP relaxation (or, with ``integer``, the 0-1 program) by HiGHS; ``None`` if infeasible."""
    if p.size == 0:
        return None
    a, lo, hi = p.rows()
    res = ArrayLP(p.cost, a, lo, hi, np.zeros(p.size), np.ones(p.size), time_limit=time_limit, integer=integer, gap=0.0).solve()
    if res.status != "optimal":
        return None
    return np.clip(res.x, 0.0, 1.0)


def pcilp_model(p: Patterns) -> pyo.ConcreteModel:
    """The same 0-1 program as a Pyomo model (the declarative form users see, solve and export)."""
    a, lo, hi = p.rows()
    a = a.tocsr()
    m = pyo.ConcreteModel(name=f"pcilp_{p.job.id}_t{p.deadline}")
    m.V = pyo.RangeSet(0, p.size - 1)
    m.z = pyo.Var(m.V, domain=pyo.Binary)
    m.cost = pyo.Objective(expr=sum(float(p.cost[v]) * m.z[v] for v in m.V), sense=pyo.minimize)
    m.R = pyo.RangeSet(0, a.shape[0] - 1)

    def row(mm, r):
        cols, vals = a.indices[a.indptr[r]:a.indptr[r + 1]], a.data[a.indptr[r]:a.indptr[r + 1]]
        expr = sum(float(c) * mm.z[int(v)] for v, c in zip(cols, vals))
        return (None if math.isinf(lo[r]) else float(lo[r]), expr, None if math.isinf(hi[r]) else float(hi[r]))

    m.rows = pyo.Constraint(m.R, rule=row)
    return m


def plan_of(p: Patterns, z: np.ndarray) -> Plan:
    chosen = np.flatnonzero(np.asarray(z) > 0.5)
    return Plan(chosen, float(p.work[chosen].sum()), float(p.cost[chosen].sum()))
