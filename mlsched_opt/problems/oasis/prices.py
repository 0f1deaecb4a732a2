"""Exponential resource prices of OASiS (spec 000 section 3.2, eqs (22)-(26)) and their parameters.

The priced pools themselves (:class:`~mlsched_opt.problems.pricing.PricedPool`) are shared with the
locality family's V-PD and live in :mod:`mlsched_opt.problems.pricing`; this module sets OASiS's
price parameters ``L`` and ``U`` from a view.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .view import OasisView

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


