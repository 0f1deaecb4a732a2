"""Baselines of spec 003 section 4 (a reconstructed list; the paper's is unknown).

* ``greedy``: jobs in descending ``T_i Pi_i``; each takes its equal share (``K/S``, the
  remainder to the heaviest jobs, clipped to its size range) of its fastest free workers, more
  while its memory caps cannot hold its batch, never the GPUs later jobs need for their minimum
  sizes [our design: the spec says "each takes its fastest free workers" without a count; the
  equal share keeps every job placed].  Proportional split.
* ``random``: a uniformly drawn category, then a uniformly random worker set of those sizes
  among the workers each job can use (seeded; redrawn when memory caps cannot hold a batch).

Both answer ``None`` rather than a placement the checker would refuse.

* ``equal-share`` (in :mod:`.methods`): the equal-share category with the market.
* ``no-balance`` (in :mod:`.methods`): the sampled scheme with an equal batch split, to show
  what proportional assignment is worth.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .scheme import equal_share, sample_categories, size_bounds
from .timing import jct
from .view import HeteroView


def greedy(view: HeteroView, comm: str = "ring") -> np.ndarray | None:
    """Heaviest job first, each its equal share of its fastest free GPUs; ``None`` when that
    leaves some job without a valid worker set.

    Every job's share is clipped to its size range, and a job whose memory caps cannot hold
    its batch on its share keeps taking its next fastest free GPUs (up to its maximum size) until
    they can.  GPUs the later jobs need for their minimum sizes are never taken: a job only takes
    a GPU when enough usable free GPUs remain for every later job's minimum [our design; the
    spec's greedy has no sizes or caps].  The answer respects every rule of the checker or is
    ``None``.
    """
    lo, hi = size_bounds(view)
    sizes = equal_share(view)
    free = view.counts.copy()
    usable = view.rho() > 0                       # (S, G)
    usable_free = (usable * free).sum(axis=1)     # free GPUs each job could still use
    waiting = np.ones(view.S, dtype=bool)         # jobs not placed yet
    x = np.zeros((view.S, view.G), dtype=np.int64)
    for i in np.argsort(-np.array([j.weight for j in view.jobs]), kind="stable"):
        job = view.jobs[i]
        waiting[i] = False
        want = int(np.clip(sizes[i], lo[i], hi[i]))
        for c in np.argsort(-job.rho, kind="stable"):
            while job.rho[c] > 0 and free[c] > 0 and x[i].sum() < hi[i]:
                if x[i].sum() >= want and np.isfinite(jct(view, job, x[i:i + 1], comm)[0]):
                    break
                # a necessary check per later job and for all of them together (not a full matching)
                hit = waiting & usable[:, c]
                if (usable_free[hit] - 1 < lo[hit]).any() or free.sum() - 1 < lo[waiting].sum():
                    break
                x[i, c] += 1
                free[c] -= 1
                usable_free -= usable[:, c]
        if x[i].sum() < lo[i] or not np.isfinite(jct(view, job, x[i:i + 1], comm)[0]):
            return None
    return x


def random_placement(view: HeteroView, rng: np.random.Generator, tries: int = 1000, comm: str = "ring",
                     deadline: float = math.inf) -> np.ndarray | None:
    """A uniformly drawn category and uniformly random usable GPUs of those sizes; draws whose
    memory caps cannot hold a job's batch are redrawn, at most ``tries`` times and until the
    ``deadline`` (a ``time.perf_counter()`` value), then ``None``."""
    cls = view.worker_class()
    for attempt in range(tries):
        if attempt and time.perf_counter() > deadline:
            break
        cats = sample_categories(view, 1, rng)
        if not cats:
            continue
        x = np.zeros((view.S, view.G), dtype=np.int64)
        taken = np.zeros(view.K, dtype=bool)
        ok = True
        for i in rng.permutation(view.S):
            usable = np.flatnonzero(~taken & (view.jobs[i].rho[cls] > 0))
            if len(usable) < cats[0][i]:
                ok = False
                break
            pick = rng.choice(usable, size=cats[0][i], replace=False)
            taken[pick] = True
            np.add.at(x[i], cls[pick], 1)
        if ok and all(np.isfinite(jct(view, job, x[i:i + 1], comm)[0]) for i, job in enumerate(view.jobs)):
            return x
    return None
