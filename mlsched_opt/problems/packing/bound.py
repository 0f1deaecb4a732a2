"""The configuration LP of packing (Gilmore and Gomory), by column generation, and its proven bound.

A *configuration* of a server shape (a class of identical servers: role, GPU model, capacity) is
a multiset of tasks that fits on one server of that shape.  Tasks are interchangeable when they
are of one *type*: same kind (worker or PS), same demand, same eligible shapes.  Every decision
the checker accepts is, server by server, a configuration of the server's shape, so

* ``servers``: ``min sum_c x_c`` s.t. ``sum_c a_tc x_c >= d_t`` (every type's tasks covered),
  ``sum_{c of shape k} x_c <= n_k`` (the class's servers), ``x >= 0``;
* ``weight``: ``max sum_j w_j y_j`` s.t. ``sum_c a_tc x_c >= sum_j b_tj y_j``,
  ``sum_{c of shape k} x_c <= n_k``, ``0 <= y <= 1``

relax the problem (Gilmore and Gomory, "A linear programming approach to the cutting-stock
problem", Operations Research 9, 1961; with one bin class per shape as in multiple-length
cutting stock).  Its columns are generated: the restricted master LP over the columns known
so far gives duals ``pi`` (one per type), and the pricing problem of shape ``k`` is the
multi-dimensional integer knapsack ``p_k(pi) = max pi.a`` over the shape's configurations,
solved exactly by HiGHS (one small MIP per shape, its costs changed round by round).

The bound never rests on the master being solved or column generation having converged: for
*any* ``pi >= 0`` and any upper bounds ``p_k >= max pi.a`` (HiGHS's proven MIP dual bound, with
a margin), Lagrangian duality gives

* ``servers``: ``OPT >= max_{lam >= 0} lam pi.d - sum_k n_k max(0, lam p_k - 1)``
  (``lam = 1/max_k p_k`` is Farley's bound for cutting stock: Farley, "A note on bounding a
  class of linear programming problems, including cutting stock problems", Operations Research
  38, 1990);
* ``weight``: ``OPT <= min_{lam >= 0} lam sum_k n_k p_k + sum_j max(0, w_j - lam pi.b_j)``,

so the bound reported at a stop is one proven at that moment, whatever the round.  Configurations
are priced on the capacities the checker accepts (:func:`.view.checker_limits`), so no
accepted decision is outside the relaxation.  The configuration LP is at least as strong as the
assignment LP of :mod:`.formulation` (a fractional assignment per server is a convex combination
of fractional, not integer, configurations); the two are reported together by :func:`relaxation`,
the tighter counting.  Our design on the classical method.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np

from ...clock import past
from ...io.instance import Instance
from ...report import SolveOptions, SolveReport
from ...solvers.highs_lp import highspy_version, use_threads
from .view import PackingView, checker_limits, packing_view

INF = highspy.kHighsInf
TASK_KINDS = ("worker", "ps")
#: relative margin added to HiGHS's proven knapsack bound and taken off the rounded bound: covers
#: HiGHS's tolerances (1e-6 feasibility and integrality on counts of at most a few hundred)
PRICE_MARGIN = 1e-6
#: reduced cost below which a configuration enters the master
ENTER_TOL = 1e-9
#: cost of a master column that covers one missing task of a type without a server (``servers``):
#: keeps the master feasible before the first configurations are known; never in the bound
ARTIFICIAL_COST = 1e3
#: HiGHS options of the pricing MIPs: a knapsack of a few dozen integers is solved by branch and bound in
#: a few nodes; HiGHS's primal heuristics (feasibility jump above all), presolve and symmetry detection
#: cost ten times that on every call (measured: 20 ms against 2.4 ms per call on an 11-type shape)
PRICER_OPTIONS = (("presolve", "off"), ("mip_detect_symmetry", False), ("mip_heuristic_effort", 0.0),
                  ("mip_heuristic_run_feasibility_jump", False), ("mip_heuristic_run_rins", False),
                  ("mip_heuristic_run_rens", False), ("mip_heuristic_run_root_reduced_cost", False))
#: default work limit: rounds of column generation (each prices every shape once)
MAX_ROUNDS = 400
#: rounds of column generation the family's bound (:func:`relaxation`) takes at most
RELAXATION_ROUNDS = 10
#: weight of the best prices so far in the prices the pricing problems see (Wentges smoothing)
SMOOTH = 0.5
#: branch-and-bound nodes per pricing MIP: a work limit (HiGHS's bound stays a proven one where it stops)
PRICER_NODES = 200


@dataclass(frozen=True)
class Configs:
    """The instance as types of tasks and shapes of servers (on the checker's capacity limits).

    ``demand[t]`` is a task of type ``t``'s demand, ``count[t]`` how many tasks of the type the
    jobs have in all, ``fit[t, k]`` the most tasks of type ``t`` one server of shape ``k`` holds
    alone (0 where not eligible; at most ``count[t]``).  ``job_type[j, i]`` / ``job_count[j, i]``
    is job ``j``'s type and number of tasks of kind ``i`` (-1 and 0 when it has none).
    ``members[k]`` are the instance's servers of shape ``k``, in instance order.
    """

    view: PackingView
    demand: np.ndarray
    kind: np.ndarray
    count: np.ndarray
    fit: np.ndarray
    job_type: np.ndarray
    job_count: np.ndarray
    weight: np.ndarray
    capacity: np.ndarray
    size: np.ndarray
    members: tuple[np.ndarray, ...]

    @property
    def types(self) -> int:
        return len(self.count)

    @property
    def shapes(self) -> int:
        return len(self.size)

    def integral(self, objective: str) -> bool:
        """Whether every decision's value is an integer: servers are counted; weights may be integers."""
        return objective == "servers" or bool(np.all(self.weight == np.round(self.weight)))

    def tasks_of_jobs(self, picked: np.ndarray | None = None) -> np.ndarray:
        """How many tasks of each type the jobs ``picked`` (a boolean mask; default all) have."""
        out = np.zeros(self.types)
        for i in range(len(TASK_KINDS)):
            keep = self.job_type[:, i] >= 0
            if picked is not None:
                keep &= picked
            np.add.at(out, self.job_type[keep, i], self.job_count[keep, i])
        return out


def server_shapes(view: PackingView) -> np.ndarray:
    """Each server's shape (class of identical servers by role, GPU model and capacity), numbered in
    order of first appearance, as :func:`.arrays.shape_classes` numbers them."""
    key: dict[tuple[Any, ...], int] = {}
    out = np.empty(len(view.capacity), dtype=np.int64)
    for i, s in enumerate(view.instance.servers):
        out[i] = key.setdefault((s.role, s.gpu_model, view.capacity[i].tobytes()), len(key))
    return out


def configs(view: PackingView) -> Configs:
    """The types and shapes of ``view`` (see :class:`Configs`), on the checker's capacity limits."""
    limit = checker_limits(view)
    shape = server_shapes(view)
    K = int(shape.max()) + 1 if len(shape) else 0
    members = tuple(np.flatnonzero(shape == k) for k in range(K))
    reps = np.array([m[0] for m in members], dtype=np.int64)
    cap = limit.capacity[reps] if K else np.zeros((0, len(view.resources)))
    keys, kinds, counts, owners = [], [], [], []
    for i, task in enumerate(TASK_KINDS):
        n = view.count(task)
        has = np.flatnonzero(n > 0)
        elig = limit.eligible[task][np.ix_(has, reps)] if K else np.zeros((len(has), 0), dtype=bool)
        keys.append(np.hstack([np.full((len(has), 1), float(i)), view.demand[task][has], elig.astype(float)]))
        kinds.append(np.full(len(has), i))
        counts.append(n[has])
        owners.append(has)
    allkeys = np.vstack(keys)
    uniq, inverse = np.unique(allkeys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    R = len(view.resources)
    T = len(uniq)
    count = np.zeros(T, dtype=np.int64)
    np.add.at(count, inverse, np.concatenate(counts))
    job_type = np.full((len(view.jobs), len(TASK_KINDS)), -1, dtype=np.int64)
    job_count = np.zeros((len(view.jobs), len(TASK_KINDS)), dtype=np.int64)
    at = 0
    for i, has in enumerate(owners):
        job_type[has, i] = inverse[at:at + len(has)]
        job_count[has, i] = counts[i]
        at += len(has)
    demand = uniq[:, 1:1 + R]
    eligible = uniq[:, 1 + R:] > 0.5
    fit = np.zeros((T, K), dtype=np.int64)
    for k in range(K):
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(demand > 0, np.floor(cap[k][None, :] / np.where(demand > 0, demand, 1.0)), np.inf)
        most = np.minimum(room.min(axis=1) if R else np.full(T, np.inf), count)
        fit[:, k] = np.where(eligible[:, k], np.maximum(most, 0), 0).astype(np.int64)
    weight = np.array([job.weight for job in view.jobs], dtype=float)
    return Configs(view, demand, uniq[:, 0].astype(np.int64), count, fit, job_type, job_count, weight, cap,
                   np.array([len(m) for m in members], dtype=np.int64), members)


class Pricer:
    """The pricing knapsack of one shape, ``max pi.a`` over its configurations, as one HiGHS MIP
    whose costs change from round to round."""

    def __init__(self, cfg: Configs, k: int, threads: int = 1):
        self.k, self.threads = k, threads
        self.types = np.flatnonzero(cfg.fit[:, k] > 0)
        self.h: highspy.Highs | None = None
        if not len(self.types):
            return
        d = cfg.demand[self.types]
        res = np.flatnonzero((d > 0).any(axis=0))
        h = highspy.Highs()
        for name, value in (("output_flag", False), ("mip_rel_gap", 1e-9), ("mip_abs_gap", 1e-9),
                            ("random_seed", 0), *PRICER_OPTIONS):
            h.setOptionValue(name, value)
        n = len(self.types)
        h.addVars(n, np.zeros(n), cfg.fit[self.types, k].astype(float))
        h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.full(n, highspy.HighsVarType.kInteger))
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        for r in res:
            nz = np.flatnonzero(d[:, r] > 0)
            h.addRow(-INF, float(cfg.capacity[k, r]), len(nz), nz.astype(np.int32), d[nz, r].astype(float))
        self.h = h

    def price(self, pi: np.ndarray, seconds: float) -> tuple[float, np.ndarray | None]:
        """A proven upper bound on ``max pi.a`` and the best configuration found (``None`` if none
        better than the empty one)."""
        if self.h is None:
            return 0.0, None
        cost = pi[self.types]
        if not (cost > 0).any():
            return 0.0, None
        h = self.h
        h.changeColsCost(len(self.types), np.arange(len(self.types), dtype=np.int32), cost)
        h.setOptionValue("time_limit", max(float(seconds), 0.01))
        h.setOptionValue("mip_max_nodes", PRICER_NODES)
        use_threads(h, self.threads)
        h.run()
        info = h.getInfo()
        upper = float(info.mip_dual_bound)
        if not math.isfinite(upper):
            upper = float((cost * h.getLp().col_upper_).sum())  # every task at once: a bound whatever HiGHS did
        upper = max(upper, 0.0) * (1 + PRICE_MARGIN) + PRICE_MARGIN
        if info.primal_solution_status != 2:
            return upper, None
        a = np.zeros(len(pi), dtype=np.int64)
        a[self.types] = np.rint(h.getSolution().col_value).astype(np.int64)
        return upper, a


def servers_bound(pi: np.ndarray, p: np.ndarray, cfg: Configs) -> float:
    """``max_lam lam pi.d - sum_k n_k max(0, lam p_k - 1)`` (a lower bound on the servers used, see the
    module docstring); concave and piecewise linear in ``lam``: its maximum is at a breakpoint ``1/p_k``."""
    need = float(pi @ cfg.count)
    # every lam >= 0 gives a valid bound: a candidate that overflows (a price near 0 makes a huge
    # breakpoint) is left out, never an inf or NaN; lam = 1 is always there
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        lams = np.concatenate([[1.0], 1.0 / p[p > 0]])
        values = lams * need - (cfg.size[None, :] * np.maximum(0.0, lams[:, None] * p[None, :] - 1.0)).sum(axis=1)
    return float(max(values[np.isfinite(values)].max(), 0.0))


def weight_bound(pi: np.ndarray, p: np.ndarray, cfg: Configs) -> float:
    """``min_lam lam sum_k n_k p_k + sum_j max(0, w_j - lam pi.b_j)`` (an upper bound on the admitted
    weight); convex and piecewise linear in ``lam``: its minimum is at 0, 1 or a breakpoint ``w_j / pi.b_j``."""
    price = np.zeros(len(cfg.weight))
    for i in range(len(TASK_KINDS)):
        has = cfg.job_type[:, i] >= 0
        price[has] += pi[cfg.job_type[has, i]] * cfg.job_count[has, i]
    room = float(cfg.size @ p)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):   # as in servers_bound; lam = 0 is always there
        lams = np.concatenate([[0.0, 1.0], cfg.weight[price > 0] / price[price > 0]])
        values = lams * room + np.maximum(0.0, cfg.weight[None, :] - lams[:, None] * price[None, :]).sum(axis=1)
    return float(values[np.isfinite(values)].min())


