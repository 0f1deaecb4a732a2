"""Planning many jobs at once on the servers' free capacity (our design, issue 32): a column MILP,
packing onto servers, and single-job re-plans.  Used offline by ``--method exact`` (:mod:`.exact`) and
online by ``--method replan`` (:mod:`.replan`).

1. **Plan** (:func:`column_model`, :func:`solve_columns`): every job picks at most one *column*, a
   run of consecutive slots at a constant worker count ending in a completion slot, worth the job's
   utility there; capacity is pooled over each pool's servers per slot and resource, with level rows
   (a server hosts at most ``floor(c / delta)`` tasks of demand ``delta`` or more).  HiGHS solves the
   LP relaxation, adding capacity rows as they are violated; its optimum is most often integral on
   the Philly instances (then it is the MILP's), else it is rounded, and a MILP over the jobs it
   splits replaces the rounding when that MILP is small.  Columns restrict the problem (no pauses,
   one count per job): a plan, not a bound.
2. **Pack** (:func:`pack`): slot by slot, the planned counts are placed on servers (largest tasks
   first, best fit); a job that does not fit whole is taken out and re-planned alone on what is left
   by OASiS's exact single-job subroutine at a constant tiny price (:func:`insert`, which is
   :func:`.subroutine.best_schedule`: the earliest completion on the free servers).

Everything is deterministic: HiGHS runs on one thread with a fixed seed, the MILP with a node limit,
and the rounding and packing follow fixed orders (the wall clock is only the safety stop, counted in
:attr:`State.cut_short`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np
from scipy import sparse

from ...clock import past
from ...solvers.highs_lp import INF, use_threads
from ...tolerances import FIT_TOL
from ..pricing import PricedPool
from ..rounding import ceil
from .decision import worker_slots_needed
from .online import SlotRun
from .subroutine import best_schedule
from .view import OasisView, TaskCounts, fit_counts

#: Worker counts a job's columns may use: its most, its fewest, and a few between.
COUNTS_PER_JOB = 3
#: Levels per (pool, resource) of the level rows.
MAX_LEVELS = 6
#: Completion slots after the earliest that all get a column (later ones are thinned, :func:`completion_offsets`).
DENSE_SLOTS = 32
#: A level row is kept only where the servers hold this share fewer tasks than the pooled row allows.
LEVEL_GAIN = 0.01
#: Rounds of adding violated rows (each round adds every row the last solution breaks).
MAX_ROUNDS = 50
#: Most jobs the LP may split for the MILP over their columns to replace the rounding.
SPLIT_MILP = 30
#: Most coefficients in the split jobs' columns for that MILP.
MILP_NONZEROS = 50_000
#: Node limit of every column MILP (a work limit, so the answer does not depend on the machine's load).
MIP_NODES = 200
#: A column value within this of 0 or 1 counts as integral in the LP relaxation's solution.
INTEGRAL = 1e-6
#: Price of one unit of demand in the single-job re-plans: small enough never to outweigh a utility,
#: positive so that among equal completions the DP takes the fewest tasks.
TINY_PRICE = 1e-9


#: A job's run: (first slot, completion slot, workers per slot, workers in the completion slot).
Run = tuple[int, int, int, int]


@dataclass
class State:
    """An incumbent: per job its worker and PS counts per server and slot, and the loads they make."""

    view: OasisView
    work: np.ndarray                         # worker-slots each job needs (the checker's, whole)
    worker_load: np.ndarray                  # (H, R, T)
    ps_load: np.ndarray                      # (K, R, T)
    workers: dict[int, TaskCounts]
    ps: dict[int, TaskCounts]
    completion: dict[int, int]
    #: steps the deadline stopped early (a MILP at its time limit, a loop not finished)
    cut_short: int = 0

    @classmethod
    def empty(cls, view: OasisView) -> State:
        R, T = len(view.resources), view.slots
        work = np.array([worker_slots_needed(j) for j in view.jobs], dtype=np.int64)
        return cls(view, work, np.zeros((view.H, R, T)), np.zeros((view.K, R, T)), {}, {}, {})

    def value(self) -> float:
        return float(sum(self.view.jobs[i].value(t) for i, t in self.completion.items()))

    def worker_free(self) -> np.ndarray:
        return self.view.worker_capacity[:, :, None] - self.worker_load

    def ps_free(self) -> np.ndarray:
        return self.view.ps_capacity[:, :, None] - self.ps_load

    def add(self, i: int, workers: TaskCounts, ps: TaskCounts, completion: int) -> None:
        job = self.view.jobs[i]
        for counts, load, demand in ((workers, self.worker_load, job.worker), (ps, self.ps_load, job.ps)):
            server, slot, count = counts.coo()
            load[server, :, slot] += count[:, None] * demand[None, :]  # (server, slot) pairs are distinct
        self.workers[i], self.ps[i], self.completion[i] = workers, ps, completion

    def remove(self, i: int) -> None:
        job = self.view.jobs[i]
        for counts, load, demand in ((self.workers.pop(i), self.worker_load, job.worker), (self.ps.pop(i), self.ps_load, job.ps)):
            server, slot, count = counts.coo()
            load[server, :, slot] -= count[:, None] * demand[None, :]
        del self.completion[i]

    def outcome(self) -> SlotRun:
        return SlotRun(dict(self.workers), dict(self.ps), dict(self.completion), sorted(self.completion))


# ---- the column model ----------------------------------------------------------------------------

@dataclass
class Columns:
    """Candidate runs: per column its job (view index), worker count, first and completion slot."""

    job: np.ndarray
    count: np.ndarray
    first: np.ndarray
    last: np.ndarray
    value: np.ndarray
    tail: np.ndarray   # workers in the completion slot (the rest of the work; at least lo)


def completion_offsets(n: int) -> np.ndarray:
    """Which of ``n`` completion slots after the earliest get a column: the first :data:`DENSE_SLOTS`, then
    four per doubling of the delay (32, 40, 48, 56, 64, 80, ...), so a long horizon costs its logarithm."""
    o = np.arange(n)
    step = np.left_shift(1, np.maximum(np.floor(np.log2(np.maximum(o, 1))).astype(int) - 2, 0))
    return o[(o < DENSE_SLOTS) | (o % step == 0)]


def job_columns(view: OasisView, jobs: list[int], work: np.ndarray, not_before: int = 0) -> Columns:
    """The runs of ``jobs`` from slot ``not_before`` on: a few worker counts, each at the completion slots
    of :func:`completion_offsets` from the earliest the count allows (positive utility only); capacity is
    left to the rows."""
    T = view.slots
    out: dict[str, list[Any]] = {k: [] for k in ("job", "count", "first", "last", "value", "tail")}
    for i in jobs:
        job = view.jobs[i]
        if not job.runnable or work[i] <= 0:
            continue
        hi = job.hi
        counts = np.unique(np.linspace(job.lo, hi, COUNTS_PER_JOB).round().astype(int)) if hi > job.lo else np.array([hi])
        f = np.asarray(job.value(np.arange(job.arrival, T)), dtype=float)
        begin = max(job.arrival, not_before)
        for y in counts[::-1]:
            d = -(-int(work[i]) // int(y))
            tail = max(int(work[i]) - (d - 1) * int(y), job.lo)
            last = begin + d - 1 + completion_offsets(max(T - (begin + d - 1), 0))
            value = f[last - job.arrival]
            keep = value > 0
            if not keep.any():
                continue
            last = last[keep]
            out["job"].append(np.full(last.size, i))
            out["count"].append(np.full(last.size, y))
            out["first"].append(last - d + 1)
            out["last"].append(last)
            out["value"].append(value[keep])
            out["tail"].append(np.full(last.size, tail))
    cat = {k: (np.concatenate(v) if v else np.zeros(0, dtype=float if k == "value" else np.int64)) for k, v in out.items()}
    return Columns(**cat)


def column_model(view: OasisView, cols: Columns, free_w: np.ndarray,
                 free_p: np.ndarray) -> tuple[np.ndarray, sparse.csr_matrix, np.ndarray, int]:
    """The set-packing MILP of the module docstring on ``cols`` and the free capacity ``(servers, R, T)``:
    ``(cost, A, row_hi, job_rows)``, ``max cost x`` s.t. ``A x <= row_hi`` over binary ``x``, the first
    ``job_rows`` rows one per job."""
    n = cols.job.size
    span = cols.last - cols.first + 1
    entry_col = np.repeat(np.arange(n), span)
    start = np.concatenate([[0], np.cumsum(span)[:-1]])
    entry_slot = cols.first[entry_col] + np.arange(entry_col.size) - start[entry_col]
    entry_y = np.where(entry_slot == cols.last[entry_col], cols.tail[entry_col], cols.count[entry_col])
    jobs = view.jobs
    # PSs of every entry: OasisJob.ps_needed on arrays (rule (6), ps.min, never more than the workers)
    b, B, ps_min = (np.array([getattr(jobs[i], a) for i in cols.job], dtype=float)[entry_col] for a in ("b", "B", "ps_min"))
    entry_z = np.where(entry_y > 0, np.minimum(np.maximum(ceil(entry_y * b / B), ps_min), entry_y), 0).astype(np.int64)
    # one row per job: at most one column
    uniq, job_row = np.unique(cols.job, return_inverse=True)
    rows = [job_row]
    cols_i = [np.arange(n)]
    vals = [np.ones(n)]
    hi = [np.ones(uniq.size)]
    base = uniq.size
    T = view.slots
    for counts, free, demand_of in ((entry_y, free_w, lambda i: jobs[i].worker), (entry_z, free_p, lambda i: jobs[i].ps)):
        demand = np.array([demand_of(int(i)) for i in cols.job]).reshape(n, len(view.resources))[entry_col]
        for r in range(len(view.resources)):
            d = demand[:, r]
            use = np.flatnonzero(d > 0)
            if not use.size:
                continue
            pooled = free[:, r, :].sum(axis=0)
            rhs_all = [(pooled, d[use] * counts[use], use)]
            for delta in _levels(d[use]):
                fits = np.floor(free[:, r, :] / delta + FIT_TOL).clip(min=0).sum(axis=0)
                if fits.sum() >= (1 - LEVEL_GAIN) * pooled.clip(min=0).sum() / delta:
                    continue  # servers hold about as many such tasks as the pooled row allows: no gain
                heavy = use[d[use] >= delta * (1 - FIT_TOL)]
                rhs_all.append((fits, counts[heavy].astype(float), heavy))
            for rhs, coef, members in rhs_all:
                # a row binds only if the most its slot can get (each job at its heaviest column) exceeds it
                most = np.zeros(T)
                keys = cols.job[entry_col[members]] * T + entry_slot[members]
                order = np.lexsort((-coef, keys))  # by (job, slot), heaviest first
                first = np.unique(keys[order], return_index=True)[1]
                np.add.at(most, keys[order][first] % T, coef[order][first])
                binding = most > rhs + FIT_TOL
                keep = binding[entry_slot[members]]
                slot_row = np.cumsum(binding) - 1
                rows.append(base + slot_row[entry_slot[members][keep]])
                cols_i.append(entry_col[members][keep])
                vals.append(coef[keep])
                hi.append(np.maximum(rhs[binding], 0.0))
                base += int(binding.sum())
    A = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols_i))), shape=(base, n))
    return cols.value.astype(float), A, np.concatenate(hi), uniq.size


def _levels(values: np.ndarray) -> np.ndarray:
    levels = np.unique(values[values > 0])
    if levels.size > MAX_LEVELS:
        levels = levels[np.unique(np.linspace(0, levels.size - 1, MAX_LEVELS).round().astype(int))]
    return levels


def solve_columns(cost: np.ndarray, A: sparse.csr_matrix, row_hi: np.ndarray, job_rows: int, deadline: float,
                  seed: int) -> tuple[np.ndarray, bool]:
    """``max cost x`` s.t. ``A x <= row_hi``, ``x`` binary, the first ``job_rows`` rows one per job.

    The LP relaxation by HiGHS, with the capacity rows added as its solution violates them (most never
    bind, and a long horizon has thousands).  An integral optimum is the MILP's.  Else the columns are
    rounded: the whole ones, then the split jobs' columns by decreasing LP value, then any column by
    decreasing utility, each taken when its job has none yet and it breaks no row; and when the LP
    splits at most :data:`SPLIT_MILP` jobs, HiGHS's MILP over their columns (the rest fixed, from the
    rounding, within :data:`MIP_NODES` nodes) replaces the rounding where it is better (and is small:
    at most :data:`MILP_NONZEROS` coefficients in those columns; HiGHS's root alone takes seconds on
    the long runs of a 300-slot horizon, for little gain).  Returns the chosen columns and whether the
    deadline stopped a solve."""
    n = cost.size
    if n == 0:
        return np.zeros(0, dtype=bool), False
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", int(seed))
    h.addVars(n, np.zeros(n), np.ones(n))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), cost.astype(float))
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    active = np.zeros(A.shape[0], dtype=bool)
    x, late = _with_rows(h, A, row_hi, active, np.arange(job_rows), deadline)
    if x is None:
        return np.zeros(n, dtype=bool), late
    if not late and np.all((x < INTEGRAL) | (x > 1 - INTEGRAL)):
        return x > 0.5, late
    col_job = A[:job_rows].tocsc().indices
    A_cols = A.tocsc()
    chosen = _greedy(A_cols, row_hi, col_job, np.zeros(n, dtype=bool), np.flatnonzero(x > 1 - INTEGRAL))
    chosen = _greedy(A_cols, row_hi, col_job, chosen, np.lexsort((np.arange(n), -x))[: int(np.count_nonzero(x > INTEGRAL))])
    split = np.unique(col_job[(x > INTEGRAL) & (x < 1 - INTEGRAL)])
    free = np.isin(col_job, split)
    if not late and split.size <= SPLIT_MILP and np.diff(A_cols.indptr)[free].sum() <= MILP_NONZEROS:
        fixed = np.flatnonzero(~free)
        h.changeColsBounds(fixed.size, fixed.astype(np.int32), chosen[fixed].astype(float), chosen[fixed].astype(float))
        h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.ones(n, dtype=np.uint8))
        h.setOptionValue("mip_max_nodes", MIP_NODES)
        h.setOptionValue("mip_rel_gap", 1e-6)
        start = highspy.HighsSolution()
        start.col_value = chosen.astype(float)
        start.value_valid = True
        h.setSolution(start)
        y, late = _with_rows(h, A, row_hi, active, np.zeros(0, dtype=np.int64), deadline)
        if y is not None and not late and cost @ (y > 0.5) > cost @ chosen:
            chosen = y > 0.5
    return _greedy(A_cols, row_hi, col_job, chosen, np.lexsort((np.arange(n), -cost))), late


def _with_rows(h: highspy.Highs, A: sparse.csr_matrix, row_hi: np.ndarray, active: np.ndarray, rows: np.ndarray,
               deadline: float) -> tuple[np.ndarray | None, bool]:
    """Add ``rows``, solve, add the inactive rows the solution breaks, until it breaks none (or
    :data:`MAX_ROUNDS`): the solution (None if HiGHS has none) and whether the deadline stopped it."""
    late = False
    for _round in range(MAX_ROUNDS):
        if rows.size:
            active[rows] = True
            _add_rows(h, A, row_hi, rows)
        h.setOptionValue("time_limit", max(deadline - time.perf_counter(), 0.01))
        use_threads(h, 1)
        h.run()
        late = late or h.getModelStatus() in (highspy.HighsModelStatus.kTimeLimit, highspy.HighsModelStatus.kInterrupt)
        if h.getInfo().primal_solution_status != 2:
            return None, late
        x = np.asarray(h.getSolution().col_value)
        rows = np.flatnonzero(~active & (A @ x > row_hi + FIT_TOL))
        if not rows.size or late:
            return x, late
    return x, late


def _greedy(A: sparse.csc_matrix, row_hi: np.ndarray, col_job: np.ndarray, chosen: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``chosen`` with the columns of ``order`` added one by one when their job has no column yet and
    no row goes over its bound (every row, added or not: the result is a point of the MILP)."""
    chosen = chosen.copy()
    load = A @ chosen.astype(float)
    taken = np.zeros(int(col_job.max()) + 1 if col_job.size else 0, dtype=bool)
    taken[col_job[chosen]] = True
    for c in order:
        if chosen[c] or taken[col_job[c]]:
            continue
        rows = A.indices[A.indptr[c]: A.indptr[c + 1]]
        coef = A.data[A.indptr[c]: A.indptr[c + 1]]
        if np.all(load[rows] + coef <= row_hi[rows] + FIT_TOL):
            load[rows] += coef
            chosen[c] = True
            taken[col_job[c]] = True
    return chosen


