"""A lower bound on the average JCT at production scale: the configuration LP by column generation.

The configuration LP (the LP relaxation of :func:`.formulation.build_model`) has a column per
job and class-count vector ``n``; a job has up to ``prod_c (N_c + 1)`` of them, about 10^16 on
Alibaba's 6,212 GPUs of 7 classes.  Column generation solves it all the same: a restricted
master LP over the columns found so far (HiGHS, through highspy, with an artificial column per
job so it is always feasible), whose capacity duals ``p >= 0`` price every job exactly over its
integer vectors (:mod:`.pricing`); a job's column with negative reduced cost joins the master.

The bound at every round is Lagrangian: for every ``p >= 0``

    ``OPT >= LP >= L(p) = sum_i min_n [J_i(n) / S + p . n] - p . N``

(the capacity rows relaxed), with each job's minimum from the pricing (exact, or a lower bound
where its work limit left a job undecided).  The best ``L(p)`` seen is what is reported, so the
bound is valid whenever the run stops; once no column has a negative reduced cost and every job
was priced exactly, ``L(p)`` at the master's duals is the LP value (status ``optimal``).  The
master's columns also give integer answers: :meth:`ColumnGeneration.integer` solves the
configuration ILP restricted to them (price-and-branch, HiGHS), a feasible placement.
Column generation with exact pricing over the configuration LP is classical (Gilmore-Gomory;
Desrosiers and Lübbecke, "A primer in column generation", 2005); the pricing is our design.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np

from ...io.instance import Instance
from ...report import SolveOptions, SolveReport
from ...solvers.highs_lp import highspy_version, use_threads
from .pricing import Pricer, bounded_count, bounded_vectors
from .timing import jct_rows
from .view import HeteroView, hetero_view

#: Column generation rounds at most (each one master solve and one pricing pass): a work limit.
MAX_CG_ROUNDS = 200
#: A column joins the master when its reduced cost is below ``-REDUCED_TOL`` x its value (relative).
REDUCED_TOL = 1e-9


@dataclass
class Columns:
    """Columns of the master: job, class-count vector and cost ``J / S``."""

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
    status: str            # "optimal" (the LP value), "bound" (a Lagrangian bound), "infeasible", or why there is none
    bound: float | None
    lp_value: float | None
    rounds: int
    columns: int
    exact_jobs: int
    message: str


def allocation_columns(view: HeteroView, x: np.ndarray, comm: str) -> Columns:
    """The columns of an allocation ``x`` (one vector per job), those with a finite JCT."""
    jobs = np.arange(view.S, dtype=np.int64)
    cost = jct_rows(view, jobs, np.asarray(x, dtype=np.int64), comm) / view.S
    ok = np.isfinite(cost)
    return Columns(jobs[ok], np.asarray(x, dtype=np.int64)[ok], cost[ok])


def seed_columns(view: HeteroView, comm: str) -> Columns:
    """Each job on its fewest GPUs of each one class that can hold them: small columns that fit together."""
    cols = Columns.empty(view.G)
    lo = np.array([j.k_range[0] for j in view.jobs], dtype=np.int64)
    for c in range(view.G):
        jobs = np.flatnonzero((view.arrays["rho"][:, c] > 0) & (lo <= view.counts[c]))
        vec = np.zeros((len(jobs), view.G), dtype=np.int64)
        vec[:, c] = lo[jobs]
        cost = jct_rows(view, jobs, vec, comm) / view.S
        ok = np.isfinite(cost)
        cols.extend(Columns(jobs[ok], vec[ok], cost[ok]))
    return cols


class Master:
    """The restricted configuration LP in HiGHS: rows ``sum_n y_in = 1`` per job, ``sum n_c y <= N_c``
    per class; an artificial column per job (cost ``big``) keeps it feasible while columns are few.
    ``columns`` keeps every column added (for :meth:`ColumnGeneration.integer`)."""

    def __init__(self, view: HeteroView, big: float, threads: int = 1):
        s, g = view.S, view.G
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        use_threads(h, threads)
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
        self.highs, self.s, self.g, self.threads = h, s, g, threads
        self.columns = Columns.empty(g)

    def add(self, cols: Columns) -> None:
        if len(cols.job) == 0:
            return
        self.columns.extend(cols)
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
        use_threads(h, self.threads)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        solution = h.getSolution()
        duals = np.array(solution.row_dual)
        artificial = bool((np.array(solution.col_value[:self.s]) > 1e-9).any())
        return float(h.getInfo().objective_function_value), duals[:self.s], np.maximum(-duals[self.s:], 0.0), artificial


def _joined(a: Columns, b: Columns) -> Columns:
    return Columns(np.concatenate([a.job, b.job]), np.vstack([a.vec, b.vec]), np.concatenate([a.cost, b.cost]))


def _unique(cols: Columns) -> Columns:
    """The columns without repeats (the first of each kept, in order)."""
    _, first = np.unique(np.column_stack([cols.job, cols.vec]), axis=0, return_index=True)
    first.sort()
    return Columns(cols.job[first], cols.vec[first], cols.cost[first])


def subview(view: HeteroView, jobs: np.ndarray) -> HeteroView:
    """``view`` restricted to ``jobs`` (the cluster unchanged)."""
    return dataclasses.replace(view, jobs=tuple(view.jobs[int(i)] for i in jobs))


def infeasibility_certificate(view: HeteroView, p: np.ndarray) -> bool:
    """Whether prices ``p >= 0`` prove that no placement exists: every job needs at least its
    ``lo`` GPUs of classes it can use, at least ``sum of its lo cheapest units`` at these prices, and
    a placement uses at most ``N`` GPUs, so ``sum_i cheapest_i(p) > p . N`` is a contradiction (the
    Farkas certificate of the capacity rows; memory caps ignored, which only lowers the left side)."""
    need = 0.0
    usable = view.arrays["rho"] > 0
    order = np.argsort(p, kind="stable")
    for i, job in enumerate(view.jobs):
        units = np.repeat(p[order], np.where(usable[i, order], view.counts[order], 0))[:job.k_range[0]]
        if len(units) < job.k_range[0]:
            return True  # the job's minimum exceeds every GPU it can use
        need += float(units.sum())
    have = float(p @ view.counts)
    return need > have + 1e-9 * max(1.0, have)


def restricted_ilp(view: HeteroView, cols: Columns, counts: np.ndarray, deadline: float, start: np.ndarray | None,
                   gap: float, max_nodes: int, threads: int = 1) -> np.ndarray | None:
    """The configuration ILP of ``view``'s jobs over the columns ``cols`` only, with ``counts`` GPUs per
    class: HiGHS within ``max_nodes`` nodes (a work limit) or by ``deadline``, started from the
    allocation ``start`` when its columns are among ``cols``; the best allocation found, or ``None``."""
    s, g = view.S, view.G
    n = len(cols.job)
    left = deadline - time.perf_counter()
    if left <= 0 or n == 0:
        return None
    nz = cols.vec != 0
    rows = np.where(np.concatenate([np.ones((n, 1), bool), nz], axis=1),
                    np.concatenate([cols.job[:, None], s + np.broadcast_to(np.arange(g), (n, g))], axis=1), -1)
    vals = np.concatenate([np.ones((n, 1)), cols.vec.astype(float)], axis=1)
    keep = rows >= 0
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, s + g
    lp.col_cost_ = cols.cost.astype(float)
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.ones(n)
    lp.row_lower_ = np.concatenate([np.ones(s), np.full(g, -highspy.kHighsInf)])
    lp.row_upper_ = np.concatenate([np.ones(s), np.asarray(counts, dtype=float)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int32)
    lp.a_matrix_.index_ = rows[keep].astype(np.int32)
    lp.a_matrix_.value_ = vals[keep]
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    use_threads(h, threads)
    h.passModel(lp)
    for key, value in (("time_limit", float(left)), ("mip_rel_gap", float(gap)), ("mip_max_nodes", int(max_nodes)),
                       ("random_seed", 0)):
        h.setOptionValue(key, value)
    if start is not None:
        index = {(int(j), v.tobytes()): k for k, (j, v) in enumerate(zip(cols.job, cols.vec))}
        picks = [index.get((i, v.tobytes()), -1) for i, v in enumerate(np.asarray(start, dtype=np.int64))]
        if min(picks) >= 0:
            chosen = np.zeros(n)
            chosen[np.array(picks, dtype=np.int64)] = 1.0
            sol = highspy.HighsSolution()
            sol.col_value = chosen.tolist()
            sol.value_valid = True
            h.setSolution(sol)
    h.run()
    solution = h.getSolution()
    if not solution.value_valid:
        return None
    y = np.array(solution.col_value) > 0.5
    x = np.zeros((s, g), dtype=np.int64)
    x[cols.job[y]] = cols.vec[y]
    if not (np.bincount(cols.job[y], minlength=s) == 1).all() or (x.sum(axis=0) > counts).any():
        return None
    return x


@dataclass
class ColumnGeneration:
    """The configuration LP of ``view`` by column generation with exact pricing; resumable
    (:meth:`run` again continues), and its columns give integer answers (:meth:`integer`)."""

    view: HeteroView
    comm: str
    start: np.ndarray | None = None            # an allocation whose columns seed the master
    threads: int = 1
    best: float = -math.inf                    # the best Lagrangian bound L(p) so far
    best_p: np.ndarray | None = None
    lp_value: float | None = None
    rounds: int = 0
    converged: bool = False
    infeasible: bool = False
    artificial: bool = False                   # the master's optimum still uses an artificial column
    exact_jobs: int = 0
    pricer: Pricer = field(init=False)
    master: Master = field(init=False)

    def __post_init__(self) -> None:
        view = self.view
        self.pricer = Pricer(view, self.comm)
        cols = seed_columns(view, self.comm)
        if self.start is not None:
            cols.extend(allocation_columns(view, self.start, self.comm))
        big = 10.0 * float(np.abs(cols.cost).max() if len(cols.cost) else 1.0) * max(1, view.S) + 1.0
        self.master = Master(view, big, self.threads)
        self.master.add(cols)

    def run(self, deadline: float, max_rounds: int = MAX_CG_ROUNDS) -> None:
        """Rounds of master solve and pricing until the LP is proven optimal (or infeasible), ``max_rounds``
        more rounds are done, or ``deadline`` (a ``time.perf_counter()`` value) passes."""
        view = self.view
        for _ in range(max_rounds):
            if self.converged or self.infeasible:
                return
            solved = self.master.solve(deadline - time.perf_counter())
            if solved is None:
                return
            self.rounds += 1
            value, sigma, p, artificial = solved
            self.lp_value = value
            before = self.pricer.state()
            priced = self.pricer.price(p, deadline)
            if priced is None:
                return
            if not np.isfinite(priced.bound).all():  # a job with no vector it can run on
                self.infeasible = True
                return
            bound = float(priced.bound.sum() - p @ view.counts)
            if bound > self.best:
                self.best, self.best_p = bound, p
            self.exact_jobs = int(priced.exact.sum())
            negative = priced.value - sigma < -REDUCED_TOL * np.maximum(1.0, np.abs(priced.value))
            if not negative.any():
                if priced.exact.all():
                    # no column of any job prices out: the master's optimum is the LP's (with its
                    # artificial columns: when one is in use, the LP is infeasible if the duals prove it)
                    self.converged, self.artificial = True, artificial
                    self.infeasible = artificial and infeasibility_certificate(view, p)
                    return
                if self.pricer.state() == before:
                    return  # undecided jobs and no work left to decide them: the Lagrangian bound stands
                continue  # the same master again: the pricing resumes its branching where it stopped
            self.master.add(Columns(np.flatnonzero(negative), priced.vec[negative], priced.cost[negative]))

    def integer(self, deadline: float, start: np.ndarray | None = None, gap: float = 1e-6,
                max_nodes: int = 10_000) -> np.ndarray | None:
        """The configuration ILP over the master's columns (price-and-branch): the best allocation
        HiGHS finds within ``max_nodes`` branch-and-bound nodes (a work limit) or by ``deadline``,
        from ``start`` (an allocation; its columns are added), or ``None``."""
        cols = self.master.columns
        if start is not None:
            cols = _unique(_joined(cols, allocation_columns(self.view, start, self.comm)))
        return restricted_ilp(self.view, cols, self.view.counts, deadline, start, gap, max_nodes, self.threads)

    def rounded(self, deadline: float) -> np.ndarray | None:
        """The master's LP solution rounded: a job whose column is integral keeps it, and the few
        others (a basic solution has at most G of them: one per capacity row) get theirs by the
        restricted ILP over their own columns and the capacity left; ``None`` when that has none."""
        view = self.view
        h = self.master.highs
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        value = np.array(h.getSolution().col_value)[view.S:]
        cols = self.master.columns
        whole = value > 1 - 1e-9
        fixed = np.zeros(view.S, dtype=bool)
        fixed[cols.job[whole]] = True
        x = np.zeros((view.S, view.G), dtype=np.int64)
        x[cols.job[whole]] = cols.vec[whole]
        rest = ~fixed[cols.job] & (value > 1e-9)
        left = view.counts - x.sum(axis=0)
        if not rest.any():
            return x if fixed.all() and (left >= 0).all() else None
        # the unfixed jobs choose among all their columns (not only the LP's), renumbered 0..m-1
        loose = np.flatnonzero(~fixed)
        mine = np.isin(cols.job, loose)
        sub = Columns(np.searchsorted(loose, cols.job[mine]), cols.vec[mine], cols.cost[mine])
        part = restricted_ilp(subview(view, loose), sub, left, deadline, None, 1e-9, 10_000, self.threads)
        if part is None:
            return None
        x[loose] = part
        return x

    def result(self) -> BoundResult:
        """What the run proved so far."""
        cols = len(self.master.columns.job)
        if self.infeasible:
            return BoundResult("infeasible", None, None, self.rounds, cols, self.exact_jobs,
                               "the configuration LP is infeasible: no placement exists")
        if self.best_p is None:
            return BoundResult("time-limit-no-solution", None, self.lp_value, self.rounds, cols, self.exact_jobs,
                               "time limit before the first bound")
        if self.converged and not self.artificial:
            return BoundResult("optimal", self.best, self.lp_value, self.rounds, cols, self.exact_jobs,
                               f"configuration LP by column generation with exact pricing ({self.rounds} rounds, {cols:,} columns)")
        undecided = self.view.S - self.exact_jobs
        why = (" (its master still uses an artificial column)" if self.artificial
               else f" ({undecided:,} jobs priced by their interval bounds)" if undecided else "")
        return BoundResult("bound", self.best, self.lp_value, self.rounds, cols, self.exact_jobs,
                           f"Lagrangian bound after {self.rounds} column-generation rounds ({cols:,} columns); the LP is not "
                           "proven optimal" + why)


def configuration_bound(view: HeteroView, comm: str, time_limit: float, start: float | None = None,
                        allocation: np.ndarray | None = None, threads: int = 1) -> BoundResult:
    """The configuration LP's value (proven: every job priced exactly, no column left), or the best
    Lagrangian bound found by column generation within ``time_limit`` seconds from ``start``."""
    start = time.perf_counter() if start is None else start
    cg = ColumnGeneration(view, comm, allocation, threads)
    cg.run(start + time_limit)
    return cg.result()


__all__ = ["BoundResult", "ColumnGeneration", "Columns", "bounded_count", "bounded_vectors", "configuration_bound"]


def lp_relaxation(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """The configuration ILP's LP relaxation by column generation with exact pricing (:mod:`.bound`),
    or, when the time limit stops it first, the best Lagrangian bound it proved (status ``feasible``).

    The columns are built as arrays and the master solved by HiGHS directly; the pricing covers
    every vector within each job's size range (the LP of :func:`.formulation.build_model`, which a test checks).
    Everything, view included, stops at ``solve_options.time_limit``: then, before a first bound,
    none (``time-limit-no-solution``).
    """
    start = time.perf_counter()
    view = hetero_view(instance)
    result = configuration_bound(view, options["comm"], solve_options.time_limit, start)
    status = {"optimal": "optimal", "bound": "feasible", "infeasible": "infeasible"}.get(result.status, "time-limit-no-solution")
    value = result.bound if status in ("optimal", "feasible") else None
    solver = "highs (configuration LP, column generation)" if result.status == "optimal" else "highs (Lagrangian bound, column generation)"
    return SolveReport(status=status, objective=value, bound=value, sense="min", solver=solver,
                       solver_version=highspy_version(), options={"time_limit": solve_options.time_limit},
                       build_s=0.0, solve_s=time.perf_counter() - start, message=result.message)
