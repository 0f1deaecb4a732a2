"""OASiS where capacity binds (issue 32): Philly jobs on a few servers, every method and the exact
method's bracket, through the CLI.

    python benchmarks/oasis_hard.py --out runs/oasis_hard [--time-limit 240] [--points 200:3,500:5,2000:15,2000:25]

A point ``J:S`` is ``mlsched import philly --problem oasis --jobs J --servers S --seed 1`` (S GPU nodes
as workers and S CPU nodes as PSs of the Alibaba cluster), then ``mlsched solve --json --time-limit L``
with each method in a process of its own, one at a time (wall time and peak memory are that
process's).  Per point the table gives "every job at its best" (the trivial bound: how far capacity
binds is how far the proven bound falls below it), the best proven bound among the rows (the window
capacity LP, or the exact method's certified optimum where it proves one), and per method its
objective and certified ratio ``best bound / objective``; the exact method's row is its bracket.
Needs the data sets (``../shared/data`` or ``$MLSCHED_SHARED_DATA``).  Writes ``oasis_hard.csv`` and
``oasis_hard.md``.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import solve_point  # the scale ladder's runner: one process per solve, measured by wait4

METHODS = ("exact", "oasis", "replan", "drf", "fifo")
POINTS = ((200, 15), (500, 15), (2000, 15), (2000, 25), (200, 3), (500, 5))
KEYS = ["jobs", "servers", "method", "status", "objective", "bound", "best_bound", "ratio", "trivial", "wall_s", "within_limit",
        "peak_mb", "check", "message"]


def import_point(folder: Path, jobs: int, servers: int, seed: int) -> Path:
    path = folder / f"philly-{jobs}j-{servers}s-seed{seed}.json"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "mlsched_opt", "--quiet", "import", "philly", "--problem", "oasis", "--jobs", str(jobs),
                        "--servers", str(servers), "--seed", str(seed), "-o", str(path)], check=True)
    return path


def trivial_bound(path: Path) -> float:
    """Every job at its best utility: the window LP's bound at zero prices."""
    from mlsched_opt.io import load_instance
    from mlsched_opt.problems.oasis.bound import window_lp
    from mlsched_opt.problems.oasis.view import oasis_view

    lp = window_lp(oasis_view(load_instance(path)))
    assert lp is not None
    return lp.dual_bound(np.zeros(lp.rows + lp.chain.shape[0]))


def run_point(folder: Path, jobs: int, servers: int, seed: int, limit: float, methods: tuple[str, ...]) -> list[dict]:
    path = import_point(folder, jobs, servers, seed)
    rows = [{"jobs": jobs, "servers": servers, "method": m, **solve_point(path, m, limit)} for m in methods]
    best = min((r["bound"] for r in rows if r.get("bound")), default=None)
    trivial = trivial_bound(path)
    for r in rows:
        r["best_bound"], r["trivial"] = best, round(trivial, 4)
        r["ratio"] = round(max(best / r["objective"], 1.0), 4) if best and r.get("objective") else None
    return rows


def table(rows: list[dict]) -> str:
    def fmt(v):
        return "-" if v is None or v == "" else f"{v:.6g}" if isinstance(v, float) else str(v)

    lines = ["| jobs | servers | every job at its best | best bound | method | objective | ratio <= (certified) | wall s | peak MB "
             "| check |",
             "|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['jobs']} | {r['servers']}+{r['servers']} | {fmt(r['trivial'])} | {fmt(r['best_bound'])} | {r['method']} | "
                     f"{fmt(r.get('objective'))} | {fmt(r.get('ratio'))} | {r.get('wall_s', '-')} | {r.get('peak_mb', '-')} | "
                     f"{r.get('check', '-')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/oasis_hard")
    ap.add_argument("--time-limit", type=float, default=240.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--points", default=",".join(f"{j}:{s}" for j, s in POINTS), help="jobs:servers,...")
    ap.add_argument("--methods", default=",".join(METHODS))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for point in args.points.split(","):
        jobs, servers = (int(x) for x in point.split(":"))
        rows += run_point(out, jobs, servers, args.seed, args.time_limit, tuple(args.methods.split(",")))
        with open(out / "oasis_hard.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=KEYS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        (out / "oasis_hard.md").write_text(table(rows))
        print(table(rows[-len(args.methods.split(",")):]), flush=True)


if __name__ == "__main__":
    main()
