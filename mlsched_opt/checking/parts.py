"""The parts of a decision a family does not read, and the claim containers of ``extra``.

The checker trusts nothing but the instance, the command line and the decision, so it reads all
of the decision: each family names the parts it reads (top-level keys, the keys of an entry,
the claims of ``extra``).  Any other part must be absent or empty (``None``, ``{}``, ``[]``);
anything else in it breaks rule ``decision`` (the rule :func:`.core.decision_part` already
uses for a non-empty part of the wrong kind), so nonsense never passes unread.

``extra`` holds claims: those a family recomputes it compares, those it cannot (a method's
prices, payoffs, statistics) it lists as *notes* and ignores, and any other key is flagged.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from .core import CheckResult


def is_empty(value: Any) -> bool:
    """Absent or empty: ``None``, ``{}`` or ``[]`` (``0``, ``""`` or ``false`` are values, not emptiness)."""
    return value is None or (isinstance(value, (Mapping, list)) and not value)


def unread_parts(result: CheckResult, mapping: Mapping[str, Any], reads: Collection[str], family: str,
                 where: str = "", reported: Collection[str] = (), why: Mapping[str, str] | None = None) -> None:
    """Flag (rule ``decision``) every non-empty key of ``mapping`` outside ``reads``.

    ``where`` is the path of ``mapping`` (``""`` for the decision itself); ``reported`` names keys
    whose truthy values the caller already flagged (:func:`.core.decision_part`'s other kind);
    ``why`` gives the reason for a key the family has no use for."""
    for key, value in mapping.items():
        if key in reads or is_empty(value) or (key in reported and value):
            continue
        listing = f"{where}.{{{', '.join(reads)}}}" if where else ", ".join(reads)
        reason = (why or {}).get(key, f"not read by the {family} checker, which reads {listing}")
        result.add("decision", f"{where}.{key}" if where else str(key), f"{reason}; must be absent or empty")


def extra_part(result: CheckResult, decision: Mapping[str, Any], reads: Collection[str], notes: Collection[str],
               family: str) -> Mapping[str, Any]:
    """``decision["extra"]`` as a mapping (``{}`` when absent; rule ``domain`` when not a mapping).

    Keys in ``reads`` are the claims the family checks, keys in ``notes`` a method's own figures
    the checker cannot recompute and ignores; any other non-empty key breaks rule ``decision``."""
    extra = decision.get("extra")
    if extra is None:
        return {}
    if not isinstance(extra, Mapping):
        result.add("domain", "extra", f"must be a mapping of claims, got {type(extra).__name__}")
        return {}
    for key, value in extra.items():
        if key in reads or key in notes or is_empty(value):
            continue
        result.add("decision", f"extra.{key}", f"not a {family} claim (it checks extra.{{{', '.join(reads)}}} and ignores "
                                               f"the method figures extra.{{{', '.join(notes)}}}); must be absent or empty")
    return extra


def claim_map(result: CheckResult, extra: Mapping[str, Any], key: str, keyed_by: str = "job id") -> Mapping[str, Any]:
    """``extra[key]`` as a mapping (``{}`` when absent); anything else breaks rule ``domain``, never skipped."""
    value = extra.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        result.add("domain", f"extra.{key}", f"must be a mapping keyed by {keyed_by}, got {type(value).__name__}")
        return {}
    return value


def is_number(value: Any) -> bool:
    """A finite number (not a bool): what a claim must be to be compared with a recomputed float."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer beyond any float
        return False


__all__ = ["claim_map", "extra_part", "is_empty", "is_number", "unread_parts"]
