"""The per-job, per-deadline mixed packing/covering 0-1 program (PC-ILP) of spec 001 section 2.3.

**Reconstruction.**  The paper's body (Yu, Liu, Wu, Ji, Bentley, IEEE TNSE 2022) was not
available; this program is the spec's reconstruction, implemented as our design.

A job with workload ``V`` (samples), per-worker throughput ``q_in`` (all its workers and PSs on
one machine) or ``q_ex`` (anything else) per slot, per-worker and per-PS demand vectors ``alpha``
and ``beta``, PS fan-in ``gamma`` (``ceil(n / gamma)`` PSs for ``n`` workers, tied to the
workers' machine by observation O3: a restriction of the problem, not "without loss of
generality", see :mod:`.formulation`; its plans are valid under both ``ps_placement`` values)
and at most ``w_max`` concurrent workers, must finish by
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
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse

from ...solvers.highs_lp import ArrayLP

if TYPE_CHECKING:  # Pyomo loads only when the job's Pyomo model is built (export, certification)
    import pyomo.environ as pyo

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
    #: ``(slots, H)`` global machine of each local machine index per slot (:func:`host_patterns`); ``None``: the identity
    hosts: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.kind)

    def global_machine(self, v: int) -> int:
        """The instance's machine index of pattern ``v``."""
        h = int(self.machine[v])
        return h if self.hosts is None else int(self.hosts[int(self.slot[v]) - self.start, h])

    @cached_property
    def slot_groups(self) -> list[tuple[np.ndarray, list[tuple[int, np.ndarray]]]]:
        """Per slot from ``start`` to ``deadline``: its co-located patterns, and per machine (in
        order, only machines that have one) its spread patterns; indices in pattern order.  RR-PC
        draws thousands of times from the same patterns, so this is grouped once."""
        out = []
        spread = np.flatnonzero(self.kind == SPREAD)
        order = spread[np.lexsort((spread, self.machine[spread], self.slot[spread]))]
        for t in range(self.start, self.deadline + 1):
            co = np.flatnonzero((self.slot == t) & (self.kind == CO_LOCATED))
            here = order[self.slot[order] == t]
            machines, first = np.unique(self.machine[here], return_index=True)
            parts = np.split(here, first[1:])
            out.append((co, [(int(h), part) for h, part in zip(machines, parts)]))
        return out

    @property
    def work(self) -> np.ndarray:
        return self.workers * self.rate

    def rows(self, compact: bool = False) -> tuple[sparse.csr_matrix, np.ndarray, np.ndarray]:
        """``(A, lo, hi)`` of K1 (per (t, h)), K2 (per t) and V1 (last row).

        With ``compact`` the matrix has ``slots`` more columns, one ``X_t`` per slot equal to the
        slot's co-located mass (extra rows ``sum co(t) - X_t = 0`` after V1), and K1 reads
        ``X_t + sum spread(t, h) <= 1``: the same LP with ``O(size + slots H)`` nonzeros instead
        of ``O(size H)`` (a co-located pattern otherwise sits in every machine's K1 row).
        """
        slots = self.deadline - self.start + 1
        t = self.slot - self.start
        co = np.flatnonzero(self.kind == CO_LOCATED)  # blocks every machine of its slot
        sp = np.flatnonzero(self.kind != CO_LOCATED)
        n_k1 = slots * self.H
        if compact:
            aux = self.size + np.arange(slots)
            k1_rows = np.concatenate([np.arange(n_k1), t[sp] * self.H + self.machine[sp]])
            k1_cols = np.concatenate([np.repeat(aux, self.H), sp])
        else:
            k1_rows = np.concatenate([(t[co, None] * self.H + np.arange(self.H)[None, :]).ravel(), t[sp] * self.H + self.machine[sp]])
            k1_cols = np.concatenate([np.repeat(co, self.H), sp])
        rows = [k1_rows, n_k1 + t, np.full(self.size, n_k1 + slots)]
        cols = [k1_cols, np.arange(self.size), np.arange(self.size)]
        vals = [np.ones(len(k1_cols)), self.workers.astype(float), self.work]
        lo: list[np.ndarray | list[float]] = [np.full(n_k1 + slots, -np.inf), [self.target]]
        hi: list[np.ndarray | list[float]] = [np.ones(n_k1), np.full(slots, float(self.job.w_max)), [np.inf]]
        width = self.size
        if compact:
            link = n_k1 + slots + 1
            rows += [link + t[co], link + np.arange(slots)]
            cols += [co, self.size + np.arange(slots)]
            vals += [np.ones(len(co)), -np.ones(slots)]
            lo.append(np.zeros(slots))
            hi.append(np.zeros(slots))
            width += slots
        n_rows = n_k1 + slots + 1 + (slots if compact else 0)
        a = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows).astype(int), np.concatenate(cols).astype(int))),
                              shape=(n_rows, width))
        return a, np.concatenate(lo), np.concatenate(hi)


