"""Reverse and forward mode: symbolic derivatives in the same DAG."""

import math

import numpy as np
import pytest

from symad import Graph, parse
from symad.ad.reverse import gradient


def at(e, **point):
    return e.compile(variables=sorted(point)).value(point) if e.variables else e.evaluate()


def test_seed_gradient():
    g = Graph()
    e = parse("(x+y)+x*(x+y)", g)
    grad = e.grad()
    assert at(grad["x"], x=1, y=2) == 5.0
    assert at(grad["y"], x=1, y=2) == 2.0


def test_gradient_shares_forward_nodes():
    g = Graph()
    e = parse("sin(x*y) * exp(x*y)", g)
    before = set(g.reachable([e.id]))
    grads = e.grad()
    both = set(g.reachable([e.id, *(d.id for d in grads.values())]))
    assert before <= both
    # d/dx reuses x*y, sin(x*y) and exp(x*y) instead of rebuilding them
    used = set(g.reachable([grads["x"].id]))
    assert parse("x*y", g).id in used and parse("exp(x*y)", g).id in used


def test_shared_node_accumulates_adjoints():
    g = Graph()
    e = parse("(x+y)*(x+y)", g)  # one node x+y used twice by mul
    assert at(e.diff("x"), x=1, y=2) == 6.0
    e = parse("x*x*x", g)
    assert at(e.diff("x"), x=2) == 12.0


@pytest.mark.parametrize("text, var, point, expected", [
    ("sin(x)", "x", {"x": 0.3}, math.cos(0.3)),
    ("tan(x)", "x", {"x": 0.3}, 1 / math.cos(0.3) ** 2),
    ("asin(x)", "x", {"x": 0.3}, 1 / math.sqrt(1 - 0.09)),
    ("acos(x)", "x", {"x": 0.3}, -1 / math.sqrt(1 - 0.09)),
    ("atan(x)", "x", {"x": 0.3}, 1 / 1.09),
    ("tanh(x)", "x", {"x": 0.3}, 1 - math.tanh(0.3) ** 2),
    ("exp(2*x)", "x", {"x": 0.3}, 2 * math.exp(0.6)),
    ("log(x)", "x", {"x": 0.3}, 1 / 0.3),
    ("log(x, 2)", "x", {"x": 0.3}, 1 / (0.3 * math.log(2))),
    ("sqrt(x)", "x", {"x": 4.0}, 0.25),
    ("x^y", "y", {"x": 2.0, "y": 3.0}, 8 * math.log(2)),
    ("x^y", "x", {"x": 2.0, "y": 3.0}, 12.0),
    ("atan2(y, x)", "x", {"x": 1.0, "y": 2.0}, -2 / 5),
    ("atan2(y, x)", "y", {"x": 1.0, "y": 2.0}, 1 / 5),
])
def test_known_derivatives(text, var, point, expected):
    g = Graph()
    e = parse(text, g)
    assert at(e.diff(var), **point) == pytest.approx(expected, rel=1e-14)


def test_non_differentiable_points_convention():
    g = Graph()
    assert at(parse("abs(x)", g).diff("x"), x=0) == 0.0
    assert at(parse("abs(x)", g).diff("x"), x=-2) == -1.0
    assert at(parse("max(x, y)", g).diff("x"), x=1, y=1) == 0.5
    assert at(parse("min(x, y)", g).diff("y"), x=1, y=1) == 0.5
    assert at(parse("max(x, 2*x - 1)", g).diff("x"), x=1) == 1.5  # tie: the average slope
    assert at(parse("max(x, y)", g).diff("x"), x=2, y=1) == 1.0
    assert at(parse("sqrt(x)", g).diff("x"), x=0) == math.inf


def test_derivative_of_unused_variable_is_zero():
    g = Graph()
    e = parse("x^2", g)
    assert str(e.diff("y")) == "0"


def test_second_derivatives():
    g = Graph()
    e = parse("x^3*y + sin(x*y)", g)
    dxx = e.diff("x").diff("x")
    dxy = e.diff("x").diff("y")
    dyx = e.diff("y").diff("x")
    x, y = 0.7, -1.3
    assert at(dxx, x=x, y=y) == pytest.approx(6 * x * y - y * y * math.sin(x * y), rel=1e-13)
    assert at(dxy, x=x, y=y) == pytest.approx(at(dyx, x=x, y=y), rel=1e-13)
    assert at(dxy, x=x, y=y) == pytest.approx(
        3 * x * x + math.cos(x * y) - x * y * math.sin(x * y), rel=1e-13)


def test_third_derivative_is_exact():
    g = Graph()
    e = parse("x^5", g)
    assert str(e.diff("x").diff("x").diff("x")) in ("60*x^2", "3*x^2*20", "20*(3*x^2)")
    assert at(e.diff("x").diff("x").diff("x"), x=2) == 240.0


def test_forward_mode_agrees_with_reverse():
    g = Graph()
    e = parse("sin(x)^2/sqrt(1+y) + atan2(y, x)*exp(-x*y)", g)
    grads = e.grad()
    v = {"x": 0.3, "y": -1.7}
    jvp = e.jvp(v)
    point = {"x": 0.9, "y": 0.4}
    expected = sum(at(grads[k], **point) * v[k] for k in v)
    assert at(jvp, **point) == pytest.approx(expected, rel=1e-13)


def test_jvp_with_symbolic_direction():
    g = Graph()
    e = parse("x^2*y", g)
    d = e.jvp({"x": parse("u", g)})
    assert at(d, u=3, x=2, y=5) == pytest.approx(3 * 2 * 2 * 5)


def test_one_backward_sweep_gives_every_partial():
    g = Graph()
    n = 50
    e = parse("+".join(f"x{i}*x{i+1}" for i in range(n)), g)
    partials = gradient(g, e.id)
    assert len(partials) == n + 1
    f = e.compile()
    value, grad = f.value_and_grad(np.arange(n + 1, dtype=float))
    xs = np.arange(n + 1, dtype=float)
    expected = np.zeros(n + 1)
    expected[:-1] += xs[1:]
    expected[1:] += xs[:-1]
    assert np.array_equal(grad, expected)


def test_a_vector_name_stands_for_its_written_out_entries():
    e = parse("sum(i = 1..3, x[i]^2) + y")  # short: written out into x[1], x[2], x[3]
    grads = e.grad(["x", "y"])
    assert list(grads) == ["x[1]", "x[2]", "x[3]", "y"]
    assert [str(grads[f"x[{k}]"]) for k in (1, 2, 3)] == ["2*x[1]", "2*x[2]", "2*x[3]"]
    assert str(e.diff("x[2]")) == "2*x[2]"
    with pytest.raises(Exception, match=r"x stands for 3 entries here \(x\[1\.\.3\]\)"):
        e.diff("x")
    assert str(e.grad(["z"])["z"]) == "0"  # a variable the expression does not use: its derivative is 0
