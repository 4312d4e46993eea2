"""``python -m benchmarks.scaling``: :mod:`benchmarks.scaling.suite`."""

from benchmarks.scaling.suite import main

main()
