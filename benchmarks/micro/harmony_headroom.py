"""How much room holding jobs back leaves in harmony (issue 21; the README's "why the headroom
is small"), on the held-out test traces of ``benchmarks/harmony_drl.toml`` (40 jobs, 6 servers,
load 0.8, test seeds 3,000,000 + k):

* **queue order**: standalone-first and the two deferral heuristics placing the queue in arrival
  order (the simulator's rule) against shortest standalone run first, per world (the
  simulator's queue is reordered here by patching its internal ``_place_queue``: a what-if, not
  a method; no method, drl included, can reorder the queue other than by holding jobs back);
* **clairvoyant hold-back search**: every hold-back decision of standalone-first (``defer=20``)
  tried both ways, one after another in the order they come, each by re-simulating the whole
  trace and keeping the answer of the lower average JCT.  It sees the future arrivals, which no
  policy can, so it is an optimistic estimate of what deferral decisions alone add to that
  placement (not a proof: the search is greedy, one decision at a time);
* **rollout planner** (``--planner-traces``): each world's best heuristic, every hold-back
  decision of which (every queued job's turn within the deferral rule) is answered both ways
  and scored by the heuristic finishing the run in 4 sampled futures (the trace's arrivals so
  far, then a future trace's later ones: ``train.answer_costs``), taking the lower mean total
  JCT: one step of policy iteration from the heuristic, done online (what ``mlsched train``'s
  rollout labels teach the policy, without the learning).  It sees no real future, so a policy
  could do as well; it is slow (2 x 4 runs per decision).

    python benchmarks/micro/harmony_headroom.py [--traces 3] [--planner-traces 2] [--worlds default,gavel]
"""

from __future__ import annotations

import argparse

import numpy as np

from mlsched_opt.problems.harmony import simulate as sim
from mlsched_opt.problems.harmony.baselines import Delegating, make_heuristic
from mlsched_opt.problems.harmony.exact import standalone_intervals
from mlsched_opt.problems.harmony.train import answer_costs, make_trace

D = 20


ORDERED = ("standalone", "least-interference-defer", "standalone-defer")


def average_jct(view, name: str, shortest: bool = False) -> float:
    lengths = standalone_intervals(view)
    original = sim._place_queue
    if shortest:
        sim._place_queue = lambda env, queue: original(env, sorted(queue, key=lambda j: lengths[j]))
    try:
        return float(sim.simulate(view, make_heuristic(name), defer_max=D).jct(view).mean())
    finally:
        sim._place_queue = original


class Scripted(Delegating):
    """Standalone-first whose hold-back answers are fixed per (job, interval); unlisted: place now."""

    def __init__(self, fixed):
        super().__init__(make_heuristic("standalone"))
        self.fixed, self.asks = fixed, []

    def defer(self, env, j):
        self.asks.append((j, env.interval))
        return self.fixed.get((j, env.interval), False)


def clairvoyant(view) -> float:
    def run(fixed):
        chooser = Scripted(fixed)
        return float(sim.simulate(view, chooser, defer_max=D).jct(view).mean()), chooser.asks

    fixed: dict[tuple[int, int], bool] = {}
    while True:
        value, asks = run(fixed)
        free = [a for a in asks if a not in fixed]
        if not free:
            return value
        held = {**fixed, free[0]: True}
        fixed[free[0]] = run(held)[0] < value


#: the heuristic each world's rollout planner starts from (the best on its test traces)
PLANNED = {"default": "least-interference-defer", "hard": "standalone-defer", "gavel": "standalone"}


class Planner(Delegating):
    """``name`` whose every hold-back answer is the better of the two over ``futures`` (see the docstring)."""

    def __init__(self, name: str, view, futures):
        super().__init__(make_heuristic(name))
        self.name, self.view, self.futures = name, view, futures
        self.fixed: dict[tuple[int, int], bool] = {}
        self.flips = 0

    def defer(self, env, j):
        t = env.interval
        own = sim.holds_back(self.inner, env, j)   # a plain heuristic places now
        # earlier answers are replayed as given: the run up to t is this one
        cost = answer_costs(self.view, lambda: make_heuristic(self.name), self.fixed, (j, t), self.futures, lambda v: None, D)
        answer = own if cost[True] == cost[False] else cost[True] < cost[False]
        self.flips += answer != own
        self.fixed[(j, t)] = answer
        return answer


def planned(view, name: str, k: int, world: str) -> tuple[float, int]:
    futures = [make_trace(5_000_000 + 100 * k + i, 40, 6, world, 0.8) for i in range(4)]
    planner = Planner(name, view, futures)
    return float(sim.simulate(view, planner, defer_max=D).jct(view).mean()), planner.flips


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
            print(f"{world}: {name} {fifo:.2f}, shortest first {sjf:.2f} ({1 - sjf / fifo:.1%} lower)")
        for k, view in enumerate(views[:args.traces]):
            base = float(sim.simulate(view, make_heuristic("standalone")).jct(view).mean())
            best = clairvoyant(view)
            print(f"  trace {k}: standalone-first {base:.2f}, clairvoyant hold-backs {best:.2f} ({1 - best / base:.1%} lower)")
        name = PLANNED[world]
        for k, view in enumerate(views[:args.planner_traces]):
            base = average_jct(view, name)
            got, flips = planned(view, name, k, world)
            change = 1 - got / base
            print(f"  trace {k}: {name} {base:.2f}, rollout planner {got:.2f} ({abs(change):.1%} {'lower' if change >= 0 else 'higher'}, "
                  f"{flips} answers changed)")


if __name__ == "__main__":
    main()
