"""Exact placements in the true interference world (spec 004 section 6a), and the exact method's
anytime search beyond them.

* :func:`exhaustive_any` — the optimum of a static batch under the problem option ``starts=any``
  (the default): every placement *and* every integer start interval the checker accepts, within a
  proven horizon of useful delays (our design; see its docstring for the bound and its proof).
* :func:`exhaustive` — the optimum of a static batch under ``starts=simultaneous`` (every job
  starts in interval 0, spec 6a): every job's worker and PS count vectors over the servers, their Cartesian
  product built job by job with capacity pruning after each job and server-permutation
  canonicalization (identical servers: a placement is kept once, its servers sorted by their
  column of counts), then the average JCT of every survivor by a batched event-driven
  simulation.  Optimal by exhaustion over placements that start every job at interval 0.
* :func:`anytime_search` — beyond the exhaustive search's size: the best of a fixed list of
  heuristic runs with the throughput LP's bound (our design, issue 32).

The primitives (count vectors, a job's placements, its standalone speed) are :mod:`.placements`';
the myopic reference is :class:`~.baselines.Myopic`.
"""

from __future__ import annotations

import dataclasses as dc
import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from ...clock import offer, past
from ...errors import OptionError
from ...tolerances import DONE_TOL, capacity_limit
from .baselines import make_heuristic
from .bound import bound_of_view
from .marginal import Marginal
from .options import HOLD, HOLD_SHARE
from .placements import CHUNK, empty_product, extend_product, job_options, min_intervals, monotone_world
from .runs import HOLD_ANY_TIME, run_outcome
from .view import HarmonyView
from .world import speeds

#: joint placements we agree to enumerate before pruning (about a minute of numpy at worst)
MAX_PRODUCT = 2e8
#: starts=any: (placements after symmetry) x (start vectors within the proven horizon) we agree to simulate
MAX_EVALUATIONS = 5e7
#: starts=any: raw joint placements (not pruned by joint capacity, so all are kept in memory after symmetry)
MAX_ANY_PRODUCT = 5e6
















@dataclass(frozen=True)
class ExactResult:
    """The best static placement (counts (J, M)), its average JCT (intervals), and search statistics."""

    w: np.ndarray | None
    p: np.ndarray | None
    avg_jct: float | None
    product: int
    canonical: int
    complete: bool
    elapsed_s: float


def search_size(view: HarmonyView) -> int:
    """The size of the raw Cartesian product (before pruning and symmetry)."""
    return int(np.prod([len(job_options(int(view.jobs.W[i]), int(view.jobs.P[i]), view.M, capacity_limit(view.capacity),
                                        view.worker_demand[i], view.ps_demand[i], slack=0.0)[0]) for i in range(view.J)], dtype=float))


def exhaustive(view: HarmonyView, time_limit: float) -> ExactResult:
    """The optimal static placement by enumeration (see the module docstring).

    Raises
    ------
    OptionError
        When the batch is not static, servers differ, or the product exceeds :data:`MAX_PRODUCT`.
    """
    start = time.perf_counter()
    w, p, size, complete = static_placements(view, time_limit)
    if not complete or len(w) == 0:
        return ExactResult(None, None, None, size, len(w), complete, time.perf_counter() - start)
    best_val, best_idx = math.inf, -1
    for lo in range(0, len(w), CHUNK):
        jct = static_jct(view, w[lo:lo + CHUNK], p[lo:lo + CHUNK]).mean(axis=1)
        k = int(np.argmin(jct))
        if jct[k] < best_val - 1e-12:
            best_val, best_idx = float(jct[k]), lo + k
        if time.perf_counter() - start > time_limit and lo + CHUNK < len(w):
            return ExactResult(w[best_idx], p[best_idx], best_val, size, len(w), False, time.perf_counter() - start)
    return ExactResult(w[best_idx], p[best_idx], best_val, size, len(w), True, time.perf_counter() - start)


