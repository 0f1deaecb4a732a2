"""The categorization + matching-market scheme and its sampling sparsification (spec 003 section 3).

**Reconstruction.**  The paper's body was not available; the scheme below is the spec's
reconstruction and our design where marked:

* A *category* is a job-size vector ``kappa`` (``K_i >= 1``, ``sum K_i <= K``; idle workers
  allowed by default, P6).  Every placement lies in exactly one category.
* Per category, the matching market (:mod:`.market`) picks each job's workers.  Valuation
  (our design, spec 3.2): the JCT gradient ``Gamma_ic = T_i Pi_i rho_ic / Xhat_i^2`` with
  ``Xhat_i = K_i rhobar_i`` first, then ``Xhat_i = X_i(W_i)`` for ``R - 1`` more rounds;
  ``valuation=rho`` is the re-implementation's ``Gamma = rho`` (the P7 trap, a baseline).
  Candidates are always ranked by the *true* average JCT (P7), whose communication term uses
  ``r_min`` over the links of the GPUs each job got, as the checker does.  The valuation is
  linear and cannot see ``r_min``, so when GPUs have different links each category's market is
  re-cleared with per-job *link floors* (a job may buy only GPUs whose link is at least its
  floor), by coordinate descent on the true JCT (our design; :meth:`Market._link_floors`).
* Full scheme: every category.  Sampled scheme (section 3.4): ``M`` categories drawn i.i.d.
  (``uniform`` over all categories by stars and bars, or ``centered`` multinomial around
  ``w_i ~ sqrt(T_i Pi_i / rhobar_i)``), duplicates dropped, the equal-share category always
  added (and, our design, the size vector proportional to ``w``).  Then (our design, spec 3.4
  "sample, then local search") a variable-neighbourhood descent from the ``starts`` best
  categories over neighbouring size vectors (move 1, 2, 4, ... workers between two jobs, add
  idle ones, drop some; an improving move is repeated with doubled length while it keeps
  improving), with market results cached and capped at ``budget`` solves.  The
  method screens with one market round and re-solves the best few with ``R`` rounds
  (:mod:`.methods`).

Guarantees: within a category the market allocation maximizes total valuation (Shapley-Shubik),
and with the gradient valuation at the reference ``Xhat`` this is the first-order optimum of
the category's JCT; none for the whole scheme, beyond the sampling bound of spec 3.4: if a
fraction ``phi`` of categories is within ``1 + eps`` of OPT, ``M`` samples miss all of them
with probability at most ``(1 - phi)^M``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ...errors import OptionError
from .configs import JctTable, magnitude
from .timing import jct_rows
from .view import HeteroView

#: Refuse full enumeration beyond this many categories.
MAX_CATEGORIES = 2_000_000
#: Link floors tried per job (evenly spread over the distinct link speeds when there are more).
MAX_LINK_LEVELS = 8


@dataclass
class Market:
    """Solves categories for one view, caching by size vector and counting market solves."""

    view: HeteroView
    comm: str = "ring"
    split: str = "proportional"
    valuation: str = "gradient"
    rounds: int = 3
    engine: str = "auto"
    table: JctTable | None = None
    deadline: float = math.inf
    solves: int = 0
    cache: dict[tuple[int, ...], tuple[float, np.ndarray | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        v = self.view
        self._rho = v.rho()
        self._gamma_mask = np.where(self._rho > 0, 0.0, -np.inf)
        self._rhobar = mean_throughput(v)
        self._weight = np.array([j.weight for j in v.jobs])
        self.jct_table = self.table if self.table is not None else JctTable(v, self.comm, self.split)
        # jobs whose communication time depends on the slowest link they get, and the link speeds
        levels = np.unique(v.bandwidth[np.isfinite(v.bandwidth)])
        if len(levels) > MAX_LINK_LEVELS:  # floors only narrow the market; the JCT stays exact
            levels = levels[np.unique(np.linspace(0, len(levels) - 1, MAX_LINK_LEVELS).round().astype(int))]
        self._link_bound = np.array([j.comm_s is None and self.comm != "none" for j in v.jobs])
        self._levels = levels if len(levels) > 1 and self._link_bound.any() else None

    def expired(self) -> bool:
        """Whether the run's time limit (``deadline``, a ``time.perf_counter()`` value) has passed."""
        return time.perf_counter() > self.deadline

    def average(self, sizes: Iterable[int]) -> float:
        return self.solve(sizes)[0]

    def solve(self, sizes: Iterable[int]) -> tuple[float, np.ndarray | None]:
        """(average JCT, allocation (S, G)) of the best of the ``R`` market rounds; ``inf`` if infeasible."""
        key = tuple(map(int, sizes))
        if key in self.cache:
            return self.cache[key]
        self.solves += 1
        kappa = np.array(key, dtype=np.int64)
        best: tuple[float, np.ndarray | None] = (math.inf, None)
        xhat = kappa * self._rhobar
        gamma = self._rho.copy()
        for _ in range(self.rounds if self.valuation == "gradient" else 1):
            if self.valuation == "gradient":
                gamma = (self._weight / xhat ** 2)[:, None] * self._rho
            x = _allocate()(gamma + self._gamma_mask, kappa, self.view.counts, self.engine)
            if x is None:
                break
            if best[1] is not None and np.array_equal(x, best[1]):
                break  # a fixed point: further rounds would return the same allocation
            avg = float(self.jct_table(x).mean())
            if avg < best[0]:
                best = (avg, x)
            xhat = (x * self._rho).sum(axis=1)
        if best[1] is not None and self._levels is not None:
            best = self._reassign(self._link_floors(gamma, kappa, best))
        self.cache[key] = best
        return best

    def _reassign(self, best: tuple[float, np.ndarray | None]) -> tuple[float, np.ndarray | None]:
        """Hand the cleared bundles (each job's class counts) back out to the jobs of the same size
        by the true JCT (our design): which job gets the bundle on the fast links is a joint
        choice the linear valuation does not see.  Per size, jobs x *distinct* bundles (with
        their multiplicities) is a transportation problem (:func:`.market.allocate`), so a
        thousand single-GPU jobs cost a thousand x G JCTs, not a million."""
        x = best[1]
        assert x is not None
        if self.expired():
            return best
        sizes = x.sum(axis=1)
        y = x.copy()
        for k in np.unique(sizes):
            members = np.flatnonzero(sizes == k)
            if len(members) < 2:
                continue
            bundles, mult = np.unique(x[members], axis=0, return_counts=True)
            if len(bundles) < 2:
                continue
            rows = np.repeat(members, len(bundles))
            cost = jct_rows(self.view, rows, np.tile(bundles, (len(members), 1)), self.comm, self.split)
            gain = -cost.reshape(len(members), len(bundles))
            pick = _allocate()(np.where(np.isfinite(gain), gain, -np.inf), np.ones(len(members), dtype=np.int64), mult, "transport")
            if pick is None:
                continue
            y[members] = bundles[pick.argmax(axis=1)]
        value = float(self.jct_table(y).mean())
        return (value, y) if value < best[0] - 1e-12 else best

    def _link_floors(self, gamma: np.ndarray, kappa: np.ndarray, best: tuple[float, np.ndarray | None]) -> tuple[float, np.ndarray | None]:
        """Coordinate descent over per-job link floors: job ``i`` may only buy GPUs whose link is
        at least ``floor_i``; a floor is kept when the re-cleared market lowers the true average
        JCT.  The valuation is linear in the workers and cannot see ``r_min`` (the slowest link of
        the workers a job gets sets its ring all-reduce time), so without this a job buys fast
        GPUs on slow links [our design].  Only runs when GPUs of the cluster have different links;
        at most ``2 S L`` extra market solves per category, ``L`` distinct link speeds."""
        levels = self._levels
        assert levels is not None  # called only when the cluster has several link speeds
        floors = np.full(self.view.S, -np.inf)
        bw = self.view.bandwidth
        for _ in range(2):
            improved = False
            for i in np.flatnonzero(self._link_bound):
                for level in levels:
                    if level == floors[i] or self.expired():
                        continue
                    trial = floors.copy()
                    trial[i] = level
                    mask = np.where(bw[None, :] >= trial[:, None], 0.0, -np.inf)
                    x = _allocate()(gamma + self._gamma_mask + mask, kappa, self.view.counts, self.engine)
                    if x is None:
                        continue
                    avg = float(self.jct_table(x).mean())
                    if avg < best[0] - 1e-12:
                        best, floors, improved = (avg, x), trial, True
            if not improved:
                break
        return best