def _add_rows(h: highspy.Highs, rows: sparse.csr_matrix, row_hi: np.ndarray, which: np.ndarray) -> None:
    sub = rows[which]
    h.addRows(which.size, np.full(which.size, -INF), row_hi[which].astype(float), sub.nnz, sub.indptr[:-1].astype(np.int32),
              sub.indices.astype(np.int32), sub.data.astype(float))


# ---- packing onto servers -----------------------------------------------------------------------

def _place(count: int, fits: np.ndarray) -> np.ndarray:
    """``count`` tasks on the servers with room, fullest first (best fit), index breaking ties."""
    order = np.lexsort((np.arange(fits.size), fits))
    order = order[fits[order] > 0]
    caps = fits[order]
    taken = np.minimum(caps, np.maximum(count - np.concatenate([[0], np.cumsum(caps)[:-1]]), 0))
    out = np.zeros(fits.size, np.int64)
    out[order] = taken
    return out


def pack(state: State, runs: Mapping[int, Run]) -> list[int]:
    """Place ``runs`` (job -> (first slot, completion slot, workers, workers in the completion slot)) on
    the servers, slot by slot, largest tasks first; returns the jobs that did not fit whole (their tasks
    are not placed)."""
    view = state.view
    T = view.slots
    by_slot: dict[int, list[int]] = {}
    for i, (first, last, _, _) in runs.items():
        for t in range(first, last + 1):
            by_slot.setdefault(t, []).append(i)
    size = {i: float(np.max(view.jobs[i].worker / np.maximum(view.worker_capacity.max(axis=0), FIT_TOL))) for i in runs}
    placed: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]] = {i: {} for i in runs}
    failed: set[int] = set()
    free_w = state.worker_free()
    free_p = state.ps_free()
    for t in range(T):
        for i in sorted(by_slot.get(t, []), key=lambda i: (-size[i] * runs[i][2], i)):
            if i in failed:
                continue
            job = view.jobs[i]
            first, last, y, tail = runs[i]
            want = tail if t == last else y
            wfit = np.minimum(np.where(job.worker_ok, fit_counts(free_w[:, :, t], job.worker), 0), want)
            z = int(job.ps_needed(want))
            pfit = np.minimum(np.where(job.ps_ok, fit_counts(free_p[:, :, t], job.ps), 0), z)
            if wfit.sum() < want or pfit.sum() < z:
                failed.add(i)
                continue
            w = _place(want, wfit)
            p = _place(z, pfit)
            free_w[:, :, t] -= w[:, None] * job.worker
            free_p[:, :, t] -= p[:, None] * job.ps
            placed[i][t] = (w, p)
    for i in failed:
        for t, (w, p) in placed[i].items():
            free_w[:, :, t] += w[:, None] * view.jobs[i].worker
            free_p[:, :, t] += p[:, None] * view.jobs[i].ps
    for i, slots in placed.items():
        if i in failed:
            continue
        workers, ps = TaskCounts(view.H, T), TaskCounts(view.K, T)
        for t, (w, p) in slots.items():
            workers.put(t, w)
            ps.put(t, p)
        state.add(i, workers, ps, runs[i][1])
    return sorted(failed)


