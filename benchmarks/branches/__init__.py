"""The per-point cost of branches and stable functions, against the same work written without them.

``python -m benchmarks.branches`` runs it (:mod:`benchmarks.branches.suite`); ``report.py`` writes
``branches.md`` from ``branches.json``.
"""
