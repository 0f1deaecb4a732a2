"""Price and branch: the configuration LP's columns as an integer program, a decision from its answer.

After column generation (:mod:`.bound`), the master problem over the columns found, with integer
counts, is a small MILP (columns x (types + shapes)) whose answer is a decision: so many servers of
each shape, each with its configuration, and each type's tasks dealt to the configurations' slots
(:func:`.aggregate.assign`; a type covered more than needed leaves slots empty).  Restricted to the
columns generated, its optimum is an upper bound (``servers``) on the problem's, not the optimum:
the classical "price and branch" heuristic for cutting stock (e.g. Vanderbeck, "Computational
study of a column generation algorithm for bin packing and cutting stock problems", Math.
Programming 86, 1999).  Only configurations whose load the checker accepts (numpy, the checker's
rule) enter, so the decision is checked feasible by construction.  Our design.
"""

from __future__ import annotations

from typing import Any

import highspy
import numpy as np
from scipy import sparse

from . import aggregate, arrays
from .bound import ConfigLP, Configs
from .view import checker_limits

#: HiGHS branch-and-bound nodes for the integer master (a work limit)
MASTER_NODES = 2_000


def usable(cfg: Configs, cg: ConfigLP) -> np.ndarray:
    """Which columns' loads the checker accepts on their shape (the pricing MIPs' tolerances may pass more)."""
    if not cg.columns:
        return np.zeros(0, dtype=bool)
    limit = checker_limits(cfg.view).capacity
    reps = np.array([m[0] for m in cfg.members], dtype=np.int64)
    load = cg.matrix() @ cfg.demand
    return np.all(load <= limit[reps][np.array(cg.shape)], axis=1)


def integer_master(cfg: Configs, objective: str, cg: ConfigLP, seconds: float, seed: int = 0,
                   threads: int = 1) -> dict[str, Any] | None:
    """The best decision the columns of ``cg`` make (``None`` if HiGHS found none in its limits)."""
    keep = usable(cfg, cg)
    if not keep.any():
        return None
    cols = cg.matrix()[keep]
    shape = np.array(cg.shape)[keep]
    n, T, K = len(cols), cfg.types, cfg.shapes
    servers = objective == "servers"
    classes = np.zeros((0, 0))
    if servers:
        ny = 0
    else:
        key = np.hstack([cfg.job_type, cfg.job_count, cfg.weight[:, None]])
        classes, inverse, mult = np.unique(key, axis=0, return_inverse=True, return_counts=True)
        ny = len(classes)
    c_rows, c_cols = np.nonzero(cols)  # column c holds cols[c, t] tasks of type t
    rows = [c_cols, T + shape]
    idx = [ny + c_rows, ny + np.arange(n)]
    vals = [cols[c_rows, c_cols].astype(float), np.ones(n)]
    if not servers:
        for i in range(cfg.job_type.shape[1]):
            has = classes[:, i] >= 0
            rows.append(classes[has, i].astype(np.int64))
            idx.append(np.flatnonzero(has))
            vals.append(-classes[has, cfg.job_type.shape[1] + i])
    a = sparse.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(idx))), shape=(T + K, ny + n))
    row_lo = np.concatenate([cfg.count.astype(float) if servers else np.zeros(T), np.full(K, -highspy.kHighsInf)])
    row_hi = np.concatenate([np.full(T, highspy.kHighsInf), cfg.size.astype(float)])
    cost = np.concatenate([np.zeros(0) if servers else classes[:, -1], np.ones(n) if servers else np.zeros(n)])
    col_hi = np.concatenate([np.zeros(0) if servers else mult.astype(float), cfg.size[shape].astype(float)])
    model = arrays.ModelArrays(objective, cost, np.zeros(ny + n), col_hi, a, row_lo, row_hi)
    res = arrays.solve(model, seconds, gap=1e-9, seed=seed, threads=threads, nodes=MASTER_NODES, integral=cfg.integral(objective))
    if res.x is None:
        return None
    x = np.rint(res.x).astype(np.int64)
    slots: dict[int, list[list[int]]] = {}
    next_server = [0] * K
    for c in np.flatnonzero(x[ny:] > 0):
        k = int(shape[c])
        for _ in range(int(x[ny + c])):
            s = int(cfg.members[k][next_server[k]])
            next_server[k] += 1
            for t in np.flatnonzero(cols[c]):
                slots.setdefault(int(t), []).append([s, int(cols[c, t])])
    if servers:
        jobs = np.arange(len(cfg.view.jobs))
    else:
        take = x[:ny]
        jobs = np.sort(np.concatenate([np.flatnonzero(inverse.ravel() == k)[:take[k]] for k in range(ny)]))
    return aggregate.placement_of(cfg.view, aggregate.assign(cfg, jobs, slots))
