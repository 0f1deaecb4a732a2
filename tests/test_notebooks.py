"""Every notebook runs top to bottom (executed, not just parsed)."""

from __future__ import annotations

import time

import pytest

from .conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path):
    nbformat = pytest.importorskip("nbformat", reason="notebooks need the test extra (nbformat, nbclient, ipykernel)")
    nbclient = pytest.importorskip("nbclient", reason="notebooks need the test extra (nbformat, nbclient, ipykernel)")
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert time.perf_counter() - start < 120


def test_there_are_notebooks():
    assert any(p.stem == "smd" for p in NOTEBOOKS)