def static_placements(view: HarmonyView, time_limit: float) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """Every placement of a static batch that fits, one per server permutation class.

    Returns ``(w, p, raw_product, complete)`` with ``w``, ``p`` of shape (B, J, M).
    """
    if not view.static:
        raise OptionError("exact search needs a static batch (every job arriving in interval 0); "
                          "for online traces use --method myopic (the myopic-optimal reference)", field="--method")
    if not np.allclose(view.capacity, view.capacity[0]):
        raise OptionError("exact search canonicalizes over identical servers; this cluster's servers differ", field="--method")
    size = search_size(view)
    if size > MAX_PRODUCT:
        raise OptionError(f"{size:.3g} joint placements exceed the exact search's limit ({MAX_PRODUCT:.0g}); "
                          "spec 6a sizes: M <= 4 servers, N <= 4 jobs, W <= 4, P <= 2 (use --method surrogate beyond)",
                          field="--method")
    start = time.perf_counter()
    w, p, used = empty_product(view.M, view.capacity.shape[1])
    limit = capacity_limit(view.capacity)   # the checker's limits: exactly the placements it accepts
    for i in range(view.J):
        ow, op = job_options(int(view.jobs.W[i]), int(view.jobs.P[i]), view.M, limit, view.worker_demand[i], view.ps_demand[i], slack=0.0)
        w, p, used = _canonical(*extend_product(w, p, used, ow, op, view.worker_demand[i], view.ps_demand[i], limit, slack=0.0))
        if time.perf_counter() - start > time_limit:
            return w, p, size, False
    return w, p, size, True






def _canonical(w: np.ndarray, p: np.ndarray, used: np.ndarray):
    """Sort each placement's servers by their column of counts and drop duplicates."""
    J = w.shape[1]
    base = int(max(w.max(initial=0), p.max(initial=0))) + 1
    key = np.zeros(w.shape[0:1] + w.shape[2:], np.int64)
    for j in range(J):
        key = key * base * base + w[:, j, :] * base + p[:, j, :]
    order = np.argsort(-key, axis=1, kind="stable")
    rows = np.arange(len(w))[:, None]
    key = key[rows, order]
    w = np.take_along_axis(w, order[:, None, :], axis=2)
    p = np.take_along_axis(p, order[:, None, :], axis=2)
    used = used[rows, order]
    _, first = np.unique(key, axis=0, return_index=True)
    first.sort()
    return w[first], p[first], used[first]


def static_jct(view: HarmonyView, w: np.ndarray, p: np.ndarray) -> np.ndarray:
    """JCT in intervals of every job when all start at time 0 with placements ``(B, J, M)``."""
    B, J = w.shape[:2]
    remaining = np.broadcast_to(view.samples, (B, J)).astype(float).copy()
    alive = np.ones((B, J), bool)
    finish = np.zeros((B, J))
    t = np.zeros(B)
    for _ in range(J):
        rows = alive.any(axis=1)
        if not rows.any():
            break
        a = alive[rows]
        v = speeds(view.world, view.jobs, w[rows] * a[..., None], p[rows] * a[..., None])
        with np.errstate(divide="ignore", invalid="ignore"):
            dt_all = np.where(a, remaining[rows] / v, np.inf)
        dt = dt_all.min(axis=1)
        t[rows] += dt
        remaining[rows] = np.where(a, remaining[rows] - v * dt[:, None], 0.0)
        done = a & (dt_all <= dt[:, None] * (1 + 1e-12))
        sub_finish = finish[rows]
        sub_finish[done] = np.broadcast_to(t[rows][:, None], done.shape)[done]
        finish[rows] = sub_finish
        a = a & ~done
        alive[rows] = a
    return finish / view.slot_s








# --- starts = any: placements and start intervals --------------------------------------------------------


@dataclass(frozen=True)
class AnyResult:
    """The best (start vector, placement) of a static batch under ``starts=any``; ``infeasible`` is
    the reason when no schedule exists (a job fits no empty cluster), else ``None``."""

    start: np.ndarray | None
    w: np.ndarray | None
    p: np.ndarray | None
    avg_jct: float | None
    placements: int
    start_vectors: int
    horizon: int
    complete: bool
    elapsed_s: float
    infeasible: str | None = None
    bound: float | None = None   # proven lower bound on the optimum (= avg_jct when complete)






def sequential_jct(view: HarmonyView) -> float:
    """Average JCT of one feasible schedule that always exists when every job fits the empty
    cluster: jobs one at a time, shortest first, each at its standalone placement, each starting at
    the first interval boundary at or after its predecessor's finish (the cluster is then empty)."""
    d = np.sort(min_intervals(view))
    t, total = 0.0, 0.0
    for dj in d:
        finish = t + dj
        total += finish
        t = float(math.ceil(finish - 1e-9))
    return total / len(d)


