"""The harmony family's answers: the decision a method writes (tasks per server and start
interval per job) and the count matrices read back from one.  Algorithms import this module,
never the Pyomo formulation, to write their answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .view import HarmonyView


def placement_decision(view: HarmonyView, start: np.ndarray, w: np.ndarray, p: np.ndarray) -> dict:
    """The solution format: ``placement`` (job -> tasks per server) and ``start`` (job -> interval)."""
    placement = {}
    for j, job_id in enumerate(view.ids):
        placement[job_id] = {"workers": {view.servers[m]: int(w[j, m]) for m in np.flatnonzero(w[j])},
                             "ps": {view.servers[m]: int(p[j, m]) for m in np.flatnonzero(p[j])}}
    return {"placement": placement, "start": {job_id: int(start[j]) for j, job_id in enumerate(view.ids)}}


def counts_from_decision(view: HarmonyView, decision: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(w, p)`` count matrices (J, M) of a decision (a well-formed one; the checker validates)."""
    index = {name: m for m, name in enumerate(view.servers)}
    w = np.zeros((view.J, view.M), int)
    p = np.zeros((view.J, view.M), int)
    for j, job_id in enumerate(view.ids):
        entry = decision["placement"][job_id]
        for name, n in entry.get("workers", {}).items():
            w[j, index[name]] = n
        for name, n in entry.get("ps", {}).items():
            p[j, index[name]] = n
    return w, p
