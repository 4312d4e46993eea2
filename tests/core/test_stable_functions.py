"""The stable functions' table in docs/reference/numerics.md: symad's values and derivatives at extreme
points, against mpmath at 80 digits."""

from __future__ import annotations

import re
from pathlib import Path

import mpmath
import pytest

import symad

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "docs" / "reference" / "numerics.md").read_text().split("## Stable functions", 1)[1]
ROWS = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| ([^|]+) \| ([^|]+) \|$", SECTION, flags=re.M)

mp = mpmath.mp
EXACT = {
    "softplus": lambda x: mpmath.log(1 + mpmath.exp(x)),
    "sigmoid": lambda x: 1 / (1 + mpmath.exp(-x)),
    "log_sigmoid": lambda x: -mpmath.log(1 + mpmath.exp(-x)),
    "logsumexp": lambda *a: mpmath.log(sum(mpmath.exp(v) for v in a)),
    "log1p": lambda x: mpmath.log(1 + x),
    "expm1": lambda x: mpmath.exp(x) - 1,
    "erf": mpmath.erf, "erfc": mpmath.erfc,
    "hypot": lambda x, y: mpmath.sqrt(x * x + y * y),
    "cbrt": lambda x: mpmath.sign(x) * mpmath.cbrt(abs(x)),
    "asinh": mpmath.asinh, "acosh": mpmath.acosh, "atanh": mpmath.atanh,
    "floor": mpmath.floor, "ceil": mpmath.ceil,
    "round": lambda x: mpmath.sign(x) * mpmath.floor(abs(x) + mpmath.mpf("0.5")),
    "clip": lambda x, lo, hi: min(max(x, lo), hi),
    "sinc": mpmath.sinc,  # sin(x)/x
}
FLAT = ("floor", "ceil", "round", "clip")  # derivative 0 at the table's points


def close(got: float, exact: mpmath.mpf) -> bool:
    want = float(exact)  # rounded to a double: 0.0 where the true value underflows
    return got == want or abs(got - want) <= 1e-15 * abs(want)


def test_the_table_has_every_stable_function() -> None:
    names = {text.split("(")[0] for text, *_ in ROWS}
    assert names == set(EXACT), set(EXACT) ^ names


@pytest.mark.parametrize("text, at, value, slope", ROWS, ids=[f"{t} at {a}" for t, a, *_ in ROWS])
def test_documented_values_are_symads_and_mpmaths(text: str, at: str, value: str, slope: str) -> None:
    point = {k.strip(): float(v) for k, v in (kv.split("=") for kv in at.split(","))}
    fn = symad.compile(text, list(point))
    v, g = fn.value_and_grad(point)
    assert (v, float(g[0])) == (float(value), float(slope))  # the table is what symad computes
    name = text.split("(")[0]
    args = [a.strip() for a in text[len(name) + 1:-1].split(",")]
    with mp.workdps(80):
        exact_of = EXACT[name]

        def f(x: mpmath.mpf) -> mpmath.mpf:
            values = {**{k: mpmath.mpf(p) for k, p in point.items()}, "x": x}
            return exact_of(*(values[a] if a in values else mpmath.mpf(a) for a in args))

        x = mpmath.mpf(point["x"])
        assert close(v, f(x)), (v, f(x))
        h = abs(x) * mpmath.mpf("1e-30") or mpmath.mpf("1e-30")  # a step relative to x, as x may be 1e200
        exact_slope = mpmath.mpf(0) if name in FLAT else mpmath.diff(f, x, h=h)
        assert close(float(g[0]), exact_slope), (float(g[0]), exact_slope)
