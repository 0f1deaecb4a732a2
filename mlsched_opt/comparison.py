"""Several methods on one instance, every answer checked, each rated against the proven optimum.

``mlsched compare`` and :func:`mlsched_opt.compare` (the facade) run here; each row's answer comes
from :func:`mlsched_opt.pipeline.solve` (method and check), the table adds the family's bound, disputes
a claimed optimum that a checked answer beats, and rates every answer (>= 1, 1 = optimal; against the
best proven bound, ``<=``, when no optimum is proven)."""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .checking import CheckResult
from .errors import UserError
from .io.instance import Instance
from .pipeline import Run, _flat, family_for, solve, solve_options
from .report import BOUND_STATUSES, SolveOptions, SolveReport, approximation_ratio
from .tolerances import better

if TYPE_CHECKING:  # the registry imports every family: not for `mlsched --help`
    from .problems import Family

log = logging.getLogger(__name__)


@dataclass
class Row:
    """One line of a comparison: a method (with its solver), its report, and the checker's verdict."""

    label: str
    method: str
    report: SolveReport
    check: CheckResult | None
    ratio: float | None = None
    ratio_is_bound: bool = False
    #: the pipeline's whole answer (its decision, its solution file), for a method's row
    run: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label, "method": self.method, **self.report.to_dict(),
            "check": None if self.check is None else self.check.to_dict(),
            "ratio": None if self.ratio is None or not math.isfinite(self.ratio) else self.ratio,
            "ratio_is_bound": self.ratio_is_bound,
        }


def compare_rows(instance: Instance, family: Family, methods: list[tuple[str, str]], options: Mapping[str, Any],
            solve_options: SolveOptions, lp_bound: bool = True,
            progress: Callable[[str], None] | None = None) -> list[Row]:
    """Run each ``(method, solver)`` pair; add the LP bound row; fill in ratios to the proven optimum.

    A method (or the bound) that raises is a row with status ``error`` and the message; the other
    rows and their ratios stand (:func:`exit_code` makes such a run exit 1).

    When no exact row proves optimality, ratios are taken against the best proven bound and
    flagged ``ratio_is_bound`` (the true ratio is at most that).
    """
    rows: list[Row] = []
    opts = family.resolve_options(instance, options)
    sense = family.sense(opts)
    for method, solver in methods:
        label = f"{method} ({solver})" if family.method(method).kind == "exact" else method
        if progress:
            progress(f"running {label} ...")
        answer = functools.partial(_answer, instance, family, method, solver, opts, solve_options)
        rows.append(_guarded(label, method, solver, sense, answer))
    _dispute_beaten_optima(rows, sense, solve_options.gap)
    if lp_bound and family.bounded:
        if progress:
            progress(f"computing the bound ({family.bound_label}) ...")
        rows.append(_guarded(family.bound_label, "lp", solve_options.solver, sense,
                             lambda: (family.lp_bound(instance, opts, solve_options), None, None)))
    _fill_ratios(rows, sense, solve_options.gap)
    return rows


def _answer(instance: Instance, family: Family, method: str, solver: str, opts: Mapping[str, Any],
            solve_options: SolveOptions) -> tuple[SolveReport, CheckResult | None, Any]:
    """One row's answer through the library's pipeline (method and check; the table adds the bound)."""
    so = solve_options
    run = solve(instance, method, problem=family.name, solver=solver, time_limit=so.time_limit, gap=so.gap, threads=so.threads,
                seed=so.seed, certify=so.certify, bound=False, options=opts)
    return run.report, run.check, run


def _guarded(label: str, method: str, solver: str, sense: str,
             run: Callable[[], tuple[SolveReport, CheckResult | None, Any]]) -> Row:
    """The row of ``run``, or, when it raises, a row with status ``error`` and the message: one method
    that fails (a solver that refuses the model, a bug) costs its own row, never the finished ones."""
    started = time.perf_counter()
    answer = None
    try:
        report, check, answer = run()
    except Exception as exc:  # any failure of one method is its row's status, not the command's end
        message = exc.message() if isinstance(exc, UserError) else ": ".join(filter(None, [type(exc).__name__, str(exc)]))
        log.debug("%s failed", label, exc_info=True)
        report = SolveReport(status="error", objective=None, bound=None, sense=sense, solver=solver, solver_version="",
                             solve_s=time.perf_counter() - started, message=message)
        check = None
    return Row(label, method, report, check, run=answer)


def needs_attention(row: Row) -> bool:
    """A row that failed: an error, a decision the checker rejects, a disputed optimum."""
    return row.report.status in ("error", "disputed") or (row.check is not None and not row.check.feasible)


def exit_code(rows: list[Row]) -> int:
    """``mlsched compare``'s exit code: 1 when a row :func:`needs_attention`, else 0 (2 is for errors of
    the command line, before any row runs)."""
    return 1 if any(needs_attention(r) for r in rows) else 0


