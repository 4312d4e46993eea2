"""Several outputs compiled together (symad.compile([...]), VectorFunction): values, Jacobians,
vjp and jvp, batches, parameters, pickling, and the errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.approx import central_derivative
from support.expressions import expressions

import symad
from symad import Graph, ParseError, PointError, SymadError, VectorFunction, parse, parse_outputs

SMOOTH = expressions(3, variables=("x", "y"), numbers=("0.5", "2", "3"), in_domain=True,
                     ops=("add", "sub", "mul", "div", "pow", "neg", "sin", "cos", "exp", "tanh"))


def test_compile_of_a_list_or_of_text_with_several_outputs_is_a_vector_function() -> None:
    F = symad.compile(["x*y", "x + sin(y)"])
    assert isinstance(F, VectorFunction) and len(F) == 2 and F.variables == ("x", "y")
    G = symad.compile("x*y; x + sin(y)")
    assert isinstance(G, VectorFunction)
    assert isinstance(symad.compile("x*y"), symad.Function)  # one output: a Function, as before
    for fn in (F, G):
        np.testing.assert_array_equal(fn.value([2.0, 0.0]), [0.0, 2.0])
        np.testing.assert_array_equal(fn.jacobian(x=2, y=0), [[0.0, 2.0], [1.0, 1.0]])


def test_definitions_are_shared_by_the_outputs() -> None:
    a, b = parse_outputs("t = x*y; t + x; t - y", Graph())
    assert a.graph is b.graph and a == parse("x*y + x") and b == parse("x*y - y")
    with pytest.raises(ParseError, match="expected one expression, got 2 separated by ';'"):
        parse("x; y")


def test_outputs_of_different_graphs_and_numbers_are_brought_into_one() -> None:
    F = VectorFunction([parse("x^2", Graph()), parse("y", Graph()), 3, "x*y"])
    np.testing.assert_array_equal(F.value([2, 5]), [4, 5, 3, 10])
    np.testing.assert_array_equal(F.jacobian([2, 5]), [[4, 0], [0, 1], [0, 0], [5, 2]])


@settings(max_examples=20, deadline=None)
@given(st.lists(SMOOTH, min_size=1, max_size=4), st.floats(-1, 1), st.floats(-1, 1))
def test_jacobian_matches_central_differences(texts: list[str], x: float, y: float) -> None:
    F = VectorFunction(texts, ["x", "y"], background=False)
    point = np.array([x, y])
    values, jac = F.value_and_jacobian(point)
    np.testing.assert_allclose(values, F.value(point), rtol=1e-15)
    # Richardson-extrapolated differences that bound their own error: a mismatch is symad's
    for j in range(2):
        for k in range(len(texts)):
            def along(t: float, j: int = j, k: int = k) -> float:
                with np.errstate(all="ignore"):
                    return float(F.value(point + np.eye(2)[j] * t)[k])
            estimate = central_derivative(along, 1e-3)
            if estimate is None:  # differences that do not converge (a pole, an overflow): nothing to compare
                continue
            fd, error = estimate
            assert abs(jac[k, j] - fd) <= error + 1e-9 * abs(jac[k, j]) + 1e-12, (texts, k, j, jac[k, j], fd, error)


def test_vjp_and_jvp_are_products_with_the_jacobian_for_points_and_batches() -> None:
    F = symad.compile("t = x*y*z; sin(t); t + x^2; exp(z) - y; x")  # 4 outputs, 3 inputs
    rng = np.random.default_rng(1)
    X, U, V = rng.normal(size=(5, 3)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    J = F.jacobian(X)
    assert J.shape == (5, 4, 3)
    np.testing.assert_allclose(F.vjp(X, U), np.einsum("ki,kij->kj", U, J), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(F.jvp(X, V), np.einsum("kij,kj->ki", J, V), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(F.vjp(X[0], U[0]), U[0] @ J[0], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(F.jvp(X[0], np.eye(3)), J[0].T, rtol=1e-13, atol=1e-13)  # one point, 3 tangents
    values = F.value(x=X[:, 0], y=1.0, z=2.0)  # keywords broadcast
    assert values.shape == (5, 4)


def test_wider_jacobians_from_forward_and_reverse_sweeps_agree() -> None:
    outputs = [f"sin(x{i % 6})*x{(i + 1) % 6} + exp(x{(i + 2) % 6})" for i in range(9)]  # 9 outputs, 6 inputs
    many, few = symad.compile(outputs), symad.compile(outputs[:5])
    point = np.linspace(-1, 1, 6)
    np.testing.assert_allclose(many.jacobian(point)[:5], few.jacobian(point), rtol=1e-14)


def test_parameters_are_given_at_each_call_and_not_differentiated() -> None:
    F = symad.compile(["a*x^2", "x*b + y"], wrt=["x", "y"])
    assert F.params == ("a", "b")
    values, jac = F.value_and_jacobian([2.0, 1.0], {"a": 3, "b": -1})
    np.testing.assert_array_equal(values, [12, -1])
    np.testing.assert_array_equal(jac, [[12, 0], [-1, 1]])
    np.testing.assert_array_equal(F.value([2.0, 1.0], [1, 1]), [4, 3])
    np.testing.assert_array_equal(F.vjp([2.0, 1.0], [1, 1], [1, 1]), [5, 1])


def test_pickling_rebuilds_the_outputs() -> None:
    F = symad.compile(["x*y", "exp(a)*x"], wrt=["x", "y"])
    G = pickle.loads(pickle.dumps(F))
    assert G.params == ("a",) and len(G) == 2
    np.testing.assert_array_equal(G.jacobian([1.0, 2.0], [0.0]), F.jacobian([1.0, 2.0], [0.0]))


def test_the_programs_share_subexpressions() -> None:
    shared = "exp(sin(x*y) + cos(x*y))"
    F = VectorFunction([f"{shared} + x", f"{shared} * y"]).prepare()
    one = symad.compile(f"{shared} + x").prepare()
    # both outputs and their four partials cost less than twice one output's value and gradient
    assert F._program("jacobian").compiled().size < 2 * one.value_grad_program().size


def test_errors_point_at_the_problem() -> None:
    F = symad.compile(["x*y", "x"])
    with pytest.raises(SymadError, match="at least one output"):
        VectorFunction([])
    with pytest.raises(SymadError, match="an output is an expression"):
        VectorFunction(["x", object()])
    with pytest.raises(PointError, match="a cotangent u needs 2 value"):
        F.vjp([1, 2], [1, 2, 3])
    with pytest.raises(PointError, match="a tangent v needs 2 value"):
        F.jvp([1, 2], [1])
    with pytest.raises(symad.VariableError, match="missing value for variable y"):
        F.value({"x": 1})
    with pytest.raises(SymadError, match="not in variables"):
        symad.compile(["x*y", "z"], ["x", "y"])