@dataclass
class ConfigLP:
    """Where column generation stopped: the best proven ``bound``, the master's ``value`` (an upper
    bound on the configuration LP for ``servers``, a lower one for ``weight``), the columns (``shape``,
    ``a`` rows), the rounds done, and whether it converged (no column prices out)."""

    objective: str
    bound: float | None
    value: float | None
    shape: list[int] = field(default_factory=list)
    columns: list[np.ndarray] = field(default_factory=list)
    rounds: int = 0
    converged: bool = False
    stopped: str = ""
    pi: np.ndarray | None = None

    def summary(self) -> str:
        """What column generation did, for a report's message."""
        state = "converged" if self.converged else f"stopped: {self.stopped or 'work limit'}"
        bound = "none" if self.bound is None else f"{self.bound:.6g}"
        # a stop short of convergence says how far: the master's value is the LP's other side
        far = "" if self.converged or self.value is None else f", master LP {self.value:.6g}"
        return f"{self.rounds} rounds, {len(self.columns)} columns, bound {bound}{far}, {state}"

    def matrix(self) -> np.ndarray:
        return np.array(self.columns, dtype=np.int64).reshape(len(self.columns), -1)


class Master:
    """The restricted master LP (min form: ``weight`` minimizes ``-w.y``), with columns added in place
    and re-solved from the previous basis."""

    def __init__(self, cfg: Configs, objective: str, threads: int = 1):
        self.cfg, self.objective, self.threads = cfg, objective, threads
        T, K = cfg.types, cfg.shapes
        h = highspy.Highs()
        for name, value in (("output_flag", False), ("random_seed", 0)):
            h.setOptionValue(name, value)
        lo = cfg.count.astype(float) if objective == "servers" else np.zeros(T)
        h.addRows(T, lo, np.full(T, INF), 0, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        h.addRows(K, np.full(K, -INF), cfg.size.astype(float), 0, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32),
                  np.zeros(0))
        self.h = h
        self.first_config = 0
        if objective == "servers":
            idx = np.arange(T, dtype=np.int32)
            h.addCols(T, np.full(T, ARTIFICIAL_COST), np.zeros(T), np.full(T, INF), T, idx, idx, np.ones(T))
            self.first_config = T
        else:
            self._add_jobs()
        self.seen: set[bytes] = set()
        self.shape: list[int] = []
        self.columns: list[np.ndarray] = []

    def _add_jobs(self) -> None:
        """One ``y`` column per class of jobs with the same tasks and weight (``0 <= y <= jobs in it``)."""
        cfg = self.cfg
        key = np.hstack([cfg.job_type, cfg.job_count, cfg.weight[:, None]])
        uniq, inverse, mult = np.unique(key, axis=0, return_inverse=True, return_counts=True)
        self.job_class = inverse.ravel()
        n = len(uniq)
        starts, index, value = [0], [], []
        for row in uniq:
            for i in range(len(TASK_KINDS)):
                if row[i] >= 0:
                    index.append(int(row[i]))
                    value.append(-float(row[len(TASK_KINDS) + i]))
            starts.append(len(index))
        self.h.addCols(n, -uniq[:, -1], np.zeros(n), mult.astype(float), len(index), np.array(starts[:-1], dtype=np.int32),
                       np.array(index, dtype=np.int32), np.array(value, dtype=float))
        self.first_config = n
        self.class_size = mult

    def add(self, k: int, a: np.ndarray) -> bool:
        """Add configuration ``a`` of shape ``k`` unless it is known; whether it was added."""
        key = a.tobytes() + k.to_bytes(4, "little")
        if key in self.seen or not a.any():
            return False
        self.seen.add(key)
        nz = np.flatnonzero(a)
        rows = np.concatenate([nz, [self.cfg.types + k]]).astype(np.int32)
        vals = np.concatenate([a[nz].astype(float), [1.0]])
        cost = 1.0 if self.objective == "servers" else 0.0
        self.h.addCol(cost, 0.0, INF, len(rows), rows, vals)
        self.shape.append(k)
        self.columns.append(a.copy())
        return True

    def solve(self, seconds: float) -> tuple[float | None, np.ndarray, np.ndarray]:
        """The master's value (in the objective's own sense), the duals ``pi >= 0`` of the types' rows
        and ``mu <= 0`` of the shapes' rows (``None`` and zeros when HiGHS did not solve it)."""
        h = self.h
        h.setOptionValue("time_limit", max(float(seconds), 0.01))
        use_threads(h, self.threads)
        h.run()
        T = self.cfg.types
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None, np.zeros(T), np.zeros(self.cfg.shapes)
        dual = np.array(h.getSolution().row_dual)
        value = float(h.getInfo().objective_function_value)
        return (value if self.objective == "servers" else -value), np.maximum(dual[:T], 0.0), np.minimum(dual[T:], 0.0)

    def x(self) -> np.ndarray:
        return np.array(h_col_values(self.h))[self.first_config:]


