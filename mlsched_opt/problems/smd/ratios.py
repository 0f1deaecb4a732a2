"""The inner problem as a sum of linear ratios, and the LPs Algorithm 1 solves.

Relaxing ``w, p`` to reals, a job's completion time is ``const + sum_j zeta_j(x)`` with
``zeta_j(x) = (a_j x + q_j) / (c_j x + d_j)`` over the polygon
``Omega = {O w + G p <= v, w_lo <= w <= w_hi, p_lo <= p <= p_hi}`` (spec 002 section 2.2; the
lower bounds are at least 1, [PROP] of the spec, so no ratio blows up).  Terms with a zero
coefficient are dropped (P7).

Problem (15), ``min zeta_J(x)`` over ``Omega`` and the side rows ``zeta_j(x) <= nu_j``, is a
single linear-fractional program.  Two exact solvers are provided:

* :class:`CharnesCooperLP`: the paper's route, the Charnes-Cooper LP in ``(y, t)``
  (``y = t x``, ``t = 1 / (c_J x + d_J)``) solved by HiGHS, one warm-started re-solve per grid
  point with only the side-row coefficients changed;
* :func:`vertex_minimum`: batched over many grid points at once.  A linear-fractional
  function with a positive denominator is quasi-linear, so its minimum over a bounded polygon
  is attained at a vertex; in two dimensions every vertex is the intersection of two
  constraint lines, so enumerating the intersections that satisfy all rows solves the LP
  exactly, vectorized with numpy.  Tests check both give the same optimum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...solvers.highs_lp import INF, ArrayLP
from .view import SmdJob

_FEAS_TOL = 1e-9


@dataclass(frozen=True)
class Terms:
    """``zeta_j(x) = (a[j] x + q[j]) / (c[j] x + d[j])``; ``names`` for reports."""

    a: np.ndarray  # (J, 2)
    q: np.ndarray  # (J,)
    c: np.ndarray  # (J, 2)
    d: np.ndarray  # (J,)
    const: float
    names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.q)

    def values(self, x: np.ndarray) -> np.ndarray:
        """Every term at points ``x`` of shape (..., 2): shape (..., J)."""
        x = np.asarray(x, dtype=float)
        return (x @ self.a.T + self.q) / (x @ self.c.T + self.d)


def ratio_terms(job: SmdJob) -> Terms:
    """The table of spec 002 section 2.2 for a sync or async job, zero terms dropped."""
    th = job.theta
    rows: list[tuple[tuple[float, float], float, tuple[float, float], float, float, str]] = []
    if job.sgd == "sync":
        rows = [((th[0], 0), 0, (0, 0), 1, th[0], "t1*w"), ((0, th[1]), 0, (0, 0), 1, th[1], "t2*p"),
                ((th[3], 0), 0, (0, 1), 0, th[3], "t4*w/p"), ((0, 0), th[4], (1, 0), 0, th[4], "t5/w")]
        const = float(th[2])
    else:
        rows = [((0, th[1]), 0, (1, 0), 0, th[1], "t2*p/w"), ((0, 0), th[2], (1, 0), 0, th[2], "t3/w"),
                ((0, 0), th[3], (0, 1), 0, th[3], "t4/p")]
        const = float(th[0])
    kept = [r for r in rows if r[4] > 0]
    if not kept:
        z = np.zeros((0, 2))
        return Terms(z, np.zeros(0), z.copy(), np.zeros(0), const, ())
    return Terms(
        a=np.array([r[0] for r in kept], dtype=float), q=np.array([r[1] for r in kept], dtype=float),
        c=np.array([r[2] for r in kept], dtype=float), d=np.array([r[3] for r in kept], dtype=float),
        const=const, names=tuple(r[5] for r in kept),
    )


def polygon(job: SmdJob) -> tuple[np.ndarray, np.ndarray]:
    """``Omega`` as ``A x <= h``: limit rows, then the box from the ranges and the limit."""
    w_lo, w_hi, p_lo, p_hi = job.box()
    rows = [np.array([job.worker[k], job.ps[k]]) for k in range(len(job.limit)) if job.worker[k] > 0 or job.ps[k] > 0]
    rhs = [job.limit[k] for k in range(len(job.limit)) if job.worker[k] > 0 or job.ps[k] > 0]
    rows += [np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([-1.0, 0.0]), np.array([0.0, -1.0])]
    rhs += [w_hi, p_hi, -w_lo, -p_lo]
    return np.array(rows, dtype=float), np.array(rhs, dtype=float)


def vertices(A: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Vertices of ``{A x <= h}`` for a batch: ``A`` (G, m, 2), ``h`` (G, m).

    Returns (G, m(m-1)/2, 2) with NaN where a pair of lines is parallel or its intersection
    breaks some row.
    """
    m = A.shape[1]
    i, j = np.triu_indices(m, 1)
    x = _intersections(A[:, i], h[:, i], A[:, j], h[:, j])
    x[~_feasible(x, A, h)] = np.nan
    return x


