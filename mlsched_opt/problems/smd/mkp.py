"""The outer 0-1 multi-dimensional knapsack: Frieze-Clarke's scheme and an exact MILP.

``max u x`` s.t. ``sum_i v[i] x_i <= C``, ``x`` binary (spec 002 eq. (16)).

References
----------
Frieze, Clarke, "Approximation algorithms for the m-dimensional 0-1 knapsack problem: worst-case
and probabilistic analyses", EJOR 15 (1984).  Algorithm 3 and Theorem 3 of the SMD technical
report.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ...errors import OptionError
from ...solvers.highs_lp import ArrayLP
from ...tolerances import FIT_TOL

_TOL = FIT_TOL


@dataclass(frozen=True)
class KnapsackResult:
    """Chosen items, their value, and the work done (subsets visited, LPs solved)."""

    chosen: np.ndarray  # bool per item
    value: float
    subsets: int
    lps: int
    seconds: float
    k: int
    proven_optimal: bool = False
    bound: float | None = None
    complete: bool = True  # False when the deadline cut the subset search short (guarantee void)


def subset_size(eps: float, resources: int, items: int) -> int:
    """``k = min(I, ceil(R (1 - eps) / eps))`` [TR Alg. 3]."""
    if not 0 < eps < 1:
        raise OptionError(f"epsilon2 must be in (0, 1), got {eps}", field="--set epsilon2")
    return min(items, math.ceil(resources * (1 - eps) / eps - 1e-12))


def frieze_clarke(u: np.ndarray, weights: np.ndarray, capacity: np.ndarray, eps: float = 0.5,
                  k: int | None = None, deadline_s: float = math.inf) -> KnapsackResult:
    """Frieze-Clarke: for every feasible ``S`` with ``|S| <= k``, fix ``S`` to 1 and the items
    more valuable than ``S``'s least valuable one (``T(S)``, strict ``>``, spec P16) to 0, solve
    the LP relaxation for a basic optimum and round it down; return the best.

    Guarantee (TR Theorem 3): value ``>= (1 - eps) OPT``; the proof gives
    ``OPT <= value (1 + R/k)``, i.e. ``value >= k/(k+R) OPT``.

    Default ``eps = 0.5`` [PROP]: with R resources it gives ``k = R`` and half the optimum
    guaranteed.  The paper's 0.01 makes ``k >= I`` for every I it evaluates: an exhaustive
    search over all ``2^I`` subsets (spec P14).  Subsets are searched depth-first in order of
    decreasing ``u`` with branch and bound that cannot change the answer: a child ``S + {j}``
    (``j`` after ``S``'s last item) fixes more variables than ``S``, so its LP value is at most
    ``S``'s, and a subtree whose LP value (or the quick bound ``u(S) + u(free)``) does not
    exceed the best rounded value found is skipped; infeasible subsets end their subtree.
    Items of zero value or too large for the cluster are left out.  The empty set is included.
    ``k`` given directly overrides ``eps`` (``k = 0``: LP round-down only).  After
    ``deadline_s`` seconds the search stops with the best answer so far and ``complete=False``.
    """
    start = time.perf_counter()
    u = np.asarray(u, dtype=float)
    weights = np.asarray(weights, dtype=float).reshape(len(u), -1)
    capacity = np.asarray(capacity, dtype=float)
    n_all = len(u)
    usable = np.flatnonzero((u > 0) & np.all(weights <= capacity + _TOL * np.maximum(1, capacity), axis=1))
    k = subset_size(eps, len(capacity), len(usable)) if k is None else min(int(k), len(usable))
    order = usable[np.lexsort((usable, -u[usable]))]  # decreasing u, ties by index
    uu, ww = u[order], weights[order]
    n = len(order)
    chosen = np.zeros(n_all, dtype=bool)
    if n == 0:
        return KnapsackResult(chosen, 0.0, 1, 0, time.perf_counter() - start, k)
    lp = ArrayLP(uu, ww.T, np.full(len(capacity), -np.inf), capacity, np.zeros(n), np.ones(n), maximize=True)
    best_val, best_x = -1.0, np.zeros(n, dtype=bool)
    visited = 0
    stop_at = start + deadline_s
    complete = True
    room = capacity + _TOL * np.maximum(1, capacity)

    def visit(S: list[int], used: np.ndarray, value: float) -> tuple[list[int], np.ndarray, float, Iterator[int]] | None:
        """Bound and solve ``S``'s LP; the frame of its children still to visit, or None."""
        nonlocal best_val, best_x, visited, complete
        if visited and time.perf_counter() > stop_at:  # the root LP always runs
            complete = False
            return None
        visited += 1
        last_u = uu[S[-1]] if S else math.inf
        lo, hi = np.zeros(n), np.ones(n)
        lo[S] = 1.0
        fixed_zero = uu > last_u
        fixed_zero[S] = False
        hi[fixed_zero] = 0.0
        free = (hi > 0) & (lo == 0)
        if value + uu[free].sum() <= best_val + _TOL:
            return None
        lp.set_col_bounds(lo, hi)
        res = lp.solve()
        if res.status != "optimal" or res.x is None or res.objective is None or res.objective <= best_val + _TOL:
            return None  # (an optimal result always has x and objective)
        x = res.x >= 1 - 1e-7
        z = float(uu[x].sum())
        if z > best_val + _TOL:
            best_val, best_x = z, x
        if len(S) == k:
            return None
        first = S[-1] + 1 if S else 0
        fits = np.all(used + ww[first:] <= room, axis=1)  # infeasible subsets end their subtree
        return S, used, value, iter((first + np.flatnonzero(fits)).tolist())

    # depth first with an explicit stack: k may exceed Python's recursion limit, and the deadline
    # must stop the whole search at once, not one level at a time
    root = visit([], np.zeros(len(capacity)), 0.0)
    stack = [root] if root is not None else []
    while stack and complete:
        S, used, value, children = stack[-1]
        j = next(children, None)
        if j is None:
            stack.pop()
            continue
        child = visit(S + [j], used + ww[j], value + uu[j])
        if child is not None:
            stack.append(child)
    chosen[order[best_x]] = True
    return KnapsackResult(chosen, float(u[chosen].sum()), visited, lp.solves, time.perf_counter() - start, k, complete=complete)


def exact_knapsack(u: np.ndarray, weights: np.ndarray, capacity: np.ndarray, time_limit: float = 60.0,
                   gap: float = 1e-6) -> KnapsackResult:
    """The knapsack by MILP (HiGHS), for algorithm runs that isolate the inner loss."""
    start = time.perf_counter()
    u = np.asarray(u, dtype=float)
    weights = np.asarray(weights, dtype=float).reshape(len(u), -1)
    if len(u) == 0:
        return KnapsackResult(np.zeros(0, dtype=bool), 0.0, 0, 0, 0.0, 0, True, 0.0)
    mip = ArrayLP(u, weights.T, np.full(weights.shape[1], -np.inf), capacity, np.zeros(len(u)), np.ones(len(u)),
                  maximize=True, time_limit=time_limit, integer=True, gap=gap)
    res = mip.solve()
    if res.x is None:
        raise RuntimeError(f"HiGHS found no knapsack solution ({res.status})")
    chosen = res.x > 0.5
    return KnapsackResult(chosen, float(u[chosen].sum()), 0, 0, time.perf_counter() - start, 0,
                          res.status == "optimal", mip.mip_bound())
