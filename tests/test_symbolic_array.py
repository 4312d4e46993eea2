"""Symbolic arrays (symad.vector, symad.data): NumPy-style code builds the nodes the text's sums
build — one loop node over a long range, the text's unrolling over a short one — and its values
and gradients equal NumPy's by hand."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from support.loops import LOOP_LIMIT, looping

import symad
from symad.core import binders
from symad.core.dag import Graph
from symad.expr import data
from symad.indexed_function import IndexedFunction
from symad.symbolic_array import Matrix, Vector


def _arrays(n: int, graph: Graph) -> dict[str, object]:
    return {"x": symad.vector("x", n, graph), "z": symad.vector("z", 3, graph), "A": data("A", (n, n), graph),
            "B": data("B", (3, n), graph), "y": symad.var("y", graph), "n": n, "np": np, "symad": symad}


def test_the_rosenbrock_of_slices_is_the_texts_node_short_and_long() -> None:
    for n in (5, 50_000):  # written out, then one loop node (the default limit: 10,000 terms)
        g = Graph()
        x = symad.vector("x", n, g)
        built = symad.sum((x[1:] - x[:-1]**2)**2)
        text = symad.parse(f"sum(i = 1..{n - 1}, (x[i+1] - x[i]^2)^2)", g)
        assert built == text and built.id == text.id
        assert binders.has_scoped(g, [built.id]) == (n - 1 > binders.UNROLL_MAX_TERMS)
        full = (100 * (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2).sum()
        assert full.id == symad.parse(f"sum(i = 1..{n - 1}, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)", g).id


def test_the_quadratic_form_is_the_texts_node_at_the_default_limits() -> None:
    # written out at n = 12 (144 terms); at n = 101 the outer sum is a loop (10,201 terms) and so is
    # the inner one (past UNROLL_INSIDE_LOOP terms inside a loop)
    for n, loops in ((12, 0), (101, 2)):
        g = Graph()
        x, A = symad.vector("x", n, g), data("A", (n, n), g)
        built = x @ A @ x
        assert built.id == symad.parse(f"sum(i = 1..{n}, sum(j = 1..{n}, x[j]*A[j, i])*x[i])", g).id
        assert sum(g.op[node] == "sum" for node in g.reachable([built.id])) == loops


# (Python on x = vector(n), A = data (n, n), B = data (3, n), y a variable; the same in text)
SAME_AS_TEXT: list[tuple[str, str]] = [
    ("x.sum()", "sum(i = 1..n, x[i])"),
    ("symad.sum(x**2) + y", "sum(i = 1..n, x[i]^2) + y"),
    ("np.sum(np.sin(x[2:]) * x[:-2])", "sum(i = 1..n-2, sin(x[i+2])*x[i])"),
    ("x[::2].sum()", "sum(i = 1..n/2, x[2*i-1])"),
    ("(x[::-1] * x).sum()", "sum(i = 1..n, x[n+1-i]*x[i])"),
    ("x[3:n-1].sum()", "sum(i = 1..n-4, x[i+3])"),
    ("(y * (x - 1)**2 / 2 + symad.exp(-x)).sum()", "sum(i = 1..n, y*(x[i] - 1)^2/2 + exp(-x[i]))"),
    ("x @ x", "sum(i = 1..n, x[i]*x[i])"),
    ("np.mean(abs(x))", "sum(i = 1..n, abs(x[i]))/n"),
    ("symad.where(symad.lt(x, 0), -x, 2 * x).sum()", "sum(i = 1..n, where(x[i] < 0, -x[i], 2*x[i]))"),
    ("np.maximum(x, y).sum() + np.hypot(x, 1.5).sum()",
     "sum(i = 1..n, max(x[i], y)) + sum(i = 1..n, hypot(x[i], 1.5))"),
    ("(1 / x + 2 ** x - x / 4).sum()", "sum(i = 1..n, 1/x[i] + 2^x[i] - x[i]/4)"),
    ("x[0] * x[-1] + x[1:][0]", "x[1]*x[n] + x[2]"),
    ("x @ A @ x", "sum(i = 1..n, sum(j = 1..n, x[j]*A[j, i])*x[i])"),
    ("(A @ x - 1) @ (A @ x - 1)",
     "sum(i = 1..n, (sum(j = 1..n, A[i, j]*x[j]) - 1)*(sum(j = 1..n, A[i, j]*x[j]) - 1))"),
    ("(B @ x).sum()", "sum(i = 1..3, sum(j = 1..n, B[i, j]*x[j]))"),
    ("(z @ B).sum()", "sum(i = 1..n, sum(j = 1..3, z[j]*B[j, i]))"),
    ("(A @ (A @ x)).sum()", "sum(i = 1..n, sum(j = 1..n, A[i, j]*sum(k = 1..n, A[j, k]*x[k])))"),
    ("(A @ x)[1] + A[0, 1] + A.T[1, 0]", "sum(j = 1..n, A[2, j]*x[j]) + A[1, 2] + A[1, 2]"),
    ("(A[1] * x).sum() + A[:, 0][1:].sum()", "sum(j = 1..n, A[2, j]*x[j]) + sum(i = 1..n-1, A[i+1, 1])"),
    ("(x * x.sum())[1:].sum()", "sum(i = 1..n-1, x[i+1]*sum(j = 1..n, x[j]))"),
]


@pytest.mark.parametrize("python, text", SAME_AS_TEXT)
@pytest.mark.parametrize("n", [LOOP_LIMIT - 1, 8])
def test_numpy_style_code_builds_the_texts_nodes(python: str, text: str, n: int) -> None:
    """Written out (n within the limit) or kept as loops (past it): the same node as the text."""
    with looping():
        g = Graph()
        built = eval(python, _arrays(n, g))  # noqa: S307 (the table's own expressions)
        want = symad.parse(f"n = {n}; {text}", g)
    assert built.id == want.id, (python, str(built), str(want))


def test_the_graph_does_not_grow_with_the_length() -> None:
    sizes = []
    for n in (20_000, 10**6):
        g = Graph()
        x, A = symad.vector("x", n, g), data("A", (n, n), g)
        expr = (100 * (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2).sum() + x @ A @ x
        sizes.append(len(g.reachable([expr.id])))
    assert sizes[0] == sizes[1] < 60


# ---------------------------------------------------------------- values against NumPy by hand
def _loops(expr: symad.Expr) -> None:
    assert binders.has_scoped(expr.graph, [expr.id]), f"{expr}: no loop"


def test_rosenbrock_value_and_gradient_equal_numpy_by_hand() -> None:
    n = 40
    rng = np.random.default_rng(7)
    at = rng.uniform(-1.5, 1.5, n)
    a, b = at[:-1], at[1:]
    want_grad = np.zeros(n)
    want_grad[:-1] = -400 * a * (b - a * a) - 2 * (1 - a)
    want_grad[1:] += 200 * (b - a * a)
    for limit in (LOOP_LIMIT, binders.UNROLL_MAX_TERMS):  # loops, then written out
        with looping(limit):
            x = symad.vector("x", n, Graph())
            expr = (100 * (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2).sum()
        f = symad.compile(expr)
        assert isinstance(f, IndexedFunction) == (limit == LOOP_LIMIT)
        value, grad = f.value_and_grad({"x": at})
        assert value == pytest.approx(np.sum(100 * (b - a * a)**2 + (1 - a)**2), rel=1e-13)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-12)


N_DATA, M_DATA = 20, 18  # past the limits of a loop (looping) and of a loop inside a loop: nested loops


def _data_problem() -> tuple[dict[str, symad.Expr], dict[str, np.ndarray]]:
    """Expressions of x with data matrices A (n x n) and B (m x n) and a data vector d, and values."""
    rng = np.random.default_rng(11)
    n, m = N_DATA, M_DATA
    values = {"x": rng.normal(size=n), "A": rng.normal(size=(n, n)), "B": rng.normal(size=(m, n)),
              "d": rng.normal(size=m)}
    with looping():
        g = Graph()
        x, A, B, d = symad.vector("x", n, g), data("A", (n, n), g), data("B", (m, n), g), data("d", m, g)
        exprs = {"quadratic": x @ A @ x, "twice": (A @ (A @ x)).sum(), "rows": (x[:m] @ B).sum() + (B @ x) @ d,
                 "squares": ((B @ x - d)**2).sum()}
    for expr in exprs.values():
        _loops(expr)
    return exprs, values


def _value_and_grad(expr: symad.Expr, values: dict[str, np.ndarray]) -> tuple[float, np.ndarray]:
    f = symad.compile(expr, wrt=["x"])
    return f.value_and_grad({"x": values["x"]}, {k: v for k, v in values.items() if k != "x"})


def test_products_with_data_matrices_equal_numpy() -> None:
    exprs, values = _data_problem()
    at, M, N, obs = values["x"], values["A"], values["B"], values["d"]
    m = M_DATA
    row_grad = np.zeros(N_DATA)
    row_grad[:m] = N.sum(axis=1)
    cases = {  # (value, gradient in x)
        "quadratic": (at @ M @ at, (M + M.T) @ at),
        "twice": (np.sum(M @ M @ at), (M @ M).T @ np.ones(N_DATA)),
        "rows": (np.sum(at[:m] @ N) + (N @ at) @ obs, row_grad + N.T @ obs),
    }
    for name, (value, grad) in cases.items():
        got, got_grad = _value_and_grad(exprs[name], values)
        assert got == pytest.approx(value, rel=1e-12), name
        np.testing.assert_allclose(got_grad, grad, rtol=1e-11, atol=1e-12, err_msg=name)


def test_least_squares_with_a_data_matrix_equals_numpy() -> None:
    exprs, values = _data_problem()
    N, at, obs = values["B"], values["x"], values["d"]
    got, got_grad = _value_and_grad(exprs["squares"], values)
    assert got == pytest.approx(np.sum((N @ at - obs)**2), rel=1e-12)
    np.testing.assert_allclose(got_grad, 2 * N.T @ (N @ at - obs), rtol=1e-11, atol=1e-12)


def test_an_entry_beside_a_loop_is_the_loops_entry() -> None:
    with looping():
        x = symad.vector("x", 6, Graph())
        expr = x.sum() + x[0] ** 2
    value, grad = symad.compile(expr).value_and_grad({"x": np.arange(1.0, 7.0)})
    assert value == 22.0 and grad.tolist() == [3.0, 1.0, 1.0, 1.0, 1.0, 1.0]


def test_a_closed_loop_inside_a_body_keeps_its_own_index() -> None:
    # x.sum() is a loop over its own index inside the body of x*...: slicing and summing the
    # body must move the outer index only.
    n = 9
    at = np.linspace(-1, 2, n)
    with looping():
        x = symad.vector("x", n, Graph())
        expr = (x * x.sum())[2:].sum() + (x[1:] * (x**2).sum())[:-3].sum()
    _loops(expr)
    value, grad = symad.compile(expr).value_and_grad({"x": at})
    want = at[2:].sum() * at.sum() + at[1:-3].sum() * (at**2).sum()
    want_grad = np.full(n, at[2:].sum()) + 2 * at * at[1:-3].sum()
    want_grad[2:] += at.sum()
    want_grad[1:-3] += (at**2).sum()
    assert value == pytest.approx(want, rel=1e-13)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-13)


# ---------------------------------------------------------------- the array's protocol
def test_shape_entries_iteration_and_repr() -> None:
    g = Graph()
    x = symad.vector("x", 5, g)
    assert len(x) == 5 and x.shape == (5,) and x.ndim == 1 and x.size == 5
    assert x[0] == symad.var("x[1]", g) and x[-1] == x[4] == symad.var("x[5]", g)
    assert x[np.int64(2)] == symad.var("x[3]", g) and x[(1,)] == x[1]
    assert [str(e) for e in x[1:4]] == ["x[2]", "x[3]", "x[4]"]
    assert [str(e) for e in x[::-2]] == ["x[5]", "x[3]", "x[1]"]
    assert len(x[4:1]) == 0 and x[4:1].sum() == symad.parse("0", g)
    assert [str(e) for e in np.asarray(x**2)] == ["x[1]^2", "x[2]^2", "x[3]^2", "x[4]^2", "x[5]^2"]
    assert (x**2)[1] == symad.parse("x[2]^2", g)
    assert repr(x[1:] - x[:-1]**2) == "Vector(x[i + 1] - x[i]^2, i = 1..4)"
    A = data("A", (2, 3), g)
    assert isinstance(A, Matrix) and A.shape == (2, 3) and A.T.shape == (3, 2) and len(A) == 2
    assert repr(A.T) == "Matrix(A[j, i], i = 1..3, j = 1..2)"
    assert isinstance(A[1], Vector) and repr(A[1, 1:]) == "Vector(A[2, i + 1], i = 1..2)"
    assert A[:] is A and A.T[2, 1] == A[1, 2] == symad.parse("A[2, 3]", g)


def test_vectors_are_equal_when_their_bodies_and_lengths_are() -> None:
    g = Graph()
    x = symad.vector("x", 4, g)
    assert x[1:] * 2 == 2 * x[1:] and x[1:] != x[:-1] and x[:3] != x and x != x[0]
    assert len({x + 1, 1 + x}) == 1
    other = symad.vector("x", 4, Graph())
    assert other + 1 == x + 1  # structurally, across graphs
    assert (x + symad.var("y", Graph())).graph is g
    assert (other + x).sum() == symad.parse("sum(i = 1..4, x[i] + x[i])", g)


def test_numpy_arrays_of_numbers_combine_entry_by_entry() -> None:
    g = Graph()
    x = symad.vector("x", 3, g)
    w = np.array([1.0, 2.0, 3.0])
    for got, text in [(x * w, "x[{k}]*{w}"), (w - x, "{w} - x[{k}]"), (x ** w, "x[{k}]^{w}")]:
        assert isinstance(got, np.ndarray) and got.dtype == object
        assert list(got) == [symad.parse(text.format(k=k + 1, w=w[k]), g) for k in range(3)]
    assert x @ w == w @ x == np.dot(x, w) == symad.parse("x[1] + 2*x[2] + 3*x[3]", g)
    assert np.float32(0.5) * x == x * 0.5 and np.array(2.0) + x == x + 2


@pytest.mark.parametrize("build, error, message", [
    (lambda x, A: x + x[1:], ValueError, r"shapes \(4,\) \(3,\)"),
    (lambda x, A: x @ x[1:], ValueError, r"shapes \(4,\) and \(3,\)"),
    (lambda x, A: A @ x[1:], ValueError, r"shapes \(4, 4\) and \(3,\)"),
    (lambda x, A: x[4], IndexError, "index 4 is out of range for length 4"),
    (lambda x, A: x[True], TypeError, "integer or a slice, not bool"),
    (lambda x, A: x[1.0], TypeError, "integer or a slice, not float"),
    (lambda x, A: A[0, -5], IndexError, "index -5 is out of range for length 4"),
    (lambda x, A: A[1:, 1:], TypeError, "one axis at a time"),
    (lambda x, A: A @ A, TypeError, "multiplies a symbolic vector"),
    (lambda x, A: x * A, TypeError, "combine only by @"),
    (lambda x, A: np.fmod(x, 2), TypeError, "NumPy's fmod has no counterpart.*arctan2"),
    (lambda x, A: np.add(x, 1, dtype=float), TypeError, "add.__call__ with dtype"),
    (lambda x, A: np.add.accumulate(x), TypeError, "accumulate is not supported"),
    (lambda x, A: np.max(x), TypeError, r"no order.*symad\.max\(a, b, \.\.\.\)"),
    (lambda x, A: x.sum(axis=1), TypeError, "no axis but 0"),
    (lambda x, A: x < 1, TypeError, r"symad\.lt\(a, b\)"),
    (lambda x, A: bool(x), TypeError, "no truth value"),
    (lambda x, A: x + True, TypeError, "unsupported operand"),
    (lambda x, A: x + "1", TypeError, "unsupported operand"),
    (lambda x, A: np.asarray(x, dtype=float), TypeError, "expressions, not numbers"),
    (lambda x, A: symad.sum([1, 2]), TypeError, "symad.sum takes a vector"),
    (lambda x, A: symad.vector("x[1]", 3), symad.NameRuleError, "plain name"),
    (lambda x, A: data("A", (2, 2, 2)), symad.SymadError, "1 or 2 lengths"),
    (lambda x, A: data("A", (2, -1)), symad.SymadError, "whole number ≥ 0"),
])
def test_what_an_array_cannot_do_is_said(build: Callable, error: type, message: str) -> None:
    g = Graph()
    with pytest.raises(error, match=message):
        build(symad.vector("x", 4, g), data("A", (4, 4), g))


def test_numpy_reductions_call_the_vectors_own() -> None:
    with looping():
        x = symad.vector("x", 6, Graph())
        assert np.sum(x) == x.sum() == np.add.reduce(x) == symad.sum(x)
        assert np.mean(x) == x.sum() / 6
        _loops(np.sum(x))
    assert np.prod(x) == np.multiply.reduce(x) == symad.parse("x[1]*x[2]*x[3]*x[4]*x[5]*x[6]", x.graph)
    assert np.prod(x[3:3]) == symad.parse("1", x.graph)