def _dispute_beaten_optima(rows: list[Row], sense: str, gap: float) -> None:
    """A claimed optimum that a checked answer beats is wrong: mark it ``disputed``, never a reference.

    Values are the checker's (a claim is compared with what the decisions are worth, not with
    what the methods say they are worth)."""
    checked = [(r, r.check.objective) for r in rows if r.check is not None and r.check.feasible and r.check.objective is not None]
    for row in rows:
        rep = row.report
        if rep.status != "optimal" or rep.objective is None:
            continue
        if row.check is not None and not row.check.feasible:
            note = "disputed: the claimed optimum's own decision fails the checker"
            row.report = dataclasses.replace(rep, status="disputed", bound=None, message="; ".join(filter(None, [rep.message, note])))
            continue
        claimed = row.check.objective if row.check is not None and row.check.objective is not None else rep.objective
        beaten = [(r, v) for r, v in checked if r is not row
                  and better(v, claimed, sense, gap)]
        if beaten:
            r, v = max(beaten, key=lambda rv: rv[1]) if sense == "max" else min(beaten, key=lambda rv: rv[1])
            note = f"disputed: the claimed optimum {claimed:.10g} is beaten by {r.label}, whose checked value is {v:.10g}"
            row.report = dataclasses.replace(rep, status="disputed", bound=None,
                                             message="; ".join(filter(None, [rep.message, note])))


def _fill_ratios(rows: list[Row], sense: str, gap: float = 0.0) -> None:
    """Ratios to the proven optimum, else to the best proven bound (the rule of ``mlsched bench``:
    a solve stopped with no incumbent still proved its bound; a bound that a checked answer beats
    is wrong, so its row is ``disputed`` and it is no reference)."""
    checked = [r.check.objective for r in rows if r.check is not None and r.check.feasible and r.check.objective is not None]
    for row in rows:
        bound = row.report.bound
        if bound is None or row.report.status == "disputed" or (row.report.status == "optimal" and row.method != "lp"):
            continue  # a claimed optimum is judged by _dispute_beaten_optima
        beating = [v for v in checked if better(v, bound, sense, gap)]
        if beating:
            best = max(beating) if sense == "max" else min(beating)
            note = f"disputed: the bound {bound:.10g} is beaten by a checked answer worth {best:.10g}"
            row.report = dataclasses.replace(row.report, status="disputed", bound=None,
                                             message="; ".join(filter(None, [row.report.message, note])))
    proven = [r.report.objective for r in rows if r.method != "lp" and r.report.status == "optimal" and r.report.objective is not None]
    bounds = [r.report.bound for r in rows if r.report.bound is not None and r.report.status in BOUND_STATUSES]
    if proven:
        reference, is_bound = proven[0], False
    elif bounds:
        reference, is_bound = (max(bounds) if sense == "min" else min(bounds)), True
    else:
        return
    for row in rows:
        if row.method != "lp" and row.report.objective is not None:
            row.ratio = approximation_ratio(row.report.objective, reference, sense)
            row.ratio_is_bound = is_bound


def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.{digits}g}"


