"""symad's benchmarks: one folder per suite, and the harness they share.

Each suite (``peers``, ``first_call``, ``data_sum``, ``dask_fit``, ``branches``, ``scaling``,
``optimize``, ``huge_inputs``, ``resources``) runs as ``python -m benchmarks.<suite>``
(``suite.py``), measures in fresh processes (``worker.py``, where it has one) and keeps its
figures (``<suite>.json``) and its page (``<suite>.md``, rendered by ``report.py``) in its
folder.  :mod:`benchmarks.harness` holds what they all repeat: starting workers and reading
their phases, timing in turn, provenance, tables.  ``profile.py`` and ``fuzz_long.py`` are
tools, not suites: where symad spends its time, and long fuzzing runs.  The list of reports:
docs/reports.md.
"""
