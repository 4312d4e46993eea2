"""An objective over Dask arrays: logistic regression on 10^7 rows in chunks, on a local cluster.

``python -m benchmarks.dask_fit`` runs it (:mod:`benchmarks.dask_fit.suite`); ``report.py`` writes
``dask_fit.md`` from ``dask_fit.json``.
"""
