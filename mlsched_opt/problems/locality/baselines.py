"""The baselines of spec 001 section 5.3: V-Greedy (:func:`.methods.greedy`) with one ingredient
changed, so that each isolates one effect.  No guarantee is claimed for any of them.

* ``greedy-ilp``: the exact per-job 0-1 program instead of LP + RR-PC (the rounding loss);
* ``unaware``: plans with ``q_in := q_ex``, executes at the true rates (the value of locality);
* ``colocate`` / ``spread``: one pattern kind only (the value of choosing per slot).
"""

from __future__ import annotations

from .methods import greedy
from .pcilp import CO_LOCATED, SPREAD

#: The pattern kinds of the one-kind baselines.
KINDS = {"colocate": (CO_LOCATED,), "spread": (SPREAD,)}

run_greedy_ilp = greedy("greedy-ilp", solver="ilp")
run_unaware = greedy("unaware", plan="unaware")
run_colocate = greedy("colocate", kinds=KINDS["colocate"])
run_spread = greedy("spread", kinds=KINDS["spread"])
