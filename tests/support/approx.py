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


EPS = 2.0 ** -52


def central_derivative(f, h: float) -> tuple[float, float] | None:
    """The derivative at 0 of ``f`` (a function of the step, ``t -> F(x + t)``) by central
    differences with Richardson extrapolation, and a bound on its own error; None where the
    differences do not converge (a pole, a kink, a jump or an oscillation faster than the step:
    nothing to compare).

    With D(s) the central difference of step s, D(s) = f' + c s^2 + O(s^4).  Steps h, h/2, h/4
    and h/8 must show that regime: each halving shrinks the change |D(s/2) - D(s)| at least
    twofold (fourfold in theory), and the first change is small beside the derivative.  Then
    R = D(h/8) + (D(h/8) - D(h/4))/3 is within the last change, which the bound takes whole,
    plus the rounding of the differences (eps |F| / s each).
    """
    steps = [h / 2 ** k for k in range(4)]
    values = [(f(s), f(-s)) for s in steps]
    if not all(math.isfinite(v) for pair in values for v in pair):
        return None
    d = [(up - down) / (2 * s) for s, (up, down) in zip(steps, values)]
    scale = max(abs(v) for pair in values for v in pair)
    rounding = 8 * EPS * scale / steps[-1]
    changes = [abs(b - a) for a, b in zip(d, d[1:])]
    if any(later > earlier / 2 + 2 * rounding for earlier, later in zip(changes, changes[1:])):
        return None
    if changes[0] > 1e-2 * abs(d[-1]) + 4 * rounding:
        return None
    return d[-1] + (d[-1] - d[-2]) / 3, changes[-1] + 2 * rounding
