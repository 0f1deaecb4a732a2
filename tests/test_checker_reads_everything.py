"""Every checker reads the whole decision: "the checker trusts nothing but the instance, the
command line and the decision".

For each family a clean decision (a cheap method on the family's toy instance) checks clean;
then one part is filled with nonsense that the checker used to skip unread (a ``start`` where the
family has none, a hetero job's ``ps``, a harmony ``schedule``/``admitted``/``extra``, claims in
``extra`` about unknown jobs, false claims it can recompute, claim containers that are not
mappings) and the verdict must name the rule and the path.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from mlsched_opt.io import load_instance
from mlsched_opt.io.instance import Instance
from mlsched_opt.io.solution import Solution
from mlsched_opt.problems import REGISTRY, check_solution
from mlsched_opt.solvers import SolveOptions

from .conftest import ROOT

TOYS = {
    "packing": ("demo.toml", "ffd"),
    "smd": ("smd-toy.toml", "esw"),
    "oasis": ("oasis-toy.toml", "drf"),
    "hetero": ("hetero-toy.toml", "greedy"),
    "locality": ("locality-toy.toml", "colocate"),
    "harmony": ("harmony-toy.toml", "load-balance"),
}


@cache
def _solved(family: str) -> tuple[Instance, Solution]:
    name, method = TOYS[family]
    instance = load_instance(ROOT / "instances" / name)
    return instance, REGISTRY[family].run(instance, method, SolveOptions(seed=0, time_limit=60))


def _first(decision: dict[str, Any], part: str = "admitted") -> str:
    """A job the clean decision names (the first admitted, placed or scheduled one)."""
    value = decision[part]
    return value[0] if isinstance(value, list) else next(iter(value))


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set ``decision[path]`` (dot-separated keys; ``{job}`` is the first admitted job)."""

    def poke(decision: dict[str, Any]) -> None:
        keys = path.split(".")
        node = decision
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value

    return poke


def _set_job(part: str, key: str, value: Any, which: str = "admitted") -> Callable[[dict[str, Any]], None]:
    """Set ``decision[part][job][key]`` for the first job of ``decision[which]``."""

    def poke(decision: dict[str, Any]) -> None:
        node = decision
        for k in part.split("."):
            node = node[k]
        node[_first(decision, which)][key] = value

    return poke


def _claim_job(key: str, value: Callable[[str, dict[str, Any]], Any]) -> Callable[[dict[str, Any]], None]:
    """Set ``extra[key]`` to ``value(first admitted job, decision)``."""

    def poke(decision: dict[str, Any]) -> None:
        decision.setdefault("extra", {})[key] = value(_first(decision), decision)

    return poke


def _first_entry(decision: dict[str, Any]) -> dict[str, Any]:
    return decision["schedule"][_first(decision)][0]


