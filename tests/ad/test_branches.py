"""Branches: comparisons, logic and where(c, a, b), whose derivatives never leak the nan of the
arm not taken (issue #17 §1) — in the symbolic derivative, every evaluator, batches, Hessians,
forward mode, explain and on the command line."""

from __future__ import annotations

import math

import numpy as np
import pytest
from support.cli_helpers import run

import symad
from symad import Graph
from symad.backends.tape import Tape
from symad.core.errors import ParseError
from symad.second_order import SecondOrder
from symad.tools.explanation import explain

BACKENDS = ["auto", "python", "native"]
# (expression, point, value, gradient): the arm not taken is nan or inf there
NAN_FREE = [
    ("where(x > 0, sqrt(x), 0)", {"x": 0.0}, 0.0, {"x": 0.0}),
    ("where(x > 0, sqrt(x), 0)", {"x": -1.0}, 0.0, {"x": 0.0}),
    ("where(x != 0, sin(x)/x, 1)", {"x": 0.0}, 1.0, {"x": 0.0}),
    ("if x > 0 then log(x) else -x^2", {"x": -2.0}, -4.0, {"x": 4.0}),
    ("y*where(x > 0, sqrt(x), 0)", {"x": 0.0, "y": 3.0}, 0.0, {"x": 0.0, "y": 0.0}),
    ("where(x > 0, sqrt(x), 0)^2 + where(x > 1, sqrt(x), 5)", {"x": 0.0}, 5.0, {"x": 0.0}),
    ("where(x > 0 and y > 0, sqrt(x*y), 0)", {"x": 0.0, "y": 4.0}, 0.0, {"x": 0.0, "y": 0.0}),
    ("where(x < 1, where(x > 0, log(x), 0), sqrt(x - 1))", {"x": 0.0}, 0.0, {"x": 0.0}),
    ("where(x < 1, where(x > 0, log(x), 0), sqrt(x - 1))", {"x": 1.0}, 0.0, {"x": math.inf}),
]


def _tape(e: symad.Expr, names: list[str]) -> Tape:
    return Tape(e.graph, e.id, [symad.var(n, e.graph).id for n in names])


@pytest.mark.parametrize("text, point, value, grad", NAN_FREE)
def test_the_arm_not_taken_leaks_no_nan_in_any_evaluator(text, point, value, grad):
    e = symad.parse(text, Graph())
    names = list(point)
    x = [point[n] for n in names]
    want = [grad[n] for n in names]
    for backend in BACKENDS:
        v, g = e.compile(names, backend=backend).value_and_grad(x)
        assert (v, list(g)) == (value, want), backend
    v, g = _tape(e, names).value_and_grad(x)
    assert (v, list(g)) == (value, want)
    symbolic = e.grad(names)
    assert [symbolic[n].evaluate({v: point[v] for v in symbolic[n].variables}) if symbolic[n].variables
            else float(str(symbolic[n])) for n in names] == want


def test_a_batch_on_both_sides_of_the_branch_is_right_point_by_point():
    f = symad.compile("where(x > 0, sqrt(x), 0)")
    xs = np.array([-4.0, -1.0, -0.0, 0.0, 1e-300, 0.25, 4.0])
    values, grads = f.value_and_grad(xs.reshape(-1, 1))
    assert values.tolist() == [0.0, 0.0, 0.0, 0.0, math.sqrt(1e-300), 0.5, 2.0]
    assert grads[:, 0].tolist() == [0.0, 0.0, 0.0, 0.0, 0.5 / math.sqrt(1e-300), 1.0, 0.25]
    for backend in BACKENDS:
        v, g = symad.compile("where(x > 0, sqrt(x), 0)", backend=backend).value_and_grad(xs.reshape(-1, 1))
        assert v.tolist() == values.tolist() and g.tolist() == grads.tolist(), backend


def test_the_derivative_is_the_branch_it_is():
    assert str(symad.parse("where(x > 0, sqrt(x), 0)").diff("x")) == "where(x > 0, 0.5/sqrt(x), 0)"
    assert str(symad.parse("if x > 0 then sqrt(x) else -x^2").diff("x")) == "where(x > 0, 0.5/sqrt(x), -(2*x))"


