"""Exact pricing for the configuration LP: ``min_n J_i(n) / S + p . n`` over integer GPU-count vectors.

The configuration LP (:mod:`.bound`) prices job ``i`` at class prices ``p >= 0`` (the capacity
rows' duals) by its cheapest column ``n`` (a class-count vector within the job's size range).
Enumerating every ``n`` is out of reach at scale (about 10^16 vectors per job on Alibaba's 6,212
GPUs of 7 classes); this module prices every job exactly all the same, by a branch and bound over
the job size ``K = sum n`` (our design):

* **Groups.**  Jobs that differ only in their iterations ``T`` share everything else, and the JCT
  of each is ``T t(n)`` with one per-iteration time ``t(n)`` (integer split, plus communication).
  Within a group, classes with the same throughput, memory cap and link are interchangeable:
  they merge into *effective* classes, whose units are bought cheapest first (the job's time does
  not depend on which of them it gets).  A trace has few groups (the Alibaba import: 5
  workloads, 3 effective classes each).
* **Known vectors, exactly.**  A group enumerates every effective vector of its smallest sizes
  once (within :data:`START_VECTORS`), with its exact ``t(n)`` (:func:`.timing.jct_rows`: integer
  split, memory caps, the slowest link).  At prices ``p`` a vector costs ``sum_e cheapest(e, n_e)``,
  and each job's best known vector is a vertex of the lower convex hull of the points
  ``(t, cost)`` (the job's weight ``T / S`` is the slope).
* **The other sizes, by a bound.**  They form intervals ``[K1, K2]``.  Under a link floor ``r``
  (a vector's slowest link is one of the cluster's link speeds, and it then uses only classes at
  least that fast), ``t(n) >= Pi / min(X, Xcap) + comm(K1, r)`` with ``X = rho . n`` (Lemma 1's
  continuous split is the fastest), ``Xcap = Pi rho_max / ceil(Pi / K2)`` (some GPU takes
  ``ceil(Pi / K)`` samples), communication nondecreasing in ``K`` and nonincreasing in the link.
  For every ``mu >= 0`` weak duality splits the minimum into ``min_n (p - mu rho) . n`` (over the
  box with ``K1 <= sum n <= K2``: a greedy knapsack, integral) plus ``min_X a / min(X, Xcap) + mu X``
  (closed form): a lower bound for any ``mu``, concave in ``mu``, maximized exactly over the
  knapsack's pieces (:func:`interval_bounds`).  The knapsack solution at the best ``mu`` is an
  integer vector: it joins the known vectors (a candidate column).
* **Branching.**  An interval whose bound is below some job's best known value is halved; a
  single size is enumerated (its *layer*).  When every interval's bound is at least a job's best
  known value, that value is the job's exact minimum.  Work limits (vectors enumerated, intervals
  split) stop the branching; a job left undecided is priced by its bound (valid, not exact:
  :attr:`Priced.exact` says so).

Every minimum returned is a lower bound on the job's true minimum, equal to it where ``exact``;
every column returned is a real integer column with its true JCT.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...clock import past
from .timing import COMM_MODELS, jct_rows
from .view import HeteroView

#: Most vectors (effective, with their times) all groups enumerate together, and per pricing call.
MAX_VECTORS = 2_000_000
CALL_VECTORS = 50_000
#: Vectors a group enumerates at its start (its smallest sizes; fewer when there are many groups).
START_VECTORS = 20_000
#: Most intervals a group splits per pricing call.
CALL_SPLITS = 100
#: (job, vector) pairs whose time is computed in one batch.
CHUNK = 100_000


def bounded_count(counts: np.ndarray, h: int) -> int:
    """How many ``0 <= n <= counts`` have ``sum n <= h`` (a DP over the classes, Python integers)."""
    ways = [1] + [0] * h
    for c in counts:
        c = int(c)
        prefix = [0] * (h + 2)
        for s in range(h + 1):
            prefix[s + 1] = prefix[s] + ways[s]
        ways = [prefix[s + 1] - prefix[max(0, s - c)] for s in range(h + 1)]
    return sum(ways)


def bounded_vectors(counts: np.ndarray, h: int) -> np.ndarray:
    """Every ``0 <= n <= counts`` with ``sum n <= h``, shape (M, G), built class by class with numpy."""
    vecs = np.zeros((1, 0), dtype=np.int64)
    sums = np.zeros(1, dtype=np.int64)
    for c in counts:
        reps = np.minimum(int(c), h - sums) + 1
        idx = np.repeat(np.arange(len(vecs)), reps)
        vals = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
        vecs = np.column_stack([vecs[idx], vals])
        sums = sums[idx] + vals
    return vecs


@dataclass
class Group:
    """Jobs identical but for ``T``, their effective classes, their enumerated vectors, and the
    sizes not enumerated yet as intervals (refined where their bound does not decide a job)."""

    jobs: np.ndarray            # job indices
    weight: np.ndarray          # T_j / S: the job's JCT / S is weight * t(n)
    members: list[np.ndarray]   # per effective class, the view's classes merged into it
    ecount: np.ndarray          # GPUs per effective class
    lo: int
    hi: int                     # the job's largest size, capped at the GPUs it can use
    vecs: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    time: np.ndarray = field(default_factory=lambda: np.zeros(0))
    parts: list[tuple[int, int]] = field(default_factory=list)
    layers: np.ndarray = field(default_factory=lambda: np.zeros(0))   # vectors of each size (floats)
    seen: set[tuple[int, ...]] = field(default_factory=set)   # candidate vectors added (their sizes lie in ``parts``)
    started: bool = False

    @property
    def size(self) -> int:
        return len(self.time)


@dataclass
class Priced:
    """One pricing pass: per job its minimum (a lower bound, exact where ``exact``), its best
    known column (``vec`` in the view's classes, ``cost`` its ``J / S``) and that column's value
    ``cost + p . vec``."""

    bound: np.ndarray
    exact: np.ndarray
    vec: np.ndarray
    cost: np.ndarray
    value: np.ndarray


def job_groups(view: HeteroView) -> list[Group]:
    """The view's jobs grouped by everything but ``T``, with each group's effective classes."""
    a = view.arrays
    bw = view.bandwidth
    keys: dict[tuple, list[int]] = {}
    for i, job in enumerate(view.jobs):
        key = (a["rho"][i].tobytes(), a["cap"][i].tobytes(), int(a["batch"][i]), float(np.nan_to_num(a["comm_s"][i], nan=-1.0)),
               float(np.nan_to_num(a["comm_gbit"][i], nan=-1.0)), job.k_range)
        keys.setdefault(key, []).append(i)
    groups = []
    for members in keys.values():
        i = members[0]
        usable = np.flatnonzero(a["rho"][i] > 0)
        eff: dict[tuple[float, int, float], list[int]] = {}
        for c in usable.tolist():
            eff.setdefault((float(a["rho"][i, c]), int(a["cap"][i, c]), float(bw[c])), []).append(c)
        merged = [np.array(cs, dtype=np.int64) for cs in eff.values()]
        ecount = np.array([int(view.counts[cs].sum()) for cs in merged], dtype=np.int64)
        jobs = np.array(members, dtype=np.int64)
        lo, hi = view.jobs[i].k_range
        groups.append(Group(jobs, a["iterations"][jobs] / view.S, merged, ecount, int(lo), min(int(hi), int(ecount.sum()))))
    return groups


def _fill(view: HeteroView, members: list[np.ndarray], evecs: np.ndarray) -> np.ndarray:
    """Effective vectors as vectors of the view's classes, each effective class's units taken from
    its member classes in the order given (any order gives the job the same time)."""
    out = np.zeros((len(evecs), view.G), dtype=np.int64)
    for e, cs in enumerate(members):
        left = evecs[:, e].copy()
        for c in cs.tolist():
            take = np.minimum(left, int(view.counts[c]))
            out[:, c] = take
            left -= take
    return out


def layer_counts(counts: np.ndarray, top: int) -> np.ndarray:
    """How many ``0 <= n <= counts`` have ``sum n = k``, for ``k = 0..top`` (floats: they only size budgets)."""
    ways = np.zeros(top + 1)
    ways[0] = 1.0
    for c in np.asarray(counts, dtype=np.int64).tolist():
        prefix = np.concatenate([[0.0], np.cumsum(ways)])
        k = np.arange(top + 1)
        ways = prefix[k + 1] - prefix[np.maximum(k - c, 0)]
    return ways


def layer_vectors(counts: np.ndarray, k: int) -> np.ndarray:
    """Every ``0 <= n <= counts`` with ``sum n = k``: the first classes as in :func:`.bound.bounded_vectors`,
    the last one takes the rest."""
    counts = np.asarray(counts, dtype=np.int64)
    head = bounded_vectors(counts[:-1], k) if len(counts) > 1 else np.zeros((1, 0), np.int64)
    rest = k - head.sum(axis=1)
    ok = rest <= counts[-1]
    return np.column_stack([head[ok], rest[ok]]).astype(np.int64)


def _add(view: HeteroView, group: Group, comm: str, vecs: np.ndarray) -> None:
    """Add effective vectors to ``group`` with their exact per-iteration times (finite ones only)."""
    rep = int(group.jobs[0])
    t = np.empty(len(vecs))
    full = _fill(view, group.members, vecs)
    for s in range(0, len(vecs), CHUNK):
        part = full[s:s + CHUNK]
        t[s:s + CHUNK] = jct_rows(view, np.full(len(part), rep, dtype=np.int64), part, comm)
    t /= view.jobs[rep].iterations
    ok = np.isfinite(t)
    group.vecs = np.vstack([group.vecs.reshape(-1, len(group.members)), vecs[ok]])
    group.time = np.concatenate([group.time, t[ok]])


def start(view: HeteroView, group: Group, comm: str, budget: int = START_VECTORS) -> int:
    """Enumerate every size from ``lo`` up to the largest whose vectors number at most ``budget`` in
    all (none when the size ``lo`` alone has more); the sizes above form the first interval.
    Returns the vectors enumerated."""
    group.layers = layer_counts(group.ecount, group.hi)
    group.started = True
    if group.lo > group.hi:  # the job fits on none of its GPUs: no vector at all
        return 0
    within = np.cumsum(np.where(np.arange(group.hi + 1) >= group.lo, group.layers, 0.0))
    k = int(np.searchsorted(within, budget, side="right")) - 1
    if k < group.lo:
        group.parts = [(group.lo, group.hi)]
        return 0
    vecs = bounded_vectors(group.ecount, k)
    vecs = vecs[vecs.sum(axis=1) >= group.lo]
    _add(view, group, comm, vecs)
    group.parts = [(k + 1, group.hi)] if k < group.hi else []
    return len(vecs)


def unit_costs(view: HeteroView, group: Group, p: np.ndarray, most: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Per effective class, the cost of its cheapest ``0..most`` units at prices ``p`` (shape (E, most + 1)),
    and its member classes in the order they are bought."""
    table = np.zeros((len(group.members), most + 1))
    orders = []
    for e, cs in enumerate(group.members):
        order = cs[np.argsort(p[cs], kind="stable")]
        units = np.repeat(p[order], np.minimum(view.counts[order], most))[:most]
        table[e, 1:len(units) + 1] = np.cumsum(units)
        table[e, len(units) + 1:] = np.inf
        orders.append(order)
    return table, orders


def lower_hull(t: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points minimizing ``w t + c`` for some ``w > 0``: indices of the lower-left convex hull
    in increasing ``t``, and the weights at which each next vertex takes over (decreasing)."""
    order = np.lexsort((c, t))
    best = np.minimum.accumulate(c[order])
    keep = order[np.concatenate([[True], c[order][1:] < best[:-1]])]  # Pareto: cost falls as time grows
    hull: list[int] = []
    for k in keep.tolist():
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (c[b] - c[a]) * (t[k] - t[a]) >= (c[k] - c[a]) * (t[b] - t[a]):  # b is not below the chord a-k
                hull.pop()
            else:
                break
        hull.append(k)
    idx = np.array(hull, dtype=np.int64)
    switch = -(np.diff(c[idx]) / np.diff(t[idx])) if len(idx) > 1 else np.zeros(0)
    return idx, switch


def _enumerated_minimum(view: HeteroView, group: Group, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each job's best known column: its value ``w t + cost`` and its row of ``group.vecs`` (``inf``
    and row 0 when the group knows none)."""
    n = len(group.jobs)
    if group.size == 0:
        return np.full(n, np.inf), np.zeros(n, np.int64)
    most = int(group.vecs.max())
    table, _ = unit_costs(view, group, p, most)
    cost = table[np.arange(len(group.members))[None, :], group.vecs].sum(axis=1)
    rows = np.flatnonzero(np.isfinite(cost))
    idx, switch = lower_hull(group.time[rows], cost[rows])
    # a job of weight w takes the vertex past every edge whose exchange rate -dc/dt exceeds w
    pick = np.searchsorted(-switch, -group.weight, side="left")
    chosen = rows[idx[pick]]
    return group.weight * group.time[chosen] + cost[chosen], chosen


def _pieces(price: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """The multipliers ``mu >= 0`` where the order of ``p - mu rho`` or a sign changes (sorted, with 0):
    between two of them the greedy knapsack's solution is fixed."""
    cuts = [0.0, *(price / rho).tolist()]
    dp, dr = price[:, None] - price[None, :], rho[:, None] - rho[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = dp / dr
    cuts += cross[(dr > 0) & np.isfinite(cross) & (cross > 0)].tolist()
    return np.unique(np.array(cuts))


def _greedy(price: np.ndarray, rho: np.ndarray, counts: np.ndarray, mu: np.ndarray, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
    """``argmin (p - mu rho) . n`` over real ``0 <= n <= counts[m]`` with ``k1[m] <= sum n <= k2[m]``, for
    each multiplier of ``mu`` (shape (P,)) and each box ``m`` (``counts`` shape (M, C)), shape (P, M, C):
    the first ``Q`` units by increasing ``p - mu rho``, ``Q`` the negative units clipped to ``[k1, k2]``
    (exact: one cardinality row over a box; integral, since the data are)."""
    w = price[None, :] - mu[:, None] * rho[None, :]                      # (P, C)
    order = np.argsort(w, axis=1, kind="stable")
    cs = np.transpose(counts[:, order], (1, 0, 2)).astype(np.int64)     # (P, M, C) in each row's order
    below = np.take_along_axis(w, order, axis=1) < 0                   # (P, C)
    negative = np.where(below[:, None, :], cs, 0).sum(axis=2)           # (P, M)
    q = np.clip(negative, k1[None, :], k2[None, :])
    before = np.cumsum(cs, axis=2) - cs
    taken = np.clip(q[:, :, None] - before, 0, cs)
    n = np.zeros_like(taken)
    np.put_along_axis(n, np.broadcast_to(order[:, None, :], taken.shape), taken, axis=2)
    return n


def _inner(a: np.ndarray, mu: np.ndarray, x_lo: np.ndarray, x_cap: np.ndarray) -> np.ndarray:
    """The ``X`` in ``[x_lo, x_cap]`` minimizing ``a / X + mu X`` (``x_cap`` at ``mu = 0``, where
    ``a / min(X, x_cap)`` is flat beyond it)."""
    positive = mu > 0
    return np.clip(np.where(positive, np.sqrt(a / np.where(positive, mu, 1.0)), x_cap), x_lo, x_cap)


def _dual_maximum(a: np.ndarray, fixed: np.ndarray, x_lo: np.ndarray, x_cap: np.ndarray, cuts: np.ndarray,
                  x_n: np.ndarray, cost_n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The maximum over ``mu >= 0`` of ``fixed + cost_n[k] - mu x_n[k] + a / X*(mu) + mu X*(mu)`` (``k`` the
    piece of ``mu``), for every job (rows) and interval (columns), and the piece where it is.

    The function is concave; its right slope at the start of piece ``k`` is ``X*(cut_k) - x_n[k]``,
    nonincreasing in ``k``: a binary search finds the last piece whose start still rises, and the
    maximum is at the start of that piece or at its stationary point ``mu = a / x_n[k]^2``."""
    nj, ni = a.shape[0], x_n.shape[1]
    cols = np.arange(ni)[None, :]
    tops = np.concatenate([cuts[1:], [np.inf]])
    lo_k = np.zeros((nj, ni), dtype=np.int64)
    hi_k = np.full((nj, ni), len(cuts) - 1, dtype=np.int64)
    while (lo_k < hi_k).any():
        mid = (lo_k + hi_k + 1) // 2
        rises = _inner(a, cuts[mid], x_lo, x_cap) - x_n[mid, cols] >= 0
        lo_k, hi_k = np.where(rises, mid, lo_k), np.where(rises, hi_k, mid - 1)
    xk, ck = x_n[lo_k, cols], cost_n[lo_k, cols]
    best = np.full((nj, ni), -np.inf)
    for mu in (cuts[lo_k], np.clip(a / np.maximum(xk, 1e-300) ** 2, cuts[lo_k], tops[lo_k])):
        xs = _inner(a, mu, x_lo, x_cap)
        best = np.maximum(best, fixed + ck - mu * xk + a / xs + mu * xs)  # every mu gives a valid bound
    return best, lo_k


def interval_bounds(view: HeteroView, group: Group, p: np.ndarray, comm: str,
                    spans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each job and each size interval of ``spans`` (shape (I, 2)): a lower bound on
    ``min J(n) / S + p . n`` over the vectors with a size in the interval (``inf`` where there are none),
    shape (J, I); and the integer vectors (view classes, shape (M, G)) at which some job's bound had
    its best multiplier: candidate columns (their value is not the bound).

    The bound, for a link floor ``r`` and every ``mu >= 0``: ``w comm(K1, r) + min_n (p - mu rho) . n
    + min_X [w Pi / min(X, Xcap) + mu X]`` over ``X`` in the interval's range; concave in ``mu``, and
    maximized exactly over the knapsack's pieces (:func:`_dual_maximum`).  Every (floor, interval)
    pair is one column of the arrays: the floor only changes which classes count."""
    i = int(group.jobs[0])
    job = view.jobs[i]
    classes = np.concatenate(group.members)
    rho, price = view.arrays["rho"][i, classes], p[classes]
    bw = view.bandwidth[classes]
    pi = float(job.batch)
    # the slowest link of a vector is one of these; under floor r it uses only classes at least r fast
    floors = np.unique(bw) if job.comm_s is None and comm != "none" else np.unique(bw)[:1]
    counts = np.where(bw[None, :] >= floors[:, None], view.counts[classes][None, :], 0)             # (L, C)
    fl, sp = np.repeat(np.arange(len(floors)), len(spans)), np.tile(np.arange(len(spans)), len(floors))
    total = counts.sum(axis=1)[fl]
    keep = spans[sp, 0] <= total
    fl, sp, total = fl[keep], sp[keep], total[keep]
    best = np.full((len(group.jobs), len(spans)), np.inf)
    if len(fl) == 0:
        return best, np.zeros((0, view.G), dtype=np.int64)
    k1, k2 = spans[sp, 0], np.minimum(spans[sp, 1], total)
    box = counts[fl]                                                                                # (M, C)
    usable = box > 0
    fast = np.where(usable, rho[None, :], 0.0).max(axis=1)
    slow = np.where(usable, rho[None, :], np.inf).min(axis=1)
    constant = np.full(len(fl), job.comm_s) if job.comm_s is not None else float(job.comm_gbit or 0.0) / floors[fl]
    w = group.weight[:, None]                                                                       # (J, 1)
    fixed = w * COMM_MODELS[comm](k1.astype(float), constant)[None, :]           # nondecreasing in K, in 1 / r
    x_cap = np.minimum(pi * fast / np.ceil(pi / k2), np.minimum(k2 * fast, box @ rho))
    cuts = _pieces(price, rho)
    mids = np.concatenate([(cuts[:-1] + cuts[1:]) / 2, [cuts[-1] + 1.0]])
    n = _greedy(price, rho, box, mids, k1, k2)                                                      # (P, M, C): one per piece
    here, arg = _dual_maximum(w * pi, fixed, k1 * slow, x_cap, cuts, n @ rho, n @ price)
    np.minimum.at(best.T, sp, here.T)  # a vector lies under one floor: the least of the floors' bounds
    pairs = np.unique(arg * len(fl) + np.arange(len(fl))[None, :])
    cand = np.zeros((len(pairs), view.G), dtype=np.int64)
    cand[:, classes] = n[pairs // len(fl), pairs % len(fl)]
    return best, cand


def _tolerance(value: np.ndarray) -> np.ndarray:
    """How far below a job's best known value a bound may be and still decide it (round-off; 0 at ``inf``)."""
    return np.where(np.isfinite(value), 1e-12 * np.maximum(1.0, np.abs(value)), 0.0)


def _effective(group: Group, vec: np.ndarray) -> np.ndarray:
    """View-class vectors (rows) as the group's effective vectors."""
    return np.column_stack([vec[:, cs].sum(axis=1) for cs in group.members]).astype(np.int64)


def _take_candidates(view: HeteroView, group: Group, comm: str, cand: np.ndarray) -> None:
    """Add the interval bounds' candidate vectors (view classes, rows) to the group's known vectors."""
    ev = np.unique(_effective(group, cand), axis=0) if len(cand) else np.zeros((0, len(group.members)), np.int64)
    fresh = [v for v in map(tuple, ev.tolist()) if sum(v) > 0 and v not in group.seen]
    if fresh:
        group.seen.update(fresh)
        _add(view, group, comm, np.array(fresh, dtype=np.int64))


@dataclass
class Work:
    """What one pricing call may still spend: vectors to enumerate, intervals to split, and its deadline."""

    vectors: int
    splits: int
    deadline: float = math.inf


def _refine(view: HeteroView, group: Group, p: np.ndarray, comm: str, work: Work) -> np.ndarray | None:
    """Bound each job over the sizes not enumerated: intervals whose bound is below a job's best
    known value are halved, single sizes enumerated, until every job is decided or the work is
    spent; each job's bound over the intervals left (``None`` past the deadline)."""
    bounds: dict[tuple[int, int], np.ndarray] = {}

    def bound(spans: list[tuple[int, int]]) -> None:
        if spans:
            b, cand = interval_bounds(view, group, p, comm, np.array(spans))
            _take_candidates(view, group, comm, cand)
            bounds.update(zip(spans, b.T))

    bound(group.parts)
    while True:
        if past(work.deadline):
            return None
        value = _enumerated_minimum(view, group, p)[0]
        tol = _tolerance(value)
        split: list[tuple[int, int]] = []
        progress = False
        for k1, k2 in [span for span, b in bounds.items() if (b < value - tol).any()]:
            if k1 == k2:
                size = int(group.layers[k1])
                if size > work.vectors:
                    continue
                work.vectors -= size
                _add(view, group, comm, layer_vectors(group.ecount, k1))
            elif work.splits > 0:
                work.splits -= 1
                mid = (k1 + k2) // 2
                split += [(k1, mid), (mid + 1, k2)]
            else:
                continue
            del bounds[(k1, k2)]
            progress = True
        if not progress:
            break
        bound(split)
    group.parts = sorted(bounds)
    return np.min(np.array(list(bounds.values())), axis=0) if bounds else np.full(len(group.jobs), np.inf)


class Pricer:
    """Exact pricing of every job of ``view`` (see the module docstring); the groups' known
    vectors and intervals persist from one call to the next (column generation prices again and
    again at nearby prices)."""

    def __init__(self, view: HeteroView, comm: str, max_vectors: int = MAX_VECTORS, call_vectors: int = CALL_VECTORS,
                 call_splits: int = CALL_SPLITS, start_vectors: int = START_VECTORS):
        self.view, self.comm = view, comm
        self.groups = job_groups(view)
        self.max_vectors, self.call_vectors, self.call_splits = max_vectors, call_vectors, call_splits
        self.start_vectors = start_vectors

    @property
    def vectors(self) -> int:
        return sum(g.size for g in self.groups)

    def state(self) -> tuple[int, int]:
        """What the branching has done so far (vectors known, intervals open): unchanged by a call, no progress."""
        return self.vectors, sum(len(g.parts) for g in self.groups)

    def price(self, p: np.ndarray, deadline: float = math.inf) -> Priced | None:
        """Every job's ``min_n J(n) / S + p . n`` at prices ``p``: a lower bound, exact where
        ``Priced.exact``, and its best known column; ``None`` past the deadline (a partial pass
        bounds nothing)."""
        view = self.view
        s = view.S
        out = Priced(np.full(s, np.inf), np.zeros(s, bool), np.zeros((s, view.G), np.int64), np.full(s, np.inf),
                     np.full(s, np.inf))
        work = Work(max(0, min(self.call_vectors, self.max_vectors - self.vectors)), self.call_splits, deadline)
        for group in self.groups:
            if past(deadline):
                return None
            if not group.started:
                share = min(self.start_vectors, self.max_vectors // (4 * len(self.groups)))
                work.vectors -= min(work.vectors, start(view, group, self.comm, share))
            beyond = _refine(view, group, p, self.comm, work)
            if beyond is None:
                return None
            value, row = _enumerated_minimum(view, group, p)
            j = group.jobs
            out.bound[j] = np.minimum(value, beyond)
            out.exact[j] = beyond >= value - _tolerance(value)  # no vector at all (both inf) is exact too
            out.value[j] = value
            if group.size:
                _, orders = unit_costs(view, group, p, int(group.vecs.max()))
                out.vec[j] = _fill(view, orders, group.vecs[row])
                out.cost[j] = group.weight * group.time[row]
        return out