def insert(state: State, order: list[int], deadline: float, not_before: int = 0) -> int:
    """Plan each job of ``order`` (not in the incumbent) alone on what is left from slot ``not_before``
    on: OASiS's single-job subroutine at a constant tiny price, i.e. its earliest completion on the free
    servers; returns how many were admitted."""
    view = state.view
    pools = []
    for capacity, load in ((view.worker_capacity, state.worker_load), (view.ps_capacity, state.ps_load)):
        pool = PricedPool(capacity, view.slots, TINY_PRICE, np.full(len(view.resources), TINY_PRICE))
        pool.load = load.copy()
        pool.load[:, :, :not_before] = capacity[:, :, None]  # the past is full
        pools.append(pool)
    workers, pss = pools
    added = 0
    for i in order:
        if past(deadline):
            state.cut_short += 1
            break
        job = view.jobs[i]
        if i in state.completion or not job.runnable:
            continue
        plan = best_schedule(job, workers, pss, "worker-slots")
        if plan.completion is None:
            continue
        done = plan.workers.total()
        if done < state.work[i]:
            continue
        state.add(i, plan.workers, plan.ps, plan.workers.used_slots()[-1])
        workers.reserve_counts(plan.workers, job.worker)  # a constant price: only the load changes
        pss.reserve_counts(plan.ps, job.ps)
        added += 1
    return added


