"""The harmony family's option domains and method guarantees: plain values, imported by the family's
record (``__init__``) without loading its models, solvers or algorithms."""

from __future__ import annotations

WORLDS = ("default", "hard", "gavel")

#: default of the ``max_intervals`` option: simulated intervals a run may need before it is refused
MAX_INTERVALS = 1_000_000

#: the default deferral rule: a queued job may be held back by choice within this many intervals of its arrival
DEFER_MAX = 20

#: deferral variants: (heuristic, threshold on the speed it would run at now, shortest-first ratio)
#: (tuned on the default world's validation traces, defer=20; the test traces were not looked at)
DEFERRING = {
    "least-interference-defer": ("least-interference", 0.7, 1.5),
    "standalone-defer": ("standalone", 0.6, 1.5),
}

EXACT_GUARANTEE = ("exact where the exhaustive search fits: the minimum average JCT of a static batch by exhaustion, over "
                   "every placement and every start interval the checker accepts (starts=any: start vectors with a job at 0 "
                   "and total delay within the proven bound J*U - sum of shortest runs), or over placements starting every "
                   "job at 0 (starts=simultaneous); elsewhere (online traces, large batches) anytime: the best checked answer of "
                   "a fixed list of heuristic runs (marginal and the heuristics in other queue orders, hold thresholds "
                   "searched), 'feasible' with the throughput LP's proven bound, never 'optimal'")

#: queue orders of the simulated methods (``--set order``): arrival, shortest standalone run, fewest worker-intervals
ORDERS = ("fifo", "sjf", "area")

#: defaults of ``--set hold`` and ``--set hold_share``: marginal holds a job back while placing it would add more
#: delay than ``hold + hold_share x its standalone run`` intervals (the 2,000-job Philly window on 80 servers and the
#: shipped 40-job trace were best near these among a few pairs; not tuned further)
HOLD = 6.0
HOLD_SHARE = 0.5

MARGINAL_GUARANTEE = ("none: a greedy list schedule (our design, issue 32); each job goes where the delay it adds, its own "
                      "slowdown and its neighbours', is least, and waits while that exceeds --set hold + hold_share x its standalone run")

SURROGATE_GUARANTEE = ("optimal for the linearized surrogate (spec 6c, every job starting at interval 0) when the solver "
                       "proves it; none for the true JCT, whose gap the report gives when --method exact can run")

MYOPIC_GUARANTEE = "none: each interval's placement maximizes the sum of normalized speeds now (spec 6b(1)), not the JCT"

DRL_GUARANTEE = "none: a learned policy (spec 2); its gap to exact is measured by the suite benchmarks/harmony_exact.toml"
