"""Rounding helpers shared by the families that round LP solutions (SMD, locality)."""

from __future__ import annotations

import math

import numpy as np


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
