"""The exact offline multi-job benchmark of spec 001 section 2.4, as a Pyomo MILP.

**Reconstruction** (our design; the paper's offline benchmark is unknown).  Patterns
``z[i, t, h, n, kind]`` (``kind`` 0: job ``i`` co-located on ``h`` with ``n`` workers in slot
``t``; 1: ``n`` workers of spread job ``i`` on ``h``) as in the PC-ILP, with K1 and K2 per job,
capacity K3 summed over the jobs, and completion indicators ``f[i, t]`` (``sum_t f = 1``) tied to
the work by the cumulative rows ``sum_{t' <= t} work_i[t'] >= V_i sum_{t' <= t} f_i[t']``.
Minimize ``sum_i w_i sum_t (t - a_i + 1) f[i, t]`` plus an optional tie-break ``tie_break x
resource units used`` (spec 7 uses 1e-4).

With ``unfinished=True`` (the family's objective) a job may also take ``f[i, T]``: it does not
finish in the horizon and is charged the delay ``T - a_i + 1``, so the model is always feasible.

Its LP relaxation is weak (pitfall P9: 3.378 against 5 on the toy): report ratios against the
proven MILP optimum, never against that LP.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np
import pyomo.environ as pyo

from .pcilp import CO_LOCATED, LocalityJob


def offline_model(jobs: Sequence[LocalityJob], capacity: np.ndarray, slots: int, tie_break: float = 0.0,
                  unfinished: bool = False) -> pyo.ConcreteModel:
    """``capacity``: (H, R) per slot; slots ``0..slots-1``; completion slot ``t`` costs ``t - a + 1``."""
    h_count, r_count = capacity.shape
    keys = []  # (i, t, h, n, kind)
    for i, job in enumerate(jobs):
        n = np.arange(1, job.w_max + 1)
        d = job.demand(n)
        for h in range(h_count):
            for k in n[(d <= capacity[h] + 1e-9).all(axis=1)]:
                for t in range(job.arrival, slots):
                    for kind in (0, 1):
                        keys.append((i, t, h, int(k), kind))
    units = {k: jobs[k[0]].demand(k[3]) for k in keys}
    work = {k: k[3] * (jobs[k[0]].q_in if k[4] == CO_LOCATED else jobs[k[0]].q_ex) for k in keys}
    by_job_slot: dict[tuple[int, int], list] = defaultdict(list)
    by_machine_slot: dict[tuple[int, int], list] = defaultdict(list)
    for key in keys:
        by_job_slot[key[0], key[1]].append(key)
        by_machine_slot[key[2], key[1]].append(key)

    m = pyo.ConcreteModel(name="locality_offline")
    m.P = pyo.Set(initialize=keys, dimen=5, ordered=True)
    m.z = pyo.Var(m.P, domain=pyo.Binary)
    last = slots if unfinished else slots - 1
    done = [(i, t) for i, job in enumerate(jobs) for t in range(job.arrival, last + 1)]
    m.D = pyo.Set(initialize=done, dimen=2, ordered=True)
    m.f = pyo.Var(m.D, domain=pyo.Binary)
    running = [(i, t) for i, t in done if t < slots]
    m.S = pyo.Set(initialize=running, dimen=2, ordered=True)

    delay = sum(jobs[i].weight * (t - jobs[i].arrival + 1) * m.f[i, t] for i, t in done)
    m.objective = pyo.Objective(expr=delay + tie_break * sum(float(units[k].sum()) * m.z[k] for k in keys), sense=pyo.minimize)
    m.finish = pyo.Constraint(range(len(jobs)), rule=lambda mm, i: sum(mm.f[i, t] for t in range(jobs[i].arrival, last + 1)) == 1)

    def k1(mm, i, t, h):
        here = [k for k in by_job_slot[i, t] if k[4] == CO_LOCATED or k[2] == h]
        return sum(mm.z[k] for k in here) <= 1 if here else pyo.Constraint.Skip

    m.K1 = pyo.Constraint(m.S, range(h_count), rule=k1)
    m.K2 = pyo.Constraint(m.S, rule=lambda mm, i, t: sum(k[3] * mm.z[k] for k in by_job_slot[i, t]) <= jobs[i].w_max
                          if by_job_slot[i, t] else pyo.Constraint.Skip)

    def k3(mm, h, r, t):
        used = [(float(units[k][r]), mm.z[k]) for k in by_machine_slot[h, t] if units[k][r] > 0]
        return sum(a * z for a, z in used) <= float(capacity[h, r]) if used else pyo.Constraint.Skip

    m.K3 = pyo.Constraint(range(h_count), range(r_count), range(slots), rule=k3)

    def cumulative(mm, i, t):
        earlier = [k for s in range(jobs[i].arrival, t + 1) for k in by_job_slot[i, s]]
        return (sum(work[k] * mm.z[k] for k in earlier)
                >= jobs[i].work * sum(mm.f[i, s] for s in range(jobs[i].arrival, t + 1)))

    m.cumulative = pyo.Constraint(m.S, rule=cumulative)
    m._locality = (list(jobs), keys, slots)
    return m


def completions_from_model(m: pyo.ConcreteModel) -> dict[int, int]:
    """Job index -> completion slot of a solved :func:`offline_model` (``T`` = did not finish)."""
    return {i: t for (i, t) in m.D if pyo.value(m.f[i, t]) > 0.5}


def tasks_from_model(m: pyo.ConcreteModel) -> dict[int, list[tuple[int, int, int]]]:
    """Job index -> ``(slot, machine, workers)`` of the patterns a solved model selects."""
    _, keys, _ = m._locality
    out: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for key in keys:
        if pyo.value(m.z[key]) > 0.5:
            out[key[0]].append((key[1], key[2], key[3]))
    return {i: sorted(v) for i, v in out.items()}
