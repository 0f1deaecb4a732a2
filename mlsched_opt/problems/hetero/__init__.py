"""``hetero``: multi-job placement, job sizing and load balancing on heterogeneous GPUs.

Liu, Wang, Huang, Pan, "Sampling-Based Multi-Job Placement for Heterogeneous Deep Learning
Clusters", IEEE TPDS 35(6), 2024; spec ``papers/003_hetero_sampling.md``.  The paper's body was
not available: the model and the scheme are the spec's reconstruction, implemented as our
design.  Every job starts at once on a disjoint set of GPUs; its global batch is split in
proportion to speed (Lemma 1, integer batches); ring all-reduce communication; minimize the
average JCT.

Methods: ``exact`` (configuration ILP, HiGHS or CP-SAT), ``market`` (every job-size category,
matching market per category), ``sampling`` (sampled categories + local search), ``bundles``
(Variant A, exact by bundle categories), ``brute-force`` (tiny clusters), and the baselines
``greedy``, ``random``, ``equal-share``, ``no-balance``.  Real traces (``mlsched import
alibaba|philly|pollux --problem hetero``): :mod:`.trace`.
"""

from __future__ import annotations

from ..base import Family, Method, MethodKind, Option, TraceImport
from .check import check
from .formulation import build_model, decision_from_model, diagnose, lp_relaxation
from .generate import OPTIONS as GENERATE_OPTIONS, generate
from .market import ENGINES
from .methods import (
    EXACT_GUARANTEE,
    MARKET_GUARANTEE,
    MAX_BUDGET,
    MAX_ROUNDS,
    MAX_SAMPLES,
    MAX_STARTS,
    SAMPLING_GUARANTEE,
    run_brute,
    run_bundles,
    run_equal_share,
    run_greedy,
    run_market,
    run_no_balance,
    run_random,
    run_sampling,
)
from .scheme import DISTRIBUTIONS, VALUATIONS
from .timing import COMM_MODELS
from .trace import OPTIONS as TRACE_OPTIONS, from_trace

FAMILY = Family(
    name="hetero",
    summary="place, size and load-balance synchronous data-parallel jobs on mixed GPU types for min average JCT "
            "(sampling + matching markets)",
    build_model=build_model,
    decision_from_model=decision_from_model,
    check=check,
    sense=lambda options: "min",
    generate=generate,
    generate_options=GENERATE_OPTIONS,
    diagnose=diagnose,
    relaxation=lp_relaxation,
    algorithms=(
        Method("sampling", MethodKind.HEURISTIC, run_sampling,
               "M sampled job-size categories + equal share, market per category, local search (seeded)",
               guarantee=SAMPLING_GUARANTEE),
        Method("market", MethodKind.HEURISTIC, run_market,
               "every job-size category, matching market per category (JCT-gradient valuation, R rounds)",
               guarantee=MARKET_GUARANTEE),
        Method("bundles", MethodKind.ORACLE, run_bundles, "Variant A: every bundle category, one-to-one market (exact, small clusters)",
               guarantee=EXACT_GUARANTEE),
        Method("brute-force", MethodKind.ORACLE, run_brute, "every assignment of every GPU, (S+1)^K (test oracle, K <= 10)",
               guarantee="exact: OPT by exhaustion"),
        Method("greedy", MethodKind.HEURISTIC, run_greedy, "baseline: heaviest job first, its equal share of its fastest free GPUs"),
        Method("random", MethodKind.HEURISTIC, run_random, "baseline: a random category and random GPUs (seeded)"),
        Method("equal-share", MethodKind.HEURISTIC, run_equal_share, "baseline: K/S GPUs per job, chosen by the market"),
        Method("no-balance", MethodKind.HEURISTIC, run_no_balance, "baseline: the sampling scheme with an equal batch split (no Lemma 1)"),
    ),
    options=(
        Option("comm", "ring", tuple(COMM_MODELS), "communication term: ring all-reduce, one parameter server, or none", problem=True),
        Option("valuation", "gradient", VALUATIONS, "market valuation: JCT gradient (our design) or Gamma = rho (the re-implementation's)"),
        Option("rounds", 3, None, "R: market rounds per category (reference throughput refreshed between rounds)",
               minimum=1, maximum=MAX_ROUNDS),
        Option("engine", "auto", ENGINES,
               "market engine: hungarian (scipy), mm (ascending prices), transport (min-cost flow on classes), auto"),
        Option("samples", 0, None, "M: sampled categories (0 = min(50, 10% of all)); drawing stops at the time limit",
               minimum=0, maximum=MAX_SAMPLES, flag="--samples"),
        Option("distribution", "uniform", DISTRIBUTIONS, "category sampling distribution"),
        Option("budget", 1000, None, "local search: cap on market solves (0 = sampling only); the search also stops at the time limit",
               minimum=0, maximum=MAX_BUDGET),
        Option("search", "steepest", ("steepest", "first"), "local search: best neighbour, or the first improving one"),
        Option("starts", 3, None, "local search: start from this many best sampled categories", minimum=1, maximum=MAX_STARTS),
        Option("idle", "allow", ("allow", "forbid"),
               "whether the categories the market and sampling search may leave GPUs idle "
               "(P6; a search restriction, not a rule of the problem)"),
    ),
    trace=TraceImport(("alibaba", "philly", "pollux"), from_trace, TRACE_OPTIONS),
)
