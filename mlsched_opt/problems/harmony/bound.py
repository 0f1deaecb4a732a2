"""A queueing-aware lower bound on the average JCT: the throughput LP (our design, issue 32).

The standalone bound (:func:`standalone_bound`: every job alone from its arrival) ignores
that jobs share the cluster; under load the measured answers were 1.7-9x above it.  This bound
keeps two things every schedule the checker accepts must respect: the servers' capacity, and how
much training a server can do at once when co-located tasks slow each other down.

**A fluid relaxation.**  Let ``T*_j`` be job j's standalone step time (its best placement on the
empty cluster, servers at the componentwise largest capacity), ``d_j`` its standalone run in
intervals (the work the checker counts as done, ``1 - DONE_TOL`` of its samples, at that speed),
and ``rho_j(t) = T*_j / T_j(t)`` its speed over its standalone speed while it runs (0 otherwise).
Give it the work ``A_j = W_j d_j`` and the progress rate ``x_j(t) = W_j rho_j(t)``.  In every
accepted schedule:

1. ``0 <= x_j(t) <= W_j`` (no co-located task speeds a job up in a monotone world: ``u, s >= 0``,
   ``kappa >= 0``), ``x_j = 0`` before its arrival interval, and ``x_j`` integrates to ``A_j``.
2. *Resources*: a running job holds ``f_jk = W_j wd_jk + P_j pd_jk`` of resource ``k`` and
   ``x_j / W_j <= 1`` while it runs, so ``sum_j (f_jk / W_j) x_j(t) <= R_k``, the cluster's capacity
   of ``k`` within the checker's limits (:func:`~mlsched_opt.tolerances.capacity_limit`).
3. *Throughput*: a worker of job j (type l) on server m has step time at least
   ``S_l(c_m) = comp_l(c_m) + min(t_loc_l (1 + s_pcie g(O_pcie)), t_rem_l)``, where ``c_m`` is the
   multiset of worker types running on m and ``O`` the pressure of those workers but itself (the
   world's formula with every other task, PSs and fan-out only adding to it; the communication
   term is a convex combination of the local and the remote term, the remote one at least
   ``t_rem``).  A job steps at its slowest worker's pace, so ``rho_j / T*_j <= 1 / S_l(c_m)`` for
   each host m of its workers, and summing ``w_jm rho_j / T*_j`` over the workers of type l on m:
   ``sum_{j of type l} x_j(t) / T*_j <= sum_m theta_l(c_m)`` with ``theta_l(c) = n_l(c) / S_l(c)``.
   A server holds at most ``n_max`` workers (its capacity over the smallest worker demand), so the
   vector ``(sum_m theta_l(c_m))_l`` lies in ``M`` times the convex hull of ``{theta(c)}`` over
   the multisets of at most ``n_max`` worker types (and 0).
4. *Completion*: with ``x_j <= W_j``, the work's mean time ``M_j = (1/A_j) int t x_j(t) dt`` is at
   most ``C_j - d_j / 2`` (the work packed just before ``C_j``), so ``C_j - a_j >= M_j - a_j + d_j / 2``.

Cut time into buckets (unit intervals up to the last arrival, then geometrically longer ones, and
an open last bucket with no capacity rows, a relaxation).  Within bucket ``[t_b, t_b + len_b)``
the work ``X`` done at rate at most ``W_j`` has ``int t x dt >= t_b X + X^2 / (2 W_j)``.  So the
sum of JCTs is at least the minimum of

    sum_j [ sum_b ((t_b - a_j) X_jb + X_jb^2 / (2 W_j)) / A_j + d_j / 2 ]

over ``X`` satisfying the bucket versions of 1-3 (``y_cb``: server-time in configuration ``c``).

**A bound whatever the LP solver returns.**  The value reported is Lagrangian: for any
multipliers ``lambda_bl, mu_bk >= 0`` on the throughput and resource rows it is at most that
minimum, and it is computed exactly from them: per job a separable convex knapsack (its lower
bound for a price ``nu`` of the work row, which is valid for any ``nu``), per bucket ``M len_b
max_c lambda_b . theta(c)`` over *every* configuration (or, when they are too many to enumerate,
``n_max max_l lambda_bl / S_l(one worker alone)``, at least as large).  The multipliers come from
the rows' duals of the linear version (``t_b X`` for the in-bucket term) solved by HiGHS with
column generation over configurations, each round bounded by the deadline; ``lambda = 0`` gives
the standalone bound, so the bound is never below it.  Float sums are rounded away from every
answer by :data:`ROUNDING`.

What it does not see: non-preemption (a job holds its servers from start to finish, and idles its
slot to the next interval boundary), that a worker's communication may be remote or fanned out,
and the PS tasks' pressure; it is tight when throughput or capacity is what makes the queues.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...clock import past
from ...io.instance import Instance
from ...report import SolveReport
from ...solvers import SolveOptions
from ...tolerances import DONE_TOL, capacity_limit
from .placements import best_speeds, misfit_reason, monotone_world
from .view import HarmonyView, view_of
from .world import PCIE, World

NAME = "throughput LP"
#: growth of the time buckets after the last arrival: a bucket is at most this share of its start
GROWTH = 0.1
#: most worker configurations of one server enumerated (beyond, a cruder valid bound on their throughput)
MAX_CONFIGS = 200_000
#: configuration columns added per bucket and pricing round
ADD_PER_BUCKET = 3
#: relative slack on the bound for float rounding (sums over thousands of jobs)
ROUNDING = 1e-9
#: bisection steps on a job's work price (each halves the bracket; 60 reach float resolution)
BISECTION = 60


@dataclass(frozen=True)
class Fluid:
    """The relaxation's data (module docstring): per job, per bucket, per configuration."""

    d: np.ndarray          # (J,) standalone run, intervals (the work the checker counts as done)
    A: np.ndarray          # (J,) work, worker-intervals at standalone speed
    a: np.ndarray          # (J,) arrival interval
    W: np.ndarray          # (J,) workers
    T_star: np.ndarray     # (J,) standalone step time, s
    tix: np.ndarray        # (J,) index of the job's type in ``types``
    phi: np.ndarray        # (J, K) resource held per unit of progress rate (only resources that can bind)
    R: np.ndarray          # (K,) the cluster's capacity of those resources
    M: int                 # servers
    edges: np.ndarray      # (B + 1,) bucket b is [edges[b], edges[b + 1]); then an open bucket from edges[B]
    first: np.ndarray      # (J,) the first bucket a job may use (its arrival's)
    theta: np.ndarray      # (C, L) throughput of every configuration, per type (1 / s)
    exhaustive: bool       # whether ``theta`` holds every configuration (else ``theta_cap`` bounds them)
    theta_cap: np.ndarray  # (L,) n_max / S_l(one worker alone): a bound on any configuration's theta . lambda / max(lambda)

    @property
    def B(self) -> int:
        return len(self.edges) - 1

    @property
    def length(self) -> np.ndarray:
        return np.diff(self.edges)


