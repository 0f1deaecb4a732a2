"""Rounding the PC-ILP's LP solution: RR-PC with greedy repair, and SMD-style scaled rounding.

**Reconstruction.**  Spec 001 section 3.2 (our design; the paper's rounding is unknown).

RR-PC (section 3.2(b)), per attempt and per slot ``t``: with probability ``pi_t`` (the LP mass
of the slot's co-located patterns, at most 1 by K1) pick exactly one co-located pattern with
probability ``x / pi_t``; otherwise pick, independently per machine, one spread pattern with
probability ``y / (1 - pi_t)`` or none.  Each pattern is then selected with probability exactly
its LP value, so ``E[work] = LP work >= (1 + eps) V`` and ``E[cost] = LP cost``; K1 (and hence
K3) hold with probability 1, and K2 is restored by dropping the costliest spread patterns.
Guarantee (spec 4.3): one attempt covers ``V`` and costs at most ``(1 + eta) LP_eps`` with
probability at least ``1 - exp(-eps^2 V / (2 (1 + eps) A)) - 1/(1 + eta)``, ``A = w_max q_in``.

Among the attempts that cover ``V`` the cheapest is returned; if none does, the attempt with the
most work is *repaired*: add a pattern to an empty (machine, slot) or upgrade a pattern's worker
count, keeping K1 and K2; a move that completes the coverage is taken at the least extra cost,
otherwise the move with the best extra work per extra cost [our design: the spec's "best ratio"
rule, with the finishing move chosen by cost, which reproduces its toy (repair to 17)].

``scaled_rounding`` is SMD's Algorithm 2 on the same 0-1 program for comparison: scale the LP
solution by ``M_delta`` and round every pattern on its own (pitfall P5: on small machines
``M_delta`` is about 0.07 and the covering row essentially never holds; P7: independent
rounding also breaks K1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..rounding import chernoff_scale, independent_round
from .pcilp import CO_LOCATED, Patterns, Plan


@dataclass(frozen=True)
class Rounded:
    plan: Plan | None
    successes: int
    attempts: int
    repaired: bool


def sample(p: Patterns, z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One RR-PC draw: indices of the chosen patterns."""
    z = np.clip(np.asarray(z, dtype=float), 0.0, 1.0)
    chosen: list[int] = []
    for co, spread in p.slot_groups:
        pi = min(1.0, float(z[co].sum()))
        if pi > 0 and rng.random() < pi:
            chosen.append(int(rng.choice(co, p=z[co] / z[co].sum())))
            continue
        # one uniform per machine, in machine order (machines without a spread pattern draw too,
        # which keeps the stream, and so every decision, that of the per-machine loop)
        u = rng.random(p.H)
        picked: list[int] = []
        for h, sp in spread:
            mass = z[sp]
            # K1 gives sum(mass) <= 1 - pi; renormalize only what solver tolerance pushes over
            share = mass / max(1.0 - pi, mass.sum(), 1e-12)
            k = int(np.searchsorted(np.cumsum(share), u[h], side="right"))
            if k < len(sp):
                picked.append(int(sp[k]))
        while picked and p.workers[picked].sum() > p.job.w_max:  # K2: drop the costliest spread pattern
            picked.remove(max(picked, key=lambda v: p.cost[v]))
        chosen += picked
    return np.array(sorted(chosen), dtype=np.int64)


def rr_pc(p: Patterns, z: np.ndarray, rng: np.random.Generator, attempts: int = 5, repair: bool = True) -> Rounded:
    """RR-PC with ``attempts`` draws, the cheapest covering draw kept, else the greedy repair."""
    best: Plan | None = None
    fallback: Plan | None = None
    successes = 0
    for _ in range(attempts):
        chosen = sample(p, z, rng)
        plan = Plan(chosen, float(p.work[chosen].sum()), float(p.cost[chosen].sum()))
        if plan.covers(p.job.work):
            successes += 1
            if best is None or plan.cost < best.cost:
                best = plan
        elif fallback is None or (plan.work, -plan.cost) > (fallback.work, -fallback.cost):
            fallback = plan
    if best is not None or not repair or fallback is None:
        return Rounded(best, successes, attempts, False)
    return Rounded(repair_plan(p, fallback), successes, attempts, True)


