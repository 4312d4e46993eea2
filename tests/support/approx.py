"""Comparing floats in tests: equal up to rounding, nan matching nan, inf matching inf."""

from __future__ import annotations

import math


def close(got: float, want: float, rel: float, floor: float) -> bool:
    """Within ``rel`` relative error plus an absolute ``floor``."""
    return abs(got - want) <= rel * max(abs(got), abs(want)) + floor


def same(a: float, b: float, rel: float = 1e-12) -> bool:
    """Equal up to rounding, nan matching nan and inf matching inf of the same sign."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return close(a, b, rel=rel, floor=1e-300)
