"""Harmony under load at production scale (issue 32): the bracket of ``--method exact`` and each
method's certified ratio before and after, in one run, through the CLI.

    python benchmarks/harmony_scale.py --out runs/harmony_scale [--jobs 200,500,2000] [--servers 40,80]
        [--time-limit 240] [--seed 1] [--drl]

Every instance is ``mlsched import philly --problem harmony --jobs N --servers M --seed S`` (the
Philly window's first N jobs on M identical Alibaba 8-GPU nodes; at 2,000 jobs the arrivals span 214
intervals, with bursts of 100-300 jobs, and the jobs' standalone work is 0.14 M GPU-intervals, so
queues form on 15-80 servers: every method today is 1.7-9x the standalone bound).  Every solve is
``mlsched solve FILE --method X --time-limit L --json`` in a process of its own (wall time and peak
memory of that process).  Rows:

* before: ``standalone`` and ``least-interference`` in arrival order (the best methods the issue
  measured), against the old bound (every job alone, ``standalone bound`` in the bound's message);
* after: the same heuristics shortest-first (``--set order=sjf``), ``marginal``, and ``exact`` (the
  anytime search with the throughput LP's bound), against the new bound (the best bound any solve
  of the instance proved);
* ``--drl``: the learned policy in both orders too (needs the ``rl`` extra; slow at this size).

Writes ``harmony_scale.csv`` and ``harmony_scale.md`` (one table: per instance and method, the
objective, the certified ratio to the old and to the new bound, and exact's bracket).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

#: label -> (method, extra solve arguments, stage)
METHODS = {
    "standalone": ("standalone", (), "before"),
    "least-interference": ("least-interference", (), "before"),
    "standalone sjf": ("standalone", ("--set", "order=sjf"), "after"),
    "least-interference sjf": ("least-interference", ("--set", "order=sjf"), "after"),
    "marginal": ("marginal", (), "after"),
    "exact": ("exact", (), "after"),
}
DRL = {"drl": ("drl", (), "before"), "drl sjf": ("drl", ("--set", "order=sjf"), "after")}
KEYS = ["jobs", "servers", "label", "stage", "status", "objective", "bound", "old_bound", "new_bound", "ratio_old", "ratio_new",
        "wall_s", "peak_mb", "check", "message"]
STANDALONE = re.compile(r"standalone bound ([0-9.eE+-]+)")


def run(args: list[str], log: Path) -> tuple[int, str, float, float]:
    """One ``mlsched`` process: exit code, stdout, wall seconds and peak resident memory (MB, by wait4)."""
    start = time.perf_counter()
    with open(log.with_suffix(".out"), "w+") as out, open(log.with_suffix(".err"), "w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "mlsched_opt", "--quiet", *args], stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        return os.waitstatus_to_exitcode(status), out.read(), time.perf_counter() - start, usage.ru_maxrss / 1024


def instance(folder: Path, jobs: int, servers: int, seed: int) -> Path:
    path = folder / f"philly-{jobs}j-{servers}s-seed{seed}.toml"
    if not path.exists():
        code, _, _, _ = run(["import", "philly", "--problem", "harmony", "--jobs", str(jobs), "--servers", str(servers),
                             "--seed", str(seed), "-o", str(path)], path.with_name(path.stem + "-import"))
        if code != 0:
            raise SystemExit(f"mlsched import failed for {path.name} (see {path.stem}-import.err)")
    return path


def solve(path: Path, label: str, limit: float) -> dict:
    method, extra, stage = {**METHODS, **DRL}[label]
    log = path.with_name(f"{path.stem}-{label.replace(' ', '-')}")
    code, text, wall, peak = run(["solve", str(path), "--method", method, "--time-limit", str(limit), "--json", *extra], log)
    rep = json.loads(text) if text.strip().startswith("{") else {}
    found = STANDALONE.search(rep.get("message") or "")
    return {"label": label, "stage": stage, "status": rep.get("status", f"exit {code}"), "objective": rep.get("objective"),
            "bound": rep.get("bound"), "old_bound": float(found.group(1)) if found else None, "wall_s": round(wall, 1),
            "peak_mb": round(peak), "check": "ok" if (rep.get("check") or {}).get("feasible") else "-",
            "message": (rep.get("message") or "")[:240]}


def ratios(rows: list[dict]) -> None:
    """Each row's certified ratio to the old bound (every job alone) and to the best bound any solve proved."""
    old = max((r["old_bound"] for r in rows if r["old_bound"]), default=None)
    new = max((r["bound"] for r in rows if r["bound"] and r["check"] == "ok"), default=None)
    for r in rows:
        r["new_bound"], r["old_bound"] = new, old
        ok = r["objective"] is not None and r["check"] == "ok"
        r["ratio_old"] = round(r["objective"] / old, 4) if ok and old else None
        r["ratio_new"] = round(r["objective"] / new, 4) if ok and new else None


def table(rows: list[dict]) -> str:
    lines = ["| jobs | servers | method | stage | average JCT | / old bound | / new bound | wall s | peak MB |",
             "|---:|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        obj = "-" if r["objective"] is None else f"{r['objective']:.3f}"
        lines.append(f"| {r['jobs']} | {r['servers']} | {r['label']} | {r['stage']} | {obj} | {r['ratio_old'] or '-'} | "
                     f"{r['ratio_new'] or '-'} | {r['wall_s']} | {r['peak_mb']} |")
    by: dict[tuple[int, int], list[dict]] = {}
    for r in rows:
        by.setdefault((r["jobs"], r["servers"]), []).append(r)
    lines += ["", "| jobs | servers | old bound | new bound | exact | bracket (exact / new bound) |", "|---:|---:|---:|---:|---:|---:|"]
    for (jobs, servers), group in by.items():
        exact = next((r for r in group if r["label"] == "exact"), None)
        new = group[0]["new_bound"]
        lines.append(f"| {jobs} | {servers} | {group[0]['old_bound']:.4g} | {new:.4g} | "
                     f"{exact['objective'] if exact else '-'} | {exact['ratio_new'] if exact else '-'} |" if new and group[0]["old_bound"]
                     else f"| {jobs} | {servers} | - | - | - | - |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", default="200,500,2000")
    parser.add_argument("--servers", default="40,80")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=240.0)
    parser.add_argument("--drl", action="store_true", help="also the learned policy, in both orders")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    labels = list(METHODS) + (list(DRL) if args.drl else [])
    rows: list[dict] = []
    for servers in map(int, args.servers.split(",")):
        for jobs in map(int, args.jobs.split(",")):
            path = instance(args.out, jobs, servers, args.seed)
            group = []
            for label in labels:
                row = {"jobs": jobs, "servers": servers, **solve(path, label, args.time_limit)}
                print(f"{jobs} jobs, {servers} servers, {label}: {row['status']} {row['objective']} ({row['wall_s']} s)", flush=True)
                group.append(row)
            ratios(group)
            rows += group
    with open(args.out / "harmony_scale.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=KEYS)
        writer.writeheader()
        writer.writerows({k: r.get(k) for k in KEYS} for r in rows)
    text = table(rows)
    (args.out / "harmony_scale.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
