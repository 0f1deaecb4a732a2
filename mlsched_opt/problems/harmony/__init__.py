"""``harmony``: interference-aware placement of PS and all-reduce jobs, learned by deep RL.

Bao, Peng, Wu, "Deep Learning-based Job Placement in Distributed Machine Learning Clusters",
IEEE INFOCOM 2019, and its ToN 2023 version; spec ``papers/004_harmony.md``.  The papers' bodies
were not available: the interference world (section 3), the generator, the state encoding, the
network and the training loop are the spec's proposals, implemented as our design.

Jobs with fixed numbers of workers and PSs arrive over scheduling intervals; at each interval the
new jobs' tasks are placed one at a time (gang: all or none), never migrated; co-located tasks
slow each other down and a synchronous job runs at its slowest worker's pace.  Minimize the
average JCT (intervals).

Problem options: ``world`` (the interference world) and ``starts``: ``any`` (default; a job may
start in any interval from its arrival on, so waiting for a bad neighbour to finish is allowed)
or ``simultaneous`` (every job starts in its arrival interval, spec 6a's static reference).  The
exact search, every method and the checker enforce both.

Methods: ``exact`` (exhaustive search over static batches, placements and start intervals; beyond
its size, anytime: the best of a fixed list of heuristic runs with the throughput LP's bound),
``surrogate`` (the linearized MILP of 6c, HiGHS or CP-SAT, scored in the true world), ``myopic``
(6b's online reference), ``drl`` (Harmony's policy; needs the ``rl`` extra), ``marginal`` (each job
where it adds the least delay, or held back; our design, issue 32) and the heuristics
``load-balance``, ``tetris``, ``least-interference``, ``packing``, ``standalone``, ``random`` and the
deferral variants ``least-interference-defer`` and ``standalone-defer``.  ``--set order`` sets the
queue order of every simulated method (``fifo``, the default and the papers', ``sjf`` or ``area``).
The bound (``relaxation``) is the throughput LP of :mod:`.bound`, never below every job alone.

Deferral [our design, issue 21]: the simulator asks a chooser, at each queued job's turn,
whether to hold it back this interval ("not now"); a job may be held back by choice only within
``--set defer=D`` intervals of its arrival (default 20) and only while some job holds servers, so
no job waits by choice past D intervals (it may still wait for capacity).  The checker needs no
rule for it: under ``starts=any`` it accepts any start from the arrival on, which is a superset
of what any deferral rule produces, and ``exact`` already searches start intervals.
"""

from __future__ import annotations

from ..base import Family, Method, MethodKind, Option, TraceImport, lazy
from .generate import OPTIONS as GENERATE_OPTIONS
from .options import (
    DEFER_MAX,
    DEFERRING,
    DRL_GUARANTEE,
    EXACT_GUARANTEE,
    HOLD,
    HOLD_SHARE,
    MARGINAL_GUARANTEE,
    MAX_INTERVALS,
    MYOPIC_GUARANTEE,
    ORDERS,
    SURROGATE_GUARANTEE,
    WORLDS,
)
from .rl.options import TRAIN_OPTIONS
from .trace import OPTIONS as TRACE_OPTIONS

L = lazy(__name__)

#: values of the ``starts`` problem option
STARTS = ("any", "simultaneous")


def _train(spec):
    from .rl.train import train_command

    return train_command(spec)


def contract():
    """The data of the contract checks (:mod:`mlsched_opt.testing`), imported only when they run."""
    from ...testing import Case, Contract

    return Contract(toy="harmony-toy.toml",
                    # exact search takes static batches only (every job at interval 0) of at most 4 jobs, short
                    # ones (under starts=any it also enumerates start intervals); the online trace is for the others
                    tiny=(Case(3, 3, generate={"static": True, "min_intervals": 1.0, "max_intervals": 8.0}),
                          Case(3, 3, generate={"static": True, "min_intervals": 1.0, "max_intervals": 8.0},
                               options={"starts": "simultaneous"}, seeds=(1,)),
                          Case(25, 4, seeds=(5,), exact=False)),
                    free_text=("model",))  # the trained policy's file


