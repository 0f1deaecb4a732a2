"""Shared rules that turn a trace window into a family's quantities (stated once, used by every family).

* :func:`arrival_slots`: real submit times onto the family's slots, ``arrivals=real`` (slot =
  floor(t / slot_s); the horizon grows to hold the last arrival unless ``--slots`` fixes it, which
  must then hold it) or ``arrivals=fit`` (the window's span is rescaled onto the horizon, which
  keeps its bursts; the default where a family's horizon is short).
* :func:`assign_models`: the trace's own model where it names one (Pollux), else a seeded uniform
  draw among the family's eligible catalog workloads (sorted by name), one draw per job in
  window order, from the generator ``spec.rng("models")``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from ..errors import UserError
from ..io.catalog import Catalog, Workload
from ..io.files import limits
from ..problems.base import Option
from .model import ImportSpec, Trace
from .table import TraceError

ARRIVALS = Option("arrivals", "real", ("real", "fit"),
                  "real: slot = submit time / slot_s; fit: the window's span rescaled onto the --slots horizon")


def arrival_slots(trace: Trace, slot_s: float, slots: int | None, how: str, default_slots: int) -> tuple[np.ndarray, int, str]:
    """``(arrival slot per job, horizon T, a sentence for the instance's source)``."""
    t = trace.submit_s
    if how == "fit":
        T = slots or default_slots
        span = float(t.max()) if len(t) else 0.0
        at = np.zeros(len(t), dtype=int) if span <= 0 else np.minimum((t / span * T).astype(int), T - 1)
        return at, T, f"arrivals: the window's {span:,.0f} s rescaled onto {T} slots (arrivals=fit)"
    most = limits()["slots"]
    if len(t) and t.max() / slot_s >= most:
        k = int(np.argmax(t))
        row = trace.jobs[k].row
        raise TraceError(f"this job arrives {t[k]:,.0f} s after the window's first, in slot {t[k] / slot_s:,.0f} of "
                         f"{slot_s:g} s, beyond the slots limit {most:,}; take another window (--jobs, --set start), "
                         f"a longer --set slot_s, or --set arrivals=fit", trace.file,
                         f"row {row}" + (f", column {trace.time_column}" if trace.time_column else ""))
    at = np.floor(t / slot_s).astype(int)
    last = int(at.max()) if len(at) else 0
    if slots is not None and last >= slots:
        raise TraceError(f"the window's arrivals span {last + 1} slots of {slot_s:g} s, more than --slots {slots}; "
                         f"raise --slots, raise --set slot_s, or use --set arrivals=fit", None, "--slots")
    T = slots if slots is not None else max(default_slots, last + 1)
    return at, T, f"arrivals: real submit times, slot = floor(t / {slot_s:g} s)"


def assign_models(trace: Trace, eligible: Sequence[str], spec: ImportSpec, redraw: bool = False,
                  what: str = "workloads", keep: Collection[str] | None = None) -> tuple[list[str], str]:
    """A catalog workload per job, and the rule as a sentence for the instance's source.

    Draws come from ``eligible``.  A job keeps the model its trace names when it is in ``keep``
    (default ``eligible``); one the family cannot use is an error, or with ``redraw`` gets the
    seeded draw like a job whose trace names none (and the sentence counts the replacements)."""
    pool = sorted(eligible)
    if not pool:
        raise TraceError("no catalog workload has the figures this family needs", None, "--catalog")
    known = set(pool if keep is None else keep)
    draws = spec.rng("models").integers(len(pool), size=len(trace.jobs))
    out: list[str] = []
    lost: dict[str, int] = {}
    for job, d in zip(trace.jobs, draws):
        if job.model is not None and job.model in known:
            out.append(job.model)
            continue
        if job.model is not None:
            if not redraw:
                raise TraceError(f"model {job.model!r} has no catalog workload with the figures this family needs "
                                 f"(usable: {', '.join(pool)})", trace.file, f"row {job.row}")
            lost[job.model] = lost.get(job.model, 0) + 1
        out.append(pool[int(d)])
    named = sum(j.model is not None for j in trace.jobs)
    drawn = f"drawn uniformly with seed {spec.seed} from {', '.join(pool)}"
    if named == 0:
        return out, f"{what}: {drawn} (the trace names none)"
    if not lost and named == len(trace.jobs):
        return out, f"{what}: the trace's models"
    replaced = "; ".join(f"{m} x{c}" for m, c in sorted(lost.items()))
    return out, (f"{what}: the trace's models where this family can use them"
                 + (f" (not: {replaced})" if replaced else "") + f", else {drawn}")


# ---- catalog figures of a trace's jobs (the oasis and smd importers) ---------------------------------

#: The paper's range of e (MB) for a model whose catalog entry has no size.
GRADIENT_RANGE = (30.0, 575.0)


def one_gpu_row(workload: Workload) -> dict[str, Any] | None:
    """The one-GPU consolidated throughput row a workload is timed with: V100 when measured, else the first."""
    rows = [r for r in workload.data.get("throughput", [])
            if r["gpus"] == 1 and r.get("placement", "consolidated") == "consolidated"]
    return next((r for r in rows if r["gpu_model"] == "V100"), rows[0] if rows else None)


def usable_models(catalog: Catalog, need_size: bool) -> list[str]:
    """Catalog workloads with a typical demand and a one-GPU throughput (and a size when ``need_size``)."""
    return [n for n in catalog if "demand" in catalog[n].data and one_gpu_row(catalog[n]) is not None
            and (not need_size or "size" in catalog[n].data)]


def gpu_seconds(trace: Trace) -> tuple[np.ndarray, str]:
    """Each job's GPU time in seconds (the trace's GPUs x duration, or the Pollux class rule), and the rule used."""
    out = np.zeros(len(trace.jobs))
    for i, job in enumerate(trace.jobs):
        if job.duration_s is not None:
            out[i] = max(job.gpus, 1) * job.duration_s
        else:
            raise UserError(f"job {job.id} has no duration and no rule gives it one", trace.file, f"row {job.row}")
    return out, "work: the trace's GPU time (GPUs x duration)"


def gradient_sizes(models: list[str], catalog: Catalog, spec: ImportSpec) -> tuple[np.ndarray, list[str]]:
    """fp32 gradient MB per job: the catalog's, else a seeded draw from the paper's [30, 575] MB."""
    draws = spec.rng("gradient").uniform(*GRADIENT_RANGE, size=len(models))
    sizes = [catalog[m].gradient_mb for m in models]
    out = np.array([round(float(d), 1) if s is None else s for s, d in zip(sizes, draws)], dtype=float)
    missing = sorted({m for m, s in zip(models, sizes) if s is None})
    notes = [f"gradients: the catalog's fp32 size; the catalog has no size for {', '.join(missing)}, so theirs is "
             f"drawn from the paper's [{GRADIENT_RANGE[0]:g}, {GRADIENT_RANGE[1]:g}] MB"] if missing else []
    return out, notes


def workload_figures(models: list[str], catalog: Catalog) -> dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """model -> (one-GPU throughput row, worker demand, PS demand) from the catalog."""
    out = {}
    for name in sorted(set(models)):
        data = catalog[name].data
        demand = data["demand"]
        row = one_gpu_row(catalog[name])
        assert row is not None, name  # models are drawn from usable_models, which have a row
        out[name] = (row, dict(demand["worker"]), dict(demand.get("ps", {"cpu": 4, "memory_gb": 16})))
    return out
