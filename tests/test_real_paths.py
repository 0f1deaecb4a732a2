"""The real-data paths of issue 31 that broke: each test fails on the code before its fix.

Tests on the real data take the ``data_dir`` fixture (they skip, saying why, without the shared
data folder); the others build what they need.
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import statistics
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import assume, given, settings, strategies as st

from mlsched_opt.problems.locality.online import BOTH, Rounding, Schedule, Window, _first_deadline
from mlsched_opt.problems.locality.pcilp import LocalityJob, Patterns
from mlsched_opt.solvers import SolveOptions, cpsat, solve
from mlsched_opt.solvers.certify import certify, model_checker
from mlsched_opt.solvers.scip import scip_available
from mlsched_opt.tolerances import core_capacity_limit

from .conftest import DEMO

# --- 1. locality: the deadline scan reads past the window it has computed -----------------------------------------


@dataclasses.dataclass(frozen=True)
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
    """``solve --out`` (its own check must pass) and ``check`` of the written answer; the solve's text."""
    answer = tmp_path / f"{method}.json"
    code, text, err = run("solve", instance, "--method", method, "--out", answer, *args)
    assert code == 0 and "check: ok" in text, (method, text, err)
    sets = [a for i, a in enumerate(args) if a == "--set" or (i and args[i - 1] == "--set")]
    code, verdict, err = run("check", instance, answer, *sets)
    assert code == 0 and "ok: feasible" in verdict, (method, verdict, err)
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


# --- 2. CP-SAT: an exact integer form of every row HiGHS takes, else HiGHS and a note ----------------------------------


def _points(domains: list[tuple[int, int]]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(lo, hi + 1) for lo, hi in domains)))


def _holds(coefs, x, lo, hi) -> bool:  # type: ignore[no-untyped-def]
    value = sum(c * v for c, v in zip(coefs, x))
    return (lo is None or value >= lo) and (hi is None or value <= hi)


decimals = st.builds(lambda n, places: Fraction(n, 10**places), st.integers(-10**9, 10**9), st.integers(0, 16))
bounds = st.one_of(st.none(), decimals)


@settings(max_examples=300)
@given(st.lists(st.tuples(decimals, st.integers(-2, 1), st.integers(0, 3)), min_size=1, max_size=3), bounds, bounds)
def test_integer_row_keeps_exactly_the_integer_points(terms, lower, upper):
    assume(lower is not None or upper is not None)
    coefs = [c for c, _, _ in terms]
    domains = [(lo, lo + width) for _, lo, width in terms]
    for row in (cpsat._scaled(coefs, [cpsat._span(*d) for d in domains], lower, upper),
                cpsat._fold_one(coefs, domains, [cpsat._span(*d) for d in domains], lower, upper)):
        if row is None:
            continue
        assert all(isinstance(c, int) for c in row.coefs)
        for x in _points(domains):
            assert _holds(coefs, x, lower, upper) == _holds(row.coefs, x, row.lo, row.hi), (x, row)


def test_a_capacity_with_the_checkers_slack_on_a_used_binary_is_exact():
    """Alibaba's memory (274.877906944 GB) against the checker's limit ``cap (1 + 1e-6)`` times ``used``: the common
    denominator (10^14) is past CP-SAT's range, the fold into the threshold keeps every integer point."""
    demand = [cpsat.decimal(x) for x in (12.884901888, 25.769803776, 4.294967296)]
    cap = cpsat.decimal(core_capacity_limit(274.877906944))
    domains = [(0, 8), (0, 8), (0, 8), (0, 1)]
    coefs = [*demand, -cap]
    spans = [cpsat._span(*d) for d in domains]
    assert cpsat._scaled(coefs, spans, None, Fraction(0)) is None  # 10^14 x 8 x ... is beyond 2^53
    row = cpsat.integer_row(coefs, domains, None, Fraction(0))
    assert row is not None
    for x in _points(domains):
        assert _holds(coefs, x, None, 0) == _holds(row.coefs, x, row.lo, row.hi), x


def _slack_model(cap: float, demand: float, count: int) -> pyo.ConcreteModel:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, count))
    m.cap = pyo.Constraint(expr=demand * m.x <= core_capacity_limit(cap))
    m.o = pyo.Objective(expr=m.x, sense=pyo.maximize)
    return m


