"""Every command in the docs runs (issue 34): each ``mlsched`` command line and each facade example of
README.md and docs/**/*.md runs as written, in order, on a scratch copy of the repository's instances.

What is run, by the code block it is in:

- ``sh`` (also ``bash``, ``shell``): every line that starts with ``mlsched``;
- ``console``: every ``$ mlsched ...`` line, and the lines after it are its expected output,
  compared with what it prints (timings, the three-decimal numbers of the ``wall s`` and ``ratio``
  columns, masked);
- ``python``: a block that imports ``mlsched_opt`` is executed; every other one must compile;
- any other block (``text``: synopses, install commands) is not run, so an ``mlsched`` line there
  must show a placeholder (``SUITE.toml``, ``DIR``, ``HOST``, ``[...]``): a real command cannot hide.

A command fails the test on a traceback or an exit code other than 0; ``# exits 1`` in its comment
documents an exit code of 1 (then required).  ``# slow`` (a comment that starts with "slow") marks a
long sweep or training: left to :func:`test_slow_commands_in_docs_run`, which runs every command of
a page (the fast ones too, in order) when ``MLSCHED_DOCS_SLOW=1`` (the sweeps take minutes to an
hour, so ``make test`` does not run them).  ``mlsched import`` needs the public data sets
(``../shared/data`` or ``$MLSCHED_SHARED_DATA``): without them a page's commands from its first
import on are skipped, with the reason.

Commands run in-process (``mlsched_opt.cli.main``, as tests/test_cli.py does), one scratch folder
per page: the same arguments and files as from a shell, without a new interpreter's start-up per
command.  The exit codes and the absence of tracebacks are the same; the watchdog and the signal
handling of a process of its own are tested by tests/test_signals.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from mlsched_opt import __version__
from mlsched_opt.cli import main
from mlsched_opt.io.shared_data import shared_data_dir
from mlsched_opt.problems import REGISTRY
from mlsched_opt.report import STATUSES

from .conftest import ROOT

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if not p.relative_to(DOCS).parts[0].startswith(("_", "results")))]
PAGES += [DOCS / "results.md"]
IDS = [str(p.relative_to(ROOT)) for p in PAGES]
#: what a page's commands find in their folder: copies of these (commands that write files write there)
SCRATCH = ("instances", "benchmarks", "models", "tests/data")
SHELL = {"sh", "bash", "shell"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>[^`\n]*)$")
#: a synopsis's placeholders: an all-caps word (SUITE.toml, DIR, HOST, N), or [optional parts]
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]+\b|\[")
#: timings vary from run to run: three-decimal numbers (wall s, ratio) and "N.N s" durations
VARYING = re.compile(r"\b\d+\.\d{3}\b|\b\d+\.\d+ s\b")
SLOW_OK = os.environ.get("MLSCHED_DOCS_SLOW") == "1"


@dataclass
class Step:
    """One thing a page asks the reader to run."""

    page: str
    line: int
    kind: str  # "cli", "python", or "hidden": an mlsched command in a block that is not run
    text: str
    args: list[str] | None = None
    exits: int = 0
    slow: bool = False
    expected: str | None = None  # a console block's output

    def where(self) -> str:
        return f"{self.page}:{self.line}: {self.text.strip()[:200]}"


def blocks(path: Path):
    """(info string, first line number, lines) of every fenced code block (indented ones too)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        body, j = [], i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence) and lines[j].strip().strip("`") == ""):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        yield info, i + 2, body
        i = j + 1


def command(page: str, line: int, text: str, expected: str | None = None) -> Step:
    code, _, comment = text.partition(" #")
    args = shlex.split(code)
    comment = comment.strip().lower()
    assert args[0] == "mlsched", text
    return Step(page, line, "cli", text, args[1:], exits=1 if re.search(r"\bexits 1\b", comment) else 0,
                slow=comment.startswith("slow"), expected=expected)


