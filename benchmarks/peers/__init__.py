"""symad beside its peers (SymPy, SymEngine, CasADi, JAX, PyTorch, HIPS autograd, NumPy and hand-written C) on
the same workloads: one point, a batch, the build, memory, the build's scaling.

``python -m benchmarks.peers`` runs it (:mod:`benchmarks.peers.suite`); each measurement is a fresh process of
``worker.py``; ``adapters.py`` wraps each peer to one contract, ``translate.py`` reads the text into each peer's
objects, ``workloads.py`` makes the expressions; ``report.py`` writes ``peers.md`` from ``peers.json``.
"""
