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
from .pcilp import CO_LOCATED, SPREAD, Patterns, Plan


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
    for t in range(p.start, p.deadline + 1):
        in_slot = p.slot == t
        co = np.flatnonzero(in_slot & (p.kind == CO_LOCATED))
        pi = min(1.0, float(z[co].sum()))
        if pi > 0 and rng.random() < pi:
            chosen.append(int(rng.choice(co, p=z[co] / z[co].sum())))
            continue
        picked: list[int] = []
        for h in range(p.H):
            sp = np.flatnonzero(in_slot & (p.kind == SPREAD) & (p.machine == h))
            mass = z[sp]
            # K1 gives sum(mass) <= 1 - pi; renormalize only what solver tolerance pushes over
            share = mass / max(1.0 - pi, mass.sum(), 1e-12)
            u = rng.random()
            cum = np.cumsum(share)
            k = int(np.searchsorted(cum, u, side="right"))
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
    for t in set(int(p.slot[v]) for v in chosen):
        here = [v for v in chosen if p.slot[v] == t]
        co = [v for v in here if p.kind[v] == CO_LOCATED]
        if len(co) > 1 or (co and len(here) > 1):
            return False
        machines = [int(p.machine[v]) for v in here]
        if len(machines) != len(set(machines)) or p.workers[here].sum() > p.job.w_max:
            return False
    return True


def repair_plan(p: Patterns, plan: Plan) -> Plan | None:
    """Greedy repair until the plan covers ``V``; ``None`` when no move is left."""
    chosen = [int(v) for v in plan.chosen]
    work = float(p.work[chosen].sum())
    while work < p.job.work - 1e-9:
        moves = []
        for v in range(p.size):
            if v in chosen:
                continue
            same = [u for u in chosen if p.slot[u] == p.slot[v] and p.machine[u] == p.machine[v] and p.kind[u] == p.kind[v]]
            trial = [u for u in chosen if u not in same] + [v]
            gain = p.work[v] - p.work[same].sum()
            extra = p.cost[v] - p.cost[same].sum()
            if gain <= 0 or not _feasible(p, trial):
                continue
            moves.append((work + gain >= p.job.work - 1e-9, gain, extra, v, same))
        if not moves:
            return None
        finishing = [m for m in moves if m[0]]
        if finishing:
            _, gain, extra, v, same = min(finishing, key=lambda m: (m[2], -m[1], m[3]))
        else:
            _, gain, extra, v, same = max(moves, key=lambda m: (m[1] / m[2] if m[2] > 0 else np.inf, -m[3]))
        chosen = [u for u in chosen if u not in same] + [v]
        work += gain
    chosen_arr = np.array(sorted(chosen), dtype=np.int64)
    return Plan(chosen_arr, float(p.work[chosen_arr].sum()), float(p.cost[chosen_arr].sum()))


def packing_rows(p: Patterns) -> int:
    a, lo, hi = p.rows()
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
