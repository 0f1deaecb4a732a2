"""Exceptions that separate a user's mistake from a bug.

Everything a user can get wrong (a file, a field, an option) raises :class:`UserError`;
the CLI turns it into one line on stderr and exit code 2.  Anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations


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
