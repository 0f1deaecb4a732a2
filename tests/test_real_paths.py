"""The real-data paths of issue 31 that broke: each test fails on the code before its fix.

Tests on the real data take the ``data_dir`` fixture (they skip, saying why, without the shared
data folder); the others build what they need.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from mlsched_opt.problems.locality.online import BOTH, Rounding, Schedule, Window, _first_deadline
from mlsched_opt.problems.locality.pcilp import LocalityJob, Patterns

# --- 1. locality: the deadline scan reads past the window it has computed -----------------------------------------


@dataclass(frozen=True)
class _LateRounding(Rounding):
    """Fails every deadline before ``ok_from``: the scan must go past the window the earliest deadline computed."""

    ok_from: int = 0

    def plan(self, p: Patterns, rng: np.random.Generator, out: Schedule) -> np.ndarray | None:
        return None if p.deadline < self.ok_from else np.arange(min(p.size, 1))


def test_first_deadline_extends_the_window_before_reading_it():
    job = LocalityJob("j", 0, 2.0, 1.5, 1.0, np.array([1.0]), np.array([1.0]), 2, 2)
    capacity = np.full((4, 1), 4.0)  # more machines than w_max: the per-slot host lists are used
    slots = 40
    residual = np.repeat(capacity[:, :, None], slots, axis=2)
    window = Window(job, 0, residual, np.ones(1))
    late = _LateRounding(kinds=BOTH, ok_from=30)  # beyond the 8 slots the earliest-deadline scan computes
    chosen = _first_deadline(job, 0, slots, residual, late, np.random.default_rng(0), Schedule(), window)
    assert chosen is not None and chosen[0].deadline == 30
    assert window.end > 30


def _import(run, tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "instance.toml"
    code, _, err = run("import", *args, "-o", out)
    assert code == 0, err
    return out


def _solve_and_check(run, tmp_path: Path, instance: Path, method: str, *args: str) -> str:
    answer = tmp_path / f"{method}.json"
    code, text, err = run("solve", instance, "--method", method, "--out", answer, *args)
    assert code == 0 and "check: ok" in text, (method, text, err)
    code, text, err = run("check", instance, answer)
    assert code == 0 and "ok: feasible" in text, (method, text, err)
    return text


FAST_LOCALITY = ["greedy-rr", "unaware", "colocate", "spread"]
# greedy-ilp's per-job 0-1 programs and pd-rr's priced LPs take 20-40 s on these 160 jobs: a shorter limit keeps the
# test's cost bounded (the jobs left when it passes get the earliest-fit plan, still checked); the scan past the window
# (issue 31's IndexError) comes within the first 15 jobs
SLOW_LOCALITY = ["greedy-ilp", "pd-rr"]


@pytest.fixture(scope="module", params=[1, 2], ids=lambda w: f"workload{w}")
def pollux_locality(request, tmp_path_factory, data_dir) -> Path:
    from mlsched_opt.cli import main

    out = tmp_path_factory.mktemp("pollux") / f"pollux-{request.param}.toml"
    with pytest.raises(SystemExit) as exc:
        main(["import", "pollux", "--problem", "locality", "--set", f"workload={request.param}", "--set", "cluster=pollux",
              "-o", str(out)])
    assert exc.value.code == 0
    return out


@pytest.mark.parametrize("method", FAST_LOCALITY)
def test_pollux_locality_import_every_fast_method(run, tmp_path, pollux_locality, method):
    _solve_and_check(run, tmp_path, pollux_locality, method)


@pytest.mark.slow
@pytest.mark.parametrize("method", SLOW_LOCALITY)
def test_pollux_locality_import_slow_methods(run, tmp_path, pollux_locality, method):
    _solve_and_check(run, tmp_path, pollux_locality, method, "--time-limit", "5")


def test_pollux_locality_import_exact_answers_or_refuses_cleanly(run, tmp_path, pollux_locality):
    code, text, err = run("solve", pollux_locality, "--method", "exact", "--time-limit", "5")
    # 160 jobs x 90 slots x 16 machines is past the exact model's size: refused by size, naming the field, no traceback
    assert (code == 0 and ("check: ok" in text or "time-limit-no-solution" in text)) or \
        (code == 2 and "time.slots" in err and "use an algorithm" in err and "Traceback" not in err), (code, text, err)
