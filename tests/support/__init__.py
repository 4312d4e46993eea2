"""Helpers shared by the tests (and by benchmarks/): imported as ``support.<module>``."""
