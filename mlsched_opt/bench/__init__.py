"""Benchmark suites (``mlsched bench``): many instances and methods, every answer checked, ratios,
reports.  The one-instance comparison (``mlsched compare``) is :func:`mlsched_opt.pipeline.compare`.

Names are loaded when first used: ``mlsched --help`` lists ``bench`` without importing the harness.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {"Row": "compare", "approximation_ratio": "compare", "compare": "compare", "format_table": "compare"}

__all__ = list(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    globals()[name] = value  # over the submodule of the same name, which importing it bound here
    return value
