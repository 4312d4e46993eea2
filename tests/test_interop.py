"""SymPy both ways: the random-expression corpus round-trips through SymPy with the same values,
SymPy's simplifications come back as symad expressions, and what has no counterpart is named."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.expressions import expressions
from support.properties import property_test

import symad
from symad import Graph

sympy = pytest.importorskip("sympy")


def close(a: float, b: float) -> bool:
    return a == b or (a != a and b != b) or abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


@pytest.mark.slow
def test_the_corpus_round_trips_through_sympy(property_tally) -> None:
    tally = property_tally("random expressions through SymPy and back: values")

    @property_test(300)
    @given(text=expressions(4, sums=True), data=st.data())
    def check(text: str, data) -> None:
        e = symad.parse(text, Graph())
        tally.tried += 1
        try:
            s = symad.to_sympy(e)
        except symad.SymadError:  # min(x, acosh(0.5)): SymPy cannot order a complex number
            return tally.skip("SymPy cannot build it")
        back = symad.from_sympy(s, Graph())
        point = {v: data.draw(st.floats(-2, 2).filter(lambda v: abs(v) > 0.05)) for v in e.variables}
        with np.errstate(all="ignore"):
            want = float(e.evaluate(point))
            got = float(back.evaluate({v: point[v] for v in back.variables}))
        if not (math.isfinite(want) and math.isfinite(got)):
            return tally.skip("non-finite")
        tally.compared_with([] if close(got, want) else [f"{got!r} vs {want!r}"], f"{text} at {point}")

    check()
    assert tally.compared >= 0.5 * tally.tried


@pytest.mark.parametrize("text", ["sin(x)^2/sqrt(1+y)", "(x+y)+x*(x+y)", "where(x > 0, sqrt(x), 0)",
                                  "0 < x <= 1", "sum(i = 1..3, x[i]^2)", "clip(x, -1, y) + round(x) + sinc(y)",
                                  "atan2(y, x) + min(x, y) + max(x, y) + abs(x) + sign(y)"])
def test_examples_round_trip(text: str) -> None:
    e = symad.parse(text, Graph())
    back = symad.from_sympy(symad.to_sympy(e), Graph())
    for point in ({v: 0.7 for v in e.variables}, {v: -1.3 for v in e.variables}):
        assert close(float(back.evaluate({v: point[v] for v in back.variables})), float(e.evaluate(point)))


def test_simplify_in_sympy_then_differentiate_and_compile_in_symad() -> None:
    x, y = sympy.symbols("x y", real=True)
    simplified = sympy.simplify(sympy.sin(x) ** 2 + sympy.cos(x) ** 2 + x * y)
    e = symad.from_sympy(simplified)
    assert e == symad.parse("x*y + 1")
    assert symad.compile(e).value_and_grad([2.0, 3.0])[1].tolist() == [3.0, 2.0]
    piecewise = symad.from_sympy(sympy.Piecewise((x, x > 1), (y, x < -1)))
    assert str(piecewise) == "where(x > 1, x, where(x < -1, y, nan))"
    assert symad.from_sympy(sympy.sqrt(x) + 1 / sympy.sqrt(y)) == symad.parse("sqrt(x) + 1/sqrt(y)")


def test_what_symad_has_not_is_named() -> None:
    x = sympy.Symbol("x")
    with pytest.raises(symad.SymadError, match="no operation for SymPy's gamma"):
        symad.from_sympy(sympy.gamma(x))
    assert str(symad.from_sympy(sympy.zoo * x)) == "nan*x"  # complex infinity has no real value
