"""Comparison of methods against the proven optimum: ratios, checks and report tables."""

from .compare import Row, approximation_ratio, compare, format_table

__all__ = ["Row", "approximation_ratio", "compare", "format_table"]
