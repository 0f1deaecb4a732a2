"""Exponential resource prices over a slotted horizon, shared by the online primal-dual schedulers
(OASiS, spec 000 section 3.2, eqs (22)-(26); the locality family's V-PD prices its own pools with it).

A :class:`PricedPool` is a set of servers over a slotted horizon with the load reserved on every
(server, resource, slot) and its price ``L (U_r / L) ** (load / capacity)``: ``L`` when idle,
``U_r`` when full.  It is independent of any family's job model.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .rounding import floor


class SparseCounts(Protocol):
    """Task counts over ``servers x slots`` that give their nonzero entries (OASiS's ``TaskCounts``)."""

    def coo(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


class PricedPool:
    """Servers ``(n, R)`` over ``T`` slots with reserved ``load`` and the exponential ``price`` (22).

    Prices are fixed while one job is planned and change only when a schedule is reserved
    (pitfall 13); they never fall because reservations only grow.
    """

    def __init__(self, capacity: np.ndarray, slots: int, L: float, U: np.ndarray):
        self.capacity = np.asarray(capacity, dtype=float)
        self.slots = slots
        self.L = float(L)
        self.log_ratio = np.log(np.asarray(U, dtype=float) / self.L)
        n, R = self.capacity.shape
        self.load = np.zeros((n, R, slots))
        self.price = np.full((n, R, slots), self.L)
        # a resource a server lacks can host nothing that needs it; its price is irrelevant, keep it at L
        self._inv_cap = np.divide(1.0, self.capacity, out=np.zeros_like(self.capacity), where=self.capacity > 0)

    def free(self) -> np.ndarray:
        """Residual capacity ``(n, R, T)``."""
        return self.capacity[:, :, None] - self.load

    def reserve(self, counts: np.ndarray, demand: np.ndarray) -> None:
        """Add ``counts[n, T]`` tasks of ``demand[R]`` and re-price the slots touched."""
        slots = np.flatnonzero(counts.any(axis=0))
        if slots.size == 0:
            return
        self.load[:, :, slots] += counts[:, None, slots] * demand[None, :, None]
        share = self.load[:, :, slots] * self._inv_cap[:, :, None]
        self.price[:, :, slots] = self.L * np.exp(self.log_ratio[None, :, None] * share)

    def reserve_counts(self, counts: SparseCounts, demand: np.ndarray) -> None:
        """:meth:`reserve` for sparse counts: only the (server, slot) cells that get tasks change (the
        others' price is a function of their unchanged load), so the cost is the plan's size, not ``n T``."""
        server, slot, count = counts.coo()
        if count.size == 0:
            return
        self.load[server, :, slot] += count[:, None] * demand[None, :]
        share = self.load[server, :, slot] * self._inv_cap[server]
        self.price[server, :, slot] = self.L * np.exp(self.log_ratio[None, :] * share)

    def unit_price(self, demand: np.ndarray, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Price of one task of ``demand`` on every server in slots ``start .. stop - 1``, ``(n, stop - start)``."""
        return np.einsum("nrt,r->nt", self.price[:, :, start:stop], demand)

    def fit(self, demand: np.ndarray, start: int = 0, stop: int | None = None) -> np.ndarray:
        """How many tasks of ``demand`` fit in the residual capacity of every server in slots ``start .. stop - 1``,
        ``(n, stop - start)``: :func:`~.oasis.view.fit_counts` of :meth:`free`, over the demanded resources only."""
        used = np.flatnonzero(demand > 0)
        n = self.capacity.shape[0]
        if used.size == 0:
            return np.full((n, len(range(self.slots)[start:stop])), np.iinfo(np.int32).max, dtype=np.int64)
        room = (self.capacity[:, used[0], None] - self.load[:, used[0], start:stop]) / demand[used[0]]
        for r in used[1:]:
            room = np.minimum(room, (self.capacity[:, r, None] - self.load[:, r, start:stop]) / demand[r])
        return np.maximum(floor(room), 0).astype(np.int64)