def test_cpsat_takes_the_checkers_slack_without_cutting_a_load_at_the_limit():
    # 3 x 0.5000005 = 1.5000015 is exactly the checker's limit of 1.5 (1.5 + 1e-6 x 1.5): accepted, so CP-SAT must take x = 3
    report = solve(_slack_model(1.5, 0.5000005, 5), SolveOptions(solver="cpsat", gap=0.0))
    assert report.solver == "cpsat" and report.status == "optimal" and report.objective == 3
    report = solve(_slack_model(1.5, 0.5000006, 5), SolveOptions(solver="cpsat", gap=0.0))
    assert report.objective == 2


def test_cpsat_hands_a_row_beyond_its_range_to_highs_and_says_so():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(["a", "b"], domain=pyo.NonNegativeIntegers, bounds=(0, 10**6))
    m.c = pyo.Constraint(expr=0.1234567890123 * m.x["a"] + 98765.4321 * m.x["b"] <= 10**9)
    m.o = pyo.Objective(expr=m.x["a"] + m.x["b"], sense=pyo.maximize)
    with cpsat.strict(), pytest.raises(cpsat.NotTranslatable, match="safe range"):
        solve(m, SolveOptions(solver="cpsat"))
    report = solve(m, SolveOptions(solver="cpsat"))
    assert report.has_solution and report.solver == "highs"
    assert "CP-SAT cannot take this model exactly" in report.message and "solved by HiGHS instead" in report.message
    assert "--solver" not in report.message


def test_certify_referees_a_cpsat_fallback_with_scip_not_highs():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(["a", "b"], domain=pyo.NonNegativeIntegers, bounds=(0, 10**6))
    m.c = pyo.Constraint(expr=0.1234567890123 * m.x["a"] + 98765.4321 * m.x["b"] <= 10**5)
    m.o = pyo.Objective(expr=m.x["a"] + 2 * m.x["b"], sense=pyo.maximize)
    options = SolveOptions(solver="cpsat", gap=0.0)
    report = solve(m, options)
    assert report.solver == "highs" and report.status == "optimal"
    extract, evaluate = model_checker(m)
    certified, _ = certify(m, report, extract(m), options, time.perf_counter() + 30, extract, evaluate)
    if scip_available():
        assert certified.certified_by[0].startswith("scip"), certified.message
    else:  # CP-SAT cannot referee it (strict), so no second opinion: unconfirmed, never HiGHS confirming itself
        assert certified.status == "feasible" and "cpsat cannot take this model" in certified.message
    assert not any("highs" in label for label in certified.certified_by)


@pytest.fixture(scope="module")
def alibaba_packing(tmp_path_factory, data_dir) -> Path:
    from mlsched_opt.cli import main

    out = tmp_path_factory.mktemp("alibaba") / "pods.toml"
    with pytest.raises(SystemExit) as exc:
        main(["import", "alibaba", "--problem", "packing", "--jobs", "60", "--servers", "16", "-o", str(out)])
    assert exc.value.code == 0
    return out


@pytest.mark.parametrize("objective", ["weight", "servers"])
def test_cpsat_answers_an_alibaba_packing_import(run, tmp_path, alibaba_packing, objective):
    text = _solve_and_check(run, tmp_path, alibaba_packing, "exact", "--solver", "cpsat", "--set", f"objective={objective}",
                            "--time-limit", "20")
    assert "solver cpsat" in text and "solved by HiGHS" not in text


def test_compare_on_an_alibaba_packing_import_keeps_its_highs_row(run, alibaba_packing):
    code, text, err = run("compare", alibaba_packing, "--time-limit", "20", "--json")
    assert code in (0, 1), err
    rows = {r["label"]: r for r in json.loads(text)}
    assert rows["exact (highs)"]["status"] in ("optimal", "feasible") and rows["exact (cpsat)"]["solver"] == "cpsat"


# --- 3. compare and bench keep every row that finished -----------------------------------------------------------


