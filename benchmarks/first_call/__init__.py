"""Fast from the first call: symad and its peers from the text to the first answers (time to solution,
the first 1,000 calls, the tiers per node, the steady state, the command line, tiny expressions).

``python -m benchmarks.first_call`` runs it (:mod:`benchmarks.first_call.suite`), each measurement a fresh
process of ``worker.py``; ``report.py`` writes ``first_call.md`` from ``first_call.json``.
"""
