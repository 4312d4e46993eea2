"""Huge and hostile inputs through the ``symad`` command: wall time and peak memory of each.

``python -m benchmarks.huge_inputs`` runs it (:mod:`benchmarks.huge_inputs.suite`); ``report.py`` writes
``huge_inputs.md`` from ``huge_inputs.json``.
"""
