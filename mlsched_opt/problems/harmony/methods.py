"""The harmony family's methods: exact search, references, heuristics and the learned policy."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...errors import OptionError
from ...io.instance import Instance
from ...solvers import SolveOptions, SolveReport, solve
from ...tolerances import capacity_limit
from ..base import MethodResult, heuristic_report
from .baselines import make_heuristic
from .exact import (
    Myopic,
    anytime_search,
    exhaustive,
    exhaustive_any,
    job_options,
    monotone_world,
    standalone_intervals,
    standalone_speed,
    static_jct,
)
from .formulation import build_model, decision_from_model
from .options import DEFER_MAX, HOLD, HOLD_SHARE, MAX_INTERVALS, ORDERS
from .simulate import Chooser, HarmonyRun, TimeLimitReached, placement_decision, simulate
from .view import HarmonyView, check_horizon, view_of

#: share of the time limit after which an anytime method hands the jobs still unplaced to
#: standalone-first, so that the rest of the simulation fits in the time left
HANDOVER_SHARE = 0.6
#: a deferral window no trace reaches: a chooser with its own hold rule may hold a job whenever some job holds servers
HOLD_ANY_TIME = 10**12


def _outcome_result(view: HarmonyView, outcome: HarmonyRun, name: str, options: Mapping[str, Any], elapsed: float,
                    message: str = "") -> MethodResult:
    avg = float(outcome.jct(view).mean())
    extra = f"{outcome.decisions} jobs placed in {len(outcome.rewards)} intervals"
    if outcome.deferrals:
        extra += f"; {outcome.deferrals} times a queued job was held back by choice"
    if outcome.fallbacks:
        extra += f"; {outcome.fallbacks} started by the empty-cluster fallback"
    if outcome.cut_interval is not None:
        extra += (f"; cut short by the time limit in interval {outcome.cut_interval}: the last {outcome.cut_placed} jobs "
                  "were placed by standalone-first")
    report = heuristic_report("min", avg, elapsed, name, options, "; ".join(filter(None, [message, extra])))
    return MethodResult(report, outcome.decision(view))


def simulating_view(instance: Instance, options: Mapping[str, Any]) -> HarmonyView:
    """The view for a method that simulates the trace, refused before simulating when the
    simulation would be too long (:func:`~.view.check_horizon`)."""
    view = view_of(instance, options)
    check_horizon(instance, view, int(options.get("max_intervals", MAX_INTERVALS)))
    return view


def queue_priority(view: HarmonyView, order: str) -> np.ndarray | None:
    """The simulator's queue priority for ``--set order`` (lower first; ``None``: arrival order)."""
    if order == "fifo":
        return None
    run = standalone_intervals(view)
    if order == "sjf":
        return run
    if order == "area":
        return run * view.jobs.W
    raise OptionError(f"order must be one of {', '.join(ORDERS)}, got {order!r}", field="--set order")


def run_outcome(view: HarmonyView, chooser: Chooser, name: str, options: Mapping[str, Any], solve_options: SolveOptions,
                note: str = "", anytime: bool = False, began: float | None = None, defer_max: int | None = None,
                skip_quiet: bool = False) -> MethodResult:
    """Simulate under ``chooser`` within the time limit and report; under ``starts=simultaneous``
    a run that had to delay a job has no decision the checker accepts: status ``failed``.

    ``anytime``: after :data:`HANDOVER_SHARE` of the time limit the jobs still unplaced go to
    standalone-first (a slow chooser cut short still answers; the message says so).  ``began``:
    when the method started (its setup counts against the limit too).  The queue is in ``--set
    order``; ``defer_max`` (default: the ``defer`` rule) and ``skip_quiet`` go to the simulator."""
    start = time.perf_counter()
    limit = max(0.0, solve_options.time_limit - (start - (began if began is not None else start)))
    defer = defer_rule(options) if defer_max is None or options.get("starts", "any") == "simultaneous" else defer_max
    try:
        outcome = simulate(view, chooser, time_limit=limit, fallback=make_heuristic("standalone") if anytime else None,
                           switch_s=HANDOVER_SHARE * limit if anytime else None, defer_max=defer,
                           priority=queue_priority(view, str(options.get("order", "fifo"))), skip_quiet=skip_quiet)
    except TimeLimitReached as stop:
        report = SolveReport("time-limit-no-solution", None, None, "min", name, "mlsched-opt", dict(options),
                             solve_s=time.perf_counter() - start, message=f"{stop}; no complete placement")
        return MethodResult(report, None)
    elapsed = time.perf_counter() - start
    if options.get("starts", "any") == "simultaneous":
        late = [view.ids[j] for j in range(view.J) if outcome.start[j] != view.arrival[j]]
        if late:
            msg = (f"starts=simultaneous: job {late[0]} (and {len(late) - 1} more) could not start in its arrival interval"
                   if len(late) > 1 else f"starts=simultaneous: job {late[0]} could not start in its arrival interval")
            return MethodResult(heuristic_report("min", None, elapsed, name, options, "; ".join(filter(None, [note, msg]))), None)
    return _outcome_result(view, outcome, name, options, elapsed, note)


