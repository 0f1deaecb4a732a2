"""The hetero methods as toolkit methods: the scheme, its exact references and the baselines."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...errors import OptionError
from ...io.instance import Instance
from ...solvers import SolveOptions
from ..base import MethodResult, heuristic_report
from .baselines import greedy, random_placement
from .configs import JctTable, diagnose, magnitude
from .decision import decision
from .exchange import improve
from .scheme import (
    Market,
    best_category,
    count_categories,
    default_samples,
    enumerate_categories,
    equal_share,
    local_search,
    proportional_anchor,
    sample_categories,
    size_bounds,
)
from .timing import jct_rows
from .view import HeteroView, hetero_view

#: categories re-solved with the full R market rounds after screening with one
FINALISTS = 10

Runner = Callable[[Instance, Mapping[str, Any], SolveOptions], MethodResult]


def _market(view: HeteroView, options: Mapping[str, Any], split: str = "proportional", table: JctTable | None = None,
            deadline: float = math.inf) -> Market:
    if options["rounds"] < 1:
        raise OptionError(f"rounds must be >= 1, got {options['rounds']}", field="--set rounds")
    return Market(view, options["comm"], split, options["valuation"], options["rounds"], options["engine"], table, deadline)


def _finish(view: HeteroView, x: np.ndarray | None, options: Mapping[str, Any], name: str, start: float,
            split: str = "proportional", stats: Mapping[str, Any] | None = None, exhaustive: bool = False) -> MethodResult:
    """The method's report and decision.  An allocation that breaks a rule of the checker (a size
    out of range, a GPU model the job cannot use, caps that cannot hold its batch) is never
    reported: the run then ``failed`` with the reason, or, for an exhaustive search that saw
    every candidate and found none, the instance is ``infeasible``."""
    elapsed = time.perf_counter() - start
    reason = "no feasible placement found" if x is None else _invalid(view, x, options["comm"], split)
    if reason is not None:
        report = heuristic_report("min", None, elapsed, name, dict(options), reason)
        if exhaustive and x is None:  # every candidate was seen and none is feasible: that is a proof
            why = diagnose(view.instance, options)
            message = "every candidate was enumerated and none is feasible" + (f"; {why}" if why else "")
            report = dataclasses.replace(report, status="infeasible", message=message)
        return MethodResult(report, None)
    assert x is not None  # reason is None only for an allocation
    dec = decision(view, x, options, split, stats)
    jcts = np.array(list(dec["extra"]["jct_s"].values()))
    fair = dec["extra"]["fairness"]
    message = (f"Jain(slowdown) {fair['jain_slowdown']:.4f}, Jain(JCT) {fair['jain_jct']:.4f}, "
               f"max slowdown {fair['max_slowdown']:.3f}")
    if stats:
        message += "".join(f", {k} {v}" for k, v in stats.items())
        if stats.get("time_limit_reached"):
            message += "; cut short by the time limit: the best answer found so far"
    report = heuristic_report("min", float(jcts.mean()), time.perf_counter() - start, name, dict(options), message)
    if exhaustive:  # every candidate was evaluated: the answer is its own proof of optimality
        report = dataclasses.replace(report, status="optimal", bound=report.objective)
    return MethodResult(report, dec)


def bench_extra(instance: Instance, solution, options: Mapping[str, Any]) -> dict[str, Any]:
    """The row extras of ``mlsched bench``: the fairness measures of spec 3.6 (Jain over
    slowdowns and over JCTs, the maximum slowdown) of the answer, as its decision states them
    (the checker recomputes them from the batch splits)."""
    fair = (solution.decision.get("extra") or {}).get("fairness")
    return dict(fair) if isinstance(fair, dict) else {}


def _invalid(view: HeteroView, x: np.ndarray, comm: str, split: str) -> str | None:
    """Why the allocation ``x`` (S, G) breaks a rule the checker enforces, or ``None``."""
    x = np.asarray(x)
    if (x < 0).any() or (x.sum(axis=0) > view.counts).any():
        return "internal: the allocation uses more GPUs of a class than exist"
    k = x.sum(axis=1)
    lo, hi = (np.array([j.k_range[e] for j in view.jobs]) for e in (0, 1))
    runs = np.isfinite(jct_rows(view, np.arange(view.S), x, comm, split))
    for i in np.flatnonzero((k < lo) | (k > hi) | ~runs)[:1]:
        job = view.jobs[i]
        if not lo[i] <= k[i] <= hi[i]:
            return f"the placement found gives job {job.id} {k[i]} GPUs, outside its range {lo[i]}..{hi[i]}"
        return f"the placement found cannot run job {job.id} (GPU models or memory caps)"
    return None


def _placeable(view: HeteroView) -> bool:
    """Whether some category exists (every job its minimum size, on GPUs it can use)."""
    lo, hi = size_bounds(view)
    return bool((lo <= hi).all() and lo.sum() <= view.K)


def run_market(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    if not _placeable(view):
        return _finish(view, None, options, "market", start)
    market = _market(view, options, deadline=search_deadline(view, start, solve_options.time_limit))
    best = best_category(market, enumerate_categories(view, options["idle"] == "allow"))
    x = None if best is None else market.solve(best)[1]
    stats = {"categories": market.solves, "time_limit_reached": market.expired()}
    return _finish(view, x, options, "market", start, stats=stats)


def _sampled(view: HeteroView, options: Mapping[str, Any], seed: int, split: str,
             deadline: float = math.inf) -> tuple[np.ndarray | None, dict[str, Any]]:
    if not _placeable(view):
        return None, {}
    idle = options["idle"] == "allow"
    m = options["samples"] or default_samples(view, idle)
    if m < 0 or options["budget"] < 0 or options["starts"] < 1:
        raise OptionError("samples and budget must be >= 0, starts >= 1", field="--set")
    market = _market(view, options, split, deadline=deadline)
    # screen categories with one market round (measured: the same ranking quality at half the
    # cost), then give the best few the full R rounds; R rounds never do worse than one
    screen = _market(view, {**options, "rounds": 1}, split, market.jct_table, deadline)
    rng = np.random.default_rng(seed)
    cats = sample_categories(view, m, rng, options["distribution"], idle, deadline)
    cats += [a for a in (equal_share(view), proportional_anchor(view)) if idle or sum(a) == view.K]
    # at the time limit, rank what was screened so far (always at least one category)
    screened: dict[tuple[int, ...], float] = {}
    for c in dict.fromkeys(cats):
        if screened and screen.expired():
            break
        screened[c] = screen.average(c)
    ranked = [c for c in sorted(screened, key=screened.__getitem__) if np.isfinite(screened[c])]
    if not ranked:
        return None, {"samples": m, "sampled_categories": screen.solves}
    sampled = screen.solves
    if options["budget"] > 0:
        local_search(screen, ranked[:options["starts"]], max(options["budget"], sampled), idle, options["search"] == "first")
    finalists = sorted(screen.cache, key=lambda k: screen.cache[k][0])[:FINALISTS]
    best, value = finalists[0], market.average(finalists[0])
    for c in finalists[1:]:
        if market.expired():
            break
        if market.average(c) < value:
            best, value = c, market.average(c)
    total = count_categories(view, idle)
    # C(K, S) outgrows every JSON reader's integers (and floats) at a few hundred jobs
    total_out: int | str = total if total <= 2**53 else magnitude(total)
    return market.solve(best)[1], {"samples": m, "sampled_categories": sampled, "market_solves": screen.solves + market.solves,
                                   "categories_total": total_out, "time_limit_reached": screen.expired() or market.expired()}


def search_deadline(view: HeteroView, start: float, time_limit: float) -> float:
    """When the search must stop so that the answer is written within ``time_limit``: building the
    decision (batch splits, JCTs, fairness) costs about a millisecond per job (0.5 s of CPU at
    1,686 jobs), so that much, at most a tenth of the limit, is kept for it."""
    return start + time_limit - min(0.1 * time_limit, 0.2 + 0.001 * view.S)


def run_sampling(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    x, stats = _sampled(view, options, solve_options.seed, "proportional", search_deadline(view, start, solve_options.time_limit))
    return _finish(view, x, {**options, "seed": solve_options.seed}, "sampling", start, stats=stats)


def run_sampling_ls(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """``sampling``'s answer improved by the exchange search (:mod:`.exchange`) in the time left."""
    start = time.perf_counter()
    view = hetero_view(instance)
    deadline = search_deadline(view, start, solve_options.time_limit)
    x, stats = _sampled(view, options, solve_options.seed, "proportional", deadline)
    if x is not None:
        x, moved = improve(view, x, options["comm"], deadline=deadline)
        stats["exchange_moves"] = moved["moves"]
        stats["time_limit_reached"] = bool(stats.get("time_limit_reached")) or bool(moved["time_limit_reached"])
    return _finish(view, x, {**options, "seed": solve_options.seed}, "sampling-ls", start, stats=stats)


