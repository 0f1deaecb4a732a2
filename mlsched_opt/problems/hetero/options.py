"""The hetero family's option domains and method guarantees: plain values, imported by the family's
record (``__init__``) without loading its models, solvers or algorithms."""

from __future__ import annotations

VALUATIONS = ("gradient", "rho")

DISTRIBUTIONS = ("uniform", "centered")

MARKET_GUARANTEE = ("per category, the market allocation maximizes total valuation (Shapley-Shubik); the full scheme "
                    "is exact when the valuation is, and measured within 0.5% of OPT on Gavel instances (spec 3.2)")

SAMPLING_GUARANTEE = ("if a fraction phi of categories is within 1+eps of OPT, M uniform samples miss them all with "
                      "probability <= (1-phi)^M (spec 3.4); no worst-case ratio")

SAMPLING_LS_GUARANTEE = ("none: the exchange search ends at a local optimum of its moves, never worse than the sampled "
                        "answer it starts from (our design)")

EXACT_GUARANTEE = "exact: OPT (Shapley-Shubik within each category, every category solved)"

#: Option domains (``--set``): far above any useful value, small enough that no list or array
#: sized by them is a memory hazard; the loops they drive also stop at the time limit.
MAX_ROUNDS = 100

MAX_SAMPLES = 1_000_000

MAX_BUDGET = 10_000_000

MAX_STARTS = 1000

ENGINES = ("auto", "hungarian", "mm", "transport")

#: the communication terms of the ``comm`` option (the models are :data:`.timing.COMM_MODELS`)
COMM_NAMES = ("ring", "ps", "none")
