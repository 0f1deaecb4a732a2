"""The wheel works outside the checkout.

Builds the wheel from a copy of the working tree (the build leaves nothing in the checkout),
installs it into a fresh virtual environment with ``pip install WHEEL``, so that pip resolves
the wheel's declared dependencies there (from pip's cache after ``make setup-test``, else from
the package index), and runs that environment's ``mlsched`` from a folder outside the
repository.  The build runs without isolation when this environment has setuptools >= 77 (the
build requirement), else pip fetches setuptools.  PyTorch (the ``rl`` extra, about 700 MB) is
not installed a second time: the harmony test reaches this environment's copy through a
``.pth`` file added after the install, pointing at links to torch and its own dependencies
only, so it cannot stand in for a dependency the wheel fails to declare.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what the build reads: pyproject.toml's project, readme, license, packages and package-dir
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "mlsched_opt", "models", "instances")

pytestmark = pytest.mark.slow


def _setuptools_major() -> int:
    try:
        return int(version("setuptools").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return 0


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLSCHED_CATALOG", "PYTHONSAFEPATH")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", **extra)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, args))} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        path = ROOT / name
        (shutil.copytree(path, src / name, ignore=ignore) if path.is_dir() else shutil.copy2(path, src / name))
    isolation = ["--no-build-isolation"] if _setuptools_major() >= 77 else []
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(tmp / "dist"), str(src)],
         cwd=tmp, env=_env())
    (found,) = (tmp / "dist").glob("mlsched_opt-*.whl")
    return found


def _torch_only(folder: Path) -> Path:
    """A folder of links to torch and its own (non-extra) dependencies in this environment, and
    nothing else: on the fresh venv's path after its own site-packages, it cannot stand in for a
    dependency the wheel fails to declare (unless torch itself needs it)."""
    import re
    from importlib.metadata import distribution, packages_distributions

    wanted, todo = set(), ["torch"]
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in wanted:
            continue
        wanted.add(name)
        for req in distribution(name).requires or []:
            if "extra ==" not in req:
                todo.append(re.split(r"[\s;<>=!\[~(]", req, maxsplit=1)[0])
    modules = {m for m, dists in packages_distributions().items() if any(d.lower().replace("_", "-") in wanted for d in dists)}
    site = Path(distribution("torch").locate_file(""))
    folder.mkdir()
    for m in modules:
        for candidate in (site / m, site / f"{m}.py"):
            if candidate.exists():
                (folder / candidate.name).symlink_to(candidate)
    assert (folder / "torch").exists()
    return folder


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel and the dependencies pip resolved for it; its bin folder."""
    root = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", str(root)], cwd=root, env=_env())
    _run([str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", str(wheel)], cwd=root, env=_env(),
         timeout=900)
    return root / "bin"


def test_the_wheel_carries_the_catalog_the_policy_the_schemas_and_every_module(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    catalog = sorted(p.name for p in (ROOT / "models").iterdir() if p.suffix in (".toml", ".json", ".pt"))
    assert "harmony-drl.pt" in catalog and len(catalog) > 6
    assert {f"mlsched_opt/models/{n}" for n in catalog} <= names
    bundled = sorted(p.name for p in (ROOT / "instances").glob("*.toml"))
    assert "demo.toml" in bundled and {f"mlsched_opt/instances/{n}" for n in bundled} <= names
    assert {"mlsched_opt/py.typed", "mlsched_opt/io/instance.schema.json", "mlsched_opt/io/solution.schema.json",
            "mlsched_opt/io/workload.schema.json"} <= names
    # pyproject.toml lists the packages: a subpackage missing from that list would be missing here
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "mlsched_opt").rglob("*.py") if "__pycache__" not in p.parts}
    assert modules - names == set()
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    assert f"{info}/licenses/LICENSE" in names
    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    assert "License-Expression: MIT" in metadata and "Provides-Extra: notebook" in metadata
    assert "mlsched = mlsched_opt.entry:main" in zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()


