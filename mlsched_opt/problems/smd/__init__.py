"""``smd``: admission and worker/PS sizing by the Sum-of-ratios Multi-dimensional-knapsack
Decomposition of Yu, Wu, Ji, Liu (IEEE INFOCOM 2021); spec ``papers/002_smd.md``.

One scheduling interval: admit a subset of parameter-server jobs and choose each admitted
job's workers ``w`` and PSs ``p`` to maximise the sum of sigmoid utilities of completion time
(layered iteration-time model, :mod:`.layered`), with cluster capacity reserved by each job's
declared limit.

Methods: ``exact`` (per-job enumeration + knapsack ILP, HiGHS or CP-SAT), ``smd``
(Algorithm 1 grid + LPs, Algorithm 2 rounding, Frieze-Clarke), ``esw`` and ``optimus``
(baseline inner allocations with the same outer knapsack).  Each of them stops at its time
limit with the best answer so far (jobs not yet sized are not admitted).  The family's bound
(``relaxation``) is the knapsack LP of the exact model, on arrays (:func:`.bound.lp_relaxation`).

``mlsched import philly|pollux --problem smd`` builds instances from real traces (:mod:`.trace`).
"""

from __future__ import annotations

from ..base import Family, Method, MethodKind, Option, TraceImport, lazy
from .generate import OPTIONS as GENERATE_OPTIONS
from .options import (
    EPSILON1_MAX,
    EPSILON1_MIN,
    EPSILON2_MAX,
    EPSILON2_MIN,
    ESW_VARIANTS,
    LP_ENGINES,
    MAX_ATTEMPTS,
    OPTIMUS_VARIANTS,
    OVERLAPS,
    PROBABILITY_MIN,
    SMD_GUARANTEE,
)
from .trace import OPTIONS as TRACE_OPTIONS

L = lazy(__name__)


def contract():
    """The data of the contract checks (:mod:`mlsched_opt.testing`), imported only when they run."""
    from ...testing import Case, Contract

    return Contract(toy="smd-toy.toml",
                    tiny=(Case(5, 3),
                          Case(5, 3, options={"overlap": "sequential"}, seeds=(1,))))


FAMILY = Family(
    name="smd",
    summary="admit PS jobs and size workers/PSs for max total sigmoid utility, capacity reserved by declared limits (SMD)",
    quick="esw",  # --method exact answers with it first (problems/anytime.py)
    build_model=L("formulation:build_model"),
    decision_from_model=L("formulation:decision_from_model"),
    check=L("check:check"),
    sense=lambda options: "max",
    generate=L("generate:generate"),
    generate_options=GENERATE_OPTIONS,
    algorithms=(
        Method("smd", MethodKind.HEURISTIC, L("methods:run_smd"),
               "SMD: grid + Charnes-Cooper LPs, scaled randomized rounding (seeded), Frieze-Clarke admission",
               guarantee=SMD_GUARANTEE),
        Method("esw", MethodKind.HEURISTIC, L("methods:run_esw"),
               "ESW baseline: w = p (largest that fits, or best with esw=best), same admission step"),
        Method("optimus", MethodKind.HEURISTIC, L("methods:run_optimus"),
               "Optimus-style greedy from (1,1): add the worker or PS that lowers the time most, same admission step"),
    ),
    options=(
        Option("epsilon1", 0.1, None,
               "Algorithm 1 grid ratio (paper 0.01; the grid grows as (1/eps1)^(J-1), refused beyond 5,000,000 points)",
               minimum=EPSILON1_MIN, maximum=EPSILON1_MAX),
        Option("epsilon2", 0.5, None, "Frieze-Clarke accuracy: k = ceil(R(1-eps2)/eps2) (paper 0.01 enumerates every subset; "
               "the search stops at the time limit)", minimum=EPSILON2_MIN, maximum=EPSILON2_MAX),
        Option("attempts", 10, None, "F: rounding draws per job (best feasible kept)", minimum=1, maximum=MAX_ATTEMPTS, flag="--attempts"),
        Option("scale", "none", ("none", "formula"), "rounding scale: none uses m_delta; formula uses Lemma 3 with delta"),
        Option("m_delta", 1.0, None, "M_delta when scale=none (paper experiments: 1), in (0, 1]", minimum=PROBABILITY_MIN, maximum=1.0),
        Option("delta", 0.5, None, "delta of Lemma 3 when scale=formula, in (0, 1]", minimum=PROBABILITY_MIN, maximum=1.0),
        Option("inner", "grid", ("grid", "enumerate"), "SMD's inner step: Algorithms 1-2, or exact enumeration (isolates the outer loss)"),
        Option("outer", "ptas", ("ptas", "exact"),
               "admission step of smd/esw/optimus: Frieze-Clarke, or the exact knapsack (isolates the inner loss)"),
        Option("lp", "vertex", LP_ENGINES, "Algorithm 1's LP solver: batched exact 2-D vertex enumeration, or Charnes-Cooper LPs in HiGHS"),
        Option("overlap", "instance", OVERLAPS, "override every job's overlap scheme (changes every completion time: a problem option)",
               problem=True),
        Option("esw", "max", ESW_VARIANTS, "ESW variant"),
        Option("optimus", "stop", OPTIMUS_VARIANTS, "Optimus stopping rule"),
    ),
    trace=TraceImport(("philly", "pollux"), L("trace:from_trace"), TRACE_OPTIONS),
    relaxation=L("bound:lp_relaxation"),
    start=L("formulation:exact_start"),
    model_cells=lambda instance: len(instance.jobs),  # the knapsack: one binary per job
    contract=contract,
)
