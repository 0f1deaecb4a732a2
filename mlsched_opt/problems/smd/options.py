"""The smd family's option domains and method guarantees: plain values, imported by the family's
record (``__init__``) without loading its models, solvers or algorithms."""

from __future__ import annotations

#: Overlap override choices (``instance`` keeps each job's own ``speed_model.overlap``).
OVERLAPS = ("instance", "sequential", "wait-free", "priority", "priority-sim")

SMD_GUARANTEE = (
    "Theorem 5 (Yu et al. 2021): with probability > (1-(delta/2)^F)^I the utility is at least "
    "mu'(1-eps2)/mu* of the optimum, mu' the utility at (1+eps1)(24/M_delta+4)/delta times the optimal time "
    "(vacuous for sigmoid utilities: the factor is >= 28); the outer step alone keeps >= k/(k+R) of the knapsack optimum"
)

#: Option domains (``--set``).  The open ends of the paper's domains (epsilon1 > 0, epsilon2 in
#: (0, 1), delta and M_delta in (0, 1]) are closed at values far beyond any useful setting, so no
#: grid, subset search or draw count is sized by a hostile number; the searches also stop at the
#: time limit.
EPSILON1_MIN, EPSILON1_MAX = 1e-6, 100.0

EPSILON2_MIN, EPSILON2_MAX = 1e-6, 1.0 - 1e-6

PROBABILITY_MIN = 1e-9

MAX_ATTEMPTS = 1_000_000

LP_ENGINES = ("vertex", "highs")

ESW_VARIANTS = ("max", "best")

OPTIMUS_VARIANTS = ("stop", "fill")
