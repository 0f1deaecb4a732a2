"""How fast a locality job can train in one slot: a worker's rate when the job spans machines, and
the most the whole job trains on the empty cluster (read by the bounds and by ``srpt`` alike)."""

from __future__ import annotations

from ...tolerances import capacity_limit
from .pcilp import largest_fit
from .view import LocalityView


def spread_rate(view: LocalityView, i: int, locality: str) -> float:
    """Most samples one worker of job ``i`` trains per slot when the job spans two or more machines."""
    timing = view.timing[i]
    if locality == "pair":
        c_in, c_ex = timing.comm_in_s, timing.comm_ex_s
        return float(timing.rate(c_in * c_ex / (c_in + c_ex))) if c_in + c_ex > 0 else view.jobs[i].q_ex
    return view.jobs[i].q_ex


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
