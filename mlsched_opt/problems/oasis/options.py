"""The oasis family's option domains and method guarantees: plain values, imported by the family's
record (``__init__``) without loading its models, solvers or algorithms."""

from __future__ import annotations

#: Problem option ``ranges``: ``instance`` enforces the jobs' workers/ps ranges as in the module
#: docstring; ``paper`` keeps only the paper's rules (the cap (3), (6) and (7)).
RANGES = ("instance", "paper")

UNITS = ("chunks", "worker-slots")

OASIS_GUARANTEE = ("Theorem 4 (Bao et al. 2018): OPT / OASiS <= 2 alpha, alpha = max(1, ln(U1/L1), ln(U2/L2)), "
                   "with U, L from eqs (23)-(26) (prices=formula) and demands small next to capacities")

REPLAN_GUARANTEE = ("none (our design, a rolling-horizon heuristic): at each arrival every known job not started is planned "
                    "jointly on the capacity left; it never looks at later arrivals")

#: Offline MILPs up to this many variables are built (by Pyomo) and solved to a certified optimum, from the
#: search's schedule; larger instances go to the plan-improve search of :mod:`mlsched_opt.problems.oasis.exact` (our design: with Philly
#: jobs, 62,000 variables (200 jobs, 15 + 15 servers) took 35 s to build, solve and certify on 2 idle cores and
#: 187 s on 2 loaded ones; 55,000 (500 jobs, 5 + 5 servers) 233 s, and the certification did not end, where
#: the search reaches the window LP's bound in seconds).
FULL_MODEL_MAX = 50_000
