"""Re-execute the notebooks top to bottom and store them with their outputs.

    .venv/bin/python notebooks/execute.py                 # every notebook in notebooks/
    .venv/bin/python notebooks/execute.py smd packing     # some of them (stem or path)

Each notebook runs in a fresh kernel (``python3``: run through the venv's python, the kernel is
that python), from the ``notebooks/`` folder, and is written back only when every cell ran
without an error (a failing notebook is left as it was and the script exits 1).  Execution
timestamps are not recorded, so re-running changes only what the code prints and draws.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def notebooks(names: list[str]) -> list[Path]:
    if not names:
        return sorted(HERE.glob("*.ipynb"))
    out = []
    for name in names:
        path = Path(name)
        if not path.suffix:
            path = HERE / f"{name}.ipynb"
        if not path.is_file():
            raise SystemExit(f"no notebook {name} (looked for {path})")
        out.append(path.resolve())
    return out


def execute(path: Path, timeout: int) -> float:
    """Run ``path`` in a fresh kernel and write it back with its outputs; the wall time in seconds."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    elapsed = time.perf_counter() - start
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook stems or paths (default: all of notebooks/)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell before the kernel is stopped")
    args = parser.parse_args()
    failed = []
    for path in notebooks(args.names):
        try:
            elapsed = execute(path, args.timeout)
        except Exception as exc:  # a failing cell, a timeout, a dead kernel
            failed.append(path.name)
            print(f"{path.name}: FAILED, left unchanged\n{exc}", file=sys.stderr)
            continue
        print(f"{path.name:<22} {elapsed:6.1f} s  {path.stat().st_size / 1024:7.1f} KiB", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
