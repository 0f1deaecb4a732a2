"""``locality``: locality-aware online scheduling of parameter-server jobs by a mixed packing/covering
program and randomized rounding; spec ``papers/001_locality_rounding.md`` (Yu, Liu, Wu, Ji,
Bentley, IEEE TNSE 2022).  **The paper's body was not available: the model and algorithms are the
spec's reconstruction, implemented as our design.**

Workers and PSs of every job share one machine pool; a job whose workers and PSs all sit on one
machine in a slot trains at the intra-machine rate, otherwise at the inter-machine rate.  Jobs
arrive over a slotted horizon; the objective is the total weighted completion time
``sum_i w_i (C_i - a_i + 1)`` (a job that does not finish counts at ``C_i = T``).

Modules: :mod:`.view` (instance -> jobs and rates), :mod:`.pcilp` (the per-job, per-deadline
PC-ILP as arrays and as Pyomo), :mod:`.rounding` (RR-PC with repair, SMD-style scaled rounding),
:mod:`.online` (V-Greedy, V-PD), :mod:`.formulation` (the exact multi-job MILP and its decision), :mod:`.methods`,
:mod:`.baselines`, :mod:`.bound` (the pooled-capacity Lagrangian bound, and every job alone),
:mod:`.priority` (``srpt``), :mod:`.exact` (``--method exact`` at any size),
:mod:`.check`, :mod:`.generate`, :mod:`.calibration` (Pollux / Gavel packed vs spread).

Methods: ``exact`` (the offline MILP where it is small; at any size ``srpt``, the pooled-capacity
bound and the restricted master's plan, issue 32), ``greedy-rr`` (V-Greedy + LP + RR-PC), ``pd-rr``
(V-PD), ``srpt`` (slot by slot, least remaining resource volume first; our design), and the
baselines of section 5.3: ``greedy-ilp`` (exact per-job program, isolating the rounding loss),
``unaware`` (plans with q_in := q_ex), ``colocate`` and ``spread``; FIFO vs SJF is ``--set order=``.

Problem options (the checker enforces them, ``exact`` models them): ``locality`` (job / pair)
and ``ps_placement``: ``free`` (default: any PS placement the checker accepts, so ``exact``'s
"optimal" is optimal for what ``check`` accepts) or ``with-workers`` (observation O3 as a rule;
O3 is a restriction, not "without loss of generality": see :mod:`.formulation`).
"""

from __future__ import annotations

from ..base import Family, Method, MethodKind, Option, TraceImport, lazy
from .generate import OPTIONS as GENERATE_OPTIONS
from .options import LOCALITY, ORDERS, PD_GUARANTEE, PS_PLACEMENT, RR_GUARANTEE, SRPT_GUARANTEE
from .trace import OPTIONS as TRACE_OPTIONS

L = lazy(__name__)


def contract():
    """The data of the contract checks (:mod:`mlsched_opt.testing`), imported only when they run."""
    from ...testing import Case, Contract

    return Contract(toy="locality-toy.toml",
                    tiny=(Case(3, 2, slots=6, generate={"work_max": 8.0}),
                          Case(3, 2, slots=6, generate={"work_max": 8.0}, options={"ps_placement": "with-workers"}, seeds=(1,))))


FAMILY = Family(
    name="locality",
    summary="online worker/PS placement with locality: PC-ILP, LP + randomized rounding, min total weighted completion time",
    quick="srpt",  # --method exact answers with it first (problems/anytime.py)
    build_model=L("formulation:build_model"),
    decision_from_model=L("formulation:decision_from_model"),
    check=L("check:check"),
    sense=lambda options: "min",
    generate=L("generate:generate"),
    generate_options=GENERATE_OPTIONS,
    rescore=L("decision:rescore"),
    relaxation=L("bound:capacity_bound"),
    bound_label="pooled-capacity Lagrangian (bound)",
    algorithms=(
        # replaces the generic MILP route: the MILP where it is small, a pooled-capacity search at any size
        Method("exact", MethodKind.EXACT, L("exact:exact_method"),
               "the exact MILP where small (certified); at any size srpt, the pooled-capacity Lagrangian bound and the "
               "restricted master's plan (HiGHS), feasible with a proven gap"),
        Method("greedy-rr", MethodKind.ONLINE, L("methods:run_greedy_rr"),
               "V-Greedy: earliest deadline whose LP (target (1+eps)V) rounds by RR-PC (F attempts, repair) to a covering plan",
               guarantee=RR_GUARANTEE),
        Method("pd-rr", MethodKind.ONLINE, L("methods:run_pd"),
               "V-PD: OASiS-style prices as pattern costs, best payoff over deadlines by LP + RR-PC",
               guarantee=PD_GUARANTEE),
        Method("greedy-ilp", MethodKind.BASELINE, L("baselines:run_greedy_ilp"),
               "V-Greedy with the exact per-job 0-1 program instead of LP + rounding"),
        Method("unaware", MethodKind.BASELINE, L("baselines:run_unaware"),
               "V-Greedy planning with q_in := q_ex (locality-unaware), true rates when executing"),
        Method("colocate", MethodKind.BASELINE, L("baselines:run_colocate"),
               "V-Greedy with co-located patterns only (one machine per slot)"),
        Method("spread", MethodKind.BASELINE, L("baselines:run_spread"), "V-Greedy with spread patterns only"),
        Method("srpt", MethodKind.ONLINE, L("priority:run_srpt"),
               "slot by slot, the arrived jobs with the least remaining resource volume per weight first (our design)",
               guarantee=SRPT_GUARANTEE),
    ),
    options=(
        Option("order", "sjf", ORDERS, "order of simultaneous arrivals: smallest estimated work first, or FIFO (pitfall P10)"),
        Option("locality", "job", LOCALITY,
               "job: q_in only when everything is on one machine; pair: per worker-PS shares (P2, evaluation only)",
               problem=True),
        Option("ps_placement", "free", PS_PLACEMENT,
               "free: any machine may host a job's PSs (spec P-ORIG; exact models it); with-workers: observation O3 as a rule, "
               "exactly ceil(n/gamma) PSs beside every n workers and no PS-only machine (a restriction: O3 is not WLOG)",
               problem=True),
        Option("epsilon", -1.0, None, "covering inflation: the LP targets (1 + epsilon) V; -1 (default) tries 0, 0.05 and 0.1 per LP "
               "and keeps the cheapest covering plan (pitfall P6); a value in [0, 1] pins one", minimum=-1.0, maximum=1.0,
               flag="--epsilon"),
        Option("attempts", 5, None, "RR-PC attempts F per LP before the repair", minimum=1, maximum=1000, flag="--attempts"),
        Option("l_scale", 1.0, None, "pd-rr: factor on the price floor L (pitfall P16)", minimum=1e-6, maximum=1e6),
    ),
    trace=TraceImport(("philly", "pollux"), L("trace:from_trace"), TRACE_OPTIONS),
    contract=contract,
)
