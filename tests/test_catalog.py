"""The workload catalog: enough workloads, every figure sourced, and the figures equal to the data they cite."""

from __future__ import annotations

import ast
import csv
import json
import re

import pytest

from mlsched_opt.errors import InstanceError
from mlsched_opt.io import load_catalog

from .conftest import shared_data


@pytest.fixture
def data():
    found = shared_data()
    if found is None:
        pytest.skip("../shared/data not found beside the repository (set MLSCHED_SHARED_DATA)")
    return found


def test_at_least_six_workloads_each_with_sourced_figures(catalog):
    assert len(catalog) >= 6
    for name in catalog:
        data = catalog[name].data
        for group in ("size", "layers", "interference", "demand"):
            if group in data:
                assert data[group]["source"].strip(), (name, group)
        for row in data.get("throughput", []):
            assert row["source"].strip(), name
    measured = [n for n in catalog if catalog[n].data.get("throughput")]
    assert len(measured) >= 6


@pytest.mark.parametrize("name,total", [("vgg16", 138_357_544), ("resnet50", 25_557_032)])
def test_layer_profiles_add_up_to_the_model_size(catalog, name, total):
    layers = catalog[name].data["layers"]
    assert len(layers["names"]) == len(layers["parameters"])
    assert sum(layers["parameters"]) == total
    assert catalog[name].data["size"]["parameters_m"] == pytest.approx(total / 1e6, abs=1e-6)
    assert catalog[name].gradient_mb == pytest.approx(total * 4 / 1e6, rel=1e-6)


def test_gavel_figures_match_the_data(catalog, data):
    gavel = json.loads((data / "gavel" / "simulation_throughputs.json").read_text())
    checked = 0
    for name in catalog:
        for row in catalog[name].data.get("throughput", []):
            m = re.search(r"simulation_throughputs\.json: (\w+)\[\"(.+)\"\]", row["source"])
            if not m:
                continue
            section, key = m.group(1), m.group(2)
            _model, scale = ast.literal_eval(key)
            assert scale == row["gpus"]
            assert section.split("_")[0] == row["gpu_model"].lower()
            assert ("unconsolidated" in section) == (row["placement"] == "spread")
            assert gavel[section][key]["null"] == pytest.approx(row["steps_per_s"], rel=1e-5)
            checked += 1
    assert checked >= 21


def test_pollux_figures_match_the_data(catalog, data):
    checked = 0
    for name in catalog:
        for row in catalog[name].data.get("throughput", []):
            m = re.search(r"traces/(\w+)/placements\.csv: placement (\d+), local_bsz (\d+)", row["source"])
            if not m:
                continue
            with open(data / "pollux" / m.group(1) / "placements.csv") as fh:
                hits = [r for r in csv.DictReader(fh) if r["placement"] == m.group(2) and r["local_bsz"] == m.group(3)]
            assert len(hits) == 1
            assert 1 / float(hits[0]["step_time"]) == pytest.approx(row["steps_per_s"], rel=1e-5)
            assert row["batch_size"] == int(m.group(3))
            checked += 1
    assert checked >= 6


def test_throughput_lookup(catalog):
    w = catalog["resnet50"]
    row = next(r for r in w.data["throughput"] if r["gpu_model"] == "V100" and r["gpus"] == 1)
    assert w.throughput_samples_per_s("V100") == pytest.approx(row["steps_per_s"] * 64)
    assert w.throughput_samples_per_s("A100") is None


def test_broken_catalog_entry_is_named(tmp_path):
    (tmp_path / "x.toml").write_text('name = "x"\ntitle = "X"\n[size]\nparameters_m = 1\n')
    with pytest.raises(InstanceError) as exc:
        load_catalog(tmp_path)
    assert exc.value.field == "size.gradient_mb" and str(tmp_path / "x.toml") in exc.value.message()


def test_catalog_name_must_match_file(tmp_path):
    (tmp_path / "y.toml").write_text('name = "x"\ntitle = "X"\n')
    with pytest.raises(InstanceError, match="must match the file name"):
        load_catalog(tmp_path)


def _user_catalog(tmp_path):
    """A user catalog: a new workload ``mine`` (bert's figures) and a replacement ``bert`` entry."""
    from .conftest import ROOT

    user = tmp_path / "mine"
    user.mkdir()
    bert = (ROOT / "models" / "bert.toml").read_text()
    (user / "mine.toml").write_text(bert.replace('name = "bert"', 'name = "mine"', 1))
    (user / "bert.toml").write_text(re.sub(r'(?m)^title = .*$', 'title = "my BERT"', bert, count=1))
    return user


def test_the_shipped_catalog_is_the_checkouts_models_folder_and_holds_the_policy():
    from mlsched_opt.io.catalog import catalog_dirs, shipped_catalog_dir
    from mlsched_opt.problems.harmony.rl.policy import DEFAULT_MODEL

    from .conftest import ROOT

    assert shipped_catalog_dir() == ROOT / "models"
    assert DEFAULT_MODEL == ROOT / "models" / "harmony-drl.pt"
    assert catalog_dirs(ROOT / "models") == (ROOT / "models",)  # naming the shipped catalog adds no layer


def test_a_user_catalog_lies_on_top_of_the_shipped_one(tmp_path, monkeypatch, catalog):
    user = _user_catalog(tmp_path)
    mine = load_catalog(user)
    assert set(mine) == set(catalog) | {"mine"}
    assert mine["bert"].data["title"] == "my BERT" and catalog["bert"].data["title"] != "my BERT"
    assert mine["resnet50"] is catalog["resnet50"]
    assert mine.directory == user.resolve() and mine.directories == (catalog.directory, user.resolve())
    assert load_catalog(mine.directory) is mine  # what harmony's world cache relies on
    monkeypatch.setenv("MLSCHED_CATALOG", str(user))
    assert load_catalog() is mine
    with pytest.raises(InstanceError, match="unknown model 'minee'") as exc:
        mine.lookup("minee", None, "jobs[0].model")
    assert "did you mean mine" in exc.value.message() and str(user.resolve()) in exc.value.message()


def test_the_cli_reads_a_user_catalog_from_the_option_and_the_environment(tmp_path, monkeypatch, run):
    from .conftest import DEMO

    user = _user_catalog(tmp_path)
    inst = tmp_path / "demo-mine.toml"
    inst.write_text(DEMO.read_text().replace('model = "bert"', 'model = "mine"', 1))
    code, _, err = run("validate", inst)
    assert code == 2 and "unknown model 'mine'" in err
    code, _out, err = run("--catalog", user, "validate", inst)
    assert code == 0, err
    monkeypatch.setenv("MLSCHED_CATALOG", str(user))
    code, _out, err = run("validate", inst)
    assert code == 0, err
    code, _, err = run("--catalog", tmp_path / "nowhere", "validate", inst)
    assert code == 2 and "workload catalog directory not found" in err and str(tmp_path / "nowhere") in err
