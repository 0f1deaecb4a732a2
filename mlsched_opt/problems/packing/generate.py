"""Random packing instances: a heterogeneous cluster and fixed-size jobs from the catalog."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UserError
from ...io.catalog import Catalog
from ..base import GenerateSpec
from ..generation import catalog_models_with_demand, random_cluster, random_job

#: Sizes refused up front (our design): the loops below run once per job and server.
MAX_JOBS, MAX_SERVERS, MAX_SLOTS = 100_000, 10_000, 1_000_000


def generate(spec: GenerateSpec, catalog: Catalog) -> dict[str, Any]:
    """An instance of ``spec.jobs`` jobs on ``spec.servers`` servers; the same seed gives the same document."""
    for name, value, top in (("--jobs", spec.jobs, MAX_JOBS), ("--servers", spec.servers, MAX_SERVERS),
                             ("--slots", spec.slots or 1, MAX_SLOTS)):
        if not 1 <= value <= top:
            raise UserError(f"the packing generator takes 1 <= {name.lstrip('-')} <= {top}, got {value}", field=name)
    rng = np.random.default_rng(spec.seed)
    models = catalog_models_with_demand(catalog)
    doc: dict[str, Any] = {
        "format": "mlsched-instance/1",
        "name": f"packing-j{spec.jobs}-s{spec.servers}-seed{spec.seed}",
        "source": f"mlsched generate --problem packing --jobs {spec.jobs} --servers {spec.servers} --seed {spec.seed}",
        "problem": "packing",
        "cluster": {"servers": random_cluster(rng, spec.servers)},
        "jobs": [],
    }
    if spec.slots:
        doc["time"] = {"slots": spec.slots, "slot_s": 3600}
    for i in range(spec.jobs):
        job = random_job(rng, i, catalog, models)
        if spec.slots:
            job["arrival_slot"] = int(rng.integers(spec.slots))
        doc["jobs"].append(job)
    return doc
