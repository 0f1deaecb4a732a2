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

import numpy as np

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
