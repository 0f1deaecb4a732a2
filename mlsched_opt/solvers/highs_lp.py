"""A small LP on numpy arrays, solved by HiGHS directly and re-solved after small changes.

For hot loops (thousands of LPs that differ in a few coefficients or bounds) a Pyomo model per
LP costs milliseconds of building; this keeps one ``highspy.Highs`` object, changes what
differs, and re-runs simplex from the previous basis.  Solutions are basic (dual simplex),
which the Frieze-Clarke knapsack scheme relies on.
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np
from scipy import sparse

INF = highspy.kHighsInf

#: threads of HiGHS's process-wide pool (None until a run sizes it)
_pool: list[int | None] = [None]


def use_threads(h: highspy.Highs, threads: int) -> None:
    """Set ``threads`` on ``h``, resizing HiGHS's pool first when needed; call before every ``run``.

    HiGHS keeps one thread pool per process, sized by its first run; a later run that asks for
    another size fails with model status "Not Set" (HiGHS 1.11: a solve with ``--threads 2`` and
    then a certification or LP with one thread, in one process).  So the pool is reset whenever
    the size changes.  Not for concurrent runs in threads of one process (a sweep runs one
    solver thread per task and never changes the size).
    """
    if _pool[0] is not None and _pool[0] != threads:
        highspy.Highs.resetGlobalScheduler(True)
    _pool[0] = threads
    h.setOptionValue("threads", int(threads))


def watch(h: highspy.Highs, report: bool = True) -> None:
    """Let ``h``'s next MIP run be followed and stopped: every improving incumbent is reported with the
    dual bound (:func:`mlsched_opt.clock.search_status`, drawn by ``mlsched solve``'s progress line),
    and the run stops with its incumbent when the user asks (:func:`mlsched_opt.clock.stop_requested`,
    the first Ctrl-C), as HiGHS does at its own time limit.  HiGHS polls the interrupt callback between
    nodes and releases the GIL while it runs, so a Ctrl-C is seen within milliseconds."""
    from ..clock import search_status, stop_requested

    kinds = highspy.cb.HighsCallbackType

    def callback(kind, message, data_out, data_in, user_data) -> None:
        if kind == kinds.kCallbackMipInterrupt:
            if stop_requested():
                data_in.user_interrupt = True
        elif kind == kinds.kCallbackMipImprovingSolution:
            bound = data_out.mip_dual_bound
            search_status(data_out.objective_function_value, bound if abs(bound) < INF else None)

    h.setCallback(callback, None)
    h.startCallback(kinds.kCallbackMipInterrupt)
    if report:
        h.startCallback(kinds.kCallbackMipImprovingSolution)


def sparse_lp(cost, a, col_lo, col_hi, row_lo, row_hi, maximize: bool = False) -> highspy.HighsLp:
    """``min/max cost x`` s.t. ``row_lo <= a x <= row_hi``, ``col_lo <= x <= col_hi`` as a HiGHS LP,
    ``a`` a ``scipy.sparse`` matrix (stored column-wise, as HiGHS takes it)."""
    a = sparse.csc_matrix(a, dtype=float)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = a.shape[1], a.shape[0]
    lp.col_cost_ = np.asarray(cost, dtype=float)
    lp.col_lower_ = np.asarray(col_lo, dtype=float)
    lp.col_upper_ = np.asarray(col_hi, dtype=float)
    lp.row_lower_ = np.asarray(row_lo, dtype=float)
    lp.row_upper_ = np.asarray(row_hi, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = a.indptr.astype(np.int32)
    lp.a_matrix_.index_ = a.indices.astype(np.int32)
    lp.a_matrix_.value_ = a.data.astype(float)
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    return lp


@dataclass(frozen=True)
class LPResult:
    status: str  # "optimal" | "time-limit" (with a feasible x) | "infeasible" | "unbounded" | "failed"
    x: np.ndarray | None
    objective: float | None


class ArrayLP:
    """``min/max c x`` s.t. ``row_lo <= A x <= row_hi``, ``col_lo <= x <= col_hi``.

    Parameters
    ----------
    c, A, row_lo, row_hi, col_lo, col_hi
        Arrays; ``A`` dense (small LPs re-solved in place) or a ``scipy.sparse`` matrix (large
        ones).  Use ``-INF``/``INF`` for absent sides.
    maximize
        Sense of the objective.
    time_limit
        Seconds per solve, so a pathological LP cannot hang a loop.
    integer, gap
        Make every column integer (a small MIP) and stop at this relative gap.
    """

    def __init__(self, c, A, row_lo, row_hi, col_lo, col_hi, maximize: bool = False, time_limit: float = 10.0,
                 integer: bool = False, gap: float = 1e-6):
        if not sparse.issparse(A):
            dense = np.asarray(A, dtype=float)
            m, n = dense.shape
            # column-wise with every entry stored, explicit zeros too, so their coefficients can change later
            A = sparse.csc_matrix((dense.T.ravel(), np.tile(np.arange(m), n), np.arange(0, m * n + 1, m)), shape=(m, n))
        self.shape = A.shape
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("presolve", "off")  # tiny LPs; presolve would also discard the warm basis
        h.setOptionValue("simplex_strategy", 1)  # dual simplex: basic solutions
        h.setOptionValue("time_limit", float(time_limit))
        lp = sparse_lp(c, A, col_lo, col_hi, row_lo, row_hi, maximize)
        if integer:
            lp.integrality_ = [highspy.HighsVarType.kInteger] * A.shape[1]
            h.setOptionValue("mip_rel_gap", float(gap))
            h.setOptionValue("mip_abs_gap", 0.0)
        h.passModel(lp)
        self.highs = h
        self.solves = 0

    def set_coeff(self, row: int, col: int, value: float) -> None:
        self.highs.changeCoeff(int(row), int(col), float(value))

    def set_cost(self, c) -> None:
        c = np.asarray(c, dtype=float)
        self.highs.changeColsCost(len(c), np.arange(len(c), dtype=np.int32), c)

    def set_col_bounds(self, lo, hi) -> None:
        lo = np.asarray(lo, dtype=float)
        self.highs.changeColsBounds(len(lo), np.arange(len(lo), dtype=np.int32), lo, np.asarray(hi, dtype=float))

    def set_row_bounds(self, row: int, lo: float, hi: float) -> None:
        self.highs.changeRowBounds(int(row), float(lo), float(hi))

    def clear_basis(self) -> None:
        """The next solve starts cold (the vertex a fresh model would give, not the warm one)."""
        self.highs.clearSolver()

    def mip_bound(self) -> float:
        """The MIP's best bound after :meth:`solve` (integer models)."""
        return float(self.highs.getInfo().mip_dual_bound)

    def solve(self) -> LPResult:
        h = self.highs
        use_threads(h, 1)
        h.run()
        self.solves += 1
        status = h.getModelStatus()
        if status == highspy.HighsModelStatus.kOptimal:
            x = np.array(h.getSolution().col_value)
            return LPResult("optimal", x, float(h.getInfo().objective_function_value))
        if status == highspy.HighsModelStatus.kTimeLimit and h.getInfo().primal_solution_status == 2:
            return LPResult("time-limit", np.array(h.getSolution().col_value), float(h.getInfo().objective_function_value))
        if status == highspy.HighsModelStatus.kInfeasible:
            return LPResult("infeasible", None, None)
        if status in (highspy.HighsModelStatus.kUnbounded, highspy.HighsModelStatus.kUnboundedOrInfeasible):
            # the warm basis can mislead; decide from scratch
            h.clearSolver()
            use_threads(h, 1)
            h.run()
            status = h.getModelStatus()
            if status == highspy.HighsModelStatus.kOptimal:
                return LPResult("optimal", np.array(h.getSolution().col_value), float(h.getInfo().objective_function_value))
            return LPResult("infeasible" if status == highspy.HighsModelStatus.kInfeasible else "unbounded", None, None)
        return LPResult("failed", None, None)


def highspy_version() -> str:
    h = highspy.Highs()
    return f"{h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"