def run_no_balance(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    x, stats = _sampled(view, options, solve_options.seed, "equal", search_deadline(view, start, solve_options.time_limit))
    return _finish(view, x, {**options, "seed": solve_options.seed}, "no-balance", start, "equal", stats)


def run_equal_share(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    x = _market(view, options).solve(equal_share(view))[1] if _placeable(view) else None
    return _finish(view, x, options, "equal-share", start)


def run_greedy(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    return _finish(view, greedy(view, options["comm"]) if _placeable(view) else None, options, "greedy", start)


def run_random(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    x = random_placement(view, np.random.default_rng(solve_options.seed), comm=options["comm"],
                         deadline=start + solve_options.time_limit) if _placeable(view) else None
    return _finish(view, x, {**options, "seed": solve_options.seed}, "random", start)


def run_bundles(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    from .oracles import variant_a  # SciPy and the market: only for the oracles

    start = time.perf_counter()
    view = hetero_view(instance)
    if not _placeable(view):
        return _finish(view, None, options, "bundles", start, exhaustive=True)
    x, seen, complete = variant_a(view, options["comm"], "mm" if options["engine"] == "mm" else "hungarian",
                                  start + solve_options.time_limit)
    return _finish(view, x, options, "bundles", start, stats={"bundle_categories": seen, "time_limit_reached": not complete},
                   exhaustive=complete)


def run_brute(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    from .oracles import brute_force

    view = hetero_view(instance)
    # not placeable: no category exists, so no assignment of GPUs to jobs can be feasible
    x, complete = brute_force(view, options["comm"], start + solve_options.time_limit) if _placeable(view) else (None, True)
    return _finish(view, x, options, "brute-force", start, stats={"time_limit_reached": not complete}, exhaustive=complete)