# ----- categories -------------------------------------------------------------------------------

def mean_throughput(view: HeteroView) -> np.ndarray:
    """``rhobar_i``: each job's throughput averaged over all GPUs of the cluster."""
    return (view.rho() * view.counts).sum(axis=1) / view.K


def sqrt_shares(view: HeteroView) -> np.ndarray:
    """``w_i ~ sqrt(T_i Pi_i / rhobar_i)``, summing to 1: minimizing ``sum a_i / X_i`` subject to
    ``sum X_i <= C`` gives ``X_i ~ sqrt(a_i)`` (spec 3.4, communication ignored)."""
    w = np.sqrt(np.array([j.weight for j in view.jobs]) / np.maximum(mean_throughput(view), 1e-300))
    return w / w.sum()


def size_bounds(view: HeteroView) -> tuple[np.ndarray, np.ndarray]:
    """Each job's fewest and most GPUs: its range, the most capped at the GPUs it can use."""
    lo = np.array([j.k_range[0] for j in view.jobs], dtype=np.int64)
    usable = (view.arrays["rho"] > 0).astype(np.int64) @ view.counts
    hi = np.minimum(np.array([j.k_range[1] for j in view.jobs], dtype=np.int64), usable)
    return lo, hi


def count_categories(view: HeteroView, idle: bool = True) -> int:
    """``C(K, S)`` with idle workers, ``C(K-1, S-1)`` without (size ranges ignored)."""
    return math.comb(view.K, view.S) if idle else math.comb(view.K - 1, view.S - 1)


