"""The catalog's Gavel figures are the output of ``mlsched_opt.traces.gavel``: every figure of
Gavel's throughput file is in the catalog, regenerating reproduces ``models/`` byte for byte, bad
input is refused before anything is written, and the catalog's other readers see the same sets."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pytest

from mlsched_opt.errors import UserError
from mlsched_opt.io.catalog import default_catalog_dir, load_catalog
from mlsched_opt.io.shared_data import shared_data_dir
from mlsched_opt.traces.gavel import GAVEL_FILE, gavel_entries, import_catalog

MODELS = Path(__file__).resolve().parents[1] / "models"
#: Gavel model -> (catalog entry, the batch size that entry stands for); written out here, not
#: imported, so that the test checks the module instead of repeating it
FAMILIES = {"A3C": ("a3c", 1), "CycleGAN": ("cyclegan", 1), "LM": ("lm", 20), "Recommendation": ("recommendation", 2048),
            "ResNet-18": ("resnet18", 32), "ResNet-50": ("resnet50", 64), "Transformer": ("transformer", 64)}
GAVEL_WORLD = ["a3c", "cyclegan", "lm", "recommendation", "resnet18", "resnet50", "transformer"]


@pytest.fixture(scope="module")
def data() -> Path:
    found = shared_data_dir()
    if found is None:
        pytest.skip("shared data folder not found (../shared/data beside the repository, or $MLSCHED_SHARED_DATA): "
                    "the Gavel catalog is not checked against its source")
    return found  # present: a missing or broken Gavel file fails the tests below


@pytest.fixture(scope="module")
def gavel(data: Path) -> dict:
    return json.loads((data / GAVEL_FILE).read_text())


def _entry(job_type: str) -> tuple[str, int]:
    m = re.fullmatch(r"(.+) \(batch size (\d+)\)", job_type)
    family, batch = (m.group(1), int(m.group(2))) if m else (job_type, 1)
    base, base_batch = FAMILIES[family]
    return (base if batch == base_batch else f"{base}-bs{batch}"), batch


def _gavel_rows(doc: dict) -> dict[tuple[str, int, str], dict]:
    rows = [r for r in doc.get("throughput", []) if "simulation_throughputs.json" in r["source"]]
    keyed = {(r["gpu_model"], r["gpus"], r["placement"]): r for r in rows}
    assert len(keyed) == len(rows), f"{doc['name']}: two Gavel rows for the same GPU, scale and placement"
    return keyed


def test_every_gavel_figure_is_in_the_catalog(gavel):
    catalog = load_catalog()
    seen: dict[str, set] = {}
    checked = 0
    for worker, table in gavel.items():
        spread = worker.endswith("_unconsolidated")
        gpu = worker.removesuffix("_unconsolidated").upper()
        for key, entry in table.items():
            job_type, scale = ast.literal_eval(key)
            name, batch = _entry(job_type)
            assert name in catalog, f"Gavel job type {job_type!r} has no catalog entry {name!r}"
            rows = _gavel_rows(catalog[name].data)
            figure = entry["null"]
            cell = (gpu, scale, "spread" if spread else "consolidated")
            if figure == 0:  # Gavel's "not run": no row
                assert cell not in rows, (name, cell)
            elif spread and scale == 1 and figure == table_figure(gavel, worker.removesuffix("_unconsolidated"), key):
                # one GPU is never spread: the "unconsolidated" 1-GPU figure is the consolidated one
                assert cell not in rows, (name, cell)
                assert rows[(gpu, 1, "consolidated")]["steps_per_s"] == round(figure, 6)
            else:
                row = rows[cell]
                assert row["steps_per_s"] == round(figure, 6), (name, cell, row["steps_per_s"], figure)
                assert abs(row["steps_per_s"] - figure) <= 5e-7
                assert row["batch_size"] == batch
                assert row["source"].endswith(f': {worker}["{key}"]'), row["source"]
                seen.setdefault(name, set()).add(cell)
            checked += 1
    assert checked == sum(len(t) for t in gavel.values()) == 492
    # and nothing else: every Gavel row of the catalog is one of the file's figures
    for name in catalog:
        assert set(_gavel_rows(catalog[name].data)) == seen.get(name, set()), name
    assert len(seen) == len({ast.literal_eval(k)[0] for t in gavel.values() for k in t}) == 26


def table_figure(gavel: dict, worker: str, key: str) -> float | None:
    entry = gavel.get(worker, {}).get(key)
    return entry["null"] if entry else None


def test_regenerating_reproduces_the_repository_catalog(data, tmp_path):
    lines = import_catalog(data, tmp_path, MODELS)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert len(written) == len(lines) == 26
    for name in written:
        assert (tmp_path / name).read_bytes() == (MODELS / name).read_bytes(), f"models/{name} is not the importer's output"
    gavel_named = sorted(f"{n}.toml" for n in load_catalog(MODELS) if _gavel_rows(load_catalog(MODELS)[n].data))
    assert written == gavel_named
    # into the catalog itself: nothing changes, and the second run says so
    assert all(line.startswith("unchanged ") for line in import_catalog(data, tmp_path, MODELS))


def test_batch_size_entries_copy_only_batch_independent_fields(data):
    docs = gavel_entries(data)
    assert len(docs) == 26 and set(GAVEL_WORLD) <= set(docs)
    for name, doc in docs.items():
        base = re.sub(r"-bs\d+$", "", name)
        if base == name:
            continue
        base_doc = docs[base]
        batch = int(name.rsplit("-bs", 1)[1])
        assert doc["title"] == f"{base_doc['title']}, batch size {batch}"
        for key in ("task", "dataset", "size", "layers"):
            assert doc.get(key) == base_doc.get(key), (name, key)
        assert "demand" not in doc and "interference" not in doc, name
        assert {r["batch_size"] for r in doc["throughput"]} == {batch}


def test_the_catalogs_other_readers_see_the_same_workloads():
    """Adding 19 entries must not change what the generators draw or the worlds' types."""
    from mlsched_opt.problems.generation import catalog_models_with_demand
    from mlsched_opt.problems.harmony.gavel_fit import gavel_types
    from mlsched_opt.problems.harmony.world import interference_types
    from mlsched_opt.problems.smd.generate import catalog_models

    catalog = load_catalog()
    assert sorted(gavel_types(catalog)) == GAVEL_WORLD
    assert catalog_models_with_demand(catalog) == [
        "a3c", "bert", "ctc", "cyclegan", "deepspeech2", "inception-bn", "lm", "ncf", "recommendation", "resnet18",
        "resnet50", "resnext110", "seq2seq", "transformer", "vgg16", "yolov3"]
    assert catalog_models(catalog) == ["bert", "lm", "recommendation", "resnet18", "resnet50", "transformer"]
    assert interference_types(catalog) == ["ctc", "inception-bn", "resnet50", "resnext110", "seq2seq", "vgg16"]