def h_col_values(h: highspy.Highs) -> list[float]:
    return list(h.getSolution().col_value)


def decision_columns(cfg: Configs, decision: Mapping[str, Any]) -> list[tuple[int, np.ndarray]]:
    """The configuration of every server a decision uses, with its shape (the master's first columns)."""
    view = cfg.view
    server_of = {s.name: i for i, s in enumerate(view.instance.servers)}
    job_of = {job.id: j for j, job in enumerate(view.jobs)}
    shape = server_shapes(view)
    loads: dict[int, np.ndarray] = {}
    for jid, parts in decision.get("placement", {}).items():
        j = job_of[jid]
        for i, key in enumerate(("workers", "ps")):
            t = cfg.job_type[j, i]
            for name, n in parts.get(key, {}).items():
                s = server_of[name]
                loads.setdefault(s, np.zeros(cfg.types, dtype=np.int64))[t] += int(n)
    return [(int(shape[s]), a) for s, a in sorted(loads.items())]


@dataclass(frozen=True)
class Prices:
    """The assignment LP's status (``optimal``, ``infeasible`` or ``not solved``), value and prices per type."""

    status: str
    value: float | None
    pi: np.ndarray | None


def lp_prices(cfg: Configs, objective: str, seconds: float, threads: int = 1) -> Prices:
    """The assignment LP (:mod:`.arrays`' shape-aggregated model) and its duals as prices per type
    (each type's price is the mean over its jobs of the duals of their rows ``placed``, per task):
    column generation starts from them, so that its first bound is at least the LP's (an integer
    knapsack is worth at most the fractional one at the same prices).  Its value is
    :func:`.exact.lp_relaxation`'s (the same model)."""
    from . import arrays

    view = cfg.view
    reps = np.array([m[0] for m in cfg.members], dtype=np.int64)
    model = arrays.build(view, objective, servers=reps, multiplicity=cfg.size)
    h = arrays._highs(model, relax=True)
    for name, value in (("random_seed", 0), ("time_limit", max(float(seconds), 0.01))):
        h.setOptionValue(name, value)
    use_threads(h, threads)
    h.run()
    status = h.getModelStatus()
    if status in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
        return Prices("infeasible", None, None)   # every column is bounded: not unbounded
    if status != highspy.HighsModelStatus.kOptimal:
        return Prices("not solved", None, None)
    dual = np.array(h.getSolution().row_dual)
    if model.maximize:
        dual = -dual   # HiGHS's duals of a maximization: the covering prices are their negatives
    pi = np.zeros(cfg.types)
    seen = np.zeros(cfg.types)
    row = 0
    for i, task in enumerate(TASK_KINDS):
        has = np.flatnonzero(view.count(task)[model.jobs] > 0)
        t = cfg.job_type[model.jobs[has], i]
        np.add.at(pi, t, dual[row:row + len(has)])
        np.add.at(seen, t, 1.0)
        row += len(has)
    pi = np.maximum(np.divide(pi, seen, out=np.zeros_like(pi), where=seen > 0), 0.0)
    return Prices("optimal", float(h.getInfo().objective_function_value), pi)