def test_compare_keeps_the_finished_rows_when_a_solver_or_method_fails(monkeypatch):
    from mlsched_opt.comparison import compare_rows as compare, exit_code, format_table
    from mlsched_opt.errors import SolverUnavailable
    from mlsched_opt.io import load_instance
    from mlsched_opt.problems import get_family

    def refuses(model, options):
        raise SolverUnavailable("the back end refuses this model", field="--solver")

    family = get_family("packing")
    monkeypatch.setattr(cpsat, "solve_cpsat", refuses)
    monkeypatch.setitem(family.methods, "pop", dataclasses.replace(family.methods["pop"], run=_boom))
    inst = load_instance(DEMO)
    rows = {r.label: r for r in compare(inst, family, [("exact", "highs"), ("exact", "cpsat"), ("ffd", "highs"), ("pop", "highs")],
                                        {}, SolveOptions(time_limit=30))}
    assert rows["exact (highs)"].report.status == "optimal" and rows["exact (highs)"].ratio == 1.0
    assert rows["exact (cpsat)"].report.status == "error" and "refuses this model" in rows["exact (cpsat)"].report.message
    assert rows["pop"].report.status == "error" and rows["pop"].report.message == "RuntimeError: boom in a method"
    assert rows["ffd"].check is not None and rows["ffd"].check.feasible and rows["ffd"].ratio is not None
    assert rows["exact (cpsat)"].ratio is None and rows["pop"].ratio is None
    assert exit_code(list(rows.values())) == 1
    table = format_table(list(rows.values()))
    assert "error in exact (cpsat): --solver: the back end refuses this model" in table


def _boom(*args, **kwargs):  # type: ignore[no-untyped-def]
    raise RuntimeError("boom in a method")


def test_compare_command_keeps_the_highs_row_when_cpsat_fails(run, monkeypatch):
    from mlsched_opt.errors import SolverUnavailable

    def refuses(model, options):
        raise SolverUnavailable("the back end refuses this model", field="--solver")

    monkeypatch.setattr(cpsat, "solve_cpsat", refuses)
    code, text, err = run("compare", DEMO, "--json")
    assert code != 2, err  # the command line was fine: a failed row is no usage error
    rows = {r["label"]: r for r in json.loads(text)}
    assert rows["exact (highs)"]["status"] == "optimal" and rows["exact (cpsat)"]["status"] == "error"
    assert rows["ffd"]["ratio"] is not None


def _bench_row(label, role, method, status, objective, check="ok", bound=None, certified_by="", sense="max"):
    from mlsched_opt.bench import tasks as tasks_mod

    row = dict.fromkeys(tasks_mod.COLUMNS)
    row.update(instance="i", problem_options="{}", label=label, role=role, method=method, status=status, objective=objective,
               bound=bound, check=check, sense=sense, certified_by=certified_by, message="", solver="", solver_version="",
               setting="s", problem="packing", wall_s=0.1, jobs=4)
    return row


@pytest.mark.parametrize("failed_first", [True, False])
def test_a_failed_reference_row_does_not_poison_the_other_ratios(failed_first):
    from mlsched_opt.bench import report

    failed = _bench_row("exact (highs)", "reference", "exact", "error", None, check="none", sense=None)
    failed["message"] = "--solver: the back end refuses this model"
    proven = _bench_row("exact (cpsat)", "reference", "exact", "optimal", 10.0, bound=10.0, certified_by="scip")
    refs = [failed, proven] if failed_first else [proven, failed]
    rows = [*refs, _bench_row("FFD", "method", "ffd", "feasible", 8.0)]
    report.fill_references(rows, "exact", 1e-6)
    assert failed["ratio"] is None and failed["status"] == "error"
    assert rows[-1]["reference"] == 10.0 and rows[-1]["reference_kind"] == "optimum" and rows[-1]["ratio"] == 1.25
    assert rows[-1]["certified"]
    alone = [_bench_row("exact (highs)", "reference", "exact", "error", None, check="none", sense=None),
             _bench_row("FFD", "method", "ffd", "feasible", 8.0)]
    report.fill_references(alone, "exact", 1e-6)  # no reference at all: no ratio, never one against nothing
    assert alone[1]["ratio"] is None and alone[1]["reference_kind"] == "none"


# --- 4. a wheel user's data folder: --data, $MLSCHED_SHARED_DATA, then from the current folder --------------------

POLLUX = "name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,2,256\nbert-1,110,bert,1,12\nncf-2,900,ncf,4,64\n"


