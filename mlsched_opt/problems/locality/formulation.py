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

Two models, one per ``ps_placement`` (a problem option the checker enforces too):

* :func:`offline_model` (``with-workers``): the pattern model above.  It is exact for the O3
  problem only: every machine that hosts ``n`` workers of a job hosts exactly ``ceil(n/gamma)``
  of its PSs and no machine hosts PSs alone.
* :func:`free_model` (``free``, the default): co-located patterns as above plus, for a spread
  slot, integer worker and PS counts per machine: any placement the checker accepts (spec 001
  P-ORIG, section 1.4) [our design].

Why observation O3's "without loss of generality" is false: O3 needs ``sum_h ceil(n_h/gamma)``
PSs, which exceeds ``ceil(n/gamma)`` once workers spread, and it forbids a PS on a machine with
room but no workers.  Tiny example: 3 machines of 2 units, worker = PS = 1 unit, ``gamma = 2``.
Under O3 a machine holds at most 1 worker + 1 PS, so a slot runs at most 3 workers; freely placed,
2 workers on each of two machines and 2 PSs on the third run 4.  A job with ``V = 4 q_ex``
finishes in 1 slot instead of 2; the review found instances of our own generator where free
placement is 9-33 % better.

Row scaling [our design, for CP-SAT]: a cumulative work row is written in integer units of
``V_i / D_i`` (:class:`WorkRow`), every coefficient capped at ``D_i <= 10^6`` (a term that covers
``V`` alone covers it either way, so the cap is exact).  The translation to CP-SAT then keeps the
integers as they are (at most 10^6; the unscaled rows reached 1.5e10, on which CP-SAT 9.15's
presolve proved a wrong optimum).  When the rates are not fractions of ``V`` with a small common
denominator the terms are rounded down: never more work than the checker counts.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pyomo.environ as pyo

from ...errors import InstanceError, OptionError
from ...io.instance import Instance
from ...tolerances import CHECK_TOL
from .pcilp import CO_LOCATED, LocalityJob
from .view import LocalityView, check_size, locality_view, total_delay

#: Largest integer a scaled work row may hold (CP-SAT's translation then needs no further scaling).
ROW_SCALE = 10**6
#: Most (job, slot, machine) cells of the exact model built (beyond it the model is refused up front).
MAX_EXACT_CELLS = 50_000
Placement = Mapping[int, Mapping[int, tuple[Mapping[int, int], Mapping[int, int]]]]


@dataclass(frozen=True)
class WorkRow:
    """A job's cumulative work row in integer units of ``V / D``: ``sum units(work) z >= D sum f``.

    ``exact``: the per-worker rates ``q_ex / V`` and ``(q_in - q_ex) / V`` are fractions with a
    common denominator ``D <= 10^6`` (to 1e-9 relative), so the row is the true one (the toy:
    ``q = 1, 1.5``, ``V = 12`` gives ``D = 24``).  Otherwise ``D = 10^6`` and every term is rounded
    down: the model never counts work the checker would not, and can only miss a schedule that
    reaches ``V`` with less than ``10^-6 V`` per worker-slot to spare.
    """

    job: LocalityJob
    D: int
    exact: bool

    def units(self, work: float) -> int:
        """``work`` samples in units of ``V / D``, capped at ``D`` (a term covering ``V`` alone covers it either way)."""
        x = min(work / self.job.work, 1.0) * self.D
        return int(min(self.D, round(x) if self.exact else math.floor(x + 1e-6)))


