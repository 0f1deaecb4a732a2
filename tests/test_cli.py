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
    assert doc["problem_options"]["objective"] == "weight"
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
    assert set(rows) == {"exact (highs)", "exact (cpsat)", "ffd", "ffd-large", "bfd", "lns", "pop", "lp-relaxation (bound)",
                         "fgd", "best-fit", "dot-product", "gpu-packing", "gpu-clustering", "random-fit"}
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
    from mlsched_opt.problems import check_solution, get_family
    from mlsched_opt.solvers import SolveOptions

    inst_path = tmp_path / "p.toml"
    inst_path.write_text(DEMO.read_text().replace('problem = "packing"', 'problem = "packing"\n\n[options]\nobjective = "servers"', 1))
    inst = load_instance(inst_path)
    sol = get_family("packing").run(inst, "ffd", SolveOptions(), {})
    assert sol.problem_options["objective"] == "servers"
    assert not any(v.rule == "problem-options" for v in check_solution(inst, sol).violations)


TOYS = ("demo", "oasis-toy", "smd-toy", "hetero-toy", "locality-toy", "harmony-toy")


def test_help_lists_problem_method_and_solver_choices(run):
    from mlsched_opt.problems import REGISTRY
    from mlsched_opt.solvers import KNOWN_SOLVERS

    code, out, _ = run("solve", "--help")
    assert code == 0
    text = " ".join(re.sub(r"-\n\s+", "-", out).split())  # help wraps lines, also at hyphens
    assert "[" + "|".join(REGISTRY) + "]" in text
    assert "[" + "|".join(KNOWN_SOLVERS) + "]" in text
    for fam in REGISTRY.values():  # methods per family, since which are valid depends on the problem
        assert f"{fam.name}: {', '.join(m for m in fam.methods if m != 'exact')}" in text, fam.name
    for command in ("compare", "generate", "export", "check", "import", "train"):
        code, out, _ = run(command, "--help")
        assert code == 0 and "|".join(REGISTRY) in " ".join(out.split()), command
    code, out, _ = run("compare", "--help")
    assert "|".join(KNOWN_SOLVERS) in " ".join(out.split())


def test_choices_refuse_with_the_option_named(run):
    code, _, err = run("compare", DEMO, "--solvers", "highs,nosuch")
    assert code == 2 and "--solvers: unknown solver 'nosuch'" in err
    code, _, err = run("generate", "--problem", "tsp", "--jobs", 2, "--servers", 1, "--seed", 0, "-o", "x.toml")
    assert code == 2 and "--problem: unknown problem 'tsp'" in err
    # a method of another family is refused by the instance's family, naming its methods
    code, _, err = run("solve", DEMO, "--method", "oasis")
    assert code == 2 and "--method: unknown method 'oasis' for problem packing; choose from exact, ffd" in err


def test_completion_scripts_and_names(run, monkeypatch):
    for shell in ("bash", "zsh", "fish"):
        code, out, _ = run("completion", shell)
        assert code == 0 and "_MLSCHED_COMPLETE" in out, shell
    code, _, err = run("completion", "tcsh")
    assert code == 2 and "tcsh" in err

    def complete(words: str) -> list[str]:
        monkeypatch.setenv("_MLSCHED_COMPLETE", "bash_complete")
        monkeypatch.setenv("COMP_WORDS", words)
        monkeypatch.setenv("COMP_CWORD", str(len(words.split()) - (0 if words.endswith(" ") else 1)))
        try:
            code, out, _ = run()
        finally:
            monkeypatch.delenv("_MLSCHED_COMPLETE")
        assert code == 0
        return [line.split(",", 1)[1] for line in out.splitlines()]

    assert complete("mlsched solve x --problem lo") == ["locality"]
    assert complete("mlsched solve x --problem locality --method g") == ["greedy-rr", "greedy-ilp"]
    assert "cpsat" in complete("mlsched solve x --solver ")
    assert complete("mlsched compare x --solvers highs,cps") == ["highs,cpsat"]
    assert "completion" in complete("mlsched comp")


def test_solve_prints_the_decision_as_a_table(run):
    code, out, _ = run("solve", DEMO, "--method", "ffd")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split() == ["objective", "36", "bound", "43", "gap", "0.163"]  # the LP bound, proven after FFD
    header = next(i for i, line in enumerate(lines) if line.split() == ["job", "workers", "ps"])
    assert re.fullmatch(r"\s+bert-squad\s+v100/0:1 v100/1:3\s+-", lines[header + 2])
    assert re.search(r"not admitted \(4\): .*vgg16-imagenet", out)
    code, out, _ = run("solve", ROOT / "instances" / "oasis-toy.toml", "--method", "oasis")
    assert code == 0
    assert re.search(r"job\s+workers\s+ps\s+slots\s+completion", out)
    assert re.search(r"\n\s+1\s+worker:2\s+ps:1\s+0-1\s+1\s", out)  # job 1 runs in slots 0 and 1, done in slot 1


def test_decision_table_is_truncated_and_takes_any_shape():
    from mlsched_opt.cli import decision_table

    jobs = [f"j{i}" for i in range(30)]
    lines = decision_table({"placement": {j: {"workers": {"s": 1}} for j in jobs}}, jobs)
    assert len(lines) == 2 + 20 + 1 and lines[-1].startswith("... 10 more jobs")
    lines = decision_table({"admitted": ["a"], "extra": {"allocation": {"a": {"workers": 2, "ps": 1}}, "rejected": ["b"]}}, ["a", "b"])
    assert lines[2].split() == ["a", "2", "1"] and "rejected (1): b" in lines
    assert decision_table(None, jobs) == ["decision: none"]


