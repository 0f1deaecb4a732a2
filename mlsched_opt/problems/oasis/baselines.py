"""The four baselines OASiS is compared with (spec 000 section 5.2), as online policies for :func:`.online.simulate`.

The paper describes them in a sentence each; where it is vague the choice below is our design
[PROP] (pitfall 16), stated per class.  Common to all:

* a job with ``y`` workers runs ``max(ps.min, ceil(y b / B))`` PSs (at most ``y``), so every slot meets (6)-(7);
* every worker count stays in the job's size range ``[lo, hi]`` (:mod:`.view`) or is 0 (paused);
* FIFO and RRH run each job at a fixed gang: workers and PSs drawn uniformly from [1, 30]
  (seeded per run), workers capped by the job's cap, PSs raised to ``ceil(y b/B)`` and capped
  at ``y``, and the gang shrunk until it fits the empty cluster (otherwise one job could block
  a FIFO queue forever);
* FIFO, DRF and RRH place tasks round-robin: the next eligible server (cyclically) with room,
  one task at a time;
* a job that does not finish by the horizon earns nothing (pitfall 15).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ...solvers.highs_lp import INF, ArrayLP
from ...tolerances import FIT_TOL
from ..online import SlotPolicy
from .view import OasisJob, OasisView, fit_counts

GANG_RANGE = (1, 30)
BASELINES = ("fifo", "drf", "rrh", "dorm")


class _Pools:
    """Free capacity of one slot in both pools and round-robin placement into it."""

    def __init__(self, view: OasisView):
        self.view = view
        self.free = {"worker": view.worker_capacity.copy(), "ps": view.ps_capacity.copy()}
        self.pointer = {"worker": 0, "ps": 0}

    def place_one(self, kind: str, demand: np.ndarray, ok: np.ndarray, first_fit: bool = False) -> int | None:
        """One task on the next server with room after the pointer (round-robin), or the first one (first-fit)."""
        free = self.free[kind]
        fits = ok & np.all(free >= demand - FIT_TOL, axis=1)
        idx = np.flatnonzero(fits)
        if idx.size == 0:
            return None
        after = idx if first_fit else idx[idx >= self.pointer[kind]]
        s = int(after[0] if after.size else idx[0])
        free[s] -= demand
        if not first_fit:
            self.pointer[kind] = (s + 1) % len(free)
        return s

    def place_gang(self, job: OasisJob, y: int, p: int, first_fit: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
        """All ``y`` workers and ``p`` PSs round-robin, or nothing (the placement is rolled back)."""
        for kind, count, demand, ok in (("worker", y, job.worker, job.worker_ok), ("ps", p, job.ps, job.ps_ok)):
            if count > np.sum(np.where(ok, fit_counts(self.free[kind], demand), 0)):
                return None  # cannot fit whatever the order: refuse before placing task by task
        w = np.zeros(self.view.H, np.int64)
        z = np.zeros(self.view.K, np.int64)
        pointer = dict(self.pointer)
        for kind, count, demand, ok, out in (("worker", y, job.worker, job.worker_ok, w), ("ps", p, job.ps, job.ps_ok, z)):
            for _ in range(count):
                s = self.place_one(kind, demand, ok, first_fit)
                if s is None:
                    self.release(job, w, z)
                    self.pointer = pointer
                    return None
                out[s] += 1
        return w, z

    def release(self, job: OasisJob, w: np.ndarray, z: np.ndarray) -> None:
        self.free["worker"] += w[:, None] * job.worker
        self.free["ps"] += z[:, None] * job.ps

    def take(self, job: OasisJob, w: np.ndarray, z: np.ndarray) -> None:
        self.free["worker"] -= w[:, None] * job.worker
        self.free["ps"] -= z[:, None] * job.ps


def _gang(view: OasisView, job: OasisJob, rng: np.random.Generator) -> tuple[int, int]:
    """The fixed gang: the draws clamped into the job's size range, shrunk until it fits the empty cluster."""
    y = min(max(int(rng.integers(GANG_RANGE[0], GANG_RANGE[1] + 1)), job.lo), job.hi)
    p_draw = int(rng.integers(GANG_RANGE[0], GANG_RANGE[1] + 1))
    while y >= job.lo:
        p = _ps_count(job, y, p_draw)
        if _Pools(view).place_gang(job, y, p) is not None:
            return y, p
        y -= 1
    return 0, 0


def _ps_count(job: OasisJob, y: int, wanted: int) -> int:
    """``wanted`` PSs moved into what ``y`` workers allow: at least ``ps_needed(y)``, at most ``y`` and ``ps.max``."""
    top = y if job.ps_max is None else min(y, job.ps_max)
    return int(min(max(wanted, job.ps_needed(y)), top))


