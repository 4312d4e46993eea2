"""``python -m benchmarks.dask_fit``: :mod:`benchmarks.dask_fit.suite`."""

import sys

from benchmarks.dask_fit.suite import main

sys.exit(main())
