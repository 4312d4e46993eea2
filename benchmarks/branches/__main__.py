"""``python -m benchmarks.branches``: :mod:`benchmarks.branches.suite`."""

from benchmarks.branches.suite import main

main()