def start_vectors(J: int, budget: int):
    """Every start vector (intervals) with some job at 0 and a total of at most ``budget``, by
    increasing total (then lexicographically): the search order of :func:`exhaustive_any`."""
    for total in range(budget + 1):
        for head in itertools.product(range(total + 1), repeat=J - 1):
            last = total - sum(head)
            if last < 0:
                continue
            vec = (*head, last)
            if min(vec) == 0:
                yield np.array(vec, int)


def _vectors_with_total(J: int, total: int) -> int:
    """How many start vectors with a job at 0 have this total (nonnegative minus all-positive compositions)."""
    return math.comb(total + J - 1, J - 1) - (math.comb(total - 1, J - 1) if total >= 1 else 0)


def speed_table(view: HarmonyView, w: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Speeds of every job (samples/s) on every placement for every set of running jobs, shape
    (2^J, B, J), row ``mask`` for the jobs whose bits are set (speeds depend only on who runs)."""
    J = w.shape[1]
    table = np.zeros((1 << J, *w.shape[:2]))
    for mask in range(1, 1 << J):
        on = ((mask >> np.arange(J)) & 1).astype(bool)
        table[mask] = speeds(view.world, view.jobs, w * on[None, :, None], p * on[None, :, None])
    return table


def staggered_jct(view: HarmonyView, w: np.ndarray, p: np.ndarray, start: np.ndarray,
                  table: np.ndarray | None = None, table_rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """JCT in intervals (B, J) of every placement ``(w, p)`` (B, J, M) when job j starts at interval
    ``start[j]`` (arrival 0), and whether capacity holds at every start (B,), by an event-driven
    simulation (events: a start or a finish; at most 2J per placement).  A job finishing exactly at
    a boundary frees its servers for the jobs starting there (the checker's rule).  ``table``
    (:func:`speed_table` of the full placement array) and ``table_rows`` (which of its rows ``w``,
    ``p`` are) replace the speed evaluations by look-ups."""
    B, J, _M = w.shape
    begin = start.astype(float) * view.slot_s
    samples = np.broadcast_to(view.samples, (B, J))
    remaining = samples.astype(float).copy()
    done = np.zeros((B, J), bool)
    finish = np.full((B, J), np.inf)
    started = np.broadcast_to(begin <= 0, (B, J)).copy()
    t = np.zeros(B)
    ok = _fits_running(view, w, p, started)
    for _ in range(2 * J + 1):
        run = started & ~done
        live = run.any(axis=1) | (~started).any(axis=1)
        if not live.any():
            break
        if table is None:
            v = speeds(view.world, view.jobs, w * run[..., None], p * run[..., None])
        else:   # the same numbers, looked up: row ``table_rows[b]`` of the table for the running set's mask
            v = table[(run * (1 << np.arange(J))).sum(axis=1), table_rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            dt_fin = np.where(run, remaining / v, np.inf).min(axis=1)
        dt_start = np.where(~started, begin - t[:, None], np.inf).min(axis=1)
        dt = np.where(live, np.minimum(dt_fin, dt_start), 0.0)
        remaining = np.where(run, remaining - v * dt[:, None], remaining)
        t = t + dt
        fin = run & (remaining <= DONE_TOL * samples)
        remaining[fin] = 0.0
        finish = np.where(fin, t[:, None], finish)
        done |= fin
        new = ~started & (begin - t[:, None] <= 1e-9 * view.slot_s)
        rows = new.any(axis=1)
        if rows.any():
            t[rows] = np.where(new[rows], begin, np.inf).min(axis=1)   # snap to the boundary exactly
            started |= new
            ok[rows] &= _fits_running(view, w[rows], p[rows], (started & ~done)[rows])
    return finish / view.slot_s, ok


def _fits_running(view: HarmonyView, w: np.ndarray, p: np.ndarray, running: np.ndarray) -> np.ndarray:
    r = running[..., None, None]
    use = (w[..., None] * r * view.worker_demand[None, :, None, :] + p[..., None] * r * view.ps_demand[None, :, None, :]).sum(axis=1)
    return np.all(use <= capacity_limit(view.capacity)[None], axis=(1, 2))


def exhaustive_any(view: HarmonyView, time_limit: float) -> AnyResult:
    """The optimal schedule of a static batch over every placement and start interval (``starts=any``).

    What is searched, and why it is complete (our design, proven here):

    * placements: every job's count vectors that fit an empty server set, their full Cartesian
      product (no joint capacity pruning: jobs that never overlap in time may share a server),
      canonicalized by server permutation (identical servers);
    * start vectors ``s`` (intervals) with ``min(s) = 0``: when every job starts at >= 1, starting
      them all one interval earlier replays the same schedule shifted by one interval (same
      co-runners, same capacity use), and every JCT drops by one;
    * the bound: job j on its placement runs at most at its speed alone on that placement (no
      co-located task speeds a job up: u, s >= 0 and g is increasing on [0, inf)), so it finishes
      no earlier than ``s_j + d_j(placement)``; the JCTs then sum to at least
      ``sum(s) + D(placement)``, ``D = sum_j d_j``.  With ``U`` the best average JCT found so far
      (initially the better of the best simultaneous start and :func:`sequential_jct`, a schedule
      that always exists), a (placement, start vector) with ``sum(s) + D > J*U`` cannot win and is
      skipped; in particular ``sum(s) <= J*U - min D`` (the delay horizon).  Start vectors come by
      increasing ``sum(s)`` and placements by increasing ``D``, so each vector evaluates a prefix of
      the placements and the search stops once no placement is left.
    * every (placement, start vector) is simulated exactly (:func:`staggered_jct`) and kept only when
      capacity holds at every start, as the checker requires (jobs sharing a start interval must fit
      together: a necessary condition checked first, cheaply).
    * stopped by the time limit, the answer is the best found with a proven lower bound:
      ``min(best, (sum(s) + min D) / J)`` with ``s`` the first vector not evaluated.

    Raises
    ------
    OptionError
        When the batch is not static, servers differ, the world is not monotone (the bound needs
        u, s >= 0), the raw product exceeds :data:`MAX_ANY_PRODUCT` or placements x start vectors
        within the bound exceed :data:`MAX_EVALUATIONS`.
    """
    began = time.perf_counter()
    if not view.static:
        raise OptionError("exact search needs a static batch (every job arriving in interval 0); "
                          "for online traces use --method myopic (the myopic-optimal reference)", field="--method")
    if not np.allclose(view.capacity, view.capacity[0]):
        raise OptionError("exact search canonicalizes over identical servers; this cluster's servers differ", field="--method")
    if not monotone_world(view.world):
        raise OptionError("starts=any needs a world where co-location never speeds a job up (u, s >= 0)", field="--set starts")
    J, M = view.J, view.M
    options = []
    for i in range(J):
        ow, op = job_options(int(view.jobs.W[i]), int(view.jobs.P[i]), M, capacity_limit(view.capacity), view.worker_demand[i],
                             view.ps_demand[i], slack=0.0)
        if len(ow) == 0:
            reason = (f"job {view.ids[i]}: {int(view.jobs.W[i])} workers and {int(view.jobs.P[i])} PSs fit no placement "
                      "on the empty cluster")
            return AnyResult(None, None, None, None, 0, 0, 0, True, time.perf_counter() - began, reason)
        options.append((ow, op))
    raw = float(np.prod([len(o[0]) for o in options]))
    if raw > MAX_ANY_PRODUCT:
        raise OptionError(f"{raw:.3g} joint placements (no joint capacity pruning: jobs that never overlap may share servers) "
                          f"exceed the starts=any search's limit ({MAX_ANY_PRODUCT:.0g}); use --set starts=simultaneous "
                          "or fewer jobs/servers", field="--method")
    w, p, used = empty_product(M, view.capacity.shape[1])
    unbounded = np.full_like(view.capacity, np.inf)
    for i, (ow, op) in enumerate(options):
        w, p, used = _canonical(*extend_product(w, p, used, ow, op, view.worker_demand[i], view.ps_demand[i], unbounded))
    # each placement's own bound: job j alone on its placement runs d_j(row) >= d_j intervals
    alone = np.stack([speeds(view.world, view.jobs.take(np.array([j])), w[:, [j]], p[:, [j]])[:, 0] for j in range(J)], axis=1)
    bound = (view.samples / (alone * view.slot_s)).sum(axis=1)
    order = np.argsort(bound, kind="stable")
    w, p, bound = w[order], p[order], bound[order]
    best: tuple[float, np.ndarray | None, int | None] = (math.inf, None, None)
    zero = np.zeros(J, int)
    jct, ok = staggered_jct(view, w, p, zero)
    avg = np.where(ok, jct.mean(axis=1), np.inf)
    if ok.any():
        k = int(np.argmin(avg))
        best = (float(avg[k]), zero, k)
    incumbent = min(best[0], sequential_jct(view))
    room = J * incumbent - bound[0]
    if not math.isfinite(room) or room > MAX_EVALUATIONS:   # every total up to the horizon costs at least one evaluation
        raise OptionError(f"the proven delay bound ({room:.3g} intervals in total) exceeds the exact search's limit "
                          f"({MAX_EVALUATIONS:.0g} evaluations); use --set starts=simultaneous or shorter jobs", field="--method")
    horizon = max(0, int(math.floor(room + 1e-9)))
    evaluations = sum(_vectors_with_total(J, total) * int(np.searchsorted(bound, J * incumbent - total + 1e-9, side="right"))
                      for total in range(1, horizon + 1))
    if evaluations > MAX_EVALUATIONS:
        raise OptionError(f"up to {evaluations:.3g} (placement, start vector) pairs within the proven delay bound "
                          f"({horizon} intervals in total) exceed the exact search's limit ({MAX_EVALUATIONS:.0g}); "
                          "use --set starts=simultaneous, shorter jobs or fewer jobs/servers", field="--method")
    seen = 1
    complete = True
    lower = math.inf   # a proven lower bound on every pair left unevaluated (when the time limit stops the search)
    fit_cache: dict[tuple[bool, ...], np.ndarray] = {}
    # speeds depend only on the running set: 2^J evaluations per placement once, then look-ups (when memory allows)
    table = speed_table(view, w, p) if (1 << J) * len(w) * J <= 2e7 else None

    def together(group: np.ndarray) -> np.ndarray:
        # jobs starting in the same interval run together then: they must fit jointly (a necessary condition)
        key = tuple(bool(x) for x in group)
        if key not in fit_cache:
            fit_cache[key] = _fits_running(view, w, p, np.broadcast_to(group, (len(w), J)))
        return fit_cache[key]

    for vec in start_vectors(J, horizon):
        if not vec.any():
            continue   # evaluated above
        limit = J * min(incumbent, best[0]) - vec.sum() + 1e-9
        n = int(np.searchsorted(bound, limit, side="right"))
        if n == 0:
            break  # vectors come by increasing total: no later one leaves room for any placement either
        if time.perf_counter() - began > time_limit:
            complete = False
            lower = (vec.sum() + bound[0]) / J
            break
        rows = np.ones(n, bool)
        for value in np.unique(vec):
            rows &= together(vec == value)[:n]
        idx = np.flatnonzero(rows)
        seen += 1
        if len(idx) == 0:
            continue
        jct, ok = staggered_jct(view, w[idx], p[idx], vec, table, idx)
        avg = np.where(ok, jct.mean(axis=1), np.inf)
        k = int(np.argmin(avg))
        if avg[k] < best[0] - 1e-12:
            best = (float(avg[k]), vec, int(idx[k]))
    if best[2] is None:   # cannot happen when complete (the sequential schedule is among the candidates)
        return AnyResult(None, None, None, None, len(w), seen, horizon, False, time.perf_counter() - began)
    k = best[2]
    return AnyResult(best[1], w[k], p[k], best[0], len(w), seen, horizon, complete, time.perf_counter() - began,
                     bound=best[0] if complete else min(best[0], lower))


# --- beyond the exhaustive search: anytime ----------------------------------------------------------------

#: share of what is left after the first heuristic run that the throughput LP's bound may take
BOUND_SHARE = 0.5
#: share of the time limit kept for the caller's check of the answer and its writing
CHECK_SHARE = 0.05
#: a heuristic run is started only when at least this multiple of the last run's time is left
RUN_MARGIN = 1.3
#: marginal's coordinate search moves its hold and hold_share by these factors (up, else down) while they improve
STEPS = (1.6, 1.25)
#: the hold_share tried up from 0 (a factor cannot move it)
SHARE_FROM_ZERO = 0.1


@dataclass(frozen=True)
class Trial:
    """One heuristic run of the anytime search: a method in a queue order (marginal with its threshold)."""

    method: str
    order: str
    hold: float = 0.0
    slack: float = 0.0

    def label(self) -> str:
        if self.method != "marginal":
            return f"{self.method} (order={self.order})"
        return f"marginal (order={self.order}, hold={self.hold:g}, hold_share={self.slack:g})"


def anytime_search(view: HarmonyView, options, solve_options) -> tuple:
    """The best answer of a fixed list of heuristic runs, and the throughput LP's bound.

    Our design (issue 32).  In this order, each run only when the time left allows it (a run is
    started when at least :data:`RUN_MARGIN` times the last one's time is left): marginal in shortest-
    first order at ``--set hold``; the throughput LP's bound (:mod:`.bound`) in at most
    :data:`BOUND_SHARE` of the time then left; marginal in arrival order, standalone-first and
    least-interference shortest first; then a coordinate search on marginal's ``hold`` and
    ``hold_share`` in the better of its two orders: each moved up by the first factor of :data:`STEPS`
    while the average JCT improves, else down, in turns until neither moves, then the same with the
    next factor.  Every step depends on the answers only, never on the clock, so a run that completes
    the search gives the same answer on any machine; the caller's message says how far it got.

    Returns ``(best result or None, bound report or None, labels of the runs made, runs skipped for time)``.
    """
    began = time.perf_counter()
    deadline = began + solve_options.time_limit * (1.0 - CHECK_SHARE)
    results: dict[Trial, float | None] = {}
    best: list = []   # [result] of the best run so far
    ran: list[str] = []
    skipped = 0
    last = 0.0

    def run(trial: Trial) -> float | None:
        nonlocal last, skipped
        if trial in results:
            return results[trial]
        left = deadline - time.perf_counter()
        if past(deadline) or left < RUN_MARGIN * last:
            skipped += 1
            return None
        opts = {**options, "order": trial.order}
        t0 = time.perf_counter()
        so = dc.replace(solve_options, time_limit=left)
        if trial.method == "marginal":
            result = run_outcome(view, Marginal(view, trial.hold, trial.slack), trial.label(), opts, so,
                                 defer_max=HOLD_ANY_TIME, skip_quiet=True)
        else:
            result = run_outcome(view, make_heuristic(trial.method, solve_options.seed), trial.label(), opts, so)
        last = time.perf_counter() - t0
        ran.append(trial.label())
        value = results[trial] = result.report.objective if result.decision is not None else None
        if value is not None and (not best or value < best[0].report.objective - 1e-12):
            best[:] = [result]
            offer(result.report, result.decision)
        return value

    hold, share = float(options.get("hold", HOLD)), float(options.get("hold_share", HOLD_SHARE))
    first = Trial("marginal", "sjf", hold, share)
    run(first)
    bound = None
    if not past(deadline):
        budget = BOUND_SHARE * max(deadline - time.perf_counter(), 0.0)
        bound = bound_of_view(view, options, dc.replace(solve_options, time_limit=budget))
    for trial in (Trial("marginal", "fifo", hold, share), Trial("standalone", "sjf"), Trial("standalone", "fifo"),
                  Trial("least-interference", "sjf")):
        run(trial)
    arrival = results.get(Trial("marginal", "fifo", hold, share))
    order = "fifo" if arrival is not None and arrival < (results.get(first) or math.inf) else "sjf"
    point, value = (hold, share), results.get(Trial("marginal", order, hold, share))

    def moved(p: tuple[float, float], axis: int, factor: float) -> tuple[float, float]:
        x = p[axis] * factor if p[axis] > 0 or factor < 1 else (SHARE_FROM_ZERO if axis == 1 else 1.0)
        return (x, p[1]) if axis == 0 else (p[0], x)

    for factor in STEPS:
        improved = True
        while improved and not past(deadline):
            improved = False
            for axis in (0, 1):
                for f in (factor, 1.0 / factor):
                    while not past(deadline):
                        candidate = moved(point, axis, f)
                        found = run(Trial("marginal", order, *candidate))
                        if found is None or (value is not None and found >= value - 1e-12):
                            break
                        point, value, improved = candidate, found, True
    return (best[0] if best else None), bound, ran, skipped
