"""V-Greedy, V-PD, the baselines and the exact MILP's decision, as toolkit methods."""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Mapping

import numpy as np
import pyomo.environ as pyo

from ...errors import OptionError
from ...io.instance import Instance
from ...solvers import SolveOptions
from ..base import MethodResult, heuristic_report
from .offline import offline_model, tasks_from_model
from .online import BOTH, Prices, Schedule, Task, executed_completion, v_greedy, v_pd
from .pcilp import CO_LOCATED, SPREAD
from .view import LocalityView, locality_view, total_delay

RR_GUARANTEE = ("per job and deadline (spec 001 section 4.3, RR-PC): packing rows K1/K3 hold surely, each pattern is kept "
                "with its LP probability, and one attempt covers V at cost <= (1 + eta) LP_eps with probability >= "
                "1 - exp(-eps^2 V / (2 (1 + eps) A)) - 1/(1 + eta), A = w_max q_in; no ratio is claimed for the online total")
PD_GUARANTEE = ("none proven here: OASiS-style prices with a beta-approximate subroutine weaken OASiS's 2 alpha "
                "(spec 001 section 3.3, heuristic); RR-PC's per-job guarantee as for greedy-rr")


def build_model(instance: Instance, options: Mapping[str, Any]) -> pyo.ConcreteModel:
    """The offline MILP of spec 001 section 2.4 with the family's objective (unfinished jobs at ``C = T``)."""
    if options.get("locality", "job") != "job":
        raise OptionError("the exact MILP is linear only for job-level locality (pitfall P2); use --set locality=job",
                          field="--set locality")
    view = locality_view(instance)
    m = offline_model(view.jobs, view.capacity, view.slots, unfinished=True)
    m._view = view
    return m


def decision(view: LocalityView, tasks: Mapping[int, list[Task]], completion: Mapping[int, int],
             extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Slots up to each job's completion (unfinished jobs: none), PSs beside their workers (O3)."""
    schedule: dict[str, list[dict[str, Any]]] = {}
    migrations: dict[str, int] = {}
    for i, job in enumerate(view.jobs):
        if i not in completion:
            continue
        by_slot: dict[int, dict[int, int]] = {}
        for t, h, n in tasks.get(i, []):
            if t <= completion[i]:
                by_slot.setdefault(t, {})[h] = by_slot.get(t, {}).get(h, 0) + n
        entries = []
        for t in sorted(by_slot):
            entries.append({"slot": t,
                            "workers": {view.servers[h]: n for h, n in sorted(by_slot[t].items())},
                            "ps": {view.servers[h]: int(math.ceil(n / job.gamma)) for h, n in sorted(by_slot[t].items())}})
        schedule[job.id] = entries
        machines = [frozenset(by_slot[t]) for t in sorted(by_slot)]
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


def decision_from_model(instance: Instance, options: Mapping[str, Any], model: pyo.ConcreteModel) -> dict[str, Any]:
    """The selected patterns, with each job's completion where its work reaches ``V``.

    In an optimal solution that is the slot of its completion indicator; an unproven incumbent
    may finish a job earlier than its indicator (or at all when the indicator says ``T``).
    """
    view: LocalityView = model._view
    tasks = tasks_from_model(model)
    completion = {}
    for i, job in enumerate(view.jobs):
        done = executed_completion(job, tasks.get(i, []))
        if done is not None:
            completion[i] = done
    return decision(view, tasks, completion)


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
            s[h] += math.ceil(n / view.jobs[i].gamma)
        return view.slot_work(i, w, s, locality)

    return work


def _validated(options: Mapping[str, Any]) -> tuple[float, int]:
    if not 0 <= options["epsilon"] <= 10:
        raise OptionError(f"epsilon must be in [0, 10], got {options['epsilon']}", field="--epsilon")
    if options["attempts"] < 1:
        raise OptionError(f"attempts must be >= 1, got {options['attempts']}", field="--attempts")
    return float(options["epsilon"]), int(options["attempts"])


def _result(view: LocalityView, out: Schedule, name: str, options: Mapping[str, Any], started: float,
            extra: Mapping[str, Any] | None = None) -> MethodResult:
    value = total_delay(view, out.completion)
    per_job = np.array(out.decision_s) if out.decision_s else np.zeros(1)
    stats = {"lps": out.lps, "rounding_attempts": out.attempts, "repairs": out.repairs,
             "decision_s_mean": float(per_job.mean()), "decision_s_p95": float(np.percentile(per_job, 95)),
             "decision_s_max": float(per_job.max()),
             "rejected": [view.jobs[i].id for i in out.rejected], **dict(extra or {})}
    message = (f"{len(out.completion)}/{len(view.jobs)} jobs finish, {out.lps} LPs, {out.repairs} repairs, "
               f"{1000 * stats['decision_s_mean']:.1f} ms per arriving job")
    report = heuristic_report("min", value, time.perf_counter() - started, name, dict(options), message)
    return MethodResult(report, decision(view, out.tasks, out.completion, stats))


def greedy(name: str, solver: str = "rr", plan: str = "aware", kinds: tuple[int, ...] = BOTH):
    """A V-Greedy method: LP + RR-PC (``rr``) or the exact per-job program (``ilp``), all patterns or one kind."""

    def run(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
        started = time.perf_counter()
        eps, attempts = _validated(options)
        if solver == "ilp":
            eps = 0.0  # the exact program covers V itself; inflation only hedges the rounding
        view = locality_view(instance)
        out = v_greedy(view.jobs, view.capacity, view.slots, order=options["order"], solver=solver, eps=eps,
                       attempts=attempts, seed=solve_options.seed, plan=plan, kinds=kinds,
                       work_of=_work_of(view, options["locality"]))
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
    eps, attempts = _validated(options)
    if options["l_scale"] <= 0:
        raise OptionError(f"l_scale must be > 0, got {options['l_scale']}", field="--set l_scale")
    view = locality_view(instance)
    prices = pd_prices(view, options["l_scale"])
    out, payoffs = v_pd(view.jobs, view.capacity, view.slots, prices, order=options["order"], eps=eps, attempts=attempts,
                        seed=solve_options.seed, work_of=_work_of(view, options["locality"]))
    extra = {"prices": {"L": prices.L, "U": dict(zip(view.resources, map(float, prices.U)))},
             "payoff": {view.jobs[i].id: (p if np.isfinite(p) else None) for i, p in sorted(payoffs.items())}}
    return _result(view, out, "pd-rr", {**options, "seed": solve_options.seed}, started, extra)


KINDS = {"colocate": (CO_LOCATED,), "spread": (SPREAD,)}
