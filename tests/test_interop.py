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
        try:
            back = symad.from_sympy(s, Graph())
        except symad.SymadError:  # polygamma(x < y, 2): SymPy rewrote it with factorial and zeta
            return tally.skip("SymPy rewrote it into functions symad has not")
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
    with pytest.raises(symad.SymadError, match="no operation for SymPy's besselj"):
        symad.from_sympy(sympy.besselj(0, x))
    assert str(symad.from_sympy(sympy.zoo * x)) == "nan*x"  # complex infinity has no real value


# ---------------------------------------------------------------- issue #29 §7: constants, Sum, Product, names
def test_pi_and_e_become_sympys_constants() -> None:
    x = sympy.Symbol("x", real=True)
    assert symad.to_sympy(symad.parse("pi*x + e")) == sympy.pi * x + sympy.E
    assert symad.to_sympy(symad.parse("-pi*x")) == -sympy.pi * x
    assert symad.to_sympy(symad.parse("exp(1)*x")) == sympy.E * x  # exp(1) folds to e's double
    assert symad.to_sympy(symad.parse("3.14*x")) == sympy.Float(3.14, 17) * x  # other doubles stay numbers
    back = symad.from_sympy(symad.to_sympy(symad.parse("pi*x + e", Graph())), Graph())
    assert back == symad.parse("pi*x + e")


def test_sum_product_and_indexed_are_unrolled_as_the_text_is() -> None:
    i, j = sympy.symbols("i j", integer=True)
    x, X = sympy.IndexedBase("x"), sympy.Symbol("y", real=True)
    g = Graph()
    cases = [
        (sympy.Sum(x[i] ** 2, (i, 1, 3)), "x[1]^2 + x[2]^2 + x[3]^2"),
        (sympy.Product(X + i, (i, 1, 3)), "(y + 1)*(y + 2)*(y + 3)"),
        (sympy.Sum(x[i] * x[j], (j, 1, i), (i, 1, 2)), "x[1]^2 + x[2]*x[1] + x[2]^2"),
        (sympy.Sum(sympy.Product(x[j], (j, 1, i)), (i, 1, 2)), "x[1] + x[1]*x[2]"),
        (x[2] * X + sympy.Sum(x[i], (i, 1, 0)), "x[2]*y"),  # an empty sum is 0
        (sympy.Product(x[i], (i, 5, 4)), "1"),
        (sympy.Sum(i * X, (i, 3, 1)), "-(2*y)"),  # SymPy's (Karr's) convention: -Sum(i*y, (i, 2, 2))
        (sympy.Product(X + i, (i, 3, 1)), "(y + 2)^-1"),  # its inverse: 1/Product(y + i, (i, 2, 2))
    ]
    for sympy_expr, text in cases:
        e = symad.from_sympy(sympy_expr, g)
        assert e == symad.parse(text, g), (sympy_expr, str(e))
    at = {"y": 0.7}
    for sympy_expr in (sympy.Sum(i * X, (i, 3, 1)), sympy.Product(X + i, (i, 3, 1))):
        assert close(float(symad.from_sympy(sympy_expr, g).evaluate(at)), float(sympy_expr.doit().subs(X, 0.7)))


@pytest.mark.parametrize("make, message", [
    (lambda i, n, x: sympy.Sum(x[i], (i, 1, n)), r"the bound n of Sum.* not a whole number.*subs\(n, 10\)"),
    (lambda i, n, x: sympy.Product(x[i], (i, sympy.Rational(1, 2), 3)), "the bound 1/2 of Product"),
    (lambda i, n, x: x[i] + 1, "the index i of x\\[i\\] is not a whole number"),
    (lambda i, n, x: sympy.IndexedBase("A")[1, 2], "has 2 indices"),
])
def test_what_cannot_be_unrolled_is_refused(make, message) -> None:
    i, n = sympy.symbols("i n", integer=True)
    with pytest.raises(symad.SymadError, match=message):
        symad.from_sympy(make(i, n, sympy.IndexedBase("x")), Graph())


def test_unrolling_is_bounded_by_the_node_limit() -> None:
    i = sympy.Symbol("i", integer=True)
    with pytest.raises(symad.LimitError, match="unrolling Sum would take over"):
        symad.from_sympy(sympy.Sum(sympy.Symbol("x") + i, (i, 1, 10**12)), Graph())


@pytest.mark.parametrize("name, why", [
    ("x_{1}", "is not a name"), ("θ", "is not a name"), ("my var", "is not a name"),
    ("e", "word of the language"), ("pi", "word of the language"), ("sin", "word of the language"),
])
def test_sympy_names_obey_the_name_rule(name, why) -> None:
    s = sympy.Symbol(name, real=True)
    with pytest.raises(symad.NameRuleError, match=f"a SymPy symbol: .*{why}"):
        symad.from_sympy(2 * s + 1, Graph())
    with pytest.raises(symad.NameRuleError):
        symad.from_sympy(sympy.IndexedBase(name)[1], Graph())


def test_a_constant_sympy_cannot_evaluate_stays_an_expression():
    """SymPy evaluated exp of a huge Float with mpmath and raised a raw OverflowError."""
    e = symad.parse("exp(exp(exp(exp(5.63))))*x", symad.Graph())
    s = symad.to_sympy(e)
    assert [str(v) for v in s.free_symbols] == ["x"]
    assert symad.from_sympy(s).evaluate(x=2.0) == e.evaluate(x=2.0) == math.inf


def test_an_op_whose_sympy_value_is_a_symbol_stays_a_number():
    """max(x, x) is x in SymPy, and a SymPy Symbol is also a Boolean: it was written as the condition x."""
    e = symad.parse("clip(x, x, x) + max(y, y)", symad.Graph())
    back = symad.from_sympy(symad.to_sympy(e))
    assert back.evaluate(x=2.0, y=3.0) == 5.0
