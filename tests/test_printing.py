"""Infix printing: fewest parentheses, and parse(str(e)) is e."""

import math

import pytest

from symad import Graph, parse
from symad.printing import format_number


@pytest.mark.parametrize("text, printed", [
    ("(x+y)+x*(x+y)", "x + y + x*(x + y)"),
    ("x+(y+z)", "x + (y + z)"),
    ("x-(y-z)", "x - (y - z)"),
    ("x-(y+z)", "x - (y + z)"),
    ("(x-y)-z", "x - y - z"),
    ("x/(y*z)", "x/(y*z)"),
    ("(x/y)*z", "x/y*z"),
    ("x^y^z", "x^y^z"),
    ("(x^y)^z", "(x^y)^z"),
    ("-x^2", "-x^2"),
    ("(-x)^2", "(-x)^2"),
    ("x^-y", "x^-y"),
    ("-(x*y)", "-(x*y)"),
    ("-x*y", "-x*y"),
    ("sin(x)^2", "sin(x)^2"),
    ("(-2)^x", "(-2)^x"),
    ("2^(-x)", "2^-x"),
    ("atan2(y, x+1)", "atan2(y, x + 1)"),
    ("e^x*pi", "pi*e^x"),
    ("x*1e-5", "1e-05*x"),
])
def test_printing(text, printed):
    g = Graph()
    e = parse(text, g)
    assert str(e) == printed
    assert parse(printed, g) == e


def test_format_number():
    assert format_number(2.0) == "2"
    assert format_number(-0.0) == "-0"
    assert format_number(0.1) == "0.1"
    assert format_number(math.pi) == "pi"
    assert format_number(math.pi, named_constants=False) == "3.141592653589793"
    assert format_number(math.inf) == "inf"
    assert format_number(-math.inf) == "-inf"
    assert format_number(math.nan) == "nan"
    assert float(format_number(1 / 3)) == 1 / 3


def test_special_constants_round_trip():
    g = Graph()
    for text in ["inf*x", "x - inf", "nan + x", "-0*x + y", "x^-0.5"]:
        e = parse(text, g)
        assert parse(str(e), g) == e, text


def test_derivatives_round_trip():
    g = Graph()
    e = parse("sin(x)^2/sqrt(1+y) - atan2(y, x^3)*exp(-x*y)", g)
    for d in e.grad().values():
        assert parse(str(d), g) == d
        for dd in d.grad().values():
            assert parse(str(dd), g) == dd


def test_repr():
    assert repr(parse("x+1", Graph())) == "Expr('x + 1')"
