"""``python -m benchmarks.peers``: :mod:`benchmarks.peers.suite`."""

import sys

from benchmarks.peers.suite import main

sys.exit(main())
