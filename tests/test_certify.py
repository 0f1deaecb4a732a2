"""Certification of exact answers: a solver's "optimal" or "infeasible" is printed only when an
independent route confirms it (mlsched_opt/solvers/certify.py).

The solver defects we met (HiGHS and CP-SAT presolve proving wrong optima) are simulated by a
back end that lies when presolve is on, so that every path of the certification is exercised
without depending on one solver version's bug.
"""

from __future__ import annotations

import json

import pyomo.environ as pyo
import pytest

import mlsched_opt.problems as problems_pkg
import mlsched_opt.solvers as solvers_pkg
from mlsched_opt.io import load_instance
from mlsched_opt.problems import check_solution, get_family
from mlsched_opt.solvers import SolveOptions, pyomo_run
from mlsched_opt.solvers.pyomo_run import BackendResult

from .conftest import DEMO

LOCALITY = DEMO.parent / "locality-toy.toml"

REAL_BACKEND = solvers_pkg.backend_for
PACKING = get_family("packing")
OPT = 42.0  # the demo's proven optimum (README)


def _zero_everything(model: pyo.ConcreteModel) -> None:
    for v in model.component_data_objects(pyo.Var, active=True):
        v.set_value(0, skip_validation=True)


def liar(lying: set[tuple[str, bool]], claim_infeasible: bool = False):
    """A back end factory: for (solver, presolve) in ``lying``, solve, then load the empty packing
    (feasible, weight 0) and claim it optimal with bound 0, or claim infeasibility."""

    def backend_for(name: str):
        real = REAL_BACKEND(name)

        def run(model, options):
            outcome = real(model, options)
            if (name, options.presolve) not in lying:
                return outcome
            if claim_infeasible:
                return BackendResult("infeasible", False, None, outcome.version)
            _zero_everything(model)
            return BackendResult("optimal", True, 0.0, outcome.version)

        return run

    return backend_for


def _solve(solver="highs", **kw):
    return PACKING.run(load_instance(DEMO), "exact", SolveOptions(solver=solver, gap=0.0, **kw), {})


def test_agreeing_solvers_certify(monkeypatch):
    sol = _solve()
    assert sol.report.status == "optimal" and sol.report.objective == OPT
    assert sol.report.certified_by[0].startswith("scip")
    assert "certified" in sol.report.message


def test_no_certify_claims_nothing_more():
    sol = _solve(certify=False)
    assert sol.report.status == "optimal" and sol.report.certified_by == ()


@pytest.mark.parametrize("primary", ["highs", "cpsat"])
def test_a_presolve_defect_is_caught_and_the_true_optimum_certified(monkeypatch, primary):
    # the primary solver's presolve "proves" 0; with presolve off it is right, as was the HiGHS defect
    monkeypatch.setattr(pyomo_run, "backend_for", liar({(primary, True)}))
    sol = _solve(primary)
    rep = sol.report
    assert rep.status == "optimal" and rep.objective == pytest.approx(OPT), rep.message
    assert "refuted" in rep.message and primary in rep.message.split("refuted:")[1]
    assert check_solution(load_instance(DEMO), sol).objective == pytest.approx(OPT)


def test_a_false_infeasibility_is_refuted(monkeypatch):
    monkeypatch.setattr(pyomo_run, "backend_for", liar({("highs", True)}, claim_infeasible=True))
    rep = _solve().report
    assert rep.status == "optimal" and rep.objective == pytest.approx(OPT), rep.message


def test_claims_nobody_confirms_are_disputed(monkeypatch):
    # only the referee (SCIP with presolve) is honest: its checked optimum refutes every other
    # claim, but one standing claim is no confirmation
    lying = {(s, p) for s in ("highs", "cpsat", "scip") for p in (True, False)} - {("scip", True)}
    monkeypatch.setattr(pyomo_run, "backend_for", liar(lying))
    sol = _solve()
    assert sol.report.status == "disputed", sol.report.message
    # the best checked decision is kept, and its value is the checker's
    assert sol.report.objective == pytest.approx(OPT) and sol.report.bound is None
    assert check_solution(load_instance(DEMO), sol).feasible


def test_a_referee_out_of_time_leaves_the_claim_unconfirmed(monkeypatch):
    def backend_for(name):
        real = REAL_BACKEND(name)
        if name == "highs":
            return real
        return lambda model, options: BackendResult("limit", False, None, "test")

    monkeypatch.setattr(pyomo_run, "backend_for", backend_for)
    rep = _solve().report
    assert rep.status == "feasible" and "not confirmed" in rep.message


