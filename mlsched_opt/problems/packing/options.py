"""The packing family's option domains and method guarantees: plain values, imported by the family's
record (``__init__``) without loading its models, solvers or algorithms."""

from __future__ import annotations

OBJECTIVES = ("weight", "servers")
#: ``gpus``: ``pooled`` packs a node's GPUs as one total; ``per-gpu`` packs them GPU by GPU (:mod:`.pergpu`)
GPU_MODES = ("pooled", "per-gpu")
