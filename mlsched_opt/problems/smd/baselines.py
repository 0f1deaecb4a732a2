"""The paper's baseline inner allocations: ESW and the Optimus-style greedy (spec 002 P18).

Both replace only SMD's inner step; admission uses the same knapsack solver as SMD.
"""

from __future__ import annotations

from .inner import NONE, Allocation, bounded_box
from .view import SmdJob


def esw(job: SmdJob, variant: str = "max") -> Allocation:
    """ESW: as many PSs as workers (w:p = 1:1, as in the PaddlePaddle-on-Kubernetes blog).

    The paper does not say how many; ``max`` [PROP, default] takes the largest ``k`` with
    ``(k, k)`` inside the limit, matching the paper's remark that the baselines spend as much
    of the declared resources as they can; ``best`` takes the ``k`` with the smallest ``tau``.
    No guarantee.
    """
    w_lo, w_hi, p_lo, p_hi = bounded_box(job)  # the ranges cut by the limit, and never huge
    lo, hi = max(w_lo, p_lo), min(w_hi, p_hi)
    feasible = [k for k in range(lo, hi + 1) if job.fits(k, k)] if hi >= lo else []
    if not feasible:
        return NONE
    if variant == "max":
        k = feasible[-1]
    else:
        k = min(feasible, key=lambda n: (job.completion_time(n, n), n))
    return Allocation(k, k, float(job.completion_time(k, k)))


def optimus(job: SmdJob, variant: str = "stop") -> Allocation:
    """Optimus-style greedy (Peng et al., EuroSys 2018) with SMD's speed function.

    Start at the smallest allocation; at each step compare one more worker with one more PS
    among the options inside the limit and take the one with the lower ``tau``.  Stopping rule
    [PROP]: ``stop`` (default) ends when neither step lowers ``tau`` -- it can be trapped at a
    local minimum (spec 002 section 6, job D); ``fill`` keeps adding until nothing fits and
    returns the best allocation seen on the way.  No guarantee.
    """
    bounded_box(job)  # every step adds a worker or a PS inside the box: at most its sides many steps
    w, p = job.w_range[0], job.p_range[0]
    if not job.fits(w, p):
        return NONE
    tau = job.completion_time(w, p)
    best = Allocation(w, p, float(tau))
    while True:
        steps = [(job.completion_time(w2, p2), w2, p2) for w2, p2 in ((w + 1, p), (w, p + 1)) if job.fits(w2, p2)]
        if not steps:
            return best
        t2, w2, p2 = min(steps)
        if variant == "stop" and t2 >= tau:
            return best
        w, p, tau = w2, p2, t2
        if tau < best.tau:
            best = Allocation(w, p, float(tau))