def _late(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline


class Fifo:
    """FIFO (Hadoop/Spark default): every job admitted; the queue head starts when its whole fixed gang
    fits, later jobs wait behind it (no backfilling) [PROP]; a started job keeps its placement."""

    def __init__(self, view: OasisView, seed: int = 0, deadline: float | None = None):
        self.view = view
        self.rng = np.random.default_rng(seed)
        self.gang: dict[int, tuple[int, int]] = {}
        self.queue: list[OasisJob] = []
        self.running: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.admitted: set[int] = set()
        self.stats: dict[str, Any] = {}

    def arrive(self, job: OasisJob, slot: int) -> None:
        self.gang[job.index] = _gang(self.view, job, self.rng)
        self.admitted.add(job.index)
        self.queue.append(job)

    def run(self, slot: int, active: list[OasisJob]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        pools = _Pools(self.view)
        for i, (w, z) in self.running.items():
            pools.take(self.view.jobs[i], w, z)
        while self.queue:
            job = self.queue[0]
            y, p = self.gang[job.index]
            placed = pools.place_gang(job, y, p) if y else None
            if placed is None:
                break
            self.running[job.index] = placed
            self.queue.pop(0)
        return dict(self.running)

    def completed(self, job: OasisJob, slot: int) -> None:
        self.running.pop(job.index, None)


class Drf:
    """DRF (YARN/Mesos default): every job admitted; at every slot (hence at every arrival and completion,
    the only moments the outcome can change) workers are handed out one at a time to the active job with
    the smallest dominant share (ties: earlier arrival), each with the PSs it then needs, until no job can
    grow (progressive filling, max-min fair in dominant shares).  Shares are over the pools' totals."""

    def __init__(self, view: OasisView, seed: int = 0, deadline: float | None = None):
        self.view = view
        self.deadline = deadline
        self.cut_short = 0
        self.admitted: set[int] = set()
        self.stats: dict[str, Any] = {}
        self.total_w = np.where(view.worker_capacity.sum(axis=0) > 0, view.worker_capacity.sum(axis=0), np.inf)
        self.total_p = np.where(view.ps_capacity.sum(axis=0) > 0, view.ps_capacity.sum(axis=0), np.inf)

    def arrive(self, job: OasisJob, slot: int) -> None:
        self.admitted.add(job.index)

    def share(self, job: OasisJob, y: int, p: int) -> float:
        return float(max(np.max(y * job.worker / self.total_w), np.max(p * job.ps / self.total_p)))

    def run(self, slot: int, active: list[OasisJob]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        pools = _Pools(self.view)
        alloc = {j.index: (np.zeros(self.view.H, np.int64), np.zeros(self.view.K, np.int64)) for j in active}
        heap = [(0.0, j.arrival, j.index) for j in active]
        heapq.heapify(heap)
        steps = 0
        while heap:
            steps += 1
            if steps % 1024 == 0 and _late(self.deadline):
                self.cut_short += 1  # out of time: the allocation so far is valid, just not max-min fair
                break
            _, arrival, i = heapq.heappop(heap)
            job = self.view.jobs[i]
            w, z = alloc[i]
            y, p = int(w.sum()), int(z.sum())
            step = job.lo if y == 0 else 1  # a job starts at its smallest size, then grows one worker at a time
            if y + step > job.hi:
                continue
            extra = int(job.ps_needed(y + step)) - p
            placed = pools.place_gang(job, step, extra)
            if placed is None:
                continue
            w += placed[0]
            z += placed[1]
            heapq.heappush(heap, (self.share(job, y + step, p + extra), arrival, i))
        return alloc

    def completed(self, job: OasisJob, slot: int) -> None:
        pass


class Rrh:
    """Risk-Reward Heuristic (after Irwin et al., HPDC 2004) with a fixed gang per job.

    [PROP] Reward of running job ``j`` from slot ``t``: ``f_j(t + r_j - 1 - a_j)``, ``r_j`` its remaining
    slots at its gang; risk: the resource-time it occupies, ``r_j`` x its dominant share.  Every slot the
    unfinished admitted jobs are ranked by reward / risk and run in that order while their gangs fit;
    the rest pause (a running job keeps its gang size).  A job that can no longer earn anything (zero
    reward, or not finishing by the horizon) is dropped.  At arrival a job is admitted iff its reward
    minus the delay cost it imposes, the utility the admitted jobs ranked below it would lose if delayed
    by its run time, exceeds the threshold 0.
    """

    def __init__(self, view: OasisView, seed: int = 0, deadline: float | None = None):
        self.view = view
        self.rng = np.random.default_rng(seed)
        self.deadline = deadline
        self.cut_short = 0
        self.gang: dict[int, tuple[int, int]] = {}
        self.done: dict[int, int] = {}
        self.finished: set[int] = set()
        self.admitted: set[int] = set()
        self.dropped: set[int] = set()
        self.stats: dict[str, Any] = {"rejected": 0}
        self.drf = Drf(view, deadline=deadline)

    def remaining(self, job: OasisJob) -> int:
        y = self.gang[job.index][0]
        return -(-(job.work_slots - self.done.get(job.index, 0)) // y) if y else 10**9

    def reward(self, job: OasisJob, slot: int, delay: int = 0) -> float:
        end = slot + delay + self.remaining(job) - 1
        return float(job.value(end)) if end < self.view.slots else 0.0

    def score(self, job: OasisJob, slot: int) -> float:
        y, p = self.gang[job.index]
        risk = self.remaining(job) * max(self.drf.share(job, y, p), 1e-12)
        return self.reward(job, slot) / risk

    def arrive(self, job: OasisJob, slot: int) -> None:
        self.gang[job.index] = _gang(self.view, job, self.rng)
        if _late(self.deadline):
            # out of time: the delay cost below is quadratic in the queue, so the job is rejected unpriced
            self.cut_short += 1
            self.stats["rejected"] += 1
            return
        reward = self.reward(job, slot)
        mine = self.score(job, slot) if reward > 0 else 0.0
        delay = self.remaining(job)
        waiting = [self.view.jobs[i] for i in sorted(self.admitted - self.dropped - self.finished)]
        cost = sum(self.reward(other, slot) - self.reward(other, slot, delay)
                   for other in waiting if self.score(other, slot) < mine)
        if reward - cost > 0:
            self.admitted.add(job.index)
        else:
            self.stats["rejected"] += 1

    def run(self, slot: int, active: list[OasisJob]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        pools = _Pools(self.view)
        out = {}
        live = [j for j in active if j.index in self.admitted and j.index not in self.dropped]
        for job in live:
            if self.reward(job, slot) <= 0:
                self.dropped.add(job.index)
        ranked = sorted((j for j in live if j.index not in self.dropped), key=lambda j: (-self.score(j, slot), j.arrival, j.index))
        for job in ranked:
            y, p = self.gang[job.index]
            placed = pools.place_gang(job, y, p)
            if placed is not None:
                out[job.index] = placed
                self.done[job.index] = self.done.get(job.index, 0) + y
        self.stats["dropped"] = len(self.dropped)
        return out

    def completed(self, job: OasisJob, slot: int) -> None:
        self.finished.add(job.index)


class Dorm:
    """Dorm (after Sun et al., SmartComp 2017): every job admitted; at every arrival and completion the
    worker/PS counts of the active jobs are recomputed by a small MILP and the tasks re-placed.

    [PROP] The MILP (HiGHS directly) maximises resource utilisation, the sum over jobs and resources
    of used / pool capacity, subject to the pools' total capacities, ``ceil(y b/B) <= p <= y``, the
    cap, *fairness*: every job gets at least half of its DRF worker count, and *adjustment overhead*:
    at most a quarter of the previously running jobs (at least one) change their worker count (dropped
    when that makes the MILP infeasible).  Tasks are then placed first-fit, largest gang first; a gang
    that does not fit shrinks until it does.  Between events the allocation stays as it is.
    """

    FAIR_SHARE = 0.5
    ADJUST_SHARE = 0.25

    def __init__(self, view: OasisView, seed: int = 0, deadline: float | None = None, time_limit: float = 5.0):
        self.view = view
        self.deadline = deadline
        self.admitted: set[int] = set()
        self.stats: dict[str, Any] = {"milps": 0, "adjust_relaxed": 0}
        self.drf = Drf(view, deadline=deadline)
        self.counts: dict[int, int] = {}
        self.alloc: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.changed = True
        self.time_limit = time_limit

    def arrive(self, job: OasisJob, slot: int) -> None:
        self.admitted.add(job.index)
        self.changed = True

    def completed(self, job: OasisJob, slot: int) -> None:
        self.alloc.pop(job.index, None)
        self.counts.pop(job.index, None)
        self.changed = True

    def run(self, slot: int, active: list[OasisJob]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        if self.changed and active:
            fair = {i: int(w.sum()) for i, (w, _) in self.drf.run(slot, active).items()}
            counts = self._milp(active, fair)
            self.alloc = self._place(active, counts)
            self.counts = {i: int(w.sum()) for i, (w, _) in self.alloc.items()}
            self.changed = False
        return dict(self.alloc)

    def _milp(self, active: list[OasisJob], fair: dict[int, int]) -> dict[int, tuple[int, int]]:
        n = len(active)
        R = len(self.view.resources)
        cw = self.view.worker_capacity.sum(axis=0)
        cp = self.view.ps_capacity.sum(axis=0)
        running = [k for k, j in enumerate(active) if j.index in self.counts]
        # columns: y_0..y_{n-1}, p_0..p_{n-1}, c_k for running jobs
        ncol = 2 * n + len(running)
        c = np.zeros(ncol)
        rows, lo, hi = [], [], []
        for k, job in enumerate(active):
            c[k] = float(np.sum(job.worker / np.where(cw > 0, cw, np.inf)))
            c[n + k] = float(np.sum(job.ps / np.where(cp > 0, cp, np.inf)))
            for ratio_lo, ratio_hi in ((job.b / job.B, np.inf), (-np.inf, 1.0)):
                row = np.zeros(ncol)
                row[n + k], row[k] = 1.0, -(ratio_lo if ratio_hi == np.inf else ratio_hi)
                rows.append(row)
                lo.append(0.0 if ratio_hi == np.inf else -INF)
                hi.append(INF if ratio_hi == np.inf else 0.0)
        for r in range(R):
            for offset, cap, attr in ((0, cw, "worker"), (n, cp, "ps")):
                row = np.zeros(ncol)
                row[offset:offset + n] = [getattr(j, attr)[r] for j in active]
                if row.any():
                    rows.append(row)
                    lo.append(-INF)
                    hi.append(float(cap[r]))
        for col, k in enumerate(running):
            prev = self.counts[active[k].index]
            big = float(active[k].cap)
            for sign in (1.0, -1.0):
                row = np.zeros(ncol)
                row[k], row[2 * n + col] = sign, -big
                rows.append(row)
                lo.append(-INF)
                hi.append(sign * prev)
        adjust_row = None
        if running:
            row = np.zeros(ncol)
            row[2 * n:] = 1.0
            rows.append(row)
            lo.append(-INF)
            hi.append(float(max(1, int(np.ceil(self.ADJUST_SHARE * len(running))))))
            adjust_row = len(rows) - 1
        col_lo = np.zeros(ncol)
        col_hi = np.ones(ncol)
        for k, job in enumerate(active):
            col_lo[k] = int(np.floor(self.FAIR_SHARE * fair.get(job.index, 0)))
            col_hi[k] = max(job.hi, 0)
            col_hi[n + k] = job.cap if job.ps_max is None else min(job.cap, job.ps_max)
        A = np.array(rows) if rows else np.zeros((0, ncol))
        # each MILP gets at most what is left of the run's time limit
        left = self.time_limit if self.deadline is None else max(0.01, min(self.time_limit, self.deadline - time.perf_counter()))
        lp = ArrayLP(c, A, lo, hi, col_lo, col_hi, maximize=True, time_limit=left, integer=True, gap=1e-4)
        res = lp.solve()
        self.stats["milps"] += 1
        if res.x is None and adjust_row is not None:
            self.stats["adjust_relaxed"] += 1
            lp.highs.changeRowBounds(adjust_row, -INF, float(len(running)))
            res = lp.solve()
        if res.x is None:
            return {j.index: (fair.get(j.index, 0), int(j.ps_needed(fair.get(j.index, 0)))) for j in active}
        x = np.round(res.x).astype(int)
        return {j.index: (int(x[k]), int(x[n + k])) for k, j in enumerate(active)}

    def _place(self, active: list[OasisJob], counts: dict[int, tuple[int, int]]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        pools = _Pools(self.view)
        out = {}
        for job in sorted(active, key=lambda j: (-counts[j.index][0], j.arrival, j.index)):
            y, p = counts[job.index]
            if y > 0:
                # the MILP keeps y <= hi but not y >= lo (it would need an on/off binary): round up
                y = max(y, job.lo)
            while job.lo <= y <= job.hi:
                p = _ps_count(job, y, p)
                placed = pools.place_gang(job, y, p, first_fit=True)
                if placed is not None:
                    out[job.index] = placed
                    break
                y -= 1
                p = min(p, y)
        return out


class BaselinePolicy(SlotPolicy, Protocol):
    """A baseline: an online slot policy that counts what it did in ``stats``."""

    stats: dict[str, Any]


POLICIES: dict[str, Callable[..., BaselinePolicy]] = {"fifo": Fifo, "drf": Drf, "rrh": Rrh, "dorm": Dorm}
