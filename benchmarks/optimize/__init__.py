"""Optimisers on symad's exact derivatives against finite differences, on Rosenbrock problems.

``python -m benchmarks.optimize`` runs it (:mod:`benchmarks.optimize.suite`); ``report.py`` writes
``optimize.md`` from ``optimize.json``.
"""
