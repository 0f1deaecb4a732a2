"""Running a chooser through the simulator within the time limit, and its answer: what every
simulated harmony method (heuristics, myopic, marginal, drl, the exact method's anytime search)
shares.  A trace too long to simulate is refused first (:func:`check_horizon`)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import InstanceError, OptionError
from ...io.instance import Instance
from ...report import SolveOptions, SolveReport
from ..base import MethodResult, heuristic_report, timing_phrase
from .baselines import make_heuristic
from .options import DEFER_MAX, MAX_INTERVALS, ORDERS
from .placements import min_intervals, standalone_intervals
from .simulate import Chooser, HarmonyRun, TimeLimitReached, simulate
from .view import HarmonyView, view_of

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
    extra += f"; {timing_phrase(outcome.decision_s)}"
    report = heuristic_report("min", avg, elapsed, name, options, "; ".join(filter(None, [message, extra])), outcome.decision_s)
    return MethodResult(report, outcome.decision(view))


def simulating_view(instance: Instance, options: Mapping[str, Any]) -> HarmonyView:
    """The view for a method that simulates the trace, refused before simulating when the
    simulation would be too long (:func:`check_horizon`)."""
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


def check_horizon(instance: Instance, view: HarmonyView, limit: int) -> None:
    """Refuse an instance whose simulation would advance more than ``limit`` intervals, before
    simulating (the simulator steps interval by interval, so a huge finite work would run
    unbounded).  The estimate is the last arrival plus the jobs' shortest possible runs (each alone
    at its best placement; interference only lengthens a run) added up, as if they ran one after
    another: a documented, conservative estimate (jobs that overlap take fewer intervals); ``--set
    max_intervals=N`` raises the limit, and every simulation also stops at the time limit."""
    d = min_intervals(view)
    total = float(view.arrival.max(initial=0)) + float(d.sum())
    if total > limit:
        i = int(np.argmax(d))
        raise InstanceError(f"the jobs' standalone runs add up to {total:.3g} scheduling intervals (this job alone: {d[i]:.3g}), "
                            f"over the limit max_intervals={limit} (raise it with --set max_intervals=N)",
                            instance.file, f"{instance.jobs[i].path}.work.epochs")
