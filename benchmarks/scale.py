"""Production scale through the CLI: each family's main approximation from 64 GPUs to the whole
Alibaba cluster (6,212 GPUs, 2,000 jobs) under ``--time-limit``; wall time, peak memory,
objective, proven bound and certified ratio per size, the scaling exponent per family, and a
log-log plot of time against size (issue 18).

    python benchmarks/scale.py --out runs/scale [--families packing,hetero] [--time-limit 60]

Every point is two ``mlsched`` processes as a user runs them: ``mlsched import`` (not timed
against the limit) and ``mlsched solve --json --time-limit L`` (timed: the whole process, start-up
included, which is what the limit promises; peak memory is that process's maximum resident set).
The solve reports the family's proven bound (``--bound``, the default), so the ratio
``objective / bound`` (>= 1, min) or ``bound / objective`` (max) is a certified upper bound on the
true approximation ratio.  Points run one at a time, so their times are comparable.  Needs the data
sets (``../shared/data`` or ``$MLSCHED_SHARED_DATA``).  Writes ``scale.csv``, ``scale.md`` (every
point as a table) and ``scale.png``; with ``--out docs/results/data/scale`` the docs' results pages
are generated from them.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: run label -> (family, trace source, method, solve arguments): each family's main approximation,
#: plus packing's other objective (min servers, where FFD is far from the bound) and POP on it
FAMILIES = {
    "packing": ("packing", "alibaba", "ffd", ()),
    "packing-servers": ("packing", "alibaba", "ffd", ("--set", "objective=servers")),
    "packing-servers-pop": ("packing", "alibaba", "pop", ("--set", "objective=servers")),
    "hetero": ("hetero", "alibaba", "sampling", ()),
    "smd": ("smd", "philly", "smd", ()),
    "oasis": ("oasis", "philly", "oasis", ()),
    "locality": ("locality", "philly", "greedy-rr", ()),
    "harmony": ("harmony", "philly", "drl", ()),
}
#: (servers, jobs): 20 nodes (about 64 GPUs) up to the whole cluster (0 = every node) with 2,000 jobs,
#: jobs in proportion to the nodes (the full trace's 2,000 jobs on 1,523 nodes)
LADDER = [(20, 26), (80, 105), (320, 420), (0, 2000)]
KEYS = ["family", "method", "servers", "gpus", "jobs", "time_limit", "wall_s", "within_limit", "peak_mb", "status", "objective",
        "bound", "ratio_bound", "check", "method_s", "message"]


def solve_point(path: Path, method: str, limit: float, extra: tuple[str, ...] = ()) -> dict:
    """Solve with ``method`` in a process of its own, measuring its wall time and peak memory by wait4."""
    start = time.perf_counter()
    args = [sys.executable, "-m", "mlsched_opt", "--quiet", "solve", str(path), "--method", method, "--time-limit", str(limit),
            "--json", *extra]
    log = path.with_name(f"{path.stem}-{method}")
    with open(log.with_suffix(".out"), "w+") as out, open(log.with_suffix(".err"), "w+") as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        text = out.read()
        err.seek(0)
        errors = err.read()
    rep = json.loads(text) if text.strip().startswith("{") else {}
    objective, bound, sense = rep.get("objective"), rep.get("bound"), rep.get("sense")
    ratio = None
    if objective and bound and objective > 0 and bound > 0:
        ratio = bound / objective if sense == "max" else objective / bound
    check = rep.get("check") or {}
    return {"wall_s": round(wall, 2), "within_limit": wall <= 1.1 * limit, "peak_mb": round(usage.ru_maxrss / 1024),
            "status": rep.get("status", f"exit {proc.returncode}"), "objective": objective, "bound": bound, "sense": sense,
            "ratio_bound": None if ratio is None else round(max(ratio, 1.0), 4),
            "check": "ok" if check.get("feasible") else ("-" if not check else "FAILED"),
            "method_s": round(rep.get("wall_s") or 0, 2),
            "message": (rep.get("message") or errors.strip()[-300:]).replace("\n", " ")[:300]}


def import_point(folder: Path, family: str, source: str, servers: int, jobs: int) -> tuple[Path | None, dict]:
    path = folder / f"{family}-{servers or 'all'}-{jobs}.json"
    if path.exists():  # another run of the same family reads the same instance
        return path, _size(path)
    args = ["import", source, "--problem", family, "--jobs", str(jobs), "-o", str(path)]
    if servers:
        args += ["--servers", str(servers)]
    done = subprocess.run([sys.executable, "-m", "mlsched_opt", *args], capture_output=True, text=True)
    if done.returncode != 0:
        return None, {"message": f"import failed: {done.stderr.strip()[-300:]}"}
    return path, _size(path)


def _size(path: Path) -> dict:
    doc = json.loads(path.read_text())
    servers_ = doc["cluster"]["servers"]
    return {"servers": sum(s.get("count", 1) for s in servers_), "jobs": len(doc["jobs"]),
            "gpus": sum(s.get("count", 1) * s["capacity"].get("gpu", 0) for s in servers_)}


#: method times below this are start-up noise, left out of the exponent's fit
MIN_FIT_S = 0.02


#: the exponent is fitted on the largest sizes (the smallest carry one-off costs: first imports)
FIT_POINTS = 3


def exponent(rows: list[dict]) -> float | None:
    """Least-squares slope of log(method time) against log(GPUs x jobs) over the
    :data:`FIT_POINTS` largest sizes whose method took at least :data:`MIN_FIT_S`: the scaling
    exponent (None with fewer than two such points)."""
    pts = sorted((r["gpus"] * r["jobs"], r["method_s"]) for r in rows if (r.get("method_s") or 0) >= MIN_FIT_S and r.get("gpus"))
    pts = pts[-FIT_POINTS:]
    if len(pts) < 2:
        return None
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def table(rows: list[dict]) -> str:
    lines = ["| family | method | GPUs | jobs | wall s (limit) | peak MB | objective | bound | ratio <= (certified) | check | exponent |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    by_family: dict[str, list[dict]] = {}
    for r in rows:
        by_family.setdefault(r["family"], []).append(r)
    for family, mine in by_family.items():
        slope = exponent(mine)
        for i, r in enumerate(mine):
            fmt = lambda v: "-" if v is None or v == "" else f"{v:.6g}" if isinstance(v, float) else str(v)  # noqa: E731
            lines.append(f"| {family} | {r['method']} | {r.get('gpus', '-')} | {r.get('jobs', '-')} | {r.get('wall_s', '-')} "
                         f"({r['time_limit']:g}) | {r.get('peak_mb', '-')} | {fmt(r.get('objective'))} | {fmt(r.get('bound'))} | "
                         f"{fmt(r.get('ratio_bound'))} | {r.get('check', '-')} | "
                         f"{'' if i else ('-' if slope is None else f'{slope:.2f}')} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], limit: float, path: Path) -> None:
    """Left: the whole command's wall time against GPUs, with the limit; right: the method's own
    time against GPUs x jobs, with each run's scaling exponent (both log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (whole, method) = plt.subplots(1, 2, figsize=(12, 4.5))
    for run in FAMILIES:
        mine = [r for r in rows if r["family"] == run and r.get("gpus")]
        if not mine:
            continue
        slope = exponent(mine)
        label = f"{run} ({FAMILIES[run][2]})"
        whole.plot([r["gpus"] for r in mine], [r["wall_s"] for r in mine], marker="o", label=label)
        fit = [r for r in mine if (r.get("method_s") or 0) >= MIN_FIT_S]
        method.plot([r["gpus"] * r["jobs"] for r in fit], [r["method_s"] for r in fit], marker="o",
                    label=label + ("" if slope is None else f": exponent {slope:.2f}"))
    whole.axhline(limit, color="gray", ls="--", lw=1, label=f"--time-limit {limit:g} s")
    whole.set_xlabel("GPUs (jobs in proportion, 2,000 at 6,212 GPUs)")
    whole.set_ylabel("wall time of the whole `mlsched solve`, s")
    whole.set_title("Whole command (start-up, load, method, bound, check)")
    method.set_xlabel("size: GPUs x jobs")
    method.set_ylabel("method time, s")
    method.set_title(f"The method alone; exponent fitted on the {FIT_POINTS} largest sizes")
    for ax in (whole, method):
        if any(len(line.get_xdata()) for line in ax.lines):  # a log axis needs a point (a one-point ladder may have none)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write_outputs(rows: list[dict], limit: float, out: Path) -> None:
    with open(out / "scale.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=KEYS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    (out / "scale.md").write_text(table(rows))
    plot(rows, limit, out / "scale.png")


def read_rows(path: Path) -> list[dict]:
    """The rows of a ``scale.csv`` with their numbers back (to redraw the table and the plot)."""
    rows: list[dict] = []
    with open(path, newline="") as fh:
        for raw in csv.DictReader(fh):
            row: dict = dict(raw)
            for key in ("servers", "gpus", "jobs", "peak_mb"):
                row[key] = int(raw[key]) if raw.get(key) else None
            for key in ("time_limit", "wall_s", "objective", "bound", "ratio_bound", "method_s"):
                row[key] = float(raw[key]) if raw.get(key) else None
            row["within_limit"] = raw.get("within_limit") == "True" if raw.get("within_limit") else None
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/scale")
    ap.add_argument("--families", default=",".join(FAMILIES), help=f"runs, of: {', '.join(FAMILIES)}")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--ladder", default=",".join(f"{s}:{j}" for s, j in LADDER),
                    help="servers:jobs points (servers 0 = every node)")
    ap.add_argument("--redraw", action="store_true", help="only redraw scale.md and scale.png from DIR/scale.csv")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.redraw:
        rows = read_rows(out / "scale.csv")
        write_outputs(rows, rows[0]["time_limit"] if rows else args.time_limit, out)
        print(table(rows))
        return
    ladder = [tuple(int(v) for v in point.split(":")) for point in args.ladder.split(",")]
    rows = []
    for run in args.families.split(","):
        if run not in FAMILIES:
            sys.exit(f"unknown run {run!r} (known: {', '.join(FAMILIES)})")
        family, source, method, extra = FAMILIES[run]
        for servers, jobs in ladder:
            row = {"family": run, "method": method, "time_limit": args.time_limit}
            path, meta = import_point(out, family, source, servers, jobs)
            row.update(meta)
            if path is not None:
                row.update(solve_point(path, method, args.time_limit, extra))
            rows.append(row)
            print({k: row.get(k) for k in KEYS if k != "message"}, file=sys.stderr, flush=True)
    write_outputs(rows, args.time_limit, out)
    late = [r for r in rows if r.get("within_limit") is False]
    print(table(rows))
    print(f"{len(rows)} points, {len(late)} past the limit + 10 %" + ("" if not late else ": " + ", ".join(
        f"{r['family']}@{r.get('gpus')}" for r in late)), file=sys.stderr)


if __name__ == "__main__":
    main()