def column_generation(cfg: Configs, objective: str, deadline: float, max_rounds: int = MAX_ROUNDS,
                      start: list[tuple[int, np.ndarray]] | tuple[()] = (), target: float | None = None,
                      center: np.ndarray | None = None, threads: int = 1) -> ConfigLP:
    """Column generation on the configuration LP until it converges, its rounded bound meets the
    master's rounded value (no further round can raise it), it meets ``target`` (an incumbent's
    value: nothing left to prove), ``max_rounds`` rounds (the deterministic work limit), or the
    deadline (the safety stop).  The bound is the best one proven in any round.

    Prices are smoothed towards the best ones so far (Wentges, "Weighted Dantzig-Wolfe
    decomposition for linear mixed-integer programming", ITOR 4, 1997): the pricing problems see
    ``SMOOTH center + (1 - SMOOTH) pi`` (``center`` to start with, e.g. :func:`lp_prices`); a round
    whose smoothed prices give no column is priced again at the master's own prices.  Every HiGHS
    run of a process must take one ``threads`` (:func:`~mlsched_opt.solvers.highs_lp.use_threads`)."""
    out = ConfigLP(objective, None, None)
    if cfg.types == 0:
        out.bound, out.value, out.converged = 0.0, 0.0, True
        return out
    servers = objective == "servers"
    # the combinatorial bound is proven before any round: column generation stops as soon as the
    # master's rounded value (or the incumbent) meets it, and never reports less
    floor = float(combinatorial_bound(cfg)[0]) if servers else None
    master = Master(cfg, objective, threads)
    for k, a in start:
        master.add(k, a)
    pricers = [Pricer(cfg, k, threads) for k in range(cfg.shapes)]
    integral = cfg.integral(objective)
    best: float | None = None
    if center is not None:
        uppers = _price_all(pricers, center, deadline, None, None, None)
        if uppers is not None:
            best = _lagrangian(center, uppers, cfg, servers)
    while True:
        left = deadline - time.perf_counter()
        if out.rounds >= max_rounds or left <= 0 or past(deadline):
            out.stopped = "work limit" if out.rounds >= max_rounds else "time limit"
            break
        value, pi, mu = master.solve(left)
        if value is None:
            out.stopped = "time limit" if past(deadline) else "the master LP was not solved"
            break
        out.value, out.pi = value, pi
        out.rounds += 1
        added = 0
        for smooth in ((SMOOTH, 0.0) if center is not None else (0.0,)):
            at = pi if smooth == 0.0 or center is None else smooth * center + (1 - smooth) * pi
            found: list[int] = []
            uppers = _price_all(pricers, at, deadline, master, (pi, mu), found)
            if uppers is None:
                break
            bound = _lagrangian(at, uppers, cfg, servers)
            if best is None or (bound > best if servers else bound < best):
                best, center = bound, at
            added = len(found)
            if added:
                break
        proven = _with_floor(best, floor)
        out.bound = proven
        if past(deadline):
            out.stopped = "time limit"
            break
        if added == 0:
            out.converged = True
            break
        if integral and proven is not None and _rounded(proven, servers) == _rounded(value, servers):
            out.stopped = "rounded bound meets the master's rounded value"
            break
        if target is not None and proven is not None and (
                _rounded(proven, servers) >= target if servers else _rounded(proven, servers) <= target):
            out.stopped = "the bound meets the incumbent"
            break
    out.bound = _with_floor(best, floor)
    out.shape, out.columns = master.shape, master.columns
    if out.bound is not None and integral:
        out.bound = _rounded(out.bound, servers)
    return out


