"""CSV rows and the optional plotting backend, shared by the benchmark scripts."""

from __future__ import annotations

import csv
import sys
from pathlib import Path


def write_rows(path: Path, fields: list[str], rows: list[dict]) -> None:
    with Path(path).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    print(f"CSV: {path} ({len(rows)} rows)")


def read_rows(path: str | Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def pyplot():
    """matplotlib's pyplot on the file backend, or None (with a note) when the ``plot`` extra is absent."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install '.[plot]'); no figure", file=sys.stderr)
        return None
    return plt


def subplots(ncols: int = 2, figsize: tuple[float, float] = (11, 4)):
    """``(fig, axes)`` on the file backend, or None when matplotlib is absent."""
    plt = pyplot()
    return None if plt is None else plt.subplots(1, ncols, figsize=figsize)


def save_figure(fig, out: Path) -> None:
    """Save next to the CSV (same name, ``.png``) and say where."""
    path = Path(out).with_suffix(".png")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")
