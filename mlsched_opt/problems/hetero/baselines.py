"""Baselines of spec 003 section 4 (a reconstructed list; the paper's is unknown).

* ``greedy``: jobs in descending ``T_i Pi_i``; each takes its equal share (``K/S``, the
  remainder to the heaviest jobs) of its fastest free workers [our design: the spec says
  "each takes its fastest free workers" without a count; the equal share keeps every job
  placed].  Proportional split.
* ``random``: a uniformly drawn category, then a uniformly random worker set of those sizes
  among the workers each job can use (seeded).
* ``equal-share`` (in :mod:`.methods`): the equal-share category with the market.
* ``no-balance`` (in :mod:`.methods`): the sampled scheme with an equal batch split, to show
  what proportional assignment is worth.
"""

from __future__ import annotations

import numpy as np

from .scheme import equal_share, sample_categories
from .view import HeteroView


def greedy(view: HeteroView) -> np.ndarray:
    sizes = equal_share(view)
    free = view.counts.copy()
    x = np.zeros((view.S, view.G), dtype=np.int64)
    for i in np.argsort(-np.array([j.weight for j in view.jobs]), kind="stable"):
        job = view.jobs[i]
        want = sizes[i]
        for c in np.argsort(-job.rho, kind="stable"):
            if job.rho[c] <= 0 or want == 0:
                continue
            take = int(min(free[c], want))
            x[i, c] += take
            free[c] -= take
            want -= take
        if x[i].sum() == 0:  # every usable worker taken by heavier jobs: steal one so the job runs
            c = int(np.argmax(np.where(job.rho > 0, view.counts, -1)))
            donor = int(np.argmax(x[:, c]))
            x[donor, c] -= 1
            x[i, c] += 1
    return x


def random_placement(view: HeteroView, rng: np.random.Generator, tries: int = 1000) -> np.ndarray | None:
    cls = view.worker_class()
    for _ in range(tries):
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
        if ok:
            return x
    return None
