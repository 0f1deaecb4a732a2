"""Every notebook runs top to bottom (executed, not just parsed), and is stored executed, with its plots.

`python notebooks/execute.py` re-executes them all and stores their outputs.
"""

from __future__ import annotations

import json
import re

import pytest

from mlsched_opt.io.shared_data import shared_data_dir
from mlsched_opt.problems import REGISTRY

from .conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
IDS = [p.stem for p in NOTEBOOKS]
#: notebooks that read the public traces of ../shared/data (skipped when the folder is absent)
NEEDS_DATA = {"real-traces"}
#: a backend that draws nothing in a notebook, chosen in code or by the environment
NON_INLINE = re.compile(r"matplotlib\.use\(|switch_backend\(|MPLBACKEND|%matplotlib\s+(?!inline\b)\w+|\bAgg\b", re.IGNORECASE)


def code_cells(path):
    """The stored code cells of a notebook (read as plain JSON: no Jupyter package needed)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [c for c in cells if c["cell_type"] == "code" and "".join(c["source"]).strip()]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_runs(path):
    nbformat = pytest.importorskip("nbformat", reason="notebooks need the test extra (nbformat, nbclient, ipykernel)")
    nbclient = pytest.importorskip("nbclient", reason="notebooks need the test extra (nbformat, nbclient, ipykernel)")
    if path.stem in NEEDS_DATA and shared_data_dir() is None:
        pytest.skip("../shared/data not found beside the repository (set MLSCHED_SHARED_DATA): notebook not run")
    nb = nbformat.read(path, as_version=4)
    # the timeout is a guard against a hung kernel, per cell, not a speed requirement
    nbclient.NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_is_stored_executed_with_plots(path):
    cells = code_cells(path)
    assert cells, f"{path.name} has no code"
    empty = [i for i, c in enumerate(cells) if not c.get("outputs")]
    assert not empty, f"{path.name}: code cells {empty} are stored without outputs (run: python notebooks/execute.py {path.stem})"
    assert [c.get("execution_count") for c in cells] == list(range(1, len(cells) + 1)), \
        f"{path.name} is not stored executed top to bottom in one kernel (run: python notebooks/execute.py {path.stem})"
    outputs = [o for c in cells for o in c["outputs"]]
    assert not [o for o in outputs if o.get("output_type") == "error"], f"{path.name} is stored with an error"
    assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.name} is stored without a figure"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_draws_inline(path):
    for cell in code_cells(path):
        source = "".join(cell["source"])
        assert not NON_INLINE.search(source), f"{path.name} selects a non-inline matplotlib backend:\n{source}"


def test_every_family_has_a_notebook():
    assert {p.stem for p in NOTEBOOKS} >= set(REGISTRY), "one notebook per problem family (notebooks/<family>.ipynb)"
