"""``python -m benchmarks.data_sum``: :mod:`benchmarks.data_sum.suite`."""

import sys

from benchmarks.data_sum.suite import main

sys.exit(main())