def defer_rule(options: Mapping[str, Any]) -> int:
    """The deferral rule of a run: ``defer``, or 0 under ``starts=simultaneous`` (no job may wait there)."""
    return 0 if options.get("starts", "any") == "simultaneous" else int(options.get("defer", DEFER_MAX))


def run_chooser(make: Callable[[HarmonyView, Mapping[str, Any], SolveOptions], Chooser], name: str):
    def run(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
        view = simulating_view(instance, options)
        return run_outcome(view, make(view, options, solve_options), name, options, solve_options)
    return run


def heuristic(name: str):
    return run_chooser(lambda view, options, so: make_heuristic(name, so.seed), name)


run_load_balance = heuristic("load-balance")
run_tetris = heuristic("tetris")
run_least_interference = heuristic("least-interference")
run_packing = heuristic("packing")
run_standalone = heuristic("standalone")
run_random = heuristic("random")
run_least_interference_defer = heuristic("least-interference-defer")
run_standalone_defer = heuristic("standalone-defer")


def run_marginal(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """Marginal-delay list scheduling (:mod:`.marginal`): its own hold rule, not ``--set defer`` (a job
    waits only while some job holds servers, so no window is needed to keep the trace moving)."""
    from .marginal import Marginal

    began = time.perf_counter()
    view = simulating_view(instance, options)
    chooser = Marginal(view, float(options.get("hold", HOLD)), float(options.get("hold_share", HOLD_SHARE)))
    return run_outcome(view, chooser, "marginal", options, solve_options, anytime=True, began=began,
                       defer_max=HOLD_ANY_TIME, skip_quiet=True)


def run_myopic(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    began = time.perf_counter()
    view = simulating_view(instance, options)
    return run_outcome(view, Myopic(view, group=int(options.get("group", 3))), "myopic", options, solve_options,
                       anytime=True, began=began)


def run_exact(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """The exhaustive search where it applies (a static batch of identical servers within its size
    limits): optimal by exhaustion.  Elsewhere anytime (:func:`~.exact.anytime_search`): the best
    heuristic answer found in the time limit with the throughput LP's bound, ``feasible``."""
    began = time.perf_counter()
    view = view_of(instance, options, require_fit=False)
    reason = misfit_reason(view)
    if reason:   # no schedule at all, whatever the start rule: an answer, not an error
        return MethodResult(SolveReport("infeasible", None, None, "min", "enumeration", "mlsched-opt", dict(options),
                                        message=reason), None)
    if not view.static:
        refused = "it needs a static batch; these jobs arrive over time"
    else:
        try:
            if options.get("starts", "any") == "any":
                return _run_exact_any(view, options, solve_options)
            return _run_exact_simultaneous(view, options, solve_options)
        except OptionError as exc:   # beyond the exhaustive search: anytime at every size (issue 32)
            refused = exc.reason
    check_horizon(instance, view, int(options.get("max_intervals", MAX_INTERVALS)))
    left = max(solve_options.time_limit - (time.perf_counter() - began), 0.0)
    return _run_anytime(view, options, dataclasses.replace(solve_options, time_limit=left), refused)


def _run_anytime(view: HarmonyView, options: Mapping[str, Any], solve_options: SolveOptions, refused: str) -> MethodResult:
    start = time.perf_counter()
    result, bound, ran, skipped = anytime_search(view, options, solve_options)
    proven = bound.bound if bound is not None and bound.status == "optimal" else None
    notes = [f"the exhaustive search does not apply ({refused}): anytime search, {len(ran)} heuristic runs"]
    if skipped:
        notes.append(f"{skipped} more not started for the time limit (a longer limit may find a better answer)")
    if result is not None:
        notes.append(f"the best: {result.report.solver}")
    notes.append(f"bound: {bound.message}" if bound is not None else "no time was left for the throughput LP's bound")
    message = "; ".join(notes)
    if result is None or result.report.objective is None:
        status = "time-limit-no-solution" if skipped else "failed"
        return MethodResult(SolveReport(status, None, proven, "min", "anytime search", "mlsched-opt", dict(options),
                                        solve_s=time.perf_counter() - start, message=message), None)
    report = SolveReport("feasible", result.report.objective, proven, "min", "anytime search", "mlsched-opt", dict(options),
                         solve_s=time.perf_counter() - start, message=message)
    return MethodResult(report, result.decision)


def _run_exact_simultaneous(view: HarmonyView, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    res = exhaustive(view, solve_options.time_limit)
    stats = f"{res.product} joint placements, {res.canonical} after pruning and server symmetry"
    if res.avg_jct is None:
        status = "infeasible" if res.complete else "time-limit-no-solution"
        msg = ("starts=simultaneous: no placement starts every job at once (the jobs' tasks exceed the cluster together)"
               if res.complete else "time limit during enumeration")
        return MethodResult(SolveReport(status, None, None, "min", "enumeration", "mlsched-opt", dict(options),
                                        solve_s=res.elapsed_s, message=f"{msg}; {stats}"), None)
    assert res.w is not None and res.p is not None  # set together with avg_jct
    decision = _static_decision(view, res.w, res.p)
    status = "optimal" if res.complete else "feasible"
    report = SolveReport(status, res.avg_jct, res.avg_jct if res.complete else None, "min", "enumeration", "mlsched-opt",
                         dict(options), solve_s=res.elapsed_s,
                         message=stats + ("" if res.complete else "; time limit: not every placement evaluated"))
    return MethodResult(report, decision)


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
        speed = _best_speeds(view, deadline)
    except TimeoutError:
        return SolveReport("time-limit-no-solution", None, None, "min", name, "mlsched-opt", dict(options),
                           solve_s=time.perf_counter() - start, message="time limit before every job's standalone speed")
    value = float(np.mean(view.samples / (speed * view.slot_s))) if view.J else 0.0
    return SolveReport("optimal", value, value, "min", name, "mlsched-opt", dict(options), solve_s=time.perf_counter() - start,
                       message="every job alone from its arrival at its best placement (a lower bound, not a schedule)")


def _best_speeds(view: HarmonyView, deadline: float) -> np.ndarray:
    """Every job's speed alone at its best placement on servers of the componentwise largest
    capacity (cached per job shape: a few enumerations however many jobs)."""
    cap = view.capacity.max(axis=0)
    j = view.jobs
    speed = np.empty(view.J)
    for i in range(view.J):
        if time.perf_counter() > deadline:
            raise TimeoutError
        speed[i] = standalone_speed(view.world, int(j.kind[i]), bool(j.is_ps[i]), int(j.W[i]), int(j.P[i]), view.M,
                                    cap, view.worker_demand[i], view.ps_demand[i])
    return speed


def misfit_reason(view: HarmonyView, deadline: float | None = None) -> str | None:
    """Why some job fits no placement on the empty cluster (exact enumeration of its count vectors), or ``None``.

    Exact on a reduced cluster: a job's W + P tasks use at most W + P servers, and servers of the
    same capacity are interchangeable on the empty cluster, so keeping min(count, W + P) servers
    of each capacity loses no placement.  One enumeration per job shape (W, P, demands)."""
    caps, counts = np.unique(view.capacity, axis=0, return_counts=True)
    seen: dict[tuple, bool] = {}
    for i in range(view.J):
        if deadline is not None and time.perf_counter() > deadline:
            raise TimeoutError
        W, P = int(view.jobs.W[i]), int(view.jobs.P[i])
        key = (W, P, view.worker_demand[i].tobytes(), view.ps_demand[i].tobytes())
        if key not in seen:
            reduced = np.repeat(caps, np.minimum(counts, W + P), axis=0)
            # within the checker's limits (a job the checker would accept placed is no misfit)
            ow, _ = job_options(W, P, len(reduced), capacity_limit(reduced), view.worker_demand[i], view.ps_demand[i], slack=0.0)
            seen[key] = len(ow) > 0
        if not seen[key]:
            return f"job {view.ids[i]}: {W} workers and {P} PSs fit no placement on the empty cluster"
    return None


def _run_exact_any(view: HarmonyView, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    res = exhaustive_any(view, solve_options.time_limit)
    stats = (f"{res.placements} placements after server symmetry x {res.start_vectors} start vectors "
             f"(total delay bound {res.horizon} intervals)")
    if res.infeasible:
        return MethodResult(SolveReport("infeasible", None, None, "min", "enumeration", "mlsched-opt", dict(options),
                                        solve_s=res.elapsed_s, message=res.infeasible), None)
    if res.avg_jct is None:
        return MethodResult(SolveReport("time-limit-no-solution", None, None, "min", "enumeration", "mlsched-opt", dict(options),
                                        solve_s=res.elapsed_s, message=f"time limit during enumeration; {stats}"), None)
    assert res.start is not None and res.w is not None and res.p is not None  # set together with avg_jct
    decision = placement_decision(view, res.start, res.w, res.p)
    status = "optimal" if res.complete else "feasible"
    report = SolveReport(status, res.avg_jct, res.bound, "min", "enumeration", "mlsched-opt",
                         dict(options), solve_s=res.elapsed_s,
                         message=stats + ("" if res.complete else "; time limit: not every start vector evaluated, "
                                          "the bound is proven (delays x shortest runs)"))
    return MethodResult(report, decision)


def _static_decision(view: HarmonyView, w: np.ndarray, p: np.ndarray) -> dict:
    return placement_decision(view, np.zeros(view.J, int), w, p)


def run_surrogate(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    view = view_of(instance, options)
    if not view.static:
        raise OptionError("the surrogate places a static batch (every job arriving in interval 0)", field="--method")
    start = time.perf_counter()
    model = build_model(instance, options)
    report = solve(model, solve_options, build_s=time.perf_counter() - start)
    if report.status == "infeasible" and options.get("starts", "any") == "any":
        # the surrogate starts every job at interval 0; under starts=any the jobs may still run one after another
        note = "the surrogate starts every job at interval 0 and these jobs do not fit together (starts=any allows waiting)"
        return MethodResult(heuristic_report("min", None, report.wall_s, f"surrogate+{report.solver}", options, note), None)
    if not report.has_solution:
        return MethodResult(report, None)
    decision = decision_from_model(instance, options, model)
    w, p = counts_from_decision(view, decision)
    true = float(static_jct(view, w[None], p[None]).mean())
    note = (f"surrogate objective {report.objective:.6g} ({report.status}, bound {report.bound}, {report.solver}); "
            f"placement scored in the true world")
    out = heuristic_report("min", true, report.wall_s, f"surrogate+{report.solver}", options, note)
    return MethodResult(out, decision)


def counts_from_decision(view: HarmonyView, decision: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(w, p)`` count matrices (J, M) of a decision (a well-formed one; the checker validates)."""
    index = {name: m for m, name in enumerate(view.servers)}
    w = np.zeros((view.J, view.M), int)
    p = np.zeros((view.J, view.M), int)
    for j, job_id in enumerate(view.ids):
        entry = decision["placement"][job_id]
        for name, n in entry.get("workers", {}).items():
            w[j, index[name]] = n
        for name, n in entry.get("ps", {}).items():
            p[j, index[name]] = n
    return w, p


def run_drl(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    from .policy import load_policy, torch

    began = time.perf_counter()
    view = simulating_view(instance, options)
    policy = load_policy(options.get("model") or None, view)
    # one thread, not torch's default of every core: a forward pass of this small network per
    # decision is 10-12x slower when its threads contend for the cores; the caller's value returns after
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        note = f"model {policy.path}"
        options_trained = policy.meta.get("options")
        trained = options_trained.get("defer") if isinstance(options_trained, dict) else None
        if isinstance(trained, int) and trained != defer_rule(options):
            # its deferral features are scaled by the rule it was trained under
            note += f" (trained under defer={trained}, run under defer={defer_rule(options)})"
        return run_outcome(view, policy.chooser(view, greedy=True), "drl", options, solve_options, note,
                           anytime=True, began=began)
    finally:
        torch.set_num_threads(threads)
