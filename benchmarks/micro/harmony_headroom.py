"""How much room the decisions of harmony's methods leave (issue 21; "why learning finds nothing more"
on the harmony page of the docs), on the held-out test traces of ``benchmarks/harmony_drl.toml`` (40 jobs, 6
servers, load 0.8, test seeds 3,000,000 + k).  Each world starts from its best heuristic
(:data:`PLANNED`); a *decision* is a queued job's turn in an interval, answered by "not now"
(within the deferral rule) or by the placement heuristic that places the job now (one of the
five deterministic ones):

* **queue order**: standalone-first and the two deferral heuristics placing the queue in arrival
  order (the simulator's rule) against shortest standalone run first, per world (the
  simulator's queue is reordered here by patching its internal ``_place_queue``: a what-if, not
  a method; no method, drl included, can reorder the queue other than by holding jobs back);
* **clairvoyant search**: local search over every decision of the run, one after another in the
  order they come, each answer tried and scored by re-simulating the whole trace, keeping the
  best, with passes repeated until one changes nothing.  It sees the future arrivals, which no
  policy can, so it is an optimistic estimate of what where and when add to the best heuristic
  (not a proof: the search is local);
* **rollout planner** (``--planner-traces``): every decision answered by the answer of the lower
  total JCT when the heuristic finishes the run in 4 sampled futures (the trace's arrivals so
  far, then a future trace's later ones: ``train.future_cost``): one step of policy iteration
  from the heuristic, done online (what ``mlsched train``'s rollout labels teach the policy,
  for hold-back answers, without the learning).  It sees no real future, so a policy could do as
  well; it is slow (6 x 4 runs per decision).

    python benchmarks/micro/harmony_headroom.py [--traces 3] [--planner-traces 1] [--worlds default,gavel]
"""

from __future__ import annotations

import argparse

import numpy as np

from mlsched_opt.problems.harmony import simulate as sim
from mlsched_opt.problems.harmony.baselines import HEURISTICS, make_heuristic
from mlsched_opt.problems.harmony.options import DEFERRING
from mlsched_opt.problems.harmony.placements import standalone_intervals
from mlsched_opt.problems.harmony.rl.train import future_cost, make_trace

D = 20
HOLD = "not now"
#: the answers to a decision: hold the job back, or place it now by one of these heuristics
PLACERS = tuple(HEURISTICS)

ORDERED = ("standalone", "least-interference-defer", "standalone-defer")

#: the heuristic each world's searches start from (the best on its test traces)
PLANNED = {"default": "least-interference-defer", "hard": "standalone-defer", "gavel": "standalone"}


def average_jct(view, name: str, shortest: bool = False) -> float:
    lengths = standalone_intervals(view)
    original = sim._place_queue
    if shortest:
        sim._place_queue = lambda env, queue: original(env, sorted(queue, key=lambda j: lengths[j]))
    try:
        return float(sim.simulate(view, make_heuristic(name), defer_max=D).jct(view).mean())
    finally:
        sim._place_queue = original


class Answered:
    """Heuristic ``name`` whose decisions listed in ``fixed`` ((job, interval) -> HOLD or a placer)
    are answered as listed; ``decisions`` records, in the order they come, the decisions that
    held a job back or placed it, each with whether holding back was open (one where the job did
    not fit is left out: the search would try answers that all fail to place it)."""

    def __init__(self, name: str, fixed: dict):
        self.base = make_heuristic(name)
        self.own = DEFERRING[name][0] if name in DEFERRING else name   # the placement heuristic's name
        self.placers = {p: make_heuristic(p) for p in PLACERS}
        self.fixed = fixed
        self.decisions: dict[tuple[int, int], bool] = {}
        self.placing = self.placers[self.own]
        self.open = False

    def answer(self, env, j, may_hold: bool) -> str:
        got = self.fixed.get((j, env.interval))
        if got is not None:
            return got
        return HOLD if may_hold and sim.holds_back(self.base, env, j) else self.own

    def defer(self, env, j):
        # asked only within the deferral rule: holding back is open
        held = self.answer(env, j, True) == HOLD
        if held:
            self.decisions[(j, env.interval)] = True
        return held

    def start_job(self, env, j):
        self.open = env.may_defer(j)
        # a hold-back fixed by an earlier run of the search may not be open in this one
        self.placing = self.placers.get(self.answer(env, j, False), self.placers[self.own])

    def end_job(self, env, j, placed):
        if placed:
            self.decisions[(j, env.interval)] = self.open

    def choose(self, env, j, role, mask):
        return self.placing.choose(env, j, role, mask)


