"""V-Greedy and V-PD as toolkit methods (the baselines built on V-Greedy: :mod:`.baselines`).

The online methods place PSs by O3, which both ``ps_placement`` values accept.

Covering inflation (spec pitfall P6): with ``epsilon = -1`` (default) every LP + RR-PC step
tries ``epsilon`` in :data:`EPSILONS` = {0, 0.05, 0.1} and keeps the cheapest covering plan, so
a job that fits exactly (LP feasible only at ``epsilon = 0``) is still scheduled; a value in
[0, 1] pins one ``epsilon``.

Anytime: every method plans by LP until :data:`PLAN_SHARE` of ``solve_options.time_limit`` (from
its start) has passed, then gives every job not yet planned the earliest-fit plan
(:func:`.online.earliest_fit`, no LP, linear in the slots it scans), so the answer is a complete
schedule the checker accepts (status ``feasible``, the message says it was cut short and how many
jobs the fallback planned); the rest of the limit is the fallback's.  Wall-clock timings go to the
report's message, never into the decision (same seed -> byte-identical decision when the limit
is not reached).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...errors import OptionError
from ...io.instance import Instance
from ...solvers import SolveOptions
from ..base import MethodResult, heuristic_report, timing_phrase
from .decision import decision, o3_placement
from .online import BOTH, Prices, Schedule, v_greedy, v_pd
from .view import LocalityView, check_size, locality_view, o3_ps, total_delay

#: The covering inflations tried per LP when ``epsilon`` is -1 (spec 001 pitfall P6).
EPSILONS = (0.0, 0.05, 0.1)
#: Share of the time limit spent planning by LP; the earliest-fit fallback has the rest.
PLAN_SHARE = 0.9




def _work_of(view: LocalityView, locality: str) -> Callable[[int, list[tuple[int, int]]], float]:
    def work(i: int, here: list[tuple[int, int]]) -> float:
        w: dict[int, int] = {}
        for h, n in here:
            w[h] = w.get(h, 0) + n
        return view.sparse_slot_work(i, w, {h: o3_ps(n, view.jobs[i].gamma) for h, n in w.items()}, locality)

    return work


def epsilons(options: Mapping[str, Any]) -> tuple[float, ...]:
    """The covering inflations to try: :data:`EPSILONS` for ``epsilon = -1``, else the one pinned."""
    eps = float(options.get("epsilon", -1.0))
    if eps == -1.0:
        return EPSILONS
    if not 0.0 <= eps <= 1.0:
        raise OptionError(f"epsilon must be -1 (try {', '.join(map(str, EPSILONS))}) or in [0, 1], got {eps:g}", field="--set epsilon")
    return (eps,)


def _prepared(instance: Instance, solve_options: SolveOptions, started: float) -> tuple[LocalityView, float]:
    """The view (size-checked) and the instant LP planning must stop (:data:`PLAN_SHARE` of the limit from the start)."""
    view = locality_view(instance)
    check_size(view, instance.file)
    return view, started + PLAN_SHARE * float(solve_options.time_limit)


def _result(view: LocalityView, out: Schedule, name: str, options: Mapping[str, Any], started: float,
            extra: Mapping[str, Any] | None = None) -> MethodResult:
    value = total_delay(view, out.completion)
    stats = {"lps": out.lps, "rounding_attempts": out.attempts, "repairs": out.repairs,
             "rejected": [view.jobs[i].id for i in out.rejected], **dict(extra or {})}
    # wall-clock figures only in the message: the decision must not depend on the machine's speed
    message = (f"{len(out.completion)}/{len(view.jobs)} jobs finish, {out.lps} LPs, {out.repairs} repairs, "
               f"{timing_phrase(out.decision_s)}")
    if out.cut_short:
        late = set(out.fallback)
        message += (f"; cut short at the time limit: {len(late)} of {len(view.jobs)} jobs planned by the earliest-fit fallback "
                    f"instead of LP + rounding ({sum(i in out.completion for i in late)} of them finish)")
    report = heuristic_report("min", value, time.perf_counter() - started, name, dict(options), message, out.decision_s)
    return MethodResult(report, decision(view, o3_placement(view, out.tasks), out.completion, stats))


def greedy(name: str, solver: str = "rr", plan: str = "aware", kinds: tuple[int, ...] = BOTH):
    """A V-Greedy method: LP + RR-PC (``rr``) or the exact per-job program (``ilp``), all patterns or one kind."""

    def run(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
        started = time.perf_counter()
        eps = epsilons(options)
        if solver == "ilp":
            eps = (0.0,)  # the exact program covers V itself; inflation only hedges the rounding
        view, stop_at = _prepared(instance, solve_options, started)
        out = v_greedy(view.jobs, view.capacity, view.slots, order=options["order"], solver=solver, eps=eps,
                       attempts=int(options["attempts"]), seed=solve_options.seed, plan=plan, kinds=kinds,
                       work_of=_work_of(view, options["locality"]), stop_at=stop_at)
        return _result(view, out, name, {**options, "seed": solve_options.seed}, started)

    run.__name__ = f"run_{name.replace('-', '_')}"
    return run


run_greedy_rr = greedy("greedy-rr")


def pd_prices(view: LocalityView, l_scale: float = 1.0) -> Prices:
    """V-PD's price parameters [our design after OASiS eqs (23)-(26); spec 001 pitfall P16].

    A job's utility is ``u_i(d) = w_i (T - a_i + 1 - d)``, the delay it saves against not
    finishing, so maximizing utility is minimizing the family's objective.  ``U_r`` is the largest
    utility per unit of type-r resource-slot any job can earn (at delay 1, co-located, PSs at the
    fan-in: ``(alpha_r + beta_r / gamma) V / q_in`` resource-slots); ``L`` is the smallest such
    density at the last slot (utility ``w_i``, spread rates), divided by 4 as in OASiS's L, times
    ``l_scale``.
    """
    R = len(view.resources)
    U = np.zeros(R)
    low = []
    for i, job in enumerate(view.jobs):
        per_sample = job.alpha + job.beta / job.gamma
        best = job.weight * (view.penalty_delay(i) - 1)
        fastest = per_sample * job.work / job.q_in
        U = np.maximum(U, np.divide(best, fastest, out=np.zeros(R), where=fastest > 0))
        slowest = float(per_sample.sum() * job.work / job.q_ex)
        if slowest > 0:
            low.append(job.weight / slowest)
    L = (min(low) / 4.0 if low else 1.0) * l_scale
    return Prices(L, np.maximum(U, L), lambda i, d: view.jobs[i].weight * (view.penalty_delay(i) - d))


def run_pd(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    started = time.perf_counter()
    eps = epsilons(options)
    if not options["l_scale"] > 0:
        raise OptionError(f"l_scale must be > 0, got {options['l_scale']}", field="--set l_scale")
    view, stop_at = _prepared(instance, solve_options, started)
    prices = pd_prices(view, options["l_scale"])
    out, payoffs = v_pd(view.jobs, view.capacity, view.slots, prices, order=options["order"], eps=eps,
                        attempts=int(options["attempts"]), seed=solve_options.seed, work_of=_work_of(view, options["locality"]),
                        stop_at=stop_at)
    extra = {"prices": {"L": prices.L, "U": dict(zip(view.resources, map(float, prices.U)))},
             "payoff": {view.jobs[i].id: (p if np.isfinite(p) else None) for i, p in sorted(payoffs.items())}}
    return _result(view, out, "pd-rr", {**options, "seed": solve_options.seed}, started, extra)

