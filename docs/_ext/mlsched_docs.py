"""The pages of the documentation that are read off the code at build time, so they cannot drift.

At ``builder-inited`` (before Sphinx reads any page) this extension writes:

- ``reference/api/<package>.rst``: the API reference of every module of :mod:`mlsched_opt` (found
  by walking the package, so a module added, moved or removed is documented, moved or dropped with
  it), one page per package with an ``automodule`` of each of its modules' documented members;
- ``tutorials/<notebook>.ipynb``: the stored notebooks of ``notebooks/``, shown as stored (never
  executed here: ``nb_execution_mode = "off"``).

It also loads every verb of the ``mlsched`` group, so that ``sphinx-click`` documents all of them
(the group imports a verb's module only when the verb is asked for).

Directives (each renders Markdown, parsed as the page's own text):

``{mlsched-facade}``
    the names ``import mlsched_opt as ms`` exports that exist in this checkout, each documented;
``{mlsched-family} NAME``
    one family of the registry: its model, methods (kind, guarantee, summary), options with their
    domains as ``mlsched info`` prints them, generator, training and trace-import options, and bound;
``{mlsched-families}``
    the table of every registered family;
``{mlsched-results} NAME``
    a table or figure of ``results/generate.py`` from the stored outputs in ``results/data``;
``{mlsched-layout}``
    every module of the package with its docstring's first sentence.

And it reads the package's cross-references as Python reads names (:func:`resolve_by_python`).
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import importlib.util
import pkgutil
import re
import shutil
import types
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

log = logging.getLogger(__name__)

#: modules not documented: the ``python -m mlsched_opt`` entry point (running it is all it does)
SKIP_MODULES = {"mlsched_opt.__main__"}


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless ``path`` already holds it (an unchanged file keeps its time stamp, so
    Sphinx re-reads only the pages whose source changed)."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def package_modules(package: str = "mlsched_opt") -> list[str]:
    """Every module of ``package`` (subpackages included), in dotted order."""
    pkg = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=package + "."):
        if info.name not in SKIP_MODULES and not info.name.rsplit(".", 1)[-1].startswith("_"):
            names.append(info.name)
    return sorted(names)


def api_pages(modules: list[str]) -> dict[str, list[str]]:
    """Page -> its modules: one page per package, holding the package and its plain modules (a
    subpackage has its own page).  About 20 pages for about 150 modules: the theme draws the whole
    navigation on every page, so the number of pages is what the build's time grows with."""
    packages = {m for m in modules if importlib.util.find_spec(m).submodule_search_locations}
    pages: dict[str, list[str]] = {}
    for name in modules:
        page = name if name in packages else name.rpartition(".")[0]
        pages.setdefault(page, []).append(name)
    return pages