def test_the_installed_wheel_validates_solves_and_checks_the_demo_outside_the_checkout(venv, tmp_path):
    env = _env()
    shutil.copy(ROOT / "instances" / "demo.toml", tmp_path / "demo.toml")
    python = [str(venv / "python"), "-m", "mlsched_opt"]

    where = _run([str(venv / "python"), "-c", "import mlsched_opt, mlsched_opt.io.catalog as c; "
                  "print(mlsched_opt.__file__); print(c.shipped_catalog_dir())"], tmp_path, env).stdout.split("\n")
    site = Path(where[0]).parents[1]
    assert site.is_relative_to(venv.parent) and not Path(where[0]).is_relative_to(ROOT), where  # the wheel's copy
    assert Path(where[1]) == site / "mlsched_opt" / "models", where
    assert "demo.toml: valid" in _run([str(venv / "mlsched"), "validate", "demo.toml"], tmp_path, env).stdout
    _run(python + ["solve", "demo.toml", "--method", "exact", "--solver", "highs", "--out", "exact.sol.json"], tmp_path, env)
    # `demo` (not demo.toml): the bundled instance by name
    assert "packing / ffd on demo: feasible" in _run(python + ["solve", "demo", "--method", "ffd", "--out", "ffd.sol.json"],
                                                     tmp_path, env).stdout
    assert (tmp_path / "ffd.sol.json").is_file()
    _run(python + ["check", "demo.toml", "exact.sol.json"], tmp_path, env)


def _python_block(page: Path, heading: str) -> str:
    """The first ``python`` block after ``heading`` on ``page``, as written."""
    text = page.read_text(encoding="utf-8")
    rest = text[text.index(heading):]
    start = rest.index("```python\n") + len("```python\n")
    return rest[start:rest.index("```", start)]


#: runs each block in an empty folder of its own, then `mlsched info`, in one interpreter (one start-up
#: and one import of the solvers instead of three)
_BLOCKS_RUNNER = """
import os, sys
from pathlib import Path
for n, block in enumerate(sys.argv[1:]):
    folder = Path(f"block{n}")
    folder.mkdir()
    os.chdir(folder)
    exec(compile(Path(block).read_text(encoding="utf-8"), block, "exec"), {"__name__": "__main__"})
    assert [p.name for p in Path().iterdir()] == ["ffd.sol.json"], list(Path().iterdir())
    os.chdir("..")
from mlsched_opt.cli import main
try:
    main(["info"])
except SystemExit as exc:
    assert not exc.code, exc.code
"""


def test_the_readme_and_getting_started_python_run_from_the_wheel_in_an_empty_folder(venv, tmp_path):
    """What a new user pastes first, as written, with nothing but the wheel: the bundled instances by
    name (ms.load("demo")), and `mlsched info` lists them."""
    blocks = [_python_block(ROOT / "README.md", "## From Python"),
              _python_block(ROOT / "docs" / "getting-started.md", "## A first solve from Python")]
    assert all('ms.load("demo")' in b for b in blocks), blocks
    files = []
    for n, block in enumerate(blocks):
        files.append(tmp_path / f"block{n}.py")
        files[-1].write_text(block, encoding="utf-8")
    (tmp_path / "run.py").write_text(_BLOCKS_RUNNER, encoding="utf-8")
    out = _run([str(venv / "python"), "run.py", *map(str, files)], tmp_path, _env()).stdout
    assert out.count("packing / ffd on demo: feasible") == 2, out
    assert "bundled instances" in out and "demo, harmony-40jobs" in out, out


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the rl extra (torch) is not installed")
def test_the_installed_wheel_runs_harmony_with_the_shipped_policy(venv, tmp_path):
    site = Path(_run([str(venv / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     tmp_path, _env()).stdout.strip())
    (site / "zz_torch_from_test_env.pth").write_text(str(_torch_only(tmp_path / "torch-only")) + "\n")
    shutil.copy(ROOT / "instances" / "harmony-toy.toml", tmp_path / "toy.toml")
    python = [str(venv / "python"), "-m", "mlsched_opt"]
    report = json.loads(_run(python + ["solve", "toy.toml", "--method", "drl", "--out", "drl.sol.json", "--json"],
                             tmp_path, _env()).stdout)
    assert f"model {site / 'mlsched_opt' / 'models' / 'harmony-drl.pt'};" in report["message"]  # the shipped policy
    _run(python + ["check", "toy.toml", "drl.sol.json"], tmp_path, _env())
