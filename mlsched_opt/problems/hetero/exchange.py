"""Exchange local search over allocations: move GPUs between jobs, swap GPU types (our design).

An allocation gives each job a class-count vector ``x_i`` (its GPUs per class).  From a feasible
one, steepest descent over these moves, each evaluated with the true JCTs
(:func:`.timing.jct_rows`: integer split, memory caps, the slowest link):

* *transfer* ``q`` GPUs of class ``c`` from job ``i`` to job ``j`` (``q`` = 1, 2, 4, ...: one GPU
  rarely changes a job's integer split, several may; a job of 128 GPUs moves in a few steps);
* *take* ``q`` idle GPUs of class ``c``, or *release* ``q`` to the idle pool (a job that
  communicates more than it gains);
* *swap* one GPU of class ``c`` of job ``i`` for one of class ``d`` of job ``j``, or *retype*: job
  ``i`` trades a GPU of class ``c`` for an idle one of class ``d``.

Each job keeps a table of what each move of its own would change (``S x (2 L G + G^2)`` JCTs, ``L``
step lengths), so the best move of each kind is a column minimum (the two smallest, so that a
transfer's giver and taker differ), and a move re-evaluates only the one or two jobs it changes.
Every move keeps the allocation feasible (sizes in range, runnable, within capacity) and lowers
the total JCT, so the search ends at a local optimum no worse than its start, within a number of
moves (a work limit: same input, same answer) or a deadline.  No approximation guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...clock import past
from .timing import jct_rows
from .view import HeteroView

#: Moves at most per job (a work limit: the search is deterministic in its input).
MOVES_PER_JOB = 50
#: Longest transfer, in GPUs (the step lengths are the powers of two up to it).
MAX_STEP = 4096


@dataclass
class _Tables:
    cur: np.ndarray      # (S,) JCT of each job
    add: np.ndarray      # (L*G, S) change when the job takes q GPUs of class c (row l*G + c)
    rem: np.ndarray      # (L*G, S) change when it gives them up
    swp: np.ndarray      # (G*G, S) change when it trades one GPU of class c for one of class d (row c*G + d)


class Exchange:
    """The search state: the allocation, the jobs' move tables and the step lengths."""

    def __init__(self, view: HeteroView, x: np.ndarray, comm: str, split: str = "proportional"):
        self.view, self.comm, self.split = view, comm, split
        self.x = np.array(x, dtype=np.int64, copy=True)
        self.lo = np.array([j.k_range[0] for j in view.jobs], dtype=np.int64)
        self.hi = np.array([j.k_range[1] for j in view.jobs], dtype=np.int64)
        top = max(1, min(MAX_STEP, int(self.hi.max()), int(view.counts.max())))
        self.steps = 1 << np.arange(int(math.log2(top)) + 1)
        g = view.G
        self.shift = (self.steps[:, None, None] * np.eye(g, dtype=np.int64)[None]).reshape(-1, g)   # (L*G, G)
        eye = np.eye(g, dtype=np.int64)
        self.trade = (eye[None, :, :] * 0 - eye[:, None, :] + eye[None, :, :]).reshape(g * g, g)     # -e_c + e_d
        self.t = self._tables(np.arange(view.S))

    def _jct(self, rows: np.ndarray, vecs: np.ndarray) -> np.ndarray:
        """True JCTs, ``inf`` where the vector is out of the job's range or negative."""
        k = vecs.sum(axis=1)
        out = np.full(len(rows), np.inf)
        ok = (vecs >= 0).all(axis=1) & (k >= self.lo[rows]) & (k <= self.hi[rows])
        if ok.any():
            out[ok] = jct_rows(self.view, rows[ok], vecs[ok], self.comm, self.split)
        return out

    def _tables(self, jobs: np.ndarray) -> _Tables:
        g, n = self.view.G, len(jobs)
        xs = self.x[jobs]
        cur = self._jct(jobs, xs)
        m = len(self.shift)
        add = self._jct(np.repeat(jobs, m), (xs[:, None, :] + self.shift[None]).reshape(-1, g)).reshape(n, m) - cur[:, None]
        rem = self._jct(np.repeat(jobs, m), (xs[:, None, :] - self.shift[None]).reshape(-1, g)).reshape(n, m) - cur[:, None]
        swp = self._jct(np.repeat(jobs, g * g), (xs[:, None, :] + self.trade[None]).reshape(-1, g)).reshape(n, g * g) - cur[:, None]
        swp[:, np.arange(g) * (g + 1)] = np.inf  # trading a class for itself is no move
        # moves by rows, jobs along them: the column minima below are contiguous reductions
        return _Tables(cur, np.ascontiguousarray(add.T), np.ascontiguousarray(rem.T), np.ascontiguousarray(swp.T))

    def _update(self, jobs: list[int]) -> None:
        idx = np.array(sorted(set(jobs)), dtype=np.int64)
        fresh = self._tables(idx)
        self.t.cur[idx] = fresh.cur
        self.t.add[:, idx], self.t.rem[:, idx], self.t.swp[:, idx] = fresh.add, fresh.rem, fresh.swp

    def best_move(self) -> tuple[float, tuple] | None:
        """The most improving move (its change of the total JCT and what it is), or ``None``."""
        g = self.view.G
        free = self.view.counts - self.x.sum(axis=0)
        qty = np.repeat(self.steps, g)                         # GPUs each column of add/rem moves
        cls = np.tile(np.arange(g), len(self.steps))
        t = self.t
        ra, ia, sa, ja = _two_smallest(t.add)
        rr, ir, sr, jr = _two_smallest(t.rem)
        # transfer: giver and taker differ (the two smallest of each make that possible)
        same = ia == ir
        transfer = np.where(same, np.minimum(rr + sa, sr + ra), rr + ra)
        take = np.where(free[cls] >= qty, ra, np.inf)
        rs, is_, ss, js = _two_smallest(t.swp)
        mirror = (np.arange(g * g) % g) * g + np.arange(g * g) // g     # column (d, c) of column (c, d)
        swap = np.where(is_ == is_[mirror], np.minimum(rs + ss[mirror], ss + rs[mirror]), rs + rs[mirror])
        retype = np.where(free[np.arange(g * g) % g] >= 1, rs, np.inf)
        options = [("transfer", transfer), ("take", take), ("release", rr), ("swap", swap), ("retype", retype)]
        kind, values = min(((k, v) for k, v in options), key=lambda kv: float(np.min(kv[1])) if len(kv[1]) else math.inf)
        col = int(np.argmin(values))
        delta = float(values[col])
        if not np.isfinite(delta):
            return None
        if kind == "transfer":
            if same[col]:
                giver, taker = (ir[col], ja[col]) if rr[col] + sa[col] <= sr[col] + ra[col] else (jr[col], ia[col])
            else:
                giver, taker = ir[col], ia[col]
            return delta, (kind, int(giver), int(taker), int(cls[col]), int(qty[col]))
        if kind == "take":
            return delta, (kind, -1, int(ia[col]), int(cls[col]), int(qty[col]))
        if kind == "release":
            return delta, (kind, int(ir[col]), -1, int(cls[col]), int(qty[col]))
        c, d = divmod(col, g)
        if kind == "swap":
            back = int(mirror[col])
            if is_[col] == is_[back]:
                i, j = (is_[col], js[back]) if rs[col] + ss[back] <= ss[col] + rs[back] else (js[col], is_[back])
            else:
                i, j = is_[col], is_[back]
            return delta, (kind, int(i), int(j), c, d)
        return delta, (kind, int(is_[col]), -1, c, d)

    def apply(self, move: tuple) -> None:
        kind, i, j, a, b = move
        if kind in ("transfer", "take", "release"):
            if i >= 0:
                self.x[i, a] -= b
            if j >= 0:
                self.x[j, a] += b
        else:  # swap: i trades class a for b, j trades b for a; retype: i trades a for an idle b
            self.x[i, a] -= 1
            self.x[i, b] += 1
            if j >= 0:
                self.x[j, b] -= 1
                self.x[j, a] += 1
        self._update([k for k in (i, j) if k >= 0])


