"""Properties over generated instances: answers pass the checker; LP bound >= optimum >= heuristic (max)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mlsched_opt.errors import OptionError
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import REGISTRY, GenerateSpec, check_solution
from mlsched_opt.solvers import SolveOptions

EXACT = SolveOptions(gap=0.0, time_limit=30)

#: per family: problem options to draw from, generator options, and the range of --servers
CASES = {
    "packing": ([{"objective": "weight"}, {"objective": "servers"}], [{}], (1, 5)),
    # capacity in virtual instances, so that admission is tight; small grids keep it quick
    "smd": ([{"epsilon1": 0.3}, {"epsilon1": 0.3, "outer": "exact", "attempts": 1}, {"inner": "enumerate", "epsilon2": 0.9}],
            [{"unit": "instance", "sgd": "sync"}, {"unit": "instance", "sgd": "async"}, {"unit": "instance", "workloads": "catalog"}],
            (1, 40)),
    # short jobs on 10 slots so that several jobs compete and the MILP proves optimality quickly
    # small clusters so that the configuration ILP, Variant A and brute force all finish
    "hetero": ([{}, {"comm": "ps", "budget": 0, "samples": 3}, {"valuation": "rho", "engine": "transport"}, {"engine": "mm", "rounds": 1},
                {"distribution": "centered", "idle": "forbid", "search": "first"}],
               [{"gpus_per_server": 2}, {"gpus_per_server": 1, "types": "K80,V100"}], (1, 3)),
    "oasis": ([{}, {"units": "worker-slots"}, {"prices": "estimated"},
               {"prices": "given", "l1": 0.01, "l2": 0.01, "u1": 100.0, "u2": 100.0}],
              [{"epochs_min": 1, "epochs_max": 5}, {"epochs_min": 1, "epochs_max": 10, "setting": "literal"}], (1, 2)),
    # small jobs on at most 2 machines and 8 slots, so that the offline MILP proves its optimum quickly
    "locality": ([{}, {"order": "fifo", "epsilon": 0.0, "attempts": 1}, {"epsilon": 0.2, "l_scale": 100.0}],
                 [{"work_max": 12.0}, {"bandwidth_ratio": 10.0, "work_max": 8.0}, {"calibration": "pollux", "gpus": 2, "work_max": 8.0}],
                 (1, 2)),
    # static batches (exact search needs them) of at most MAX_JOBS jobs; the hard world too
    # short jobs: under the default starts=any the exhaustive search also enumerates start intervals
    "harmony": ([{}, {"world": "hard"}, {"starts": "simultaneous"}],
                [{"static": True, "min_intervals": 1.0, "max_intervals": 8.0},
                 {"static": True, "max_workers": 2, "allreduce_share": 0.8, "min_intervals": 1.0, "max_intervals": 8.0}], (3, 4)),
}
#: fewer jobs where exact is exhaustive (harmony, spec 004 section 6a: N <= 4) or a slow MILP (locality with
#: free PS placement)
MAX_JOBS = {"harmony": 4, "locality": 5}



def test_every_family_has_property_cases():
    assert set(CASES) == set(REGISTRY)


# locality's 20 examples solve 20 exact MILPs (about 30 s): marked slow, still run by `make test`
@pytest.mark.parametrize("problem", [pytest.param(p, marks=pytest.mark.slow) if p == "locality" else p for p in sorted(REGISTRY)])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), jobs=st.integers(1, 9), data=st.data())
def test_every_method_passes_the_checker_and_bounds_are_ordered(problem, seed, jobs, data):
    family = REGISTRY[problem]
    catalog = load_catalog()
    option_cases, generator_cases, (lo, hi) = CASES[problem]
    options = data.draw(st.sampled_from(option_cases))
    spec = GenerateSpec(jobs=min(jobs, MAX_JOBS.get(problem, jobs)), servers=data.draw(st.integers(lo, hi)), seed=seed,
                        options=family.parse_generate_options(data.draw(st.sampled_from(generator_cases))))
    inst = from_document(family.generate(spec, catalog), catalog=catalog)
    sense = family.sense(family.parse_options(options))
    results = {}
    for method in family.methods:
        if not family.method(method).available:  # needs an optional extra that is absent
            continue
        try:
            sol = family.run(inst, method, EXACT, options)
        except OptionError:  # an oracle refuses an instance beyond its size: that is its contract
            assert family.method(method).kind == "oracle", method
            continue
        if sol.decision is not None:
            check = check_solution(inst, sol, options)
            assert check.feasible, (method, [str(v) for v in check.violations])
            assert check.objective == pytest.approx(sol.report.objective)
        results[method] = sol.report
    exact = results.pop("exact", None)
    if exact is None:  # the oracle refused this size (checked above): nothing to order the others against
        assert family.method("exact").kind == "oracle"
        return
    lp = family.lp_bound(inst, family.parse_options(options), EXACT) if family.bounded else None
    if exact.status == "infeasible":
        assert all(r.status in ("failed", "infeasible") for r in results.values())
        return
    # a solve stopped by the time limit still proves its bound: every answer is ordered against it
    assert exact.status == "optimal" or (exact.status == "feasible" and exact.bound is not None), exact.status
    reference = exact.objective if exact.status == "optimal" else exact.bound
    better = (lambda a, b: a >= b - 1e-6) if sense == "max" else (lambda a, b: a <= b + 1e-6)
    for method, rep in results.items():
        if rep.objective is not None:
            assert better(reference, rep.objective), (method, reference, rep.objective)
    if not family.bounded:  # its Pyomo model is a surrogate: its relaxation bounds nothing here
        return
    assert lp.status == "optimal"
    assert better(lp.objective, exact.objective), (lp.objective, exact.objective)