def test_second_derivatives_and_forward_mode_leak_no_nan():
    e = symad.parse("where(x > 0, sqrt(x)^3, 0)")
    d2 = e.diff("x").diff("x")
    assert d2.evaluate({"x": 0.0}) == 0.0 and d2.evaluate({"x": -1.0}) == 0.0
    assert math.isclose(d2.evaluate({"x": 4.0}), 0.75 / 2.0)
    second = SecondOrder(e)
    assert second.hessian([0.0]).tolist() == [[0.0]] and second.hessian([-1.0]).tolist() == [[0.0]]
    tangent = e.jvp({"x": 1.0})
    assert tangent.evaluate({"x": 0.0}) == 0.0 and tangent.evaluate({"x": -1.0}) == 0.0


def test_comparisons_and_logic_are_ones_and_zeros_with_zero_derivatives():
    f = symad.compile("(x < y) + 2*(x <= y) + 4*(x > y) + 8*(x >= y) + 16*(x == y) + 32*(x != y)"
                      " + 64*(x and y) + 128*(x or y) + 256*(not x)", ["x", "y"])
    for (x, y), want in {(1.0, 2.0): 1 + 2 + 32 + 64 + 128, (2.0, 2.0): 2 + 8 + 16 + 64 + 128,
                         (0.0, -1.0): 4 + 8 + 32 + 128 + 256, (0.0, 0.0): 2 + 8 + 16 + 256,
                         (math.nan, 1.0): 32 + 64 + 128}.items():
        value, grad = f.value_and_grad([x, y])
        assert value == want and grad.tolist() == [0.0, 0.0], (x, y)


def test_chained_comparisons_read_as_in_mathematics():
    g = Graph()
    assert symad.parse("0 < x <= 1", g) == symad.parse("0 < x and x <= 1", g)
    f = symad.compile("0 < x <= 1")
    assert [f.value([v]) for v in (-1.0, 0.0, 0.5, 1.0, 2.0)] == [0.0, 0.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("text, same_as", [
    ("not x < y", "not (x < y)"),
    ("x < y and y < z or z", "((x < y) and (y < z)) or z"),
    ("not x and y", "(not x) and y"),
    ("x + 1 < 2*y", "(x + 1) < (2*y)"),
    ("if x > 0 then y else z + 1", "where(x > 0, y, z + 1)"),
    ("if a then if b then c else d else e", "where(a, where(b, c, d), e)"),
])
def test_precedence_is_that_of_mathematics(text, same_as):
    g = Graph()
    assert symad.parse(text, g) == symad.parse(same_as, g)


@pytest.mark.parametrize("text", ["where(x > 0, sqrt(x), 0)", "(x < y) < z", "not not x", "x == y != z",
                                  "-(x < y)", "(x or y) and z", "if x then y else z", "2*(x >= 1) + (a and b)"])
def test_printed_conditions_parse_back(text):
    g = Graph()
    e = symad.parse(text, g)
    assert symad.parse(str(e), g) == e


@pytest.mark.parametrize("text, message", [
    ("x <> 1", "unexpected '>'"),
    ("if x then y", "expected 'else'"),
    ("where(x, 1)", r"where takes 3 argument\(s\), got 2"),
    ("x and", "unexpected end of input"),
])
def test_bad_conditions_are_clear_errors(text, message):
    with pytest.raises(ParseError, match=message):
        symad.parse(text)


def test_explain_shows_the_branch_not_taken():
    text = explain(symad.parse("where(x > 0, sqrt(x), 0)"), {"x": 0.0}).to_text()
    assert "0 (branch not taken)" in text and "nan" not in text
    assert text.splitlines()[-1] == "gradient: df/dx = z̄1 = 0"


@pytest.mark.parametrize("x, want", [("0", "0"), ("-1", "0"), ("4", "0.25")])
def test_the_command_line_gives_nan_free_gradients(x, want):
    done = run("grad", "where(x > 0, sqrt(x), 0)", "--at", f"x={x}")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines()[-1] == f"df/dx = {want}"


def test_no_warning_for_the_nan_of_an_arm_not_taken():
    done = run("grad", "where(x > 0, log(x), 0)", "--at", "x=-1")
    assert done.returncode == 0 and done.stderr == "" and done.stdout.split() == ["f", "=", "0", "df/dx", "=", "0"]
