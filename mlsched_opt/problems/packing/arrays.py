"""The packing ILP of :mod:`.formulation`, built directly as sparse arrays and solved by HiGHS (highspy).

Same variables, rows and objective as :func:`.formulation.build_model`, in the same order
(``admit``, then ``workers`` and ``ps`` pairs job-major, then ``used``), so the MILP, its LP
relaxation and its MPS export are those of the Pyomo model (tests compare the optima).  At
production size (2,000 pods on Alibaba's 1,523 nodes: 3 million pairs) Pyomo takes minutes
and gigabytes to build it; here it is a few numpy passes over the eligibility masks.

Two variants of the same builder serve the family's other array methods:

* a sub-problem on a subset of the jobs and servers (:mod:`.pop`);
* the *shape-aggregated* model (:func:`shape_classes`): one column block per class of
  identical servers (same role, GPU model and capacity), with the class's multiplicity as
  capacity factor (``weight``) or ``used`` bound (``servers``).  Its LP relaxation has the
  value of the per-server LP: spreading an aggregated solution evenly over a class is feasible
  for every per-server row (including ``open_before_use`` and the symmetry rows, which it meets
  with equality), and summing a per-server solution over a class is feasible for the
  aggregated rows.  It has jobs x classes columns (Alibaba: 16 classes), not jobs x servers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np
import scipy.sparse
from scipy import sparse

from ...report import relative_gap
from ...solvers.highs_lp import use_threads
from ...tolerances import GAP_SLACK, proven_bound
from .decision import TASKS
from .view import PackingView, checker_limits

INF = highspy.kHighsInf
#: Wall seconds per column to read a solution back from HiGHS and turn it into a decision
#: (measured: 0.5 s for 2.5 million columns on 2 shared cores).
EXTRACT_S_PER_COL = 2e-7
#: ``mip_abs_gap`` for an integral objective: HiGHS stops once its incumbent minus its bound is at most
#: this, i.e. the bound rounded to an integer meets the incumbent; 1e-3 short of 1 covers HiGHS's
#: tolerances on the bound
INTEGRAL_ABS_GAP = 1.0 - 1e-3
#: How far past its time limit HiGHS's MIP presolve may run before it looks at the clock (measured:
#: 2.5 s on 2.5 million columns, 5 s under heavy contention on 2 shared cores).
PRESOLVE_OVERRUN_S = 10.0


@dataclass(frozen=True)
class ModelArrays:
    """A MILP as arrays, what :func:`solve` reads: ``max/min cost x`` s.t. ``row_lo <= a x <= row_hi``,
    ``col_lo <= x <= col_hi``, all columns integer; ``objective`` ``servers`` minimizes, any other
    maximizes.  :class:`ArrayModel` and :class:`.aggregate.Window` add what their columns mean."""

    objective: str
    cost: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    a: scipy.sparse.csc_matrix  # spelled in full: Sphinx resolves a field's type without the module's imports
    row_lo: np.ndarray
    row_hi: np.ndarray

    @property
    def maximize(self) -> bool:
        return self.objective != "servers"

    @property
    def sense(self) -> str:
        return "max" if self.maximize else "min"

    @property
    def num_col(self) -> int:
        return len(self.cost)


@dataclass(frozen=True)
class ArrayModel(ModelArrays):
    """``max/min cost x`` s.t. ``row_lo <= a x <= row_hi``, ``col_lo <= x <= col_hi``, all columns integer.

    ``jobs`` and ``servers`` are the instance indices the model covers (for the aggregated
    model, ``servers`` holds one representative per class); ``pairs[task] = (job, server)``
    are positions in those arrays, one per column of the task's block, which starts at
    ``first[task]`` (``first["admit"] = 0``; ``first["used"]`` in ``servers`` mode).
    """

    jobs: np.ndarray
    servers: np.ndarray
    pairs: dict[str, tuple[np.ndarray, np.ndarray]]
    first: dict[str, int]


class Rows:
    """Sparse rows gathered block by block (int32 indices: half the memory of numpy's default, and
    what HiGHS takes), then one CSC matrix."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.lo: list[np.ndarray] = []
        self.hi: list[np.ndarray] = []
        self.n = 0

    def add(self, r: np.ndarray, c: np.ndarray, v: np.ndarray, n: int, row_lo: np.ndarray, row_hi: np.ndarray) -> None:
        """``n`` rows: entries ``v`` at (``r`` within the block, column ``c``), bounds ``row_lo``, ``row_hi``."""
        self.rows.append((r + self.n).astype(np.int32))
        self.cols.append(c.astype(np.int32))
        self.vals.append(v.astype(float))
        self.lo.append(row_lo)
        self.hi.append(row_hi)
        self.n += n

    def matrix(self, ncol: int) -> tuple[sparse.csc_matrix, np.ndarray, np.ndarray]:
        """The matrix and the rows' bounds; the pieces are freed (HiGHS copies the matrix again)."""
        a = sparse.csc_matrix((np.concatenate(self.vals) if self.vals else np.zeros(0),
                               (np.concatenate(self.rows) if self.rows else np.zeros(0, dtype=np.int32),
                                np.concatenate(self.cols) if self.cols else np.zeros(0, dtype=np.int32))), shape=(self.n, ncol))
        lo = np.concatenate(self.lo) if self.lo else np.zeros(0)
        hi = np.concatenate(self.hi) if self.hi else np.zeros(0)
        for pieces in (self.rows, self.cols, self.vals, self.lo, self.hi):
            pieces.clear()
        return a, lo, hi


