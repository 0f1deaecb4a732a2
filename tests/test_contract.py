"""One contract over every family and method (in the spirit of scikit-learn's
``parametrize_with_checks``), run through the library that states it, :mod:`mlsched_opt.testing`:
each family declares its data on its record (``Family(contract=...)``: a toy, tiny generated cases,
free-text options, known exceptions) and every check is one test, ``[family-check]`` or
``[family-method-check]`` (the checks are listed in :mod:`mlsched_opt.testing`).

What is not part of the generic contract stays here: every shipped family declares one, the same
files for the same roles, the import layers, and that the library reports a broken family (a
contract check that cannot fail is a defect) and serves a family of one's own.
"""

from __future__ import annotations

import dataclasses
import unittest

import pytest

from mlsched_opt.problems import REGISTRY
from mlsched_opt.problems.base import resolve
from mlsched_opt.testing import Case, Contract, contract_of, family_checks, parametrize_with_checks

FAMILIES = sorted(REGISTRY)


@parametrize_with_checks(REGISTRY.values())
def test_contract(check):
    check()


def test_every_family_declares_a_contract_with_a_toy_and_tiny_cases():
    for name, family in REGISTRY.items():
        contract = contract_of(family)
        assert contract is not None and contract.toy_path() is not None and contract.tiny, name


def run_checks(family, only: str) -> dict[str, str]:
    """Each check of ``family`` whose id ends with ``only``: its id -> "passed", "skipped: why" or "failed: what"."""
    out = {}
    for name, check in family_checks(family):
        if not name.endswith(only):
            continue
        try:
            check()
        except unittest.SkipTest as exc:
            out[name] = f"skipped: {exc}"
        except AssertionError as exc:
            out[name] = f"failed: {exc}"
        else:
            out[name] = "passed"
    return out


def test_a_family_of_ones_own_is_checked_from_its_record():
    """A contract is data on the record: a variant with its own cases (one tiny case, no toy) is checked
    as it is, by its own checker (not the registry's), and an oracle it declares is its referee."""
    packing = REGISTRY["packing"]
    mine = dataclasses.replace(packing, contract=Contract(tiny=(Case(3, 2, seeds=(4,)),), oracle=lambda inst, opts: -1.0))
    results = run_checks(mine, "-optimum") | run_checks(mine, "-ffd-checker") | run_checks(mine, "-generate")
    assert results["packing-generate"] == results["packing-ffd-checker"] == "passed", results
    assert results["packing-optimum"].startswith("failed:") and "the oracle -1.0" in results["packing-optimum"], results
    # mlsched reaches the registered family only: the command line check says why it does not apply
    assert run_checks(mine, "-command-line")["packing-command-line"].startswith("skipped:")


def test_a_broken_checker_fails_the_contract():
    """A family whose checker recomputes another objective fails the checker check, naming the method."""
    packing = REGISTRY["packing"]
    real = resolve(packing.check)

    def off_by_one(instance, decision, options, result):
        real(instance, decision, options, result)
        result.objective = (result.objective or 0.0) + 1.0

    broken = dataclasses.replace(packing, check=off_by_one, contract=Contract(tiny=(Case(3, 2, seeds=(4,)),)))
    assert run_checks(broken, "-ffd-checker")["packing-ffd-checker"].startswith("failed: ('packing/ffd on j3-s2"), \
        "a checker that disagrees with the answers must fail the contract"


def test_a_family_without_a_contract_is_skipped_saying_so():
    bare = dataclasses.replace(REGISTRY["packing"], contract=None)
    results = run_checks(bare, "")
    assert results and all(r.startswith("skipped: family packing declares no contract") for r in results.values()), results


def test_a_known_exception_skips_with_its_reason_and_a_misspelt_one_is_an_error():
    packing = REGISTRY["packing"]
    declared = contract_of(packing)
    assert declared is not None
    excused = dataclasses.replace(packing, contract=dataclasses.replace(declared, skip={"round-trip": "a reason"}))
    assert run_checks(excused, "-ffd-round-trip") == {"packing-ffd-round-trip": "skipped: packing: round-trip does not apply (a reason)"}
    misspelt = dataclasses.replace(packing, contract=dataclasses.replace(declared, skip={"roundtrip": "a reason"}))
    with pytest.raises(ValueError, match="roundtrip"):
        run_checks(misspelt, "-generate")


def test_a_contract_is_declared_without_importing_the_checks():
    """A family's record names its contract lazily: importing a family imports no test machinery."""
    import subprocess
    import sys

    families = ", ".join(f"mlsched_opt.problems.{name}" for name in FAMILIES)
    code = f"import sys, {families}; print(sorted(m for m in sys.modules if m == 'mlsched_opt.testing'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out


# --- one family contract: the same files for the same roles ---------------------------------------

ROLES = ("view", "formulation", "decision", "bound", "methods", "baselines", "check", "generate", "trace", "options")


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_has_the_same_modules_for_the_same_roles(family):
    import importlib

    from mlsched_opt.problems import MethodKind

    package = f"mlsched_opt.problems.{family}"
    for role in ROLES:
        importlib.import_module(f"{package}.{role}")
    formulation = importlib.import_module(f"{package}.formulation")
    fam = REGISTRY[family]
    assert resolve(fam.build_model) is formulation.build_model and resolve(fam.decision_from_model) is formulation.decision_from_model
    assert resolve(fam.check) is importlib.import_module(f"{package}.check").check
    assert all(isinstance(m.kind, MethodKind) for m in fam.methods.values())


@pytest.mark.parametrize("module, below", [
    ("mlsched_opt.io", ("mlsched_opt.solvers", "mlsched_opt.checking", "mlsched_opt.problems")),
    ("mlsched_opt.checking", ("mlsched_opt.solvers", "mlsched_opt.problems")),
    ("mlsched_opt.solvers", ("mlsched_opt.checking", "mlsched_opt.problems")),
    # every command imports the registry; PyTorch (the rl extra) is for drl and train alone
    ("mlsched_opt.cli, mlsched_opt.problems", ("torch", "gymnasium")),
])
def test_layers_import_only_downwards(module, below):
    """io < checking, solvers < problems: a layer never imports one above it (a fresh interpreter)."""
    import subprocess
    import sys

    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.startswith({below!r})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out
