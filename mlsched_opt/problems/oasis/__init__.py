"""``oasis``: online admission and per-slot worker/PS scheduling by primal-dual pricing (OASiS) of
Bao, Peng, Wu, Li (IEEE INFOCOM 2018); spec ``papers/000_oasis.md``.

Jobs arrive over a slotted horizon; each admitted job gets, in every slot, a number of workers on
worker servers and of PSs on PS servers, and earns a utility of its completion delay.

Methods: ``exact`` (the offline time-expanded MILP, HiGHS or CP-SAT), ``oasis`` (exponential
prices, best schedule by DP + greedy, admit on positive payoff), and the paper's baselines
``fifo``, ``drf``, ``rrh``, ``dorm``.

Problem option ``ranges`` (our design): ``instance`` (default) also enforces the jobs'
``workers = {min, max}`` and ``ps = {min, max}`` in every slot a job runs in (see :mod:`.view`);
``paper`` keeps only the paper's cap (3) and PS rules (6)-(7).  The other options are knobs of
the OASiS method.  The algorithms stop planning at ``--time-limit`` and return what they have
(status ``feasible``, the message says the run was cut short); sizes no method could handle
(:data:`.view.MAX_SLOTS`, ``MAX_CELLS``, ``MAX_TASKS``, ``MAX_WORK``, the DP's
:data:`.subroutine.MAX_TABLE`, the MILP's :data:`.decision.MAX_VARIABLES`) are refused up
front with the field named.

``mlsched import philly|pollux --problem oasis`` builds instances from real traces (:mod:`.trace`).

The family's bound (``relaxation``, used for certified ratios) is the window capacity LP of
:mod:`.bound`: one variable per (job, completion slot), capacity summed over servers and windows
of slots, solved by HiGHS on sparse arrays; it bounds every answer the checker accepts, so also
the exact optimum, and runs at the Alibaba cluster's size (2,000 jobs, 1,523 servers) in well
under a second.  Schedules are kept sparse (:class:`.view.TaskCounts`), so memory grows with the
tasks placed, not with jobs x servers x slots.
"""

from __future__ import annotations

from ..base import Family, Method, MethodKind, Option, TraceImport, lazy
from .generate import OPTIONS as GENERATE_OPTIONS
from .options import FULL_MODEL_MAX, OASIS_GUARANTEE, RANGES, REPLAN_GUARANTEE, UNITS
from .trace import OPTIONS as TRACE_OPTIONS

L = lazy(__name__)

#: Domain of the given prices: positive (the price function is L (U/L)^share) and finite [our design].
PRICE_MIN, PRICE_MAX = 1e-12, 1e12


def contract():
    """The data of the contract checks (:mod:`mlsched_opt.testing`), imported only when they run."""
    from ...testing import Case, Contract

    return Contract(toy="oasis-toy.toml",
                    # few slots and short jobs, so that the offline MILP proves its optimum at once
                    tiny=(Case(5, 2, slots=6, generate={"epochs_min": 1, "epochs_max": 5}),
                          Case(5, 2, slots=6, generate={"epochs_min": 1, "epochs_max": 5}, options={"ranges": "paper"}, seeds=(1,))))


FAMILY = Family(
    name="oasis",
    summary="online admission and per-slot worker/PS counts for max total utility of completion times (OASiS)",
    quick="oasis",  # --method exact answers with it first (problems/anytime.py)
    build_model=L("formulation:build_model"),
    decision_from_model=L("formulation:decision_from_model"),
    check=L("check:check"),
    sense=lambda options: "max",
    generate=L("generate:generate"),
    generate_options=GENERATE_OPTIONS,
    start=L("methods:exact_start"),
    algorithms=(
        Method("exact", MethodKind.EXACT, L("exact:exact_method"),
               "the offline MILP, solved to proven optimality (--solver, --gap) where it fits; beyond "
               f"{FULL_MODEL_MAX:,} variables a plan-improve search (column MILP, packing, LNS) with the window LP's bound"),
        Method("oasis", MethodKind.ONLINE, L("methods:run_oasis"),
               "OASiS: exponential prices, best schedule per arriving job (DP + greedy), admit on positive payoff",
               guarantee=OASIS_GUARANTEE),
        Method("replan", MethodKind.ONLINE, L("methods:run_replan"),
               "rolling-horizon re-plan: at each arrival, every known job not started is planned jointly (column LP/MILP, "
               "packing); started jobs keep their plans", guarantee=REPLAN_GUARANTEE),
        Method("fifo", MethodKind.BASELINE, L("methods:run_fifo"),
               "FIFO: arrival order, fixed gang drawn from [1, 30], no backfilling (seeded)"),
        Method("drf", MethodKind.BASELINE, L("methods:run_drf"), "DRF: all admitted, progressive filling of dominant shares every slot"),
        Method("rrh", MethodKind.BASELINE, L("methods:run_rrh"),
               "Risk-reward heuristic: admission by reward minus delay cost, run/pause by reward per resource-time (seeded)"),
        Method("dorm", MethodKind.BASELINE, L("methods:run_dorm"),
               "Dorm: all admitted, utilisation MILP with fairness and adjustment limits at every arrival/completion"),
    ),
    options=(
        Option("ranges", "instance", RANGES,
               "instance: every slot a job runs in keeps workers in [workers.min, min(N, workers.max)] and PSs in "
               "[ps.min, ps.max]; paper: only the paper's cap (3) and PS rules (6)-(7)", problem=True),
        # the options below are knobs of the OASiS method: they change neither the checker nor the objective
        Option("prices", "formula", ("formula", "estimated", "given"),
               "U, L from eqs (23)-(26) (the guarantee's), estimated from the jobs' value densities, or given as l1, u1, l2, u2"),
        Option("quantile", 0.25, None, "with prices=estimated: L is this quantile of the jobs' utility per resource-slot",
               minimum=0.0, maximum=1.0),
        Option("l1", 1.0, None, "L1 with prices=given", minimum=PRICE_MIN, maximum=PRICE_MAX),
        Option("u1", 16.0, None, "U1 (every resource) with prices=given", minimum=PRICE_MIN, maximum=PRICE_MAX),
        Option("l2", 1.0, None, "L2 with prices=given", minimum=PRICE_MIN, maximum=PRICE_MAX),
        Option("u2", 4.0, None, "U2 (every resource) with prices=given", minimum=PRICE_MIN, maximum=PRICE_MAX),
        Option("estimate", 1.0, None, "mis-estimation factor on every U/L (Fig. 6: 0.2 ... 10)", minimum=1e-6, maximum=1e6),
        Option("units", "chunks", UNITS, "DP work unit: the paper's chunks, or worker-slots (exact for (2)+(3))"),
    ),
    trace=TraceImport(("philly", "pollux"), L("trace:from_trace"), TRACE_OPTIONS),
    # the exact model's LP relaxation needs a variable per (job, server, slot); this one sums capacity over
    # servers and windows of slots, on arrays, and bounds every checked answer (see .bound)
    relaxation=L("bound:capacity_bound"),
    bound_label="window capacity LP (bound)",
    contract=contract,
)
