"""V-Greedy, V-PD, the baselines and the exact MILP's decision, as toolkit methods.

``exact`` is exact for the problem the checker accepts under the same options: with
``ps_placement=free`` (default) it solves :func:`.offline.free_model` (any PS placement), with
``with-workers`` the pattern model :func:`.offline.offline_model` (observation O3 as a rule).
The online methods place PSs by O3, which both values accept.

Covering inflation (spec pitfall P6): with ``epsilon = -1`` (default) every LP + RR-PC step
tries ``epsilon`` in :data:`EPSILONS` = {0, 0.05, 0.1} and keeps the cheapest covering plan, so
a job that fits exactly (LP feasible only at ``epsilon = 0``) is still scheduled; a value in
[0, 1] pins one ``epsilon``.

Every method stops at ``solve_options.time_limit`` (from its start) and returns the schedule
committed so far (status ``feasible``, the message says it was cut short); wall-clock timings go
to the report's message, never into the decision (same seed -> byte-identical decision).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import numpy as np
import pyomo.environ as pyo

from ...checking.core import TOL
from ...errors import InstanceError, OptionError
from ...io.instance import Instance
from ...solvers import SolveOptions
from ..base import MethodResult, heuristic_report, timing_phrase
from .offline import free_model, offline_model, placement_from_model
from .online import BOTH, Prices, Schedule, Task, v_greedy, v_pd
from .pcilp import CO_LOCATED, SPREAD
from .view import LocalityView, check_size, locality_view, o3_ps, total_delay

#: The covering inflations tried per LP when ``epsilon`` is -1 (spec 001 pitfall P6).
EPSILONS = (0.0, 0.05, 0.1)
#: Most (job, slot, machine) cells of the exact model built (beyond it the model is refused up front).
MAX_EXACT_CELLS = 50_000
Placement = Mapping[int, Mapping[int, tuple[Mapping[int, int], Mapping[int, int]]]]

RR_GUARANTEE = ("per job and deadline (spec 001 section 4.3, RR-PC): packing rows K1/K3 hold surely, each pattern is kept "
                "with its LP probability, and one attempt covers V at cost <= (1 + eta) LP_eps with probability >= "
                "1 - exp(-eps^2 V / (2 (1 + eps) A)) - 1/(1 + eta), A = w_max q_in; no ratio is claimed for the online total")
PD_GUARANTEE = ("none proven here: OASiS-style prices with a beta-approximate subroutine weaken OASiS's 2 alpha "
                "(spec 001 section 3.3, heuristic); RR-PC's per-job guarantee as for greedy-rr")


def build_model(instance: Instance, options: Mapping[str, Any]) -> pyo.ConcreteModel:
    """The offline MILP of spec 001 section 2.4 with the family's objective (unfinished jobs at ``C = T``),
    for the ``ps_placement`` the checker enforces (free: :func:`.offline.free_model`)."""
    if options.get("locality", "job") != "job":
        raise OptionError("the exact MILP is linear only for job-level locality (pitfall P2); use --set locality=job",
                          field="--set locality")
    view = locality_view(instance)
    check_size(view, instance.file)
    cells = sum((view.slots - job.arrival) * job.w_max for job in view.jobs) * view.H
    if cells > MAX_EXACT_CELLS:
        raise InstanceError(f"the exact model would have {cells} (job, slot, machine, workers) patterns, more than the "
                            f"{MAX_EXACT_CELLS} it builds; use an algorithm", instance.file, "time.slots")
    if options.get("ps_placement", "free") == "free":
        m = free_model(view.jobs, view.capacity, view.slots, unfinished=True)
    else:
        m = offline_model(view.jobs, view.capacity, view.slots, unfinished=True)
    m._view = view
    return m


def decision(view: LocalityView, placement: Placement, completion: Mapping[int, int],
             extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Slots up to each job's completion (unfinished jobs: none); ``placement``: job -> slot -> (workers, PSs) per machine."""
    schedule: dict[str, list[dict[str, Any]]] = {}
    migrations: dict[str, int] = {}
    for i, job in enumerate(view.jobs):
        if i not in completion:
            continue
        by_slot = {t: here for t, here in placement.get(i, {}).items() if t <= completion[i]}
        entries = []
        for t in sorted(by_slot):
            workers, ps = by_slot[t]
            entries.append({"slot": int(t),
                            "workers": {view.servers[h]: int(n) for h, n in sorted(workers.items()) if n},
                            "ps": {view.servers[h]: int(n) for h, n in sorted(ps.items()) if n}})
        schedule[job.id] = entries
        machines = [frozenset(h for h, n in {**by_slot[t][0], **by_slot[t][1]}.items() if n) for t in sorted(by_slot)]
        migrations[job.id] = sum(a != b for a, b in zip(machines, machines[1:]))
    done = sorted(completion)
    return {
        "admitted": [view.jobs[i].id for i in done],
        "schedule": schedule,
        "extra": {
            "completion": {view.jobs[i].id: int(completion[i]) for i in done},
            "unfinished": [j.id for i, j in enumerate(view.jobs) if i not in completion],
            "migrations": migrations,
            **dict(extra or {}),
        },
    }


