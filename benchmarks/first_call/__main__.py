"""``python -m benchmarks.first_call``: :mod:`benchmarks.first_call.suite`."""

import sys

from benchmarks.first_call.suite import main

sys.exit(main())
