"""Hetero instances: spec 003 section 4's protocol, on Gavel's measured throughputs.

``--servers M`` gives ``M`` servers of ``gpus_per_server`` GPUs (4 by default), each of a type
drawn uniformly from ``types`` (K80, P100, V100), all at 10 Gb/s.  Jobs draw a workload from
the five Gavel workloads of the spec's table (their throughputs come from the catalog, which
cites Gavel's ``simulation_throughputs.json``), with ``Pi`` = 256 (ResNets, Transformer), 160
(LM) or 8192 (Recommendation) and ``T ~ U[10^3, 2 10^4]`` iterations.  The spec's per-job
``D / r`` follows from the catalog's gradient sizes at 10 Gb/s.

``--set cluster=alibaba`` takes the servers instead from Alibaba's production GPU node list
(:mod:`.alibaba`): ``M`` nodes drawn without replacement from the nodes whose GPU model has a
measured or a cited mapped throughput.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UserError
from ...io.catalog import Catalog, load_catalog
from ..base import GenerateSpec, Option
from .alibaba import alibaba_servers, mapped_throughputs

#: workload -> global batch Pi (spec 003 section 4).
WORKLOADS = {"resnet18": 256, "resnet50": 256, "transformer": 256, "lm": 160, "recommendation": 8192}
BANDWIDTH_GBPS = 10.0

#: Largest --jobs / --servers / GPUs per server the generator writes (a file, not a stress test).
MAX_JOBS = 100_000
MAX_SERVERS = 100_000
MAX_GPUS_PER_SERVER = 1024
MAX_ITERATIONS = 10**9

OPTIONS = (
    Option("cluster", "gavel", ("gavel", "alibaba"), "servers of drawn K80/P100/V100 types, or nodes of Alibaba's production cluster"),
    Option("types", "K80,P100,V100", None, "GPU models drawn per server (cluster=gavel)"),
    Option("gpus_per_server", 4, None, "GPUs per server (cluster=gavel)", minimum=1, maximum=MAX_GPUS_PER_SERVER),
    Option("iterations_min", 1000, None, "fewest iterations T", minimum=1, maximum=MAX_ITERATIONS),
    Option("iterations_max", 20000, None, "most iterations T", minimum=1, maximum=MAX_ITERATIONS),
)


def generate(spec: GenerateSpec, catalog: Catalog | None = None) -> dict[str, Any]:
    opts = {o.name: spec.options.get(o.name, o.default) for o in OPTIONS}
    catalog = catalog or load_catalog()
    rng = np.random.default_rng(spec.seed)
    if not 1 <= opts["iterations_min"] <= opts["iterations_max"]:
        raise UserError("need 1 <= iterations_min <= iterations_max", field="--set iterations_min")
    if spec.servers < 1 or spec.jobs < 1:
        raise UserError("need at least one server and one job", field="--servers")
    if spec.servers > MAX_SERVERS or spec.jobs > MAX_JOBS:
        raise UserError(f"the hetero generator writes at most {MAX_SERVERS:,} servers and {MAX_JOBS:,} jobs",
                        field="--servers" if spec.servers > MAX_SERVERS else "--jobs")
    notes = ""
    if opts["cluster"] == "alibaba":
        servers, notes = alibaba_servers(spec.servers, rng)
    else:
        types = [t.strip() for t in str(opts["types"]).split(",") if t.strip()]
        if not types or opts["gpus_per_server"] < 1:
            raise UserError("types needs at least one GPU model and gpus_per_server >= 1", field="--set types")
        servers = [{"name": f"s{h}-{t}", "gpu_model": t,
                    "capacity": {"gpu": int(opts["gpus_per_server"]), "bandwidth_gbps": BANDWIDTH_GBPS}}
                   for h, t in enumerate(types[int(i)] for i in rng.integers(len(types), size=spec.servers))]
    gpu_models = sorted({s["gpu_model"] for s in servers})
    jobs = []
    names = sorted(WORKLOADS)
    for n in range(spec.jobs):
        model = names[int(rng.integers(len(names)))]
        job: dict[str, Any] = {
            "id": f"j{n}", "model": model, "architecture": "allreduce",
            "global_batch_size": WORKLOADS[model],
            "work": {"iterations": int(rng.integers(opts["iterations_min"], opts["iterations_max"] + 1))},
            "workers": {"min": 1, "max": int(sum(s["capacity"]["gpu"] for s in servers))},
            "demand": {"worker": {"gpu": 1}},
        }
        extra = mapped_throughputs(catalog[model], gpu_models)
        if extra:
            job["data_parallel"] = {"samples_per_s": extra}
        jobs.append(job)
    gpus = sum(s["capacity"]["gpu"] for s in servers)
    return {
        "format": "mlsched-instance/1",
        "name": f"hetero-{spec.jobs}j-{gpus}g-seed{spec.seed}" + ("-alibaba" if opts["cluster"] == "alibaba" else ""),
        "description": f"heterogeneous placement, {gpus} GPUs ({', '.join(gpu_models)}), {spec.jobs} jobs",
        "source": f"{_command(spec, opts)}; protocol of spec papers/003_hetero_sampling.md section 4; throughputs: "
                  f"Gavel simulation_throughputs.json via the catalog{notes}",
        "problem": "hetero",
        "cluster": {"inter_server_bandwidth_gbps": BANDWIDTH_GBPS, "servers": servers},
        "jobs": jobs,
    }


def _command(spec: GenerateSpec, opts: dict[str, Any]) -> str:
    sets = "".join(f" --set {o.name}={opts[o.name]}" for o in OPTIONS if opts[o.name] != o.default)
    return f"mlsched generate --problem hetero --jobs {spec.jobs} --servers {spec.servers} --seed {spec.seed}{sets}"