def write_api_pages(srcdir: Path) -> None:
    folder = srcdir / "reference" / "api"
    texts = {}
    for page, modules in api_pages(package_modules()).items():
        title = f"``{page}``"
        body = [title, "=" * len(title), "", f".. automodule:: {page}"]
        if page == "mlsched_opt":
            # its members are the facade, documented on the facade page (by these names)
            body.append("   :no-members:")
        for name in modules:
            if name == page:
                continue
            heading = f"``{name}``"
            body += ["", heading, "-" * len(heading), "", f".. automodule:: {name}"]
        texts[page] = "\n".join(body) + "\n"
    for page, text in texts.items():
        write_if_changed(folder / f"{page}.rst", text)
    for stale in folder.glob("*.rst"):
        if stale.stem not in texts and stale.stem != "index":
            stale.unlink()
    index = ["Modules", "=======", "",
             "Every module of the package, generated from its docstrings at build time: one page per package,",
             "with its modules as sections.", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    index += [f"   {page}" for page in texts]
    write_if_changed(folder / "index.rst", "\n".join(index) + "\n")


def copy_notebooks(srcdir: Path) -> None:
    folder = srcdir / "tutorials"
    folder.mkdir(exist_ok=True)
    notebooks = sorted((srcdir.parent / "notebooks").glob("*.ipynb"))
    for nb in notebooks:
        target = folder / nb.name
        if not target.exists() or target.read_bytes() != nb.read_bytes():
            shutil.copyfile(nb, target)
    for stale in folder.glob("*.ipynb"):
        if not (srcdir.parent / "notebooks" / stale.name).exists():
            stale.unlink()


def load_every_verb() -> None:
    """Import every verb of the lazy group, so that its ``commands`` lists them all."""
    import click

    from mlsched_opt.cli.app import VERBS, cli

    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        cli.get_command(ctx, name)
    missing = set(VERBS) - set(cli.commands)
    if missing:
        raise RuntimeError(f"verbs that did not load: {sorted(missing)}")


def generate(app: Sphinx) -> None:
    srcdir = Path(app.srcdir)
    write_api_pages(srcdir)
    copy_notebooks(srcdir)
    load_every_verb()


class MarkdownDirective(SphinxDirective):
    """A directive whose output is Markdown text, parsed as the page's own (MyST) text."""

    def markdown(self) -> str:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        container = nodes.container()
        text = self.markdown()
        self.state.nested_parse(StringList(text.splitlines(), source=self.get_source_info()[0]), self.content_offset, container)
        return container.children


def cell(text: Any) -> str:
    """A Markdown table cell: pipes escaped, line breaks joined."""
    return " ".join(str(text).split()).replace("|", "\\|")


def target_of(fn: Any) -> str | None:
    """The dotted name of a method's run function (a :class:`~mlsched_opt.problems.base.Lazy`
    reference, or the function itself), for a link to its documentation."""
    target = getattr(fn, "target", None)
    if target:
        return target.replace(":", ".")
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if module and name and "<" not in name:
        return f"{module}.{name}"
    return None


def options_table(options: Any, command: str) -> list[str]:
    lines = ["| option | domain | default | what it does |", "|---|---|---|---|"]
    for o in options:
        default = o.default if o.default not in ("", None) else "none"
        notes = []
        if getattr(o, "problem", False):
            notes.append("**problem option**: defines the problem (the checker reads it)")
        if getattr(o, "flag", None):
            notes.append(f"shorthand `solve {o.flag}`")
        what = cell(o.help) + ("" if not notes else " (" + "; ".join(notes) + ")")
        lines.append(f"| `{command} --set {o.name}=` | `{cell(o.describe())}` | `{cell(default)}` | {what} |")
    return lines


class FamilyDirective(MarkdownDirective):
    required_arguments = 1

    def markdown(self) -> str:
        from mlsched_opt.problems import REGISTRY

        fam = REGISTRY[self.arguments[0]]
        package = f"mlsched_opt.problems.{fam.name}"
        self.env.note_dependency(importlib.import_module(package).__file__)
        out = [f"`{fam.name}`: {fam.summary}. Read from the registry "
               f"({{py:mod}}`{package}`) when these pages were built.", ""]
        out += ["## The model", "", f"The family's package ({{py:mod}}`{package}`):", "",
                "```{eval-rst}", f".. automodule:: {package}", "   :no-members:", "   :no-index:", "```", ""]
        if fam.bounded:
            relaxation = target_of(fam.relaxation) if fam.relaxation is not None else None
            how = (f"computed by {{py:func}}`{relaxation}`" if relaxation
                   else "the LP relaxation of the exact formulation")
            out.append(f"Proven bound: the row `{fam.bound_label}` of `mlsched compare` ({how}); `mlsched solve` adds it to an "
                       "approximation's answer and prints a certified ratio.")
        else:
            out.append("No proven bound: comparisons add no bound row.")
        if fam.quick:
            out.append(f" `--method exact` answers with `{fam.quick}` first and keeps the better checked answer, so it is anytime.")
        out += ["", "## Methods", "",
                "| method | kind | guarantee | summary |", "|---|---|---|---|"]
        for m in fam.methods.values():
            target = target_of(m.run)
            name = f"`{m.name}`" + (f" ({{py:func}}`code <{target}>`)" if target and "_run_exact" not in target else "")
            summary = cell(m.summary) + (f" (needs `{m.requires}`: an extra)" if m.requires else "")
            out.append(f"| {name} | {m.kind} | {cell(m.guarantee) or '-'} | {summary} |")
        out += ["", "Kinds: `exact` a solver on the exact formulation, with a proof; `oracle` exact by exhaustive "
                "enumeration (tiny instances, not run by default in comparisons); `heuristic` an offline algorithm; "
                "`online` decides as jobs arrive; `baseline` a method of the literature, no guarantee.", ""]
        if fam.options:
            out += ["## Options", "",
                    "`mlsched solve/compare --set NAME=VALUE`, or the instance's `[options]` table "
                    "(`options={...}` in Python). Domains as `mlsched info` prints them.", ""]
            out += options_table(fam.options, "solve") + [""]
        if fam.generate_options:
            out += ["## Generating instances", "", f"`mlsched generate --problem {fam.name} --jobs N --servers M --seed S` "
                    "with these options:", ""]
            out += options_table(fam.generate_options, "generate") + [""]
        if fam.train_options:
            out += ["## Training", "", f"`mlsched train --problem {fam.name}` with these options:", ""]
            out += options_table(fam.train_options, "train") + [""]
        if fam.trace is not None:
            out += ["## Importing real traces", "",
                    f"`mlsched import SOURCE --problem {fam.name}` reads: "
                    + ", ".join(f"`{s}`" for s in fam.trace.sources) + ".", ""]
            if fam.trace.options:
                out += options_table(fam.trace.options, "import") + [""]
        return "\n".join(out)


class FamiliesDirective(MarkdownDirective):
    def markdown(self) -> str:
        from mlsched_opt.problems import REGISTRY

        out = ["| family | what | methods |", "|---|---|---|"]
        for fam in REGISTRY.values():
            out.append(f"| {{doc}}`{fam.name} </families/{fam.name}>` | {cell(fam.summary)} | "
                       + ", ".join(f"`{m}`" for m in fam.methods) + " |")
        return "\n".join(out)


class FacadeDirective(MarkdownDirective):
    """The facade's names that exist here: a name listed in ``mlsched_opt._FACADE`` whose module
    does not define it yet is left out (a message says so), so the page follows the code."""

    def markdown(self) -> str:
        import mlsched_opt

        functions, classes = [], []
        for name, target in mlsched_opt._FACADE.items():
            module, _, attr = target.partition(":")
            try:
                obj = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError):
                log.info(f"facade: {name} ({target}) does not exist in this checkout; not documented")
                continue
            (classes if isinstance(obj, type) else functions).append((name, target.replace(":", ".")))
        out = ["## Functions", "", "```{eval-rst}", ".. currentmodule:: mlsched_opt", ""]
        for name, _ in functions:
            out += [f".. autofunction:: mlsched_opt.{name}", ""]
        out += ["```", "", "## Types", "",
                "Each is documented with its module, with every member:", "",
                "| `ms.` name | defined in |", "|---|---|"]
        for name, dotted in classes:
            out.append(f"| `ms.{name}` | {{py:class}}`{dotted}` |")
        return "\n".join(out) + "\n"


