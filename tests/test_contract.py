"""One contract over every family and method (in the spirit of scikit-learn's
``parametrize_with_checks``): what every answer of the toolkit must satisfy, whoever computed it.

- the decision is plain JSON (no numpy scalars, no NaN or infinity) and the solution file
  round-trips;
- the same seed gives a byte-identical decision (timings belong in the report);
- the checker accepts the decision under the options it was made for, and rejects the same
  file when it claims other problem options than the command line's.
"""

from __future__ import annotations

import json

import pytest

from mlsched_opt.checking import check_solution
from mlsched_opt.io import load_instance
from mlsched_opt.io.solution import read_solution
from mlsched_opt.problems import REGISTRY
from mlsched_opt.solvers import SolveOptions

from .conftest import ROOT

#: the small shipped instance of each family
INSTANCES = {
    "packing": "demo.toml", "smd": "smd-toy.toml", "oasis": "oasis-toy.toml", "hetero": "hetero-toy.toml",
    "locality": "locality-toy.toml", "harmony": "harmony-toy.toml",
}
CASES = [(family, method) for family in sorted(REGISTRY) for method, m in REGISTRY[family].methods.items()
         if m.kind not in ("exact", "oracle")]


def test_every_family_has_a_contract_instance():
    assert set(INSTANCES) == set(REGISTRY)


@pytest.mark.parametrize("problem,method", CASES)
def test_same_seed_same_plain_json_decision(problem, method, tmp_path):
    family = REGISTRY[problem]
    if not family.method(method).available:
        pytest.skip(f"{method} needs {family.method(method).requires}")
    inst = load_instance(ROOT / "instances" / INSTANCES[problem])
    texts = []
    for _ in range(2):
        sol = family.run(inst, method, SolveOptions(seed=11, time_limit=60), {})
        texts.append(json.dumps(sol.decision, sort_keys=True, allow_nan=False))
    assert texts[0] == texts[1], f"{problem}/{method}: same seed, different decision"
    if sol.decision is None:
        return
    path = tmp_path / "sol.json"
    sol.write(path)
    back = read_solution(path)
    assert json.dumps(back.decision, sort_keys=True) == texts[0]
    check = check_solution(inst, back)
    assert check.feasible, [str(v) for v in check.violations]


@pytest.mark.parametrize("problem", sorted(REGISTRY))
def test_a_solution_cannot_restate_the_problem(problem, tmp_path):
    """Problem options come from the instance and the command line; a solution that records other
    values of a problem-defining option is reported, whatever its decision."""
    family = REGISTRY[problem]
    forgeable = [o for o in family.options if o.problem and o.choices and len(o.choices) > 1]
    assert [o for o in family.options if o.problem], f"{problem} declares no problem-defining option"
    if not forgeable:
        pytest.skip("no problem option with alternatives to forge")
    inst = load_instance(ROOT / "instances" / INSTANCES[problem])
    method = next(name for name, m in family.methods.items() if m.kind not in ("exact", "oracle") and m.available)
    sol = family.run(inst, method, SolveOptions(seed=1), {})
    assert sol.decision is not None
    opt = forgeable[0]
    other = next(c for c in opt.choices if c != family.parse_options({})[opt.name])
    sol.problem_options = {**sol.problem_options, opt.name: other}
    result = check_solution(inst, sol)
    assert any(v.rule == "problem-options" for v in result.violations), [str(v) for v in result.violations]
