"""The packing family's option domains and method guarantees: plain values, imported by the family's
record (``__init__``) without loading its models, solvers or algorithms."""

from __future__ import annotations

OBJECTIVES = ("weight", "servers")
