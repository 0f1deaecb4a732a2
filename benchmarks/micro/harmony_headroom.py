"""How much room holding jobs back leaves in harmony (issue 21; the README's "why the headroom
is small"), on the held-out test traces of ``benchmarks/harmony_drl.toml`` (40 jobs, 6 servers,
load 0.8, test seeds 3,000,000 + k):

* **queue order**: standalone-first placing the queue in arrival order (the simulator's rule)
  against shortest standalone run first, per world (the simulator's queue is reordered here by
  patching its internal ``_place_queue``: a what-if, not a method);
* **clairvoyant hold-back search**: every hold-back decision of standalone-first (``defer=20``)
  tried both ways, one after another in the order they come, each by re-simulating the whole
  trace and keeping the answer of the lower average JCT.  It sees the future arrivals, so no
  policy can do as well; it bounds what deferral decisions alone add to that placement.

    python benchmarks/micro/harmony_headroom.py [--traces 3] [--worlds default,gavel]
"""

from __future__ import annotations

import argparse

import numpy as np

from mlsched_opt.problems.harmony import simulate as sim
from mlsched_opt.problems.harmony.baselines import Delegating, make_heuristic
from mlsched_opt.problems.harmony.exact import standalone_intervals
from mlsched_opt.problems.harmony.train import make_trace

D = 20


def shortest_first(view) -> float:
    lengths = standalone_intervals(view)
    original = sim._place_queue
    sim._place_queue = lambda env, queue: original(env, sorted(queue, key=lambda j: lengths[j]))
    try:
        return float(sim.simulate(view, make_heuristic("standalone")).jct(view).mean())
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=3, help="test traces for the clairvoyant search (it is slow)")
    ap.add_argument("--worlds", default="default,hard,gavel")
    args = ap.parse_args()
    for world in args.worlds.split(","):
        views = [make_trace(3_000_000 + k, 40, 6, world, 0.8) for k in range(10)]
        fifo = np.mean([sim.simulate(v, make_heuristic("standalone")).jct(v).mean() for v in views])
        sjf = np.mean([shortest_first(v) for v in views])
        print(f"{world}: standalone-first {fifo:.2f}, shortest first {sjf:.2f} ({1 - sjf / fifo:.1%} lower)")
        for k, view in enumerate(views[:args.traces]):
            base = float(sim.simulate(view, make_heuristic("standalone")).jct(view).mean())
            best = clairvoyant(view)
            print(f"  trace {k}: standalone-first {base:.2f}, clairvoyant hold-backs {best:.2f} ({1 - best / base:.1%} lower)")


if __name__ == "__main__":
    main()