def format_table(rows: list[Row]) -> str:
    """A plain-text table: method, status, objective, bound, gap, wall time, ratio, check, and the
    solvers that certified an exact answer."""
    header = ["method", "status", "objective", "bound", "gap", "wall s", "ratio", "check", "certified by"]
    lines = [header]
    for r in rows:
        rep = r.report
        check = "-" if r.check is None else ("ok" if r.check.feasible else f"{len(r.check.violations)} violation(s)")
        ratio = _fmt(r.ratio) if r.ratio is not None else "-"
        if r.ratio_is_bound and r.ratio is not None:
            ratio = "<=" + ratio
        # the referees' names without versions (the JSON output has them in full)
        referees = ", ".join(dict.fromkeys(part.split()[0] + (" (no presolve)" if "presolve off" in part else "")
                                           for part in rep.certified_by)) or "-"
        lines.append([r.label, rep.status, _fmt(rep.objective, 8), _fmt(rep.bound, 8),
                      _fmt(rep.gap, 3), f"{rep.wall_s:.3f}", ratio, check, referees if r.method != "lp" else "-"])
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    out = ["  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    out += [f"error in {r.label}: {r.report.message}" for r in rows if r.report.status == "error"]
    return "\n".join(out)





@dataclass
class Comparison:
    """Several methods on one instance, each answer checked, with ratios to the proven optimum (or,
    when none is proven, to the best proven bound: ``ratio_is_bound``), as ``mlsched compare`` prints.

    ``rows`` are the runs in the order asked, then the family's bound (``method == "lp"``); a run
    whose method or solver failed is a row with status ``error`` and the message, never a lost table.
    """

    instance: Instance
    family: Family
    options: Mapping[str, Any]
    rows: list[Any]
    gap: float = 1e-6

    @property
    def runs(self) -> list[Run]:
        """Each method's whole answer (its decision, its check), in the order of the rows."""
        return [r.run for r in self.rows if r.run is not None]

    def run(self, label: str) -> Run:
        """The answer of the row labelled ``label`` (``"ffd"``, ``"exact (highs)"``)."""
        for r in self.rows:
            if r.label == label and r.run is not None:
                return r.run
        raise KeyError(f"no run labelled {label!r}; the rows are {', '.join(r.label for r in self.rows)}")

    @property
    def disputed(self) -> list[Any]:
        return [r for r in self.rows if r.report.status == "disputed"]

    @property
    def failed(self) -> list[Any]:
        """Rows that need attention: a rejected decision, a dispute, an error."""
        return [r for r in self.rows if needs_attention(r)]

    def to_dict(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.rows]

    def to_frame(self):
        """A pandas DataFrame, one row per run (and the bound's row)."""
        import pandas as pd

        return pd.DataFrame([_flat(r.to_dict()) for r in self.rows])

    def __repr__(self) -> str:
        return f"Comparison({self.family.name} on {self.instance.name!r}: {', '.join(f'{r.label} {r.report.status}' for r in self.rows)})"

    def header(self) -> str:
        from .render import fmt

        opts = ", ".join(f"{k}={fmt(v)}" for k, v in self.options.items())
        return (f"{self.family.name} on {self.instance.name} ({len(self.instance.jobs)} jobs, {len(self.instance.servers)} servers; "
                f"{opts}; sense {self.family.sense(self.options)}; gap {self.gap:g})")

    def __str__(self) -> str:
        return "\n".join([self.header(), format_table(self.rows),
                          "ratio: how far from the proven optimum (1 = optimal); '<=' when only a bound is proven"])

    def _repr_html_(self) -> str:
        import html

        return f"<p>{html.escape(self.header())}</p>" + self.to_frame().to_html(index=False)


def compare(instance: Instance | str | Path, methods: list[str] | tuple[str, ...] | None = None, *, problem: str | None = None,
            solvers: tuple[str, ...] | list[str] = ("highs", "cpsat"), solver: str = "highs", time_limit: float = 60.0,
            gap: float = 1e-6, threads: int | None = None, seed: int = 0, certify: bool = True, bound: bool = True,
            options: Mapping[str, Any] | None = None, catalog: str | None = None, progress: Any = None) -> Comparison:
    """Run ``methods`` on ``instance`` (default: every method of the family but oracles and those whose
    extra is not installed), the exact method once per solver in ``solvers``; check every answer,
    dispute a claimed optimum that a checked answer beats, add the family's bound, and rate every
    answer.  ``time_limit`` is per run; ``progress(text)`` hears which run starts."""
    from .facade import check_solve_arguments, need
    from .io import load_instance
    from .pipeline import _instance_argument

    check_solve_arguments(problem=problem, solver=solver, time_limit=time_limit, gap=gap, threads=threads, seed=seed,
                          certify=certify, bound=bound, options=options, catalog=catalog)
    need("methods", methods, list | tuple, "a list of method names, or None", optional=True)
    need("solvers", solvers, list | tuple, "a list of solver names")
    for key, names_given in (("methods", methods or ()), ("solvers", solvers)):
        for item in names_given:
            need(key, item, str, "names (str)")
    if progress is not None and not callable(progress):
        need("progress", progress, type(None), "a callable taking a line of text, or None")
    instance = _instance_argument(instance)
    inst = load_instance(instance, catalog=catalog) if isinstance(instance, (str, Path)) else instance
    fam = family_for(inst, problem)
    names = list(methods) if methods else [m.name for m in fam.methods.values() if m.kind != "oracle" and m.available]
    pairs: list[tuple[str, str]] = []
    for name in names:
        m = fam.method(name.strip())
        pairs += [(m.name, s) for s in solvers] if m.kind == "exact" else [(m.name, solver)]
    for _, s in pairs:
        solve_options(s, time_limit, gap, threads, seed)  # every solver named is known and installed, before any run
    opts = fam.resolve_options(inst, dict(options or {}))
    rows = compare_rows(inst, fam, pairs, opts, solve_options(solver, time_limit, gap, threads, seed, certify), lp_bound=bound,
                        progress=progress)
    for row in rows:  # each run as the table judged it: its dispute, its ratio to the comparison's reference
        if row.run is not None:
            row.run.solution = dataclasses.replace(row.run.solution, report=row.report)
            row.run.ratio, row.run.ratio_is_bound = row.ratio, row.ratio_is_bound
            row.run.label = row.label
    return Comparison(inst, fam, opts, rows, gap)