def vertex_minimum(num: np.ndarray, q: float, den: np.ndarray, d: float, A: np.ndarray, h: np.ndarray,
                   maximize: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Optimum of ``(num x + q)/(den x + d)`` over each polygon of a batch.

    Returns ``(value, x)`` with ``value`` NaN where the polygon is empty.
    """
    return _best(vertices(A, h), num, q, den, d, maximize)


def _best(v: np.ndarray, num, q, den, d, maximize: bool = False) -> tuple[np.ndarray, np.ndarray]:
    val = (v @ num + q) / (v @ den + d)
    val = np.where(np.isnan(val), -np.inf if maximize else np.inf, val)
    k = val.argmax(axis=1) if maximize else val.argmin(axis=1)
    g = np.arange(len(k))
    best = val[g, k]
    best = np.where(np.isfinite(best), best, np.nan)
    return best, v[g, k]


def _feasible(x: np.ndarray, A: np.ndarray, h: np.ndarray) -> np.ndarray:
    lhs = np.einsum("gpk,gmk->gpm", x, A)
    slack = h[:, None, :] + _FEAS_TOL * (1.0 + np.abs(h[:, None, :]) + np.abs(A).sum(-1)[:, None, :] * np.abs(x).max(-1, keepdims=True))
    return np.all(lhs <= slack, axis=-1)


def _intersections(A1, h1, A2, h2) -> np.ndarray:
    """Intersection points of line pairs ``A1[k] x = h1[k]``, ``A2[k] x = h2[k]`` (NaN if parallel)."""
    det = A1[..., 0] * A2[..., 1] - A1[..., 1] * A2[..., 0]
    scale = np.maximum(np.abs(A1).max(-1) * np.abs(A2).max(-1), 1e-300)
    ok = np.abs(det) > 1e-12 * scale
    det = np.where(ok, det, 1.0)
    x = np.stack(((h1 * A2[..., 1] - h2 * A1[..., 1]) / det, (A1[..., 0] * h2 - A2[..., 0] * h1) / det), axis=-1)
    x[~ok] = np.nan
    return x


class SidedPolygon:
    """``Omega`` plus batches of side rows: vertex minima without recomputing ``Omega``'s corners.

    A vertex of ``Omega`` cut by side rows is a vertex of ``Omega`` inside every side row, a
    point where a side line crosses an edge of ``Omega`` (so it is in ``Omega`` by construction
    and only the other side rows need checking), or the meeting point of two side lines.  With
    ``Omega``'s corners in cyclic order the crossings come from the sign changes of each side
    row along the boundary, so no candidate is checked against every row of ``Omega``: about a
    quarter of the work of intersecting every pair of lines, which is what the grid search
    spends its time on.
    """

    def __init__(self, A: np.ndarray, h: np.ndarray):
        self.A, self.h = A, h
        corners = vertices(A[None], h[None])[0]
        self.corners = _cyclic(corners[~np.isnan(corners).any(axis=1)])

    def minimum(self, num, q, den, d, rows: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``min (num x + q)/(den x + d)`` over ``Omega`` and each grid point's side rows
        ``rows[g] x <= rhs[g]``; ``(value, x)`` with NaN where that polygon is empty."""
        G, s = rows.shape[0], rows.shape[1]
        V = self.corners
        if len(V) == 0:
            return np.full(G, np.nan), np.full((G, 2), np.nan)
        # one (G, points) array per coordinate and per side row: numpy reductions over the tiny
        # trailing axes (2 coordinates, 2-3 side rows) cost more than the arithmetic itself
        sides = [_Row(rows[:, k, 0, None], rows[:, k, 1, None], rhs[:, k, None]) for k in range(s)]
        vx, vy = np.broadcast_to(V[:, 0], (G, len(V))), np.broadcast_to(V[:, 1], (G, len(V)))
        f = [row.excess(vx, vy) for row in sides]
        ok = np.ones((G, len(V)), dtype=bool)
        for row, fk in zip(sides, f):
            ok &= fk <= row.slack(vx, vy)
        parts = [(vx, vy, ok)]
        if len(V) > 1:
            ex, ey = np.roll(V[:, 0], -1) - V[:, 0], np.roll(V[:, 1], -1) - V[:, 1]
            for k, fk in enumerate(f):
                f_next = np.roll(fk, -1, axis=1)
                crossing = fk * f_next < 0
                t = np.where(crossing, fk / np.where(crossing, fk - f_next, 1.0), 0.0)
                px, py = vx + t * ex, vy + t * ey  # side line k on each edge: in Omega by construction
                ok = crossing.copy()
                for other, row in enumerate(sides):
                    if other != k:
                        ok &= row.excess(px, py) <= row.slack(px, py)
                parts.append((px, py, ok))
        for k in range(s):
            for j in range(k + 1, s):
                meet = _intersections(rows[:, k], rhs[:, k], rows[:, j], rhs[:, j])
                px, py = meet[:, 0, None], meet[:, 1, None]
                ok = ~np.isnan(px)
                for row in sides:
                    ok &= row.excess(px, py) <= row.slack(px, py)
                for a, b in zip(self.A, self.h):
                    ok &= a[0] * px + a[1] * py - b <= _tolerance(b, abs(a[0]) + abs(a[1]), np.maximum(abs(px), abs(py)))
                parts.append((px, py, ok))
        px = np.concatenate([p[0] for p in parts], axis=1)
        py = np.concatenate([p[1] for p in parts], axis=1)
        ok = np.concatenate([p[2] for p in parts], axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            val = (num[0] * px + num[1] * py + q) / (den[0] * px + den[1] * py + d)
        val = np.where(ok & ~np.isnan(val), val, np.inf)
        k = val.argmin(axis=1)
        g = np.arange(G)
        best = val[g, k]
        found = np.isfinite(best)
        x = np.where(found[:, None], np.stack((px[g, k], py[g, k]), axis=1), np.nan)
        return np.where(found, best, np.nan), x


class _Row:
    """One side row ``r0 w + r1 p <= b`` per grid point, as (G, 1) columns."""

    def __init__(self, r0: np.ndarray, r1: np.ndarray, b: np.ndarray):
        self.r0, self.r1, self.b = r0, r1, b
        self.abs_r = np.abs(r0) + np.abs(r1)
        self.abs_b = 1.0 + np.abs(b)

    def excess(self, px: np.ndarray, py: np.ndarray) -> np.ndarray:
        return self.r0 * px + self.r1 * py - self.b

    def slack(self, px: np.ndarray, py: np.ndarray) -> np.ndarray:
        """The tolerance of :func:`_feasible` at these points."""
        return _FEAS_TOL * (self.abs_b + self.abs_r * np.maximum(np.abs(px), np.abs(py)))


def _tolerance(h, abs_a, scale):
    """The slack :func:`_feasible` allows a row ``a x <= h`` at a point of size ``scale``."""
    return _FEAS_TOL * (1.0 + np.abs(h) + abs_a * scale)


def _cyclic(points: np.ndarray) -> np.ndarray:
    """Distinct points of a convex polygon in counter-clockwise order (a segment or a point
    stays one)."""
    kept: list[np.ndarray] = []
    for x in points:
        if not any(np.all(np.abs(x - y) <= 1e-9 * (1.0 + np.abs(y))) for y in kept):
            kept.append(x)
    if len(kept) < 3:
        return np.array(kept, dtype=float).reshape(len(kept), 2)
    pts = np.array(kept, dtype=float)
    centre = pts.mean(axis=0)
    return pts[np.argsort(np.arctan2(pts[:, 1] - centre[1], pts[:, 0] - centre[0]), kind="stable")]


def term_ranges(terms: Terms, A: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``l_j = min`` and ``phi_j = max`` of every term over ``Omega`` (step 1 of Algorithm 1)."""
    lo, hi = np.empty(len(terms)), np.empty(len(terms))
    corners = vertices(A[None], h[None])  # Omega's vertices serve every term
    for j in range(len(terms)):
        lo[j] = _best(corners, terms.a[j], terms.q[j], terms.c[j], terms.d[j])[0][0]
        hi[j] = _best(corners, terms.a[j], terms.q[j], terms.c[j], terms.d[j], maximize=True)[0][0]
    return lo, hi


def side_rows(terms: Terms, others: np.ndarray, nu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``(a_j - nu_j c_j) x <= nu_j d_j - q_j`` for the gridded terms, batched over ``nu`` (G, J-1)."""
    a, c = terms.a[others], terms.c[others]
    rows = a[None] - nu[..., None] * c[None]
    rhs = nu * terms.d[others][None] - terms.q[others][None]
    return rows, rhs


class CharnesCooperLP:
    """Problem (15) as the Charnes-Cooper LP, re-solved by HiGHS for each grid point.

    Variables ``(y_w, y_p, t) >= 0``; minimise ``a_J y + q_J t`` subject to
    ``c_J y + d_J t = 1``, ``A y - h t <= 0`` and, per gridded term ``j``,
    ``(a_j - nu_j c_j) y + (q_j - nu_j d_j) t <= 0``.
    """

    def __init__(self, terms: Terms, left_out: int, others: np.ndarray, A: np.ndarray, h: np.ndarray, maximize: bool = False):
        self.terms, self.left_out, self.others = terms, left_out, others
        rows = [np.r_[terms.c[left_out], terms.d[left_out]]]
        rows += [np.r_[A[k], -h[k]] for k in range(len(h))]
        self.first_side = len(rows)
        rows += [np.r_[terms.a[j], terms.q[j]] for j in others]
        n_rows = len(rows)
        lo = np.r_[1.0, np.full(n_rows - 1, -INF)]
        hi = np.r_[1.0, np.zeros(n_rows - 1)]
        cost = np.r_[terms.a[left_out], terms.q[left_out]]
        self.lp = ArrayLP(cost, np.array(rows), lo, hi, np.zeros(3), np.full(3, INF), maximize=maximize)

    def solve(self, nu: np.ndarray | None = None) -> tuple[float, np.ndarray] | None:
        """``(zeta_J(x), x)`` at the optimum for side bounds ``nu``, or None when infeasible."""
        t = self.terms
        if nu is not None:
            for k, j in enumerate(self.others):
                row = self.first_side + k
                coef = np.r_[t.a[j] - nu[k] * t.c[j], t.q[j] - nu[k] * t.d[j]]
                for col in range(3):
                    self.lp.set_coeff(row, col, coef[col])
        res = self.lp.solve()
        if res.status != "optimal":
            return None
        assert res.x is not None and res.objective is not None  # an optimal result has both
        if res.x[2] <= 0:
            return None
        return res.objective, res.x[:2] / res.x[2]

    @property
    def solves(self) -> int:
        return self.lp.solves
