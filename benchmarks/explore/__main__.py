"""``python -m benchmarks.explore``: :mod:`benchmarks.explore.suite`."""

import sys

from benchmarks.explore.suite import main

sys.exit(main())
