"""What a sweep leaves in its folder: results.csv (and .parquet), summary.csv, plots, report.md.

``results.csv`` is written row by row while the sweep runs (:class:`ResultsWriter`: every row is
flushed and synced, so a crash loses no finished task) and rewritten in the suite's order once
every row is in, with the columns only the whole instance decides:

``reference``, ``reference_kind``
    what the ratio is measured against, per instance and problem options: ``optimum`` (the
    first reference solver's proven optimum that is not disputed), ``bound`` (the LP relaxation,
    or, when no exact solve proved its optimum, the tightest bound they proved), ``oracle`` (an
    oracle method's complete enumeration), ``best`` (the best checked answer of the instance
    among the suite's methods: a ratio to the best known, never certified), or ``none``.
``ratio``
    :func:`~mlsched_opt.report.approximation_ratio`: >= 1, 1 = optimal, for both senses;
    only for answers the checker accepts.  Against an optimum, a value within the reference's
    gap counts as optimal (ratio 1); against a bound, the ratio is an upper bound on the true one.
``certified``
    the ratio's reference is an optimum confirmed by an independent solver (``certified_by``),
    or a proven bound.  An oracle's optimum is its own word: not certified.
``status`` ``disputed``
    as in ``mlsched compare``: a claimed optimum whose decision fails the checker, or that a
    checked answer of any row beats, is no reference (and neither is a bound that a checked
    answer beats).

Per-family plots: :data:`PLOT_HOOKS` maps a problem to hooks (``"package.module:function"`` or
callables) ``function(rows, out_dir, plt) -> list of written paths``, called after the
standard plots (so are the suite's ``[report] plots``).  A hook that fails is reported in
report.md, not raised.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..report import BOUND_STATUSES
from ..tolerances import proven_bound
from .tasks import COLUMNS, TYPES

#: problem -> plot hooks (see the module docstring)
PLOT_HOOKS: dict[str, list[str | Callable[..., Any]]] = {}

SUMMARY_COLUMNS = ("problem", "label", "method", "solver", "setting", "sense", "n", "n_ratio", "median_ratio", "p90_ratio",
                   "worst_ratio", "certified", "mean_objective", "median_wall_s", "p90_wall_s", "max_wall_s", "errors", "check_failed",
                   "disputed", "no_solution")


def register_plot(problem: str, hook: str | Callable[..., Any]) -> None:
    """Add a plot hook for ``problem`` (see the module docstring)."""
    PLOT_HOOKS.setdefault(problem, []).append(hook)


# --- results.csv ---------------------------------------------------------------------------------

def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    return str(value).replace("\r", " ").replace("\n", " ")


def _parse(column: str, text: str) -> Any:
    if text == "":
        return None if TYPES[column] is not str else ""
    kind = TYPES[column]
    if kind is bool:
        return text == "true"
    return kind(text)


def format_row(row: Mapping[str, Any]) -> list[str]:
    return [_cell(row.get(c)) for c in COLUMNS]


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a results.csv, typed; a row cut short by a crash is dropped."""
    path = Path(path)
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            return []
        if tuple(header) != COLUMNS:
            raise UserError("has other columns than this version writes; start a new --out folder", str(path), "header")
        rows = []
        for cells in reader:
            if len(cells) != len(COLUMNS):
                continue  # the line being written when a sweep was killed
            try:
                row = {c: _parse(c, v) for c, v in zip(COLUMNS, cells)}
            except ValueError:
                continue
            if row["key"]:
                rows.append(row)
    return rows