def _price_all(pricers: list[Pricer], at: np.ndarray, deadline: float, master: Master | None,
               duals: tuple[np.ndarray, np.ndarray] | None, found: list[int] | None) -> np.ndarray | None:
    """Every shape's proven price bound at prices ``at``; each configuration found that has a negative
    reduced cost at the master's ``duals`` enters the master (its shape is added to ``found``).
    ``None`` when the deadline passed before every shape was priced (no bound then)."""
    uppers = np.zeros(len(pricers))
    for k, pricer in enumerate(pricers):
        if past(deadline):
            return None
        upper, a = pricer.price(at, deadline - time.perf_counter())
        uppers[k] = upper
        if a is None or master is None or duals is None or found is None:
            continue
        pi, mu = duals
        reduced = (1.0 if master.objective == "servers" else 0.0) - float(pi @ a) - mu[k]
        if reduced < -ENTER_TOL and master.add(k, a):
            found.append(k)
    return uppers


def _with_floor(best: float | None, floor: float | None) -> float | None:
    return best if floor is None else max(floor, best if best is not None else floor)


def _lagrangian(pi: np.ndarray, uppers: np.ndarray, cfg: Configs, servers: bool) -> float:
    return servers_bound(pi, uppers, cfg) if servers else weight_bound(pi, uppers, cfg)