@dataclass(frozen=True)
class ArraySolve:
    """What HiGHS found: ``status`` is a :data:`~mlsched_opt.report.STATUSES` value (``optimal`` only
    within the requested gap); ``first_incumbent_s`` is when the first feasible point was known
    (0 for a start HiGHS accepted)."""

    status: str
    x: np.ndarray | None
    objective: float | None
    bound: float | None
    solve_s: float
    first_incumbent_s: float | None
    message: str = ""


def shape_classes(view: PackingView) -> tuple[np.ndarray, np.ndarray]:
    """One representative server per class of identical servers (role, GPU model, capacity), in
    instance order, and each class's size: what eligibility and fit depend on."""
    seen: dict[tuple[Any, ...], int] = {}
    reps: list[int] = []
    size: list[int] = []
    for i, s in enumerate(view.instance.servers):
        key = (s.role, s.gpu_model, view.capacity[i].tobytes())
        if key not in seen:
            seen[key] = len(reps)
            reps.append(i)
            size.append(0)
        size[seen[key]] += 1
    return np.array(reps, dtype=np.int64), np.array(size, dtype=np.int64)


def build(view: PackingView, objective: str, jobs: np.ndarray | None = None, servers: np.ndarray | None = None,
          multiplicity: np.ndarray | None = None) -> ArrayModel:
    """The packing MILP on ``jobs`` x ``servers`` (default: all, which is exactly :func:`.formulation.build_model`).

    ``multiplicity`` (one per server, from :func:`shape_classes`) makes each server stand for
    that many identical ones, and drops the symmetry rows (they order the servers of a class).
    """
    view = checker_limits(view)   # capacities: the checker's limits, as in the Pyomo model
    J = np.arange(len(view.jobs)) if jobs is None else np.asarray(jobs, dtype=np.int64)
    S = np.arange(len(view.capacity)) if servers is None else np.asarray(servers, dtype=np.int64)
    mult = np.ones(len(S)) if multiplicity is None else np.asarray(multiplicity, dtype=float)
    nJ, nS, R = len(J), len(S), len(view.resources)
    cap = view.capacity[S]
    servers_mode = objective == "servers"

    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    first: dict[str, int] = {"admit": 0}
    ncol = nJ
    for task, _ in TASKS:
        count = view.count(task)[J]
        ok = view.eligible[task][np.ix_(J, S)] & (count > 0)[:, None]
        pj, ps = np.nonzero(ok)  # row-major: job-major, like the Pyomo pairs
        pairs[task] = (pj.astype(np.int64), ps.astype(np.int64))
        first[task] = ncol
        ncol += len(pairs[task][0])
    if servers_mode:
        first["used"] = ncol
        ncol += nS

    out = Rows()
    add_rows = out.add
    # placed: sum_s x[j, s] - count_j admit_j = 0 for every job with tasks of this kind
    for task, _ in TASKS:
        count = view.count(task)[J]
        has = np.flatnonzero(count > 0)
        row_of = np.full(nJ, -1, dtype=np.int64)
        row_of[has] = np.arange(len(has))
        pj, _ps = pairs[task]
        r = np.concatenate([row_of[pj], row_of[has]])
        c = np.concatenate([first[task] + np.arange(len(pj)), has])
        v = np.concatenate([np.ones(len(pj)), -count[has].astype(float)])
        add_rows(r, c, v, len(has), np.zeros(len(has)), np.zeros(len(has)))

    # capacity: one row per (server, resource) that some eligible task demands
    entries = []
    for task, _ in TASKS:
        pj, ps = pairs[task]
        demand = view.demand[task][J][pj]
        p, r = np.nonzero(demand > 0)
        entries.append((ps[p] * R + r, first[task] + p, demand[p, r]))
    keys = np.concatenate([e[0] for e in entries]) if entries else np.zeros(0, dtype=np.int64)
    present, row_of_key = np.unique(keys, return_inverse=True)
    cap_rows = cap[present // R, present % R]
    c = np.concatenate([e[1] for e in entries])
    v = np.concatenate([e[2] for e in entries])
    if servers_mode:
        rs = np.arange(len(present))
        r_all = np.concatenate([row_of_key.ravel(), rs])
        c_all = np.concatenate([c, first["used"] + present // R])
        v_all = np.concatenate([v, -cap_rows])
        add_rows(r_all, c_all, v_all, len(present), np.full(len(present), -INF), np.zeros(len(present)))
    else:
        add_rows(row_of_key.ravel(), c, v, len(present), np.full(len(present), -INF), cap_rows * mult[present // R])

    if servers_mode:
        # open_before_use: x[j, s] - count_j used_s <= 0, in the Pyomo model's order (workers, then PSs)
        for task, _ in TASKS:
            pj, ps = pairs[task]
            n = len(pj)
            r = np.concatenate([np.arange(n), np.arange(n)])
            cc = np.concatenate([first[task] + np.arange(n), first["used"] + ps])
            vv = np.concatenate([np.ones(n), -view.count(task)[J][pj].astype(float)])
            add_rows(r, cc, vv, n, np.full(n, -INF), np.zeros(n))
        if multiplicity is None:
            group = np.array([view.instance.servers[s].group for s in S], dtype=object)
            a_idx = np.flatnonzero(group[:-1] == group[1:]) if nS > 1 else np.zeros(0, dtype=np.int64)
            n = len(a_idx)
            r = np.concatenate([np.arange(n), np.arange(n)])
            cc = np.concatenate([first["used"] + a_idx, first["used"] + a_idx + 1])
            vv = np.concatenate([np.ones(n), -np.ones(n)])
            add_rows(r, cc, vv, n, np.zeros(n), np.full(n, INF))

    a, row_lo, row_hi = out.matrix(ncol)
    cost = np.zeros(ncol)
    col_lo = np.zeros(ncol)
    col_hi = np.ones(ncol)
    for task, _ in TASKS:
        pj, _ps = pairs[task]
        col_hi[first[task]:first[task] + len(pj)] = view.count(task)[J][pj]
    if servers_mode:
        cost[first["used"]:] = 1.0
        col_hi[first["used"]:] = mult
        col_lo[:nJ] = 1.0  # every job is placed (the Pyomo model fixes admit to 1)
    else:
        cost[:nJ] = [view.jobs[j].weight for j in J]
    return ArrayModel(objective=objective, cost=cost, col_lo=col_lo, col_hi=col_hi, a=a, row_lo=row_lo, row_hi=row_hi,
                      jobs=J, servers=S, pairs=pairs, first=first)


def _highs(model: ModelArrays, relax: bool) -> highspy.Highs:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    a = model.a
    integrality = np.full(model.num_col, 0 if relax else 1, dtype=np.int32)
    sense = highspy.ObjSense.kMaximize if model.maximize else highspy.ObjSense.kMinimize
    status = h.passModel(model.num_col, a.shape[0], a.nnz, int(highspy.MatrixFormat.kColwise), int(sense), 0.0,
                model.cost, model.col_lo, model.col_hi, model.row_lo, model.row_hi,
                a.indptr.astype(np.int32), a.indices.astype(np.int32), a.data.astype(float), integrality)
    if status == highspy.HighsStatus.kError:
        raise RuntimeError("HiGHS refused the packing arrays (passModel)")
    return h


def solve(model: ModelArrays, time_limit: float, gap: float = 1e-6, seed: int = 0, threads: int = 1,
          presolve: bool = True, relax: bool = False, start: np.ndarray | None = None, log: bool = False,
          nodes: int | None = None, integral: bool = False) -> ArraySolve:
    """Solve the MILP (or its LP relaxation) with HiGHS within ``time_limit`` seconds.

    ``start`` is a feasible point offered as the first incumbent (HiGHS checks it and drops it
    if it is not); the search still proves its own bound, so a start never changes the optimum.
    ``nodes`` caps HiGHS's branch-and-bound nodes (``mip_max_nodes``): a work limit, so that a
    run that stops there stops at the same point however loaded the machine is.  ``integral``: every
    feasible objective value is an integer, so HiGHS may stop once no integer lies strictly between its
    bound and its incumbent (``mip_abs_gap`` :data:`INTEGRAL_ABS_GAP`), and the bound is rounded.
    """
    began = time.perf_counter()
    deadline = began + float(time_limit)
    h = _highs(model, relax)
    for name, value in (("random_seed", int(seed)), ("mip_rel_gap", float(gap)),
                        ("mip_abs_gap", 1e-10), ("output_flag", bool(log))):
        h.setOptionValue(name, value)
    use_threads(h, int(threads))
    if not presolve:
        h.setOptionValue("presolve", "off")
    if nodes is not None:
        h.setOptionValue("mip_max_nodes", int(nodes))
    if integral and not relax:
        h.setOptionValue("mip_abs_gap", INTEGRAL_ABS_GAP)
    first: list[float] = []
    if not relax:
        h.cbMipImprovingSolution.subscribe(lambda _e: first.append(time.perf_counter()) if not first else None)
    if start is not None and not relax:
        sol = highspy.HighsSolution()
        sol.col_value = np.asarray(start, dtype=float)
        sol.value_valid = True
        h.setSolution(sol)
    # the limit covers this whole call: HiGHS gets what handing over the model left, less a reserve
    # for reading the solution back and for presolve, which checks its clock only between passes
    left = deadline - time.perf_counter()
    reserve = min(EXTRACT_S_PER_COL * model.num_col + min(0.2 * left, PRESOLVE_OVERRUN_S), 0.5 * left)
    h.setOptionValue("time_limit", max(left - reserve, 0.01))
    stop_at = time.perf_counter() + max(left - reserve, 0.01)

    # HiGHS checks its clock only at some points (it was seen 40 s past a 150 s limit on loaded
    # cores); these callbacks stop it at the first check of any loop that reports progress
    def interrupt(event: Any) -> None:
        if time.perf_counter() > stop_at:
            event.interrupt()

    for callback in (h.cbSimplexInterrupt, h.cbIpmInterrupt, h.cbMipInterrupt):
        callback.subscribe(interrupt)
    run_start = time.perf_counter()
    h.run()
    info = h.getInfo()
    status = h.getModelStatus()
    has_x = info.primal_solution_status == 2
    x = np.array(h.getSolution().col_value) if has_x else None
    objective = float(info.objective_function_value) if has_x else None
    if relax:
        bound = objective if status == highspy.HighsModelStatus.kOptimal else None
    else:
        bound = proven_bound(float(info.mip_dual_bound))
        if integral and bound is not None:
            bound = integral_bound(bound, model.maximize)
    first_s = (first[0] - run_start) if first else (0.0 if has_x and start is not None else None)
    elapsed = time.perf_counter() - began
    if status == highspy.HighsModelStatus.kInfeasible:
        return ArraySolve("infeasible", None, None, None, elapsed, None)
    if status == highspy.HighsModelStatus.kUnboundedOrInfeasible:
        # every column is bounded, so "unbounded or infeasible" is infeasible
        return ArraySolve("infeasible", None, None, None, elapsed, None)
    stopped = status in (highspy.HighsModelStatus.kTimeLimit, highspy.HighsModelStatus.kInterrupt)
    if x is None:
        why = "time limit" if stopped else h.modelStatusToString(status)
        stat = "time-limit-no-solution" if stopped else "error"
        return ArraySolve(stat, None, None, bound, elapsed, None, f"HiGHS stopped with no solution ({why})")
    proved = status == highspy.HighsModelStatus.kOptimal or (
        integral and not relax and bound is not None and objective is not None and abs(objective - bound) < 0.5)
    if proved and not relax:
        g = relative_gap(objective, bound)
        proved = g is not None and g <= gap + GAP_SLACK
    message = "" if proved else f"HiGHS stopped ({h.modelStatusToString(status)}) before proving optimality"
    return ArraySolve("optimal" if proved else "feasible", x, objective, bound, elapsed, first_s, message)


def integral_bound(bound: float, maximize: bool) -> float:
    """A bound on an integral objective rounded to the integer it proves (a relative 1e-6 of slack
    for the solver's tolerances, as the LP bound's rounding)."""
    slack = 1e-6 * max(1.0, abs(bound))
    return float(math.floor(bound + slack)) if maximize else float(math.ceil(bound - slack))


def write_mps(model: ArrayModel, path: str) -> None:
    """Write the MILP as free MPS (HiGHS's writer; SCIP reads it with ``Model.readProblem``)."""
    h = _highs(model, relax=False)
    h.writeModel(str(path))