def fluid(view: HarmonyView, deadline: float) -> Fluid:
    """The relaxation's data for ``view`` (raises ``TimeoutError`` past ``deadline``)."""
    world = view.world
    alone = best_speeds(view, deadline)
    d = view.samples * (1.0 - DONE_TOL) / (alone * view.slot_s)
    W = view.jobs.W.astype(float)
    kind = view.jobs.kind
    T_star = W * world.batch[kind] / alone
    types, tix = np.unique(kind, return_inverse=True)
    foot = W[:, None] * view.worker_demand + view.jobs.P[:, None] * view.ps_demand
    R = capacity_limit(view.capacity).sum(axis=0)
    binds = foot.sum(axis=0) > R   # a resource all jobs at once cannot exceed needs no row
    a = view.arrival.astype(float)
    theta, exhaustive, theta_cap = configurations(world, types, max_workers(view))
    edges = bucket_edges(a, d)
    # arrivals are integers and the first buckets unit ones: a job's work starts with its arrival's bucket
    first = np.searchsorted(edges[:-1], a, side="left")
    return Fluid(d=d, A=W * d, a=a, W=W, T_star=T_star, tix=np.asarray(tix).ravel(), phi=foot[:, binds] / W[:, None],
                 R=R[binds], M=view.M, edges=edges, first=first, theta=theta, exhaustive=exhaustive, theta_cap=theta_cap)


