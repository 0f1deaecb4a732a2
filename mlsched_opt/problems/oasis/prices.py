"""Exponential resource prices of OASiS (spec 000 section 3.2, eqs (22)-(26)) and their parameters.

A :class:`PricedPool` is a set of servers over a slotted horizon with the load reserved on every
(server, resource, slot) and its price ``L (U_r / L) ** (load / capacity)``: ``L`` when idle,
``U_r`` when full.  It is independent of the job model, so other online primal-dual schedulers
(the locality family's V-PD) can price their own pools with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .view import OasisView, TaskCounts, floor

#: A job whose utility at the horizon is below this share of the largest utility counts at
#: the share when L is computed; a time-critical sigmoid is exactly 0 there in floating point,
#: which would make L = 0 and the price function undefined [PROP].
MIN_UTILITY_SHARE = 1e-6


@dataclass(frozen=True)
class PriceParams:
    """``L1``, ``U1[r]`` (worker pool) and ``L2``, ``U2[r]`` (PS pool); ``source`` says where they came from."""

    L1: float
    U1: np.ndarray
    L2: float
    U2: np.ndarray
    source: str
    eta1: float | None = None
    eta2: float | None = None

    @property
    def alpha(self) -> float:
        """``max(1, ln(U1_r/L1), ln(U2_r/L2))``: OASiS is 2 alpha-competitive (Theorem 4) when these are exact."""
        logs = [math.log(u / self.L1) for u in self.U1] + [math.log(u / self.L2) for u in self.U2]
        return max([1.0, *logs])

    def scaled(self, factor: float) -> PriceParams:
        """Mis-estimated parameters (Fig. 6): every ``U/L`` ratio times ``factor``, ``L`` kept, ``U >= L``."""
        return replace(self, U1=np.maximum(self.U1 * factor, self.L1), U2=np.maximum(self.U2 * factor, self.L2),
                       source=f"{self.source} x {factor:g}")

    def to_dict(self, resources: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "L1": self.L1, "L2": self.L2,
                               "U1": dict(zip(resources, map(float, self.U1))), "U2": dict(zip(resources, map(float, self.U2))),
                               "alpha": self.alpha}
        if self.eta1 is not None:
            out.update(eta1=self.eta1, eta2=self.eta2)
        return out


def formula_params(view: OasisView) -> PriceParams:
    """U, L and eta from the instance as the spec gives them (eqs (23)-(26), fixes 1-3 of section 6).

    * ``U1_r = max_i f_i(S_i - 1) / w_i^r`` over jobs with ``w_i^r > 0``, ``S_i`` the job's fewest
      slots (the utility at its earliest possible completion); ``U2_r`` likewise with ``s_i^r``.
      A resource no job uses gets ``U = L`` (its price never matters).
    * ``L1 = min_i f_i(T-1-a_i) / (ceil(E_i N_i rho_i) sum_r w_i^r) / (4 eta1)``, ``L2`` with ``s``.
    * ``eta1 = T sum_h sum_r c_h^r / min_i (ceil(E_i N_i rho_i) sum_r w_i^r)``, the smallest value
      that keeps the initial dual at most OPT/2; ``eta2`` likewise over PS servers.

    The sums over r add unlike units (GPUs, GB, Gbps) as the paper does (pitfall 4).
    """
    T = view.slots
    jobs = view.jobs
    work = np.array([j.work_slots for j in jobs], dtype=float)
    best = np.array([float(j.value(j.arrival + j.min_duration - 1)) for j in jobs])
    last = np.array([float(j.value(T - 1)) for j in jobs])
    last = np.maximum(last, MIN_UTILITY_SHARE * max(best.max(initial=0.0), 1e-300))

    def side(demand: np.ndarray, capacity: np.ndarray) -> tuple[float, np.ndarray, float]:
        size = work * demand.sum(axis=1)
        live = size > 0
        eta = T * capacity.sum() / size[live].min() if live.any() else 1.0
        L = float(np.min(last[live] / size[live]) / (4.0 * eta)) if live.any() else 1.0
        U = np.full(demand.shape[1], L)
        for r in range(demand.shape[1]):
            using = demand[:, r] > 0
            if using.any():
                U[r] = max(L, float(np.max(best[using] / demand[using, r])))
        return L, U, float(eta)

    W = np.array([j.worker for j in jobs]).reshape(len(jobs), len(view.resources))
    S = np.array([j.ps for j in jobs]).reshape(len(jobs), len(view.resources))
    L1, U1, eta1 = side(W, view.worker_capacity)
    L2, U2, eta2 = side(S, view.ps_capacity)
    return PriceParams(L1, U1, L2, U2, "formula", eta1, eta2)


def estimated_params(view: OasisView, quantile: float = 0.25) -> PriceParams:
    """Estimates from the jobs' value densities [PROP] (pitfall 17: "from a warm-up trace").

    With the formula, ``L`` is divided by ``4 eta`` (``eta`` grows with ``T`` times the whole
    cluster's capacity) and taken at the least valuable job, so on the paper's settings it is
    ~1e-15 and prices stay negligible until a resource is nearly full.  Here ``L`` is the
    ``quantile`` of ``f_i(S_i - 1) / (ceil(E_i N_i rho_i) sum_r w_i^r)`` over the jobs (utility
    per unit of resource-time at the earliest completion; ``s`` for ``L2``) and ``U`` is the
    formula's.  Theorem 4's assumption (b) then no longer holds: no guarantee is claimed.
    """
    exact = formula_params(view)
    best = np.array([float(j.value(j.arrival + j.min_duration - 1)) for j in view.jobs])
    work = np.array([j.work_slots for j in view.jobs], dtype=float)

    def level(demand_sum: np.ndarray, fallback: float) -> float:
        size = work * demand_sum
        live = size > 0
        return float(np.quantile(best[live] / size[live], quantile)) if live.any() else fallback

    L1 = max(level(np.array([j.worker.sum() for j in view.jobs]), exact.L1), exact.L1)
    L2 = max(level(np.array([j.ps.sum() for j in view.jobs]), exact.L2), exact.L2)
    return PriceParams(L1, np.maximum(exact.U1, L1), L2, np.maximum(exact.U2, L2), f"estimated (q={quantile:g})")


def given_params(view: OasisView, L1: float, U1: float, L2: float, U2: float) -> PriceParams:
    """Estimates supplied by the user (the paper's practice, section 3.2): one U per pool for every resource."""
    R = len(view.resources)
    return PriceParams(L1, np.full(R, max(U1, L1)), L2, np.full(R, max(U2, L2)), "given")


class PricedPool:
    """Servers ``(n, R)`` over ``T`` slots with reserved ``load`` and the exponential ``price`` (22).

    Prices are fixed while one job is planned and change only when a schedule is reserved
    (pitfall 13); they never fall because reservations only grow.
    """

    def __init__(self, capacity: np.ndarray, slots: int, L: float, U: np.ndarray):
        self.capacity = np.asarray(capacity, dtype=float)
        self.slots = slots
        self.L = float(L)
        self.log_ratio = np.log(np.asarray(U, dtype=float) / self.L)
        n, R = self.capacity.shape
        self.load = np.zeros((n, R, slots))
        self.price = np.full((n, R, slots), self.L)
        # a resource a server lacks can host nothing that needs it; its price is irrelevant, keep it at L
        self._inv_cap = np.divide(1.0, self.capacity, out=np.zeros_like(self.capacity), where=self.capacity > 0)

    def free(self) -> np.ndarray:
        """Residual capacity ``(n, R, T)``."""
        return self.capacity[:, :, None] - self.load

    def reserve(self, counts: np.ndarray, demand: np.ndarray) -> None:
        """Add ``counts[n, T]`` tasks of ``demand[R]`` and re-price the slots touched."""
        slots = np.flatnonzero(counts.any(axis=0))
        if slots.size == 0:
            return
        self.load[:, :, slots] += counts[:, None, slots] * demand[None, :, None]
        share = self.load[:, :, slots] * self._inv_cap[:, :, None]
        self.price[:, :, slots] = self.L * np.exp(self.log_ratio[None, :, None] * share)

    def reserve_counts(self, counts: TaskCounts, demand: np.ndarray) -> None:
        """:meth:`reserve` for sparse counts: only the (server, slot) cells that get tasks change (the
        others' price is a function of their unchanged load), so the cost is the plan's size, not ``n T``."""
        server, slot, count = counts.coo()
        if count.size == 0:
            return
        self.load[server, :, slot] += count[:, None] * demand[None, :]
        share = self.load[server, :, slot] * self._inv_cap[server]
        self.price[server, :, slot] = self.L * np.exp(self.log_ratio[None, :] * share)

    def unit_price(self, demand: np.ndarray, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Price of one task of ``demand`` on every server in slots ``start .. stop - 1``, ``(n, stop - start)``."""
        return np.einsum("nrt,r->nt", self.price[:, :, start:stop], demand)

    def fit(self, demand: np.ndarray, start: int = 0, stop: int | None = None) -> np.ndarray:
        """How many tasks of ``demand`` fit in the residual capacity of every server in slots ``start .. stop - 1``,
        ``(n, stop - start)``: :func:`.view.fit_counts` of :meth:`free`, over the demanded resources only."""
        used = np.flatnonzero(demand > 0)
        n = self.capacity.shape[0]
        if used.size == 0:
            return np.full((n, len(range(self.slots)[start:stop])), np.iinfo(np.int32).max, dtype=np.int64)
        room = (self.capacity[:, used[0], None] - self.load[:, used[0], start:stop]) / demand[used[0]]
        for r in used[1:]:
            room = np.minimum(room, (self.capacity[:, r, None] - self.load[:, r, start:stop]) / demand[r])
        return np.maximum(floor(room), 0).astype(np.int64)