def _feasible(p: Patterns, chosen: list[int]) -> bool:
    """K1 and K2 for a set of pattern indices."""
    for t in {int(p.slot[v]) for v in chosen}:
        here = [v for v in chosen if p.slot[v] == t]
        co = [v for v in here if p.kind[v] == CO_LOCATED]
        if len(co) > 1 or (co and len(here) > 1):
            return False
        machines = [int(p.machine[v]) for v in here]
        if len(machines) != len(set(machines)) or p.workers[here].sum() > p.job.w_max:
            return False
    return True


def repair_plan(p: Patterns, plan: Plan) -> Plan | None:
    """Greedy repair until the plan covers ``V``; ``None`` when no move is left.

    Each step scores every pattern at once: its machine and slot state (the slot's co-located
    pattern, the spread pattern on its machine, the slot's worker count) decides whether it can
    be added or replace the pattern of its kind on its machine without breaking K1 or K2.
    """
    slots = p.deadline - p.start + 1
    t_of = p.slot - p.start
    co_at = np.full(slots, -1)
    spread_at = np.full((slots, p.H), -1)
    for v in plan.chosen:
        if p.kind[v] == CO_LOCATED:
            co_at[t_of[v]] = v
        else:
            spread_at[t_of[v], p.machine[v]] = v
    chosen = np.zeros(p.size, dtype=bool)
    chosen[plan.chosen] = True
    work = float(p.work[chosen].sum())
    co = p.kind == CO_LOCATED
    index = np.arange(p.size)
    while work < p.job.work - 1e-9:
        current_co = co_at[t_of]
        current_sp = spread_at[t_of, p.machine]
        slot_spread = np.asarray((spread_at >= 0).any(axis=1))[t_of]
        co_machine = np.where(current_co >= 0, p.machine[np.maximum(current_co, 0)], -1)
        replaced = np.where(co, np.where(co_machine == p.machine, current_co, -1), current_sp)
        workers_in_slot = np.bincount(t_of[chosen], weights=p.workers[chosen], minlength=slots)[t_of]
        old_work = np.where(replaced >= 0, p.work[np.maximum(replaced, 0)], 0.0)
        old_cost = np.where(replaced >= 0, p.cost[np.maximum(replaced, 0)], 0.0)
        old_workers = np.where(replaced >= 0, p.workers[np.maximum(replaced, 0)], 0)
        k1 = np.where(co, ~slot_spread & ((current_co < 0) | (co_machine == p.machine)), current_co < 0)
        k2 = np.where(co, p.workers, workers_in_slot - old_workers + p.workers) <= p.job.w_max
        gain = p.work - old_work
        extra = p.cost - old_cost
        ok = ~chosen & k1 & k2 & (gain > 0)
        if not ok.any():
            return None
        finishing = ok & (work + gain >= p.job.work - 1e-9)
        if finishing.any():
            cand = index[finishing]
            v = cand[np.lexsort((cand, -gain[cand], extra[cand]))[0]]
        else:
            cand = index[ok]
            ratio = np.where(extra[cand] > 0, gain[cand] / np.where(extra[cand] > 0, extra[cand], 1.0), np.inf)
            v = cand[np.lexsort((cand, -ratio))[0]]
        old = replaced[v]
        if old >= 0:
            chosen[old] = False
        chosen[v] = True
        if co[v]:
            co_at[t_of[v]] = v
        else:
            spread_at[t_of[v], p.machine[v]] = v
        work += float(gain[v])
    picked = np.flatnonzero(chosen)
    return Plan(picked, float(p.work[picked].sum()), float(p.cost[picked].sum()))


def packing_rows(p: Patterns) -> int:
    _a, _lo, hi = p.rows()
    return int(np.isfinite(hi).sum())


def scaled_rounding(p: Patterns, z: np.ndarray, rng: np.random.Generator, attempts: int = 5,
                    delta: float = 0.5) -> Rounded:
    """SMD's Algorithm 2 on the PC-ILP: scale by ``M_delta`` (width 1: one pattern fills a K1 row),
    round every pattern independently, keep the cheapest draw that meets K1, K2 and V1."""
    scale = chernoff_scale(1.0, packing_rows(p), delta)
    best: Plan | None = None
    successes = 0
    for _ in range(attempts):
        chosen = np.flatnonzero(independent_round(z, scale, rng) > 0)
        plan = Plan(chosen, float(p.work[chosen].sum()), float(p.cost[chosen].sum()))
        if plan.covers(p.job.work) and _feasible(p, [int(v) for v in chosen]):
            successes += 1
            if best is None or plan.cost < best.cost:
                best = plan
    return Rounded(best, successes, attempts, False)
