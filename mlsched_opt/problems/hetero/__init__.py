"""``hetero``: multi-job placement, job sizing and load balancing on heterogeneous GPUs.

Liu, Wang, Huang, Pan, "Sampling-Based Multi-Job Placement for Heterogeneous Deep Learning
Clusters", IEEE TPDS 35(6), 2024; spec ``papers/003_hetero_sampling.md``.  The paper's body was
not available: the model and the scheme are the spec's reconstruction, implemented as our
design.  Every job starts at once on a disjoint set of GPUs; its global batch is split in
proportion to speed (Lemma 1, integer batches); ring all-reduce communication; minimize the
average JCT.

Methods: ``exact`` (configuration ILP, HiGHS or CP-SAT, where it fits; column generation with
exact pricing and price-and-branch beyond: :mod:`.exact`), ``market`` (every job-size category,
matching market per category), ``sampling`` (sampled categories + local search),
``sampling-ls`` (the sampled answer improved by exchanges of GPUs between jobs), ``bundles``
(Variant A, exact by bundle categories), ``brute-force`` (tiny clusters), and the baselines
``greedy``, ``random``, ``equal-share``, ``no-balance``.  Real traces (``mlsched import
alibaba|philly|pollux --problem hetero``): :mod:`.trace`.
"""

from __future__ import annotations

from ..base import Family, Method, MethodKind, Option, TraceImport, lazy
from .generate import OPTIONS as GENERATE_OPTIONS
from .options import (
    COMM_NAMES,
    DISTRIBUTIONS,
    ENGINES,
    EXACT_GUARANTEE,
    MARKET_GUARANTEE,
    MAX_BUDGET,
    MAX_ROUNDS,
    MAX_SAMPLES,
    MAX_STARTS,
    SAMPLING_GUARANTEE,
    SAMPLING_LS_GUARANTEE,
    VALUATIONS,
)
from .trace import OPTIONS as TRACE_OPTIONS

L = lazy(__name__)


def contract():
    """The data of the contract checks (:mod:`mlsched_opt.testing`), imported only when they run."""
    from ...testing import Case, Contract

    return Contract(toy="hetero-toy.toml",
                    # 2 GPUs per server: the configuration ILP and both exhaustive oracles stay tiny
                    tiny=(Case(4, 3, generate={"gpus_per_server": 2}),
                          Case(4, 3, generate={"gpus_per_server": 2}, options={"comm": "ps"}, seeds=(1,))),
                    free_text=("types",))  # a list of GPU model names


FAMILY = Family(
    name="hetero",
    summary="place, size and load-balance synchronous data-parallel jobs on mixed GPU types for min average JCT "
            "(sampling + matching markets)",
    quick="greedy",  # --method exact answers with it first (problems/anytime.py)
    build_model=L("formulation:build_model"),
    decision_from_model=L("formulation:decision_from_model"),
    check=L("check:check"),
    sense=lambda options: "min",
    generate=L("generate:generate"),
    generate_options=GENERATE_OPTIONS,
    diagnose=L("configs:diagnose"),
    relaxation=L("bound:lp_relaxation"),
    algorithms=(
        Method("exact", MethodKind.EXACT, L("exact:exact_method"),
               "the configuration ILP (--solver, --gap) where it fits; beyond, with HiGHS, column generation with exact pricing "
               "(the proven bound) and the ILP over the generated columns"),
        Method("sampling", MethodKind.HEURISTIC, L("methods:run_sampling"),
               "M sampled job-size categories + equal share, market per category, local search (seeded)",
               guarantee=SAMPLING_GUARANTEE),
        Method("sampling-ls", MethodKind.HEURISTIC, L("methods:run_sampling_ls"),
               "sampling, then exchanges of GPUs between jobs (moves of 1, 2, 4, ... GPUs, type swaps) while they help; our design",
               guarantee=SAMPLING_LS_GUARANTEE),
        Method("market", MethodKind.HEURISTIC, L("methods:run_market"),
               "every job-size category, matching market per category (JCT-gradient valuation, R rounds)",
               guarantee=MARKET_GUARANTEE),
        Method("bundles", MethodKind.ORACLE, L("methods:run_bundles"),
               "Variant A: every bundle category, one-to-one market (exact, small clusters)",
               guarantee=EXACT_GUARANTEE),
        Method("brute-force", MethodKind.ORACLE, L("methods:run_brute"), "every assignment of every GPU, (S+1)^K (test oracle, K <= 10)",
               guarantee="exact: OPT by exhaustion"),
        Method("greedy", MethodKind.HEURISTIC, L("methods:run_greedy"),
               "baseline: heaviest job first, its equal share of its fastest free GPUs"),
        Method("random", MethodKind.HEURISTIC, L("methods:run_random"), "baseline: a random category and random GPUs (seeded)"),
        Method("equal-share", MethodKind.HEURISTIC, L("methods:run_equal_share"), "baseline: K/S GPUs per job, chosen by the market"),
        Method("no-balance", MethodKind.HEURISTIC, L("methods:run_no_balance"),
               "baseline: the sampling scheme with an equal batch split (no Lemma 1)"),
    ),
    options=(
        Option("comm", "ring", COMM_NAMES, "communication term: ring all-reduce, one parameter server, or none", problem=True),
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
    trace=TraceImport(("alibaba", "philly", "pollux"), L("trace:from_trace"), TRACE_OPTIONS),
    contract=contract,
)
