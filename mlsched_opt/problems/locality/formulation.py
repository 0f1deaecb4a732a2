"""The exact offline multi-job benchmark of spec 001 section 2.4, as a Pyomo MILP.

**Reconstruction** (our design; the paper's offline benchmark is unknown).  Patterns
``z[i, t, h, n, kind]`` (``kind`` 0: job ``i`` co-located on ``h`` with ``n`` workers in slot
``t``; 1: ``n`` workers of spread job ``i`` on ``h``) as in the PC-ILP, with K1 and K2 per job,
capacity K3 summed over the jobs, and completion indicators ``f[i, t]`` (``sum_t f = 1``) tied to
the work by cumulative rows: the work up to slot ``t`` reaches what the checker accepts for ``V_i``
when ``sum_{t' <= t} f_i[t'] = 1`` (the completion rows below).
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

Completion rows [our design]: at job-level locality a job's work by slot ``t`` is ``a q_in + b q_ex``
with ``a`` co-located and ``b`` spread worker-slots (integers), and the checker counts it done once
that reaches :func:`~mlsched_opt.tolerances.work_done_threshold` ``(V)`` (the checker's own
formula and tolerance, not ``V``).  :class:`WorkCover` writes that set of integer points ``(a, b)``
as the facets of its convex hull: small integer rows ``alpha a + beta b >= gamma`` whose integer
solutions are exactly the points the checker accepts (no rounding of rates, so CP-SAT gets small
integral coefficients and nothing is rounded in either direction; the rows once rounded every term
down to units of ``V / 10^6`` and so demanded more work than the checker does).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyomo.environ as pyo

from ...errors import ModelTooLarge, OptionError
from ...io.instance import Instance
from ...tolerances import capacity_limit, work_done_threshold
from .decision import MAX_EXACT_CELLS, decision, executed, model_cells
from .pcilp import CO_LOCATED, LocalityJob
from .view import LocalityView, check_size, locality_view

#: Most (job, slot, machine) cells of the exact model built (beyond it the model is refused up front).


def reaches(job: LocalityJob, a: int, b: int) -> bool:
    """Whether ``a`` co-located and ``b`` spread worker-slots train enough for the checker (its "work" rule)."""
    return a * job.q_in + b * job.q_ex >= work_done_threshold(job.work)


@dataclass(frozen=True)
class WorkCover:
    """A job's completion as integer rows on its cumulative worker-slots, accepting what the checker accepts.

    By a slot, the job has run ``a`` worker-slots co-located (``q_in`` samples each) and ``b``
    spread (``q_ex`` each), integers in ``[0, reach]`` (``reach = (T - arrival) w_max``).  The
    checker counts it done when ``a q_in + b q_ex >= work_done_threshold(V)`` (:func:`reaches`).
    ``rows`` are integer ``(alpha, beta, gamma)``, ``alpha, beta >= 0``: for every integer ``(a, b)``
    in ``[0, reach]^2``, every row holds iff :func:`reaches` — they are the facets of the convex hull
    of the accepted points (a lattice-point set of a half-plane, so the hull holds no other lattice
    point) that the box does not give.  So no rate is rounded, in either direction: the model is
    exactly as strict as the checker on integral worker counts.  Exact up to the last bit of the
    checker's float sum (it adds slot by slot, this evaluates ``a q_in + b q_ex``): a point within a
    few ulps of the threshold could go either way, as it does between two slot orders in the checker.

    ``()`` when no work is needed (``V >= 1`` by the schema, so never for an instance); ``((0, 0, 1),)``
    when even ``reach`` worker-slots of each kind fall short (the job cannot finish in the horizon).
    """

    job: LocalityJob
    reach: int
    rows: tuple[tuple[int, int, int], ...]

    def holds(self, a: int, b: int) -> bool:
        """Whether ``(a, b)`` satisfies every row (for tests: equals :func:`reaches` on the box)."""
        return all(alpha * a + beta * b >= gamma for alpha, beta, gamma in self.rows)


def work_cover(job: LocalityJob, slots: int) -> WorkCover:
    """:class:`WorkCover` of ``job`` over a horizon of ``slots`` slots: O(reach) evaluations of the checker's rule.

    The hull's facets, then fewest of them: a facet is dropped when the others still accept exactly
    the same integer points (checked point by point on the box), trying the facets least parallel to
    the work line ``(q_in, q_ex)`` first.  When one row of the true rates is already exact (rates that
    are fractions of ``V`` with a small denominator, as the spec's toy) that row is all that is
    kept, so the LP relaxation is the work row's (the toy's LP stays at spec section 7's 3.378).
    """
    reach = max(slots - job.arrival, 0) * job.w_max
    if reaches(job, 0, 0):
        return WorkCover(job, reach, ())
    if not reaches(job, reach, reach):
        return WorkCover(job, reach, ((0, 0, 1),))
    need = work_done_threshold(job.work)
    # the staircase: per a, the least b the checker accepts (reach + 1: none; nonincreasing in a),
    # from a float estimate stepped by the checker's own rule, so that no float rounding decides a point
    least = np.zeros(reach + 1, dtype=np.int64)
    stair: list[tuple[int, int]] = []
    for a in range(reach + 1):
        guess = (need - a * job.q_in) / job.q_ex
        b = 0 if guess <= 0 else reach + 1 if guess > reach else math.ceil(guess)
        while b > 0 and reaches(job, a, b - 1):
            b -= 1
        while b <= reach and not reaches(job, a, b):
            b += 1
        least[a] = b
        if b <= reach:
            stair.append((a, b))
            if b == 0:
                break   # least stays 0 for every larger a
    # its lower convex hull (monotone chain, exact integer arithmetic); each edge is a facet
    hull: list[tuple[int, int]] = []
    for p in stair:
        while len(hull) >= 2 and ((hull[-1][0] - hull[-2][0]) * (p[1] - hull[-2][1])
                                  - (hull[-1][1] - hull[-2][1]) * (p[0] - hull[-2][0])) <= 0:
            hull.pop()
        hull.append(p)
    facets: dict[tuple[int, int, int], None] = {}
    if stair[0][0] > 0:                          # fewer co-located worker-slots never reach it, whatever b
        facets[1, 0, stair[0][0]] = None
    for (a1, b1), (a2, b2) in itertools.pairwise(hull):
        g = math.gcd(b1 - b2, a2 - a1)
        alpha, beta = (b1 - b2) // g, (a2 - a1) // g
        facets[alpha, beta, alpha * a1 + beta * b1] = None
    if stair[-1][1] > 0:                         # even reach co-located worker-slots need this many spread
        facets[0, 1, stair[-1][1]] = None
    rows = list(facets)

    def parallel(row: tuple[int, int, int]) -> float:
        return (row[0] * job.q_in + row[1] * job.q_ex) / math.hypot(row[0], row[1])

    for row in sorted(rows, key=parallel):
        rest = [r for r in rows if r != row]
        if rest and np.array_equal(_least_accepted(rest, reach), least):
            rows = rest
    return WorkCover(job, reach, tuple(rows))


def _least_accepted(rows: Sequence[tuple[int, int, int]], reach: int) -> np.ndarray:
    """Per ``a`` in ``[0, reach]``, the least ``b`` in ``[0, reach]`` meeting every row (``reach + 1``: none)."""
    a = np.arange(reach + 1, dtype=np.int64)
    b = np.zeros(reach + 1, dtype=np.int64)
    for alpha, beta, gamma in rows:
        if beta == 0:
            b = np.where(alpha * a >= gamma, b, reach + 1)
        else:
            b = np.maximum(b, -((alpha * a - gamma) // beta))     # ceil((gamma - alpha a) / beta), exactly
    return np.minimum(b, reach + 1)


def _cover_rows(covers: Sequence[WorkCover], running: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """``(job, slot, row)`` of every completion row: one per row of the job's :class:`WorkCover` and running slot."""
    return [(i, t, r) for i, t in running for r in range(len(covers[i].rows))]


def _coefficient(n: int, weight: int, gamma: int) -> int:
    """A term's coefficient ``n weight`` in a row ``... >= gamma``, capped at ``gamma``: a term that meets
    the row alone meets it either way (all terms are non-negative integers), and the LP is tighter."""
    return min(n * weight, gamma)


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

    # completion (WorkCover): the slot's co-located patterns add n worker-slots to a, spread ones to b
    covers = [work_cover(job, slots) for job in jobs]

    def cumulative(mm, i, t, r):
        alpha, beta, gamma = covers[i].rows[r]
        earlier = [k for s in range(jobs[i].arrival, t + 1) for k in by_job_slot[i, s]]
        return (sum(_coefficient(k[3], alpha if k[4] == CO_LOCATED else beta, gamma) * mm.z[k] for k in earlier)
                >= gamma * sum(mm.f[i, s] for s in range(jobs[i].arrival, t + 1)))

    m.cumulative = pyo.Constraint(_cover_rows(covers, running), rule=cumulative)
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

    At most one mode per (i, t); capacity (C1) summed over the jobs; the cumulative completion
    rows (:class:`WorkCover`, see the module docstring).  A spread placement that happens to use one machine
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

    # completion (WorkCover): a pattern adds its n worker-slots to a, every spread worker one to b
    covers = [work_cover(job, slots) for job in jobs]

    def cumulative(mm, i, t, r):
        job = jobs[i]
        alpha, beta, gamma = covers[i].rows[r]
        ex = _coefficient(1, beta, gamma)
        terms = [_coefficient(k[3], alpha, gamma) * mm.z[k] for s in range(job.arrival, t + 1) for k in by_job_slot[i, s]]
        terms += [ex * mm.w[i, s, h] for s in range(job.arrival, t + 1) for h in H]
        return sum(terms) >= gamma * sum(mm.f[i, s] for s in range(job.arrival, t + 1))

    m.cumulative = pyo.Constraint(_cover_rows(covers, running), rule=cumulative)
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
    cells = model_cells(view)
    if cells > MAX_EXACT_CELLS:
        # ModelTooLarge: --method exact then answers without the full model (problems/anytime.py, .exact)
        raise ModelTooLarge(f"the exact model would have {cells:,} (job, slot, machine, workers) patterns, more than the "
                            f"{MAX_EXACT_CELLS:,} it builds; an approximation method answers at this size", field="--method")
    # the capacity right-hand sides are the checker's limits, so the model accepts exactly the counts it accepts
    limit = capacity_limit(view.capacity)
    if options.get("ps_placement", "free") == "free":
        m = free_model(view.jobs, limit, view.slots, unfinished=True)
    else:
        m = offline_model(view.jobs, limit, view.slots, unfinished=True)
    m._view = view
    return m


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
