from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mlsched_opt.cli import main
from mlsched_opt.io import load_catalog
from mlsched_opt.io.shared_data import shared_data_dir

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "instances" / "demo.toml"


def shared_data() -> Path | None:
    """The shared data folder beside the repository (../shared/data), or $MLSCHED_SHARED_DATA."""
    return shared_data_dir()


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture
def run(capsys):
    """Run the CLI in-process: returns (exit code, stdout, stderr)."""

    def _run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as exc:
            main([str(a) for a in args])
        out, err = capsys.readouterr()
        return exc.value.code, out, err

    return _run


def correlated_knapsack(n: int = 80, servers: int = 10, seed: int = 0) -> dict:
    """Strongly correlated multiple knapsack: weight ~ size, hard for branch and bound."""
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        c, m = int(rng.integers(20, 60)), int(rng.integers(20, 60))
        jobs.append({"id": f"j{i}", "architecture": "allreduce", "workers": {"count": 1},
                     "demand": {"worker": {"cpu": c, "memory_gb": m}}, "weight": c + m + int(rng.integers(0, 5))})
    return {"format": "mlsched-instance/1", "problem": "packing",
            "cluster": {"servers": [{"name": "s", "count": servers, "capacity": {"cpu": 137, "memory_gb": 141}}]},
            "jobs": jobs}