def bucket_edges(a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Unit buckets from 0 to the interval after the last arrival (every arrival starts one), then each
    at most :data:`GROWTH` of its start, up to the last arrival plus every job's run one after another."""
    last = int(a.max(initial=0)) + 1
    edges = list(range(last + 1))
    end = last + float(d.sum())
    while edges[-1] < end:
        edges.append(edges[-1] + max(1, int(GROWTH * edges[-1])))
    return np.array(edges, float)


def max_workers(view: HarmonyView) -> float:
    """The most workers one server can hold: its capacity within the checker's limits over the smallest
    worker demand, per resource some worker needs (``inf`` when no resource limits them)."""
    limit = capacity_limit(view.capacity.max(axis=0))
    least = view.worker_demand.min(axis=0) if view.J else np.zeros(len(limit))
    ratios = [math.floor(limit[k] / least[k] + 1e-9) for k in range(len(limit)) if least[k] > 0]
    return float(min(ratios)) if ratios else math.inf


def step_floor(world: World, types: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``S_l(c)`` (module docstring) for every configuration ``counts`` (C, L) and type, shape (C, L)."""
    u = world.u_worker[types]
    total = counts @ u                                       # (C, 4)
    g = world.g(np.maximum(total[:, None, :] - u[None], 0.0))  # (C, L, 4): a worker's view, itself excluded
    s = world.s[types]
    comp = world.t_comp[types] * (1.0 + (s[None, :, :3] * g[..., :3]).sum(-1))
    comm = np.minimum(world.t_loc[types] * (1.0 + s[None, :, PCIE] * g[..., PCIE]), world.t_rem[types])
    return comp + comm


def configurations(world: World, types: np.ndarray, n_max: float) -> tuple[np.ndarray, bool, np.ndarray]:
    """``theta(c)`` (C, L) of every multiset ``c`` of at most ``n_max`` workers of ``types``, whether that is
    every one (else a subset: the homogeneous ones), and ``theta_cap`` (see :class:`Fluid`)."""
    L = len(types)
    alone = step_floor(world, types, np.eye(L))[np.arange(L), np.arange(L)]
    # no limit on the workers of a server (no resource they need): no bound on its throughput either
    theta_cap = n_max / alone if math.isfinite(n_max) else np.full(L, np.inf)
    n = int(min(n_max, 10_000)) if math.isfinite(n_max) else 64
    exhaustive = math.isfinite(n_max) and math.comb(n + L, L) - 1 <= MAX_CONFIGS
    if exhaustive:
        counts = np.array([np.bincount(c, minlength=L) for size in range(1, n + 1)
                           for c in itertools.combinations_with_replacement(range(L), size)], float).reshape(-1, L)
    else:
        sizes = range(1, min(n, 64) + 1)
        counts = np.array([np.eye(L)[t] * size for t in range(L) for size in sizes], float).reshape(-1, L)
    theta = counts / step_floor(world, types, counts) if len(counts) else np.zeros((0, L))
    return theta, exhaustive, theta_cap


def throughput_cap(f: Fluid, lam: np.ndarray) -> np.ndarray:
    """Per bucket, at least ``max_c lambda_b . theta(c)`` over every configuration, shape (B,)."""
    if f.exhaustive:
        return (lam @ f.theta.T).max(axis=1, initial=0.0) if len(f.theta) else np.zeros(len(lam))
    with np.errstate(invalid="ignore"):   # 0 x inf where a price is 0: that type adds nothing
        return np.where(lam > 0, lam * f.theta_cap[None, :], 0.0).max(axis=1, initial=0.0)


def lagrangian(f: Fluid, lam: np.ndarray, mu: np.ndarray) -> float:
    """A lower bound on the sum of JCTs from multipliers ``lam`` (B, L) and ``mu`` (B, K) (clipped to >= 0)."""
    J = len(f.d)
    if J == 0:
        return 0.0
    # prices on throughput rows that nothing bounds would price nothing: a valid bound needs them at 0
    lam = np.maximum(lam, 0.0) if f.exhaustive or np.all(np.isfinite(f.theta_cap)) else np.zeros_like(lam)
    mu = np.maximum(mu, 0.0)
    B, length, start = f.B, f.length, f.edges[:-1]
    price = (start[None, :] - f.a[:, None]) / f.A[:, None] + lam[:, f.tix].T / f.T_star[:, None] + f.phi @ mu.T
    cap = np.where(np.arange(B)[None, :] >= f.first[:, None], f.W[:, None] * length[None, :], 0.0)
    c_open = (f.edges[-1] - f.a) / f.A
    q = 1.0 / (2.0 * f.W * f.A)
    usable = cap > 0
    lo = np.minimum(np.where(usable, price, np.inf).min(axis=1), c_open)
    hi = c_open + 2.0 * q * f.A

    def take(nu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.clip((nu[:, None] - price) / (2.0 * q[:, None]), 0.0, cap)
        return x, np.maximum((nu - c_open) / (2.0 * q), 0.0)

    for _ in range(BISECTION):
        mid = 0.5 * (lo + hi)
        x, xo = take(mid)
        over = x.sum(axis=1) + xo > f.A
        hi = np.where(over, mid, hi)
        lo = np.where(over, lo, mid)
    nu = 0.5 * (lo + hi)
    x, xo = take(nu)
    # weak duality on each job's work row: valid for any nu
    jobs = nu * f.A + ((price - nu[:, None]) * x + q[:, None] * x * x).sum(axis=1) + (c_open - nu) * xo + q * xo * xo
    rows = f.M * (length * throughput_cap(f, lam)).sum() + (length[:, None] * mu * f.R[None, :]).sum()
    return float(jobs.sum() - rows + f.d.sum() / 2.0)


class ThroughputLP:
    """The linear version of the relaxation on arrays, solved by HiGHS with configuration columns generated
    by pricing (module docstring); :meth:`solve` gives the rows' prices after each round."""

    def __init__(self, f: Fluid):
        import highspy
        from scipy import sparse

        from ...solvers.highs_lp import sparse_lp

        self.f = f
        J, B, L, K = len(f.d), f.B, f.theta.shape[1], len(f.R)
        self.J, self.B, self.L, self.K = J, B, L, K
        count = B + 1 - f.first                                  # buckets 0..B (B: the open one) from the arrival's
        jj = np.repeat(np.arange(J), count)
        bb = np.concatenate([np.arange(s, B + 1) for s in f.first]) if J else np.zeros(0, int)
        n = len(jj)
        inside = np.flatnonzero(bb < B)
        length = np.append(f.length, 0.0)
        rows = [jj, J + bb[inside] * L + f.tix[jj[inside]]]
        cols = [np.arange(n), inside]
        vals = [np.ones(n), 1.0 / f.T_star[jj[inside]]]
        base = J + B * L + B
        for k in range(K):
            rows.append(base + bb[inside] * K + k)
            cols.append(inside)
            vals.append(f.phi[jj[inside], k])
        self.rows = base + B * K
        A = sparse.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(self.rows, n))
        inf = highspy.kHighsInf
        lp = sparse_lp((np.append(f.edges[:-1], f.edges[-1])[bb] - f.a[jj]) / f.A[jj], A, np.zeros(n),
                       np.where(bb < B, f.W[jj] * length[bb], f.A[jj]), np.concatenate([f.A, np.full(self.rows - J, -inf)]),
                       np.concatenate([f.A, np.zeros(B * L), f.M * f.length, (f.length[:, None] * f.R[None, :]).ravel()]))
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.passModel(lp)
        self.highs = h
        self.columns = 0
        self.present: set[tuple[int, int]] = set()
        if len(f.theta):
            # to start: per bucket, each type's best homogeneous configuration and the largest total
            homogeneous = [int(np.argmax(np.where(f.theta.sum(axis=1) == f.theta[:, t], f.theta[:, t], -1.0))) for t in range(L)]
            starters = sorted(set(homogeneous) | {int(np.argmax(f.theta.sum(axis=1)))})
            self._add(np.repeat(starters, B), np.tile(np.arange(B), len(starters)))

    def _add(self, configs: np.ndarray, buckets: np.ndarray) -> None:
        f, L, J, B = self.f, self.L, self.J, self.B
        fresh = [(int(c), int(b)) not in self.present for c, b in zip(configs, buckets)]
        configs, buckets = configs[fresh], buckets[fresh]
        self.present.update(zip(configs.tolist(), buckets.tolist()))
        n = len(configs)
        if n == 0:
            return
        index = np.concatenate([J + buckets[:, None] * L + np.arange(L)[None, :], (J + B * L + buckets)[:, None]], axis=1)
        value = np.concatenate([-f.theta[configs], np.ones((n, 1))], axis=1)
        # no upper bound of its own (the server row bounds it): a column at a bound could price out forever
        self.highs.addCols(n, np.zeros(n), np.zeros(n), np.full(n, highspy_inf()), n * (L + 1),
                           (np.arange(n) * (L + 1)).astype(np.int32), index.ravel().astype(np.int32), value.ravel())
        self.columns += n

    def solve(self, deadline: float, threads: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """One solve in the time left; the multipliers (lambda (B, L), mu (B, K)) and the server rows'
        prices (B,), or ``None`` when it did not end optimal."""
        import highspy

        from ...solvers.highs_lp import use_threads

        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        h = self.highs
        use_threads(h, threads)
        h.setOptionValue("time_limit", max(left, 1e-3))
        h.run()
        solution = h.getSolution()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal or not solution.dual_valid:
            return None
        dual = -np.asarray(solution.row_dual, dtype=float)   # <= rows of a minimisation: prices <= 0 in HiGHS's sign
        J, B, L, K = self.J, self.B, self.L, self.K
        lam = dual[J:J + B * L].reshape(B, L)
        sigma = dual[J + B * L:J + B * L + B]
        mu = dual[J + B * L + B:].reshape(B, K)
        return lam, mu, sigma

    def price(self, lam: np.ndarray, sigma: np.ndarray) -> int:
        """Add the configurations of positive reduced value not in the LP yet (the best few per bucket); how many were added."""
        if not len(self.f.theta):
            return 0
        value = np.maximum(lam, 0.0) @ self.f.theta.T - np.maximum(sigma, 0.0)[:, None]
        top = np.argsort(-value, axis=1, kind="stable")[:, :ADD_PER_BUCKET]
        buckets = np.repeat(np.arange(self.B), top.shape[1])
        configs = top.ravel()
        gain = value[buckets, configs]
        keep = gain > 1e-9 * np.maximum(1.0, np.abs(sigma[buckets]))
        before = self.columns
        self._add(configs[keep], buckets[keep])
        return self.columns - before


def throughput_bound(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """The family's ``relaxation``: the larger of the standalone bound and the throughput LP's Lagrangian
    bound (module docstring) within ``solve_options.time_limit``."""
    start = time.perf_counter()
    view = view_of(instance, options, require_fit=False)
    return bound_of_view(view, options, dataclasses.replace(solve_options, time_limit=max(
        solve_options.time_limit - (time.perf_counter() - start), 0.0)))


def bound_of_view(view: HarmonyView, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """:func:`throughput_bound` of a view already built."""
    start = time.perf_counter()
    deadline = start + solve_options.time_limit
    opts = dict(options)
    if not monotone_world(view.world):
        return SolveReport("failed", None, None, "min", NAME, "mlsched-opt", opts,
                           message="no bound: in this world co-location can speed a job up")
    try:
        reason = misfit_reason(view, deadline)
        if reason:
            return SolveReport("infeasible", None, None, "min", NAME, "mlsched-opt", opts, message=reason)
        f = fluid(view, deadline)
    except TimeoutError:
        return SolveReport("time-limit-no-solution", None, None, "min", NAME, "mlsched-opt", opts,
                           solve_s=time.perf_counter() - start, message="time limit before every job's standalone speed")
    J = max(view.J, 1)
    standalone = float(f.d.sum()) / J
    best, how = standalone, "the standalone bound (the LP's prices gave no more)"
    rounds, status = 0, "not solved"
    if view.J and not past(deadline):
        lp = ThroughputLP(f)
        while True:
            found = lp.solve(deadline, max(1, int(solve_options.threads)))
            if found is None:
                status = "stopped by the time limit" if past(deadline) or time.perf_counter() >= deadline else "not optimal"
                break
            rounds += 1
            lam, mu, sigma = found
            value = lagrangian(f, lam, mu) / J
            if value > best:
                best, how = value, f"Lagrangian at the LP's prices of round {rounds}"
            if lp.price(lam, sigma) == 0:
                status = "optimal"
                break
    bound = best - ROUNDING * max(1.0, abs(best))
    note = (f"{NAME}: {f.B} time buckets, {len(f.theta)} server configurations"
            f"{'' if f.exhaustive else ' (not every one: a cruder throughput bound)'}, {rounds} pricing rounds ({status}); "
            f"{how}; standalone bound {standalone:.6g} (a bound, not a schedule)")
    return SolveReport("optimal", bound, bound, "min", NAME, _highs_version(), opts, solve_s=time.perf_counter() - start,
                       message=note)


def highspy_inf() -> float:
    import highspy

    return float(highspy.kHighsInf)


def _highs_version() -> str:
    from ...solvers.highs_lp import highspy_version

    return highspy_version()


def standalone_bound(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """A proven lower bound on the average JCT of any schedule the checker accepts, online or
    static: every job alone on the empty cluster, from its arrival, at its best placement.

    Why it holds: a job starts at an interval boundary at or after its arrival and its JCT runs
    from the arrival; in a world where co-location never speeds a job up (every interference and
    communication coefficient >= 0, the condition ``exact``'s delay bound rests on too) it runs at
    most as fast as alone, and alone at most as fast as on its best placement.  Servers are taken at
    the componentwise largest capacity (a relaxation when they differ; speed depends only on the
    task counts per server).  It ignores queueing and capacity shared in time, so it is loose under
    load; it is what every method's gap is measured against on traces too large for ``exact``.
    Our design (issue 21); not in spec 004.
    """
    start = time.perf_counter()
    deadline = start + solve_options.time_limit
    view = view_of(instance, options, require_fit=False)
    name = "standalone lower bound"
    if not monotone_world(view.world):
        return SolveReport("failed", None, None, "min", name, "mlsched-opt", dict(options),
                           message="no bound: in this world co-location can speed a job up")
    try:
        reason = misfit_reason(view, deadline)
        if reason:
            return SolveReport("infeasible", None, None, "min", name, "mlsched-opt", dict(options), message=reason)
        speed = best_speeds(view, deadline)
    except TimeoutError:
        return SolveReport("time-limit-no-solution", None, None, "min", name, "mlsched-opt", dict(options),
                           solve_s=time.perf_counter() - start, message="time limit before every job's standalone speed")
    value = float(np.mean(view.samples / (speed * view.slot_s))) if view.J else 0.0
    return SolveReport("optimal", value, value, "min", name, "mlsched-opt", dict(options), solve_s=time.perf_counter() - start,
                       message="every job alone from its arrival at its best placement (a lower bound, not a schedule)")
