"""How symad's costs grow with the size of a problem, to 10^6 variables, each figure from a fresh process.

``python -m benchmarks.scaling`` runs it (:mod:`benchmarks.scaling.suite`); ``report.py`` writes
``scaling.md`` from ``scaling.json``.
"""