# (family, case id, mutation, expected "rule[where]" prefix; {job} is the first admitted job, for harmony the first placed)
CASES: list[tuple[str, str, Callable[[dict[str, Any]], None], str]] = [
    # 3. start in families whose decisions have none
    ("packing", "start", _set("start", {"zzz": -5}), "decision[start]"),
    ("packing", "extra", _set("extra", {"x": 1}), "decision[extra]"),
    ("packing", "entry-key", _set_job("placement", "gpus", {"k80": 1}), "decision[placement.{job}.gpus]"),
    ("smd", "start", _set("start", {"zzz": -5}), "decision[start]"),
    ("smd", "extra-key", _set("extra.bogus", {"B": 1}), "decision[extra.bogus]"),
    ("smd", "extra-not-mapping", _set("extra", ["allocation"]), "domain[extra]"),
    ("smd", "allocation-not-mapping", _set("extra.allocation", [1, 2]), "domain[extra.allocation]"),
    ("smd", "allocation-key", _set_job("extra.allocation", "gpus", 3), "decision[extra.allocation.{job}.gpus]"),
    ("oasis", "start", _set("start", {"1": -5}), "decision[start]"),
    # 4. oasis never compared extra.completion
    ("oasis", "completion-false", _claim_job("completion", lambda j, d: {j: 999}), "completion[extra.completion.{job}]"),
    ("oasis", "completion-bool", _claim_job("completion", lambda j, d: {j: True}), "completion[extra.completion.{job}]"),
    ("oasis", "completion-unknown", _set("extra.completion", {"ghost": 3}), "unknown-job[extra.completion.ghost]"),
    ("oasis", "completion-not-mapping", _set("extra.completion", "soon"), "domain[extra.completion]"),
    ("oasis", "completion-of-unfinished", _claim_job("completion", lambda j, d: {d["extra"]["unfinished"][0]: 2}),
     "completion[extra.completion.3]"),
    ("oasis", "rejected-admitted", _claim_job("rejected", lambda j, d: [j]), "admitted[{job}]"),
    ("oasis", "rejected-unknown", _set("extra.rejected", ["ghost"]), "unknown-job[extra.rejected.ghost]"),
    ("oasis", "extra-key", _set("extra.bogus", 1), "decision[extra.bogus]"),
    ("oasis", "entry-key", lambda d: _first_entry(d).update(gpus=4), "decision[schedule.{job}[0].gpus]"),
    # 1. hetero never read a job's ps
    ("hetero", "ps-unknown-server", _set_job("placement", "ps", {"NOSUCH": 9007199254740992}), "decision[placement.{job}.ps]"),
    ("hetero", "ps-known-server", _set_job("placement", "ps", {"V": 100, "P": 100}), "decision[placement.{job}.ps]"),
    ("hetero", "start", _set("start", {"A": -5}), "decision[start]"),
    ("hetero", "extra-key", _set("extra.completion", {"1": 999}), "decision[extra.completion]"),
    ("hetero", "extra-not-mapping", _set("extra", "claims"), "domain[extra]"),
    ("hetero", "jct-not-mapping", _set("extra.jct_s", [1400.0, 6000.0]), "domain[extra.jct_s]"),
    ("hetero", "fairness-not-mapping", _set("extra.fairness", 0.8), "domain[extra.fairness]"),
    ("hetero", "batch-not-mapping", _set("extra.batch", [[240]]), "domain[extra.batch]"),
    ("hetero", "jct-unknown-job", _claim_job("jct_s", lambda j, d: {**d["extra"]["jct_s"], "ghost": 1.0}),
     "unknown-job[extra.jct_s.ghost]"),
    ("hetero", "jct-not-number", _claim_job("jct_s", lambda j, d: {**d["extra"]["jct_s"], j: "fast"}), "jct[extra.jct_s.{job}]"),
    ("hetero", "fairness-unknown", _claim_job("fairness", lambda j, d: {**d["extra"]["fairness"], "gini": 0.1}),
     "fairness[extra.fairness.gini]"),
    ("hetero", "batch-unknown-job", _claim_job("batch", lambda j, d: {**d["extra"]["batch"], "ghost": {"K": [1]}}),
     "unknown-job[extra.batch.ghost]"),
    ("hetero", "entry-not-mapping", _set("placement.A", ["V"]), "domain[placement.A]"),
    # 4. locality skipped non-mapping claims and never read extra.unfinished
    ("locality", "start", _set("start", {"A": -5}), "decision[start]"),
    ("locality", "extra-not-mapping", _set("extra", ["completion"]), "domain[extra]"),
    ("locality", "completion-not-mapping", _set("extra.completion", [2, 1]), "domain[extra.completion]"),
    ("locality", "completion-unknown", _claim_job("completion", lambda j, d: {**d["extra"]["completion"], "ghost": 1}),
     "unknown-job[extra.completion.ghost]"),
    ("locality", "unfinished-finishes", _claim_job("unfinished", lambda j, d: [j]), "unfinished[extra.unfinished.{job}]"),
    ("locality", "unfinished-unknown", _set("extra.unfinished", ["ghost"]), "unknown-job[extra.unfinished.ghost]"),
    ("locality", "unfinished-not-list", _set("extra.unfinished", "A"), "domain[extra.unfinished]"),
    ("locality", "rejected-finishes", _claim_job("rejected", lambda j, d: [j]), "rejected[extra.rejected.{job}]"),
    ("locality", "migrations-false", _claim_job("migrations", lambda j, d: {j: 7}), "migrations[extra.migrations.{job}]"),
    ("locality", "migrations-not-mapping", _set("extra.migrations", 0.5), "domain[extra.migrations]"),
    ("locality", "extra-key", _set("extra.bogus", {"A": 1}), "decision[extra.bogus]"),
    ("locality", "entry-key", lambda d: _first_entry(d).update(gpus=4), "decision[schedule.{job}[0].gpus]"),
    # 2. harmony never read schedule, admitted or extra
    ("harmony", "schedule", _set("schedule", {"NOSUCH": [{"slot": -5, "workers": {"NOSUCH": 9007199254740992}}]}),
     "decision[schedule]"),
    ("harmony", "admitted", _set("admitted", ["x", "x"]), "decision[admitted]"),
    ("harmony", "extra", _set("extra", {"x": 1}), "decision[extra]"),
    ("harmony", "entry-key", _set_job("placement", "gpus", {"s/0": 1}, "placement"), "decision[placement.{job}.gpus]"),
]


@pytest.mark.parametrize("family, case, mutate, expected", CASES, ids=[f"{f}-{c}" for f, c, _, _ in CASES])
def test_nonsense_in_any_part_is_a_named_violation(family, case, mutate, expected):
    instance, solution = _solved(family)
    assert solution.decision is not None
    clean = check_solution(instance, solution)
    assert clean.feasible, clean.violations
    broken = copy.deepcopy(solution)
    decision = broken.decision
    placed = "placement" if family == "harmony" else "admitted"
    job = _first(decision, placed)
    mutate(decision)
    result = check_solution(instance, broken)
    found = [str(v) for v in result.violations]
    assert not result.feasible, f"{family} {case}: nonsense accepted as feasible"
    assert any(v.startswith(expected.format(job=job)) for v in found), found
    assert all(v.rule != "malformed" for v in result.violations), found


def _audit_file(family: str, mutate: Callable[[dict[str, Any]], None], tmp_path) -> tuple[str, str]:
    name, _ = TOYS[family]
    _, solution = _solved(family)
    doc = copy.deepcopy(solution.to_dict())
    mutate(doc["decision"])
    path = tmp_path / f"{family}.json"
    path.write_text(json.dumps(doc))
    return str(ROOT / "instances" / name), str(path)


@pytest.mark.parametrize("family, mutate, where", [
    ("hetero", _set("placement.A.ps", {"NOSUCH": 9007199254740992}), "decision[placement.A.ps]"),
    ("harmony", lambda d: d.update(schedule={"NOSUCH": [{"slot": -5, "workers": {"NOSUCH": 9007199254740992}}]},
                                   admitted=["x", "x"]), "decision[admitted]"),
    ("packing", _set("start", {"zzz": -5}), "decision[start]"),
    ("oasis", _set("extra.completion", {"1": 999}), "completion[extra.completion.1]"),
], ids=["hetero-ps", "harmony-schedule-admitted", "packing-start", "oasis-completion"])
def test_cli_check_refuses_the_audited_files(family, mutate, where, tmp_path, run):
    instance, path = _audit_file(family, mutate, tmp_path)
    code, out, err = run("check", instance, path)
    assert code == 1, (out, err)
    assert where in out
