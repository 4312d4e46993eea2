"""Jacobians of several outputs and their products, as nodes of the DAG: against SymPy and each other."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.expressions import expressions
from support.oracle import not_comparable

from symad import Graph, parse
from symad.ad.matrices import cotangent_names, jacobian_nodes, jvp_nodes, vjp_nodes
from symad.expr import Expr
from symad.frontend.parser import parse_outputs_into

SMOOTH = expressions(3, variables=("x", "y", "z"), numbers=("0.5", "2", "3"), in_domain=True,
                     ops=("add", "sub", "mul", "div", "pow", "neg", "sin", "cos", "exp", "tanh", "atan"))
POINT = {"x": 0.3, "y": -0.7, "z": 1.1}


def values(g: Graph, nodes: list[int], point: dict[str, float]) -> np.ndarray:
    return np.array([_evaluate(g, n, point) for n in nodes])


def _evaluate(g: Graph, node: int, point: dict[str, float]) -> float:
    e = Expr(g, node)
    return float(e.evaluate({v: point[v] for v in e.variables}))


def test_reverse_and_forward_sweeps_give_the_same_jacobian() -> None:
    g = Graph()
    roots = parse_outputs_into("x*y + sin(z); exp(x)*y; x/z; y^3", g)
    wrt = [g.var(v) for v in ("x", "y", "z")]
    by_rows = jacobian_nodes(g, roots[:3], wrt)  # 3 outputs, 3 inputs: reverse sweeps
    by_columns = jacobian_nodes(g, roots, wrt)  # 4 outputs > 3 inputs: one forward sweep
    for i in range(3):
        np.testing.assert_allclose(values(g, by_rows[i], POINT), values(g, by_columns[i], POINT), rtol=1e-15)
    assert [_evaluate(g, n, POINT) for n in by_columns[3]] == [0.0, 3 * POINT["y"] ** 2, 0.0]


@settings(max_examples=25, deadline=None)
@given(st.lists(SMOOTH, min_size=1, max_size=4))
def test_jacobian_matches_sympy(texts: list[str]) -> None:
    g = Graph()
    roots = [parse(t, g).id for t in texts]
    names = ["x", "y", "z"]
    jac = jacobian_nodes(g, roots, [g.var(v) for v in names])
    symbols = sympy.symbols(names)
    for text, row in zip(texts, jac):
        # float64 cannot meet the tolerance: sin(5^exp(3)) is sin of a number rounded to ±0.01
        assume(not_comparable(Expr(g, roots[0]), row, text, POINT) is None)
        e = sympy.sympify(text.replace("^", "**"), locals=dict(zip(names, symbols)))
        want = [float(sympy.diff(e, s).subs(dict(zip(symbols, POINT.values())))) for s in symbols]
        got = values(g, row, POINT)
        # past float64's range (exp(exp(z)^6) overflows where SymPy's exact value is 1e-320) says nothing
        assume(np.all(np.isfinite(got)) and all(w == 0 or 1e-300 < abs(w) < 1e300 for w in want))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * (1 + np.abs(want).max()))


def test_vjp_and_jvp_nodes_are_the_products_with_the_jacobian() -> None:
    g = Graph()
    roots = parse_outputs_into("t = x*y; t + sin(x); t^2; z - x", g)
    wrt = [g.var(v) for v in ("x", "y", "z")]
    jac = np.array([values(g, row, POINT) for row in jacobian_nodes(g, roots, wrt)])
    u = [g.var(n) for n in cotangent_names(3)]
    v = [g.var(n) for n in ("x'", "y'", "z'")]
    cot, tan = [2.0, -1.0, 0.5], [1.0, 3.0, -2.0]
    at = {**POINT, **dict(zip(cotangent_names(3), cot)), **dict(zip(("x'", "y'", "z'"), tan))}
    np.testing.assert_allclose(values(g, vjp_nodes(g, roots, wrt, u), at), np.array(cot) @ jac, rtol=1e-14)
    np.testing.assert_allclose(values(g, jvp_nodes(g, roots, wrt, v), at), jac @ np.array(tan), rtol=1e-14)


@pytest.mark.parametrize("text", ["x*y; x*y", "sin(x); sin(x) + 0"])
def test_equal_outputs_share_their_rows(text: str) -> None:
    g = Graph()
    roots = parse_outputs_into(text, g)
    wrt = [g.var(v) for v in g.variables(roots)]
    jac = jacobian_nodes(g, roots, wrt)
    assert jac[0] == jac[1]  # hash-consed: the same nodes
