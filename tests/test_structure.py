"""The package's structure (issue 33): no family imports another, no import cycle (function-local
imports counted), and the algorithms of every family load no Pyomo.  Read from the source by AST:
an import inside a function counts as much as one at the top, except where a test says otherwise."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent / "mlsched_opt"
FAMILIES = sorted(p.name for p in (ROOT / "problems").iterdir() if (p / "__init__.py").is_file())
#: the modules that must load no Pyomo when imported: every family's algorithms
ALGORITHMS = ("methods", "baselines", "online")


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_name(p): p for p in ROOT.rglob("*.py")}


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.AST, top_only: bool) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` (none under ``if TYPE_CHECKING``; with ``top_only``, none inside a function)."""
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking(child) or (top_only and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append(child)
            visit(child)

    visit(tree)
    return out


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The absolute names an import statement loads (a package's submodule named in ``from pkg import sub`` too)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        package = module if _modules()[module].name == "__init__.py" else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{node.module}" if node.module else package
    else:
        base = node.module or ""
    return [base] + [f"{base}.{a.name}" for a in node.names]


def _resolve(name: str) -> str | None:
    """The module of ours ``name`` is (or lies in), else ``None``."""
    while name and name not in _modules():
        name = name.rpartition(".")[0]
    return name or None


@cache
def _edges(top_only: bool) -> dict[str, frozenset[str]]:
    out = {}
    for module, path in _modules().items():
        found = set()
        for node in _imports(ast.parse(path.read_text()), top_only):
            for target in _targets(module, node):
                hit = _resolve(target) if target.startswith("mlsched_opt") else None
                if hit and hit != module:
                    found.add(hit)
        out[module] = frozenset(found)
    return out


def _family(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "problems" and parts[2] in FAMILIES else None


def test_no_family_imports_another():
    borrowed = sorted(f"{m} -> {t}" for m, targets in _edges(False).items() for t in targets
                      if _family(m) and _family(t) and _family(m) != _family(t))
    assert borrowed == [], "shared code belongs below the families (problems/*.py, traces/):\n" + "\n".join(borrowed)


def test_no_import_cycle_counting_function_local_imports():
    graph = nx.DiGraph([(m, t) for m, targets in _edges(False).items() for t in targets
                        # importing a submodule imports its package first: not an edge of the cycle we look for
                        if not m.startswith(t + ".")])
    cycles = sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)
    assert cycles == [], "\n".join(" <-> ".join(c) for c in cycles)


def _loads_when_imported(module: str) -> set[str]:
    """Every module (ours and third-party top-level names) importing ``module`` loads, by its top-level imports and its packages'."""
    seen: set[str] = set()
    outside: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parent = m.rpartition(".")[0]
        if parent in _modules():
            todo.append(parent)
        for node in _imports(ast.parse(_modules()[m].read_text()), top_only=True):
            for target in _targets(m, node):
                ours = _resolve(target) if target.startswith("mlsched_opt") else None
                if ours:
                    todo.append(ours)
                elif not target.startswith("."):
                    outside.add(target.split(".")[0])
    return outside


@pytest.mark.parametrize("module", [f"mlsched_opt.problems.{f}.{k}" for f in FAMILIES for k in ALGORITHMS
                                    if (ROOT / "problems" / f / f"{k}.py").is_file()])
def test_an_algorithm_module_loads_no_pyomo(module):
    assert "pyomo" not in _loads_when_imported(module), (
        f"{module} imports Pyomo when imported: write its answer with the family's decision.py, and import "
        "the formulation inside the exact method's function")


def _algorithm_modules() -> list[str]:
    """The module of every registered algorithm (heuristic, online, baseline), read from its lazy reference."""
    from mlsched_opt.problems import REGISTRY, MethodKind

    return sorted({m.run.target.partition(":")[0] for f in REGISTRY.values() for m in f.algorithms
                   if m.kind not in (MethodKind.EXACT, MethodKind.ORACLE) and hasattr(m.run, "target")})


@pytest.mark.parametrize("module", _algorithm_modules())
def test_every_registered_algorithm_loads_no_pyomo(module):
    """Wherever an algorithm lives (packing's lns.py and pop.py, locality's priority.py), importing it
    loads no Pyomo: only the exact methods build the formulation."""
    assert "pyomo" not in _loads_when_imported(module), f"{module} reaches Pyomo when imported"


def test_the_checker_sees_a_cycle_and_a_borrowing():
    # the reader itself: a function-local import closing a loop is an edge, a TYPE_CHECKING one is not
    tree = ast.parse("def f():\n    from .b import x\nif TYPE_CHECKING:\n    from .c import y\n")
    assert [ast.unparse(n) for n in _imports(tree, top_only=False)] == ["from .b import x"]
    assert _imports(tree, top_only=True) == []
    assert _family("mlsched_opt.problems.oasis.prices") == "oasis" and _family("mlsched_opt.problems.pricing") is None
