"""Infix printing: fewest parentheses, and parse(str(e)) is e."""

import math

import pytest

from symad import Graph, parse
from symad.core.printing import format_number, to_shared, to_texts


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


def _program(definitions, text):
    return "; ".join([f"{n} = {b}" for n, b in definitions] + [text])


def test_to_texts_names_what_the_roots_share_and_parses_back():
    g = Graph()
    n = 600
    e = parse("*".join(f"x{i}" for i in range(1, n + 1)), g)
    partials = list(e.grad().values())
    definitions, texts = to_texts(g, [d.id for d in partials])
    assert definitions[0] == ("_1", "x1*x2")
    assert sum(len(t) for t in texts) + sum(len(b) for _, b in definitions) < 40 * n
    for d, text in list(zip(partials, texts))[:: n // 7]:
        assert parse(_program(definitions, text), g) == d


def test_to_texts_small_is_each_root_as_str():
    g = Graph()
    e = parse("sin(x)^2/sqrt(1+y)", g)
    partials = list(e.grad().values())
    assert to_texts(g, [d.id for d in partials]) == ([], [str(d) for d in partials])
    assert to_texts(g, []) == ([], [])


def test_to_texts_shared_form():
    g = Graph()
    e = parse("sin(x*y)*x + sin(x*y)", g)
    dx, dy = e.grad().values()
    definitions, texts = to_texts(g, [dx.id, dy.id, dx.id], "shared")
    assert texts[0] == texts[2]  # a root printed twice is named once
    for d, text in zip([dx, dy, dx], texts):
        assert parse(_program(definitions, text), g) == d
    assert to_shared(g, e.id) == e.to_text("shared")


def test_shared_names_avoid_variables():
    g = Graph()
    e = parse("(_1 + x)*(_1 + x) + y", g)
    definitions, _ = to_texts(g, [e.id], "shared")
    assert definitions == [("__1", "_1 + x")]
