"""The packing family's answers: the decision a solution vector of the array model writes, the
vector a decision gives back (a start for HiGHS), and what a decision is worth.

Algorithms and searches import this module, never the Pyomo formulation or the HiGHS model, to
write and score their answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .view import PackingView

if TYPE_CHECKING:
    from .arrays import ArrayModel

#: the task kinds, as the model names them and as a decision's placement names them
TASKS = (("worker", "workers"), ("ps", "ps"))


def objective_value(view: PackingView, decision: Mapping[str, Any], objective: str) -> float:
    """The objective of a decision the checker accepts: servers used, or the admitted weight."""
    if objective == "servers":
        return float(len({s for p in decision["placement"].values() for part in p.values() for s in part}))
    weight = {job.id: job.weight for job in view.jobs}
    return float(sum(weight[j] for j in decision["admitted"]))


def decision_from_x(view: PackingView, model: ArrayModel, x: np.ndarray) -> dict[str, Any]:
    """The decision of a solution vector (the same as :func:`.formulation.decision_from_model` reads)."""
    admit = x[:len(model.jobs)] > 0.5
    ids = [view.jobs[j].id for j in model.jobs]
    names = [view.instance.servers[s].name for s in model.servers]
    admitted = [ids[i] for i in np.flatnonzero(admit)]
    placement: dict[str, dict[str, dict[str, int]]] = {j: {"workers": {}, "ps": {}} for j in admitted}
    for task, key in TASKS:
        pj, ps = model.pairs[task]
        n = np.rint(x[model.first[task]:model.first[task] + len(pj)]).astype(np.int64)
        for k in np.flatnonzero((n > 0) & admit[pj]):
            placement[ids[pj[k]]][key][names[ps[k]]] = int(n[k])
    return {"admitted": admitted, "placement": placement}


def x_from_decision(view: PackingView, model: ArrayModel, decision: Mapping[str, Any]) -> np.ndarray | None:
    """The solution vector of a decision on the model's jobs and servers (a start for :func:`.arrays.solve`);
    ``None`` if it places a task on a pair the model has no column for."""
    x = np.zeros(model.num_col)
    job_pos = {view.jobs[j].id: i for i, j in enumerate(model.jobs)}
    server_pos = {view.instance.servers[s].name: i for i, s in enumerate(model.servers)}
    nS = len(model.servers)
    for j in decision.get("admitted", ()):
        if j in job_pos:
            x[job_pos[j]] = 1.0
    used = np.zeros(nS, dtype=bool)
    for task, key in TASKS:
        pj, ps = model.pairs[task]
        keys = pj * nS + ps  # ascending: the pairs are job-major
        for j, parts in decision.get("placement", {}).items():
            for s, n in parts.get(key, {}).items():
                if j not in job_pos or s not in server_pos:
                    return None
                k = job_pos[j] * nS + server_pos[s]
                at = int(np.searchsorted(keys, k))
                if at >= len(keys) or keys[at] != k:
                    return None
                x[model.first[task] + at] = n
                used[server_pos[s]] = True
    if "used" in model.first:
        x[model.first["used"]:] = used
    return x
