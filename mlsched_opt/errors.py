"""Exceptions that separate a user's mistake from a bug.

Everything a user can get wrong (a file, a field, an option) raises :class:`UserError`;
the CLI turns it into one line on stderr and exit code 2.  Anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])


class UserError(Exception):
    """A problem with what the user gave us: a file, a field, an option.

    Parameters
    ----------
    reason
        What is wrong, in words a user can act on.
    file
        The file the problem is in, if any.
    field
        The path of the field inside the file, e.g. ``jobs[3].demand.worker.gpu``.
    """

    def __init__(self, reason: str, file: str | None = None, field: str | None = None):
        self.reason = reason
        self.file = file
        self.field = field
        super().__init__(self.message())

    def message(self) -> str:
        parts = [p for p in (self.file, self.field) if p]
        return ": ".join(parts + [self.reason])


class InstanceError(UserError):
    """An instance (or catalog, or solution) file is malformed or inconsistent."""


class OptionError(UserError):
    """A command-line or problem option is invalid."""


class ModelTooLarge(OptionError):
    """A model (the exact formulation, its relaxation, an export) that a size limit refuses to build.

    An anytime exact method answers without it (its quick start and a bound); ``export`` reports it
    as a user error (exit 2)."""


class SolverUnavailable(UserError):
    """The requested solver is not installed on this machine."""


class ArgumentError(OptionError):
    """A wrong type or value given to a facade function (``ms.solve(..., seed="1")``): ``field`` is the
    Python keyword argument (the command line names its ``--flags`` instead)."""


#: the command line's flags that are keyword arguments of the facade functions too
_KEYWORDS = {"method", "problem", "solver", "time_limit", "gap", "threads", "seed", "jobs", "servers", "slots", "data", "catalog"}


def python_field(field: str | None) -> str | None:
    """A field named as the command line names it, as a Python caller names it: ``--time-limit`` is
    ``time_limit``, ``--set epsilon1`` and a family's own flag (``--model``) are ``options['epsilon1']``."""
    if not field or not field.startswith("--"):
        return field
    flag, _, rest = field[2:].partition(" ")
    name = flag.replace("-", "_")
    if flag == "set":
        return f"options[{rest!r}]" if rest else "options"
    return (name if name in _KEYWORDS else f"options[{name!r}]") + (f" {rest}" if rest else "")


def with_python_names(func: F) -> F:
    """``func`` (a facade function, ``ms.solve``) whose :class:`UserError` names Python keyword arguments
    instead of the command line's flags: the library's checks are shared with the CLI, which names flags."""
    import functools

    @functools.wraps(func)
    def facade(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except UserError as exc:
            renamed = python_field(exc.field)
            if renamed != exc.field:
                exc.field = renamed
                exc.args = (exc.message(), *exc.args[1:])
            raise

    return cast(F, facade)