def enumerate_categories(view: HeteroView, idle: bool = True) -> Iterable[tuple[int, ...]]:
    """Every size vector within the jobs' ranges, summing to at most (or exactly) ``K``."""
    total = count_categories(view, idle)
    if total > MAX_CATEGORIES:
        raise OptionError(f"{magnitude(total)} categories (more than {MAX_CATEGORIES:,}): too many to enumerate; use --method sampling",
                          field="--method")
    lo, hi = size_bounds(view)
    k = view.K

    def rec(i: int, left: int) -> Iterable[tuple[int, ...]]:
        if i == view.S:
            if idle or left == 0:
                yield ()
            return
        rest_min = int(lo[i + 1:].sum())
        for size in range(int(lo[i]), min(int(hi[i]), left - rest_min) + 1):
            for tail in rec(i + 1, left - size):
                yield (size, *tail)

    yield from rec(0, k)


def equal_share(view: HeteroView) -> tuple[int, ...]:
    """About ``K/S`` workers per job (the remainder to the heaviest jobs), clipped to the ranges."""
    lo, hi = size_bounds(view)
    base, extra = divmod(view.K, view.S)
    order = np.argsort(-np.array([j.weight for j in view.jobs]), kind="stable")
    sizes = np.full(view.S, base, dtype=np.int64)
    sizes[order[:extra]] += 1
    return tuple(int(s) for s in np.clip(sizes, lo, hi))


