"""The hetero methods as toolkit methods: the scheme, its exact references and the baselines."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable, Mapping

import numpy as np

from ...errors import OptionError
from ...io.instance import Instance
from ...solvers import SolveOptions
from ..base import MethodResult, heuristic_report
from .baselines import greedy, random_placement
from .configs import JctTable, decision
from .oracles import brute_force, variant_a
from .scheme import (Market, best_category, count_categories, default_samples, enumerate_categories, equal_share,
                     local_search, proportional_anchor, sample_categories, size_bounds)
from .view import HeteroView, hetero_view

MARKET_GUARANTEE = ("per category, the market allocation maximizes total valuation (Shapley-Shubik); the full scheme "
                    "is exact when the valuation is, and measured within 0.5% of OPT on Gavel instances (spec 3.2)")
SAMPLING_GUARANTEE = ("if a fraction phi of categories is within 1+eps of OPT, M uniform samples miss them all with "
                      "probability <= (1-phi)^M (spec 3.4); no worst-case ratio")
EXACT_GUARANTEE = "exact: OPT (Shapley-Shubik within each category, every category solved)"

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
    if x is None:
        report = heuristic_report("min", None, time.perf_counter() - start, name, dict(options), "no feasible placement found")
        return MethodResult(report, None)
    dec = decision(view, x, options, split, stats)
    jcts = np.array(list(dec["extra"]["jct_s"].values()))
    fair = dec["extra"]["fairness"]
    message = (f"Jain(slowdown) {fair['jain_slowdown']:.4f}, Jain(JCT) {fair['jain_jct']:.4f}, "
               f"max slowdown {fair['max_slowdown']:.3f}")
    if stats:
        message += "".join(f", {k} {v}" for k, v in stats.items())
    report = heuristic_report("min", float(jcts.mean()), time.perf_counter() - start, name, dict(options), message)
    if exhaustive:  # every candidate was evaluated: the answer is its own proof of optimality
        report = dataclasses.replace(report, status="optimal", bound=report.objective)
    return MethodResult(report, dec)


def _placeable(view: HeteroView) -> bool:
    """Whether some category exists (every job its minimum size, on GPUs it can use)."""
    lo, hi = size_bounds(view)
    return bool((lo <= hi).all() and lo.sum() <= view.K)


def run_market(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    if not _placeable(view):
        return _finish(view, None, options, "market", start)
    market = _market(view, options, deadline=start + solve_options.time_limit)
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
    market = _market(view, options, split)
    # screen categories with one market round (measured: the same ranking quality at half the
    # cost), then give the best few the full R rounds; R rounds never do worse than one
    screen = _market(view, {**options, "rounds": 1}, split, market.jct_table, deadline)
    rng = np.random.default_rng(seed)
    cats = sample_categories(view, m, rng, options["distribution"], idle)
    cats += [a for a in (equal_share(view), proportional_anchor(view)) if idle or sum(a) == view.K]
    ranked = [c for c in sorted(dict.fromkeys(cats), key=screen.average) if np.isfinite(screen.average(c))]
    if not ranked:
        return None, {"samples": m, "sampled_categories": screen.solves}
    sampled = screen.solves
    if options["budget"] > 0:
        local_search(screen, ranked[:options["starts"]], max(options["budget"], sampled), idle, options["search"] == "first")
    finalists = sorted(screen.cache, key=lambda k: screen.cache[k][0])[:FINALISTS]
    best = min(finalists, key=market.average)
    total = count_categories(view, idle)
    return market.solve(best)[1], {"samples": m, "sampled_categories": sampled, "market_solves": screen.solves + market.solves,
                                   "categories_total": total, "time_limit_reached": screen.expired()}


def run_sampling(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    x, stats = _sampled(view, options, solve_options.seed, "proportional", start + solve_options.time_limit)
    return _finish(view, x, {**options, "seed": solve_options.seed}, "sampling", start, stats=stats)


def run_no_balance(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    x, stats = _sampled(view, options, solve_options.seed, "equal", start + solve_options.time_limit)
    return _finish(view, x, {**options, "seed": solve_options.seed}, "no-balance", start, "equal", stats)


def run_equal_share(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    x = _market(view, options).solve(equal_share(view))[1] if _placeable(view) else None
    return _finish(view, x, options, "equal-share", start)


def run_greedy(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    return _finish(view, greedy(view) if _placeable(view) else None, options, "greedy", start)


def run_random(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    x = random_placement(view, np.random.default_rng(solve_options.seed)) if _placeable(view) else None
    return _finish(view, x, {**options, "seed": solve_options.seed}, "random", start)


def run_bundles(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    if not _placeable(view):
        return _finish(view, None, options, "bundles", start)
    x, seen, complete = variant_a(view, options["comm"], "mm" if options["engine"] == "mm" else "hungarian",
                                  start + solve_options.time_limit)
    return _finish(view, x, options, "bundles", start, stats={"bundle_categories": seen, "time_limit_reached": not complete},
                   exhaustive=complete)


def run_brute(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    start = time.perf_counter()
    view = hetero_view(instance)
    x, complete = brute_force(view, options["comm"], start + solve_options.time_limit) if _placeable(view) else (None, True)
    return _finish(view, x, options, "brute-force", start, stats={"time_limit_reached": not complete}, exhaustive=complete)
