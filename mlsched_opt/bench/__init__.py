"""Benchmark suites (``mlsched bench``): many instances and methods, every answer checked, ratios,
reports.  The one-instance comparison (``mlsched compare``) is the library's :mod:`mlsched_opt.comparison`.

Nothing is imported here: ``mlsched --help`` lists ``bench`` without importing the harness.
"""
