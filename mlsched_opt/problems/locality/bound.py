"""A proven lower bound on the locality objective at any scale: every job alone from its arrival.

Our design (issue 18); not in spec 001, whose offline MILP (:mod:`.formulation`) only builds for
toy sizes.  The family's ``relaxation``: the CLI prints an approximation's ratio against it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...io.instance import Instance
from ...report import SolveReport
from ...solvers import SolveOptions
from ...tolerances import capacity_limit, work_done_threshold
from .pcilp import largest_fit
from .view import LocalityView, locality_view

NAME = "standalone lower bound"


def slot_rate_bound(view: LocalityView, i: int, locality: str = "job") -> float:
    """Most samples job ``i`` can train in one slot under any placement the checker accepts, on the empty cluster.

    On one machine every worker runs at ``q_in`` and at most ``n_co`` workers fit there with the
    ``ceil(n / gamma)`` PSs the checker's (C3) asks for (more PSs only take more room).  On two or
    more machines at most ``w_max`` workers run (C5, and the cluster holds no more), each at
    ``q_ex`` (job-level locality) or, with ``pair``, at most at the rate of the least
    communication time ``min_f max(f c_in, (1 - f) c_ex) = c_in c_ex / (c_in + c_ex)``.
    """
    job, timing = view.jobs[i], view.timing[i]
    n_co = float(largest_fit(job, capacity_limit(view.capacity)[:, :, None])[:, 0].max(initial=0))   # within the checker's limits
    if locality == "pair":
        c_in, c_ex = timing.comm_in_s, timing.comm_ex_s
        best_comm = c_in * c_ex / (c_in + c_ex) if c_in + c_ex > 0 else 0.0
        spread = float(timing.rate(best_comm))
    else:
        spread = job.q_ex
    return max(job.q_in * n_co, spread * job.w_max)


def standalone_delay(view: LocalityView, i: int, locality: str = "job") -> int:
    """Least ``C_i - a_i + 1`` of job ``i`` in any accepted schedule: ``ceil(need / rate)`` slots of work
    from its arrival (``need``: the checker's completion threshold), at least 1, and ``T - a_i + 1``
    when that many slots do not fit in the horizon (the charge of a job that does not finish)."""
    job = view.jobs[i]
    penalty = view.penalty_delay(i)
    rate = slot_rate_bound(view, i, locality)
    need = work_done_threshold(job.work)
    if rate <= 0:
        return penalty
    x = need / rate
    slots = max(1, math.ceil(x - 1e-9 * max(1.0, x)))  # never above the true ceiling when x is an integer up to rounding
    return min(slots, penalty)


def standalone_bound(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """A proven lower bound on ``sum_i w_i (C_i - a_i + 1)`` over every schedule the checker accepts.

    Why it holds: a job's work accumulates only in slots from its arrival (C6), and in one slot
    it trains at most :func:`slot_rate_bound` samples whatever else runs (other jobs only take
    capacity away; the checker's rates do not depend on them).  So its completion slot is at
    least ``a_i + ceil(need / rate) - 1``, and a job that cannot reach ``V`` by the last slot is
    charged ``T - a_i + 1`` (more than any finishing delay, ``<= T - a_i``).  Weights are
    positive, so the weighted sum of the per-job minima bounds the optimum.  It ignores the
    capacity that jobs share, so it is loose under load.  ``O(jobs x machines)``; it stops with
    no bound (status ``time-limit-no-solution``) when ``solve_options.time_limit`` passes first.
    """
    start = time.perf_counter()
    stop_at = start + float(solve_options.time_limit)
    view = locality_view(instance)
    locality = str(options.get("locality", "job"))
    total = 0.0
    for i, job in enumerate(view.jobs):
        if time.perf_counter() > stop_at:
            return SolveReport("time-limit-no-solution", None, None, "min", NAME, "mlsched-opt", dict(options),
                               solve_s=time.perf_counter() - start,
                               message=f"time limit after {i} of {len(view.jobs)} jobs: no bound")
        total += job.weight * standalone_delay(view, i, locality)
    return SolveReport("optimal", total, total, "min", NAME, "mlsched-opt", dict(options), solve_s=time.perf_counter() - start,
                       message="every job alone on the empty cluster from its arrival at its fastest placement "
                               "(a lower bound, not a schedule)")


def standalone_delays(view: LocalityView, locality: str = "job") -> np.ndarray:
    """Every job's :func:`standalone_delay` (for tests and comparisons)."""
    return np.array([standalone_delay(view, i, locality) for i in range(len(view.jobs))], dtype=np.int64)
