"""``python -m benchmarks.sparse``: :mod:`benchmarks.sparse.suite`."""

import sys

from benchmarks.sparse.suite import main

sys.exit(main())