def test_no_python_none_in_text_output(run):
    for name in TOYS:
        inst = ROOT / "instances" / f"{name}.toml"
        fam = load_instance(inst).default_problem
        from mlsched_opt.problems import get_family

        algorithm = next(m for m, meth in get_family(fam).methods.items() if meth.kind not in ("exact", "oracle") and meth.available)
        for method in ("exact", algorithm):
            _code, out, err = run("solve", inst, "--method", method, "--time-limit", "2")
            assert "None" not in out + err and "Traceback" not in err, (name, method, out, err)
    for name in ("demo", "oasis-toy", "harmony-toy"):
        _code, out, err = run("compare", ROOT / "instances" / f"{name}.toml", "--time-limit", "2", "--solvers", "highs")
        assert "None" not in out + err and "Traceback" not in err, (name, out, err)


def test_verbose_logs_and_quiet_silences(run):
    code, out, err = run("-v", "solve", DEMO, "--method", "ffd")
    assert code == 0 and re.search(r"^debug: mlsched_opt\.cli: read .*demo\.toml: 12 jobs", err, re.M), err
    code, out, err = run("--quiet", "compare", DEMO, "--methods", "ffd", "--solvers", "highs")
    assert code == 0 and err == "" and "ffd" in out
    code, out, err = run("compare", DEMO, "--methods", "ffd", "--solvers", "highs")
    assert code == 0 and "running ffd" in err  # the default keeps the progress
    code, _, err = run("-v", "--quiet", "validate", DEMO)
    assert code == 2 and "--quiet" in err


def test_export_says_what_it_writes(run, tmp_path):
    code, out, _ = run("export", ROOT / "instances" / "harmony-toy.toml", "-o", tmp_path / "h.lp")
    assert code == 0 and "surrogate" in out and "exact formulation" not in out
    code, out, _ = run("export", DEMO, "-o", tmp_path / "d.lp")
    assert code == 0 and "the exact formulation" in out


def test_shorthand_flags_come_from_the_declarations(run):
    import click

    from mlsched_opt.cli import params
    from mlsched_opt.cli.solve import solve
    from mlsched_opt.problems import REGISTRY, Option
    from mlsched_opt.problems.base import Family

    declared = {o.flag for fam in REGISTRY.values() for o in fam.options if o.flag}
    assert declared >= {"--samples", "--epsilon", "--attempts", "--model"}
    with click.Context(solve) as ctx:
        flags = {opt for p in solve.get_params(ctx) for opt in p.opts}
    assert declared <= flags
    for module in (ROOT / "mlsched_opt" / "cli").glob("*.py"):
        source = module.read_text()
        assert not any(f'"{flag}"' in source for flag in declared), module  # no hard-coded family option
    # a family declaring a new flag gets a solve option, with its help and domain
    fake = Family(**{**{f: getattr(REGISTRY["packing"], f) for f in ("name", "summary", "build_model", "decision_from_model",
                                                                        "check", "sense", "generate")},
                     "name": "fake", "options": (Option("knob", 3, None, "how hard to try", minimum=1, maximum=9, flag="--knob"),)})
    (opt,) = params.shorthand_options({"fake": fake})
    assert opt.opts == ["--knob"] and "how hard to try" in opt.help and "1 <= int <= 9" in opt.help
    # a shorthand the instance's family does not declare, or out of its range, is refused naming the flag
    code, _, err = run("solve", DEMO, "--samples", "3")
    assert code == 2 and "--samples is an option of hetero; problem packing has none" in err
    code, _, err = run("solve", ROOT / "instances" / "locality-toy.toml", "--method", "greedy-rr", "--attempts", "0")
    assert code == 2 and "--attempts: attempts must be >= 1" in err


def test_verbose_streams_each_solvers_log_to_stderr_only(run):
    banners = {"highs": "HiGHS", "cpsat": "CP-SAT", "scip": "presolving"}
    for solver, banner in banners.items():
        code, out, err = run("-v", "solve", DEMO, "--solver", solver, "--no-certify", "--json")
        assert code == 0 and json.loads(out)["status"] == "optimal", (solver, out)  # stdout: the answer only
        assert banner in err, (solver, err[-500:])
    code, out, err = run("solve", DEMO, "--solver", "highs", "--no-certify", "--json")
    assert code == 0 and "HiGHS" not in err  # without -v, no solver log


def test_global_options_are_taken_anywhere_on_the_line(run, tmp_path):
    """-v, -q, --catalog and --limit mean the same before and after the verb (issue 31: they were
    refused after it)."""
    code, _, err = run("solve", DEMO, "--method", "ffd", "-v")
    assert code == 0 and re.search(r"^debug: mlsched_opt\.cli: read .*demo\.toml", err, re.M), err
    code, _, err = run("compare", DEMO, "--methods", "ffd", "--solvers", "highs", "--quiet")
    assert code == 0 and err == ""
    code, _, err = run("validate", DEMO, "--limit", "jobs=5")
    assert code == 2 and "over the limit jobs=5" in err
    code, _, err = run("validate", DEMO, "-v", "-q")
    assert code == 2 and "--quiet" in err
    code, _, err = run("-v", "validate", DEMO, "--quiet")  # one state, wherever each was given
    assert code == 2 and "--quiet" in err


def test_an_unknown_problem_in_a_file_is_refused_by_validate_with_a_suggestion(run, tmp_path):
    bad = tmp_path / "typo.toml"
    bad.write_text(DEMO.read_text().replace('problem = "packing"', 'problem = "pakcing"', 1))
    for args in (("validate", bad), ("solve", bad, "--method", "ffd")):
        code, out, err = run(*args)
        assert code == 2 and not out
        assert err.strip() == (f"mlsched: error: {bad}: problem: unknown problem 'pakcing'; did you mean 'packing'? "
                               "(known: packing, smd, oasis, hetero, locality, harmony)"), err