def sample_categories(view: HeteroView, m: int, rng: np.random.Generator, distribution: str = "uniform",
                      idle: bool = True, deadline: float = math.inf) -> list[tuple[int, ...]]:
    """``m`` i.i.d. draws (duplicates and out-of-range draws dropped), in draw order; fewer when
    the run's ``deadline`` (a ``time.perf_counter()`` value) passes first.

    The spec draws uniformly over all categories; with per-job size bounds (a trace's GPU
    counts) that is rejection sampling, which can reject nearly every draw.  When more than half
    of the draws are rejected (or the only one), the rest are drawn inside the bounds instead (:func:`_bounded_draw`:
    each job's minimum plus a uniformly random subset of the spare sizes, our design; not
    uniform over categories, but every draw is feasible)."""
    lo, hi = size_bounds(view)
    k, s = view.K, view.S
    out: dict[tuple[int, ...], None] = {}
    w = sqrt_shares(view)
    rejected = 0
    for n in range(m):
        if n % 256 == 255 and time.perf_counter() > deadline:
            break
        if rejected > m // 2:
            sizes = _bounded_draw(lo, hi, k, idle, rng)
            if sizes is None:
                break
            out[tuple(int(v) for v in sizes)] = None
            continue
        if distribution == "centered":
            sizes = 1 + rng.multinomial(k - s, w)
        elif idle:
            cuts = np.sort(rng.choice(np.arange(1, k + 1), size=s, replace=False))
            sizes = np.diff(np.concatenate([[0], cuts]))
        else:
            cuts = np.sort(rng.choice(np.arange(1, k), size=s - 1, replace=False))
            sizes = np.diff(np.concatenate([[0], cuts, [k]]))
        if (sizes >= lo).all() and (sizes <= hi).all():
            out[tuple(int(v) for v in sizes)] = None
        else:
            rejected += 1
    if not out and rejected:  # a single draw (m = 1) that was rejected
        sizes = _bounded_draw(lo, hi, k, idle, rng)
        if sizes is not None:
            out[tuple(int(v) for v in sizes)] = None
    return list(out)


def _bounded_draw(lo: np.ndarray, hi: np.ndarray, k: int, idle: bool, rng: np.random.Generator) -> np.ndarray | None:
    """Sizes within ``[lo, hi]`` using at most ``k`` GPUs (exactly ``k`` unless ``idle``): the
    minimums, plus ``t`` spare units picked uniformly among all jobs' spare units (``t`` uniform
    over what fits when GPUs may idle).  ``None`` when no such sizes exist."""
    lo = np.asarray(lo, dtype=np.int64)
    spare = np.maximum(np.asarray(hi, dtype=np.int64) - lo, 0)
    room = k - int(lo.sum())
    most = min(room, int(spare.sum()))
    if room < 0 or (not idle and most < room):
        return None
    t = int(rng.integers(0, most + 1)) if idle else room
    return lo + rng.multivariate_hypergeometric(spare, t, method="marginals")


