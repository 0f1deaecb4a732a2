"""``--method replan``: OASiS's online setting, planned jointly by a rolling horizon (our design, issue 32).

**What it knows.**  At slot ``t`` the jobs that arrived at or before ``t`` (each with what OASiS is
told on arrival: work, sizes, demands, utility), the servers and the horizon; nothing of later
arrivals.  **What it decides.**  Whenever jobs arrive, every known job that has not started (the
new ones, those planned for a later slot, those not admitted so far) is planned anew, jointly, on the
capacity the started jobs leave from slot ``t`` on, by :func:`.plan.plan_jobs` (the column LP/MILP,
packing on servers, single-job re-plans of what does not fit); the slot's tasks are then run.  A job
that has started keeps its plan to its completion (no preemption or migration, as with OASiS's
reservations).  Plans for later slots are provisional: later arrivals may displace a job that has not
started, which OASiS's commit-on-arrival cannot.

**Guarantee: none.**  It is a rolling-horizon (model predictive) heuristic, not a competitive
algorithm; OASiS (``--method oasis``) keeps the paper's 2 alpha bound.  Deterministic: HiGHS on one
thread with a fixed seed and a node limit; past the time limit it stops re-planning (started and
planned jobs keep their plans, later arrivals are not admitted) and the message says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...clock import past
from .plan import State, plan_jobs
from .view import OasisJob, OasisView


class Replan:
    """The rolling-horizon policy as a :class:`~mlsched_opt.problems.online.SlotPolicy` for :func:`.online.simulate`."""

    def __init__(self, view: OasisView, seed: int = 0, deadline: float | None = None):
        self.view = view
        self.seed = seed
        self.deadline = deadline
        self.state = State.empty(view)
        # the simulator counts a job complete at its work_slots (>= the checker's least): plan that much
        self.state.work = np.array([j.work_slots for j in view.jobs], dtype=np.int64)
        self.known: list[int] = []
        self.arrived = False
        self.cut_short = 0
        self.stats: dict[str, Any] = {"replans": 0}

    @property
    def admitted(self) -> set[int]:
        return set(self.state.completion)

    def arrive(self, job: OasisJob, slot: int) -> None:
        self.known.append(job.index)
        self.arrived = True

    def run(self, slot: int, active: list[OasisJob]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        if self.arrived:
            self.arrived = False
            self._replan(slot)
        state = self.state
        return {j.index: (state.workers[j.index].at(slot), state.ps[j.index].at(slot))
                for j in active if j.index in state.workers and slot in state.workers[j.index].entries}

    def completed(self, job: OasisJob, slot: int) -> None:
        pass

    def _replan(self, slot: int) -> None:
        if past(self.deadline):
            self.cut_short += 1
            return
        state = self.state
        free = []
        for i in self.known:
            if i in state.completion:
                if state.workers[i].used_slots()[0] < slot:
                    continue  # started: keeps its plan
                state.remove(i)
            free.append(i)
        self.stats["replans"] += 1
        before = state.cut_short
        plan_jobs(state, free, np.inf if self.deadline is None else self.deadline, self.seed, not_before=slot, retry_rejected=False)
        self.cut_short += state.cut_short - before
