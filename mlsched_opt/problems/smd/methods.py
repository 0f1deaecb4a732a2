"""SMD end to end (spec 002 section 2.6) and the baselines, as toolkit methods."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...clock import progress as report_progress
from ...errors import OptionError
from ...io.instance import Instance
from ...solvers import SolveOptions
from ..base import MethodResult, heuristic_report
from .baselines import esw, optimus
from .decision import decision, values
from .inner import NONE, Allocation, algorithm1, algorithm2, best_integer, scale_factor
from .mkp import exact_knapsack, frieze_clarke
from .view import SmdJob, SmdView, smd_view


def validate(options: Mapping[str, Any]) -> None:
    """Numeric options outside their domain are user errors, named before any work starts."""
    checks = (("epsilon1", lambda v: v > 0, "> 0"), ("epsilon2", lambda v: 0 < v < 1, "in (0, 1)"),
              ("attempts", lambda v: v >= 1, ">= 1"), ("m_delta", lambda v: 0 < v <= 1, "in (0, 1]"),
              ("delta", lambda v: 0 < v <= 1, "in (0, 1]"))
    for name, ok, domain in checks:
        if not ok(options[name]):
            raise OptionError(f"{name} must be {domain}, got {options[name]}", field=f"--set {name}")


def admit(view: SmdView, allocations: list[Allocation], u: np.ndarray, options: Mapping[str, Any],
          solve_options: SolveOptions, time_left: float | None = None) -> tuple[list[str], dict[str, Any]]:
    """The outer step shared by SMD and the baselines: Frieze-Clarke (default) or the exact knapsack,
    within ``time_left`` seconds (the solve's time limit when not given)."""
    weights = view.limits()
    left = solve_options.time_limit if time_left is None else time_left
    if options["outer"] == "exact":
        # the MILP always gets a moment, so a run whose inner step used the time still admits someone
        res = exact_knapsack(u, weights, view.capacity, time_limit=max(left, 0.1), gap=solve_options.gap)
        stats = {"outer": "exact", "outer_s": res.seconds, "outer_proven": res.proven_optimal}
    else:
        res = frieze_clarke(u, weights, view.capacity, options["epsilon2"], deadline_s=max(left, 0.0))
        stats = {"outer": "frieze-clarke", "k": res.k, "subsets": res.subsets, "outer_lps": res.lps,
                 "outer_s": res.seconds, "outer_complete": res.complete}
    admitted = [j.id for j, c in zip(view.jobs, res.chosen) if c and allocations[j.index].feasible]
    return admitted, stats


def _finish(name: str, view: SmdView, allocations: list[Allocation], stats: dict[str, Any], options: Mapping[str, Any],
            solve_options: SolveOptions, start: float) -> MethodResult:
    u = values(view, allocations)
    left = start + solve_options.time_limit - time.perf_counter()
    admitted, outer_stats = admit(view, allocations, u, options, solve_options, left)
    stats.update(outer_stats)
    chosen = set(admitted)
    objective = float(sum(u[j.index] for j in view.jobs if j.id in chosen))
    by_id = {j.id: a for j, a in zip(view.jobs, allocations)}
    message = ", ".join(f"{k}={_short(v)}" for k, v in stats.items())
    if stats.get("outer_complete") is False or stats.get("grid_complete") is False or stats.get("unsized"):
        message += "; cut short by the time limit: the best answer found so far (guarantees void)"
        if stats.get("unsized"):
            message += f"; {stats['unsized']} jobs not yet sized were not admitted"
    report = heuristic_report("max", objective, time.perf_counter() - start, name,
                              {**options, "seed": solve_options.seed}, message)
    return MethodResult(report, decision(admitted, by_id, stats))


def _short(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def run_smd(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """Algorithm 1 + Algorithm 2 per job, then Frieze-Clarke over the jobs.

    Anytime: ``start + time_limit`` is a hard deadline for the whole run; jobs not yet sized
    when it passes are not admitted, and the answer says it was cut short."""
    start = time.perf_counter()
    validate(options)
    view = smd_view(instance, options["overlap"])
    allocations: list[Allocation] = []
    lps = grid = draws = fallbacks = unsized = 0
    grid_complete = True
    alg1_s = 0.0
    deadline = start + solve_options.time_limit
    for k, job in enumerate(view.jobs):
        report_progress(k, len(view.jobs))
        if not job.admissible:
            allocations.append(NONE)
            continue
        if time.perf_counter() > deadline:
            allocations.append(NONE)
            unsized += 1
            continue
        if options["inner"] == "enumerate":
            allocations.append(best_integer(job))
            continue
        frac = algorithm1(job, options["epsilon1"], options["lp"], deadline_s=max(0.0, deadline - time.perf_counter()))
        lps += frac.lps
        grid += frac.grid_points
        grid_complete &= frac.complete
        alg1_s += frac.seconds
        scale = scale_factor(job, options["delta"]) if options["scale"] == "formula" else options["m_delta"]
        # one generator per job, so a job's draws do not depend on the other jobs (spec P23)
        rng = np.random.default_rng([solve_options.seed, job.index])
        alloc, used, fell_back = algorithm2(job, frac.x, options["attempts"], rng, scale)
        draws += used
        fallbacks += fell_back
        allocations.append(alloc)
    stats: dict[str, Any] = {"inner": options["inner"]}
    if options["inner"] == "grid":
        stats.update({"grid_points": grid, "lps": lps, "alg1_s": alg1_s, "draws": draws, "fallbacks": fallbacks,
                      "grid_complete": bool(grid_complete)})
    if unsized:  # only when the deadline left some, so an uncut run's decision is what it always was
        stats["unsized"] = unsized
    return _finish("smd", view, allocations, stats, options, solve_options, start)


def _baseline(name: str, inner: Callable[[SmdJob, str], Allocation], variant_option: str):
    def run(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
        start = time.perf_counter()
        validate(options)
        view = smd_view(instance, options["overlap"])
        deadline = start + solve_options.time_limit
        allocations: list[Allocation] = []
        unsized = 0
        for job in view.jobs:
            runs = job.admissible
            late = runs and time.perf_counter() > deadline
            unsized += late
            allocations.append(inner(job, options[variant_option]) if runs and not late else NONE)
        stats: dict[str, Any] = {"variant": options[variant_option]}
        if unsized:
            stats["unsized"] = unsized
        return _finish(name, view, allocations, stats, options, solve_options, start)

    return run


run_esw = _baseline("esw", esw, "esw")
run_optimus = _baseline("optimus", optimus, "optimus")
