"""A proven upper bound on the total utility at any scale: the window capacity LP (our design, issue 18).

The exact model's LP relaxation (:mod:`.formulation`) has a variable per (job, server, slot) and
cannot be built for 2,000 jobs on 1,523 servers; this LP keeps one variable per (job, completion
slot) and sums capacity over servers and over windows of slots, built on arrays and solved by
HiGHS directly.

**The LP.**  For job ``i`` let ``W_i`` be the fewest worker-slots an accepted answer gives it,
``e_i`` its earliest completion slot (``W_i`` worker-slots at the most workers a slot allows),
``P_i`` the fewest PS-slots those worker-slots need, and ``f_i^+(t) = max(f_i(t - a_i), 0)``.
``v[i, t]`` in ``[0, 1]`` (``t >= e_i``) is "job i has completed by slot t", nondecreasing in t;
the objective is ``sum_i sum_t f_i^+(t) (v[i, t] - v[i, t - 1])``.  For every window ``[s, e]``
(``s`` an arrival slot, ``e >= s``), pool and resource ``r``:

    sum over jobs with a_i >= s of  W_i w_i^r v[i, e]  <=  (e - s + 1) sum_h c_h^r      (workers)
    sum over jobs with a_i >= s of  P_i s_i^r v[i, e]  <=  (e - s + 1) sum_k c_k^r      (PSs)

**Why it bounds every answer the checker accepts, and so the exact optimum.**  Take an accepted
answer and set ``v[i, t] = 1`` iff job i is admitted and its completion (last slot with workers)
is at most ``t``.  A job earns ``f_i`` at its completion, so the objective is the answer's value.
An admitted job that arrived at or after ``s`` and completed by ``e`` ran all its worker-slots
(at least ``W_i``: the checker's work rule) and PS-slots (at least ``P_i``: rules (6), ps-min,
one PS for every running slot) inside ``[s, e]``; every one of them used its demand on some
server of the pool in some slot of the window, and the checker keeps each (server, resource,
slot) within capacity, so the sums are at most the window's capacity.  Its workers per slot are
at most its cap (and what ``ps.max`` PSs serve), so it cannot complete before ``e_i``.  Every
rule's tolerance (``CHECK_TOL``) is added to the right-hand sides and taken off ``W_i``/``P_i``, so
the bound holds for answers the checker accepts within tolerance, and the exact model (the same
rules without tolerance) is one of them.  The LP is a relaxation, so its optimum is a bound.

**A bound whatever HiGHS returns.**  The value reported is not HiGHS's objective but the dual bound
``sum_r y_r rhs_r + sum_j max(0, (c - A^T y)_j)`` of the row prices ``y`` HiGHS returns, which is
at least the LP optimum for *any* ``y >= 0`` on the ``<=`` rows (weak duality with ``0 <= v <= 1``;
prices on the wrong side of a row are dropped), so float tolerances, a solve cut by the time limit
or a wrong sign convention can make it looser, never invalid.  ``y = 0`` gives the trivial bound
(every job at its best utility), which is returned when there is no time for the LP.

Windows whose coefficients sum to at most the right-hand side can never bind and are left out;
when the rest exceed :data:`MAX_NONZEROS`, the most overloaded windows are kept (any subset of
valid rows is still a relaxation).

On a small instance (the exact model has at most :data:`SMALL_MODEL` variables) the exact
model's own LP relaxation is solved too, in the time left, and the smaller of the two bounds is
reported: both are proven, and the per-server, per-slot one is often tighter there.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import highspy
import numpy as np
from scipy import sparse

from ...errors import ModelTooLarge
from ...io.instance import Instance
from ...report import SolveReport
from ...solvers import SolveOptions, relaxation
from ...solvers.highs_lp import highspy_version, sparse_lp, use_threads
from ...tolerances import CHECK_TOL, FIT_TOL, capacity_limit, work_done_threshold
from .decision import model_size
from .formulation import offline_model
from .view import OasisView, oasis_view

NAME = "window capacity LP"
#: Most nonzeros of window rows passed to HiGHS (our design: solves in seconds at this size).
MAX_NONZEROS = 1_000_000
#: Largest exact model (variables) whose LP relaxation is also tried: Pyomo builds it in about a second.
SMALL_MODEL = 20_000
#: Relative slack added to the bound for float rounding (sums over thousands of jobs, ~1e-13).
ROUNDING = 1e-9


def capacity_bound(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """The family's ``relaxation``: the window capacity LP's dual bound (module docstring), within
    ``solve_options.time_limit`` (the trivial bound when the LP cannot be solved in time)."""
    start = time.perf_counter()
    deadline = start + solve_options.time_limit
    opts = dict(options)
    view = oasis_view(instance, options.get("ranges", "instance"))
    lp = window_lp(view, deadline)
    if lp is None:
        return SolveReport("time-limit-no-solution", None, None, "max", NAME, highspy_version(), opts,
                           solve_s=time.perf_counter() - start, message="no bound: the time limit came before the LP was built")
    trivial = lp.dual_bound(np.zeros(lp.rows + lp.chain.shape[0]))
    bound, how = trivial, "no window can bind: every job at its best utility"
    if lp.rows:
        left = deadline - time.perf_counter()
        y, status = lp.solve(left) if left > 0 else (None, "not started (time limit)")
        if y is not None:
            value = min(lp.dual_bound(y), lp.dual_bound(-y))
            if value < bound:
                bound, how = value, f"HiGHS {status}"
        if bound == trivial:
            how = f"LP {status}; the trivial bound: every job at its best utility"
    # sums of thousands of utilities in another order than the checker's: round away from every answer
    bound = bound + ROUNDING * max(1.0, abs(bound))
    message = (f"{NAME}: {lp.rows} window rows of {lp.windows} (the others cannot bind), {lp.columns} columns, {how}; "
               f"trivial bound {trivial:.6g} (a bound on the total utility, not a schedule)")
    small = exact_relaxation(view, deadline)
    if small is not None:
        message += f"; the exact model's LP relaxation gives {small:.6g}"
        if small < bound:
            bound = small
            message += ", the bound reported"
    return SolveReport("optimal", bound, bound, "max", NAME, highspy_version(), opts, solve_s=time.perf_counter() - start,
                       message=message)


def exact_relaxation(view: OasisView, deadline: float) -> float | None:
    """The exact model's LP relaxation on a small instance (at most :data:`SMALL_MODEL` variables, built
    by Pyomo), within ``deadline``; None when the model is larger or the solve does not end optimal.
    Where it can be built it is often the tighter of the two (it keeps per-server, per-slot capacity)."""
    left = deadline - time.perf_counter()
    if left <= 0 or model_size(view) > SMALL_MODEL:
        return None
    try:
        model = offline_model(view)
    except ModelTooLarge:  # a lowered size limit: the window LP stands alone
        return None
    report = relaxation(model, SolveOptions(time_limit=left))
    return report.objective if report.status == "optimal" and report.objective is not None else None


class WindowLP:
    """``max c v`` s.t. ``A v <= rhs`` (window rows), ``v[i, t] - v[i, t - 1] >= 0``, ``0 <= v <= 1``."""

    def __init__(self, c: np.ndarray, A: sparse.csr_matrix, rhs: np.ndarray, chain: sparse.csr_matrix, windows: int):
        self.c, self.A, self.rhs, self.chain = c, A, rhs, chain
        self.windows = windows

    @property
    def rows(self) -> int:
        return self.A.shape[0]

    @property
    def columns(self) -> int:
        return self.c.size

    def dual_bound(self, y: np.ndarray) -> float:
        """Weak duality at row prices ``y`` (window rows, then chain rows): with ``y_w >= 0`` on the
        ``<=`` window rows and ``y_c <= 0`` on the ``>= 0`` chain rows (prices of the wrong sign dropped),
        every feasible ``v`` has ``c v = y A v + (c - A^T y) v <= y_w rhs + sum_j max(0, (c - A^T y)_j)``."""
        y = np.asarray(y, dtype=float)
        yw = np.maximum(y[: self.rows], 0.0)
        yc = np.minimum(y[self.rows:], 0.0)
        reduced = self.c - self.A.T @ yw - self.chain.T @ yc
        return float(yw @ self.rhs + np.maximum(reduced, 0.0).sum())

    def solve(self, time_limit: float) -> tuple[np.ndarray | None, str]:
        """Row prices of every row (window rows, then chain rows) from HiGHS (None when it returns none)."""
        n = self.columns
        A = sparse.vstack([self.A, self.chain]).tocsc()
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        use_threads(h, 1)
        h.setOptionValue("time_limit", max(float(time_limit), 1e-3))
        lp = sparse_lp(self.c, A, np.zeros(n), np.ones(n),
                       np.concatenate([np.full(self.rows, -highspy.kHighsInf), np.zeros(self.chain.shape[0])]),
                       np.concatenate([self.rhs, np.full(self.chain.shape[0], highspy.kHighsInf)]), maximize=True)
        h.passModel(lp)
        h.run()
        status = h.modelStatusToString(h.getModelStatus())
        solution = h.getSolution()
        if not solution.dual_valid:
            return None, status
        return np.asarray(solution.row_dual, dtype=float), status


def job_figures(view: OasisView) -> dict[str, np.ndarray]:
    """Per job: fewest worker-slots ``W`` and PS-slots ``P`` of an accepted answer, earliest completion
    slot ``e`` (``T`` when the job cannot earn), worker and PS demands (module docstring)."""
    T, tol = view.slots, CHECK_TOL
    n = len(view.jobs)
    W = np.zeros(n)
    P = np.zeros(n)
    e = np.full(n, T, dtype=np.int64)
    for k, job in enumerate(view.jobs):
        # the checker accepts done >= work_done_threshold(work); done is an integer and a completion needs a worker
        w = max(int(np.ceil(work_done_threshold(job.work) - FIT_TOL)), 1)
        top = job.cap
        if job.ps_max is not None:  # (6) with ps.max PSs, within the checker's tolerance
            top = min(top, int(np.floor(capacity_limit(job.ps_max * job.B) / job.b + FIT_TOL)))
        if top < job.lo:
            continue  # no slot can run it: worker-cap / worker-min / ps rules
        runs = -(-w // top)  # fewest running slots
        per_slot = max(1 if job.b > tol else 0, job.ps_min)  # (6) needs a PS whenever a worker runs; ps.min
        P[k] = max((job.b * w - T * tol) / (job.B * (1 + tol)), runs * per_slot, 0.0)
        W[k] = w
        e[k] = job.arrival + runs - 1
    worker = np.array([j.worker for j in view.jobs]).reshape(n, len(view.resources))
    ps = np.array([j.ps for j in view.jobs]).reshape(n, len(view.resources))
    arrival = np.array([j.arrival for j in view.jobs], dtype=np.int64)
    return {"W": W, "P": P, "e": e, "worker": worker, "ps": ps, "arrival": arrival}


def window_lp(view: OasisView, deadline: float | None = None) -> WindowLP | None:
    """The LP of the module docstring on arrays (None when ``deadline`` passes while building it)."""
    T = view.slots
    fig = job_figures(view)
    e, arrival = fig["e"], fig["arrival"]
    live = np.flatnonzero(e < T)
    # columns v[i, t] for t = e_i .. T-1, job by job
    length = np.zeros(len(view.jobs), dtype=np.int64)
    length[live] = T - e[live]
    base = np.concatenate([[0], np.cumsum(length)[:-1]])
    c = np.zeros(int(length.sum()))
    chain_rows, chain_cols, chain_vals = [], [], []
    row = 0
    for i in live:
        t = np.arange(e[i], T)
        f = np.maximum(np.asarray(view.jobs[i].value(t), dtype=float), 0.0)
        # sum_t f(t) (v_t - v_{t-1}) = sum_t v_t (f(t) - f(t + 1)), f(T) = 0
        c[base[i]: base[i] + t.size] = f - np.append(f[1:], 0.0)
        m = t.size - 1
        if m:
            cols = base[i] + np.arange(1, t.size)
            chain_rows.append(np.repeat(np.arange(row, row + m), 2))
            chain_cols.append(np.column_stack([cols, cols - 1]).ravel())
            chain_vals.append(np.tile([1.0, -1.0], m))
            row += m
    if deadline is not None and time.perf_counter() > deadline:
        return None
    chain = sparse.csr_matrix((np.concatenate(chain_vals) if chain_vals else np.zeros(0),
                               (np.concatenate(chain_rows) if chain_rows else np.zeros(0, np.int64),
                                np.concatenate(chain_cols) if chain_cols else np.zeros(0, np.int64))),
                              shape=(row, c.size))
    # (coefficient per job, right-hand side per slot) of every pool and resource a job uses
    kinds = []
    for slots_of, demand, capacity in ((fig["W"], fig["worker"], view.worker_capacity), (fig["P"], fig["ps"], view.ps_capacity)):
        per_slot = capacity_limit(capacity).sum(axis=0)   # the checker's limit of every server
        for r in range(len(view.resources)):
            coef = slots_of * demand[:, r]
            if np.any(coef[live] > 0):
                kinds.append((coef, float(per_slot[r])))
    # load[s, end] = sum of coefficients over jobs with a_i >= s and e_i <= end: a (arrival, earliest
    # completion) histogram, summed from the back over arrivals and from the front over completions
    al, el = arrival[live], e[live]

    def window_sums(values: np.ndarray) -> np.ndarray:
        grid = np.zeros((T, T))
        np.add.at(grid, (al, el), values)
        return np.cumsum(np.cumsum(grid[::-1], axis=0)[::-1], axis=1)

    counts = window_sums(np.ones(live.size))
    starts = np.zeros(T, dtype=bool)
    starts[np.unique(al)] = True
    span = np.arange(T)[None, :] - np.arange(T)[:, None] + 1  # end - s + 1
    valid = starts[:, None] & (span >= 1) & (counts > 0)
    windows = int(valid.sum()) * len(kinds)
    over, size, s_of, end_of, kind_of = [np.zeros(0)], [np.zeros(0, np.int64)], *([np.zeros(0, np.int64)] for _ in range(3))
    for k, (coef, per_slot) in enumerate(kinds):
        load = window_sums(coef[live])
        rhs = span * per_slot
        binds = valid & (load > rhs)
        s_k, end_k = np.nonzero(binds)
        over.append(load[s_k, end_k] / rhs[s_k, end_k])
        size.append(counts[s_k, end_k].astype(np.int64))
        s_of.append(s_k)
        end_of.append(end_k)
        kind_of.append(np.full(s_k.size, k))
        if deadline is not None and time.perf_counter() > deadline:
            return None
    over_a, size_a, s_a, end_a, kind_a = (np.concatenate(x) for x in (over, size, s_of, end_of, kind_of))
    order = np.lexsort((kind_a, end_a, s_a, -over_a))  # the most overloaded windows first
    candidates = zip(size_a[order], s_a[order], end_a[order], kind_a[order])
    rows_i: list[np.ndarray] = []
    cols_i: list[np.ndarray] = []
    vals_i: list[np.ndarray] = []
    rhs_i: list[float] = []
    nnz = 0
    for n, (count, s, end, k) in enumerate(candidates):
        if nnz + count > MAX_NONZEROS:
            break
        if n % 256 == 255 and deadline is not None and time.perf_counter() > deadline:
            return None
        coef, per_slot = kinds[k]
        members = live[(arrival[live] >= s) & (e[live] <= end)]
        keep = coef[members] > 0
        members = members[keep]
        rows_i.append(np.full(members.size, len(rhs_i)))
        cols_i.append(base[members] + (end - e[members]))
        vals_i.append(coef[members])
        rhs_i.append((end - s + 1) * per_slot)
        nnz += members.size
    A = sparse.csr_matrix((np.concatenate(vals_i) if vals_i else np.zeros(0),
                           (np.concatenate(rows_i) if rows_i else np.zeros(0, np.int64),
                            np.concatenate(cols_i) if cols_i else np.zeros(0, np.int64))),
                          shape=(len(rhs_i), c.size))
    return WindowLP(c, A, np.array(rhs_i, dtype=float), chain, windows)
