"""How answers read: the text ``mlsched solve`` prints, a notebook's HTML, and the decision table.

Library code (:class:`mlsched_opt.pipeline.Run` prints itself with it), so that a notebook and the
command show the same thing; the CLI only adds what belongs to a command (its clock, the file it wrote).
"""

from __future__ import annotations

import html
from typing import Any

#: a :class:`mlsched_opt.pipeline.Run` (this module sits below the pipeline, which prints with it)
Run = Any


def fmt(value: Any, digits: int = 6) -> str:
    """A number as people read it: '-' for none, integers without '.0', 6 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:
            return "-"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.{digits}g}"
    return str(value)


def ranges(slots: list[int]) -> str:
    """Slots as ranges: [0, 1, 2, 5] -> '0-2, 5'."""
    spans: list[list[int]] = []
    for s in sorted(set(slots)):
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


def counts(per_slot: list[dict[str, Any]]) -> str:
    """Servers and counts over one or more slots: 'v100/0:1 k80:3', a count that varies as '3-4'."""
    seen: dict[str, list[Any]] = {}
    for mapping in per_slot:
        for server, n in (mapping or {}).items():
            seen.setdefault(server, []).append(n)
    parts = []
    for server, ns in seen.items():
        lo, hi = min(ns), max(ns)
        if len(ns) < len(per_slot):  # absent in some slots
            lo = 0
        parts.append(f"{server}:{fmt(lo)}" if lo == hi else f"{server}:{fmt(lo)}-{fmt(hi)}")
    return " ".join(parts) or "-"


def cell(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def decision_table(decision: dict[str, Any] | None, job_ids: list[str], limit: int = 20) -> list[str]:
    """Who runs where and when, one row per job, from any family's decision: a static ``placement``
    (job -> workers/ps per server), a slotted ``schedule`` (job -> [{slot, workers, ps}]), a
    ``start`` per job, and every ``extra`` entry keyed by job (a number per job becomes a column;
    counts without servers, as smd's ``allocation``, fill workers/ps).  Other ``extra`` entries
    become one line each; at most ``limit`` rows, then how many more."""
    if not decision:
        return ["decision: none"]
    placement = decision.get("placement") or {}
    schedule = decision.get("schedule") or {}
    start = decision.get("start") or {}
    extra = decision.get("extra") or {}
    known = set(job_ids)
    per_job = {k: v for k, v in extra.items() if isinstance(v, dict) and v and set(v) <= known}
    count_maps = {k: v for k, v in per_job.items() if all(isinstance(x, dict) and ("workers" in x or "ps" in x) for x in v.values())}
    columns = [k for k, v in per_job.items()
               if k not in count_maps and all(x is None or isinstance(x, (int, float, str)) for x in v.values())]
    listed = [*decision.get("admitted", []), *placement, *schedule, *start, *(j for v in count_maps.values() for j in v)]
    order = {j: i for i, j in enumerate(job_ids)}
    jobs = sorted(dict.fromkeys(listed), key=lambda j: order.get(j, len(order)))
    header = ["job", "workers", "ps"] + (["slots"] if schedule else []) + (["start"] if start else []) + columns
    rows = []
    for job in jobs:
        if job in placement:
            where = placement[job] or {}
            workers, ps = counts([where.get("workers") or {}]), counts([where.get("ps") or {}])
        elif job in schedule:
            steps = schedule[job] or []
            workers = counts([s.get("workers") or {} for s in steps])
            ps = counts([s.get("ps") or {} for s in steps])
        else:
            alloc: dict[str, Any] = next((v[job] for v in count_maps.values() if job in v), {})
            workers, ps = fmt(alloc.get("workers")), fmt(alloc.get("ps"))
        row = [job, workers, ps]
        if schedule:
            row.append(ranges([s["slot"] for s in schedule.get(job) or [] if isinstance(s.get("slot"), int)]) or "-")
        if start:
            row.append(fmt(start.get(job)))
        row += [fmt(per_job[c].get(job)) for c in columns]
        rows.append([cell(str(c)) for c in row])
    lines = []
    if rows:
        shown = rows[:limit]
        widths = [max(len(r[i]) for r in [header, *shown]) for i in range(len(header))]
        lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in shown]
        if len(rows) > limit:
            lines.append(f"... {len(rows) - limit} more jobs (--out FILE writes the whole decision)")
    else:
        lines.append("no job runs")
    if "admitted" in decision:
        left = [j for j in job_ids if j not in set(decision["admitted"])]
        if left:
            lines.append(f"not admitted ({len(left)}): {cell(', '.join(left), 80)}")
    for key, value in extra.items():
        if key in per_job:
            continue
        if isinstance(value, list) and value:
            lines.append(f"{key} ({len(value)}): {cell(', '.join(map(str, value)), 80)}")
        elif isinstance(value, dict):
            scalars = [f"{k} {fmt(v, 4)}" for k, v in value.items() if v is None or isinstance(v, (int, float, str))]
            if scalars:
                lines.append(f"{key}: {cell(', '.join(scalars), 100)}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            lines.append(f"{key}: {fmt(value)}")
    return lines


def gap_text(gap: float | None) -> str:
    return "-" if gap is None else f"{gap:.3g}" if gap else "0"


def run_lines(run: Run, elapsed_s: float | None = None, limit_s: float | None = None, written: str | None = None) -> list[str]:
    """What ``mlsched solve`` prints for ``run`` (``elapsed_s``/``limit_s``: the command's clock;
    ``written``: the solution file it wrote)."""
    rep = run.report
    lines = [f"{run.family.name} / {run.method} on {run.instance.name}: {rep.status}",
             f"  objective {fmt(rep.objective)}   bound {fmt(rep.bound)}   gap {gap_text(rep.gap)}"]
    solver_text = " ".join(str(s) for s in (rep.solver, rep.solver_version) if s)
    translate = f", translate {rep.translate_s:.3f}" if rep.translate_s else ""
    clock = f"   command {elapsed_s:.1f} s of {limit_s:g}" if elapsed_s is not None and limit_s is not None else ""
    lines.append(f"  wall {rep.wall_s:.3f} s (build {rep.build_s:.3f}{translate}, solve {rep.solve_s:.3f})"
                 + (f"   solver {solver_text}" if solver_text else "") + clock)
    if rep.message:
        lines.append(f"  note: {rep.message}")
    if run.check is not None:
        lines.append("  check: ok" if run.check.feasible else f"  check: FAILED ({len(run.check.violations)} violations)")
    if written:
        lines.append(f"  solution written to {written}")
    if run.decision is not None:
        lines.append("")
        lines += [f"  {line}" for line in decision_table(run.decision, [j.id for j in run.instance.jobs])]
    return lines


def run_html(run: Run) -> str:
    """A notebook's view of ``run``: the summary as a small table, then the decision table."""
    rep = run.report
    check = "-" if run.check is None else "ok" if run.check.feasible else f"FAILED ({len(run.check.violations)} violations)"
    ratio = "-" if run.ratio is None else ("<= " if run.ratio_is_bound else "") + fmt(run.ratio)
    cells = [("problem", run.family.name), ("method", run.method), ("instance", run.instance.name), ("status", rep.status),
             ("objective", fmt(rep.objective)), ("bound", fmt(rep.bound)), ("gap", gap_text(rep.gap)), ("ratio", ratio),
             ("check", check), ("wall s", f"{rep.wall_s:.3f}"), ("solver", " ".join(filter(None, (rep.solver, rep.solver_version))))]
    head = "".join(f"<th>{html.escape(k)}</th>" for k, _ in cells)
    row = "".join(f"<td>{html.escape(str(v))}</td>" for _, v in cells)
    note = f"<p><small>{html.escape(rep.message)}</small></p>" if rep.message else ""
    table = ""
    if run.decision is not None:
        table = "<pre>" + html.escape("\n".join(decision_table(run.decision, [j.id for j in run.instance.jobs]))) + "</pre>"
    return f"<table><tr>{head}</tr><tr>{row}</tr></table>{note}{table}"
