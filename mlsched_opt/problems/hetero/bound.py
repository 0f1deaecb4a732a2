"""A lower bound on the average JCT at production scale: the configuration LP by column generation.

The configuration LP (:mod:`.formulation`) has a column per job and class-count vector ``n``;
:func:`.configs.all_vectors` enumerates ``prod_c (N_c + 1)`` vectors, about 10^16 on Alibaba's
6,212 GPUs of 7 classes.  A job can only use vectors with ``lo_i <= sum n <= hi_i`` GPUs, and a
trace's jobs ask for few GPUs (1,673 of Alibaba's 1,686 jobs at most one, none more than 8), so
job ``i`` has ``C(hi_i + G, G)`` vectors at most: 6,435 at 8 GPUs on 7 classes.  Each job whose
vectors number at most :data:`MAX_JOB_VECTORS` gets all of them (exact pricing); the LP over
those columns is the configuration LP itself.

A job with more vectors (a wide size range on many GPUs) is priced by a relaxation: with class
prices ``p >= 0`` (the capacity duals), ``J_i(n) >= T_i (Pi_i / (rho_i . n) + comm(lo_i, D_i /
r_max))`` (Lemma 1's continuous split is the fastest a batch can be split; communication grows
with the job size and the slowest link), and the minimum over real ``0 <= n <= N`` of
``a / (rho . n) + p . n`` is one-dimensional and convex in ``X = rho . n`` (a fractional
knapsack: classes by increasing ``p_c / rho_c``), solved exactly per segment.  Its rounded
minimizer is added as a column (column generation), and for every ``p >= 0``

    ``OPT >= L(p) = sum_i min_n [J_i(n) / S + p . n] - p . N``

(Lagrangian relaxation of the capacity rows) with the relaxed minimum for those jobs: a valid
bound at every iteration, equal to the LP value when every job is priced exactly.  All arrays:
vectors per job group (jobs with the same size range and usable classes share them), JCTs by
:func:`.timing.jct_rows`, the master LP as a sparse column matrix handed to HiGHS (highspy).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import highspy
import numpy as np

from ...solvers.highs_lp import use_threads
from .timing import COMM_MODELS, jct_rows
from .view import HeteroView

#: Most vectors a job gets in full (exact pricing); wider jobs are priced by the relaxation.
MAX_JOB_VECTORS = 20_000
#: Most columns of the master LP (memory: a column is one job row plus up to G class rows).
MAX_COLUMNS = 3_000_000
#: (job, vector) pairs whose JCT is computed in one batch (a few hundred MB of temporaries at most).
CHUNK = 100_000
#: Column generation rounds at most (each one master solve and one pricing pass).
MAX_CG_ROUNDS = 200


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
class Columns:
    """The master LP's columns: job, class-count vector and cost ``J / S``."""

    job: np.ndarray
    vec: np.ndarray
    cost: np.ndarray

    @staticmethod
    def empty(g: int) -> Columns:
        return Columns(np.zeros(0, np.int64), np.zeros((0, g), np.int64), np.zeros(0))

    def extend(self, other: Columns) -> None:
        self.job = np.concatenate([self.job, other.job])
        self.vec = np.vstack([self.vec, other.vec])
        self.cost = np.concatenate([self.cost, other.cost])


@dataclass
class BoundResult:
    status: str            # "optimal" (the LP value), "bound" (a Lagrangian bound), or why there is none
    bound: float | None
    lp_value: float | None
    rounds: int
    columns: int
    exact_jobs: int
    message: str


def _costs(view: HeteroView, jobs: np.ndarray, vecs: np.ndarray, comm: str) -> np.ndarray:
    out = np.empty(len(jobs))
    for lo in range(0, len(jobs), CHUNK):
        out[lo:lo + CHUNK] = jct_rows(view, jobs[lo:lo + CHUNK], vecs[lo:lo + CHUNK], comm)
    return out / view.S


