"""Per-iteration time of a layered DNN under three overlap schemes, and the eta coefficients.

One worker, one iteration, the clock starting when backpropagation (BP) starts.  Layers are
indexed ``1..N`` from the input side (arrays index them ``0..N-1``); BP runs ``N -> 1`` and the
next forward pass (FP) ``1 -> N``.  ``b[j]``, ``f[j]`` are BP/FP times and ``r[j]`` the time to
push layer ``j``'s gradients (= to pull its parameters).

* :func:`sequential`: every push and pull after the whole BP, then FP.
* :func:`wait_free`: Lemma 1 of Yu et al. (INFOCOM 2021): FIFO push and pull channels, a
  layer's push starting when its BP and the previous push are done.
* :func:`priority`: Lemma 2 (priority with slicing, P3), literally.  Spec 002 P6 shows it is an
  upper bound, not an exact schedule.
* :func:`priority_sim`: an exact preemptive simulation of the same scheme (our design): one
  push channel served lowest layer first with preemption; each layer's pull trails its push by
  one slice, so a layer's communication ends ``phi`` after its last push.

Each returns a :class:`Timing` whose ``eta = (eta1, eta2, eta3)`` follow the critical-path
rule of spec 002 section 1.3(d) [PROP]: walk the path back from the end through the ``max``
choices, taking the communication branch on ties; ``H_f`` and ``H_b`` are the FP and BP on the
path, ``H_r = t - H_f - H_b``, and ``eta = (H_f / sum f, H_b / sum b, H_r / (2 sum r))``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SCHEMES = ("sequential", "wait-free", "priority", "priority-sim")


@dataclass(frozen=True)
class Timing:
    """Iteration time ``t``, the critical-path shares ``(H_f, H_b, H_r)`` and ``eta``.

    ``detail`` holds the scheme's intermediate times (``kappa``, ``s``, ``e``, ``tau``), indexed
    from layer 1.
    """

    t: float
    critical: tuple[float, float, float]
    eta: tuple[float, float, float]
    detail: dict[str, np.ndarray] = field(default_factory=dict)


def _arrays(f, b, r) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    f, b, r = (np.asarray(x, dtype=float) for x in (f, b, r))
    if not (f.shape == b.shape == r.shape) or f.ndim != 1 or f.size == 0:
        raise ValueError("f, b and r need one entry per layer, the same number each")
    return f, b, r


def _timing(t: float, h_f: float, h_b: float, f, b, r, **detail) -> Timing:
    h_r = t - h_f - h_b
    sf, sb, sr = f.sum(), b.sum(), 2.0 * r.sum()
    # a phase that takes no time keeps factor 1: it contributes nothing either way
    eta = tuple(float(h / s) if s > 0 else 1.0 for h, s in ((h_f, sf), (h_b, sb), (h_r, sr)))
    return Timing(float(t), (float(h_f), float(h_b), float(h_r)), eta, detail)  # type: ignore[arg-type]


def sequential(f, b, r) -> Timing:
    """``t = sum b + 2 sum r + sum f``; every phase is on the path, ``eta = (1, 1, 1)``."""
    f, b, r = _arrays(f, b, r)
    return _timing(b.sum() + 2 * r.sum() + f.sum(), f.sum(), b.sum(), f, b, r)


def wait_free(f, b, r) -> Timing:
    """Lemma 1 (wait-free backpropagation).

    ``kappa_N = b_N``, ``kappa_j = max(sum_{k>=j} b_k, kappa_{j+1} + r_{j+1})``;
    ``s_N = b_N + r_N``, ``s_j = max(kappa_j + r_j, s_{j+1} + r_{j+1})``; ``t = s_1 + r_1 + sum f``.
    """
    f, b, r = _arrays(f, b, r)
    n = len(b)
    bp_done = np.cumsum(b[::-1])[::-1]  # sum_{k>=j} b_k
    kappa, s = np.empty(n), np.empty(n)
    kappa_bp = np.zeros(n, dtype=bool)  # kappa_j came from the BP branch
    s_push = np.zeros(n, dtype=bool)  # s_j came from kappa_j + r_j
    kappa[-1], kappa_bp[-1] = b[-1], True
    s[-1], s_push[-1] = b[-1] + r[-1], True
    for j in range(n - 2, -1, -1):
        chained = kappa[j + 1] + r[j + 1]
        kappa_bp[j] = bp_done[j] > chained  # ties: communication branch
        kappa[j] = max(bp_done[j], chained)
        pulled = s[j + 1] + r[j + 1]
        s_push[j] = kappa[j] + r[j] > pulled
        s[j] = max(kappa[j] + r[j], pulled)
    # walk back: pull chain s_1 <- s_2 ... until a push start kappa_j, then the push chain down
    # to the layer whose BP completion set it
    j = 0
    while not s_push[j]:
        j += 1
    while not kappa_bp[j]:
        j += 1
    t = s[0] + r[0] + f.sum()
    return _timing(t, f.sum(), bp_done[j], f, b, r, kappa=kappa, s=s)


def _forward(f: np.ndarray, e: np.ndarray) -> tuple[float, int, np.ndarray]:
    """FP start times ``tau_j = max(tau_{j-1} + f_{j-1}, e_j)``; return ``t``, the layer where
    the path enters communication (ties go to communication) and ``tau``."""
    tau = np.empty(len(f))
    tau[0] = e[0]
    entry = 0
    for j in range(1, len(f)):
        if e[j] >= tau[j - 1] + f[j - 1]:
            tau[j], entry = e[j], j
        else:
            tau[j] = tau[j - 1] + f[j - 1]
    return tau[-1] + f[-1], entry, tau


def priority(f, b, r, phi: float = 0.0) -> Timing:
    """Lemma 2 (priority-based with slicing), literally.

    ``Delta_j = sum_{k=2}^{j} r_k - sum_{k=1}^{j-1} b_k``; ``e_1 = sum b + r_1 + phi``;
    ``e_j = max_{k<j} e_k + Delta_j`` if ``Delta_j > 0`` else 0 (never binding);
    ``tau_1 = e_1``, ``tau_j = max(tau_{j-1} + f_{j-1}, e_j)``, ``t = tau_N + f_N``.
    Every ``e_j`` contains all of BP (through ``e_1``), so ``H_b = sum b``.
    """
    f, b, r = _arrays(f, b, r)
    n = len(b)
    e = np.zeros(n)
    e[0] = b.sum() + r[0] + phi
    running = e[0]
    for j in range(1, n):
        delta = r[1:j + 1].sum() - b[:j].sum()
        if delta > 0:
            e[j] = running + delta
        running = max(running, e[j])
    t, entry, tau = _forward(f, e)
    return _timing(t, f[entry:].sum(), b.sum(), f, b, r, e=e, tau=tau)


def priority_sim(f, b, r, phi: float = 0.0) -> Timing:
    """Exact preemptive schedule of the priority scheme (see the module docstring).

    Layer ``j``'s gradients are ready when BP reaches it, at ``sum_{k>=j} b_k``.  The push
    channel always serves the lowest ready layer, preempting others; ``e_j`` is its push end
    plus ``phi``.  On the critical path, ``H_b`` is the BP up to the start of the channel's busy
    period in which the entering layer finished.
    """
    f, b, r = _arrays(f, b, r)
    n = len(b)
    ready = np.cumsum(b[::-1])[::-1]
    left = r.astype(float).copy()
    e = np.zeros(n)
    busy_from = np.zeros(n)  # BP time at which the busy period containing e_j began
    now, period_start = 0.0, 0.0
    arrivals = sorted(range(n), key=lambda j: ready[j])  # N first
    waiting: list[int] = []
    nxt = 0
    done = 0
    while done < n:
        if not waiting:
            now = max(now, ready[arrivals[nxt]])
            period_start = now
        while nxt < n and ready[arrivals[nxt]] <= now + 1e-15:
            waiting.append(arrivals[nxt])
            nxt += 1
        j = min(waiting)
        horizon = ready[arrivals[nxt]] if nxt < n else np.inf
        if now + left[j] <= horizon:
            now += left[j]
            left[j] = 0.0
            waiting.remove(j)
            e[j] = now + phi
            busy_from[j] = period_start
            done += 1
        else:
            left[j] -= horizon - now
            now = horizon
    t, entry, tau = _forward(f, e)
    return _timing(t, f[entry:].sum(), busy_from[entry], f, b, r, e=e, tau=tau)


def iteration_timing(scheme: str, f, b, r, phi: float = 0.0) -> Timing:
    """Dispatch on the scheme name (one of :data:`SCHEMES`)."""
    if scheme == "sequential":
        return sequential(f, b, r)
    if scheme == "wait-free":
        return wait_free(f, b, r)
    if scheme == "priority":
        return priority(f, b, r, phi)
    if scheme == "priority-sim":
        return priority_sim(f, b, r, phi)
    raise ValueError(f"unknown overlap scheme {scheme!r}; choose from {', '.join(SCHEMES)}")