def patterns(job: LocalityJob, start: int, deadline: int, residual: np.ndarray, kappa: np.ndarray | None = None,
             eps: float = 0.0, kinds: tuple[int, ...] = (CO_LOCATED, SPREAD)) -> Patterns:
    """Every admissible pattern of ``job`` in slots ``start..deadline`` (``residual``: (H, R, T)).

    Ordered by slot, machine, worker count, then kind; ``kinds`` restricts the program to
    co-located or to spread patterns (the always-co-locate and always-spread baselines).
    """
    h_count, _r_count, _ = residual.shape
    n = np.arange(1, job.w_max + 1)
    demand = job.demand(n)                                                  # (N, R)
    window = residual[:, :, start:deadline + 1]                             # (H, R, S)
    fits = (demand[None, :, :, None] <= window[:, None, :, :] + 1e-9).all(axis=2)   # (H, N, S)
    weights = np.ones_like(window) if kappa is None else kappa[:, :, start:deadline + 1]
    unit_cost = np.einsum("nr,hrs->hns", demand, weights)
    h_idx, n_idx, s_idx = np.nonzero(fits)
    order = np.lexsort((n_idx, h_idx, s_idx))
    h_idx, n_idx, s_idx = h_idx[order], n_idx[order], s_idx[order]
    kinds_arr = np.asarray(kinds, dtype=np.int64)
    k = len(kinds_arr)
    kind = np.tile(kinds_arr, len(h_idx))
    rate = np.where(kind == CO_LOCATED, job.q_in, job.q_ex).astype(float)
    return Patterns(job, start, deadline, kind, np.repeat(s_idx + start, k).astype(np.int64), np.repeat(h_idx, k).astype(np.int64),
                    np.repeat(n[n_idx], k).astype(np.int64), np.repeat(unit_cost[h_idx, n_idx, s_idx], k).astype(float), rate,
                    (1.0 + eps) * job.work, h_count)


def largest_fit(job: LocalityJob, residual: np.ndarray) -> np.ndarray:
    """Most workers (with their PSs) of ``job`` that fit on each machine in each slot, ``(H, T)``; 0 if none.

    ``d(n)`` is nondecreasing in ``n``, so the fitting counts are ``1..nmax`` and ``nmax`` is their number;
    one ``(H, T)`` comparison per count and resource keeps memory at ``O(H T)``.
    """
    out = np.zeros(residual.shape[:1] + residual.shape[2:], dtype=np.int64)
    for d in job.demand(np.arange(1, job.w_max + 1)):
        ok = np.ones(out.shape, dtype=bool)
        for r in np.flatnonzero(d > 0):
            ok &= d[r] <= residual[:, r] + 1e-9
        if not ok.any():
            break
        out += ok
    return out


def host_order(fit: np.ndarray, slack: np.ndarray, k: int) -> np.ndarray:
    """Per slot, the ``k`` machines a job's program keeps, ``(S, k)`` sorted by machine index.

    The most workers first (``fit``: ``(H, S)`` largest fitting counts), then the least normalized
    free room ``slack`` (best fit: big free machines stay free for big jobs).  ``O(H S)``.
    """
    key = slack - fit * (float(slack.max(initial=0.0)) + 1.0)
    if k < key.shape[0]:
        top = np.argpartition(key, k - 1, axis=0)[:k]  # deterministic; exact ties at the k-th key are broken by introselect
    else:
        top = np.argsort(key, axis=0, kind="stable")
    return np.sort(top, axis=0).T


def host_patterns(job: LocalityJob, start: int, fit: np.ndarray, hosts: np.ndarray, eps: float = 0.0,
                  kinds: tuple[int, ...] = (CO_LOCATED, SPREAD)) -> Patterns:
    """The PC-ILP of slots ``start..start+S-1`` on ``hosts`` (``(S, k)``, :func:`host_order`) only, with unit costs.

    Why this loses nothing for the 0-1 program: a pattern's cost (resource units) and work do not
    depend on its machine, only on ``n``; a plan uses at most ``w_max`` machines per slot (K2), and
    sorting its machines by workers, the i-th largest fits on the i-th best host, which has the
    i-th largest ``nmax`` of the slot.  So every plan has a twin of equal cost and work on the
    ``k = w_max`` hosts, and the best co-located machine is a host.  The LP on the hosts is the
    0-1 program's relaxation too (at least the all-machine LP, which may spread a co-located slot's
    leftover mass over thousands of machines, something no plan can do).  Machines are local
    ``0..k-1``; ``Patterns.hosts`` maps them back.
    """
    S, k = hosts.shape
    local = fit[hosts, np.arange(S)[:, None]]                                   # (S, k)
    n = np.arange(1, job.w_max + 1)
    ok = n[None, None, :] <= local[:, :, None]                                   # (S, k, N)
    s_idx, h_idx, n_idx = np.nonzero(ok)                                        # already ordered by slot, machine, count
    kinds_arr = np.asarray(kinds, dtype=np.int64)
    m = len(kinds_arr)
    kind = np.tile(kinds_arr, len(h_idx))
    rate = np.where(kind == CO_LOCATED, job.q_in, job.q_ex).astype(float)
    unit_cost = job.demand(n).sum(axis=1)
    return Patterns(job, start, start + S - 1, kind, np.repeat(s_idx + start, m).astype(np.int64),
                    np.repeat(h_idx, m).astype(np.int64), np.repeat(n[n_idx], m).astype(np.int64),
                    np.repeat(unit_cost[n_idx], m).astype(float), rate, (1.0 + eps) * job.work, k, hosts.astype(np.int64))