def exact_columns(view: HeteroView, comm: str, exact: np.ndarray, deadline: float) -> Columns | None:
    """Every finite-JCT vector of every job in ``exact`` (``None`` past the deadline)."""
    lo = np.array([j.k_range[0] for j in view.jobs])
    hi = np.array([j.k_range[1] for j in view.jobs])
    usable = view.arrays["rho"] > 0
    cols = Columns.empty(view.G)
    if not exact.any():
        return cols
    groups: dict[tuple[int, int, bytes], list[int]] = {}
    for i in np.flatnonzero(exact):
        groups.setdefault((int(lo[i]), int(hi[i]), usable[i].tobytes()), []).append(int(i))
    # one enumeration per usable-class pattern, at the largest size any of its jobs takes
    top: dict[bytes, int] = {}
    for _, h, mask in groups:
        top[mask] = max(h, top.get(mask, 0))
    by_mask: dict[bytes, np.ndarray] = {}
    for mask, h in top.items():
        sub = bounded_vectors(np.where(np.frombuffer(mask, dtype=bool), view.counts, 0), h)
        by_mask[mask] = sub[sub.sum(axis=1) > 0]
    parts: list[Columns] = []
    for (low, h, mask), members in groups.items():
        if time.perf_counter() > deadline:
            return None
        vecs = by_mask[mask]
        k = vecs.sum(axis=1)
        vecs = vecs[(k >= low) & (k <= h)]
        jobs = np.repeat(np.array(members, dtype=np.int64), len(vecs))
        tiled = np.tile(vecs, (len(members), 1))
        cost = _costs(view, jobs, tiled, comm)
        ok = np.isfinite(cost)
        parts.append(Columns(jobs[ok], tiled[ok], cost[ok]))
    if parts:  # one concatenation: extending group by group copies the columns once per group
        cols = Columns(np.concatenate([c.job for c in parts]), np.vstack([c.vec for c in parts]),
                       np.concatenate([c.cost for c in parts]))
    return cols


