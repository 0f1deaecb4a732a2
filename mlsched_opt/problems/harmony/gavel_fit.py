"""The "gavel" world: intensities and sensitivities fitted to Gavel's measured co-location pairs.

Gavel (Narayanan et al., OSDI 2020) measured, on a V100, the throughput of every pair of its
workloads sharing one GPU (``simulation_throughputs.json``, nested ``[self, other]`` entries, read
from ``../shared/data`` at run time).  For the catalog workloads whose 1-GPU V100 throughput comes
from Gavel we fit, by bounded least squares (``scipy.optimize.least_squares``), each type's worker
intensity ``u`` and sensitivity ``s`` on (cpu, mem_bw, pcie) so that the section 3 model's
normalised speed of a 1-worker job beside a 1-worker job of the other type matches Gavel's
``self / alone`` ratio.  We map GPU space sharing onto server co-location, the closest pairwise
measurement public data offers (our design; the fit's residual says how well the model can
express it).

Timings come from the catalog: ``t_comp = 1 / steps_per_s`` (V100, 1 GPU), batch = Gavel's batch,
``t_loc = 2 g / 80 Gbit/s`` (PCIe 3 x16) and ``t_rem = 2 g / 10 Gbit/s`` (10 GbE) from the gradient
size ``g`` (0 when the catalog has none).  The net dimension is not identifiable from one-GPU
pairs: every worker gets net intensity 0.3 and sensitivity 0.25, every PS intensities
(0.1, 0.1, 0, 0.3) [our assumptions].
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.optimize import least_squares

from ...io.catalog import Catalog, load_catalog
from ...io.shared_data import shared_file
from .world import World

GAVEL_FILE = "gavel/simulation_throughputs.json"
INTRA_GBPS = 80.0
INTER_GBPS = 10.0
_KEY = re.compile(r"v100\[\"(\('.*?', 1\))\"\]")
#: a catalog entry for another batch size of a Gavel model (``resnet50-bs128``, written by
#: :mod:`mlsched_opt.traces.gavel`): not a type of the "gavel" world (see :func:`gavel_types`)
_BATCH_VARIANT = re.compile(r"-bs[1-9][0-9]*$")


@dataclass(frozen=True)
class GavelFit:
    world: World
    measured: np.ndarray   # (L, L) Gavel's normalised speed of row type beside column type
    fitted: np.ndarray     # (L, L) the fitted model's
    rmse: float
    max_abs: float
    pairs: int


def gavel_types(catalog: Catalog) -> dict[str, tuple[str, float, int]]:
    """Catalog workload -> (Gavel key, V100 steps/s, batch) for those measured by Gavel on one V100.

    One type per Gavel model, at the batch size of its catalog entry (a3c, cyclegan, lm,
    recommendation, resnet18, resnet50, transformer): the ``-bs<batch>`` entries (the model's
    other batch sizes) are left out.  They would add 19 types of nearly the same models, refit
    every type's intensities, and change the world's type set, which a policy trained with
    ``--set world=gavel`` is bound to (``policy.load`` refuses a world whose types differ).
    """
    out = {}
    for name in catalog:
        if _BATCH_VARIANT.search(name):
            continue
        for row in catalog[name].data.get("throughput", []):
            match = _KEY.search(row.get("source", ""))
            if match and row["gpu_model"] == "V100" and row["gpus"] == 1 and row.get("placement", "consolidated") == "consolidated":
                out[name] = (match.group(1), float(row["steps_per_s"]), int(row["batch_size"]))
    return out


def fitted_world(catalog: Catalog) -> GavelFit:
    return _fit(str(catalog.directory))


@cache
def _fit(directory: str) -> GavelFit:
    catalog = load_catalog(directory)
    v100 = json.loads(shared_file(GAVEL_FILE).read_text())["v100"]
    entries = {n: e for n, e in gavel_types(catalog).items() if e[0] in v100}
    types = tuple(sorted(entries))
    L = len(types)
    measured = np.full((L, L), np.nan)
    for a, ta in enumerate(types):
        row = v100[entries[ta][0]]
        for b, tb in enumerate(types):
            pair = row.get(entries[tb][0])
            if isinstance(pair, list) and row.get("null"):
                measured[a, b] = pair[0] / row["null"]
    t_comp = np.array([1.0 / entries[t][1] for t in types])
    grad = np.array([catalog[t].gradient_mb or 0.0 for t in types])
    t_loc = 2 * grad * 8 / 1000 / INTRA_GBPS
    t_rem = 2 * grad * 8 / 1000 / INTER_GBPS
    have = ~np.isnan(measured)

    def predict(x: np.ndarray) -> np.ndarray:
        u, s = x[: 3 * L].reshape(L, 3), x[3 * L:].reshape(L, 3)
        g = u + np.maximum(0.0, u - 1.0) ** 2            # kappa = 1 as in the default world
        comp = t_comp[:, None] * (1 + s @ g.T)            # (a, b): a's worker pressed by b's
        comm = t_loc[:, None] * (1 + s[:, 2:3] * g[:, 2][None, :])
        return ((t_comp + t_loc)[:, None]) / (comp + comm)

    fit = least_squares(lambda x: (predict(x) - measured)[have], np.full(6 * L, 0.3), bounds=(0.0, 2.0))
    fitted = predict(fit.x)
    u, s = fit.x[: 3 * L].reshape(L, 3), fit.x[3 * L:].reshape(L, 3)
    resid = (fitted - measured)[have]
    world = World(
        name="gavel", types=types, t_comp=t_comp, t_loc=t_loc, t_rem=t_rem,
        batch=np.array([float(entries[t][2]) for t in types]),
        u_worker=np.column_stack([u, np.full(L, 0.3)]), u_ps=np.tile([0.1, 0.1, 0.0, 0.3], (L, 1)),
        s=np.column_stack([s, np.full(L, 0.25)]), kappa=1.0,
        source=f"least squares to Gavel's V100 pairwise throughputs ({GAVEL_FILE}), {int(have.sum())} pairs, "
               f"RMSE {np.sqrt(np.mean(resid ** 2)):.3f} in normalised speed",
    )
    return GavelFit(world, measured, fitted, float(np.sqrt(np.mean(resid ** 2))), float(np.abs(resid).max()), int(have.sum()))
