"""``python -m benchmarks.stitched``: :mod:`benchmarks.stitched.suite`."""

import sys

from benchmarks.stitched.suite import main

sys.exit(main())
