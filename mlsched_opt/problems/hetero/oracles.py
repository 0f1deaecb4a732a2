"""Two exact oracles besides the configuration ILP: bundle categories (Variant A) and brute force.

**Variant A** (spec 003 section 3.5; reconstructed from the authors' caching work, our design):
a category is an unordered multiset of ``S`` non-zero class-count bundles whose sum fits the
cluster.  Jobs and bundles form a one-to-one market with valuation ``Jbar - J_i(bundle)``;
its cleared allocation minimizes ``sum_i J_i`` within the category (Shapley-Shubik), so the
best category is OPT.  Exact, and exponential: for testing and small clusters.

**Brute force** over the ``(S + 1)^K`` assignments of every GPU to a job or to nobody: the
test oracle of spec section 2 for ``K <= 10``, independent of any grouping of workers.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator

import numpy as np
from scipy.optimize import linear_sum_assignment

from ...errors import OptionError
from .configs import magnitude, radix, ranged_table
from .market import clear_market, integer_values
from .view import HeteroView

MAX_BUNDLE_CATEGORIES = 500_000
MAX_BRUTE_FORCE = 5_000_000


def bundle_categories(vectors: np.ndarray, counts: np.ndarray, s: int) -> Iterator[tuple[int, ...]]:
    """Non-decreasing index tuples of ``s`` non-zero vectors whose sum is ``<= counts``."""
    idx = [v for v in range(len(vectors)) if vectors[v].any()]

    def rec(start: int, left: np.ndarray, depth: int) -> Iterator[tuple[int, ...]]:
        if depth == 0:
            yield ()
            return
        for pos in range(start, len(idx)):
            v = idx[pos]
            if (vectors[v] <= left).all():
                for tail in rec(pos, left - vectors[v], depth - 1):
                    yield (v, *tail)

    yield from rec(0, np.asarray(counts), s)


def variant_a(view: HeteroView, comm: str, engine: str = "hungarian",
              deadline: float = math.inf) -> tuple[np.ndarray | None, int, bool]:
    """OPT by bundle categories: the allocation (S, G) (``None`` if none is feasible), the
    number of categories solved, and whether all were solved before ``deadline``."""
    vectors, table = ranged_table(view, comm)
    best, value, seen = None, np.inf, 0
    for category in bundle_categories(vectors, view.counts, view.S):
        if time.perf_counter() > deadline:
            return best, seen, False
        seen += 1
        if seen > MAX_BUNDLE_CATEGORIES:
            raise OptionError(f"more than {MAX_BUNDLE_CATEGORIES:,} bundle categories: the cluster is too large for Variant A",
                              field="--method")
        cost = table[:, list(category)]
        if not np.isfinite(cost).any(axis=1).all():
            continue
        if engine == "mm":
            finite = np.where(np.isfinite(cost), cost, 0.0)
            top = float(finite.max()) if finite.size else 1.0
            vals = integer_values(top - finite)
            vals = np.where(np.isfinite(cost), vals, -10**9)
            rows = np.empty(view.S, dtype=np.int64)
            rows[clear_market(vals).owner] = np.arange(view.S)
            cols = rows
        else:
            _, cols = linear_sum_assignment(np.where(np.isfinite(cost), cost, 1e18))
        total = cost[np.arange(view.S), cols].sum()
        if total < value:
            value = total
            best = vectors[np.array(category)[cols]]
    return best, seen, True


def brute_force(view: HeteroView, comm: str, deadline: float = math.inf) -> tuple[np.ndarray | None, bool]:
    """OPT over every assignment of every GPU to a job or to nobody (test oracle), ``None`` if none
    is feasible; and whether every assignment was seen before ``deadline``."""
    k, s = view.K, view.S
    if (s + 1) ** k > MAX_BRUTE_FORCE:
        raise OptionError(f"brute force needs {magnitude((s + 1) ** k)} assignments ((S+1)^K, limit {MAX_BRUTE_FORCE:,}); "
                          "it is a test oracle for K <= 10", field="--method")
    _vectors, table = ranged_table(view, comm)
    weights = radix(view.counts)
    cls = view.worker_class()
    best, value = None, np.inf
    for chunk in _chunks(itertools.product(range(s + 1), repeat=k), 200_000):
        if time.perf_counter() > deadline:
            return (best if np.isfinite(value) else None), False
        a = np.array(chunk, dtype=np.int64)
        total = np.zeros(len(a))
        counts = np.zeros((len(a), s, view.G), dtype=np.int64)
        for c in range(view.G):
            members = a[:, cls == c]
            for i in range(s):
                counts[:, i, c] = (members == i + 1).sum(axis=1)
        for i in range(s):
            total += table[i, counts[:, i, :] @ weights]
        arg = int(np.argmin(total))
        if total[arg] < value:
            value, best = total[arg], counts[arg]
    return (best if np.isfinite(value) else None), True


def _chunks(it, size: int):
    while True:
        block = list(itertools.islice(it, size))
        if not block:
            return
        yield block
