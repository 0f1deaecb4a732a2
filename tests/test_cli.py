"""The mlsched command end to end, as scripts drive it."""

from __future__ import annotations

import json
import re

from mlsched_opt.io import load_instance

from .conftest import DEMO, ROOT, correlated_knapsack


def test_info_lists_problems_methods_solvers_catalog(run):
    code, out, _ = run("info")
    assert code == 0
    for words in ("packing", "--method exact", "--method ffd", "highs: 1.11.0", "scip: ", "cpsat: 9.15", "resnet50"):
        assert words in out


def test_validate(run):
    code, out, _ = run("validate", DEMO)
    assert code == 0 and "valid (demo)" in out and "6 servers" not in out and "servers: 6 (20 GPUs)" in out


def test_solve_json_contract(run):
    code, out, _ = run("solve", DEMO, "--method", "exact", "--solver", "cpsat", "--gap", "0", "--json")
    assert code == 0
    doc = json.loads(out)
    for key in ("status", "objective", "bound", "gap", "wall_s", "solver", "method", "problem"):
        assert key in doc
    assert (doc["status"], doc["objective"], doc["solver"], doc["problem"]) == ("optimal", 42.0, "cpsat", "packing")
    assert doc["check"]["feasible"] is True


def test_solve_write_then_check(run, tmp_path):
    sol = tmp_path / "ffd.sol.json"
    code, out, _ = run("solve", DEMO, "--method", "ffd", "--out", sol)
    assert code == 0 and "check: ok" in out
    code, out, _ = run("check", DEMO, sol)
    assert code == 0 and out.startswith("ok: feasible, objective 36")
    doc = json.loads(sol.read_text())
    assert doc["instance"]["sha256"] == load_instance(DEMO).sha256
    assert doc["problem_options"] == {"objective": "weight"}
    # tamper: claim a better objective and put a worker on the PS-only host
    doc["report"]["objective"] = 40
    job = doc["decision"]["admitted"][0]
    doc["decision"]["placement"][job]["workers"]["ps-host"] = 1
    sol.write_text(json.dumps(doc))
    code, out, _ = run("check", DEMO, sol)
    assert code == 1
    assert "violation(s):" in out
    assert re.search(r"eligibility\[placement\.[^\]]+\.workers\.ps-host\]: worker of job .* may not run here \(role 'ps'\)", out)
    assert "objective[report]: stated 40" in out
    code, out, _ = run("check", DEMO, sol, "--json")
    assert code == 1 and json.loads(out)["feasible"] is False


def test_check_refuses_a_solution_for_another_instance(run, tmp_path):
    sol = tmp_path / "s.json"
    run("solve", DEMO, "--method", "ffd", "--out", sol)
    other = tmp_path / "other.toml"
    other.write_text(DEMO.read_text().replace("weight = 9", "weight = 10"))
    code, out, _ = run("check", other, sol)
    assert code == 1 and "different instance" in out


def test_export_both_formats(run, tmp_path):
    for fmt in ("mps", "lp"):
        path = tmp_path / f"demo.{fmt}"
        code, out, _ = run("export", DEMO, "-o", path)
        assert code == 0 and f"({fmt}," in out
        assert "admit(bert_squad)" in path.read_text()


def test_generate_is_deterministic(run, tmp_path):
    a, b, c = tmp_path / "a.toml", tmp_path / "b.toml", tmp_path / "c.toml"
    for path, seed in ((a, 7), (b, 7), (c, 8)):
        code, _, _ = run("generate", "--problem", "packing", "--jobs", 8, "--servers", 3, "--seed", seed, "-o", path)
        assert code == 0
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    inst = load_instance(a)
    assert len(inst.jobs) == 8 and len(inst.servers) == 3
    code, out, _ = run("solve", a, "--json")
    assert code == 0 and json.loads(out)["status"] == "optimal"


def test_generate_json_and_slots(run, tmp_path):
    path = tmp_path / "g.json"
    code, _, _ = run("generate", "--problem", "packing", "--jobs", 4, "--servers", 2, "--slots", 6, "--seed", 1, "-o", path)
    assert code == 0
    inst = load_instance(path)
    assert inst.slots == 6 and all(0 <= j.arrival_slot < 6 for j in inst.jobs)


def test_compare_table(run):
    code, out, err = run("compare", DEMO)
    assert code == 0
    lines = out.splitlines()
    header = lines[1].split()
    assert header == ["method", "status", "objective", "bound", "gap", "wall", "s", "ratio", "check", "certified", "by"]
    rows = {line.split("  ")[0].strip(): line for line in lines[3:] if line and not line.startswith("ratio")}
    assert set(rows) == {"exact (highs)", "exact (cpsat)", "ffd", "lp-relaxation (bound)"}
    assert re.search(r"ffd\s+feasible\s+36\s+-\s+-\s+[\d.]+\s+1\.167\s+ok\s+-", rows["ffd"])
    # each exact row names the other solver that confirmed its optimum
    assert re.search(r"optimal\s+42\s+42\s+0\s+[\d.]+\s+1\s+ok\s+scip$", rows["exact (highs)"])
    assert re.search(r"optimal\s+42\s+42\s+0\s+[\d.]+\s+1\s+ok\s+highs$", rows["exact (cpsat)"])
    assert "running ffd" in err  # progress goes to stderr