def test_cli_solve_and_compare_show_disputes(monkeypatch, run):
    lying = {(s, p) for s in ("highs", "cpsat", "scip") for p in (True, False)} - {("scip", True)}
    monkeypatch.setattr(pyomo_run, "backend_for", liar(lying))
    code, out, err = run("solve", DEMO, "--json")
    doc = json.loads(out)
    assert doc["status"] == "disputed" and doc["check"]["feasible"]
    code, out, err = run("compare", DEMO, "--methods", "exact,ffd", "--solvers", "highs")
    assert code == 1 and "DISPUTED" in err


def test_compare_disputes_an_optimum_a_checked_answer_beats(monkeypatch, run):
    # both solvers agree on a wrong optimum (a formulation defect, not a solver's): the checked
    # heuristic answer beats it, so compare must not use it as the reference
    monkeypatch.setattr(pyomo_run, "backend_for", liar({(s, p) for s in ("highs", "cpsat", "scip") for p in (True, False)}))
    code, out, err = run("compare", DEMO, "--methods", "exact,ffd", "--solvers", "highs")
    assert code == 1
    # the exact method's own quick start (ffd) refutes it first; compare's rule is the backstop
    assert "refuted by ffd's checked answer 36" in err or "beaten by ffd" in err
    line = next(ln for ln in out.splitlines() if ln.startswith("exact"))
    assert "disputed" in line


def test_unknown_solver_names_are_refused_without_probing(monkeypatch, run, tmp_path):
    """Only known names reach Pyomo's SolverFactory (whose probe would run an executable of that
    name): anything else is exit 2 before any probe."""
    import pyomo.environ as pyo_env

    import mlsched_opt.solvers.pyomo_run as pyomo_run

    probed = []
    real_factory = pyo_env.SolverFactory
    monkeypatch.setattr(pyomo_run.pyo, "SolverFactory", lambda name, *a, **k: probed.append(name) or real_factory(name, *a, **k))
    script = tmp_path / "solver.sh"
    script.write_text(f"#!/bin/sh\ntouch {tmp_path / 'ran'}\n")
    script.chmod(0o755)
    for name in (str(script), "./solver.sh", "no-such-solver", "scip_direct"):
        code, _out, err = run("solve", DEMO, "--solver", name)
        assert code == 2 and "--solver: unknown solver" in err and "Traceback" not in err
    assert probed == [] and not (tmp_path / "ran").exists()