def run(view, name: str, fixed: dict) -> tuple[float, dict]:
    chooser = Answered(name, fixed)
    return float(sim.simulate(view, chooser, defer_max=D).jct(view).mean()), chooser.decisions


def clairvoyant(view, name: str, passes: int = 3) -> float:
    fixed: dict = {}
    value, decisions = run(view, name, fixed)
    for _ in range(passes):
        seen, changed = set(), False
        while True:
            todo = [d for d in decisions if d not in seen]
            if not todo:
                break
            d = todo[0]
            seen.add(d)
            for answer in ((HOLD,) if decisions[d] else ()) + PLACERS:
                if answer == fixed.get(d):
                    continue
                got, after = run(view, name, {**fixed, d: answer})
                if got < value - 1e-9:
                    value, decisions, changed = got, after, True
                    fixed[d] = answer
        if not changed:
            break
    return value


class Planner(Answered):
    """``name`` whose every decision is the answer of the lower total JCT over ``futures``."""

    def __init__(self, name: str, view, futures):
        super().__init__(name, {})
        self.name, self.view, self.futures = name, view, futures
        self.changed = 0

    def answer(self, env, j, may_hold):
        key = (j, env.interval)
        if key in self.fixed:
            return self.fixed[key]
        own = super().answer(env, j, may_hold)
        if not any(fits(env, j, placer) for placer in self.placers.values()):
            return own   # nothing to decide: no answer places the job now
        cost = {a: future_cost(self.view, lambda at: Answered(self.name, at), {**self.fixed, key: a}, env.interval,
                               self.futures, lambda v: None, D)
                for a in ((HOLD,) if may_hold else ()) + PLACERS}
        best = min(cost, key=lambda a: (cost[a], a != own))
        self.changed += best != own
        self.fixed[key] = best
        return best


def fits(env, j, placer) -> bool:
    """Whether ``placer`` places job ``j`` now (a dry run: the state is restored)."""
    left = dict(env.left)
    try:
        return sim.place_job(env, j, placer)
    finally:
        sim.rollback(env, j)
        env.left = left


def planned(view, name: str, k: int, world: str) -> tuple[float, int]:
    futures = [make_trace(5_000_000 + 100 * k + i, 40, 6, world, 0.8) for i in range(4)]
    planner = Planner(name, view, futures)
    return float(sim.simulate(view, planner, defer_max=D).jct(view).mean()), planner.changed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=3, help="test traces for the clairvoyant search (it is slow)")
    ap.add_argument("--planner-traces", type=int, default=0, help="test traces for the rollout planner (slower still)")
    ap.add_argument("--worlds", default="default,hard,gavel")
    args = ap.parse_args()
    for world in args.worlds.split(","):
        views = [make_trace(3_000_000 + k, 40, 6, world, 0.8) for k in range(10)]
        for name in ORDERED:
            fifo = np.mean([average_jct(v, name) for v in views])
            sjf = np.mean([average_jct(v, name, shortest=True) for v in views])
            print(f"{world}: {name} {fifo:.2f}, shortest first {sjf:.2f} ({1 - sjf / fifo:.1%} lower)", flush=True)
        name = PLANNED[world]
        for k, view in enumerate(views[:args.traces]):
            base = average_jct(view, name)
            best = clairvoyant(view, name)
            print(f"  trace {k}: {name} {base:.2f}, clairvoyant search {best:.2f} ({1 - best / base:.1%} lower)", flush=True)
        for k, view in enumerate(views[:args.planner_traces]):
            base = average_jct(view, name)
            got, flips = planned(view, name, k, world)
            change = 1 - got / base
            print(f"  trace {k}: {name} {base:.2f}, rollout planner {got:.2f} ({abs(change):.1%} {'lower' if change >= 0 else 'higher'}, "
                  f"{flips} answers changed)", flush=True)


if __name__ == "__main__":
    main()
