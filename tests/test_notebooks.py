"""Every notebook runs top to bottom (executed, not just parsed), is stored executed, with its plots, and works through the facade.

`python notebooks/execute.py` re-executes them all and stores their outputs.
"""

from __future__ import annotations

import ast
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
#: what a notebook reaches through the facade (`import mlsched_opt as ms`: ms.load, ms.solve, ms.compare, ms.check,
#: ms.generate, ms.family) and never imports itself; the registry is mlsched_opt.problems, not a family's own modules
BEHIND_THE_FACADE = ("mlsched_opt.io", "mlsched_opt.solvers", "mlsched_opt.bench", "mlsched_opt.problems", "mlsched_opt.checking",
                     "mlsched_opt.report", "mlsched_opt.pipeline", "mlsched_opt.facade")


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


def imported_modules(source):
    """Every module a cell's code imports (``from mlsched_opt import io`` counts as ``mlsched_opt.io``), and
    whether it imports the facade as ``ms``; IPython's magics and shell lines are not Python and are left out."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    modules, facade = [], False
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            modules += [a.name for a in node.names]
            facade |= any(a.name == "mlsched_opt" and a.asname == "ms" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules += [f"{node.module}.{a.name}" for a in node.names] if node.module == "mlsched_opt" else [node.module]
    return modules, facade


def behind_the_facade(module):
    """A module of the facade's work; a family's own modules (``mlsched_opt.problems.<family>.<module>``: an
    algorithm's internals a notebook explains) and ``mlsched_opt.traces`` (the trace readers) are not."""
    parts = module.split(".")
    if parts[:2] == ["mlsched_opt", "problems"] and len(parts) >= 4 and parts[2] in REGISTRY:
        return False
    return any(module == m or module.startswith(m + ".") for m in BEHIND_THE_FACADE)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_uses_the_facade(path):
    found = [imported_modules("".join(c["source"])) for c in code_cells(path)]
    assert any(facade for _, facade in found), f"{path.name} does not `import mlsched_opt as ms`"
    behind = sorted({m for modules, _ in found for m in modules if behind_the_facade(m)})
    assert not behind, \
        f"{path.name} imports {', '.join(behind)}: use the facade (ms.load, ms.solve, ms.compare, ms.check, ms.generate, ms.family)"


def test_the_facade_rule_tells_internals_from_the_facade_s_work():
    modules, facade = imported_modules("\n".join([
        "%matplotlib inline", "import mlsched_opt as ms", "from mlsched_opt import io", "from mlsched_opt.problems import get_family",
        "import mlsched_opt.bench.compare", "from mlsched_opt.problems.locality.pcilp import patterns",
        "from mlsched_opt.traces.sources import philly_jobs"]))
    assert facade
    assert [m for m in modules if behind_the_facade(m)] == ["mlsched_opt.io", "mlsched_opt.problems", "mlsched_opt.bench.compare"]
    assert not behind_the_facade("mlsched_opt.problems.smd.view") and behind_the_facade("mlsched_opt.problems.base")
    assert behind_the_facade("mlsched_opt.problems.smd")  # the family's record is the registry's: ms.family("smd")


def test_every_family_has_a_notebook():
    assert {p.stem for p in NOTEBOOKS} >= set(REGISTRY), "one notebook per problem family (notebooks/<family>.ipynb)"
