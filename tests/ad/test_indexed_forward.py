"""Forward mode through loops: tangents of entries and sums, and Hessian-vector products of
IndexedFunction checked against the written-out Hessian."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
from support.loops import looping, parse_looped

import symad
from symad.ad.forward import forward
from symad.core.dag import Graph
from symad.core.printing import to_infix
from symad.indexed_function import IndexedFunction
from symad.second_order import SecondOrder

TEXTS = [
    "sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)",
    "sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2) + sin(y)*sum(i = 1..n, x[i]^3) + y^2*x[2]",
    "sum(i = 2..n-1, exp(x[i-1]*x[i+1]) - where(x[i] > 0, x[i]^2*y, sqrt(1 + x[i]^2)))",
]


@pytest.mark.parametrize("text", TEXTS)
def test_hessian_vector_products_equal_the_written_out_hessian(text: str) -> None:
    n = 30
    full = f"n = {n}; {text}"
    f = IndexedFunction(parse_looped(full))
    rng = np.random.default_rng(4)
    point = rng.uniform(-1, 1, f.size)
    direction = rng.uniform(-1, 1, f.size)
    second = SecondOrder(symad.parse(full, Graph()))  # written out: the dense Hessian as reference
    assert second.variables[-1:] == ("y",) or "y" not in full
    want = second.hessian(point) @ direction
    got = f.hessp(point, direction)
    scale = np.abs(second.hessian(point)) @ np.abs(direction) + 1e-300
    assert np.all(np.abs(got - want) <= 1e-12 * scale)


def test_the_tangent_of_a_loop_is_a_loop_of_tangents() -> None:
    graph = Graph()
    e = symad.parse("sum(i = 1..20000, x[i]^2*y)", graph)
    (tangent,), = forward(graph, [e.id], [{graph.vector("x"): graph.vector("x'"), graph.var("y"): graph.var("y'")}])
    assert to_infix(graph, tangent) == "sum(i = 1..20000, y*(x'[i]*(2*x[i])) + x[i]^2*y')"


def test_newton_cg_from_scipy_converges_on_a_loop() -> None:
    with looping(50):
        f = symad.compile("n = 200; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)")
    x0 = np.full(200, 0.5)
    result = scipy.optimize.minimize(f.value_and_grad, x0, jac=True, hessp=f.hessp, method="trust-ncg",
                                     options={"gtol": 1e-10})
    assert result.success and np.allclose(result.x, 1.0, atol=1e-8)
