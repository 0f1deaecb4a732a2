"""The packing family's array-built exact method and LP bound (HiGHS through highspy, no Pyomo).

* :func:`lp_relaxation` is the family's ``relaxation``: the LP relaxation of the exact model,
  solved on the shape-aggregated arrays of :mod:`.arrays` (same value, jobs x server classes
  columns), within the time limit.
* :func:`solve_exact_arrays` solves the exact MILP built as arrays, started from first-fit
  decreasing and bounded by that LP; :func:`exact_method` is the family's ``--method exact``:
  this route for ``--solver highs`` on models of :data:`ARRAY_MIN_PAIRS` pairs or more, the
  generic Pyomo route otherwise.  The array route's "optimal"/"infeasible" is certified like
  every exact answer (:func:`~mlsched_opt.solvers.certify.certify`): the referee solves the
  Pyomo model, an independent route through an independently built formulation.  When there is
  not time enough left to build that model the claim stays unconfirmed (``feasible``).
* :func:`export_mps` writes the array MILP as MPS (SCIP reads it with ``readProblem``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from typing import Any

from ...clock import offer
from ...io.instance import Instance
from ...report import SolveOptions, SolveReport, relative_gap
from ...solvers.certify import certify
from ...solvers.highs_lp import highspy_version
from ..base import MethodResult
from . import arrays, lns
from .bound import column_generation, combinatorial_bound, configs, decision_columns, lp_prices
from .decision import decision_from_x, objective_value, x_from_decision
from .master import integer_master
from .methods import best_greedy
from .pergpu import per_gpu
from .view import PackingView, packing_view

#: Pyomo builds the packing model in about this many wall seconds per (job, server) pair (measured:
#: 247k pairs, Alibaba 200 pods, 7.5 s CPU and 14.7 s wall on 2 shared cores); certification
#: builds it for a referee only when that fits in the time left.
PYOMO_S_PER_PAIR = 6e-5
#: Below this many (job, server) pairs Pyomo builds the model in well under a second (about 0.6 s
#: CPU at 20k pairs), so ``--method exact`` keeps the generic Pyomo route there.
ARRAY_MIN_PAIRS = 20_000
#: Building the array MILP and handing it (and the FFD start) to HiGHS, wall seconds per pair
#: (measured: 15 s for 2.46 million pairs, servers mode, Alibaba 2,000 pods, on 2 shared cores).
MILP_SETUP_S_PER_PAIR = 6e-6
#: The exact MILP is built only up to this many pairs: beyond, HiGHS was not seen to improve on the
#: start (Alibaba 2,000 pods: nothing in 600 s on 2.5 million pairs, nothing in 88 s on 395k pairs
#: on 256 nodes), and LNS and the bounds take the time
FULL_MILP_PAIRS = 100_000
#: A referee re-solves the Pyomo model only up to this many pairs: on Alibaba's 500 pods (600k pairs)
#: SCIP's symmetry detection took 6 GB and a minute past the time limit before failing
CERTIFY_MAX_PAIRS = FULL_MILP_PAIRS
#: Share of the time left after the LP bound that column generation may take (it stops earlier at
#: its work limit or when its rounded bound meets its master's)
CG_SHARE = 0.4
#: Share of the time then left that the integer master may take (it stops earlier at its node limit)
MASTER_SHARE = 0.3
#: Share of the time then left that LNS may take when the MILP is to run after it (it stops earlier
#: when it stalls; without the MILP it takes the rest)
LNS_SHARE = 0.6
#: Share of the time limit that column generation (and half of it the integer master) may take in the
#: search for an answer that meets the combinatorial bound, before the exact model (each stops
#: earlier at its work limit)
SHORTCUT_SHARE = 0.4


def _report(status: str, objective: float | None, bound: float | None, sense: str, solve_options: SolveOptions,
            build_s: float, solve_s: float, message: str, solver: str = "highs (arrays)") -> SolveReport:
    return SolveReport(status=status, objective=objective, bound=bound, sense=sense, solver=solver,
                       solver_version=highspy_version(), options=solve_options.to_dict(), build_s=build_s,
                       solve_s=solve_s, message=message)


def lp_relaxation(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> SolveReport:
    """The exact model's LP relaxation, on the shape-aggregated arrays (same value as relaxing
    :func:`.formulation.build_model`; see :mod:`.arrays` for why).  It bounds the optimum from
    above (``weight``) or below (``servers``).  No bound when the time limit does not allow one."""
    start = time.perf_counter()
    deadline = start + solve_options.time_limit
    objective = options["objective"]
    sense = "min" if objective == "servers" else "max"
    view = packing_view(instance)
    reps, size = arrays.shape_classes(view)
    model = arrays.build(view, objective, servers=reps, multiplicity=size)
    build_s = time.perf_counter() - start
    left = deadline - time.perf_counter()
    if left < 0.01:
        return _report("time-limit-no-solution", None, None, sense, solve_options, build_s, 0.0,
                       "no time was left to solve the LP relaxation", solver="highs (LP, arrays)")
    res = arrays.solve(model, left, seed=solve_options.seed, threads=solve_options.threads,
                       presolve=solve_options.presolve, relax=True, log=solve_options.log)
    status = res.status if res.status in ("optimal", "infeasible") else (
        "time-limit-no-solution" if res.status in ("feasible", "time-limit-no-solution") else "error")
    value = res.objective if status == "optimal" else None
    note = f"LP relaxation on {len(reps)} server classes x {len(view.jobs)} jobs ({model.num_col} columns)"
    return _report(status, value, value, sense, solve_options, build_s, res.solve_s,
                   "; ".join(filter(None, [note, res.message if status != "optimal" else ""])), solver="highs (LP, arrays)")


def _integral_bound(view: PackingView, objective: str, lp_bound: float) -> float:
    """The LP bound rounded to the objective's integrality: servers are counted, and admitted
    weight is an integer when every weight is."""
    slack = 1e-6 * max(1.0, abs(lp_bound))
    if objective == "servers":
        return float(math.ceil(lp_bound - slack))
    if all(float(job.weight).is_integer() for job in view.jobs):
        return float(math.floor(lp_bound + slack))
    return lp_bound


def _tighter(sense: str, a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return a if b is None else b
    return min(a, b) if sense == "max" else max(a, b)


def solve_exact_arrays(instance: Instance, options: Mapping[str, Any],
                       solve_options: SolveOptions) -> tuple[SolveReport, dict[str, Any] | None]:
    """The anytime exact search on arrays: a greedy start, the LP bound, large-neighbourhood search,
    the configuration LP's bound, and the exact MILP from the best incumbent when it is small enough.

    1. the best of the greedy variants (:func:`.methods.best_greedy`) is the first incumbent;
    2. the LP bound (:func:`lp_relaxation`, rounded to the objective's integrality): when the
       incumbent meets it, the incumbent is optimal and nothing else runs;
    3. column generation on the configuration LP (:mod:`.bound`), from the LP's prices and the
       incumbent's configurations, tightens the bound in its share (:data:`CG_SHARE`);
    4. price and branch (:func:`.master.integer_master`): the integer master over its columns;
    5. LNS (:mod:`.lns`) improves the best incumbent until it meets the bound, stalls, or its
       share is over;
    6. the exact MILP (:mod:`.arrays`) from the incumbent, when it has at most :data:`FULL_MILP_PAIRS`
       pairs and building it leaves HiGHS time; its bound counts with the others.

    Every improvement is offered to the watchdog (:func:`~mlsched_opt.clock.offer`).

    The status is ``optimal`` only when the incumbent meets a proven bound or HiGHS proves it (not
    certified here, see :func:`exact_method`).  ``build_s`` is the MILP's build; ``solve_s`` the rest.
    """
    start = time.perf_counter()
    deadline = start + solve_options.time_limit
    objective = options["objective"]
    sense = "min" if objective == "servers" else "max"
    view = packing_view(instance)
    cfg = configs(view)
    decision, first_name = best_greedy(view, objective)
    value = None if decision is None else objective_value(view, decision, objective)
    if decision is not None:
        offer(_report("feasible", value, None, sense, solve_options, 0.0, time.perf_counter() - start,
                      f"{first_name}, the search's start"), decision)
    greedy_s = time.perf_counter() - start
    lp = lp_prices(cfg, objective, deadline - time.perf_counter(), solve_options.threads)
    lp_s = time.perf_counter() - start - greedy_s
    bound = None if lp.value is None else _integral_bound(view, objective, lp.value)
    if objective == "servers" and lp.status != "infeasible":
        l2, resource = combinatorial_bound(cfg)
        bound = _tighter(sense, bound, float(l2))
    if lp.status == "infeasible":
        return _report("infeasible", None, None, sense, solve_options, 0.0, greedy_s + lp_s,
                       f"the LP relaxation is infeasible (LP {lp_s:.3f} s)"), None
    notes = [f"start: {first_name or 'none'} {value if value is not None else '-'} ({greedy_s:.3f} s); LP {lp_s:.3f} s"]
    if objective == "servers":
        notes.append(f"Martello-Toth L2 {l2} ({resource or 'no task'})")

    def met() -> bool:
        return value is not None and bound is not None and relative_gap(value, bound) == 0.0

    if met():
        return _report("optimal", value, bound, sense, solve_options, 0.0, greedy_s + lp_s,
                       f"the {first_name} start meets the proven bound, so nothing else was run; " + "; ".join(notes)), decision
    if decision is not None:
        offer(_report("feasible", value, bound, sense, solve_options, 0.0, time.perf_counter() - start,
                      f"{first_name}, the search's start, with the LP's bound"), decision)
    pairs = view.pairs()
    setup_s = MILP_SETUP_S_PER_PAIR * pairs
    full = pairs <= FULL_MILP_PAIRS

    def better(found: dict[str, Any], found_value: float, how: str) -> None:
        nonlocal decision, value
        if value is None or (found_value < value if sense == "min" else found_value > value):
            decision, value = found, found_value
            offer(_report("feasible", value, bound, sense, solve_options, 0.0, time.perf_counter() - start, how), decision)

    began = time.perf_counter()
    cg = column_generation(cfg, objective, began + CG_SHARE * max(deadline - began, 0.0), int(options.get("rounds", 400)),
                           start=decision_columns(cfg, decision or {}), target=value, center=lp.pi,
                           threads=solve_options.threads)
    bound = _tighter(sense, bound, cg.bound)
    notes.append(f"configuration LP: {cg.summary()}, {time.perf_counter() - began:.1f} s")
    if not met() and cg.columns and time.perf_counter() < deadline:
        began = time.perf_counter()
        found = integer_master(cfg, objective, cg, MASTER_SHARE * (deadline - began), seed=solve_options.seed,
                               threads=solve_options.threads)
        if found is not None:
            better(found, objective_value(view, found, objective), "price and branch on the configuration LP's columns")
        notes.append(f"integer master: {objective_value(view, found, objective) if found is not None else 'none'}, "
                     f"{time.perf_counter() - began:.1f} s")
    if not met() and decision is not None and time.perf_counter() < deadline:
        began = time.perf_counter()
        lns_end = began + (LNS_SHARE if full and deadline - began > 2 * setup_s else 1.0) * (deadline - began)

        def improved(inc: lns.Incumbent) -> None:
            better(inc.decision(), inc.value(), "large-neighbourhood search, still running")

        out = lns.search(cfg, objective, decision, lns_end, seed=solve_options.seed, target=bound, on_better=improved,
                         windows=int(options.get("windows", 1000)), threads=solve_options.threads)
        notes.append(f"LNS: {out.windows} windows, {out.improved} improved, stopped: {out.stopped}, "
                     f"{time.perf_counter() - began:.1f} s")
    if met():
        return _report("optimal", value, bound, sense, solve_options, 0.0, time.perf_counter() - start,
                       "the incumbent meets the proven bound; " + "; ".join(notes)), decision
    status = "feasible" if decision is not None else "time-limit-no-solution"
    if not full or deadline - time.perf_counter() < 2 * setup_s:
        why = (f"the MILP ({pairs} pairs) is past {FULL_MILP_PAIRS} pairs" if not full else
               f"the MILP ({pairs} pairs, about {setup_s:.0f} s to build and hand to HiGHS) was not built in the time left")
        return _report(status, value, bound, sense, solve_options, 0.0, time.perf_counter() - start,
                       "; ".join([why, *notes])), decision
    built = time.perf_counter()
    model = arrays.build(view, objective)
    x0 = None if decision is None else x_from_decision(view, model, decision)
    build_s = time.perf_counter() - built
    sizes = f"arrays: {model.num_col} columns, {model.a.shape[0]} rows, {model.a.nnz} nonzeros built in {build_s:.3f} s"
    left = deadline - time.perf_counter()
    if left < 0.01:
        return _report(status, value, bound, sense, solve_options, build_s, time.perf_counter() - start - build_s,
                       "; ".join([f"no time was left for HiGHS; {sizes}", *notes])), decision
    res = arrays.solve(model, left, gap=solve_options.gap, seed=solve_options.seed, threads=solve_options.threads,
                       presolve=solve_options.presolve, start=x0, log=solve_options.log, integral=cfg.integral(objective))
    if res.x is not None:
        decision, value = decision_from_x(view, model, res.x), res.objective
    first = "none" if res.first_incumbent_s is None else f"{res.first_incumbent_s:.3f} s"
    notes.append(f"{sizes}; HiGHS {res.solve_s:.3f} s, first incumbent at {first}")
    status, best, why = res.status, _tighter(model.sense, res.bound, bound), res.message
    if res.x is None and decision is not None:
        status = "feasible"
    if status == "feasible" and relative_gap(value, best) == 0.0:
        status, why = "optimal", "HiGHS stopped early, but its incumbent meets the proven bound"
    return _report(status, value, best, model.sense, solve_options, build_s, time.perf_counter() - start - build_s,
                   "; ".join(filter(None, [why, *notes]))), decision


def exact_method(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """``--method exact``: the array route for HiGHS on models of :data:`ARRAY_MIN_PAIRS` pairs or
    more, the family's Pyomo model otherwise (other solvers, and small models, where Pyomo builds in
    well under a second and the generic route's certification applies unchanged); a proven optimum
    (or infeasibility) of the array route is certified by a second solver on the Pyomo model."""
    from . import FAMILY  # late: the family is built from this module's functions

    # the arrays have no GPU index: per-gpu takes the Pyomo model (pergpu.add_gpu_block)
    if per_gpu(options):
        return FAMILY._run_exact(instance, options, solve_options)
    start = time.perf_counter()
    deadline = start + solve_options.time_limit
    shortcut = bound_certificate(instance, options, solve_options)
    if shortcut is not None:
        return shortcut
    if solve_options.solver != "highs" or packing_view(instance).pairs() < ARRAY_MIN_PAIRS:
        return FAMILY._run_exact(instance, options, solve_options)
    report, decision = solve_exact_arrays(instance, options, solve_options)
    if report.status == "infeasible" and FAMILY.diagnose is not None:
        reason = FAMILY.diagnose(instance, options)
        if reason:
            report = dataclasses.replace(report, message="; ".join(filter(None, [report.message, reason])))
    if not solve_options.certify or report.status not in ("optimal", "infeasible"):
        return MethodResult(report, decision)
    pairs = packing_view(instance).pairs()
    if pairs > CERTIFY_MAX_PAIRS or deadline - time.perf_counter() < PYOMO_S_PER_PAIR * pairs:
        what = "infeasibility" if report.status == "infeasible" else "optimality"
        why = (f"the Pyomo model ({pairs} pairs) is past {CERTIFY_MAX_PAIRS} pairs, too large for a referee"
               if pairs > CERTIFY_MAX_PAIRS else f"no time was left to build the Pyomo model ({pairs} pairs) for a referee")
        status = "time-limit-no-solution" if report.status == "infeasible" else "feasible"
        return MethodResult(dataclasses.replace(report, status=status, message="; ".join(
            filter(None, [report.message, f"highs (arrays) claimed {what}, not confirmed: {why}"]))), decision)
    certified_at = time.perf_counter()
    model = FAMILY.build_model(instance, options)
    report, decision = certify(model, report, decision, solve_options, deadline,
                               extract=lambda m: FAMILY.decision_from_model(instance, options, m),
                               evaluate=lambda d: FAMILY._evaluate(instance, options, d))
    report = dataclasses.replace(report, solve_s=report.solve_s + (time.perf_counter() - certified_at))
    return MethodResult(report, decision)


def bound_certificate(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult | None:
    """``servers``: the best greedy answer, certified optimal by the combinatorial bound it meets, or ``None``.

    Certification's rule is a proof at the gap, our own recomputed gap and an independent
    confirmation (:mod:`~mlsched_opt.solvers.certify`).  Here the proof is the answer meeting
    :func:`.bound.combinatorial_bound` (Martello and Toth's L2, computed by our numpy code from the
    tasks' sizes, no solver involved), the answer's value is the checker's, not the method's, and
    the gap is recomputed from the two: a solver's claim needs a referee because the solver may be
    wrong; a checked answer that meets a bound computed without one has nobody left to confirm.
    The referee's re-solve is then not run (it cost 10 s where FFD met the bound in 0.3 s)."""
    from . import FAMILY  # late: the family is built from this module's functions

    if options["objective"] != "servers":
        return None
    start = time.perf_counter()
    view = packing_view(instance)
    cfg = configs(view)
    decision, name = best_greedy(view, "servers")
    if decision is None:
        return None
    l2, resource = combinatorial_bound(cfg)
    value, _ = FAMILY._evaluate(instance, options, decision)
    if value is None:
        return None
    report = _report("feasible", value, float(l2), "min", solve_options, 0.0, time.perf_counter() - start,
                     f"{name}, the search's start, with the Martello-Toth bound", solver="highs (arrays)")
    offer(report, decision)   # the bound too: a run cut short later keeps it
    gap = relative_gap(value, float(l2))
    small = view.pairs() < ARRAY_MIN_PAIRS   # the array route runs these phases itself, in its own shares
    if small and gap is not None and gap > solve_options.gap and SHORTCUT_SHARE * solve_options.time_limit > 0.05:
        # price and branch, in a share of the time and its own work limits: on exactly filled bins
        # (Falkenauer's triplets) greedy misses the bound that the configuration LP's columns meet
        cg = column_generation(cfg, "servers", start + SHORTCUT_SHARE * solve_options.time_limit, int(options.get("rounds", 400)),
                               start=decision_columns(cfg, decision), target=value, threads=solve_options.threads)
        found = integer_master(cfg, "servers", cg, SHORTCUT_SHARE / 2 * solve_options.time_limit, seed=solve_options.seed,
                               threads=solve_options.threads) if cg.columns else None
        checked = None if found is None else FAMILY._evaluate(instance, options, found)[0]
        if checked is not None and checked < value:
            decision, value, name = found, checked, "price-and-branch"
            report = dataclasses.replace(report, objective=value, solve_s=time.perf_counter() - start,
                                         message="price and branch on the configuration LP's columns")
            offer(report, decision)
            gap = relative_gap(value, float(l2))
    if gap is None or gap > solve_options.gap:
        return None
    label = f"the Martello-Toth bound L2 = {l2} on {resource} (recomputed), met by the checked {name} answer"
    report = dataclasses.replace(report, status="optimal", solve_s=time.perf_counter() - start,
                                 certified_by=(label,) if solve_options.certify else (),
                                 message=f"the {name} answer meets the Martello-Toth bound L2 on {resource}, so nothing "
                                         f"else was run: the bound is the certificate")
    return MethodResult(report, decision)


def export_mps(instance: Instance, options: Mapping[str, Any], path: str) -> None:
    """Write the exact MILP, built as arrays, as MPS (for solvers that read files, e.g. SCIP)."""
    view = packing_view(instance)
    arrays.write_mps(arrays.build(view, options["objective"]), path)