def relaxed_price(view: HeteroView, i: int, p: np.ndarray, comm: str) -> list[tuple[float, np.ndarray, tuple[int, int]]]:
    """Lower bounds on ``min_n J_i(n) / S + p . n`` over integer ``0 <= n <= N`` in the job's size
    range, one per size interval, each with its real minimizer ``n``; their minimum bounds the job.

    Sizes are split into dyadic intervals ``[K1, K2]`` (1, 2-3, 4-7, ...).  On one of them,
    ``comm >= comm(K1, D / r_max)`` (communication grows with the size and the slowest link),
    compute ``>= Pi / X`` with ``X = rho . n`` (Lemma 1's continuous split),
    ``K1 rho_min <= X <= min(K2 rho_max, rho . N)``, and ``p . n >= max(g(X), K1 p_min)`` where
    ``g(X)`` is the cheapest real ``n`` with ``rho . n = X`` (classes by increasing ``p_c / rho_c``,
    a convex piecewise-linear function).  ``a / X + max(g(X), m)`` is convex in ``X``: its minimum
    is at the crossing ``g(X) = m`` or at a segment's stationary point ``sqrt(a / slope)``, clipped.
    """
    job = view.jobs[i]
    rho = view.arrays["rho"][i]
    usable = np.flatnonzero(rho > 0)
    a = job.iterations * job.batch / view.S
    r = float(view.bandwidth[usable].max())
    constant = job.comm_s if job.comm_s is not None else float(job.comm_gbit or 0.0) / r
    order = usable[np.argsort(p[usable] / rho[usable], kind="stable")]
    slope = p[order] / rho[order]
    width = view.counts[order] * rho[order]          # X each class adds when taken whole
    x_end = np.cumsum(width)
    x_start = x_end - width
    g_start = np.concatenate([[0.0], np.cumsum(p[order] * view.counts[order])[:-1]])
    lo, hi = job.k_range
    hi = min(hi, int(view.counts[usable].sum()))
    found: list[tuple[float, float, tuple[int, int]]] = []
    k1 = lo
    while k1 <= hi:
        k2 = min(hi, max(k1, 2 * k1 - 1) if k1 > 1 else 1)
        fixed = job.iterations * float(COMM_MODELS[comm](np.array([k1]), np.array([constant]))[0]) / view.S
        x_lo = k1 * float(rho[usable].min())
        x_hi = min(k2 * float(rho[usable].max()), float(x_end[-1]))
        m = k1 * float(p[usable].min())
        # where g reaches m: below it the floor m holds and a / X only falls
        seg = int(np.searchsorted(g_start + slope * width, m, side="left"))
        if seg < len(order) and slope[seg] > 0:
            x_m = x_start[seg] + (m - g_start[seg]) / slope[seg]
        else:
            x_m = x_start[min(seg, len(order) - 1)] if seg < len(order) else float(x_end[-1])
        low = max(x_lo, x_m if m > 0 else 0.0, 1e-300)
        if low <= x_hi:
            with np.errstate(divide="ignore"):
                star = np.where(slope > 0, np.sqrt(a / np.where(slope > 0, slope, 1.0)), x_end)
            xs = np.clip(np.clip(star, x_start, x_end), low, x_hi)
            g = np.interp(xs, np.concatenate([[0.0], x_end]), np.concatenate([[0.0], g_start + slope * width]))
            values = a / xs + np.maximum(g, m) + fixed
            k = int(np.argmin(values))
            found.append((float(values[k]), float(xs[k]), (k1, k2)))
        else:  # the floor binds over the whole interval: X at its top, cost m
            value = a / x_hi + max(m, float(np.interp(x_hi, np.concatenate([[0.0], x_end]),
                                                      np.concatenate([[0.0], g_start + slope * width])))) + fixed
            found.append((value, x_hi, (k1, k2)))
        k1 = k2 + 1
    out = []
    for value, x, interval in found:
        n = np.zeros(view.G)
        left = x
        for c in order:  # the cheapest real n reaching X
            take = min(float(view.counts[c]), left / rho[c])
            n[c] = take
            left -= take * rho[c]
            if left <= 0:
                break
        out.append((value, n, interval))
    return out


def _round_columns(view: HeteroView, i: int, n: np.ndarray, comm: str, interval: tuple[int, int]) -> Columns:
    """Integer vectors near the real pricing minimizer ``n``, sized into its size interval."""
    lo, hi = max(view.jobs[i].k_range[0], interval[0]), min(view.jobs[i].k_range[1], interval[1])
    cands = []
    for base in (np.floor(n), np.rint(n), np.ceil(n)):
        v = np.minimum(base.astype(np.int64), view.counts)
        k = int(v.sum())
        best = int(np.argmax(n))
        if k < lo:
            v[best] += lo - k
        elif k > hi:
            for c in np.argsort(n, kind="stable"):
                cut = min(int(v[c]), int(v.sum()) - hi)
                v[c] -= cut
        if lo <= v.sum() <= hi and (v <= view.counts).all():
            cands.append(v)
    if not cands:
        return Columns.empty(view.G)
    vecs = np.unique(np.array(cands), axis=0)
    jobs = np.full(len(vecs), i, dtype=np.int64)
    cost = _costs(view, jobs, vecs, comm)
    ok = np.isfinite(cost)
    return Columns(jobs[ok], vecs[ok], cost[ok])


