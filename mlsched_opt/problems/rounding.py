"""Rounding helpers shared by the families: randomized rounding of LP solutions (SMD, locality) and
integer counts that forgive float noise (OASiS, and the prices of :mod:`.pricing`)."""

from __future__ import annotations

import math
from typing import overload

import numpy as np

from ..io.schema import MAX_NUMBER
from ..tolerances import FIT_TOL

#: Integer rounding guard for ceil(d rho), ceil(y b/B), floor(c/w) (OASiS spec pitfall 11).
EPS = FIT_TOL
#: Largest count :func:`floor` and :func:`ceil` return.  A capacity of 2**53 over a demand of 1e-9
#: is 9e24 tasks, beyond int64: such a count means "no limit" (every use takes a min with a job's
#: own cap), so it is clipped here instead of wrapping to a negative integer in the cast.
MAX_COUNT = float(MAX_NUMBER)


@overload
def ceil(x: float) -> int: ...
@overload
def ceil(x: np.ndarray) -> np.ndarray: ...
def ceil(x: float | np.ndarray) -> int | np.ndarray:
    """Ceiling that forgives float noise: 4.000000001 -> 4."""
    out = np.ceil(np.clip(np.asarray(x, dtype=float), -MAX_COUNT, MAX_COUNT) - EPS).astype(int)
    return int(out) if out.ndim == 0 else out


@overload
def floor(x: float) -> int: ...
@overload
def floor(x: np.ndarray) -> np.ndarray: ...
def floor(x: float | np.ndarray) -> int | np.ndarray:
    out = np.floor(np.clip(np.asarray(x, dtype=float), -MAX_COUNT, MAX_COUNT) + EPS).astype(int)
    return int(out) if out.ndim == 0 else out


def chernoff_scale(width: float, rows: int, delta: float) -> float:
    """``M_delta = 1 + c/(2W) - sqrt((c/(2W))^2 + c/W)`` with ``c = 3 ln(2r/delta)``: the scale-down
    factor of SMD's Lemma 3 (spec 002 section 2.4, spec 001 section 3.2(a)).  It is the root in
    (0, 1] of ``exp(-(1/M - 1)^2 M W / 3) = delta / (2r)``, so that after scaling by ``M`` each of
    the ``r`` packing rows (width ``W = min b_i / B_ij``) is violated with probability at most
    ``delta / (2r)``."""
    c = 3.0 * math.log(2.0 * rows / delta)
    return 1.0 + c / (2 * width) - math.sqrt((c / (2 * width)) ** 2 + c / width)


def independent_round(x: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Round each coordinate of ``scale * x`` up with probability its fractional part, on its own."""
    xs = scale * np.asarray(x, dtype=float)
    low = np.floor(xs + 1e-12)
    return (low + (rng.random(xs.shape) < xs - low)).astype(np.int64)
