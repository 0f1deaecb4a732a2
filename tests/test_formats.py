"""Instance format: schema, JSON/TOML equivalence, the TOML writer, and our validator against jsonschema."""

from __future__ import annotations

import copy
import json
import tomllib

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from mlsched_opt.io import from_document, load_instance, read_document
from mlsched_opt.io.files import dump_toml
from mlsched_opt.io.schema import SchemaViolation, load_schema, validate
from mlsched_opt.problems import GenerateSpec, get_family

from .conftest import DEMO, ROOT


@pytest.mark.parametrize("name", ["instance", "solution", "workload"])
def test_schemas_are_valid_draft_2020_12(name):
    jsonschema.Draft202012Validator.check_schema(load_schema(name))


def test_json_and_toml_of_one_instance_are_the_same_instance(tmp_path):
    doc = read_document(DEMO)
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(doc, indent=1))
    a, b = load_instance(DEMO), load_instance(path)
    assert a.sha256 == b.sha256
    assert [s.capacity for s in a.servers] == [s.capacity for s in b.servers]
    assert [(j.id, j.worker_demand, j.workers) for j in a.jobs] == [(j.id, j.worker_demand, j.workers) for j in b.jobs]


def test_every_shipped_instance_is_valid():
    files = sorted((ROOT / "instances").glob("*.*"))
    assert files, "no instances shipped"
    for path in files:
        load_instance(path)


def test_groups_expand_and_extra_resources_count(catalog):
    doc = {"format": "mlsched-instance/1", "cluster": {"servers": [
        {"name": "a", "count": 3, "capacity": {"gpu": 2, "extra": {"nvme_tb": 4}}},
        {"name": "b", "role": "ps", "capacity": {"cpu": 8}}]},
        "jobs": [{"id": "x", "architecture": "allreduce", "workers": {"count": 2},
                  "demand": {"worker": {"gpu": 1, "extra": {"nvme_tb": 1}}}}]}
    inst = from_document(doc, catalog=catalog)
    assert [s.name for s in inst.servers] == ["a/0", "a/1", "a/2", "b"]
    assert inst.resource_names() == ["gpu", "cpu", "nvme_tb"]
    assert inst.capacity_matrix().tolist() == [[2, 0, 4], [2, 0, 4], [2, 0, 4], [0, 8, 0]]


def test_utilities():
    from mlsched_opt.io import Utility

    sig = Utility("sigmoid", {"gamma1": 10, "gamma2": 0, "gamma3": 5})
    assert sig(0) == sig(100) == 5.0  # time-insensitive: gamma1 / 2
    crit = Utility("sigmoid", {"gamma1": 10, "gamma2": 5, "gamma3": 5})
    assert crit(3) > 9.99 and crit(7) < 0.01 and crit(5) == 5.0
    assert Utility("linear", {"value": 10, "slope": 3})(4) == 0.0
    assert Utility("step", {"value": 7, "deadline": 2})(2) == 7.0


def _generated_docs():
    fam, out = get_family("packing"), []
    from mlsched_opt.io import load_catalog

    for seed in range(5):
        out.append(fam.generate(GenerateSpec(jobs=6, servers=3, seed=seed, slots=5), load_catalog()))
    return out


def _mutations(doc):
    yield "demo", doc
    for path, value in [
        (("jobs", 0, "weight"), -1), (("jobs", 0, "workers"), {"count": 1, "max": 3}), (("jobs", 0, "work"), {"epochs": 2}),
        (("jobs", 0, "work"), {"iterations": 10}), (("jobs", 0, "utility"), {"kind": "linear", "value": 1, "slope": 0.5}),
        (("cluster", "servers", 0, "role"), "gpu"), (("cluster", "servers"), []), (("time",), {"slots": 0}),
        (("jobs", 1, "gpu_models"), []), (("jobs", 1, "id"), ""), (("cluster", "servers", 0, "capacity", "extra"), {"x": "1"}),
        # the number domains: every numeric field is bounded by 2**53 in magnitude, in the files too
        (("jobs", 0, "weight"), 2**60), (("jobs", 0, "weight"), 2**53), (("jobs", 0, "weight"), 1e300),
        (("cluster", "servers", 0, "capacity", "extra"), {"x": 1e300}), (("time",), {"slots": 2**53 + 1}),
        (("cluster", "servers", 0, "count"), 2**53 + 1), (("jobs", 0, "arrival_slot"), -(2**70)),
        (("jobs", 0, "utility"), {"kind": "sigmoid", "gamma1": 1, "gamma2": 1, "gamma3": -1e300}),
    ]:
        d = copy.deepcopy(doc)
        node = d
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        yield str(path), d


@pytest.mark.parametrize("doc", [read_document(DEMO)] + _generated_docs())
def test_our_validator_agrees_with_jsonschema(doc):
    schema = load_schema("instance")
    reference = jsonschema.Draft202012Validator(schema)
    for name, variant in _mutations(doc):
        ours_ok = True
        try:
            validate(variant, schema)
        except SchemaViolation:
            ours_ok = False
        assert ours_ok == reference.is_valid(variant), name


def test_validator_refuses_keywords_it_does_not_implement():
    with pytest.raises(ValueError, match="not supported"):
        validate({}, {"type": "object", "patternProperties": {}})


_keys = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=8)
_scalars = st.one_of(st.integers(-10**9, 10**9), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10), st.booleans())
_inline = st.recursive(_scalars, lambda inner: st.one_of(st.lists(_scalars, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
                       max_leaves=6)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_keys, st.one_of(_inline, st.dictionaries(_keys, _inline, max_size=3),
                                        st.lists(st.dictionaries(_keys, _inline, min_size=1, max_size=3), min_size=1, max_size=3)),
                       max_size=5))
def test_toml_writer_round_trips(doc):
    assert tomllib.loads(dump_toml(doc)) == doc


@pytest.mark.parametrize("name", ["instance", "solution", "workload"])
def test_every_numeric_field_declares_a_bounded_domain(name):
    """A number without a declared domain is how hostile values (1e308, 2**70) reached the models."""
    unbounded = []

    def walk(node, path):
        if isinstance(node, dict):
            if node.get("type") in ("number", "integer"):
                lo = node.get("minimum", node.get("exclusiveMinimum"))
                if lo is None or "maximum" not in node or lo < -(2**53) or node["maximum"] > 2**53:
                    unbounded.append(path)
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}/{i}")

    walk(load_schema(name), "#")
    assert unbounded == []


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_are_refused_where_jsonschema_would_let_nan_through(value):
    """jsonschema compares NaN with the bounds (always False) and accepts it; ours must not."""
    doc = read_document(DEMO)
    doc["jobs"][0]["weight"] = value
    with pytest.raises(SchemaViolation) as exc:
        validate(doc, load_schema("instance"))
    assert exc.value.path == "jobs[0].weight"