def _seed_columns(view: HeteroView, wide: np.ndarray, comm: str) -> Columns:
    """Starting columns of the relaxation-priced jobs: one class at sizes lo, 2 lo, 4 lo, ..., hi,
    and an equal share of every usable class (so that the jobs' columns can fit together)."""
    cols = Columns.empty(view.G)
    for i in np.flatnonzero(wide):
        lo, hi = view.jobs[i].k_range
        sizes = sorted({min(hi, lo << e) for e in range(0, 64) if (lo << e) <= 2 * hi})
        share = np.where(view.arrays["rho"][i] > 0, view.counts // view.S, 0)
        vecs = [share] if lo <= share.sum() <= hi else []
        for c in np.flatnonzero(view.arrays["rho"][i] > 0):
            for k in sizes:
                if k <= view.counts[c]:
                    v = np.zeros(view.G, dtype=np.int64)
                    v[c] = k
                    vecs.append(v)
        if vecs:
            arr = np.array(vecs)
            jobs = np.full(len(arr), i, dtype=np.int64)
            cost = _costs(view, jobs, arr, comm)
            ok = np.isfinite(cost)
            cols.extend(Columns(jobs[ok], arr[ok], cost[ok]))
    return cols


class Master:
    """The restricted configuration LP in HiGHS: rows ``sum_n y_in = 1`` per job, ``sum n_c y <= N_c``
    per class; an artificial column per job (cost ``big``) keeps it feasible while columns are few."""

    def __init__(self, view: HeteroView, big: float):
        s, g = view.S, view.G
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        use_threads(h, 1)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = s, s + g
        lp.col_cost_ = np.full(s, big)
        lp.col_lower_ = np.zeros(s)
        lp.col_upper_ = np.full(s, highspy.kHighsInf)
        lp.row_lower_ = np.concatenate([np.ones(s), np.full(g, -highspy.kHighsInf)])
        lp.row_upper_ = np.concatenate([np.ones(s), view.counts.astype(float)])
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.arange(s + 1, dtype=np.int32)
        lp.a_matrix_.index_ = np.arange(s, dtype=np.int32)
        lp.a_matrix_.value_ = np.ones(s)
        h.passModel(lp)
        self.highs, self.s, self.g = h, s, g

    def add(self, cols: Columns) -> None:
        if len(cols.job) == 0:
            return
        nz = cols.vec != 0
        per = 1 + nz.sum(axis=1)
        starts = np.concatenate([[0], np.cumsum(per)[:-1]]).astype(np.int32)
        rows = np.full((len(cols.job), 1 + self.g), -1, dtype=np.int64)
        vals = np.zeros((len(cols.job), 1 + self.g))
        rows[:, 0], vals[:, 0] = cols.job, 1.0
        rows[:, 1:] = np.where(nz, self.s + np.arange(self.g), -1)
        vals[:, 1:] = cols.vec
        keep = rows >= 0
        self.highs.addCols(len(cols.job), cols.cost.astype(float), np.zeros(len(cols.job)),
                           np.full(len(cols.job), highspy.kHighsInf), int(keep.sum()), starts,
                           rows[keep].astype(np.int32), vals[keep].astype(float))

    def solve(self, time_limit: float) -> tuple[float, np.ndarray, np.ndarray, bool] | None:
        """(value, job duals, class prices ``p >= 0``, whether an artificial column is used), or
        ``None`` (time limit, failure)."""
        h = self.highs
        if time_limit <= 0:
            return None
        h.setOptionValue("time_limit", float(time_limit))
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        solution = h.getSolution()
        duals = np.array(solution.row_dual)
        artificial = bool((np.array(solution.col_value[:self.s]) > 1e-9).any())
        return float(h.getInfo().objective_function_value), duals[:self.s], np.maximum(-duals[self.s:], 0.0), artificial


def _lagrangian(view: HeteroView, comm: str, p: np.ndarray, exact: np.ndarray, wide: np.ndarray, ex_job: np.ndarray,
                ex_vec: np.ndarray, ex_cost: np.ndarray, deadline: float
                ) -> tuple[float, list[tuple[int, float, np.ndarray, tuple[int, int]]]] | None:
    """``L(p)`` and, for the relaxation-priced jobs, every interval's (job, value, real n, interval);
    ``None`` past the deadline."""
    reduced = ex_cost + ex_vec @ p
    mins = np.full(view.S, np.inf)
    np.minimum.at(mins, ex_job, reduced)
    bound = float(mins[exact].sum()) - float(p @ view.counts)
    candidates = []
    for i in np.flatnonzero(wide).tolist():
        if time.perf_counter() > deadline:
            return None
        found = relaxed_price(view, i, p, comm)
        bound += min(v for v, _, _ in found)
        candidates += [(i, v, n, interval) for v, n, interval in found]
    return bound, candidates


def _subgradient(view: HeteroView, comm: str, p: np.ndarray, best: float, target: float, exact: np.ndarray, wide: np.ndarray,
                 ex_job: np.ndarray, ex_vec: np.ndarray, ex_cost: np.ndarray, deadline: float, steps: int = 60) -> float:
    """Raise the Lagrangian bound from the master's prices by projected subgradient steps (Polyak
    steps towards the restricted master's value): every ``p >= 0`` gives a valid bound, so the
    best one seen is kept; the relaxed pricing is not the exact one, so the master's duals are
    not its maximizer."""
    theta, stale = 1.0, 0
    for _ in range(steps):
        if time.perf_counter() > deadline or target - best <= 1e-9 * max(1.0, abs(target)):
            break
        reduced = ex_cost + ex_vec @ p
        order = np.lexsort((reduced, ex_job))
        first = order[np.concatenate([[True], ex_job[order][1:] != ex_job[order][:-1]])] if len(order) else order
        use = ex_vec[first].sum(axis=0).astype(float)
        value = float(reduced[first].sum()) - float(p @ view.counts)
        for i in np.flatnonzero(wide).tolist():
            if time.perf_counter() > deadline:
                return best  # a partial sum is no bound
            v, n, _ = min(relaxed_price(view, i, p, comm), key=lambda t: t[0])
            value += v
            use += n
        if value > best + 1e-12 * max(1.0, abs(best)):
            best, stale = value, 0
        else:
            stale += 1
            if stale >= 5:
                theta, stale = theta / 2, 0
        direction = use - view.counts
        norm = float(direction @ direction)
        if norm <= 0:
            break
        p = np.maximum(0.0, p + theta * (target - value) / norm * direction)
    return best


def configuration_bound(view: HeteroView, comm: str, time_limit: float, start: float | None = None) -> BoundResult:
    """The configuration LP's value (every job priced exactly), or the best Lagrangian bound found
    by column generation within ``time_limit`` seconds from ``start`` (see the module docstring)."""
    start = time.perf_counter() if start is None else start
    deadline = start + time_limit
    hi = np.array([j.k_range[1] for j in view.jobs])
    usable = view.arrays["rho"] > 0
    counted: dict[tuple[bytes, int], int] = {}  # jobs of one trace share a few (classes, size) patterns
    sizes = []
    for i in range(view.S):
        key = (usable[i].tobytes(), int(hi[i]))
        if key not in counted:
            counted[key] = bounded_count(np.where(usable[i], view.counts, 0), key[1])
        sizes.append(min(counted[key], MAX_COLUMNS + 1))  # int64 from here on: C(K + G, G) is no int64
    exact = np.array(sizes) <= MAX_JOB_VECTORS
    total = sum(n for n, e in zip(sizes, exact) if e)
    if total > MAX_COLUMNS:  # too many columns in all: the widest exactly-priced jobs go to the relaxation
        order = np.argsort(sizes, kind="stable")
        running = np.cumsum(np.array(sizes)[order])
        exact[:] = False
        exact[order[running <= MAX_COLUMNS]] = True
    cols = exact_columns(view, comm, exact, deadline)
    if cols is None:
        return BoundResult("time-limit-no-solution", None, None, 0, 0, int(exact.sum()), "time limit while building the columns")
    wide = ~exact
    cols.extend(_seed_columns(view, wide, comm))
    # a job with no finite column cannot be placed at all: no bound to give (the instance is infeasible)
    have = np.zeros(view.S, dtype=bool)
    have[cols.job] = True
    if not have[exact].all():
        return BoundResult("infeasible", None, None, 0, len(cols.job), int(exact.sum()),
                           "a job has no worker set on which it can run")
    # exact pricing per job from its column list: minima of cost + p . n by job
    exact_rows = np.isin(cols.job, np.flatnonzero(exact))
    ex_job, ex_vec, ex_cost = cols.job[exact_rows], cols.vec[exact_rows], cols.cost[exact_rows]
    best: float | None = None
    best_p: np.ndarray | None = None
    if wide.any():
        # p = 0 (every job alone on the cluster) is a bound already, and its minimizers are columns
        priced = _lagrangian(view, comm, np.zeros(view.G), exact, wide, ex_job, ex_vec, ex_cost, deadline)
        if priced is None:
            return BoundResult("time-limit-no-solution", None, None, 0, len(cols.job), int(exact.sum()),
                               "time limit before the first bound")
        best, best_p = priced[0], np.zeros(view.G)
        for i, _, n, interval in priced[1]:
            cols.extend(_round_columns(view, i, n, comm, interval))
    big = 10.0 * float(np.abs(cols.cost).max() if len(cols.cost) else 1.0) * max(1, view.S) + 1.0
    master = Master(view, big)
    master.add(cols)
    lp_value: float | None = None
    rounds = 0
    for rounds in range(1, MAX_CG_ROUNDS + 1):
        solved = master.solve(deadline - time.perf_counter())
        if solved is None:
            break
        lp_value, sigma, p, artificial = solved
        if artificial and not wide.any():
            # every job priced exactly and still a job needs its artificial column: no placement of
            # the LP exists (capacity), so neither does one of the ILP
            return BoundResult("infeasible", None, None, rounds, len(cols.job), int(exact.sum()),
                               "the configuration LP is infeasible")
        priced = _lagrangian(view, comm, p, exact, wide, ex_job, ex_vec, ex_cost, deadline)
        if priced is None:
            break
        bound, candidates = priced
        if best is None or bound > best:
            best, best_p = bound, p
        if not wide.any():
            break  # every job priced exactly: the LP value is the bound, no column is missing
        new = Columns.empty(view.G)
        for i, value, n, interval in candidates:
            if value - sigma[i] < -1e-9 * max(1.0, abs(value)):
                new.extend(_round_columns(view, i, n, comm, interval))
        fresh = (new.cost - sigma[new.job] + new.vec @ p) < -1e-12 if len(new.job) else np.zeros(0, dtype=bool)
        if not fresh.any():
            break
        master.add(Columns(new.job[fresh], new.vec[fresh], new.cost[fresh]))
    if best is not None and best_p is not None and wide.any() and lp_value is not None:
        best = _subgradient(view, comm, best_p, best, lp_value, exact, wide, ex_job, ex_vec, ex_cost, deadline)
    if best is None:
        return BoundResult("time-limit-no-solution", None, lp_value, rounds, len(cols.job), int(exact.sum()),
                           "time limit before the first bound")
    if not wide.any() and lp_value is not None:
        # the Lagrangian value at the LP's duals is the LP value up to round-off; the LP value is the bound
        return BoundResult("optimal", lp_value, lp_value, rounds, len(cols.job), int(exact.sum()),
                           f"configuration LP over {len(cols.job):,} columns (every job's vectors)")
    return BoundResult("bound", best, lp_value, rounds, len(cols.job), int(exact.sum()),
                       f"Lagrangian bound after {rounds} column-generation rounds; {int(wide.sum()):,} jobs priced by "
                       "the continuous relaxation")


__all__ = ["BoundResult", "bounded_count", "bounded_vectors", "configuration_bound", "relaxed_price"]
