"""The oasis family's option domains and method guarantees: plain values, imported by the family's
record (``__init__``) without loading its models, solvers or algorithms."""

from __future__ import annotations

#: Problem option ``ranges``: ``instance`` enforces the jobs' workers/ps ranges as in the module
#: docstring; ``paper`` keeps only the paper's rules (the cap (3), (6) and (7)).
RANGES = ("instance", "paper")

UNITS = ("chunks", "worker-slots")

OASIS_GUARANTEE = ("Theorem 4 (Bao et al. 2018): OPT / OASiS <= 2 alpha, alpha = max(1, ln(U1/L1), ln(U2/L2)), "
                   "with U, L from eqs (23)-(26) (prices=formula) and demands small next to capacities")