def _rounded(value: float, servers: bool) -> float:
    slack = 1e-6 * max(1.0, abs(value))
    return float(math.ceil(value - slack)) if servers else float(math.floor(value + slack))


def relaxation(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """The family's bound: the assignment LP (the value of :func:`.exact.lp_relaxation`), then the
    configuration LP's proven bound after at most :data:`RELAXATION_ROUNDS` rounds of column
    generation from the LP's prices (a work limit; the time limit is the safety stop), the tighter
    of the two, rounded to the objective's integrality.  Valid wherever it stops (see the module
    docstring).  No bound when the LP was not solved in the time limit."""
    start = time.perf_counter()
    deadline = start + solve_options.time_limit
    objective = options["objective"]
    sense = "min" if objective == "servers" else "max"
    view = packing_view(instance)
    cfg = configs(view)
    built = time.perf_counter() - start
    lp = lp_prices(cfg, objective, deadline - time.perf_counter(), solve_options.threads)

    def report(status: str, bound: float | None, note: str) -> SolveReport:
        return SolveReport(status=status, objective=bound, bound=bound, sense=sense, solver="highs (LP + configuration LP)",
                           solver_version=highspy_version(), options=solve_options.to_dict(), build_s=built,
                           solve_s=time.perf_counter() - start - built, message=note)

    if lp.status == "infeasible":
        return report("infeasible", None, "the LP relaxation is infeasible")
    if lp.value is None:
        return report("time-limit-no-solution", None, "no time was left to solve the LP relaxation")
    bound = _rounded(lp.value, objective == "servers") if cfg.integral(objective) else lp.value
    note = f"LP relaxation {lp.value:.6g}"
    if objective == "servers":
        l2, resource = combinatorial_bound(cfg)
        if l2 > bound:
            bound = float(l2)
        note += f"; Martello-Toth L2 {l2} ({resource or 'no task'})"
    if not past(deadline):
        cg = column_generation(cfg, objective, deadline, RELAXATION_ROUNDS, center=lp.pi, threads=solve_options.threads)
        if cg.bound is not None:
            bound = max(bound, cg.bound) if objective == "servers" else min(bound, cg.bound)
        note += f"; configuration LP: {cg.summary()}"
    return report("optimal", bound, note)


def martello_toth(sizes: np.ndarray, counts: np.ndarray, capacity: float) -> int:
    """Martello and Toth's lower bound L2 on the bins of ``capacity`` that items of ``sizes`` (``counts``
    of each) need ("Lower bounds and reduction procedures for the bin packing problem", Discrete Applied
    Mathematics 28, 1990), at least L1 = ``ceil(sum / capacity)``: for every ``K <= capacity / 2``, the
    items above ``capacity - K`` each take a bin alone, the items above half take a bin each (the two
    sets' bins are distinct), and the items of ``[K, capacity / 2]`` fill the room the half-full bins
    leave, then whole bins.  O(n log n): one sort, the threshold ``K`` over the distinct sizes by
    cumulative sums."""
    keep = (sizes > 0) & (counts > 0)
    if not keep.any():
        return 0
    if capacity <= 0:
        raise ValueError("an item of positive size on a bin of no capacity")
    order = np.argsort(sizes[keep], kind="stable")
    s, c = sizes[keep][order], counts[keep][order].astype(float)
    n_le = np.concatenate([[0.0], np.cumsum(c)])          # items of index < i, in ascending order
    w_le = np.concatenate([[0.0], np.cumsum(c * s)])
    half = capacity / 2
    ks = np.concatenate([[0.0], np.unique(s[s <= half])])
    big = np.searchsorted(s, half, side="right")         # items above half: index >= big
    above = np.searchsorted(s, capacity - ks, side="right")   # items above capacity - K
    small = np.searchsorted(s, ks, side="left")          # items of size >= K: index >= small
    n1 = n_le[-1] - n_le[above]
    n2 = n_le[above] - n_le[big]
    w2 = w_le[above] - w_le[big]
    w3 = w_le[big] - w_le[small]
    spill = (w3 - (n2 * capacity - w2)) / capacity
    # a hair of slack so that a float sum at an exact multiple of the capacity rounds down, as it should
    more = np.maximum(0.0, np.ceil(spill - 1e-9))
    return int((n1 + n2 + more).max())


def combinatorial_bound(cfg: Configs) -> tuple[int, str]:
    """A lower bound on the servers any accepted decision uses, from the tasks' sizes alone: per
    resource, :func:`martello_toth` on the largest capacity any shape has (every server made as large
    as the largest is a relaxation: fewer servers can only do), the eligibility and the classes'
    sizes forgotten; the largest over resources, and the resource that gives it.  Valid for every
    task placed on its own (tasks of one job may share or split servers as they like here: the
    checker's rules only forbid more)."""
    if cfg.types == 0 or cfg.shapes == 0:
        return 0, ""
    best, where = 0, ""
    for r, name in enumerate(cfg.view.resources):
        cap = float(cfg.capacity[:, r].max())
        d = cfg.demand[:, r]
        if cap <= 0 and (d > 0).any():
            continue  # no server holds the resource: the tasks are not placeable, which the LP says
        value = martello_toth(d, cfg.count, cap)
        if value > best:
            best, where = value, name
    return best, where
