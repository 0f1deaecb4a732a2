"""Short time limits, kept from the process start (issue 31): every method of every shipped instance
under ``--time-limit 2``, and a 100,000-job instance refused for its size under ``--time-limit 10``.

    python benchmarks/short_limits.py [--time-limit 2] [--big-jobs 100000] [--out runs/short_limits]

Each run is one ``mlsched solve --json`` process as a user runs it (the wall time is the whole
process, start-up included).  A run *answers* when it prints an objective or proves the instance
infeasible; a method that does not apply to an instance (a static-batch method on arrivals, an
oracle beyond its size) is refused at once with exit 2 and counted apart.  The big instance is the
generated 100-job packing instance repeated to ``--big-jobs`` jobs (a JSON file of about 23 MB): it
must be refused (exit 2, naming the ``jobs`` limit) well inside its limit.  Writes
``short_limits.csv`` and prints a summary.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mlsched(*args: str) -> list[str]:
    return [sys.executable, "-m", "mlsched_opt", *args]


def timed(args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    return done, time.perf_counter() - start


def sweep(limit: float) -> list[dict]:
    from mlsched_opt.problems import REGISTRY

    rows = []
    for path in sorted((ROOT / "instances").glob("*.toml")):
        family = tomllib.loads(path.read_text()).get("problem", "packing")
        for method in REGISTRY[family].methods:
            done, wall = timed(mlsched("solve", str(path), "--method", method, "--time-limit", f"{limit:g}", "--json"))
            doc = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
            answered = doc.get("objective") is not None or doc.get("status") == "infeasible"
            rows.append({"instance": path.stem, "method": method, "exit": done.returncode, "status": doc.get("status", "-"),
                         "answered": answered, "wall_s": round(wall, 2), "within": wall <= 1.1 * limit,
                         "refused": "" if done.returncode != 2 else done.stderr.strip()[-160:]})
            print(*rows[-1].values(), sep="  ", file=sys.stderr, flush=True)
    return rows


def big_instance(folder: Path, jobs: int) -> Path:
    small = folder / "packing-100.json"
    subprocess.run(mlsched("--quiet", "generate", "--problem", "packing", "--jobs", "100", "--servers", "20", "--seed", "1",
                           "-o", str(small)), check=True, capture_output=True)
    doc = json.loads(small.read_text())
    doc["jobs"] = [{**doc["jobs"][i % len(doc["jobs"])], "id": f"j{i}"} for i in range(jobs)]
    big = folder / f"packing-{jobs}.json"
    big.write_text(json.dumps(doc))
    return big


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=2.0)
    ap.add_argument("--big-jobs", type=int, default=100_000)
    ap.add_argument("--big-limit", type=float, default=10.0)
    ap.add_argument("--out", type=Path, default=Path("runs/short_limits"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = sweep(args.time_limit)
    with open(args.out / "short_limits.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    applies = [r for r in rows if r["exit"] != 2]
    good = [r for r in applies if r["answered"] and r["within"]]
    print(f"--time-limit {args.time_limit:g}: {len(good)} of {len(applies)} runs that apply answered within the limit + 10 % "
          f"(slowest {max((r['wall_s'] for r in applies), default=0.0):.2f} s); {len(rows) - len(applies)} refused as not applicable:")
    for r in rows:
        if r["exit"] == 2:
            print(f"  {r['instance']} {r['method']}: {r['refused']}")
    for r in applies:
        if r not in good:
            print(f"  NOT ANSWERED IN TIME: {r}")
    big = big_instance(args.out, args.big_jobs)
    done, wall = timed(mlsched("solve", str(big), "--method", "ffd", "--time-limit", f"{args.big_limit:g}"))
    print(f"{args.big_jobs:,} jobs ({big.stat().st_size / 2**20:.0f} MiB JSON), --time-limit {args.big_limit:g}: exit {done.returncode} "
          f"in {wall:.2f} s: {done.stderr.strip()[-200:]}")


if __name__ == "__main__":
    main()