def first_line(module: str) -> str:
    """The first line of ``module``'s docstring (its summary)."""
    doc = " ".join((importlib.import_module(module).__doc__ or "").strip().split("\n\n")[0].split())
    if not doc:
        return "(no docstring)"
    sentence = re.match(r"(.+?\.)(\s|$)", doc)
    text = sentence.group(1) if sentence else doc
    if len(text) > 200:  # a long first sentence: its first clause
        text = re.split(r"(?<=[:;])\s", text, maxsplit=1)[0].rstrip(":;")
    # reST roles and literals, as Markdown code
    return cell(re.sub(r":[\w:]+:`~?\.?([^`<]+?)(\s*<[^`]+>)?`", r"`\1`", text).replace("``", "`"))


class LayoutDirective(MarkdownDirective):
    """Every module of the package as a nested list, each with its docstring's summary."""

    def markdown(self) -> str:
        out = []
        for name in package_modules():
            depth = name.count(".")
            out.append("  " * depth + f"- {{py:mod}}`{name.rsplit('.', 1)[-1]} <{name}>`: {first_line(name)}")
        return "\n".join(out)


class LimitsDirective(MarkdownDirective):
    """The size limits (:data:`mlsched_opt.io.files.LIMITS`) as a table: name, default, what it bounds."""

    def markdown(self) -> str:
        from mlsched_opt.io.files import LIMITS

        rows = ["| limit | default | bounds |", "|---|---:|---|"]
        rows += [f"| `{name}` | {default:,} | {what} |" for name, (default, what) in LIMITS.items()]
        return "\n".join(rows)


