"""Parameters the verbs share: registry names (completed by the shell), solver options, ``--set``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..errors import OptionError


def problem_names() -> list[str]:
    from ..problems import problem_names as names

    return names()


def method_names(problem: str | None = None) -> list[str]:
    from ..problems import REGISTRY

    families = [REGISTRY[problem]] if problem is not None and problem in REGISTRY else REGISTRY.values()
    return list(dict.fromkeys(m for fam in families for m in fam.methods))


def solver_names() -> list[str]:
    from ..solvers import KNOWN_SOLVERS

    return list(KNOWN_SOLVERS)


def _check_problem(name: str, param: str) -> None:
    from ..problems import unknown_problem_text

    if name not in problem_names():
        raise OptionError(unknown_problem_text(name), field=param)


def _check_solver_name(name: str, param: str) -> None:
    # installed or not is check_solver's question, asked once the command runs; here only the names
    # that may ever be handed to a solver factory pass
    names = solver_names()
    if name not in names:
        raise OptionError(f"unknown solver {name!r}; choose from {', '.join(names)}", field=param)


class Names(click.Choice):
    """A ``click.Choice`` whose names come from the registry when first needed (help, completion,
    parsing): ``validate`` must not pay for importing every family.

    A value outside the names is refused by ``check`` with the registry's own message (exit 2 naming
    the option); without ``check`` (methods, whose names depend on the problem) the command checks it
    against its family.  With ``sep`` the value is a list (``--solvers highs,cpsat``).
    """

    def __init__(self, load, check=None, sep: str | None = None) -> None:
        self._load, self._check, self.sep = load, check, sep
        self._names: tuple[str, ...] | None = None
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        if self._names is None:
            self._names = tuple(self._load())
        return self._names

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        metavar = super().get_metavar(param, ctx)
        return f"{metavar}{self.sep}..." if self.sep and metavar else metavar

    def convert(self, value, param, ctx):
        name = param.opts[0] if param is not None and param.opts else "value"
        for item in (value.split(self.sep) if self.sep else [value]):
            if self._check is not None and (item.strip() or not self.sep):
                self._check(item.strip() if self.sep else item, name)
        return value

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str):
        from click.shell_completion import CompletionItem

        done, _, last = incomplete.rpartition(self.sep) if self.sep else ("", "", incomplete)
        prefix = done + self.sep if done and self.sep else ""
        names = self.choices
        if self._load is method_names:  # the methods of the problem already on the command line
            names = tuple(method_names((ctx.params or {}).get("problem")))
        return [CompletionItem(prefix + n) for n in names if n.startswith(last)]


PROBLEM = Names(problem_names, _check_problem)
METHOD = Names(method_names)
METHODS = Names(method_names, sep=",")
SOLVER = Names(solver_names, _check_solver_name)
SOLVERS = Names(solver_names, _check_solver_name, sep=",")


class CountOrAll(click.ParamType):
    """A count of at least 1, or ``all`` (the source's every row): ``--jobs all`` says in words what
    leaving ``--jobs`` out means, so a script that takes a whole trace reads as one."""

    name = "integer or 'all'"

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        return "N|all"

    def convert(self, value, param, ctx):
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            if value is not None and value < 1:
                self.fail(f"{value} is not >= 1", param, ctx)
            return value
        text = str(value).strip().lower()
        if text == "all":
            return None
        try:
            number = int(text)
        except ValueError:
            self.fail(f"{value!r} is neither a whole number nor 'all'", param, ctx)
        if number < 1:
            self.fail(f"{number} is not >= 1", param, ctx)
        return number


COUNT_OR_ALL = CountOrAll()


class LazyHelp(click.Option):
    """An option whose help text is computed from the registry when --help is shown."""

    def __init__(self, *args, help_from=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._help_from = help_from

    def get_help_record(self, ctx: click.Context):
        if self._help_from is not None:
            self.help, self._help_from = self._help_from(), None
        return super().get_help_record(ctx)


def per_family_methods() -> str:
    from ..problems import REGISTRY

    return "; ".join(f"{fam.name}: {', '.join(m for m in fam.methods if m != 'exact')}" for fam in REGISTRY.values())


def method_help() -> str:
    return f"exact, or an algorithm of the problem's family ({per_family_methods()}; see `mlsched info`)."


def methods_help() -> str:
    return f"Comma-separated methods (default: all of the family's but oracles; exact, or {per_family_methods()})."


def parse_sets(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise OptionError(f"expected KEY=VALUE, got {pair!r}", field="--set")
        key, value = pair.split("=", 1)
        if key.strip() in out:  # which one was meant is a guess we do not make
            raise OptionError(f"{key.strip()} is set twice ({out[key.strip()]!r} and {value.strip()!r})", field="--set")
        out[key.strip()] = value.strip()
    return out


def solver_options(f):
    """The options every solving command shares."""
    f = click.option("--seed", type=int, default=0, show_default=True, help="Random seed (solver and randomized methods).")(f)
    f = click.option("--threads", type=int, default=None, show_default="every usable core, or $MLSCHED_THREADS",
                     help="Solver threads (1 = repeatable runs).")(f)
    f = click.option("--gap", type=float, default=1e-6, show_default=True, help="Relative gap at which 'optimal' may be claimed.")(f)
    f = click.option("--time-limit", type=float, default=60.0, show_default=True,
                     help="Seconds for the whole command from its start (solve) or each row (compare); always enforced.")(f)
    f = click.option("--solver", type=SOLVER, default="highs", show_default=True,
                     help="highs, cpsat, scip (pyscipopt), or cbc, glpk, gurobi, cplex when installed (see `mlsched info`).")(f)
    f = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Problem option, e.g. --set objective=servers.")(f)
    f = click.option("--certify/--no-certify", default=True, show_default=True,
                     help="Confirm every 'optimal' or 'infeasible' of an exact solve by an independent solver.")(f)
    return f


def load(path: str, catalog: str | None):
    from ..facade import instance_path
    from ..io import load_instance

    return load_instance(instance_path(path), catalog=catalog)


def catalog_files(catalog) -> list[Path]:
    """Every file of a catalog (the one an instance was resolved against, or a generator's): inputs
    of the command too, which no output may overwrite."""
    folders = getattr(catalog, "directories", None) or ()
    return [f for folder in folders if Path(folder).is_dir() for f in Path(folder).iterdir() if f.is_file()]


def family_for(instance, problem: str | None):
    from ..pipeline import family_for as find

    return find(instance, problem)


def shorthands(registry) -> dict[str, list[tuple[Any, Any]]]:
    """Flag -> [(family, Option)] of every problem option declared with a ``flag``."""
    out: dict[str, list[tuple[Any, Any]]] = {}
    for fam in registry.values():
        for opt in fam.options:
            if opt.flag:
                out.setdefault(opt.flag, []).append((fam, opt))
    return out


def shorthand_options(registry) -> list[click.Option]:
    """``solve``'s shorthand options, one per declared flag: ``--samples M`` is ``--set samples=M``.
    The value stays a string here: the family's Option parses it (type and range) and names the flag
    when it is refused, as it would name --set."""
    params = []
    for flag, owners in shorthands(registry).items():
        names = {opt.name for _, opt in owners}
        if len(names) != 1:
            raise RuntimeError(f"{flag} is declared for options {sorted(names)}: one flag, one option name")
        name = names.pop()
        uses = "; ".join(f"{fam.name}: {opt.help} <{opt.describe()}>" for fam, opt in owners)
        params.append(click.Option([flag, f"shorthand_{name}"], default=None, metavar=name.upper(),
                                   help=f"Shorthand for --set {name}={name.upper()} ({uses})."))
    return params
