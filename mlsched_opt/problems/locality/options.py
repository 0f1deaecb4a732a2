"""The locality family's option domains and method guarantees: plain values, imported by the family's
record (``__init__``) without loading its models, solvers or algorithms."""

from __future__ import annotations

LOCALITY = ("job", "pair")

PS_PLACEMENT = ("free", "with-workers")

ORDERS = ("sjf", "fifo")

RR_GUARANTEE = ("per job and deadline (spec 001 section 4.3, RR-PC): packing rows K1/K3 hold surely, each pattern is kept "
                "with its LP probability, and one attempt covers V at cost <= (1 + eta) LP_eps with probability >= "
                "1 - exp(-eps^2 V / (2 (1 + eps) A)) - 1/(1 + eta), A = w_max q_in; LP_eps is the LP on each slot's w_max best "
                "machines (between the all-machine LP and the 0-1 optimum, which it keeps exactly); no ratio is claimed for the "
                "online total")

PD_GUARANTEE = ("none proven here: OASiS-style prices with a beta-approximate subroutine weaken OASiS's 2 alpha "
                "(spec 001 section 3.3, heuristic); RR-PC's per-job guarantee as for greedy-rr")

SRPT_GUARANTEE = ("none proven here (our design): a list heuristic on many multi-resource machines; its single-machine "
                  "ancestor, preemptive shortest remaining processing time, is optimal for 1|r_j, pmtn|sum C_j (Schrage 1968)")