def test_a_formulation_every_solver_agrees_on_but_the_checker_rejects_is_shown(monkeypatch, run):
    """Every solver 'proves' a point that admits every job (capacity broken): no claim survives the
    checker, so the answer is disputed, the rejected decision is kept and the command fails."""

    def backend_for(name):
        real = REAL_BACKEND(name)

        def run_(model, options):
            outcome = real(model, options)
            for v in model.component_data_objects(pyo.Var, active=True):
                v.set_value(v.ub if v.ub is not None else 1, skip_validation=True)
            return BackendResult("optimal", True, None, outcome.version)

        return run_

    monkeypatch.setattr(pyomo_run, "backend_for", backend_for)
    code, out, _err = run("solve", DEMO, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["status"] == "disputed" and doc["check"]["feasible"] is False


def test_a_rescored_answer_beyond_the_models_bound_is_never_optimal(monkeypatch, run):
    """When the checker's value of the incumbent beats the model's proven bound, the model is not
    the checker's problem on that instance: no 'optimal', no bound, and the message says why."""
    import dataclasses

    family = get_family("locality")
    real = family.rescore
    assert real is not None
    code, out, _ = run("solve", LOCALITY, "--json", "--no-certify")
    honest = json.loads(out)
    assert code == 0 and honest["status"] == "optimal"
    patched = dataclasses.replace(family, rescore=lambda *a: real(*a) - 1.0)
    monkeypatch.setitem(problems_pkg.REGISTRY, "locality", patched)
    code, out, _ = run("solve", LOCALITY, "--json", "--no-certify")
    doc = json.loads(out)
    assert doc["status"] == "feasible" and doc["check"]["feasible"]
    assert "the exact model and the checker disagree" in doc["message"]
    # the model's bound is dropped; what stands is the checker's value and the family's own bound (pooled capacity)
    assert doc["objective"] == pytest.approx(honest["objective"]) and "Lagrangian relaxation of the pooled capacity" in doc["message"]
    assert doc["bound"] is not None and doc["bound"] <= doc["objective"]


def test_a_referee_that_breaks_down_is_no_opinion(monkeypatch):
    """A referee ending in 'error' (or raising) does not downgrade a good answer: the next is asked."""

    def backend_for(name):
        real = REAL_BACKEND(name)
        if name == "scip":
            def broken(model, options):
                raise RuntimeError("referee install is broken")
            return broken
        return real

    monkeypatch.setattr(pyomo_run, "backend_for", backend_for)
    rep = _solve().report
    assert rep.status == "optimal" and rep.certified_by[0].startswith("cpsat"), rep.message


@pytest.mark.parametrize("bad", [["--seed", str(2**31)], ["--seed", "99999999999"], ["--threads", "100000"]])
def test_seeds_and_threads_the_solvers_cannot_take_are_user_errors(run, bad):
    code, _out, err = run("solve", DEMO, *bad)
    assert code == 2 and bad[0] in err and "Traceback" not in err


def test_agreement_is_relative_even_for_small_objectives():
    from mlsched_opt.solvers.certify import agree

    assert not agree(0.002, 0.009, 0.01)
    assert agree(374.0365, 374.0365 + 1e-5, 0.0)  # CP-SAT's float-objective precision
    assert agree(0.0, 1e-10, 0.0) and not agree(0.0, 1e-6, 0.0)


def test_cpsat_translation_takes_zero_rows_and_keeps_tiny_terms_exactly():
    from mlsched_opt.solvers import solve

    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.Integers, bounds=(0, 10))
    m.zero = pyo.Constraint(expr=0 * m.x >= -1)
    m.o = pyo.Objective(expr=m.x, sense=pyo.maximize)
    assert solve(m, SolveOptions(solver="cpsat")).objective == 10
    # a term far below any tolerance is kept, not dropped: x = y = 10 breaks the row (20 if it were dropped), x = 9 leaves room
    m.y = pyo.Var(domain=pyo.Integers, bounds=(0, 10))
    m.tiny = pyo.Constraint(expr=m.x + 3e-10 * m.y <= 10 + 2e-9)
    m.o.deactivate()
    m.o2 = pyo.Objective(expr=m.x + m.y, sense=pyo.maximize)
    report = solve(m, SolveOptions(solver="cpsat", gap=0.0))
    assert report.solver == "cpsat" and report.status == "optimal" and report.objective == 19


def test_scip_back_end_proves_the_same_optimum():
    sol = _solve("scip")
    assert sol.report.status == "optimal" and sol.report.objective == pytest.approx(OPT)
    assert sol.report.certified_by[0].startswith("highs")


def highs_issue_3043() -> pyo.ConcreteModel:
    """min 2x + 3z s.t. x + z >= 4.5, x in [0, 10] continuous, z in [0, 10] integer: optimum 9
    (z = 0).  HiGHS 1.14.0 presolve returns 15 as optimal (upstream ERGO-Code/HiGHS#3043)."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(0, 10))
    m.z = pyo.Var(bounds=(0, 10), domain=pyo.Integers)
    m.c = pyo.Constraint(expr=m.x + m.z >= 4.5)
    m.o = pyo.Objective(expr=2 * m.x + 3 * m.z)
    return m


def test_a_real_highs_presolve_defect_never_reaches_the_user_as_optimal():
    """Whichever HiGHS is installed: if its presolve gets this model wrong (1.14.0 does), the
    referee (SCIP: the model has a continuous variable, so CP-SAT cannot take it) and the
    presolve-off re-solves catch it, and the certified answer is the true optimum."""
    import time

    from mlsched_opt.solvers import solve
    from mlsched_opt.solvers.certify import certify, model_checker

    model = highs_issue_3043()
    options = SolveOptions(solver="highs", gap=0.0)
    report = solve(model, options)
    extract, evaluate = model_checker(model)
    report, decision = certify(model, report, extract(model), options, time.perf_counter() + 60, extract, evaluate)
    assert report.status == "optimal" and report.objective == pytest.approx(9.0), report.message
    assert evaluate(decision) == (pytest.approx(9.0), "")
    assert report.certified_by
