"""``python -m benchmarks.indexed``: :mod:`benchmarks.indexed.suite`."""

import sys

from benchmarks.indexed.suite import main

sys.exit(main())