@pytest.fixture
def installed(tmp_path, monkeypatch) -> Path:
    """The package as a wheel installs it (no checkout around it); a working folder to run from."""
    from mlsched_opt.io import shared_data

    site = tmp_path / "venv" / "lib" / "site-packages"
    (site / "mlsched_opt").mkdir(parents=True)
    monkeypatch.setattr(shared_data, "ROOT", site)
    monkeypatch.delenv("MLSCHED_SHARED_DATA", raising=False)
    work = tmp_path / "project" / "runs"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    return work


@pytest.mark.parametrize("where", ["../shared/data", "shared/data"])
def test_a_wheel_import_finds_the_data_from_the_current_folder(run, installed, where):
    data = installed / where
    (data / "pollux" / "workloads").mkdir(parents=True)
    (data / "pollux" / "workloads" / "workload-1.csv").write_text(POLLUX)
    code, _, err = run("import", "pollux", "--problem", "locality", "--set", "cluster=gavel", "--servers", "2", "-o", "p.toml")
    assert code == 0, err
    assert (installed / "p.toml").is_file()


def test_a_wheel_import_without_data_names_the_flag_and_the_variable_not_site_packages(run, installed):
    code, _, err = run("import", "pollux", "--problem", "locality", "-o", "p.toml")
    assert code == 2 and "--data DIR" in err and "MLSCHED_SHARED_DATA" in err, err
    assert "site-packages" not in err and "venv" not in err
    assert "../shared/data from" in err and str(installed) in err  # where it looked, as the user would name it


def test_the_variable_is_authoritative_and_a_wrong_one_is_said(run, installed, monkeypatch, tmp_path):
    (installed / "shared" / "data").mkdir(parents=True)  # would be found, but the user named another folder
    monkeypatch.setenv("MLSCHED_SHARED_DATA", str(tmp_path / "nowhere"))
    code, _, err = run("import", "pollux", "--problem", "locality", "-o", "p.toml")
    assert code == 2 and "$MLSCHED_SHARED_DATA = " in err and "(not a folder)" in err, err


def test_data_given_to_a_command_is_where_family_files_are_read(installed, tmp_path):
    from mlsched_opt.errors import UserError
    from mlsched_opt.io.shared_data import shared_data_dir, shared_file, use_data

    mine = tmp_path / "mine"
    (mine / "pollux").mkdir(parents=True)
    (mine / "pollux" / "x.csv").write_text("a\n")
    with use_data(mine):
        assert shared_data_dir() == mine and shared_file("pollux/x.csv") == mine / "pollux" / "x.csv"
    assert shared_data_dir() is None
    with pytest.raises(UserError, match="pass --data DIR or set MLSCHED_SHARED_DATA") as exc:
        shared_file("pollux/x.csv")
    assert "site-packages" not in str(exc.value)


