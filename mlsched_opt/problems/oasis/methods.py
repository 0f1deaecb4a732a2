"""OASiS and the baselines (their policies: :mod:`.baselines`) as toolkit methods."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ...clock import offer
from ...errors import OptionError
from ...io.instance import Instance
from ...solvers import SolveOptions
from ..base import MethodResult, heuristic_report, timing_phrase
from .baselines import POLICIES
from .decision import decision
from .online import Oasis, SlotRun, simulate
from .prices import PriceParams, estimated_params, formula_params, given_params
from .view import OasisView, oasis_view


def price_params(view: OasisView, options: Mapping[str, Any]) -> PriceParams:
    if options["prices"] == "given":
        for name in ("l1", "u1", "l2", "u2"):
            if options[name] <= 0:
                raise OptionError(f"prices=given needs {name} > 0, got {options[name]}", field=f"--set {name}")
        params = given_params(view, options["l1"], options["u1"], options["l2"], options["u2"])
    elif options["prices"] == "estimated":
        if not 0 <= options["quantile"] <= 1:
            raise OptionError(f"quantile must be in [0, 1], got {options['quantile']}", field="--set quantile")
        params = estimated_params(view, options["quantile"])
    else:
        params = formula_params(view)
    if options["estimate"] <= 0:
        raise OptionError(f"estimate must be > 0, got {options['estimate']}", field="--set estimate")
    return params.scaled(options["estimate"]) if options["estimate"] != 1.0 else params


def run_oasis(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = oasis_view(instance, options["ranges"])
    params = price_params(view, options)
    # the time limit bounds the planning (the per-slot replay of reserved plans is cheap and runs to the end)
    policy, outcome = _run(view, params, options, start + solve_options.time_limit)
    value = outcome.utility(view)
    # wall-clock timings go to the message only: the decision is a function of the instance and options
    stats = {"prices": params.to_dict(view.resources), "bound_2alpha": 2 * params.alpha,
             "payoff": {view.jobs[i].id: p for i, p in sorted(policy.payoff.items())}}
    message = (f"admitted {len(outcome.completion)}/{len(view.jobs)}, alpha={params.alpha:.3g} ({params.source}), "
               f"{timing_phrase(policy.decision_s)}")
    if policy.cut_short:
        message += (f"; cut short by the time limit ({solve_options.time_limit:g} s): {policy.cut_short} arriving job(s) "
                    "planned over fewer completion slots or rejected unplanned")
    report = heuristic_report("max", value, time.perf_counter() - start, "oasis", dict(options), message, policy.decision_s)
    return MethodResult(report, decision(view, outcome, stats))


def _run(view: OasisView, params: PriceParams, options: Mapping[str, Any], deadline: float) -> tuple[Oasis, SlotRun]:
    policy = Oasis(view, params, options["units"], deadline=deadline)
    return policy, simulate(view, policy)


def run_replan(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """The rolling-horizon re-plan of :mod:`.replan` (online; no guarantee)."""
    from .replan import Replan  # late: it loads HiGHS

    start = time.perf_counter()
    view = oasis_view(instance, options["ranges"])
    policy = Replan(view, seed=solve_options.seed, deadline=start + solve_options.time_limit)
    # the time limit bounds the re-planning (the replay of the plans is cheap and runs to the end)
    outcome = simulate(view, policy)
    message = f"completed {len(outcome.completion)}/{len(view.jobs)}, {policy.stats['replans']} re-plans"
    if policy.cut_short:
        message += (f"; cut short by the time limit ({solve_options.time_limit:g} s): {policy.cut_short} step(s) stopped early, "
                    "later arrivals not planned")
    report = heuristic_report("max", outcome.utility(view), time.perf_counter() - start, "replan",
                              {**options, "seed": solve_options.seed}, message)
    return MethodResult(report, decision(view, outcome, {"policy": dict(policy.stats)}))


def bench_extra(instance: Instance, solution, options: Mapping[str, Any]) -> dict[str, Any]:
    """The row extras of ``mlsched bench``: jobs completed, and OASiS's competitive bound 2 alpha
    (a ratio within it is what Theorem 3 promises under the formula's prices)."""
    extra = solution.decision.get("extra") or {}
    out: dict[str, Any] = {"completed": len(solution.decision.get("admitted") or [])}
    if extra.get("bound_2alpha") is not None:  # OASiS itself, not the baselines
        out["bound_2alpha"] = extra["bound_2alpha"]
    return out


def baseline(name: str):
    def run(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
        start = time.perf_counter()
        view = oasis_view(instance, options["ranges"])
        deadline = start + solve_options.time_limit
        policy = POLICIES[name](view, seed=solve_options.seed, deadline=deadline)
        outcome = simulate(view, policy, deadline=deadline)
        stats = dict(policy.stats.items())
        message = f"completed {len(outcome.completion)}/{len(view.jobs)}" + "".join(f", {k}={v}" for k, v in stats.items())
        late = getattr(policy, "cut_short", 0) or getattr(getattr(policy, "drf", None), "cut_short", 0)
        if outcome.cut_at is not None or late:
            where = f"stopped before slot {outcome.cut_at}" if outcome.cut_at is not None else "allocations cut short"
            message += f"; cut short by the time limit ({solve_options.time_limit:g} s): {where}"
        report = heuristic_report("max", outcome.utility(view), time.perf_counter() - start, name,
                                  {**options, "seed": solve_options.seed}, message)
        return MethodResult(report, decision(view, outcome, {"policy": stats}))

    run.__name__ = f"run_{name}"
    return run


run_fifo, run_drf, run_rrh, run_dorm = (baseline(name) for name in ("fifo", "drf", "rrh", "dorm"))


def exact_start(instance: Instance, options: Mapping[str, Any], model, seconds: float) -> str:
    """The better of OASiS's schedule and the search's (:mod:`.exact`) as the exact solve's
    start: ``x``, ``u``, ``y``, ``z`` and ``v`` of the offline MILP set from its admitted jobs, their
    per-slot counts and completion slots (every schedule the checker accepts is a point of the model,
    so HiGHS takes it as its first incumbent; if it did not, HiGHS would drop it and lose nothing).
    The search's schedule is also offered as the run's answer so far (:func:`~mlsched_opt.clock.offer`)."""
    from .exact import search  # late: the search loads HiGHS

    start = time.perf_counter()
    view: OasisView = model._view
    policy, run = _run(view, price_params(view, options), options, start + seconds)
    notes = [f"no start from OASiS: it did not finish within {seconds:.2g} s" if policy.cut_short
             else f"start: the OASiS schedule, utility {run.utility(view):.6g} ({time.perf_counter() - start:.2f} s)"]
    best = None if policy.cut_short else run
    state, _stats = search(view, start + seconds, 0, rounds=0)
    found = state.outcome()
    if best is None or found.utility(view) > best.utility(view):
        best = found
        offer(heuristic_report("max", found.utility(view), time.perf_counter() - start, "highs", dict(options),
                               "the search's schedule (the exact solve's start)"), decision(view, found))
        notes.append(f"the search's schedule, utility {found.utility(view):.6g}, is the start")
    if best is None:
        return "; ".join(notes)
    _set_start(model, view, best)
    return "; ".join(notes)


def _set_start(model, view: OasisView, run: SlotRun) -> None:
    done = run.completion
    values: list[tuple[Any, float]] = [(var, float(i in done)) for i, var in model.x.items()]
    values += [(var, float(done.get(i) == t)) for (i, t), var in model.u.items()]
    workers = {i: run.workers[i].dense() for i in done}
    ps = {i: run.ps[i].dense() for i in done}
    values += [(var, float(workers[i][h, t]) if i in done else 0.0) for (i, h, t), var in model.y.items()]
    values += [(var, float(ps[i][k, t]) if i in done else 0.0) for (i, k, t), var in model.z.items()]
    values += [(var, float(i in done and workers[i][:, t].sum() > 0)) for (i, t), var in model.v.items()]
    model._start = values