def default_samples(view: HeteroView, idle: bool = True) -> int:
    """Spec 3.4's default ``M = min(50, 0.1 |C|)`` (at least 1), in integers: ``|C|`` is
    ``C(K, S)``, far beyond any float at a thousand jobs."""
    return max(1, min(50, count_categories(view, idle) // 10))


def neighbours(sizes: tuple[int, ...], view: HeteroView, idle: bool, step: int = 1,
               bounds: tuple[np.ndarray, np.ndarray] | None = None) -> Iterable[tuple[int, ...]]:
    """Size vectors ``step`` workers away: move them between two jobs, or add or drop idle ones.

    Only the jobs that can give ``step`` workers and those that can take them are paired (numpy
    masks): at a thousand jobs with single-GPU maxima nearly every one of the ``S^2`` pairs is
    out of range, and testing them one by one was most of the run."""
    lo, hi = bounds if bounds is not None else size_bounds(view)
    now = np.asarray(sizes, dtype=np.int64)
    total = int(now.sum())
    givers = np.flatnonzero(now - step >= lo)
    takers = np.flatnonzero(now + step <= hi)
    for i in givers.tolist():
        for j in takers.tolist():
            if i != j:
                n = list(sizes)
                n[i] -= step
                n[j] += step
                yield tuple(n)
    if idle:
        grow = set(takers.tolist()) if total + step <= view.K else set()
        shrink = set(givers.tolist())
        for i in sorted(grow | shrink):
            if i in grow:
                yield sizes[:i] + (sizes[i] + step,) + sizes[i + 1:]
            if i in shrink:
                yield sizes[:i] + (sizes[i] - step,) + sizes[i + 1:]


def local_search(market: Market, starts: list[tuple[int, ...]], budget: int, idle: bool = True, first: bool = False) -> tuple[int, ...]:
    """Variable-neighbourhood descent from each start, within ``budget`` market solves.

    Steepest descent over moves of 1 worker; when none improves, moves of 2, 4, 8, ... workers
    (so that a job can jump far from a poor start, e.g. to the 20 GPUs a heavy job needs), back
    to 1 after every improvement.  Our design (spec 3.4 sketches single-worker moves only).
    """
    best = min(starts, key=market.average)
    bounds = size_bounds(market.view)
    for start in starts:
        current, step = start, 1
        while market.solves < budget and step <= market.view.K and not market.expired():
            here = market.average(current)
            better = None
            for c in neighbours(current, market.view, idle, step, bounds):
                if market.expired() or (market.solves >= budget and c not in market.cache):
                    break  # no solves left: the sweep ends with the best neighbour seen so far
                value = market.average(c)
                if value < here - 1e-12 and (better is None or value < better[0]):
                    better = (value, c)
                    if first:
                        break
            if better is not None:
                current, step = _extend(market, current, better, idle), 1
            else:
                step *= 2
        if market.average(current) < market.average(best):
            best = current
    return best


def _extend(market: Market, current: tuple[int, ...], better: tuple[float, tuple[int, ...]], idle: bool) -> tuple[int, ...]:
    """Repeat an improving move with doubled length while that keeps improving (a pattern move:
    a heavy job can grow from its equal share to the 40 GPUs it needs in a few solves)."""
    value, best = better
    move = np.subtract(best, current)
    lo, hi = size_bounds(market.view)
    length = 2
    while not market.expired():
        nxt = np.add(current, length * move)
        if (nxt < lo).any() or (nxt > hi).any() or nxt.sum() > market.view.K or (not idle and nxt.sum() != market.view.K):
            break
        candidate = tuple(int(v) for v in nxt)
        v = market.average(candidate)
        if v >= value - 1e-12:
            break
        value, best, length = v, candidate, 2 * length
    return best


def proportional_anchor(view: HeteroView) -> tuple[int, ...]:
    """Sizes ``~ K w_i`` with ``w_i ~ sqrt(T_i Pi_i / rhobar_i)``: the continuous optimum with
    communication ignored (spec 3.4, the centre of the ``centered`` distribution)."""
    lo, hi = size_bounds(view)
    extra = view.K - int(lo.sum())
    sizes = lo + np.floor(extra * sqrt_shares(view)).astype(np.int64)
    return tuple(int(s) for s in np.clip(sizes, lo, hi))


def best_category(market: Market, categories: Iterable[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The best of ``categories``, or of those solved before the market's deadline."""
    best, value = None, math.inf
    for sizes in categories:
        if market.expired():
            break
        v = market.average(sizes)
        if v < value:
            best, value = sizes, v
    return best


def _allocate():
    """:func:`.market.allocate`, imported when a market first runs (it needs OR-Tools and SciPy, which the
    greedy baseline, the exact method's quick start, does not)."""
    from .market import allocate

    return allocate