def o3_placement(view: LocalityView, tasks: Mapping[int, list[Task]]) -> dict[int, dict[int, tuple[dict[int, int], dict[int, int]]]]:
    """``(slot, machine, workers)`` triples -> per slot workers and PSs, PSs beside their workers (observation O3)."""
    out: dict[int, dict[int, tuple[dict[int, int], dict[int, int]]]] = {}
    for i, triples in tasks.items():
        for t, h, n in triples:
            workers, ps = out.setdefault(i, {}).setdefault(t, ({}, {}))
            workers[h] = workers.get(h, 0) + n
            ps[h] = o3_ps(workers[h], view.jobs[i].gamma)
    return out


def executed(view: LocalityView, i: int, by_slot: Mapping[int, tuple[Mapping[int, int], Mapping[int, int]]],
             locality: str = "job") -> int | None:
    """First slot whose cumulative work at the true rates (as the checker counts it) reaches ``V``."""
    done = 0.0
    for t in sorted(by_slot):
        w, s = np.zeros(view.H), np.zeros(view.H)
        for h, n in by_slot[t][0].items():
            w[h] += n
        for h, n in by_slot[t][1].items():
            s[h] += n
        done += view.slot_work(i, w, s, locality)
        if done >= view.jobs[i].work * (1 - TOL) - TOL:  # the checker's rule
            return t
    return None


def decision_from_model(instance: Instance, options: Mapping[str, Any], model: pyo.ConcreteModel) -> dict[str, Any]:
    """The selected placement, with each job's completion where its work reaches ``V``.

    In an optimal solution that is the slot of its completion indicator; an unproven incumbent
    may finish a job earlier than its indicator (or at all when the indicator says ``T``).
    """
    view: LocalityView = model._view
    placement = placement_from_model(model)
    completion = {}
    for i in range(len(view.jobs)):
        done = executed(view, i, placement.get(i, {}))
        if done is not None:
            completion[i] = done
    return decision(view, placement, completion)


def rescore(instance: Instance, options: Mapping[str, Any], decision: Mapping[str, Any]) -> float:
    view = locality_view(instance)
    index = {job.id: i for i, job in enumerate(view.jobs)}
    return total_delay(view, {index[j]: t for j, t in decision["extra"]["completion"].items()})


def _work_of(view: LocalityView, locality: str) -> Callable[[int, list[tuple[int, int]]], float]:
    def work(i: int, here: list[tuple[int, int]]) -> float:
        w = np.zeros(view.H)
        s = np.zeros(view.H)
        for h, n in here:
            w[h] += n
            s[h] += o3_ps(n, view.jobs[i].gamma)
        return view.slot_work(i, w, s, locality)

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
    """The view (size-checked) and the instant the method must stop: the time limit counted from its start."""
    view = locality_view(instance)
    check_size(view, instance.file)
    return view, started + float(solve_options.time_limit)


def _result(view: LocalityView, out: Schedule, name: str, options: Mapping[str, Any], started: float,
            extra: Mapping[str, Any] | None = None) -> MethodResult:
    value = total_delay(view, out.completion)
    stats = {"lps": out.lps, "rounding_attempts": out.attempts, "repairs": out.repairs,
             "rejected": [view.jobs[i].id for i in out.rejected], **dict(extra or {})}
    # wall-clock figures only in the message: the decision must not depend on the machine's speed
    message = (f"{len(out.completion)}/{len(view.jobs)} jobs finish, {out.lps} LPs, {out.repairs} repairs, "
               f"{timing_phrase(out.decision_s)}")
    if out.cut_short:
        message += (f"; cut short at the time limit: {len(out.rejected) + len(out.tasks)} of {len(view.jobs)} jobs considered, "
                    "the rest left unscheduled")
    report = heuristic_report("min", value, time.perf_counter() - started, name, dict(options), message)
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


KINDS = {"colocate": (CO_LOCATED,), "spread": (SPREAD,)}