def test_compare_with_only_a_bound(run, tmp_path):
    path = tmp_path / "hard.json"
    path.write_text(json.dumps(correlated_knapsack()))
    code, out, _ = run("compare", path, "--time-limit", "0.5", "--gap", "0", "--solvers", "highs", "--json")
    assert code == 0
    rows = {r["label"]: r for r in json.loads(out)}
    assert rows["exact (highs)"]["status"] == "feasible"
    assert rows["ffd"]["ratio_is_bound"] is True and rows["ffd"]["ratio"] >= 1


def test_readme_and_ci_agree():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make demo" in readme and "make test" in readme
    assert "\nmake test\n" in ci


def test_check_takes_problem_options_from_the_instance_and_command_line_never_the_solution(run, tmp_path):
    """A servers-mode answer is checked as one only when the command line (or the instance) says so;
    a solution that rewrites its recorded options to pass is caught."""
    inst = tmp_path / "p.toml"
    assert run("generate", "--problem", "packing", "--jobs", "6", "--servers", "4", "--seed", "7", "-o", inst)[0] == 0
    sol = tmp_path / "s.json"
    code, out, _ = run("solve", inst, "--method", "ffd", "--set", "objective=servers", "--out", sol)
    assert code == 0 and json.loads(sol.read_text())["decision"], out
    code, out, _ = run("check", inst, sol, "--set", "objective=servers")
    assert code == 0, out
    # without --set the problem is the default (weight): the recorded objective=servers is reported
    code, out, _ = run("check", inst, sol)
    assert code == 1 and "problem-options[problem_options]" in out
    # forging the record does not help: the objective is recomputed for the problem of the command line
    doc = json.loads(sol.read_text())
    doc["problem_options"]["objective"] = "weight"
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(doc))
    code, out, _ = run("check", inst, forged)
    assert code == 1 and "objective[report]" in out
    # the instance's own options table sets the problem too; --set overrides it
    text = inst.read_text().replace('problem = "packing"', 'problem = "packing"\n\n[options]\nobjective = "servers"', 1)
    inst2 = tmp_path / "p-servers.toml"
    inst2.write_text(text)
    sol2 = tmp_path / "s2.json"
    assert run("solve", inst2, "--method", "ffd", "--out", sol2)[0] == 0
    assert json.loads(sol2.read_text())["problem_options"]["objective"] == "servers"
    assert run("check", inst2, sol2)[0] == 0
    assert run("check", inst2, sol2, "--set", "objective=weight")[0] == 1


def test_instance_options_are_validated_with_their_field(run, tmp_path):
    inst = tmp_path / "bad.toml"
    inst.write_text(DEMO.read_text().replace('problem = "packing"', 'problem = "packing"\n\n[options]\nobjective = "cost"', 1))
    code, _, err = run("solve", inst, "--method", "ffd")
    assert code == 2 and "options.objective" in err and str(inst) in err


def test_outputs_never_overwrite_catalog_files_and_solutions_are_json(run, tmp_path):
    import shutil

    catalog = tmp_path / "cat"
    shutil.copytree(ROOT / "models", catalog)
    entry = next(catalog.glob("*.toml"))
    before = entry.read_bytes()
    for args in (["solve", DEMO, "--method", "ffd", "--out", entry],
                 ["export", DEMO, "--format", "lp", "-o", entry],
                 ["generate", "--problem", "packing", "--jobs", "3", "--servers", "2", "--seed", "1", "-o", entry]):
        code, _, err = run("--catalog", catalog, *args)
        assert code == 2 and "refusing to overwrite the input file" in err, (args, err)
    assert entry.read_bytes() == before
    code, _, err = run("solve", DEMO, "--method", "ffd", "--out", tmp_path / "sol.toml")
    assert code == 2 and "--out" in err and ".json" in err


def test_the_api_honours_the_instance_options_table_like_the_cli(tmp_path):
    from mlsched_opt.checking import check_solution
    from mlsched_opt.problems import get_family
    from mlsched_opt.solvers import SolveOptions

    inst_path = tmp_path / "p.toml"
    inst_path.write_text(DEMO.read_text().replace('problem = "packing"', 'problem = "packing"\n\n[options]\nobjective = "servers"', 1))
    inst = load_instance(inst_path)
    sol = get_family("packing").run(inst, "ffd", SolveOptions(), {})
    assert sol.problem_options["objective"] == "servers"
    assert not any(v.rule == "problem-options" for v in check_solution(inst, sol).violations)