def steps(path: Path) -> list[Step]:
    """What ``path`` asks the reader to run, in page order."""
    page = str(path.relative_to(ROOT))
    out: list[Step] = []
    for info, first, body in blocks(path):
        lang = info.split()[0] if info else ""
        if lang.startswith("{"):
            continue  # a MyST directive
        if lang in SHELL:
            joined: list[tuple[int, str]] = []
            for k, raw in enumerate(body):
                if joined and joined[-1][1].endswith("\\"):
                    joined[-1] = (joined[-1][0], joined[-1][1][:-1] + " " + raw.strip())
                else:
                    joined.append((first + k, raw.strip()))
            out += [command(page, n, text) for n, text in joined if text.startswith("mlsched ") or text == "mlsched"]
        elif lang == "console":
            current: tuple[int, str] | None = None
            output: list[str] = []
            for k, raw in enumerate(body + ["$ "]):
                if raw.startswith("$ "):
                    if current is not None and current[1].startswith("mlsched"):
                        out.append(command(page, current[0], current[1], "\n".join(output)))
                    current, output = (first + k, raw[2:].strip()), []
                else:
                    output.append(raw)
        elif lang == "python":
            source = "\n".join(body)
            compile(source, f"{page}:{first}", "exec")  # every example is valid Python
            if re.search(r"^\s*(import|from) mlsched_opt\b", source, re.MULTILINE):
                out.append(Step(page, first, "python", source))
        else:
            for k, raw in enumerate(body):
                text = raw.strip()
                if text.startswith("mlsched ") and not PLACEHOLDER.search(text.partition(" #")[0].replace("mlsched ", "", 1)):
                    out.append(Step(page, first + k, "hidden", text))
    return out


