"""The numeric tolerances of every feasibility and objective comparison, named in one place.

A core module (no project imports): the checker, the certification of exact answers, the reports and
the simulators that must agree with the checker read their tolerances here.  Changing one
changes what the toolkit accepts, so each says why it has its value.
"""

from typing import Any

#: Relative tolerance of every checker rule (capacities, work done, stated objectives): solvers
#: return integer variables and work sums as floats a few ulps off, never off by a millionth.
CHECK_TOL = 1e-6

#: Relative remaining work below which a harmony job counts as finished, in the simulator and the
#: checker alike: advancing time event by event leaves a float residue of that order.
DONE_TOL = 1e-9

#: Smallest relative difference certification treats as a different objective: CP-SAT's float
#: objectives are exact only to about 1e-6.
CERTIFY_REL_TOL = 1e-6

#: Absolute slack on objective comparisons, so that two optima at 0 compare equal.
OBJECTIVE_ABS_TOL = 1e-9

#: Relative difference at which a bound equals its objective (the gap is reported as 0), and by
#: which a rescored decision must beat its reported objective: float round-off, not a better answer.
SAME_VALUE_TOL = 1e-9

#: Slack on a solver's "optimal" against the requested gap: the noise of evaluating a rescaled
#: objective in floating point (CP-SAT scales rows and objectives by powers of ten), not a gap any
#: solver could close.
GAP_SLACK = 1e-8

#: Absolute slack when a method, view or importer asks whether a demand fits a capacity, or floors
#: or ceils a ratio of them (spec 000 pitfall 11): the float residue of sums and products, far
#: below :data:`CHECK_TOL`, so a fit a method accepts is one the checker accepts.
FIT_TOL = 1e-9

#: Magnitude at which a solver's number means "infinite": HiGHS (option infinite_bound) and SCIP
#: (infinity()) both use 1e20, and SCIP's getDualbound() returns -1e20 when it has proven nothing.
#: A bound at or beyond it is no bound.
SOLVER_INFINITY = 1e20


def work_done_threshold(work: float) -> float:
    """The least work the locality and OASiS checkers count as ``work`` done: ``work (1 - CHECK_TOL) - CHECK_TOL``.

    The checkers' "work" rule (a job is done once ``done >= work_done_threshold(work)``), written
    once: an exact model's completion requirement, a simulator's completion test and a bound's work
    figure are derived from it, so that the model accepts exactly the work the checker accepts.
    The checkers call it, so model and checker read one rule.
    """
    return work * (1 - CHECK_TOL) - CHECK_TOL


def capacity_limit(cap: Any) -> Any:
    """The largest load the locality, OASiS and harmony checkers accept on capacity ``cap``: ``cap (1 + CHECK_TOL) + CHECK_TOL``.

    Their capacity rule (a load is over once ``load > capacity_limit(cap)``; OASiS's PS-bandwidth
    rule ``Y b <= capacity_limit(Z B)`` too), written once: the exact models of those families take it
    as their capacity right-hand side (and their relaxations and bounds as their capacity), so that
    the model accepts exactly the integer task counts the checker accepts.  The checkers call it, so
    both read one rule; ``cap`` may be a float, a NumPy array or a linear (Pyomo) expression.
    """
    return cap * (1 + CHECK_TOL) + CHECK_TOL


def core_capacity_limit(cap: Any) -> Any:
    """The largest load the packing and SMD checkers accept on capacity ``cap``: ``cap + CHECK_TOL max(1, cap)``.

    The rule of :meth:`mlsched_opt.checking.core.Usage.check` (packing) and of the SMD checker's
    cluster capacity (C1) and per-job limits (C2), written once, as :func:`capacity_limit` is for the
    other families; the checkers call it.  ``cap`` may be a float or a NumPy array (elementwise ``max``).
    """
    if isinstance(cap, (int, float)):
        return cap + CHECK_TOL * max(1.0, cap)
    import numpy as np  # arrays only: this module imports nothing at load time

    return cap + CHECK_TOL * np.maximum(1.0, cap)


def proven_bound(bound: float | None) -> float | None:
    """``bound``, or ``None`` when it is a solver's "no bound" (at or beyond :data:`SOLVER_INFINITY`, or NaN)."""
    return bound if bound is not None and abs(bound) < SOLVER_INFINITY else None


def agree(a: float, b: float, gap: float) -> bool:
    """Two objective values equal within the requested relative gap (at least :data:`CERTIFY_REL_TOL`,
    the precision of CP-SAT's float objectives), plus :data:`OBJECTIVE_ABS_TOL` for optima at 0: the
    solvers' accuracy, by which a claim is compared with another or with a checked answer."""
    return abs(a - b) <= max(gap, CERTIFY_REL_TOL) * max(abs(a), abs(b)) + OBJECTIVE_ABS_TOL


def better(a: float, b: float, sense: str, gap: float) -> bool:
    """``a`` strictly better than ``b`` (for a ``sense`` of ``min`` or ``max``) beyond :func:`agree`."""
    if agree(a, b, gap):
        return False
    return a > b if sense == "max" else a < b
