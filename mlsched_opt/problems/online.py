"""What the online methods of oasis, locality and harmony share, and why the rest is per family.

**Shared.**  Every online method sees jobs as they arrive and never learns a later arrival early.
Jobs that arrive in the same slot (interval) are handed over in instance-file order (spec 000
pitfall 10), or in an order the method declares from that one (locality's ``sjf``):
:func:`arrivals_by_slot` is that order for oasis and locality; harmony's queue is the same order
(a lexicographic sort on (arrival, index), kept on numpy indices).  A slotted policy speaks
:class:`SlotPolicy`: ``arrive`` (decide about one arriving job), ``run`` (the allocation of every
active job in a slot) and ``completed``; oasis' OASiS and its four baselines implement it and run in
one loop, :func:`mlsched_opt.problems.oasis.online.simulate`.

**Not shared, and why.**

* locality's V-Greedy and V-PD (:mod:`.locality.online`) commit each arriving job's whole plan
  (slot, machine, workers) at arrival and never revise it; nothing they decide depends on what
  runs afterwards, and the completion slot follows from the committed plan at the true rates.
  They need the arrival order and nothing of the per-slot ``run``/``completed`` feedback, so they
  use :func:`arrivals_by_slot` and not the loop; routing them through it would only replay their
  plans.  Their time limit also differs: past it locality plans every remaining job by a no-LP
  earliest-fit rule (:func:`.locality.online.earliest_fit`), while an oasis policy is cut short
  per job (arrivals are rejected) and the loop runs on.
* harmony's simulator (:mod:`.harmony.simulate`) lives in an interference world: speeds depend
  on who shares a server, so a completion is known only by advancing time event by event inside
  an interval, not by counting work per slot.  Its decisions are per task (a ``Chooser`` picks a
  server for one PS or worker, with gang rollback), a job that does not fit waits in a queue to a
  later interval instead of being rejected, and a placement is never migrated; a per-slot
  ``run`` returning allocations has no meaning there.

What each loop returns is a family type (``oasis.online.SlotRun``, ``harmony.simulate.HarmonyRun``,
``locality.online.Schedule``): the decisions differ in kind (per-slot counts, one static placement
with a start interval, committed task triples).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np

#: The allocation of one job in one slot: worker counts and PS counts per server.
Allocation = tuple[np.ndarray, np.ndarray]


class SlotPolicy(Protocol):
    """An online policy over a slotted horizon (``job`` is the family's job view, with ``index``).

    In every slot the loop first calls :meth:`arrive` for each arriving job, in
    :func:`arrivals_by_slot` order; then :meth:`run` with the active (arrived, not finished) jobs;
    then :meth:`completed` for each job whose work is done.
    """

    def arrive(self, job: Any, slot: int) -> None: ...

    def run(self, slot: int, active: list[Any]) -> dict[int, Allocation]: ...

    def completed(self, job: Any, slot: int) -> None: ...


def arrivals_by_slot(arrivals: Iterable[int]) -> dict[int, list[int]]:
    """Job indices by arrival slot, in instance-file order within a slot (spec 000 pitfall 10)."""
    out: dict[int, list[int]] = {}
    for i, slot in enumerate(arrivals):
        out.setdefault(int(slot), []).append(i)
    return out
