"""The smd family's answers: what a method's allocations are worth, and the decision it writes.

Algorithms import this module, never the Pyomo formulation, to write their answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...io.solution import plain
from .inner import Allocation, best_integer
from .view import SmdView


def exact_inner(view: SmdView) -> list[Allocation]:
    return [best_integer(job) for job in view.jobs]


def values(view: SmdView, allocations: list[Allocation]) -> np.ndarray:
    """``u_i = weight_i mu_i(tau_i)`` per job (0 when it has no feasible allocation)."""
    weight = np.array([view.instance.jobs[j.index].weight for j in view.jobs])
    return np.array([w * float(j.utility(a.tau)) if a.feasible else 0.0
                     for w, j, a in zip(weight, view.jobs, allocations)])


def decision(admitted: list[str], allocations: Mapping[str, Allocation], stats: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The decision as plain JSON values (str, int, float, bool, list, dict): numpy scalars from
    the grid, the rounding draws or the knapsack never reach a solution file."""
    out: dict[str, Any] = {
        "admitted": list(admitted),
        "extra": {"allocation": {j: {"workers": allocations[j].w, "ps": allocations[j].p} for j in admitted}},
    }
    if stats:  # counts only: timings go to the report, so the same seed gives the same decision
        out["extra"]["stats"] = {k: v for k, v in stats.items() if not k.endswith("_s")}
    return plain(out)
