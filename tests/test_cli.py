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
    assert header == ["method", "status", "objective", "bound", "gap", "wall", "s", "ratio", "check"]
    rows = {line.split("  ")[0].strip(): line for line in lines[3:] if line and not line.startswith("ratio")}
    assert set(rows) == {"exact (highs)", "exact (cpsat)", "ffd", "lp-relaxation (bound)"}
    assert re.search(r"ffd\s+feasible\s+36\s+-\s+-\s+[\d.]+\s+1\.167\s+ok", rows["ffd"])
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
