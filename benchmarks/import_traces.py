"""Every (source, family) pair of ``mlsched import``, through the CLI: import, validate, solve
with the family's approximation, check; sizes and wall times in one run.

    python benchmarks/import_traces.py --out import_traces.csv [--jobs 200 --servers 64]
    python benchmarks/import_traces.py --jobs 2000 --servers 16 --import-only

Each step is a separate ``mlsched`` process, as a user runs it, so the times include start-up
(about 2-3 s of Python imports); the ``method s`` column is the method's own wall time from the
solve report.  Needs the data sets (``../shared/data`` or ``$MLSCHED_SHARED_DATA``).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: (source, problem, approximation, extra import arguments)
PAIRS = [
    ("alibaba", "packing", "ffd", []),
    ("alibaba", "hetero", "sampling", []),
    ("philly", "oasis", "oasis", []),
    ("philly", "smd", "smd", []),
    ("philly", "locality", "greedy-rr", []),
    ("philly", "harmony", "load-balance", []),
    ("philly", "hetero", "sampling", []),
    ("pollux", "oasis", "oasis", ["--set", "cluster=pollux"]),
    ("pollux", "smd", "smd", ["--set", "cluster=pollux"]),
    ("pollux", "locality", "greedy-rr", ["--set", "cluster=pollux"]),
    ("pollux", "harmony", "load-balance", ["--set", "cluster=pollux"]),
    ("pollux", "hetero", "sampling", []),
]


def mlsched(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mlsched_opt", *args], capture_output=True, text=True)
    return time.perf_counter() - start, done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--servers", type=int, default=64)
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--out", default="import_traces.csv")
    ap.add_argument("--import-only", action="store_true", help="time the imports (and validation) only")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for source, problem, method, extra in PAIRS:
            path = Path(tmp) / f"{source}-{problem}.json"
            imp_s, done = mlsched("import", source, "--problem", problem, "--jobs", str(args.jobs),
                                  "--servers", str(args.servers), "-o", str(path), *extra)
            row = {"source": source, "problem": problem, "args": " ".join(extra), "method": method, "import_s": round(imp_s, 2)}
            if done.returncode != 0:
                rows.append({**row, "status": "import failed", "message": done.stderr.strip()[-300:]})
                print(rows[-1], file=sys.stderr)
                continue
            doc = json.loads(path.read_text())
            row.update(jobs=len(doc["jobs"]), servers=sum(s.get("count", 1) for s in doc["cluster"]["servers"]),
                       gpus=sum(s.get("count", 1) * s["capacity"].get("gpu", 0) for s in doc["cluster"]["servers"]))
            if args.import_only:
                rows.append({**row, "method": "-", "status": "-", "check": "-"})
                print(rows[-1], file=sys.stderr)
                continue
            solve_s, done = mlsched("solve", str(path), "--method", method, "--time-limit", str(args.time_limit), "--json")
            rep = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
            row.update(solve_s=round(solve_s, 2), method_s=round(rep.get("wall_s") or 0, 2), status=rep.get("status", "error"),
                       objective=rep.get("objective"), check="ok" if (rep.get("check") or {}).get("feasible") else "FAILED")
            rows.append(row)
            print(row, file=sys.stderr)
    keys = ["source", "problem", "args", "jobs", "servers", "gpus", "method", "import_s", "solve_s", "method_s", "status", "objective",
            "check", "message"]
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    print("| source → problem | jobs | servers (GPUs) | import s | method | solve s (method s) | check |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if "jobs" not in r:
            print(f"| {r['source']} → {r['problem']} | – | – | {r['import_s']} | {r['method']} | {r['status']} | – |")  # noqa: RUF001 -- an en dash marks an empty cell
            continue
        print(f"| {r['source']} → {r['problem']} {r['args']} | {r['jobs']:,} | {r['servers']:,} ({r['gpus']:,g}) | {r['import_s']} | "
              f"{r['method']} | {r.get('solve_s', '-')} ({r.get('method_s', '-')}) | {r['check']} |")


if __name__ == "__main__":
    main()