def slot_capacity_work(job: LocalityJob, residual: np.ndarray, kinds: tuple[int, ...] = (CO_LOCATED, SPREAD)) -> np.ndarray:
    """Most work the LP relaxation can give ``job`` in each slot of ``residual`` (H, R, T).

    Per slot the LP mixes a co-located mass ``lam`` (the largest fitting worker count ``n_co``)
    with spread mass ``1 - lam`` on every machine (``S`` = sum of the largest fitting counts),
    capped by K2: ``lam q_in n_co + q_ex min((1 - lam) S, w_max - lam n_co)``, concave and
    piecewise linear in ``lam``, so its maximum is at ``lam`` = 0, 1 or the kink.  Slots are
    coupled only through V1, so the earliest LP-feasible deadline is where the running sum of
    these values reaches the target (no LP needed).
    """
    return fit_capacity_work(job, largest_fit(job, residual), kinds)


def fit_capacity_work(job: LocalityJob, fit: np.ndarray, kinds: tuple[int, ...] = (CO_LOCATED, SPREAD),
                      top: int | None = None) -> np.ndarray:
    """:func:`slot_capacity_work` from the largest fitting counts ``fit`` (H, S); with ``top``, of the
    LP on each slot's ``top`` best machines only (:func:`host_patterns`)."""
    n_max = fit.astype(float)
    if top is not None and top < n_max.shape[0]:
        n_max = -np.partition(-n_max, top - 1, axis=0)[:top]
    n_co = np.minimum(n_max.max(axis=0, initial=0.0), job.w_max)
    total = n_max.sum(axis=0)
    w = float(job.w_max)

    def mix(lam: np.ndarray) -> np.ndarray:
        return lam * job.q_in * n_co + job.q_ex * np.maximum(np.minimum((1 - lam) * total, w - lam * n_co), 0.0)

    if tuple(kinds) == (CO_LOCATED,):
        return job.q_in * n_co
    if tuple(kinds) == (SPREAD,):
        return mix(np.zeros_like(total))
    kink = np.clip(np.divide(total - w, total - n_co, out=np.zeros_like(total), where=total > n_co), 0.0, 1.0)
    return np.maximum.reduce([mix(np.zeros_like(total)), mix(np.ones_like(total)), mix(kink)])


def earliest_deadline(job: LocalityJob, start: int, residual: np.ndarray, eps: float = 0.0,
                      kinds: tuple[int, ...] = (CO_LOCATED, SPREAD)) -> int | None:
    """First deadline whose LP relaxation is feasible (target ``(1 + eps) V``), or ``None`` within the horizon."""
    reach = np.cumsum(slot_capacity_work(job, residual[:, :, start:], kinds))
    hit = np.flatnonzero(reach >= (1.0 + eps) * job.work - 1e-9)
    return None if hit.size == 0 else start + int(hit[0])


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
    return solve_lps(p, (p.target,), time_limit, integer)[0]


def solve_lps(p: Patterns, targets: tuple[float, ...], time_limit: float = 30.0, integer: bool = False) -> list[np.ndarray | None]:
    """:func:`solve_lp` for each covering target in turn on one HiGHS model (built once; only V1's bound
    changes).  Each solve starts cold: a warm basis would land on other optimal vertices than a
    fresh model, and so change which plans RR-PC draws."""
    if p.size == 0:
        return [None] * len(targets)
    a, lo, hi = p.rows(compact=True)
    width = a.shape[1]
    cost = np.concatenate([p.cost, np.zeros(width - p.size)])
    v1 = (p.deadline - p.start + 1) * (p.H + 1)  # the covering row, after K1 and K2
    lo[v1] = targets[0]
    lp = ArrayLP(cost, a, lo, hi, np.zeros(width), np.ones(width), time_limit=time_limit, integer=integer, gap=0.0)
    out: list[np.ndarray | None] = []
    for target in targets:
        lp.set_row_bounds(v1, float(target), float(hi[v1]))
        lp.clear_basis()
        res = lp.solve()
        out.append(None if res.status != "optimal" or res.x is None else np.clip(res.x[:p.size], 0.0, 1.0))
    return out


def pcilp_model(p: Patterns) -> pyo.ConcreteModel:
    """The same 0-1 program as a Pyomo model (the declarative form users see, solve and export)."""
    import pyomo.environ as pyo

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
