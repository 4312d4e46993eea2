"""``python -m benchmarks.optimize``: :mod:`benchmarks.optimize.suite`."""

import sys

from benchmarks.optimize.suite import main

sys.exit(main())
