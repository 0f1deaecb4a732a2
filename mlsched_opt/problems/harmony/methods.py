"""The harmony family's methods: exact search, references, heuristics and the learned policy."""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import numpy as np

from ...errors import OptionError
from ...io.instance import Instance
from ...solvers import SolveOptions, SolveReport, solve
from ..base import MethodResult, heuristic_report
from .baselines import make_heuristic
from .exact import Myopic, exhaustive, static_jct
from .simulate import Chooser, Outcome, placement_decision, simulate
from .surrogate import build_model, decision_from_model
from .view import HarmonyView, view_of

EXACT_GUARANTEE = "exact: the minimum average JCT over placements that start every job at interval 0 (static batch), by exhaustion"
SURROGATE_GUARANTEE = ("optimal for the linearized surrogate (spec 6c) when the solver proves it; none for the true JCT, "
                       "whose gap the report gives when --method exact can run")
MYOPIC_GUARANTEE = "none: each interval's placement maximizes the sum of normalized speeds now (spec 6b(1)), not the JCT"
DRL_GUARANTEE = "none: a learned policy (spec 2); its gap to exact is measured by benchmarks/harmony_drl.py"


def _outcome_result(view: HarmonyView, outcome: Outcome, name: str, options: Mapping[str, Any], elapsed: float,
                    message: str = "") -> MethodResult:
    avg = float(outcome.jct(view).mean())
    extra = f"{outcome.decisions} jobs placed in {len(outcome.rewards)} intervals"
    if outcome.fallbacks:
        extra += f"; {outcome.fallbacks} started by the empty-cluster fallback"
    report = heuristic_report("min", avg, elapsed, name, options, "; ".join(filter(None, [message, extra])))
    return MethodResult(report, outcome.decision(view))


def run_chooser(make: Callable[[HarmonyView, Mapping[str, Any], SolveOptions], Chooser], name: str):
    def run(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
        view = view_of(instance, options)
        start = time.perf_counter()
        chooser = make(view, options, solve_options)
        outcome = simulate(view, chooser)
        return _outcome_result(view, outcome, name, options, time.perf_counter() - start)
    return run


def heuristic(name: str):
    return run_chooser(lambda view, options, so: make_heuristic(name, so.seed), name)


run_myopic = run_chooser(lambda view, options, so: Myopic(view, group=int(options.get("group", 3))), "myopic")


def run_exact(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    view = view_of(instance, options)
    res = exhaustive(view, solve_options.time_limit)
    stats = f"{res.product} joint placements, {res.canonical} after pruning and server symmetry"
    if res.avg_jct is None:
        status = "infeasible" if res.complete else "time-limit-no-solution"
        msg = "no placement starts every job at once" if res.complete else "time limit during enumeration"
        return MethodResult(SolveReport(status, None, None, "min", "enumeration", "mlsched-opt", dict(options),
                                        solve_s=res.elapsed_s, message=f"{msg}; {stats}"), None)
    decision = _static_decision(view, res.w, res.p)
    status = "optimal" if res.complete else "feasible"
    report = SolveReport(status, res.avg_jct, res.avg_jct if res.complete else None, "min", "enumeration", "mlsched-opt",
                         dict(options), solve_s=res.elapsed_s, message=stats + ("" if res.complete else "; time limit: not every placement evaluated"))
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
    from .policy import load_policy

    view = view_of(instance, options)
    start = time.perf_counter()
    policy = load_policy(options.get("model") or None, view)
    outcome = simulate(view, policy.chooser(view, greedy=True))
    return _outcome_result(view, outcome, "drl", options, time.perf_counter() - start, f"model {policy.path}")
