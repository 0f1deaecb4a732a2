"""``--method exact`` for locality: the exact MILP where it is small, a pooled-capacity search at any size.

Our design (issue 32).  The offline MILP (:mod:`.formulation`) builds up to
:data:`~.decision.MAX_EXACT_CELLS` patterns, and HiGHS proves its optimum only on a few jobs
(30 Philly jobs on two machines are not proven in 200 s).  At every size this method first runs
:func:`pooled_search`:

1. ``srpt`` (:mod:`.priority`), the incumbent from the first second (offered to the watchdog);
2. the pooled-capacity Lagrangian bound by column generation (:class:`.bound.Generation`), its
   master started from the incumbent's columns;
3. the master restricted to whole-slot columns, solved as a MIP by HiGHS (a pooled schedule: each
   job the slots it runs in, the cluster's capacity summed over its machines), realized on the
   machines by :func:`.priority.follow` and the jobs it leaves by ``srpt`` in the capacity left;
   the better of this and the incumbent is the answer.

The answer is ``feasible`` with the proven bound (gap 0 when it meets it: nothing here certifies an
optimum).  Then, when the MILP has at most :data:`MILP_CELLS` patterns, it runs in the time left
(the family's generic route, certified as every exact answer): its ``optimal`` stands, otherwise
the better of the two answers is kept with the better of the two bounds.  Round and node limits make
the search repeatable; the wall clock is only its safety stop, and the message says when it cut in.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from ...clock import offer, past
from ...errors import OptionError
from ...io.instance import Instance
from ...report import SolveOptions, SolveReport
from ..base import MethodResult
from .bound import Generation, LagrangeBound, pooled_bound, schedule_columns, too_large
from .decision import model_cells
from .priority import Plan, empty_plan, follow, plan_decision, rates, simulate, srpt_plan
from .view import LocalityView, check_size, locality_view, total_delay

#: The full MILP is tried (after the pooled search) up to this many patterns: beyond it HiGHS rarely
#: proves anything in minutes and Pyomo's build takes memory by the gigabyte (500 Philly jobs on 10
#: machines: 36,000 patterns, 1.5 GB, no bound in 120 s).
MILP_CELLS = 5_000
#: Share of the search's time the column generation may take (its safety stop; it converges well before
#: on the hard Philly instances: 9-28 s at 2,000 jobs).
BOUND_SHARE = 0.6
#: Share of the time left after the bound kept for realizing the MIP's plan and writing the decision.
REALIZE_SHARE = 0.25
#: Node limit of the restricted master MIP (a work limit, so that its answer does not follow the clock).
MIP_NODES = 5_000
SOLVER = "highs (pooled master)"


def _report(status: str, value: float | None, bound: float | None, started: float, options: Mapping[str, Any], message: str) -> SolveReport:
    from ...solvers.highs_lp import highspy_version

    return SolveReport(status=status, objective=value, bound=bound, sense="min", solver=SOLVER, solver_version=highspy_version(),
                       options=dict(options), solve_s=time.perf_counter() - started, message=message)


def pooled_search(view: LocalityView, locality: str, solve_options: SolveOptions, key: str | None = None) -> MethodResult:
    """``srpt``, the Lagrangian bound, and the restricted master's plan realized on the machines (see the module);
    ``key``: the instance's hash (srpt's plan of the quick start is reused)."""
    started = time.perf_counter()
    deadline = started + float(solve_options.time_limit)
    plan, cut = srpt_plan(view, locality, deadline, key)
    value = total_delay(view, plan.completion)
    notes = [f"srpt {value:g}" + (" (cut short at the time limit)" if cut else "")]
    offer(_report("feasible", value, None, started, solve_options.to_dict(), notes[0]), plan_decision(view, plan))
    if too_large(view):
        bound, why = pooled_bound(view, locality, LagrangeBound())
        return MethodResult(_report("feasible", value, bound, started, solve_options.to_dict(), "; ".join([*notes, too_large(view), why])),
                            plan_decision(view, plan))
    gen = Generation(view, locality)
    first = len(gen.columns)
    seed = schedule_columns(view, plan.tasks, plan.completion)
    gen.add(seed)
    result, lp_note = gen.bound_from_prices(started + BOUND_SHARE * (deadline - started))
    bound, bound_note = pooled_bound(view, locality, result)
    notes += [bound_note, lp_note]
    if value > bound and not past(deadline):
        start = {i: i for i in range(len(view.jobs))} | {c.job: first + k for k, c in enumerate(seed)}
        realize_at = deadline - REALIZE_SHARE * (deadline - time.perf_counter())
        picked, status = gen.integer_plan(realize_at, MIP_NODES, start)
        if picked:
            better, note = realize(view, locality, picked, deadline)
            notes.append(f"restricted master MIP ({len(gen.columns):,} columns, {status}) realized on the machines: {note}")
            if total_delay(view, better.completion) < value:
                plan, value = better, total_delay(view, better.completion)
                offer(_report("feasible", value, bound, started, solve_options.to_dict(), "; ".join(notes)), plan_decision(view, plan))
        else:
            notes.append(f"restricted master MIP: no plan ({status})")
    if past(deadline):
        notes.append("the wall clock cut the search short")
    return MethodResult(_report("feasible", value, bound, started, solve_options.to_dict(), "; ".join(notes)), plan_decision(view, plan))


def realize(view: LocalityView, locality: str, picked: Mapping[int, tuple[int, ...]], deadline: float | None) -> tuple[Plan, str]:
    """The pooled plan ``picked`` on the machines (:func:`.priority.follow`), then ``srpt`` for the jobs it leaves unfinished."""
    rate = rates(view, locality)
    plan = empty_plan(view)
    missed = follow(view, {i: slots for i, slots in picked.items() if slots}, plan, locality, rate, deadline)
    followed = total_delay(view, plan.completion)
    simulate(view, [i for i in range(len(view.jobs)) if i not in plan.completion], plan, locality, rate, deadline=deadline)
    return plan, (f"{followed:g} ({missed} planned job-slots found no room), {total_delay(view, plan.completion):g} "
                  f"after srpt re-plans the jobs left")


def exact_method(instance: Instance, options: Mapping[str, Any], solve_options: SolveOptions) -> MethodResult:
    """The family's ``--method exact`` (see the module)."""
    from .. import get_family  # the family as registered (a test may patch it)

    if options.get("locality", "job") != "job":
        raise OptionError("the exact MILP is linear only for job-level locality (pitfall P2); use --set locality=job",
                          field="--set locality")
    started = time.perf_counter()
    deadline = started + float(solve_options.time_limit)
    view = locality_view(instance)
    check_size(view, instance.file)
    small = model_cells(view) <= MILP_CELLS
    found = pooled_search(view, "job", dataclasses.replace(solve_options, time_limit=(0.5 if small else 1.0) * solve_options.time_limit),
                          instance.sha256)
    if not small:
        return found
    family = get_family("locality")
    milp = family._run_exact(instance, options, dataclasses.replace(solve_options, time_limit=max(deadline - time.perf_counter(), 0.01)))
    if milp.report.status in ("optimal", "infeasible", "unbounded", "disputed"):
        return milp
    return _better(family, instance, options, found, milp)


def _better(family: Any, instance: Instance, options: Mapping[str, Any], found: MethodResult, milp: MethodResult) -> MethodResult:
    """The better checked answer of the pooled search and the MILP stopped early, with the better bound."""
    bounds = [b for b in (found.report.bound, milp.report.bound) if b is not None]
    bound = max(bounds) if bounds else None
    value = None if milp.decision is None else family._evaluate(instance, options, milp.decision)[0]
    own = found.report.objective
    if value is not None and (own is None or value < own):
        message = "; ".join(filter(None, [milp.report.message, f"the MILP's incumbent {value:g} (stopped {milp.report.status}) "
                                          f"is the answer; the pooled search: {found.report.message}"]))
        return MethodResult(dataclasses.replace(milp.report, objective=value, bound=bound, message=message), milp.decision)
    message = "; ".join(filter(None, [found.report.message, f"the MILP stopped {milp.report.status}"
                                      + ("" if milp.report.bound is None else f" with bound {milp.report.bound:g}")]))
    return MethodResult(dataclasses.replace(found.report, bound=bound, message=message), found.decision)
