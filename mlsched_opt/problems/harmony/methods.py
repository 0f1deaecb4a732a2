"""The harmony family's methods: exact search, references, heuristics and the learned policy."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...errors import OptionError
from ...io.instance import Instance
from ...report import SolveOptions, SolveReport
from ..base import MethodResult, heuristic_report
from .baselines import Myopic, make_heuristic
from .decision import counts_from_decision, placement_decision
from .exact import anytime_search, exhaustive, exhaustive_any, static_jct
from .marginal import Marginal
from .options import HOLD, HOLD_SHARE, MAX_INTERVALS
from .placements import misfit_reason
from .runs import HOLD_ANY_TIME, check_horizon, defer_rule, run_outcome, simulating_view
from .simulate import Chooser
from .view import HarmonyView, view_of


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
    from ...solvers import solve  # late: Pyomo, for this method alone
    from .formulation import build_model, decision_from_model

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




def run_drl(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    from .rl.policy import load_policy, torch

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
