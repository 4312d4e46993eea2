"""Models over data: a loss summed over rows, symad's ``objective`` beside JAX, NumPy, CasADi and PyTorch.

``python -m benchmarks.data_sum`` runs it (:mod:`benchmarks.data_sum.suite`), each measurement a fresh
process of ``worker.py``; ``report.py`` writes ``data_sum.md`` from ``data_sum.json``.
"""