def test_a_checkout_still_finds_the_data_beside_it(monkeypatch, tmp_path):
    from mlsched_opt.io import shared_data

    checkout = tmp_path / "src" / "mlsched-opt"
    (checkout / "mlsched_opt").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    (tmp_path / "src" / "shared" / "data").mkdir(parents=True)
    monkeypatch.setattr(shared_data, "ROOT", checkout)
    monkeypatch.delenv("MLSCHED_SHARED_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    assert shared_data.shared_data_dir() == tmp_path / "src" / "shared" / "data"


# --- 5. hetero: an empty entry (0 workers, no samples) is no entry -----------------------------------------------


def _hetero_answer():  # type: ignore[no-untyped-def]
    from mlsched_opt.io import load_instance
    from mlsched_opt.problems import get_family

    family = get_family("hetero")
    inst = load_instance(DEMO.parent / "hetero-toy.toml")
    sol = family.run(inst, "sampling", SolveOptions(seed=1))
    return family, inst, sol


def _hetero_check(family, inst, sol, decision):  # type: ignore[no-untyped-def]
    from mlsched_opt.checking import check_for_family

    forged = dataclasses.replace(sol, decision=decision)
    return check_for_family(family, inst, forged, family.resolve_options(inst, {}))


def _idle_server(inst, decision, job):  # type: ignore[no-untyped-def]
    return next(s.name for s in inst.servers if s.name not in decision["placement"][job]["workers"])


def test_hetero_checker_accepts_a_zero_count_entry_with_no_samples():
    family, inst, sol = _hetero_answer()
    decision = json.loads(json.dumps(sol.decision))
    job = next(iter(decision["placement"]))
    idle = _idle_server(inst, decision, job)
    decision["placement"][job]["workers"][idle] = 0
    decision["extra"]["batch"][job][idle] = []
    result = _hetero_check(family, inst, sol, decision)
    assert result.feasible, result.violations
    assert result.objective == pytest.approx(_hetero_check(family, inst, sol, sol.decision).objective)


@pytest.mark.parametrize("samples", [[4], [0]])
def test_hetero_checker_still_rejects_samples_on_a_server_with_no_worker(samples):
    family, inst, sol = _hetero_answer()
    decision = json.loads(json.dumps(sol.decision))
    job = next(iter(decision["placement"]))
    idle = _idle_server(inst, decision, job)
    decision["placement"][job]["workers"][idle] = 0
    decision["extra"]["batch"][job][idle] = samples
    result = _hetero_check(family, inst, sol, decision)
    assert not result.feasible and any("samples on a server with no worker" in str(v) for v in result.violations)


# --- 6. bench never pools objectives of opposite senses ---------------------------------------------------------

BOTH_SENSES = '''name = "both-senses"
problem = "packing"
time_limit = 20
[options]
objective = ["weight", "servers"]
[instances]
generate = { jobs = [4, 6], servers = [6], seeds = [1, 2] }
[reference]
method = "lp"
[[methods]]
name = "ffd"
'''


@pytest.fixture(scope="module")
def both_senses(tmp_path_factory) -> Path:
    """A small packing sweep with objective=weight (max) and objective=servers (min)."""
    from mlsched_opt.bench.cli import bench
    from mlsched_opt.cli import cli, main

    if "bench" not in cli.commands:
        cli.add_command(bench)
    folder = tmp_path_factory.mktemp("both")
    suite = folder / "suite.toml"
    suite.write_text(BOTH_SENSES)
    with pytest.raises(SystemExit) as exc:
        main(["bench", str(suite), "--out", str(folder / "out"), "--workers", "1"])
    assert exc.value.code == 0
    return folder / "out"


def test_bench_summary_never_pools_max_and_min_objectives(both_senses):
    from mlsched_opt.bench import report

    rows = report.read_results(both_senses / "results.csv")
    assert {r["sense"] for r in rows} == {"max", "min"}
    summary = list(csv.DictReader((both_senses / "summary.csv").open()))
    overall = [s for s in summary if s["setting"].startswith("all")]
    assert sorted((s["label"], s["setting"], s["sense"]) for s in overall if s["label"] == "ffd") == \
        [("ffd", "all (max)", "max"), ("ffd", "all (min)", "min")]
    for line in summary:
        group = [r for r in rows if r["label"] == line["label"] and r["sense"] == line["sense"] and r["check"] == "ok"
                 and (line["setting"].startswith("all") or r["setting"] == line["setting"])]
        assert int(line["n"]) == len([r for r in rows if r["label"] == line["label"] and r["sense"] == line["sense"]
                                      and (line["setting"].startswith("all") or r["setting"] == line["setting"])])
        if group:
            assert float(line["mean_objective"]) == pytest.approx(statistics.fmean(r["objective"] for r in group))
    text = (both_senses / "report.md").read_text()
    assert "| ffd | max: higher is better |" in text and "| ffd | min: lower is better |" in text


def test_bench_objective_plot_has_one_panel_per_sense_labelled_with_it(both_senses, monkeypatch, tmp_path):
    from mlsched_opt.bench import report

    plt = report._pyplot()
    if plt is None:
        pytest.skip("matplotlib is not installed (pip install -e '.[bench]')")
    drawn = []
    monkeypatch.setattr(report, "_save", lambda fig, ax, path, plt: (drawn.append([a.get_ylabel() for a in fig.axes]), plt.close(fig)))
    report.plot_objectives(report.read_results(both_senses / "results.csv"), tmp_path, plt)
    (labels,) = drawn
    assert len(labels) == 2 and "higher is better" in labels[0] and "lower is better" in labels[1]
    one = [r for r in report.read_results(both_senses / "results.csv") if r["sense"] == "min"]
    drawn.clear()
    report.plot_objectives(one, tmp_path, plt)
    assert len(drawn[0]) == 1 and "lower is better" in drawn[0][0]
