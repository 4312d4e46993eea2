"""``python -m benchmarks.huge_inputs``: :mod:`benchmarks.huge_inputs.suite`."""

import sys

from benchmarks.huge_inputs.suite import main

sys.exit(main())
