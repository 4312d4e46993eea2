"""``python -m benchmarks.optimal_control``: :mod:`benchmarks.optimal_control.suite`."""

import sys

from benchmarks.optimal_control.suite import main

sys.exit(main())
