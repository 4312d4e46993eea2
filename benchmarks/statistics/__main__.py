"""``python -m benchmarks.statistics``: :mod:`benchmarks.statistics.suite`."""

import sys

from benchmarks.statistics.suite import main

sys.exit(main())
