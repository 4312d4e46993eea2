"""Sums kept as loops (issue 32): chained Rosenbrock to 10^7 variables, x'Ax over a data matrix, the
indexed gradient printed by the command line and an L-BFGS-B solve, symad beside JAX, NumPy by hand,
hand-written C and CasADi.

``python -m benchmarks.indexed`` runs it (:mod:`benchmarks.indexed.suite`), each measurement a fresh
process of ``worker.py``; ``report.py`` writes ``indexed.md`` from ``indexed.json``.
"""