def _broken_copy(data: Path, tmp_path: Path, edit) -> Path:
    folder = tmp_path / "data"
    (folder / "gavel").mkdir(parents=True)
    doc = json.loads((data / GAVEL_FILE).read_text())
    edit(doc)
    (folder / GAVEL_FILE).write_text(json.dumps(doc))
    return folder


def _set_figure(doc, worker, key, value):
    doc[worker][key]["null"] = value


def _rename_key(doc, worker, key, new):
    doc[worker][new] = doc[worker].pop(key)


KEY = "('ResNet-50 (batch size 64)', 4)"


@pytest.mark.parametrize("edit,named", [
    (lambda d: _set_figure(d, "v100", KEY, "fast"), KEY),
    (lambda d: _set_figure(d, "p100_unconsolidated", KEY, None), KEY),
    (lambda d: _set_figure(d, "k80", KEY, -1.0), KEY),
    (lambda d: _rename_key(d, "v100", KEY, "('ResNet-50 (batch size 64)', 4"), "('ResNet-50 (batch size 64)', 4"),
    (lambda d: _rename_key(d, "v100", KEY, "__import__('os').getcwd()"), "__import__('os').getcwd()"),
    (lambda d: _rename_key(d, "v100", KEY, "('ResNet-50 (batch size 64)', 'four')"), "('ResNet-50 (batch size 64)', 'four')"),
    (lambda d: _rename_key(d, "v100", KEY, "('VGG-19 (batch size 64)', 4)"), "('VGG-19 (batch size 64)', 4)"),
    (lambda d: _set_figure(d, "v100", KEY, float("nan")), KEY),
    (lambda d: d["v100"].update({"('ResNet-50 (batch size 64)',4)": d["v100"][KEY]}), "('ResNet-50 (batch size 64)',4)"),
], ids=["string", "null", "negative", "unparsable", "expression", "scale-not-int", "unknown-model", "nan", "same-key-twice"])
def test_a_broken_gavel_file_is_refused_and_nothing_is_written(data, tmp_path, edit, named):
    broken = _broken_copy(data, tmp_path, edit)
    out = tmp_path / "out"
    out.mkdir()
    (out / "resnet50.toml").write_text("untouched")
    with pytest.raises(UserError) as exc:
        import_catalog(broken, out)
    assert exc.value.file == str(broken / GAVEL_FILE)
    assert named in (exc.value.field or ""), exc.value.field
    assert [p.name for p in out.iterdir()] == ["resnet50.toml"] and (out / "resnet50.toml").read_text() == "untouched"
    with pytest.raises(UserError):
        gavel_entries(broken)


def test_a_missing_gavel_file_is_refused(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(UserError) as exc:
        import_catalog(tmp_path, out)
    assert exc.value.file == str(tmp_path / GAVEL_FILE)
    assert not out.exists()


def test_regeneration_keeps_hand_curated_rows_and_sections(data, tmp_path):
    """A catalog whose Gavel rows were lost gets all of them back; its Pollux row and sections stay."""
    catalog_dir = tmp_path / "catalog"
    shutil.copytree(default_catalog_dir(), catalog_dir, ignore=shutil.ignore_patterns("*.pt"))
    text = (catalog_dir / "resnet50.toml").read_text()
    blocks = text.split("\n\n[[throughput]]\n")
    kept = [b for b in blocks[1:] if "simulation_throughputs.json" not in b]
    (catalog_dir / "resnet50.toml").write_text("\n\n[[throughput]]\n".join([blocks[0], *kept]))
    import_catalog(data, catalog_dir, catalog_dir)
    assert (catalog_dir / "resnet50.toml").read_bytes() == (MODELS / "resnet50.toml").read_bytes()