def write_results(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Replace ``path`` with ``rows`` (atomically)."""
    from ..io.files import write_atomic

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(format_row(row))
    write_atomic(path, buf.getvalue())


class ResultsWriter:
    """Appends rows to results.csv as they arrive, each flushed and synced to disk."""

    def __init__(self, path: str | Path, keep: Iterable[Mapping[str, Any]] = ()):
        self.path = Path(path)
        write_results(self.path, keep)  # a clean file: the rows kept, no half-written line
        self.fh = self.path.open("a", newline="")
        self.writer = csv.writer(self.fh, lineterminator="\n")

    def write(self, row: Mapping[str, Any]) -> None:
        self.writer.writerow(format_row(row))
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


# --- references and ratios -----------------------------------------------------------------------

def _unit(row: Mapping[str, Any]) -> tuple[str, str]:
    return row["instance"], row["problem_options"] or "{}"


def fill_references(rows: list[dict[str, Any]], reference: str, gap: float) -> None:
    """Fill ``reference``, ``reference_kind``, ``ratio`` and ``certified`` of every row, and mark
    disputed optima (in place).  ``reference``: the suite's (exact, lp, none or an oracle)."""
    units: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        units.setdefault(_unit(row), []).append(row)
    for unit_rows in units.values():
        _fill_unit(unit_rows, reference, gap)


def _checked(row: Mapping[str, Any]) -> bool:
    return row["check"] == "ok" and row["objective"] is not None


def _note(row: dict[str, Any], text: str) -> None:
    if text not in (row["message"] or ""):
        row["message"] = "; ".join(filter(None, [row["message"], text]))


def _dispute_optima(rows: list[dict[str, Any]], sense: str, gap: float) -> None:
    """compare's rule, on rows: a claimed optimum that fails the checker or that a checked answer beats."""
    from ..checking import CheckResult
    from ..checking.core import Violation
    from ..comparison import Row, _dispute_beaten_optima
    from ..solvers import SolveReport

    answers = [r for r in rows if r["method"] != "lp" and r["status"] != "error"]
    built = []
    for r in answers:
        check = None
        if r["check"] == "ok":
            check = CheckResult(objective=r["objective"])
        elif r["check"] == "failed":
            check = CheckResult(violations=[Violation("checker", r["label"], "rejected")])
        report = SolveReport(status=r["status"], objective=r["objective"], bound=r["bound"], sense=sense,
                             solver=r["solver"] or "", solver_version=r["solver_version"] or "", message=r["message"] or "")
        built.append(Row(r["label"], r["method"], report, check))
    _dispute_beaten_optima(built, sense, gap)
    for r, b in zip(answers, built):
        if b.report.status == "disputed" and r["status"] != "disputed":
            r.update(status="disputed", bound=None, message=b.report.message)


def _fill_unit(rows: list[dict[str, Any]], reference: str, gap: float) -> None:
    from ..report import approximation_ratio
    from ..solvers.certify import agree, better

    sense = next((r["sense"] for r in rows if r["sense"]), None)
    for r in rows:
        r.update(reference=None, reference_kind="none", ratio=None, certified=False)
    if sense is None:
        return
    _dispute_optima(rows, sense, gap)  # also with no reference: an exact method among [[methods]] can be beaten
    if reference == "none":
        return
    refs = [r for r in rows if r["role"] == "reference"]
    value, kind, certified, source = None, "none", False, None
    if reference == "best":
        answers = [r for r in rows if _checked(r) and r["status"] != "disputed" and r["method"] != "lp"]
        if answers:
            pick = max if sense == "max" else min
            source = pick(answers, key=lambda r: r["objective"])
            value, kind = source["objective"], "best"
    elif reference == "lp":
        lp = [r for r in refs if r["status"] == "optimal" and r["objective"] is not None]
        if lp:
            value, kind, certified, source = lp[0]["objective"], "bound", True, lp[0]
    else:
        proven = [r for r in refs if r["status"] == "optimal" and _checked(r)]
        if proven:
            source = proven[0]
            value = source["objective"]
            kind = "optimum" if reference == "exact" else "oracle"
            certified = bool(source["certified_by"])  # confirmed by an independent solver
        elif reference == "exact":
            # a solver's infinity (1e20) is no bound (rows written before the solvers filtered it)
            # a solve stopped with no incumbent still proved its bound
            bounds = [r["bound"] for r in refs if proven_bound(r["bound"]) is not None and r["status"] in BOUND_STATUSES]
            if bounds:
                value, kind, certified = (max(bounds) if sense == "min" else min(bounds)), "bound", True
    if value is not None and kind == "bound":
        beating = [r for r in rows if _checked(r) and better(r["objective"], value, sense, gap)]
        if beating:
            best = max(beating, key=lambda r: r["objective"]) if sense == "max" else min(beating, key=lambda r: r["objective"])
            note = (f"disputed: the bound {value:.10g} is beaten by {best['label']}, whose checked value is "
                    f"{best['objective']:.10g}")
            for r in ([source] if source is not None else [r for r in refs if r["bound"] == value]):
                r["status"] = "disputed" if r["status"] == "optimal" else r["status"]
                _note(r, note)
            value, kind, certified = None, "none", False
    if value is None:
        return
    for r in rows:
        r.update(reference=value, reference_kind=kind)
        if not _checked(r) or r["method"] == "lp":
            continue
        ratio = approximation_ratio(r["objective"], value, sense)
        if ratio < 1 or (kind in ("optimum", "oracle", "best") and agree(r["objective"], value, gap)):
            ratio = 1.0  # within the tolerance of the reference (anything better was disputed above)
        r.update(ratio=ratio, certified=certified)


# --- summary -------------------------------------------------------------------------------------

def _pct(values: list[float], p: float) -> float | None:
    """The nearest-rank percentile (no interpolation: defined with infinite ratios too)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


#: the setting of the summary lines over every setting (``all``, or ``all (max)`` and ``all (min)``)
OVERALL = "all"


def is_overall(line: Mapping[str, Any]) -> bool:
    """Whether a summary line is over every setting (of one objective sense)."""
    return line["setting"] == OVERALL or line["setting"].startswith(f"{OVERALL} (")


def row_senses(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each row's objective sense: its own, else its instance's (a row that failed before it knew its
    sense), else the suite's when it has one; ``""`` when none can be told."""
    by_unit: dict[tuple[str, str], str] = {}
    for r in rows:
        if r["sense"]:
            by_unit.setdefault(_unit(r), r["sense"])
    senses = set(by_unit.values())
    only = next(iter(senses)) if len(senses) == 1 else ""
    return [r["sense"] or by_unit.get(_unit(r)) or only for r in rows]


def summarize(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One line per (method label, setting), then per method over every setting (setting ``all``).

    Objectives of opposite senses are never pooled: where a suite has both (packing's ``weight``,
    max, and ``servers``, min), the lines over every setting are one per sense, ``all (max)`` and
    ``all (min)``, and so are those of a setting that holds both."""
    senses = row_senses(rows)
    held: dict[str | None, set[str]] = {}  # a setting (None: every setting) -> the senses of its rows
    for row, sense in zip(rows, senses):
        for setting in (row["setting"] or "", None):
            held.setdefault(setting, set()).add(sense)
    if len(held) == 2:  # one setting: the lines over every setting would repeat it
        del held[None]
    groups: dict[tuple[str, str | None, str], list[Mapping[str, Any]]] = {}
    for row, sense in zip(rows, senses):
        for setting in (row["setting"] or "", None):
            if setting in held:
                groups.setdefault((row["label"], setting, sense), []).append(row)
    labels = list(dict.fromkeys(r["label"] for r in rows))
    order = {s: i for i, s in enumerate(dict.fromkeys([*(r["setting"] or "" for r in rows), None]))}
    out = []
    for (label, setting, sense), group in sorted(groups.items(), key=lambda kv: (labels.index(kv[0][0]), order[kv[0][1]], kv[0][2])):
        base = OVERALL if setting is None else setting
        out.append(_summary_line(label, f"{base} ({sense or '?'})" if len(held[setting]) > 1 else base, sense, group))
    return out


def _summary_line(label: str, setting: str, sense: str, group: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ratios = [r["ratio"] for r in group if r["ratio"] is not None]
    times = [r["wall_s"] for r in group if r["wall_s"] is not None and r["status"] != "error"]
    # the mean of the checked answers only: a failed or missing answer has no value to average
    values = [r["objective"] for r in group if _checked(r) and r["method"] != "lp"]
    first = group[0]
    return {
        "problem": first["problem"], "label": label, "method": first["method"], "solver": first["solver"],
        "setting": setting, "sense": sense, "n": len(group), "n_ratio": len(ratios), "median_ratio": _median(ratios),
        "p90_ratio": _pct(ratios, 90), "worst_ratio": max(ratios) if ratios else None,
        "certified": sum(1 for r in group if r["ratio"] is not None and r["certified"]),
        "mean_objective": statistics.fmean(values) if values else None,
        "median_wall_s": _median(times), "p90_wall_s": _pct(times, 90), "max_wall_s": max(times) if times else None,
        "errors": sum(r["status"] == "error" for r in group), "check_failed": sum(r["check"] == "failed" for r in group),
        "disputed": sum(r["status"] == "disputed" for r in group),
        "no_solution": sum(r["status"] not in ("optimal", "feasible", "disputed", "error") for r in group
                           if r["method"] != "lp"),
    }


def write_summary(path: Path, summary: Sequence[Mapping[str, Any]]) -> None:
    from ..io.files import write_atomic

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SUMMARY_COLUMNS)
    for line in summary:
        writer.writerow([_cell(line[c]) for c in SUMMARY_COLUMNS])
    write_atomic(path, buf.getvalue())


# --- parquet -------------------------------------------------------------------------------------

def write_parquet(path: Path, rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Write results.parquet; the reason when it cannot (pyarrow missing)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return "pyarrow is not installed (pip install -e '.[bench]'): no results.parquet; results.csv has every row"
    types = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
    table = pa.table({c: pa.array([r.get(c) for r in rows], type=types[TYPES[c]]) for c in COLUMNS})
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return None


# --- plots ---------------------------------------------------------------------------------------

def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _answer_rows(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in rows if r["method"] != "lp"]


def _by_size(rows: Sequence[Mapping[str, Any]], value: Callable[[Mapping[str, Any]], float]) -> dict[int, list[float]]:
    """The values of the rows per number of jobs, sizes ascending."""
    groups: dict[int, list[float]] = {}
    for r in rows:
        groups.setdefault(r["jobs"], []).append(value(r))
    return dict(sorted(groups.items()))


def _save(fig, legend_ax, path: Path, plt) -> Path:
    try:
        legend_ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
    return path


def plot_ratios(rows: Sequence[Mapping[str, Any]], out: Path, plt) -> Path | None:
    """Ratio per method: box plot (infinite ratios counted under the box) and ECDF."""
    rows = [r for r in _answer_rows(rows) if r["ratio"] is not None]
    if not rows:
        return None
    labels = list(dict.fromkeys(r["label"] for r in rows))
    fig, (box, ecdf) = plt.subplots(1, 2, figsize=(12, 4.5))
    data, ticks = [], []
    for label in labels:
        values = [r["ratio"] for r in rows if r["label"] == label]
        finite = [v for v in values if math.isfinite(v)]
        data.append(finite or [math.nan])
        inf = len(values) - len(finite)
        ticks.append(label + (f"\n({inf} inf)" if inf else ""))
        xs = sorted(finite)
        if xs:
            ecdf.step(xs, [(i + 1) / len(values) for i in range(len(xs))], where="post", label=label)
    box.boxplot(data, showfliers=True)
    box.set_xticks(range(1, len(labels) + 1), ticks, rotation=30, ha="right", fontsize=8)
    box.set_ylabel("ratio (>= 1, 1 = optimal)")
    box.set_title("approximation ratio per method")
    ecdf.set_xlabel("ratio")
    ecdf.set_ylabel("share of instances with ratio <= x")
    ecdf.set_title("ECDF of the ratio")
    return _save(fig, ecdf, out / "ratio.png", plt)


def plot_times(rows: Sequence[Mapping[str, Any]], out: Path, plt) -> Path | None:
    """Wall time against size (jobs), log-log: the median over seeds and its min-max band."""
    rows = [r for r in rows if r["status"] != "error" and r["wall_s"] is not None and r["jobs"]]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k, label in enumerate(dict.fromkeys(r["label"] for r in rows)):
        by_size = _by_size([r for r in rows if r["label"] == label], lambda r: max(r["wall_s"], 1e-6))
        sizes = list(by_size)
        med = [statistics.median(by_size[s]) for s in sizes]
        ax.plot(sizes, med, marker="o", color=f"C{k % 10}", label=label)
        ax.fill_between(sizes, [min(by_size[s]) for s in sizes], [max(by_size[s]) for s in sizes], color=f"C{k % 10}", alpha=0.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    sizes = sorted({r["jobs"] for r in rows})
    if len(sizes) <= 12:
        ax.set_xticks(sizes, [str(s) for s in sizes])
        ax.minorticks_off()
    ax.set_xlabel("jobs")
    ax.set_ylabel("wall time, s (median; band: min-max over instances)")
    ax.set_title("time against size")
    return _save(fig, ax, out / "time.png", plt)


def _sense_text(sense: str) -> str:
    return {"max": "max: higher is better", "min": "min: lower is better"}.get(sense, "sense unknown")


def plot_objectives(rows: Sequence[Mapping[str, Any]], out: Path, plt) -> Path | None:
    """Mean checked objective against size (jobs), one line per method: the comparison between
    methods that needs no reference (the paper figures at scales beyond exact reach).  One panel
    per objective sense, each labelled with its own (a suite may hold both: packing's ``weight``
    and ``servers``); objectives of opposite senses never share a panel."""
    answers = _answer_rows(rows)
    senses = dict(zip(map(id, answers), row_senses(answers)))
    rows = [r for r in answers if _checked(r) and r["jobs"]]
    if not rows:
        return None
    panels = sorted({senses[id(r)] for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 4.5), squeeze=False)
    for ax, sense in zip(axes[0], panels):
        _objective_panel(ax, [r for r in rows if senses[id(r)] == sense], sense)
        ax.legend(fontsize=7)
    return _save(fig, axes[0][-1], out / "objective.png", plt)


def _objective_panel(ax, rows: Sequence[Mapping[str, Any]], sense: str) -> None:
    # objectives of different problem options (e.g. packing's weight and servers) never share a line
    several = len({r["problem_options"] for r in rows}) > 1
    line = (lambda r: f"{r['label']} {r['problem_options']}") if several else (lambda r: r["label"])
    for k, name in enumerate(dict.fromkeys(map(line, rows))):
        by_size = _by_size([r for r in rows if line(r) == name], lambda r: r["objective"])
        sizes = list(by_size)
        ax.plot(sizes, [statistics.fmean(by_size[s]) for s in sizes], marker="o", color=f"C{k % 10}", label=name)
    sizes = sorted({r["jobs"] for r in rows})
    if len(sizes) <= 12:
        ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("jobs")
    ax.set_ylabel(f"objective, mean over instances ({_sense_text(sense)})")
    ax.set_title(f"objective against size ({sense or 'sense unknown'})")


def plot_quality_time(summary: Sequence[Mapping[str, Any]], out: Path, plt) -> Path | None:
    """Median ratio against median wall time, one point per (method, setting)."""
    points = [s for s in summary if not is_overall(s) and s["median_ratio"] is not None
              and s["median_wall_s"] is not None and math.isfinite(s["median_ratio"])]
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k, label in enumerate(dict.fromkeys(p["label"] for p in points)):
        mine = [p for p in points if p["label"] == label]
        ax.scatter([max(p["median_wall_s"], 1e-6) for p in mine], [p["median_ratio"] for p in mine],
                   color=f"C{k % 10}", label=label, s=25)
    ax.set_xscale("log")
    ax.set_xlabel("median wall time, s")
    ax.set_ylabel("median ratio (1 = optimal)")
    ax.set_title("quality against time (one point per method and setting)")
    return _save(fig, ax, out / "quality_time.png", plt)


def _resolve(hook: str | Callable[..., Any]) -> Callable[..., Any]:
    if callable(hook):
        return hook
    from importlib import import_module

    module, _, name = hook.partition(":")
    return getattr(import_module(module), name)


def make_plots(rows: Sequence[Mapping[str, Any]], summary: Sequence[Mapping[str, Any]], out: Path, problem: str,
               extra_hooks: Iterable[str] = ()) -> tuple[list[Path], list[str]]:
    """Every plot: the written paths, and notes (matplotlib missing, a hook that failed)."""
    plt = _pyplot()
    if plt is None:
        return [], ["matplotlib is not installed (pip install -e '.[bench]'): no plots"]
    paths: list[Path] = []
    notes: list[str] = []
    for make in (lambda: plot_ratios(rows, out, plt), lambda: plot_times(rows, out, plt),
                 lambda: plot_objectives(rows, out, plt), lambda: plot_quality_time(summary, out, plt)):
        path = make()
        if path is not None:
            paths.append(path)
    for hook in [*PLOT_HOOKS.get(problem, []), *extra_hooks]:
        try:
            written = _resolve(hook)(rows, out, plt) or []
            paths += [Path(p) for p in written]
        except Exception as exc:  # noqa: BLE001 -- a plot must not cost the results
            notes.append(f"plot hook {hook!r} failed: {type(exc).__name__}: {exc}")
        finally:
            plt.close("all")
    return paths, notes


# --- report.md -----------------------------------------------------------------------------------

def _num(x: Any, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if math.isinf(x):
            return "inf"
        return f"{x:.{digits}g}"
    return str(x)


def _table(header: list[str], lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in lines]
    return "\n".join(out)


_REFERENCE_TEXT = {
    "exact": "the proven optimum of the exact formulation (first solver of `reference.solvers` whose optimum is "
             "not disputed); where no solve proved one, the tightest bound they proved",
    "lp": "the LP relaxation of the exact formulation: a bound, so every ratio is an upper bound on the true ratio",
    "best": "the best answer the checker accepts among this suite's methods, per instance: a ratio to the best "
            "known, never certified (for sizes beyond exact reach)",
    "none": "none: this suite measures time only, no ratio",
}


def write_report(out: Path, suite, rows: Sequence[Mapping[str, Any]], summary: Sequence[Mapping[str, Any]],
                 plots: list[Path], notes: list[str], meta: Mapping[str, Any]) -> Path:
    from ..io.files import write_atomic

    ref = _REFERENCE_TEXT.get(suite.reference,
                              f"the oracle method `{suite.reference}` (exhaustive enumeration; its own word, not certified)")
    instances = len({_unit(r) for r in rows})
    lines = [f"# Benchmark `{suite.name}`", ""]
    if suite.description:
        lines += [suite.description.strip(), ""]
    lines += [
        f"- problem: `{suite.problem}`; suite file: `{suite.file}`",
        f"- instances: {instances} (instance x problem options); rows: {len(rows)}",
        f"- reference: {ref}",
        f"- run: executor `{meta.get('executor')}`"
        + (f", {meta['workers']} workers" if meta.get("workers") else "")
        + (f", scheduler `{meta['scheduler']}`" if meta.get("scheduler") else "")
        + f"; {meta.get('ran', 0)} tasks run, {meta.get('skipped', 0)} taken from an earlier run (--resume); "
        f"sweep wall time {meta.get('elapsed_s', 0.0):.1f} s; mlsched-opt {meta.get('version', '')}; "
        f"finished {time.strftime('%Y-%m-%d %H:%M:%S')}",
        "- one solver thread per task; the same suite gives the same objectives whatever the executor",
        "",
        "Ratio: >= 1, 1 = optimal, for both senses (`approximation_ratio`); `certified`: the reference is an "
        "optimum confirmed by an independent solver, or a proven bound (then the ratio bounds the true one).",
        "",
        "## Per method (all settings)" if any(map(is_overall, summary)) else "## Per method",
        "",
    ]
    overall = [s for s in summary if is_overall(s)] or summary
    # a suite with objectives of both senses: each line says its own (its mean objective is of that sense only)
    both = len({s["sense"] for s in summary}) > 1
    head = ["method", *(["sense"] if both else []), "n", "ratios", "median", "p90", "worst", "certified", "mean objective",
            "median s", "max s", "errors", "check failed", "disputed"]

    def table_lines(items):
        return [[s["label"], *([_sense_text(s["sense"])] if both else []), str(s["n"]), str(s["n_ratio"]), _num(s["median_ratio"]),
                 _num(s["p90_ratio"]), _num(s["worst_ratio"]), str(s["certified"]), _num(s["mean_objective"], 6),
                 _num(s["median_wall_s"], 3), _num(s["max_wall_s"], 3),
                 str(s["errors"]), str(s["check_failed"]), str(s["disputed"])] for s in items]

    lines += [_table(head, table_lines(overall)), ""]
    settings = list(dict.fromkeys(s["setting"] for s in summary if not is_overall(s)))
    if len(settings) > 1:
        lines += ["## Per setting", ""]
        for setting in settings:
            lines += [f"### {setting or '(no setting)'}", "",
                      _table(head, table_lines([s for s in summary if s["setting"] == setting])), ""]
    lines += ["## Plots", ""]
    captions = {"ratio.png": "Ratio per method: box plot and ECDF.",
                "time.png": "Wall time against the number of jobs (log-log): median over instances, band from min to max.",
                "objective.png": "Mean objective of the checked answers against the number of jobs, per method "
                                 "(one panel per objective sense).",
                "quality_time.png": "Median ratio against median wall time, one point per method and setting."}
    for path in plots:
        lines += [f"![{path.stem}]({path.name})", "", captions.get(path.name, f"`{path.name}`"), ""]
    if not plots:
        lines += ["No plots.", ""]
    attention = [r for r in rows if r["status"] in ("error", "disputed") or r["check"] == "failed"]
    if attention:
        lines += ["## Needs attention", ""]
        lines += [_table(["instance", "method", "status", "check", "message"],
                         [[r["instance"], r["label"], r["status"], r["check"], (r["message"] or "")[:300]]
                          for r in attention[:50]]), ""]
        if len(attention) > 50:
            lines += [f"... and {len(attention) - 50} more rows (see results.csv)", ""]
    lines += ["## Files", "", "- `results.csv`: one row per (instance, method, solver); `summary.csv`: per method and setting"]
    if (out / "results.parquet").exists():
        lines.append("- `results.parquet`: the same rows, typed")
    if (out / "errors.log").exists():
        lines.append("- `errors.log`: tracebacks of the tasks that raised")
    lines += ["- `suite.json`: the suite as run (after --set)", ""]
    for note in notes:
        lines += [f"Note: {note}", ""]
    path = out / "report.md"
    write_atomic(path, "\n".join(lines) + "\n")
    return path


def finish(out: Path, suite, rows: list[dict[str, Any]], meta: Mapping[str, Any]) -> dict[str, Any]:
    """Fill references and ratios, rewrite results.csv, and write everything else; returns
    ``{"summary": [...], "plots": [...], "notes": [...]}``."""
    gap = suite.reference_methods[0].gap if suite.reference_methods else 1e-6
    fill_references(rows, suite.reference, gap)
    write_results(out / "results.csv", rows)
    notes: list[str] = []
    parquet = out / "results.parquet"
    reason = write_parquet(parquet, rows)
    if reason:
        notes.append(reason)
        parquet.unlink(missing_ok=True)
    summary = summarize(rows)
    write_summary(out / "summary.csv", summary)
    plots, plot_notes = make_plots(rows, summary, out, suite.problem, suite.plots)
    notes += plot_notes
    notes += list(meta.get("notes", ()))
    write_report(out, suite, rows, summary, plots, notes, meta)
    return {"summary": summary, "plots": plots, "notes": notes}


def dump_suite(out: Path, suite) -> None:
    """``suite.json``: the suite document as run (after ``--set``)."""
    from ..io.files import write_atomic

    write_atomic(out / "suite.json", json.dumps(suite.document, indent=2, sort_keys=True, default=str) + "\n")
