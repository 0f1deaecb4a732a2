"""The results pages' tables and figures, generated from the stored outputs in ``docs/results/data``.

Nothing on a results page is typed by hand: each table is read from the files a benchmark script or
``mlsched bench`` wrote, and says the command and the commit that produced it (``source.json``
beside the files).  To refresh a result, re-run its command with ``--out`` into its folder here
(each ``source.json`` says how) and rebuild the docs.

    python docs/results/generate.py                 # every table, as Markdown, on stdout
    python docs/results/generate.py scale harmony-worlds

The Sphinx extension (``docs/_ext/mlsched_docs.py``, directive ``{mlsched-results} NAME``) calls
:func:`render` while it builds the pages.  Names: ``scale``, ``scale:FAMILY``,
``hard``, ``hard:FAMILY`` (the capacity-binding ladder of ``benchmarks/scale_hard.py``),
``both-ladders`` (the README's: each family at both ladders' largest point), ``import-traces``,
``import-traces:FAMILY``, ``bench-suites``, ``bench-suites:FAMILY``, ``bench:FOLDER`` (a stored
``mlsched bench`` output folder's summary), ``harmony-worlds``, ``harmony-gym``, ``harmony-curve``,
``fragmentation`` (``benchmarks/fragmentation.py``: the ATC 2023 experiment, GPU by GPU).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
ROOT = HERE.parent.parent


def _script(name: str) -> Any:
    """``benchmarks/NAME.py``, whose row reader and run table the tables use (one definition of
    each: the script's own): ``scale`` (and its exponent fit), ``scale_hard``."""
    spec = importlib.util.spec_from_file_location(f"{name}_benchmark", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def source(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "source.json").read_text(encoding="utf-8"))


def provenance(folder: Path) -> str:
    """One line: what produced the files of ``folder`` (command, commit, date, machine) and any note."""
    src = source(folder)
    commit = src.get("commit", "?")
    commit_text = f"commit `{commit}`" if " " not in commit else "the commit of each row"
    when = ", ".join(x for x in (src.get("date"), src.get("machine")) if x)
    line = f"Produced by `{src['command']}` at {commit_text}" + (f" ({when})" if when else "") + "."
    if src.get("transcribed"):
        line += " " + src["transcribed"]
    return "*Source*: " + line


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def table(header: list[str], rows: list[list[Any]], align: str | None = None) -> str:
    align = align or "|".join("---" for _ in header)
    lines = ["| " + " | ".join(header) + " |", "|" + align + "|"]
    lines += ["| " + " | ".join("-" if c in (None, "") else str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def number(value: Any, digits: int = 6) -> str:
    if value in (None, ""):
        return "-"
    x = float(value)
    return f"{x:,.0f}" if x.is_integer() and abs(x) >= 1000 else f"{x:.{digits}g}"


def figure(path: Path, page: Path | None, alt: str) -> str:
    target = os.path.relpath(path, page.parent) if page is not None else str(path.relative_to(ROOT))
    return f"![{alt}]({target})"


# -- production scale ---------------------------------------------------------------------------

def render_scale(family: str | None, page: Path | None) -> str:
    folder = DATA / "scale"
    script = _script("scale")
    rows = script.read_rows(folder / "scale.csv")
    runs = [run for run in script.FAMILIES if family is None or script.FAMILIES[run][0] == family]
    out = []
    body = []
    for run in runs:
        mine = [r for r in rows if r["family"] == run and r.get("gpus")]
        if not mine:
            continue
        top = max(mine, key=lambda r: (r["gpus"], r["jobs"]))
        fitted = script.exponent(mine)
        slope = f"{fitted:.2f}" if fitted is not None else (top.get("exponent") or "-")
        extra = " ".join(script.FAMILIES[run][3])
        body.append([f"{script.FAMILIES[run][0]}" + (f" (`{extra}`)" if extra else ""), f"`{top['method']}`", f"{top['gpus']:,}",
                     f"{top['jobs']:,}", top["wall_s"], top["peak_mb"], number(top["objective"]), number(top["bound"]),
                     number(top["ratio_bound"], 5), top["check"], slope])
    if not body:
        return f"No stored scale run for `{family}`."
    out.append(table(["family", "method", "GPUs", "jobs", "wall s", "peak MB", "objective", "bound", "ratio ≤ (certified)", "check",
                      "exponent"], body, "---|---|---:|---:|---:|---:|---:|---:|---:|---|---:"))
    ladder = any(sum(r["family"] == run for r in rows) > 1 for run in runs)
    if family is None and ladder:
        out += ["", "Every point of the ladder:", "", script.table(rows).strip()]
    if family is None and (folder / "scale.png").exists():
        out += ["", figure(folder / "scale.png", page, "Wall time of each family's approximation against the cluster's size")]
    out += ["", provenance(folder)]
    return "\n".join(out)


# -- production scale where capacity binds ------------------------------------------------------

def render_hard(family: str | None, page: Path | None) -> str:
    """The hard ladder (``benchmarks/scale_hard.py``): per run and size the bracket (the best checked
    answer against the best proven bound, over every method), then every method's row (its certified
    ratio against that bound, wall time and limit, peak memory, status) in the script's own table;
    ``family`` keeps the runs of that family (``packing-servers`` and ``packing-weight`` are
    ``packing``'s, by the rows' ``family`` column)."""
    folder = DATA / "hard"
    if not (folder / "hard.csv").exists():
        return f"No stored hard-ladder run: `{(folder / 'hard.csv').relative_to(ROOT)}` is missing."
    script = _script("scale_hard")
    rows = [r for r in script.read(folder / "hard.csv") if family is None or r["family"] == family]
    if not rows:
        return "\n".join([f"The stored hard ladder has no run of `{family}`.", "", provenance(folder)])
    points: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        points.setdefault((r["run"], r["jobs"]), []).append(r)
    body = []
    for (run, jobs), mine in points.items():
        top = mine[0]
        exact = next((r for r in mine if r.get("method") == "exact"), None)
        best = min((r for r in mine if r.get("ratio")), key=lambda r: r["ratio"], default=None)
        body.append([f"`{run}`", f"{jobs:,}" if jobs else "-", f"{top['servers']:,} ({number(top['gpus'])})" if top.get("servers") else "-",
                     top.get("sense") or "-", number(top.get("best_objective")), number(top.get("best_bound")),
                     number(top.get("bracket"), 5), f"`{best['method']}`" if best else "-",
                     f"{exact['status']}, {number(exact['wall_s'], 4)} s" if exact and exact.get("status") else "-"])
    out = [table(["run", "jobs", "servers (GPUs)", "sense", "best answer", "best bound", "bracket", "best method", "exact"], body,
                 "---|---:|---:|---|---:|---:|---:|---|---"),
           "", "Every method at every point (ratio: its objective against the point's best bound, certified; LATE: past its "
               "limit + 10 %):", "", script.table(rows).strip()]
    if family is None and (folder / "hard.png").exists():
        out += ["", figure(folder / "hard.png", page, "The bracket and each method's certified ratio against the number of jobs, per run")]
    out += ["", provenance(folder)]
    return "\n".join(out)


# -- both ladders, one line per family (the README's) ------------------------------------------------

#: README rows: label, the light ladder's runs (the best of them shown), the hard ladder's run
BOTH_LADDERS = [("packing, most weight", ("packing",), "packing-weight"),
                ("packing, fewest servers", ("packing-servers", "packing-servers-pop"), "packing-servers"),
                ("smd", ("smd",), "smd"), ("oasis", ("oasis",), "oasis"), ("hetero", ("hetero",), "hetero"),
                ("locality", ("locality",), "locality"), ("harmony", ("harmony",), "harmony")]


def render_both_ladders() -> str:
    """At each ladder's largest point, per family: the light ladder's best approximation run and its
    certified ratio; on the hard ladder, ``exact``'s answer against the best bound any run proved
    there (status, wall time) and the best approximation's certified ratio."""
    light = _script("scale").read_rows(DATA / "scale" / "scale.csv")
    hard = _script("scale_hard").read(DATA / "hard" / "hard.csv")
    body = []
    for label, light_runs, hard_run in BOTH_LADDERS:
        mine = [r for r in light if r["family"] in light_runs and r.get("gpus")]
        top = max((r["gpus"], r["jobs"]) for r in mine) if mine else None
        best_light = min((r for r in mine if (r["gpus"], r["jobs"]) == top and r.get("ratio_bound")),
                         key=lambda r: float(r["ratio_bound"]), default=None)
        points = [r for r in hard if r["run"] == hard_run]
        jobs = max((r["jobs"] for r in points), default=None)
        at = [r for r in points if r["jobs"] == jobs]
        exact = next((r for r in at if r["method"] == "exact"), None)
        approx = min((r for r in at if r["method"] != "exact" and r.get("ratio")), key=lambda r: r["ratio"], default=None)
        bracket = "-"
        if exact and exact.get("ratio"):
            bracket = f"{number(exact['ratio'], 5)} ({exact['status']}, {number(exact['wall_s'], 3)} s)"
        body.append([label, f"`{best_light['method']}` {number(best_light['ratio_bound'], 4)}" if best_light else "-", bracket,
                     f"`{approx['method']}` {number(approx['ratio'], 4)}" if approx else "-"])
    return table(["family", "light ladder: method, ratio ≤", "hard ladder: `exact` against the best bound",
                  "hard ladder: best approximation, ratio ≤"],
                 body, "---|---|---|---")


# -- real traces --------------------------------------------------------------------------------

def render_import(family: str | None) -> str:
    folder = DATA / "import_traces"
    rows = [r for r in read_csv(folder / "import_traces.csv") if family is None or r["problem"] == family]
    body = []
    for r in rows:
        if not r.get("jobs"):
            body.append([f"{r['source']} → {r['problem']} {r['args']}".strip(), "-", "-", r["import_s"], r["method"], r.get("status"), "-"])
            continue
        body.append([f"{r['source']} → {r['problem']}" + (f" `{r['args']}`" if r["args"] else ""), int(r["jobs"]),
                     f"{int(r['servers']):,} ({float(r['gpus']):,.0f})", r["import_s"], f"`{r['method']}`",
                     f"{r.get('solve_s') or '-'} ({r.get('method_s') or '-'})", r["check"]])
    out = [table(["source → problem", "jobs", "servers (GPUs)", "import s", "method", "solve s (method s)", "check"], body), "",
           provenance(folder)]
    return "\n".join(out)


# -- mlsched bench ------------------------------------------------------------------------------

def suite_problem(suite: str) -> str | None:
    path = ROOT / "benchmarks" / f"{suite}.toml"
    if not path.exists():
        return None
    return tomllib.loads(path.read_text(encoding="utf-8")).get("problem")


def render_suites(family: str | None) -> str:
    folder = DATA / "bench"
    body = []
    for r in read_csv(folder / "suites.csv"):
        if family is not None and suite_problem(r["suite"]) != family:
            continue
        stored = folder / r["suite"]
        note = f" (stored: [{r['suite']}](#{r['suite']}))" if (stored / "summary.csv").exists() else ""
        body.append([f"`{r['suite']}`{note}", r["what"], r["tasks"], r["wall"], r["workers"], f"`{r['commit']}`"])
    if not body:
        return f"No suite of `{family}` is stored."
    out = [table(["suite", "what", "tasks", "wall", "--workers", "commit"], body, "---|---|---:|---:|---:|---"), "",
           provenance(folder)]
    return "\n".join(out)


SUMMARY_SHOWN = [("label", "method"), ("n", "n"), ("median_ratio", "median ratio"), ("p90_ratio", "p90"), ("worst_ratio", "worst"),
                 ("certified", "certified"), ("mean_objective", "mean objective"), ("median_wall_s", "median s"),
                 ("max_wall_s", "max s"), ("errors", "errors")]


def render_bench(name: str) -> str:
    folder = DATA / "bench" / name
    rows = [r for r in read_csv(folder / "summary.csv") if r.get("setting") in ("all", "")] or read_csv(folder / "summary.csv")
    shown = [(key, title) for key, title in SUMMARY_SHOWN if any(r.get(key) not in (None, "") for r in rows)]
    body = [[f"`{r[key]}`" if key == "label" else (number(r[key], 4) if key not in ("n", "certified", "errors") else r[key])
             for key, _ in shown] for r in rows]
    return "\n".join([table([t for _, t in shown], body), "", provenance(folder)])


def render_harmony_worlds() -> str:
    folders = sorted((DATA / "bench").glob("harmony_drl-*"))
    worlds = {f.name.split("-", 1)[1]: {r["label"]: r for r in read_csv(f / "summary.csv")} for f in folders}
    order = ["default", "hard", "gavel"]
    names = sorted(worlds, key=lambda w: order.index(w) if w in order else len(order))
    labels = list(next(iter(worlds.values())))
    body = []
    for world in names:
        row: list[Any] = [world]
        best = min(float(r["mean_objective"]) for label, r in worlds[world].items() if "(bound)" not in label)
        for label in labels:
            r = worlds[world].get(label)
            if r is None:
                row.append("-")
                continue
            text = f"{float(r['mean_objective']):.2f}"
            if "(bound)" not in label and r.get("median_ratio"):
                text += f" ({float(r['median_ratio']):.2f})"
            if "(bound)" not in label and float(r["mean_objective"]) == best:
                text = f"**{text.split(' ')[0]}**" + text[len(text.split(' ')[0]):]
            row.append(text)
        body.append(row)
    out = [table(["world", *labels], body), ""]
    out += ["Mean over the traces of the average JCT (intervals; the best method of each world in bold) and, in brackets, the "
            "median ratio to the proven lower bound (`standalone (bound)`)."]
    for world in names:
        out += ["", f"**{world}**: " + provenance(DATA / "bench" / f"harmony_drl-{world}").removeprefix("*Source*: ")]
    return "\n".join(out)


def render_harmony_gym() -> str:
    folder = DATA / "harmony_gym"
    body = []
    for path in sorted(folder.glob("harmony_gym-*.csv")):
        for r in read_csv(path):
            body.append([r["world"], r["method"], r["mean_avg_jct"] or f"error: {r['error']}", r["mean_deferrals"], r["train_s"],
                         f"{int(r['timesteps']):,}" if r["timesteps"] else ""])
    return "\n".join([table(["world", "method", "mean average JCT", "holds back per trace", "training wall s", "training steps"], body,
                            "---|---|---:|---:|---:|---:"), "", provenance(folder)])


def render_harmony_curve(page: Path | None) -> str:
    folder = DATA / "harmony_curve"
    return "\n".join([figure(folder / "harmony_curve.png", page, "harmony learning curves"), "", provenance(folder)])


def render_fragmentation(page: Path | None) -> str:
    """The fragmentation experiment over every order of each pod list (the trace's and the seeded
    shuffles): each method's unallocated GPUs at saturation (median, worst), how far it is from the
    optimum (between the best offline placement, a lower bound on it, and the LP bound above it),
    and how many fewer GPUs FGD leaves unallocated than the method (the paper's headline measure:
    up to 49 % fewer; median and the smallest cut); then, on small clusters, each method against
    the certified optimum."""
    from statistics import median

    folder = DATA / "fragmentation"
    rows = read_csv(folder / "summary.csv")
    fgd = {(r["variant"], r["order"]): float(r["unallocated_gpus"]) for r in rows if r["method"] == "fgd"}
    groups: dict[tuple[str, str], list[dict[str, str]]] = {}
    for r in rows:
        groups.setdefault((r["variant"], r["method"]), []).append(r)
    body = []
    for (variant, method), rs in groups.items():
        unalloc = [float(r["unallocated_gpus"]) for r in rs]
        low = [float(r["from_offline_gpus"]) for r in rs]
        high = [float(r["from_bound_gpus"]) for r in rs]
        cuts = [1 - fgd[(r["variant"], r["order"])] / float(r["unallocated_gpus"]) for r in rs
                if method != "fgd" and (r["variant"], r["order"]) in fgd and float(r["unallocated_gpus"]) > 0]
        body.append([variant, method, len(rs), f"{median(unalloc):,.1f} / {max(unalloc):,.1f}",
                     f"{median(low):,.1f}-{median(high):,.1f}", f"{max(low):,.1f}-{max(high):,.1f}",
                     f"{100 * median(cuts):.0f} % / {100 * min(cuts):.0f} %" if cuts else ""])
    cluster = float(rows[0]["cluster_gpus"])
    gaps = [float(r["bound_gpus"]) - float(r["offline_gpus"]) for r in rows]  # one bracket per order, on each of its rows
    parts = [figure(folder / "fragmentation.png", page, "GPU allocation against arrived GPU demand, per method, with the LP bound"), "",
             table(["pods", "method", "orders", "unallocated at saturation (median / worst)", "from the optimum (median)",
                    "from the optimum (worst)", "FGD's cut of unallocated GPUs (median / smallest)"], body,
                   "---|---|---:|---:|---:|---:|---:"), "",
             f"The optimum lies between the best offline placement and the LP bound: at most {max(gaps):,.1f} GPUs apart "
             f"({100 * max(gaps) / cluster:.2f} % of the {cluster:,.0f} GPUs) on every order, so each method's distance from the "
             "optimum is certified to within that bracket."]
    if (folder / "exact.csv").exists():
        small = read_csv(folder / "exact.csv")
        methods = [k[:-5] for k in small[0] if k.endswith("_gpus") and k[:-5] not in
                   ("cluster", "lp_bound", "offline", "exact", "exact_bound", "optimum")]
        sbody = []

        def num(r: dict[str, str], key: str) -> float | None:
            return float(r[key]) if r.get(key) else None

        for size in sorted({int(r["nodes"]) for r in small}):
            rs = [r for r in small if int(r["nodes"]) == size]
            # the optimum's bracket: the best checked answer (offline or exact) and the tighter bound
            low = [max(float(r["offline_gpus"]), num(r, "exact_gpus") or 0.0) for r in rs]
            high = [min(float(r["lp_bound_gpus"]), num(r, "exact_bound_gpus") or float("inf")) for r in rs]
            certified = sum(1 for r in rs if r["optimum_gpus"])
            for method in methods:
                near = [lo - float(r[f"{method}_gpus"]) for lo, r in zip(low, rs)]
                far = [hi - float(r[f"{method}_gpus"]) for hi, r in zip(high, rs)]
                share = [100 * f / float(r["cluster_gpus"]) for f, r in zip(far, rs)]
                sbody.append([size, f"{certified} of {len(rs)}", method, f"{median(near):,.2f}-{median(far):,.2f}",
                              f"{max(near):,.2f}-{max(far):,.2f}", f"{max(share):.1f} %"])
        parts += ["", table(["nodes", "optimum certified", "method", "GPUs from the optimum (median)", "(worst)",
                             "at most, share of the cluster's GPUs"], sbody, "---:|---:|---|---:|---:|---:")]
    parts += ["", provenance(folder)]
    return "\n".join(parts)


# -- entry points -------------------------------------------------------------------------------

NAMES = ["scale", "hard", "both-ladders", "import-traces", "bench-suites", "harmony-worlds", "harmony-gym", "harmony-curve",
         "fragmentation"]


def inputs(name: str) -> list[Path]:
    """The stored files :func:`render` reads for ``name`` (the pages that show it are rebuilt when one changes)."""
    kind, _, arg = name.partition(":")
    if kind == "both-ladders":
        return inputs("scale") + inputs("hard")
    folder = {"scale": DATA / "scale", "hard": DATA / "hard", "import-traces": DATA / "import_traces", "bench-suites": DATA / "bench",
              "bench": DATA / "bench" / arg, "harmony-gym": DATA / "harmony_gym", "harmony-curve": DATA / "harmony_curve",
              "fragmentation": DATA / "fragmentation"}.get(kind)
    if kind == "harmony-worlds":
        return sorted(p for f in (DATA / "bench").glob("harmony_drl-*") for p in f.iterdir())
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder is not None and folder.is_dir() else []


def render(name: str, page: Path | None = None) -> str:
    """The Markdown of result ``name`` (see the module docstring); ``page`` is the page that shows it
    (figures are linked relative to it)."""
    kind, _, arg = name.partition(":")
    family = arg or None
    if kind == "scale":
        return render_scale(family, page)
    if kind == "hard":
        return render_hard(family, page)
    if kind == "both-ladders":
        return render_both_ladders()
    if kind == "import-traces":
        return render_import(family)
    if kind == "bench-suites":
        return render_suites(family)
    if kind == "bench":
        return render_bench(arg)
    if kind == "harmony-worlds":
        return render_harmony_worlds()
    if kind == "harmony-gym":
        return render_harmony_gym()
    if kind == "harmony-curve":
        return render_harmony_curve(page)
    if kind == "fragmentation":
        return render_fragmentation(page)
    raise KeyError(f"unknown result {name!r} (known: {', '.join(NAMES)}, and NAME:FAMILY / bench:FOLDER)")


def main(argv: list[str]) -> int:
    for name in argv or NAMES:
        print(f"<!-- {name} -->\n{render(name)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
