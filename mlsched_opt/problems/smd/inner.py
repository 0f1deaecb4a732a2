"""Per-job inner problem: exact enumeration, Algorithm 1 (grid + LPs) and Algorithm 2 (rounding).

References
----------
Yu, Wu, Ji, Liu, "A Sum-of-Ratios Multi-Dimensional-Knapsack Decomposition for DNN Resource
Scheduling", IEEE INFOCOM 2021, Algorithms 1-2, Lemma 3, Theorem 4.
Shen, Huang, Wang, J. Comput. Appl. Math. 350 (2019) -- the grid method.
Charnes, Cooper (1962) -- linear-fractional programs as LPs.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ...errors import InstanceError, OptionError
from ...tolerances import FIT_TOL
from ..rounding import chernoff_scale
from .options import LP_ENGINES
from .ratios import CharnesCooperLP, SidedPolygon, Terms, polygon, ratio_terms, side_rows, term_ranges
from .view import SmdJob

#: Most (w, p) pairs the exact inner step enumerates per job (a few seconds of numpy).
MAX_BOX = 50_000_000
_CHUNK = 8192
_FIRST_CHUNK = 32
_PRUNE_MARGIN = 1e-7


class Allocation(NamedTuple):
    """An integer ``(w, p)`` and its completion time; ``w = p = 0`` when the job cannot run."""

    w: int
    p: int
    tau: float

    @property
    def feasible(self) -> bool:
        return self.w >= 1 and self.p >= 1


NONE = Allocation(0, 0, math.inf)


def bounded_box(job: SmdJob) -> tuple[int, int, int, int]:
    """:meth:`SmdJob.box`, refused (naming the job's limit) when it holds more than
    :data:`MAX_BOX` pairs: every method that walks the box stays bounded by it."""
    w_lo, w_hi, p_lo, p_hi = job.box()
    points = max(0, w_hi - w_lo + 1) * max(0, p_hi - p_lo + 1)
    if points > MAX_BOX:
        raise InstanceError(f"job {job.id}: its limit and ranges allow {points:,} (workers, PSs) pairs, more than the {MAX_BOX:,} "
                            "the methods enumerate; lower workers.max / ps.max or the limit", None, f"jobs[{job.index}].limit")
    return w_lo, w_hi, p_lo, p_hi


def best_integer(job: SmdJob) -> Allocation:
    """The exact inner optimum: enumerate every integer ``(w, p)`` in the job's box.

    Exact because the feasible set is finite and every point is evaluated; cheap because it
    is two-dimensional (at most a few hundred thousand points, evaluated in numpy chunks).
    Ties in ``tau`` go to the smallest ``w``, then ``p``.
    """
    w_lo, w_hi, p_lo, p_hi = bounded_box(job)
    if w_hi < w_lo or p_hi < p_lo:
        return NONE
    ps = np.arange(p_lo, p_hi + 1)
    best = NONE
    rows = max(1, 2_000_000 // len(ps))
    for start in range(w_lo, w_hi + 1, rows):
        ws = np.arange(start, min(w_hi, start + rows - 1) + 1)
        W, P = np.meshgrid(ws, ps, indexing="ij")
        tau = np.where(job.fits(W, P), job.completion_time(W, P), np.inf)
        k = np.unravel_index(np.argmin(tau), tau.shape)
        if tau[k] < best.tau:
            best = Allocation(int(W[k]), int(P[k]), float(tau[k]))
    return best


@dataclass(frozen=True)
class Fractional:
    """Algorithm 1's answer: ``x`` (real ``w, p``), ``psi`` (its score, an upper bound on
    ``tau(x)``), ``tau`` (the true relaxed completion time at ``x``) and the work it took."""

    x: np.ndarray
    psi: float
    tau: float
    grid_points: int
    lps: int
    seconds: float
    complete: bool = True  # False when the deadline stopped the grid search early


def _grid(lo: float, hi: float, eps: float, extend: bool) -> np.ndarray:
    """``l, l(1+e), ..., l(1+e)^lambda`` with ``l(1+e)^lambda <= phi``, plus one point above
    ``phi`` when the last one falls short of it (spec P8)."""
    n = int(math.floor(math.log(hi / lo) / math.log1p(eps) + 1e-12)) if hi > lo else 0
    pts = lo * (1.0 + eps) ** np.arange(n + 1)
    if extend and pts[-1] < hi * (1 - 1e-12):
        pts = np.r_[pts, lo * (1.0 + eps) ** (n + 1)]
    return pts


def _grid_points(lo: float, hi: float, eps: float) -> int:
    """How many points :func:`_grid` gives without the extension point (a lower bound on its length)."""
    return (int(math.floor(math.log(hi / lo) / math.log1p(eps) + 1e-12)) if hi > lo else 0) + 1


def algorithm1(job: SmdJob, eps: float = 0.1, engine: str = "vertex", extend: bool = True, max_grid: int = 5_000_000,
               deadline_s: float = math.inf) -> Fractional:
    """Algorithm 1: ``eps``-approximation of the relaxed inner problem.

    Guarantee (Shen et al. 2019; argued in spec 002 section 2.3 [DER], which needs the
    extended grid and exact LPs): ``tau(x) <= psi <= (1 + eps) * OPT_relaxed``.

    Steps: bounds ``[l_j, phi_j]`` of every term over ``Omega``; the term ``J`` with the widest
    ``phi/l`` is left out; a geometric grid over the others; for every grid point ``nu``, the
    LP (15) ``min zeta_J`` s.t. ``zeta_j <= nu_j``; keep the point with the smallest
    ``psi = sum nu + zeta_J + const``.  Grid points are visited in increasing ``sum nu`` and
    skipped once ``sum nu + l_J + const`` reaches the best ``psi`` (pruning that cannot change
    the answer); the vertex engine also bounds every point by one-side-row LPs and visits the
    points in increasing bound, with the same answer and about a tenth of the LPs on trace jobs
    (:func:`_solve_vertex`).  ``engine`` picks the LP solver (module :mod:`.ratios`).  After
    ``deadline_s`` seconds the search stops with the best point so far (``complete=False``).
    A job whose ``Omega`` is one point gets that point at once (one grid point, no LP).
    """
    if engine not in LP_ENGINES:
        raise OptionError(f"lp must be one of {', '.join(LP_ENGINES)}, got {engine!r}", field="--set lp")
    if not eps > 0:
        raise OptionError(f"epsilon1 must be > 0, got {eps}", field="--set epsilon1")
    start = time.perf_counter()
    w_lo, w_hi, p_lo, p_hi = job.box()
    if w_lo == w_hi and p_lo == p_hi and job.fits(w_lo, p_lo):
        # Omega is a single point (most trace jobs: one worker, one PS): every term's range, the
        # one-point grid and its LP all return it, so skip building them
        x = np.array([w_lo, p_lo], dtype=float)
        tau = float(job.completion_time(w_lo, p_lo))
        return Fractional(x, tau, tau, 1, 0, time.perf_counter() - start)
    terms = ratio_terms(job)
    A, h = polygon(job)
    if len(terms) == 0:
        x = np.array([job.box()[0], job.box()[2]], dtype=float)
        return Fractional(x, terms.const, terms.const, 0, 0, time.perf_counter() - start)
    if engine == "highs":
        lo, hi, lps = _ranges_highs(terms, A, h)
    else:
        lo, hi = term_ranges(terms, A, h)
        lps = 2 * len(terms)
    J = int(np.argmax(hi / lo))
    others = np.array([j for j in range(len(terms)) if j != J], dtype=int)
    # count before building: at a tiny epsilon1 one axis alone would not fit in memory
    least = math.prod(_grid_points(lo[j], hi[j], eps) for j in others)
    if least > max_grid:
        raise OptionError(f"job {job.id}: Algorithm 1's grid has at least {least:,} points at epsilon1 = {eps} (limit {max_grid:,}); "
                          "raise epsilon1", field="--set epsilon1")
    grids = [_grid(lo[j], hi[j], eps, extend) for j in others]
    size = int(np.prod([len(g) for g in grids])) if grids else 1
    if size > max_grid:
        raise OptionError(f"job {job.id}: Algorithm 1's grid has {size:,} points at epsilon1 = {eps} (limit {max_grid:,}); raise epsilon1",
                          field="--set epsilon1")
    if grids:
        nu = np.stack([g.ravel() for g in np.meshgrid(*grids, indexing="ij")], axis=1)
        order = np.argsort(nu.sum(axis=1), kind="stable")
        nu = nu[order]
    else:
        nu, order = np.zeros((1, 0)), np.zeros(1, dtype=int)
    floor_ = nu.sum(axis=1) + lo[J] + terms.const
    if engine == "highs":
        x, psi, used, complete = _solve_highs(terms, J, others, A, h, nu, floor_, start + deadline_s)
    else:
        x, psi, used, complete = _solve_vertex(terms, J, others, A, h, nu, floor_, start + deadline_s, grids, order)
    if x is None:  # only possible with the literal grid: no grid point admits a feasible x
        x = np.array([job.box()[0], job.box()[2]], dtype=float)
        psi = float(terms.values(x).sum() + terms.const)
    tau = float(terms.values(x).sum() + terms.const)
    return Fractional(x, psi, tau, size, lps + used, time.perf_counter() - start, complete)


def _ranges_highs(terms: Terms, A: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    lo, hi = np.empty(len(terms)), np.empty(len(terms))
    none = np.zeros(0, dtype=int)
    for j in range(len(terms)):
        least = CharnesCooperLP(terms, j, none, A, h).solve()
        most = CharnesCooperLP(terms, j, none, A, h, maximize=True).solve()
        assert least is not None and most is not None  # without side bounds the LP is the job's box: feasible
        lo[j], hi[j] = least[0], most[0]
    return lo, hi, 2 * len(terms)


def _solve_highs(terms, J, others, A, h, nu, floor_, stop_at):
    lp = CharnesCooperLP(terms, J, others, A, h)
    best_psi, best_x = math.inf, None
    for g in range(len(nu)):
        if floor_[g] >= best_psi:
            break  # sorted by sum(nu): every later point is pruned too
        if g % 256 == 255 and best_x is not None and time.perf_counter() > stop_at:
            return best_x, best_psi, lp.solves, False
        res = lp.solve(nu[g])
        if res is None:
            continue
        psi = nu[g].sum() + res[0] + terms.const
        if psi < best_psi:
            best_psi, best_x = psi, res[1]
    return best_x, best_psi, lp.solves, True


def _solve_vertex(terms, J, others, A, h, nu, floor_, stop_at, grids, order):
    """The grid search with batched vertex LPs, visiting points in increasing lower bound.

    Same answer as visiting them in increasing ``sum(nu)`` (their order in ``nu``) and keeping
    the first strict improvement: the best is the lexicographic minimum of ``(psi, position)``,
    and only points whose bound exceeds the best ``psi`` are skipped, so none of them could
    have won or tied.  A good ``psi`` is found first, and then most of the grid is skipped.
    """
    poly = SidedPolygon(A, h)
    tight, used = _axis_floor(poly, terms, J, others, nu, grids, order)
    tight = np.maximum(tight, floor_)
    visit = np.argsort(tight, kind="stable")
    best_psi, best_at, best_x = math.inf, len(nu), None
    start, size = 0, _FIRST_CHUNK
    while start < len(visit):
        if best_x is not None and time.perf_counter() > stop_at:
            return best_x, best_psi, used, False
        # small blocks first, so a good psi is known (and prunes) before the big vectorized ones
        idx = visit[start:start + size]
        start, size = start + size, min(2 * size, _CHUNK)
        # the margin keeps every point a rounding error in the bounds could hide
        live = tight[idx] < best_psi + _PRUNE_MARGIN * (1.0 + abs(best_psi))
        if not live.any():
            break  # visited in increasing bound: every later point is skipped too
        idx = idx[live]
        chunk = nu[idx]
        rows, rhs = side_rows(terms, others, chunk)
        val, xs = poly.minimum(terms.a[J], terms.q[J], terms.c[J], terms.d[J], rows, rhs)
        used += len(chunk)
        psi = chunk.sum(axis=1) + val + terms.const
        psi = np.where(np.isnan(psi), np.inf, psi)
        least = psi.min()
        if not np.isfinite(least) or least > best_psi:
            continue
        ties = np.flatnonzero(psi == least)
        k = ties[np.argmin(idx[ties])]
        if least < best_psi or idx[k] < best_at:
            best_psi, best_at, best_x = float(least), int(idx[k]), xs[k]
    return best_x, best_psi, used, True


def _axis_floor(poly: SidedPolygon, terms: Terms, J: int, others: np.ndarray, nu: np.ndarray, grids: list[np.ndarray],
                order: np.ndarray) -> tuple[np.ndarray, int]:
    """A lower bound on every grid point's ``psi``, and the LPs it took.

    Dropping all side rows but ``zeta_j <= nu_j`` enlarges the LP's polygon, so its optimum
    ``z_j(nu_j)`` is at most the grid point's; hence ``psi(nu) >= sum nu + const + max_j z_j(nu_j)``
    (infinite when one side row alone leaves nothing).  One LP per value of each axis, against
    one per grid point: on trace jobs it skips about nine in ten of the grid's LPs.
    """
    if not grids:
        return np.full(len(nu), -np.inf), 0
    per_axis = []
    for k, g in enumerate(grids):
        rows, rhs = side_rows(terms, others[k:k + 1], g[:, None])
        z, _ = poly.minimum(terms.a[J], terms.q[J], terms.c[J], terms.d[J], rows, rhs)
        per_axis.append(np.where(np.isnan(z), np.inf, z))
    best = np.maximum.reduce([m.ravel() for m in np.meshgrid(*per_axis, indexing="ij")])
    return nu.sum(axis=1) + terms.const + best[order], sum(len(g) for g in grids)


def scale_factor(job: SmdJob, delta: float) -> float:
    """``M_delta`` of Lemma 3: ``1 + c/(2W) - sqrt((c/(2W))^2 + c/W)`` with ``c = 3 ln(2r/delta)``,
    ``W = min b_i / B_ij`` over the rows of the job's limit (C2), ``r`` of them
    (spec 002 section 2.4)."""
    if not 0 < delta <= 1:
        raise OptionError(f"delta must be in (0, 1], got {delta}", field="--set delta")
    rows = [k for k in range(len(job.limit)) if job.worker[k] > 0 or job.ps[k] > 0]
    if not rows:
        return 1.0  # nothing to pack: no row can be violated
    W = min(job.limit[k] / a for k in rows for a in (job.worker[k], job.ps[k]) if a > 0)
    return chernoff_scale(W, len(rows), delta)


def _corners(job: SmdJob, x: np.ndarray, scale: float):
    """The four outcomes of one independent rounding draw of ``scale * x`` and their odds."""
    xs = scale * np.asarray(x, dtype=float)
    fl = np.floor(xs + 1e-12)
    frac = np.clip(xs - fl, 0.0, 1.0)
    out = []
    for dw in (0, 1):
        for dp in (0, 1):
            prob = (frac[0] if dw else 1 - frac[0]) * (frac[1] if dp else 1 - frac[1])
            if prob > 0:
                out.append((int(fl[0]) + dw, int(fl[1]) + dp, prob))
    return out


def algorithm2(job: SmdJob, x: np.ndarray, attempts: int, rng: np.random.Generator, scale: float = 1.0,
               max_draws_factor: int = 100) -> tuple[Allocation, int, bool]:
    """Algorithm 2: scaled randomized rounding with retries.

    Reading of line 3 [PROP, spec 002 section 2.4]: draw ``attempts`` (``F``) times, keep the
    best feasible draw by ``tau``; only when none of them is feasible keep drawing, up to
    ``max_draws_factor * F`` draws, and return the first feasible one.  A draw with ``w = 0`` or
    ``p = 0`` is infeasible, never clamped (P11).  If nothing feasible is drawn, fall back to
    ``floor(x)`` (feasible whenever ``x`` is: the rows are packing rows and the lower bounds
    are integers).

    Guarantee (Theorem 4, with spec caveat 1): with probability ``> 1 - delta`` the rounded
    completion time is within ``(8L/M_delta + 4)/delta`` of the fractional one (``L`` ratio
    terms) -- a factor of at least 28, which says nothing useful for sigmoid utilities; the
    measured ratios are what the benchmarks report.

    Returns ``(allocation, draws, fell_back)``.
    """
    if attempts < 1:
        raise OptionError(f"attempts must be >= 1, got {attempts}", field="--set attempts")
    outcomes = _corners(job, x, scale)
    w = np.array([o[0] for o in outcomes])
    p = np.array([o[1] for o in outcomes])
    prob = np.array([o[2] for o in outcomes])
    prob = prob / prob.sum()
    ok = job.fits(w, p) & (w >= 1) & (p >= 1)
    tau = np.where(ok, job.completion_time(np.maximum(w, 1), np.maximum(p, 1)), np.inf)
    if len(outcomes) == 1 and ok[0]:  # an integer x: every draw is x itself
        return Allocation(int(w[0]), int(p[0]), float(tau[0])), attempts, False
    draws = rng.choice(len(outcomes), size=attempts, p=prob)
    used = attempts
    if ok[draws].any():
        k = draws[np.argmin(tau[draws])]
        return Allocation(int(w[k]), int(p[k]), float(tau[k])), used, False
    while used < max_draws_factor * attempts:
        more = rng.choice(len(outcomes), size=attempts, p=prob)
        hit = np.flatnonzero(ok[more])
        if hit.size:
            k = more[hit[0]]
            return Allocation(int(w[k]), int(p[k]), float(tau[k])), used + int(hit[0]) + 1, False
        used += attempts
    fw, fp = (int(v) for v in np.floor(np.asarray(x) + FIT_TOL))
    if job.fits(fw, fp) and fw >= 1 and fp >= 1:
        return Allocation(fw, fp, float(job.completion_time(fw, fp))), used, True
    return NONE, used, True


def rounding_law(job: SmdJob, x: np.ndarray, attempts: int, scale: float = 1.0) -> dict[tuple[int, int], float]:
    """The exact distribution of :func:`algorithm2`'s answer (ignoring the draw cap).

    With feasible one-draw outcomes sorted by ``tau`` (odds ``pi_1..pi_k``) and ``q`` the odds
    of an infeasible draw, outcome ``i`` is returned with probability
    ``(pi_i + S_i + q)^F - (S_i + q)^F + q^F pi_i / (1 - q)``, ``S_i`` the odds of the worse ones.
    """
    outcomes = _corners(job, x, scale)
    feasible = [(job.completion_time(w, p), w, p, pr) for w, p, pr in outcomes if w >= 1 and p >= 1 and job.fits(w, p)]
    total = sum(o[2] for o in outcomes)
    q = 1.0 - sum(o[3] for o in feasible) / total
    feasible.sort()
    law: dict[tuple[int, int], float] = {}
    worse = 1.0 - q
    for _, w, p, pr in feasible:
        pi = pr / total
        worse -= pi
        law[(w, p)] = (pi + worse + q) ** attempts - (worse + q) ** attempts + (q ** attempts * pi / (1 - q) if q < 1 else 0.0)
    return law