def same_output(expected: str, got: str) -> bool:
    def norm(text: str) -> list[str]:
        return [" ".join(VARYING.sub("#", line).split()) for line in text.strip().splitlines() if line.strip()]

    return norm(expected) == norm(got)


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A folder with copies of the repository's instances, suites and catalog, as the working directory;
    the registry as it was (an example may register a family of its own)."""
    for rel in SCRATCH:
        shutil.copytree(ROOT / rel, tmp_path / rel)
    monkeypatch.chdir(tmp_path)
    data = shared_data_dir()
    if data is not None:
        monkeypatch.setenv("MLSCHED_SHARED_DATA", str(data))
    registered = list(REGISTRY)
    yield tmp_path
    for name in [n for n in REGISTRY if n not in registered]:
        del REGISTRY[name]


def run_step(step: Step, capsys) -> str | None:
    """Run one step; the reason it failed, or None."""
    if step.kind == "hidden":
        return "an mlsched command in a block that is not run: put it in a ```sh block, or show its placeholders (SUITE.toml, DIR)"
    if step.kind == "python":
        try:
            exec(compile(step.text, step.page, "exec"), {"__name__": "__main__"})
        except BaseException as exc:  # noqa: BLE001 -- any failure of an example is the finding
            return f"{type(exc).__name__}: {exc}"
        capsys.readouterr()
        return None
    assert step.args is not None
    code: object = 0
    try:
        main(step.args)
    except SystemExit as done:
        code = done.code if done.code is not None else 0
    except BaseException as exc:  # noqa: BLE001 -- in a process of its own this would be a traceback
        return f"traceback: {type(exc).__name__}: {exc}"
    out, err = capsys.readouterr()
    if "Traceback (most recent call last)" in out + err:
        return f"traceback in the output:\n{(out + err)[-2000:]}"
    if code != step.exits:
        return f"exit code {code}, documented {step.exits}:\n{(out + err)[-2000:]}"
    if step.expected is not None and not same_output(step.expected, out):
        return f"the output differs from the page's:\n--- page\n{step.expected}\n--- now\n{out}"
    return None


def run_page(path: Path, capsys, slow: bool) -> None:
    failures, skipped = [], []
    data = shared_data_dir() is not None
    for step in steps(path):
        if step.slow and not slow:
            continue
        if (step.args and step.args[0] == "import" and not data) or skipped:
            skipped.append(step.where())
            continue
        why = run_step(step, capsys)
        if why:
            failures.append(f"{step.where()}\n    {why}")
    assert not failures, "\n\n".join(failures)
    if skipped:
        pytest.skip(f"../shared/data not found (set MLSCHED_SHARED_DATA): {len(skipped)} commands not run, from {skipped[0]}")


#: the pages that ask the reader to run something
RUN = [(p, i) for p, i in zip(PAGES, IDS) if steps(p)]


@pytest.mark.parametrize("path", [p for p, _ in RUN], ids=[i for _, i in RUN])
def test_commands_in_docs_run(path, scratch, capsys):
    run_page(path, capsys, slow=False)


@pytest.mark.slow
@pytest.mark.skipif(not SLOW_OK, reason="the docs' sweeps and training take minutes to an hour: MLSCHED_DOCS_SLOW=1 runs them")
@pytest.mark.parametrize("path", [p for p in PAGES if any(s.slow for s in steps(p))],
                         ids=[i for p, i in zip(PAGES, IDS) if any(s.slow for s in steps(p))])
def test_slow_commands_in_docs_run(path, scratch, capsys):
    run_page(path, capsys, slow=True)


def test_every_page_is_read_and_every_family_has_one():
    found = {s.page for p in PAGES for s in steps(p)}
    assert "README.md" in found and "docs/getting-started.md" in found
    for name in REGISTRY:
        page = DOCS / "families" / f"{name}.md"
        assert page.exists(), f"{name} has no page: docs/families/{name}.md (see docs/howto/add-a-family.md)"
        assert f"{{mlsched-family}} {name}" in page.read_text(), f"{page} does not show the registry's record of {name}"


def test_readme_family_table_lists_every_registered_method():
    """The README's family table names each family's methods exactly as the registry has them, in its order."""
    text = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| \[`([a-z-]+)`\]\(docs/families/[a-z-]+\.md\) \|[^|\n]*\|[^|\n]*\| ([^|\n]*) \|$", text, re.MULTILINE))
    assert set(rows) == set(REGISTRY), set(rows) ^ set(REGISTRY)
    for name, cell in rows.items():
        assert re.findall(r"`([^`]+)`", cell) == list(REGISTRY[name].methods), f"README.md's methods of {name}: {cell}"


def test_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_one_version_everywhere():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert pyproject == __version__ == released[0], (pyproject, __version__, released)


def test_statuses_and_exit_codes_page_lists_them_all():
    from mlsched_opt.cli.app import _limits_epilog

    text = (DOCS / "reference" / "statuses.md").read_text()
    listed = set(re.findall(r"^\| `([a-z-]+)` \|", text, re.MULTILINE))
    assert listed == set(STATUSES), listed ^ set(STATUSES)
    codes = set(re.findall(r"^\| (\d+) \|", text, re.MULTILINE))
    assert codes == set(re.findall(r"\b(\d+) (?:an answer|a checker|a user|no answer|interrupted|terminated)", _limits_epilog()))


def test_results_are_generated_from_stored_outputs_that_name_their_command_and_commit():
    import importlib.util

    spec = importlib.util.spec_from_file_location("results_generate", DOCS / "results" / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    for folder in [p for p in (DOCS / "results" / "data").rglob("*") if (p.is_dir() and any(p.glob("*.csv"))) or p.suffix == ".png"]:
        source = folder if folder.is_dir() else folder.parent
        meta = json.loads((source / "source.json").read_text())
        assert meta["command"] and meta["commit"], source
    pages = "\n".join(p.read_text() for p in PAGES)
    for name in set(re.findall(r"```\{mlsched-results\} (\S+)", pages)):
        text = generate.render(name)
        assert "*Source*: Produced by `" in text or "**" in text, name
    with contextlib.redirect_stdout(io.StringIO()):
        assert generate.main([]) == 0


def test_results_in_the_readme_are_the_generated_ones():
    """A block ``<!-- results: NAME -->`` ... ``<!-- end results -->`` of the README is what
    ``docs/results/generate.py NAME`` prints from the stored runs, so its numbers cannot drift."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("results_generate", DOCS / "results" / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    found = re.findall(r"<!-- results: (\S+) -->\n(.*?)\n<!-- end results -->", (ROOT / "README.md").read_text(), flags=re.S)
    assert found, "the README shows no generated results"
    for name, text in found:
        assert text == generate.render(name), f"README's {name} block differs from `python docs/results/generate.py {name}`"


def test_reproducible_runs_page_holds(scratch, capsys):
    """What docs/howto/reproducible.md shows is what happens: the same generator arguments write the same
    bytes, the same seed and one thread give the same decision."""
    run_page(DOCS / "howto" / "reproducible.md", capsys, slow=False)
    assert (scratch / "o1.toml").read_bytes() == (scratch / "o2.toml").read_bytes()
    a, b = (json.loads((scratch / f"{x}.sol.json").read_text()) for x in "ab")
    assert a["decision"] == b["decision"] and a["decision"]