def _two_smallest(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``a`` (a move; jobs along it): the smallest value and its job, the second smallest and
    its job (``inf`` when there is one job).  ``a`` is restored after a temporary mask."""
    rows = np.arange(a.shape[0])
    i0 = a.argmin(axis=1)
    v0 = a[rows, i0].copy()
    a[rows, i0] = np.inf
    i1 = a.argmin(axis=1)
    v1 = a[rows, i1].copy()
    a[rows, i0] = v0
    return v0, i0, v1, i1


def improve(view: HeteroView, x: np.ndarray, comm: str, split: str = "proportional", deadline: float = math.inf,
            max_moves: int | None = None) -> tuple[np.ndarray, dict[str, int | bool]]:
    """Steepest exchange descent from the feasible allocation ``x``; the allocation it ends at and its
    counters (``moves``; ``time_limit_reached`` when the deadline, not a local optimum, ended it)."""
    if past(deadline):  # building the move tables alone costs a JCT per job and move
        return np.array(x, dtype=np.int64, copy=True), {"moves": 0, "time_limit_reached": True}
    search = Exchange(view, x, comm, split)
    limit = MOVES_PER_JOB * view.S if max_moves is None else max_moves
    moves, cut = 0, False
    while moves < limit:
        if past(deadline):
            cut = True
            break
        found = search.best_move()
        # a move must gain more than round-off in the total: otherwise two moves could undo each other
        if found is None or found[0] >= -1e-12 * max(1.0, float(search.t.cur.sum())):
            break
        search.apply(found[1])
        moves += 1
    return search.x, {"moves": moves, "time_limit_reached": cut}


__all__ = ["Exchange", "improve"]
