"""What every solve takes (:class:`SolveOptions`) and what it returns (:class:`SolveReport`).

A core module (it imports only :mod:`.errors` and :mod:`.tolerances`): :mod:`.io` reads and writes reports in solution
files and :mod:`.solvers` produces them, so the types sit below both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from .errors import OptionError
from .tolerances import SAME_VALUE_TOL


class Status(StrEnum):
    """The outcome of a solve.  A :class:`~enum.StrEnum`: a status equals, formats and serializes as
    its value (``"optimal"``), so JSON output and comparisons with strings read as before."""

    #: proved optimal within the gap, and (for exact methods) confirmed by an independent solver
    OPTIMAL = "optimal"
    #: a decision the method stands by, with no proof of optimality (an algorithm, or a search stopped early)
    FEASIBLE = "feasible"
    #: proved to have no feasible decision (and confirmed)
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    #: the time limit came before any decision (a bound may still be proven)
    TIME_LIMIT_NO_SOLUTION = "time-limit-no-solution"
    #: a heuristic that found no feasible decision, which proves nothing
    FAILED = "failed"
    #: the method or its solver broke down; the message says how
    ERROR = "error"
    #: an exact answer whose proof an independent route refuted without the dispute being resolved:
    #: the decision is the best checked one, and nothing is claimed about the optimum
    DISPUTED = "disputed"


#: Every status's value, in :class:`Status`'s order.
STATUSES = tuple(s.value for s in Status)
#: Outcomes whose ``bound`` is proven and may serve as a reference: a solve stopped with no
#: incumbent still proved its bound; a ``disputed`` one did not.
BOUND_STATUSES = (Status.OPTIMAL, Status.FEASIBLE, Status.TIME_LIMIT_NO_SOLUTION)


#: More solver threads than any machine here has is a mistyped number, not a request.
MAX_THREADS = 1024


@dataclass(frozen=True)
class SolveOptions:
    """Options every solve takes.

    Parameters
    ----------
    solver
        ``highs``, ``cpsat``, or any solver name Pyomo's ``SolverFactory`` knows (``cbc``, ``glpk``,
        ``scip``, ``gurobi``, ...) when installed.
    time_limit
        Seconds for the solver; always set, so nothing hangs.
    gap
        Relative gap at which an exact solver may stop and claim optimality.  Set explicitly
        (HiGHS's own default would be 1e-4).
    threads
        Solver threads.  1 by default here (a sweep runs one per task), which makes runs repeatable
        for a given seed; ``mlsched solve`` and ``compare`` default to every usable core
        (:func:`~mlsched_opt.clock.default_threads`).
    seed
        Random seed for the solver and for randomized algorithms.
    certify
        Confirm an exact method's "optimal" or "infeasible" by an independent route (a second
        solver; presolve-off re-solves when they disagree) before printing it.
    presolve
        Let the solver presolve (off only to re-solve a disputed model: presolve is where the
        solver defects we have met live).
    log
        Stream the solver's own log to stderr (``mlsched -v``); stdout stays for the answer, so
        ``--json`` output is never mixed with it.
    """

    solver: str = "highs"
    time_limit: float = 60.0
    gap: float = 1e-6
    threads: int = 1
    seed: int = 0
    certify: bool = True
    presolve: bool = True
    log: bool = False

    def __post_init__(self) -> None:
        if not (self.time_limit > 0 and math.isfinite(self.time_limit)):
            raise OptionError(f"time limit must be a positive number of seconds, got {self.time_limit}", field="--time-limit")
        if not (0 <= self.gap < 1):
            raise OptionError(f"gap must be in [0, 1), got {self.gap}", field="--gap")
        if not 1 <= self.threads <= MAX_THREADS:
            raise OptionError(f"threads must be in [1, {MAX_THREADS}], got {self.threads}", field="--threads")
        if not 0 <= self.seed < 2**31:
            # CP-SAT and SCIP take 32-bit seeds; a larger one would be a traceback in the referee
            raise OptionError(f"seed must be in [0, 2**31), got {self.seed}", field="--seed")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """``|bound - objective| / max(|objective|, |bound|)``, 0 when they agree to :data:`SAME_VALUE_TOL`.

    The denominator keeps the gap finite when the objective is 0; it never exceeds the
    HiGHS definition ``|bound - objective| / |objective|``, so a solver that stopped at its
    gap limit also meets ours.
    """
    if objective is None or bound is None or not math.isfinite(bound) or not math.isfinite(objective):
        return None
    diff = abs(bound - objective)
    if diff <= SAME_VALUE_TOL * max(1.0, abs(objective)):
        return 0.0
    return diff / max(abs(objective), abs(bound))


@dataclass
class SolveReport:
    """The outcome of one solve or one algorithm run.

    ``objective`` is the value of the returned decision; ``bound`` the best proven bound on the
    optimum (``None`` for heuristics, which prove nothing); ``gap`` is computed here from the two
    (see :func:`relative_gap`), not copied from the solver.  ``wall_s = build_s + translate_s +
    solve_s``: building the model (Pyomo or arrays), handing it to the solver (Pyomo's translation
    to the solver's matrices, which can dominate a large model), and the solver's own run.
    """

    #: a :class:`Status`: given as one or as its value, stored as one (typed ``str``, its base, so that
    #: back ends and families may pass the plain value)
    status: str
    objective: float | None
    bound: float | None
    sense: str
    solver: str
    solver_version: str
    options: Mapping[str, Any] = field(default_factory=dict)
    build_s: float = 0.0
    solve_s: float = 0.0
    message: str = ""
    translate_s: float = 0.0
    gap: float | None = None
    #: the independent solver runs that confirmed an exact answer (labels such as ``"scip 10.0 (pyscipopt
    #: 6.3.0)"``, see :mod:`mlsched_opt.solvers.certify`); empty if none.  A tuple here; in JSON one string,
    #: the labels joined by ", " (the solution format is unchanged)
    certified_by: tuple[str, ...] = ()
    #: an online method's decision time per arriving job, in milliseconds (``mean``, ``p50``, ``p95``, ``max``):
    #: wall-clock figures live in the report, never in the decision
    decision_ms: Mapping[str, float] | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        # a status set later (a back end judging its outcome) is a Status too, so every report's is
        if name == "status":
            if value not in STATUSES:
                raise ValueError(f"unknown status {value!r}")
            value = Status(value)
        super().__setattr__(name, value)

    def __post_init__(self) -> None:
        if isinstance(self.certified_by, str):  # a solution file's (or an old caller's) joined labels
            self.certified_by = tuple(part for part in self.certified_by.split(", ") if part)
        else:
            self.certified_by = tuple(self.certified_by)
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        if self.sense not in ("min", "max"):
            raise ValueError(f"sense must be 'min' or 'max', got {self.sense!r}")
        self.gap = relative_gap(self.objective, self.bound)

    @property
    def wall_s(self) -> float:
        return self.build_s + self.translate_s + self.solve_s

    @property
    def has_solution(self) -> bool:
        return self.status in ("optimal", "feasible", "disputed")

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": Status(self.status).value,
            "objective": _finite(self.objective),
            "bound": _finite(self.bound),
            "gap": self.gap,
            "sense": self.sense,
            "wall_s": round(self.wall_s, 6),
            "build_s": round(self.build_s, 6),
            "translate_s": round(self.translate_s, 6),
            "solve_s": round(self.solve_s, 6),
            "solver": self.solver,
            "solver_version": self.solver_version,
            "options": dict(self.options),
            "message": self.message,
            "certified_by": ", ".join(self.certified_by),
            **({"decision_ms": dict(self.decision_ms)} if self.decision_ms else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SolveReport:
        return cls(
            status=data["status"], objective=data.get("objective"), bound=data.get("bound"),
            sense=data["sense"], solver=data.get("solver", ""), solver_version=data.get("solver_version", ""),
            options=data.get("options", {}), build_s=data.get("build_s", 0.0), solve_s=data.get("solve_s", 0.0),
            translate_s=data.get("translate_s", 0.0),
            message=data.get("message", ""), certified_by=data.get("certified_by", ""),
            decision_ms=data.get("decision_ms"),
        )


def _finite(x: float | None) -> float | None:
    # JSON has no infinity; an infinite bound means "no bound"
    return None if x is None or not math.isfinite(x) else float(x)


def approximation_ratio(value: float, reference: float, sense: str) -> float:
    """The factor by which ``value`` falls short of ``reference`` (>= 1; 1 means as good).

    ``reference / value`` for maximization, ``value / reference`` for minimization, so that a
    ratio reads the same way for both senses.  Defined for positive values (every objective of
    the toolkit is >= 0): when either side is <= 0 and they differ, the ratio is ``inf``, never a
    number below 1 that would read as "optimal" (a solver's "no bound" of -1e20 once did).
    """
    num, den = (reference, value) if sense == "max" else (value, reference)
    if abs(num - den) <= 1e-9 * max(1.0, abs(num)):
        return 1.0
    return math.inf if den <= 0 or num <= 0 else num / den