def density_order(view: OasisView, jobs: list[int], work: np.ndarray) -> list[int]:
    """Jobs by best utility per worker-slot, highest first (index breaking ties)."""
    best = np.array([float(view.jobs[i].value(view.jobs[i].arrival + view.jobs[i].min_duration - 1)) for i in jobs])
    per = best / np.maximum(work[jobs], 1)
    return [jobs[k] for k in np.lexsort((np.array(jobs), -per))]


def plan_jobs(state: State, jobs: list[int], deadline: float, seed: int, not_before: int = 0, retry_rejected: bool = True) -> None:
    """Plan ``jobs`` (none of them in the incumbent) on the free capacity from slot ``not_before`` on:
    the column model (:func:`solve_columns`), pack, re-plan alone what did not fit, then (with
    ``retry_rejected``) every job the plan left out."""
    view = state.view
    free_w, free_p = state.worker_free(), state.ps_free()
    cols = job_columns(view, jobs, state.work, not_before)
    cost, A, hi, job_rows = column_model(view, cols, free_w, free_p)
    chosen, late = solve_columns(cost, A, hi, job_rows, deadline, seed)
    state.cut_short += late
    runs = {int(cols.job[c]): (int(cols.first[c]), int(cols.last[c]), int(cols.count[c]), int(cols.tail[c]))
            for c in np.flatnonzero(chosen)}
    failed = pack(state, runs)
    insert(state, density_order(view, failed, state.work), deadline, not_before)
    if retry_rejected:
        rejected = [i for i in jobs if i not in state.completion and i not in failed]
        insert(state, density_order(view, rejected, state.work), deadline, not_before)
