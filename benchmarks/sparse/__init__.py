"""Sparse derivatives (issue 33): the sparse Hessian of chained Rosenbrock and the sparse Jacobian of
``each(i = 1..n-1, x[i+1] - x[i]^2)`` from text, symad beside JAX, CasADi and NumPy by hand.

``python -m benchmarks.sparse`` runs it (:mod:`benchmarks.sparse.suite`), each measurement a fresh
process of ``worker.py``; ``report.py`` writes ``sparse.md`` from ``sparse.json``.
"""
