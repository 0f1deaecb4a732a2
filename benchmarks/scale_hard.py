"""The hard scale ladder: capacity-binding instances from 200 to 2,000 jobs, where "every job at its
best" is far from every answer, so a bracket says something (issue 32).

    python benchmarks/scale_hard.py --out runs/hard [--families packing-servers,oasis] [--sizes 200,2000] [--parallel 2] [--keep]

For each run and size: one ``mlsched import`` (:data:`RUNS`, the issue's commands: Alibaba pods with
``pods=multigpu50``, on the whole cluster for packing's ``servers`` objective and on one node per 8
pods for its ``weight``; Philly jobs on 15 to 80 servers), then ``mlsched solve
--json`` of ``--method exact`` (``--time-limit 240``, the issue's promise) and of each approximation
(``--time-limit 60``), each a process of its own measured as a user runs it (wall time of the whole
process, peak resident memory).  Per point:

- the bracket: the best checked answer over every method against the best proven bound over every
  method (a bound is proven by the exact method's search or the family's relaxation), >= 1;
- each method's certified ratio against that best bound (>= 1; 1 = optimal), and whether it
  answered within its limit + 10 %.

Writes ``hard.csv`` (one row per method and point), ``hard.md`` (the README's table) and ``hard.png``
(the bracket and each method's ratio against the number of jobs).  Needs the data sets
(``../shared/data`` or ``$MLSCHED_SHARED_DATA``).  ``--parallel 2`` runs two processes at a time on the
2-core machine (the limits hold under that load; the times are then those of a loaded machine).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # a sibling script, not a package: its solve_point measures a process as a user runs it

#: run -> (family, import arguments before -o, solve arguments, methods); the exact method always runs first
RUNS: dict[str, tuple[str, list[str], list[str], list[str]]] = {
    # every pod placed on as few of the 1,523 nodes as possible: FFD in file order mixes node shapes
    "packing-servers": ("packing", ["alibaba", "--set", "pods=multigpu50"], ["--set", "objective=servers"],
                        ["ffd", "ffd-large", "bfd", "lns", "pop"]),
    # most weight admitted on one node per 8 pods (about 70 % of the pods fit: capacity binds)
    "packing-weight": ("packing", ["alibaba", "--set", "pods=multigpu50", "--servers", "{jobs/8}"], [],
                       ["ffd", "ffd-large", "bfd", "lns", "pop"]),
    "smd": ("smd", ["philly", "--servers", "40", "--seed", "1"], [], ["smd", "esw"]),
    # 15 GPU + 15 CPU nodes: at 2,000 jobs the window LP's bound is far below every job at its best
    "oasis": ("oasis", ["philly", "--servers", "15", "--seed", "1"], [], ["oasis", "replan", "drf", "fifo"]),
    "hetero": ("hetero", ["alibaba", "--set", "pods=multigpu50", "--set", "workers=cluster"], [], ["sampling", "sampling-ls", "greedy"]),
    "locality": ("locality", ["philly", "--servers", "15", "--seed", "1"], [], ["greedy-rr", "srpt"]),
    # 80 nodes: queues form in the bursts (benchmarks/harmony_scale.toml also runs 40, where they never drain)
    "harmony": ("harmony", ["philly", "--servers", "80", "--seed", "1"], [],
                ["standalone", "least-interference", "marginal"]),
}
SIZES = (200, 500, 1000, 2000)
EXACT_LIMIT = 240.0
METHOD_LIMIT = 60.0
KEYS = ["run", "family", "jobs", "servers", "gpus", "method", "time_limit", "wall_s", "within_limit", "peak_mb", "status",
        "objective", "bound", "sense", "check", "ratio", "bracket", "best_objective", "best_bound", "message"]


def mlsched(*args: str) -> list[str]:
    return [sys.executable, "-m", "mlsched_opt", "--quiet", *args]


def import_point(out: Path, run: str, jobs: int) -> tuple[Path | None, dict]:
    family, source, _solve, _methods = RUNS[run]
    source = [a.replace("{jobs/8}", str(max(1, jobs // 8))) for a in source]
    path = out / f"{family}-{'-'.join(a.split('=')[-1] for a in source if not a.startswith('-'))}-{jobs}.json"
    if not path.exists():
        done = subprocess.run(mlsched("import", source[0], "--problem", family, "--jobs", str(jobs), *source[1:], "-o", str(path)),
                              capture_output=True, text=True)
        if done.returncode != 0:
            return None, {"message": f"import failed: {done.stderr.strip()[-300:]}"}
    doc = json.loads(path.read_text())
    groups = doc["cluster"]["servers"]
    return path, {"jobs": len(doc["jobs"]), "servers": sum(g.get("count", 1) for g in groups),
                  "gpus": sum(g.get("count", 1) * g["capacity"].get("gpu", 0) for g in groups)}


def solve_point(path: Path, method: str, limit: float, extra: list[str]) -> dict:
    """``mlsched solve --json`` in a process of its own, one thread: its wall time, peak memory and answer."""
    row = scale.solve_point(path, method, limit, ("--threads", "1", *extra))
    return {"method": method, "time_limit": limit, **row}


def ratio(value: float | None, reference: float | None, sense: str | None) -> float | None:
    """>= 1, 1 = as good as the reference (the toolkit's convention)."""
    if value is None or reference is None or sense is None or value <= 0 or reference <= 0:
        return None
    return max(reference / value if sense == "max" else value / reference, 1.0)


def _beaten(bound: float, best: float | None, sense: str | None) -> bool:
    """Whether the checked answer ``best`` is better than the proven ``bound`` allows (beyond 1e-6 relative)."""
    if best is None or sense is None:
        return False
    slack = 1e-6 * max(1.0, abs(bound))
    return best > bound + slack if sense == "max" else best < bound - slack


def rate(rows: list[dict]) -> None:
    """Each point's bracket (best checked answer against best proven bound) and each method's ratio to that bound."""
    points: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        points.setdefault((r["run"], r["jobs"]), []).append(r)
    for mine in points.values():
        sense = next((r["sense"] for r in mine if r.get("sense")), None)
        answers = [r["objective"] for r in mine if r.get("check") == "ok" and r.get("objective") is not None
                   and r.get("status") != "disputed"]
        pick = max if sense == "max" else min
        best = pick(answers) if answers else None
        # a bound counts only from a run whose answer passed the checker (or that has none), and only when
        # no checked answer beats it (the comparison's rule: a beaten bound is disputed, not used)
        bounds = [r["bound"] for r in mine if r.get("bound") is not None and r.get("status") != "disputed"
                  and r.get("check") != "FAILED" and not _beaten(r["bound"], best, sense)]
        # the best bound is the tightest: the smallest upper bound (max) or the largest lower bound (min)
        tight = (min(bounds) if sense == "max" else max(bounds)) if bounds else None
        for r in mine:
            r["best_objective"], r["best_bound"] = best, tight
            r["bracket"] = ratio(best, tight, sense)
            r["ratio"] = ratio(r.get("objective"), tight, sense) if r.get("check") == "ok" else None


def table(rows: list[dict]) -> str:
    def fmt(v: object) -> str:
        if v is None or v == "":
            return "-"
        return f"{v:.6g}" if isinstance(v, float) else str(v)

    lines = ["| run | jobs | GPUs | method | wall s (limit) | peak MB | status | objective | bound | ratio <= | bracket |",
             "|---|---:|---:|---|---:|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        late = "" if r.get("within_limit", True) else " LATE"
        lines.append(f"| {r['run']} | {r.get('jobs', '-')} | {fmt(r.get('gpus'))} | {r.get('method', '-')} | "
                     f"{fmt(r.get('wall_s'))} ({r.get('time_limit', 0):g}){late} | {fmt(r.get('peak_mb'))} | {r.get('status', '-')} | "
                     f"{fmt(r.get('objective'))} | {fmt(r.get('bound'))} | {fmt(r.get('ratio'))} | {fmt(r.get('bracket'))} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = list(dict.fromkeys(r["run"] for r in rows))
    cols = min(4, len(runs)) or 1
    fig, axes = plt.subplots(math.ceil(len(runs) / cols), cols, figsize=(4 * cols, 3.3 * math.ceil(len(runs) / cols)), squeeze=False)
    for ax, run in zip(axes.flat, runs):
        mine = [r for r in rows if r["run"] == run]
        sizes = sorted({r["jobs"] for r in mine})
        bracket = [next((r["bracket"] for r in mine if r["jobs"] == n and r.get("bracket")), None) for n in sizes]
        ax.plot(sizes, bracket, "k-", lw=2, marker="s", label="bracket (best / bound)")
        for method in dict.fromkeys(r["method"] for r in mine):
            pts = [(r["jobs"], r["ratio"]) for r in mine if r["method"] == method and r.get("ratio")]
            if pts:
                ax.plot(*zip(*pts), marker="o", lw=1, label=method)
        ax.set_title(run, fontsize=9)
        ax.set_xlabel("jobs")
        ax.set_ylabel("certified ratio (>= 1)")
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(runs):]:
        ax.axis("off")
    fig.suptitle("Hard ladder: each method against the best proven bound", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write(rows: list[dict], out: Path) -> None:
    rate(rows)
    with open(out / "hard.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=KEYS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    (out / "hard.md").write_text(table(rows))
    plot(rows, out / "hard.png")


def read(path: Path) -> list[dict]:
    rows = []
    with open(path, newline="") as fh:
        for raw in csv.DictReader(fh):
            row: dict = dict(raw)
            for key in ("jobs", "servers", "peak_mb"):
                row[key] = int(raw[key]) if raw.get(key) else None
            for key in ("gpus", "time_limit", "wall_s", "objective", "bound", "ratio", "bracket", "best_objective", "best_bound"):
                row[key] = float(raw[key]) if raw.get(key) else None
            row["within_limit"] = raw.get("within_limit") == "True"
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/hard")
    ap.add_argument("--families", default=",".join(RUNS), help=f"runs, of: {', '.join(RUNS)}")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--exact-limit", type=float, default=EXACT_LIMIT)
    ap.add_argument("--method-limit", type=float, default=METHOD_LIMIT)
    ap.add_argument("--parallel", type=int, default=1, help="solve processes at a time")
    ap.add_argument("--keep", action="store_true", help="keep DIR/hard.csv's rows of the points not run now (a ladder in parts)")
    ap.add_argument("--redraw", action="store_true", help="only redraw hard.md and hard.png from DIR/hard.csv")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.redraw:
        rows = read(out / "hard.csv")
        write(rows, out)
        print(table(rows))
        return
    jobs_list = [int(n) for n in args.sizes.split(",")]
    work: list[tuple[dict, Path | None, str, float, list[str]]] = []
    for run in args.families.split(","):
        if run not in RUNS:
            sys.exit(f"unknown run {run!r} (known: {', '.join(RUNS)})")
        family, _source, extra, methods = RUNS[run]
        for jobs in jobs_list:
            path, meta = import_point(out, run, jobs)
            base = {"run": run, "family": family, **meta}
            if path is None:
                work.append((base, None, "", 0.0, extra))
                continue
            work.append((base, path, "exact", args.exact_limit, extra))
            work += [(base, path, m, args.method_limit, extra) for m in methods]

    def one(item: tuple) -> dict:
        base, path, method, limit, extra = item
        row = dict(base)
        if path is not None:
            row.update(solve_point(path, method, limit, extra))
        print({k: row.get(k) for k in ("run", "jobs", "method", "wall_s", "status", "objective", "bound")}, file=sys.stderr, flush=True)
        return row

    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        rows = list(pool.map(one, work))
    if args.keep and (out / "hard.csv").exists():
        now = {(r["run"], r["jobs"]) for r in rows}
        kept = [r for r in read(out / "hard.csv") if (r["run"], r["jobs"]) not in now]
        rows = sorted(kept + rows, key=lambda r: (list(RUNS).index(r["run"]) if r["run"] in RUNS else len(RUNS), r.get("jobs") or 0))
    write(rows, out)
    print(table(rows))
    late = [r for r in rows if r.get("within_limit") is False]
    print(f"{len(rows)} runs, {len(late)} past their limit + 10 %", file=sys.stderr)


if __name__ == "__main__":
    main()