FAMILY = Family(
    name="harmony",
    summary="interference-aware placement of PS/all-reduce jobs arriving over intervals, min average JCT (Harmony, deep RL)",
    build_model=L("formulation:build_model"),
    decision_from_model=L("formulation:decision_from_model"),
    check=L("check:check"),
    sense=lambda options: "min",
    generate=L("generate:generate"),
    generate_options=GENERATE_OPTIONS,
    # the surrogate's LP relaxation bounds nothing in the true world; the bound is the throughput LP
    # (capacity and co-location throughput over time, never below every job alone)
    relaxation=L("bound:throughput_bound"),
    bound_label="throughput LP (bound)",
    train=_train,
    train_options=TRAIN_OPTIONS,
    algorithms=(
        Method("exact", MethodKind.ORACLE, L("methods:run_exact"),
               "exhaustive search of a static batch in the true world: placements and start intervals "
               "(server symmetry, proven delay bound); beyond its size anytime: the best of a fixed list of heuristic "
               "runs with the throughput LP's bound",
               guarantee=EXACT_GUARANTEE),
        Method("surrogate", MethodKind.ORACLE, L("methods:run_surrogate"),
               "linearized pairwise-interference MILP (spec 6c, --solver cpsat|highs), scored in the true world",
               guarantee=SURROGATE_GUARANTEE),
        Method("myopic", MethodKind.HEURISTIC, L("methods:run_myopic"),
               "per interval, the joint placement of up to 3 queued jobs maximizing the sum of normalized speeds",
               guarantee=MYOPIC_GUARANTEE),
        Method("drl", MethodKind.HEURISTIC, L("methods:run_drl"),
               "Harmony: the trained actor-critic policy, one task per action, argmax (--model PATH)",
               guarantee=DRL_GUARANTEE, requires="torch"),
        Method("load-balance", MethodKind.BASELINE, L("methods:run_load_balance"),
               "the least-loaded feasible server (Kubernetes/Mesos spreading)"),
        Method("tetris", MethodKind.BASELINE, L("methods:run_tetris"), "multi-resource packing by demand/free alignment (Tetris)"),
        Method("least-interference", MethodKind.BASELINE, L("methods:run_least_interference"),
               "LIF-pairwise: least profiled pairwise slowdown"),
        Method("packing", MethodKind.BASELINE, L("methods:run_packing"), "bin packing: the fullest server that fits"),
        Method("standalone", MethodKind.BASELINE, L("methods:run_standalone"),
               "standalone-first: a server with no other job, else the least loaded"),
        Method("random", MethodKind.BASELINE, L("methods:run_random"), "a random feasible server (seeded)"),
        Method("marginal", MethodKind.HEURISTIC, L("methods:run_marginal"),
               "each queued job where it adds the least delay (its slowdown and its neighbours'), held back while that "
               "exceeds --set hold + hold_share x its standalone run (our design)",
               guarantee=MARGINAL_GUARANTEE),
        Method("least-interference-defer", MethodKind.BASELINE, L("methods:run_least_interference_defer"),
               "least-interference that holds a job back (--set defer=D) while it would run below "
               f"{DEFERRING['least-interference-defer'][1]:g} of its standalone speed or a shorter job queues behind it"),
        Method("standalone-defer", MethodKind.BASELINE, L("methods:run_standalone_defer"),
               "standalone-first that holds a job back (--set defer=D) while it would run below "
               f"{DEFERRING['standalone-defer'][1]:g} of its standalone speed or a shorter job queues behind it"),
    ),
    options=(
        Option("world", "default", WORLDS, "interference world: the spec's default, its 'hard' variant, or fitted to Gavel's pairs",
               problem=True),
        Option("starts", "any", STARTS,
               "when a job may start: any interval from its arrival on (a job may wait, gang semantics) or only its arrival "
               "interval (simultaneous: spec 6a's static reference)", problem=True),
        Option("model", "", None, "drl: the trained policy file (default: models/harmony-drl.pt; tensors only, never code)",
               flag="--model"),
        Option("defer", DEFER_MAX, None,
               "the deferral rule of drl and the *-defer heuristics: a queued job may be held back by choice only within "
               "this many intervals of its arrival (then it starts as soon as it fits; 0: never held back)",
               minimum=0, maximum=10_000),
        Option("group", 3, None, "myopic: queued jobs placed jointly per search", minimum=1, maximum=4),
        Option("order", "fifo", ORDERS,
               "queue order of every simulated method: fifo (arrival; a job rolled back stays at the head), sjf (shortest "
               "standalone run first) or area (fewest worker-intervals, W x standalone run, first)"),
        Option("hold", HOLD, None,
               "marginal: hold a queued job back while placing it would add more than hold + hold_share x its standalone "
               "run intervals of delay (its own slowdown and its neighbours')", minimum=0.0, maximum=1e9),
        Option("hold_share", HOLD_SHARE, None, "marginal: see hold", minimum=0.0, maximum=1e6),
        Option("max_intervals", MAX_INTERVALS, None,
               "refuse before simulating when the jobs' standalone runs add up to more scheduling intervals than this",
               minimum=1, maximum=100_000_000),
    ),
    trace=TraceImport(("philly", "pollux"), L("trace:from_trace"), TRACE_OPTIONS),
    contract=contract,
)
