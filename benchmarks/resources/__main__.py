"""``python -m benchmarks.resources``: :mod:`benchmarks.resources.suite`."""

from benchmarks.resources.suite import main

main()