@functools.cache
def results_generator(srcdir: Path) -> types.ModuleType:
    """``docs/results/generate.py``, loaded by its path (its name says nothing outside the docs)."""
    spec = importlib.util.spec_from_file_location("mlsched_docs_results", srcdir / "results" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ResultsDirective(MarkdownDirective):
    required_arguments = 1

    def markdown(self) -> str:
        results = results_generator(Path(self.env.srcdir))
        for path in results.inputs(self.arguments[0]):
            self.env.note_dependency(str(path))
        return results.render(self.arguments[0], page=Path(self.env.doc2path(self.env.docname)))


def napoleon_skips_data(app: Sphinx) -> None:
    """Napoleon reads the first line of a data or attribute docstring as ``type: description``; this
    code base's ``#:`` comments are plain sentences with colons (``#: A -> B: why``), so napoleon
    is kept off them (it still reads the Parameters/Attributes sections of functions and classes)."""
    from sphinx.ext.napoleon import _process_docstring

    for listener in list(app.events.listeners["autodoc-process-docstring"]):
        if listener.handler is _process_docstring:
            app.disconnect(listener.id)

            def process(app, what, name, obj, options, lines, _inner=_process_docstring):
                if what not in ("data", "attribute", "property"):
                    _inner(app, what, name, obj, options, lines)

            app.connect("autodoc-process-docstring", process, priority=listener.priority)


# -- cross-references in docstrings, read as Python reads names -----------------------------------

ROLE = re.compile(r"(:(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):`)(~?)(\.[\w.]+)(`)")


@functools.cache
def imported_names(module: str) -> dict[str, str]:
    """name -> the dotted name it is bound to by the imports of ``module``'s source (``from .x
    import y as z``, ``import numpy as np``, including imports under ``TYPE_CHECKING``)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return {}
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return {}
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    package = module if spec.submodule_search_locations else module.rpartition(".")[0]
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.partition(".")[0]] = alias.name if alias.asname else alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def python_relative(target: str, module: str) -> str:
    """``.x.y`` read as Python's relative import from ``module`` (``..x`` one package up)."""
    spec = importlib.util.find_spec(module)
    package = module if spec is not None and spec.submodule_search_locations else module.rpartition(".")[0]
    dots = len(target) - len(target.lstrip("."))
    parent = package.rsplit(".", dots - 1)[0] if dots > 1 else package
    return f"{parent}.{target.lstrip('.')}"


def find_object(dotted: str) -> tuple[bool, Any]:
    """Whether ``dotted`` names an object (a module, or an attribute path inside one), and the object."""
    if hasattr(builtins, dotted):
        return True, getattr(builtins, dotted)
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        except Exception:  # noqa: BLE001 -- a module that fails to import names nothing here
            return False, None
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                # an annotated attribute of a class (a dataclass field without a default) is a name too
                if isinstance(obj, type) and attr in getattr(obj, "__annotations__", {}):
                    return True, None
                return False, None
            obj = getattr(obj, attr)
        return True, obj
    return False, None


def absolute_docstring_refs(app, what, name, obj, options, lines) -> None:
    """A docstring's ``:mod:`.formulation``` means the sibling module, as in Python's relative
    imports; Sphinx would search every object whose name ends in ``.formulation`` (six families have
    one).  Rewritten to the absolute name when that name exists, so the link goes to the right one."""
    module = getattr(obj, "__module__", None) if what != "module" else name
    if not isinstance(module, str) or not module.startswith("mlsched_opt"):
        return

    def absolute(match: re.Match) -> str:
        role, tilde, target, end = match.groups()
        full = python_relative(target, module)
        return f"{role}{tilde}{full}{end}" if find_object(full)[0] else match.group(0)

    lines[:] = [ROLE.sub(absolute, line) for line in lines]


def candidates(target: str, module: str | None, cls: str | None) -> list[str]:
    """Where a reference may point, in Python's order: the class, the module, an import of the
    module (its first component rebound), an absolute name."""
    if target.startswith("."):
        return [python_relative(target, module)] if module else []
    out = []
    if module:
        if cls:
            out.append(f"{module}.{cls}.{target}")
        out.append(f"{module}.{target}")
        head, dot, rest = target.partition(".")
        bound = imported_names(module).get(head)
        if bound:
            out.append(bound + dot + rest)
    out.append(target)
    return out


def defining_module(node) -> str | None:
    """The module that defines the object whose signature holds ``node`` (an annotation): the facade
    documents ``mlsched_opt.load``, whose annotations name what ``mlsched_opt.facade`` imports."""
    parent = node.parent
    while parent is not None and not isinstance(parent, addnodes.desc_signature):
        parent = parent.parent
    if parent is None or not parent.get("module") or not parent.get("fullname"):
        return None
    found, obj = find_object(f"{parent['module']}.{parent['fullname']}")
    module = getattr(obj, "__module__", None) if found else None
    return module if isinstance(module, str) else None


def resolve_by_python(app: Sphinx, env, node, contnode):
    """``missing-reference`` for the Python domain: a name in a docstring means what Python would
    bind it to in that module (an import, a re-export); linked to the object's documentation when it
    has one, shown as code when it exists but is not documented (private, undocumented or outside
    the package).  A name that exists nowhere is left to Sphinx, which fails the build (nitpicky)."""
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"]
    contexts = [(node.get("py:module"), node.get("py:class"))]
    defined = defining_module(node)
    if defined and defined != contexts[0][0]:
        contexts.append((defined, None))
    for dotted in [c for module, cls in contexts for c in candidates(target, module, cls)]:
        found, obj = find_object(dotted)
        if not found:
            continue
        names = [dotted]
        module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str):
            names.append(f"{module}.{qualname}")
        if isinstance(obj, types.ModuleType):
            names.append(obj.__name__)
        for name in names:
            if name in domain.objects:
                return make_refnode(app.builder, node["refdoc"], domain.objects[name].docname, domain.objects[name].node_id,
                                    contnode, name)
        return contnode
    return None


def factory_defaults(app, what, name, obj, options, signature, return_annotation):
    """A dataclass field with ``default_factory`` shows as ``=<factory>``, which is no Python: Sphinx
    would then split the signature at every comma (``Mapping[str`` as a type).  Shown as ``=...``."""
    if signature and "<factory>" in signature:
        return signature.replace("<factory>", "..."), return_annotation
    return None


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("autodoc-process-signature", factory_defaults)
    app.connect("autodoc-process-docstring", absolute_docstring_refs, priority=400)
    app.connect("missing-reference", resolve_by_python)
    app.setup_extension("sphinx.ext.napoleon")
    napoleon_skips_data(app)
    app.connect("builder-inited", generate)
    app.add_directive("mlsched-family", FamilyDirective)
    app.add_directive("mlsched-families", FamiliesDirective)
    app.add_directive("mlsched-facade", FacadeDirective)
    app.add_directive("mlsched-results", ResultsDirective)
    app.add_directive("mlsched-layout", LayoutDirective)
    app.add_directive("mlsched-limits", LimitsDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