def work_row(job: LocalityJob) -> WorkRow:
    rates = [job.q_ex / job.work, (job.q_in - job.q_ex) / job.work]
    D = 1
    for x in rates:
        if x <= 0:
            continue
        f = Fraction(x).limit_denominator(ROW_SCALE)
        if abs(float(f) - x) > 1e-9 * x:
            return WorkRow(job, ROW_SCALE, False)
        D = D * f.denominator // math.gcd(D, f.denominator)
        if D > ROW_SCALE:
            return WorkRow(job, ROW_SCALE, False)
    return WorkRow(job, D, True)


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

    # K1 through the slot's co-located mass X[i, t] (as pcilp's compact rows): a co-located pattern
    # would otherwise sit in every machine's row, O(H^2) terms per (job, slot)
    m.X = pyo.Var(m.S, domain=pyo.Binary)
    m.co_mass = pyo.Constraint(m.S, rule=lambda mm, i, t: mm.X[i, t] == sum(mm.z[k] for k in by_job_slot[i, t] if k[4] == CO_LOCATED))
    by_job_slot_machine: dict[tuple[int, int, int], list] = defaultdict(list)
    for key in keys:
        if key[4] != CO_LOCATED:
            by_job_slot_machine[key[0], key[1], key[2]].append(key)

    def k1(mm, i, t, h):
        return mm.X[i, t] + sum(mm.z[k] for k in by_job_slot_machine[i, t, h]) <= 1 if by_job_slot_machine[i, t, h] else pyo.Constraint.Skip

    m.K1 = pyo.Constraint(m.S, range(h_count), rule=k1)
    m.K2 = pyo.Constraint(m.S, rule=lambda mm, i, t: sum(k[3] * mm.z[k] for k in by_job_slot[i, t]) <= jobs[i].w_max
                          if by_job_slot[i, t] else pyo.Constraint.Skip)

    def k3(mm, h, r, t):
        used = [(float(units[k][r]), mm.z[k]) for k in by_machine_slot[h, t] if units[k][r] > 0]
        return sum(a * z for a, z in used) <= float(capacity[h, r]) if used else pyo.Constraint.Skip

    m.K3 = pyo.Constraint(range(h_count), range(r_count), range(slots), rule=k3)

    def cumulative(mm, i, t):
        earlier = [k for s in range(jobs[i].arrival, t + 1) for k in by_job_slot[i, s]]
        row = rows[i]
        return (sum(row.units(work[k]) * mm.z[k] for k in earlier)
                >= row.D * sum(mm.f[i, s] for s in range(jobs[i].arrival, t + 1)))

    rows = [work_row(job) for job in jobs]
    m.cumulative = pyo.Constraint(m.S, rule=cumulative)
    m._locality = (list(jobs), keys, slots)
    m._placement = "with-workers"
    return m


