"""Start-up of a solve that needs no solver, as a ratio to Python importing numpy and click (issue 33).

    python benchmarks/startup.py [--repeats 15]

Times, alternately in one run so that the machine's load weighs on both alike, the whole process of
``mlsched solve instances/demo.toml --method ffd --no-bound`` (FFD needs numpy and nothing of Pyomo,
SciPy or the solvers) and of ``python -c "import numpy, click"`` (the floor: the interpreter and the
two libraries every command needs), and prints the median of each and of their per-pair ratios.
The promise: at most 2.5.  Also prints which heavy modules the solve imported (none expected).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLVE = [sys.executable, "-m", "mlsched_opt", "solve", str(ROOT / "instances" / "demo.toml"), "--method", "ffd", "--no-bound"]
FLOOR = [sys.executable, "-c", "import numpy, click"]
HEAVY = ("scipy", "pyomo", "highspy", "ortools", "pyscipopt", "dask", "torch", "pandas")


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    timed(SOLVE), timed(FLOOR)  # warm the file cache once
    solve, floor = [], []
    for _ in range(args.repeats):
        solve.append(timed(SOLVE))
        floor.append(timed(FLOOR))
    ratios = [s / f for s, f in zip(solve, floor)]
    probe = ("import sys\nfrom mlsched_opt.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             f"print([m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)")
    heavy = subprocess.run([sys.executable, "-c", probe, *SOLVE[3:]], capture_output=True, text=True).stderr.strip().splitlines()[-1]
    print(f"mlsched solve demo --method ffd --no-bound: median {statistics.median(solve):.3f} s "
          f"(min {min(solve):.3f}, max {max(solve):.3f}) over {args.repeats} runs")
    print(f"python -c 'import numpy, click':            median {statistics.median(floor):.3f} s "
          f"(min {min(floor):.3f}, max {max(floor):.3f})")
    print(f"ratio (per pair): median {statistics.median(ratios):.2f}, min {min(ratios):.2f}, max {max(ratios):.2f} (promise: <= 2.5)")
    print(f"heavy modules the solve imported: {heavy}")


if __name__ == "__main__":
    main()