def free_model(jobs: Sequence[LocalityJob], capacity: np.ndarray, slots: int, unfinished: bool = True) -> pyo.ConcreteModel:
    """The offline MILP without observation O3: any PS placement the checker accepts.

    Per job ``i`` and slot ``t >= a_i`` the job is either *co-located* or *spread*:

    * co-located: one pattern ``z[i, t, h, n]`` (binary) puts ``n`` workers and ``ceil(n/gamma)``
      PSs on machine ``h`` at the rate ``q_in``.  A single-machine placement with more PSs is
      never better (same work, more resources), so these patterns are exact for it;
    * spread: ``y[i, t] = 1`` (binary) and integer worker and PS counts ``w[i, t, h]``,
      ``s[i, t, h]`` on any machines, at ``q_ex``: K2 ``sum_h w <= w_max``, (C3)
      ``gamma sum_h s >= sum_h w``, ``sum_h s <= sum_h w`` (no idle PSs (C4); more PSs than
      workers never help, so this loses nothing), counts only when ``y = 1``.

    At most one mode per (i, t); capacity (C1) summed over the jobs; the cumulative work rows
    (scaled, see the module docstring).  A spread placement that happens to use one machine
    counts at ``q_ex`` here and ``q_in`` in the checker, never worse (observation O4), so the
    optimum is the checker's.  The co-located side is the pattern model's, which keeps the LP
    bound as tight as :func:`offline_model`'s.
    """
    h_count, r_count = capacity.shape
    m = pyo.ConcreteModel(name="locality_offline_free")
    H = range(h_count)
    n_cap, s_cap = {}, {}
    patterns = []  # (i, t, h, n)
    for i, job in enumerate(jobs):
        n = np.arange(1, job.w_max + 1)
        fits = np.asarray((job.demand(n)[None, :, :] <= capacity[:, None, :] + 1e-9).all(axis=2))   # (H, N)
        for h in H:
            n_cap[i, h] = _most(job.alpha, capacity[h], job.w_max)
            s_cap[i, h] = _most(job.beta, capacity[h], -(-job.w_max // job.gamma))
            for t in range(job.arrival, slots):
                patterns += [(i, t, h, int(k)) for k in n[fits[h]]]
    cells = [(i, t, h) for i, job in enumerate(jobs) for t in range(job.arrival, slots) for h in H]
    last = slots if unfinished else slots - 1
    done = [(i, t) for i, job in enumerate(jobs) for t in range(job.arrival, last + 1)]
    running = [(i, t) for i, t in done if t < slots]
    m.P = pyo.Set(initialize=patterns, dimen=4, ordered=True)
    m.z = pyo.Var(m.P, domain=pyo.Binary)
    m.C = pyo.Set(initialize=cells, dimen=3, ordered=True)
    m.w = pyo.Var(m.C, domain=pyo.NonNegativeIntegers, bounds=lambda mm, i, t, h: (0, n_cap[i, h]))
    m.s = pyo.Var(m.C, domain=pyo.NonNegativeIntegers, bounds=lambda mm, i, t, h: (0, s_cap[i, h]))
    m.D = pyo.Set(initialize=done, dimen=2, ordered=True)
    m.f = pyo.Var(m.D, domain=pyo.Binary)
    m.S = pyo.Set(initialize=running, dimen=2, ordered=True)
    m.y = pyo.Var(m.S, domain=pyo.Binary)
    by_job_slot: dict[tuple[int, int], list] = defaultdict(list)
    by_machine_slot: dict[tuple[int, int], list] = defaultdict(list)
    for key in patterns:
        by_job_slot[key[0], key[1]].append(key)
        by_machine_slot[key[2], key[1]].append(key)
    jobs_at: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, t, h in cells:
        jobs_at[h, t].append(i)
    demand = {key: jobs[key[0]].demand(key[3]) for key in patterns}

    m.objective = pyo.Objective(expr=sum(jobs[i].weight * (t - jobs[i].arrival + 1) * m.f[i, t] for i, t in done), sense=pyo.minimize)
    m.finish = pyo.Constraint(range(len(jobs)), rule=lambda mm, i: sum(mm.f[i, t] for t in range(jobs[i].arrival, last + 1)) == 1)
    m.mode = pyo.Constraint(m.S, rule=lambda mm, i, t: sum(mm.z[k] for k in by_job_slot[i, t]) + mm.y[i, t] <= 1)
    m.w_spread = pyo.Constraint(m.C, rule=lambda mm, i, t, h: mm.w[i, t, h] <= n_cap[i, h] * mm.y[i, t])
    m.s_spread = pyo.Constraint(m.C, rule=lambda mm, i, t, h: mm.s[i, t, h] <= s_cap[i, h] * mm.y[i, t])
    m.K2 = pyo.Constraint(m.S, rule=lambda mm, i, t: sum(mm.w[i, t, h] for h in H) <= jobs[i].w_max)
    m.ps_count = pyo.Constraint(m.S, rule=lambda mm, i, t: jobs[i].gamma * sum(mm.s[i, t, h] for h in H) >= sum(mm.w[i, t, h] for h in H))
    m.no_idle_ps = pyo.Constraint(m.S, rule=lambda mm, i, t: sum(mm.s[i, t, h] for h in H) <= sum(mm.w[i, t, h] for h in H))

    def capacity_row(mm, h, r, t):
        terms = [(float(demand[k][r]), mm.z[k]) for k in by_machine_slot[h, t] if demand[k][r] > 0]
        terms += [(float(jobs[i].alpha[r]), mm.w[i, t, h]) for i in jobs_at[h, t] if jobs[i].alpha[r] > 0]
        terms += [(float(jobs[i].beta[r]), mm.s[i, t, h]) for i in jobs_at[h, t] if jobs[i].beta[r] > 0]
        return sum(a * v for a, v in terms) <= float(capacity[h, r]) if terms else pyo.Constraint.Skip

    m.K3 = pyo.Constraint(H, range(r_count), range(slots), rule=capacity_row)

    rows = [work_row(job) for job in jobs]

    def cumulative(mm, i, t):
        job, row = jobs[i], rows[i]
        ex = row.units(job.q_ex)
        terms = [row.units(k[3] * job.q_in) * mm.z[k] for s in range(job.arrival, t + 1) for k in by_job_slot[i, s]]
        terms += [ex * mm.w[i, s, h] for s in range(job.arrival, t + 1) for h in H]
        return sum(terms) >= row.D * sum(mm.f[i, s] for s in range(job.arrival, t + 1))

    m.cumulative = pyo.Constraint(m.S, rule=cumulative)
    m._locality = (list(jobs), (patterns, cells), slots)
    m._placement = "free"
    return m


def _most(demand: np.ndarray, capacity: np.ndarray, cap: int) -> int:
    """Most tasks of per-task ``demand`` that fit ``capacity`` alone, at most ``cap``."""
    used = demand > 0
    if not used.any():
        return int(cap)
    return int(min(cap, np.floor(np.min(capacity[used] / demand[used]) + 1e-9)))


def placement_from_model(m: pyo.ConcreteModel) -> dict[int, dict[int, tuple[dict[int, int], dict[int, int]]]]:
    """Job index -> slot -> ``({machine: workers}, {machine: PSs})`` of a solved model (either placement)."""
    jobs, keys, _ = m._locality
    out: dict[int, dict[int, tuple[dict[int, int], dict[int, int]]]] = defaultdict(dict)
    if m._placement == "free":
        patterns, cells = keys
        for i, t, h, n in patterns:
            if pyo.value(m.z[i, t, h, n]) > 0.5:
                out[i][t] = ({h: n}, {h: -(-n // jobs[i].gamma)})
        for i, t, h in cells:
            w, s = int(round(pyo.value(m.w[i, t, h]) or 0)), int(round(pyo.value(m.s[i, t, h]) or 0))
            if w or s:
                slot = out[i].setdefault(t, ({}, {}))
                if w:
                    slot[0][h] = w
                if s:
                    slot[1][h] = s
        return dict(out)
    for i, by_slot in tasks_from_model(m).items():
        for t, h, n in by_slot:
            slot = out[i].setdefault(t, ({}, {}))
            slot[0][h] = slot[0].get(h, 0) + n
            slot[1][h] = -(-slot[0][h] // jobs[i].gamma)
    return dict(out)


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


def build_model(instance: Instance, options: Mapping[str, Any]) -> pyo.ConcreteModel:
    """The offline MILP of spec 001 section 2.4 with the family's objective (unfinished jobs at ``C = T``),
    for the ``ps_placement`` the checker enforces (free: :func:`free_model`)."""
    if options.get("locality", "job") != "job":
        raise OptionError("the exact MILP is linear only for job-level locality (pitfall P2); use --set locality=job",
                          field="--set locality")
    view = locality_view(instance)
    check_size(view, instance.file)
    cells = sum((view.slots - job.arrival) * job.w_max for job in view.jobs) * view.H
    if cells > MAX_EXACT_CELLS:
        raise InstanceError(f"the exact model would have {cells} (job, slot, machine, workers) patterns, more than the "
                            f"{MAX_EXACT_CELLS} it builds; use an algorithm", instance.file, "time.slots")
    if options.get("ps_placement", "free") == "free":
        m = free_model(view.jobs, view.capacity, view.slots, unfinished=True)
    else:
        m = offline_model(view.jobs, view.capacity, view.slots, unfinished=True)
    m._view = view
    return m


def decision(view: LocalityView, placement: Placement, completion: Mapping[int, int],
             extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Slots up to each job's completion (unfinished jobs: none); ``placement``: job -> slot -> (workers, PSs) per machine."""
    schedule: dict[str, list[dict[str, Any]]] = {}
    migrations: dict[str, int] = {}
    for i, job in enumerate(view.jobs):
        if i not in completion:
            continue
        by_slot = {t: here for t, here in placement.get(i, {}).items() if t <= completion[i]}
        entries = []
        for t in sorted(by_slot):
            workers, ps = by_slot[t]
            entries.append({"slot": int(t),
                            "workers": {view.servers[h]: int(n) for h, n in sorted(workers.items()) if n},
                            "ps": {view.servers[h]: int(n) for h, n in sorted(ps.items()) if n}})
        schedule[job.id] = entries
        machines = [frozenset(h for h, n in {**by_slot[t][0], **by_slot[t][1]}.items() if n) for t in sorted(by_slot)]
        migrations[job.id] = sum(a != b for a, b in itertools.pairwise(machines))
    done = sorted(completion)
    return {
        "admitted": [view.jobs[i].id for i in done],
        "schedule": schedule,
        "extra": {
            "completion": {view.jobs[i].id: int(completion[i]) for i in done},
            "unfinished": [j.id for i, j in enumerate(view.jobs) if i not in completion],
            "migrations": migrations,
            **dict(extra or {}),
        },
    }


def executed(view: LocalityView, i: int, by_slot: Mapping[int, tuple[Mapping[int, int], Mapping[int, int]]],
             locality: str = "job") -> int | None:
    """First slot whose cumulative work at the true rates (as the checker counts it) reaches ``V``."""
    done = 0.0
    for t in sorted(by_slot):
        w, s = np.zeros(view.H), np.zeros(view.H)
        for h, n in by_slot[t][0].items():
            w[h] += n
        for h, n in by_slot[t][1].items():
            s[h] += n
        done += view.slot_work(i, w, s, locality)
        if done >= view.jobs[i].work * (1 - CHECK_TOL) - CHECK_TOL:  # the checker's rule
            return t
    return None


def decision_from_model(instance: Instance, options: Mapping[str, Any], model: pyo.ConcreteModel) -> dict[str, Any]:
    """The selected placement, with each job's completion where its work reaches ``V``.

    In an optimal solution that is the slot of its completion indicator; an unproven incumbent
    may finish a job earlier than its indicator (or at all when the indicator says ``T``).
    """
    view: LocalityView = model._view
    placement = placement_from_model(model)
    completion = {}
    for i in range(len(view.jobs)):
        done = executed(view, i, placement.get(i, {}))
        if done is not None:
            completion[i] = done
    return decision(view, placement, completion)


def rescore(instance: Instance, options: Mapping[str, Any], decision: Mapping[str, Any]) -> float:
    view = locality_view(instance)
    index = {job.id: i for i, job in enumerate(view.jobs)}
    return total_delay(view, {index[j]: t for j, t in decision["extra"]["completion"].items()})
