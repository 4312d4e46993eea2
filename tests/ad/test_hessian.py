"""Second derivatives: Hessians against SymPy, Hessian-vector products against H·p."""

from __future__ import annotations

import random

import numpy as np
import pytest
import sympy
from hypothesis import strategies as st
from support.expressions import example, expressions

from symad import Graph, PointError, parse, to_postfix
from symad.ad.forward import jvp
from symad.ad.matrices import hessian_nodes, jvp_many
from symad.second_order import SecondOrder, hessian, hvp

# Random expressions smooth everywhere, so SymPy and symad agree at any point (no branch
# conventions involved): the shared generator restricted to smooth ops, every argument in
# its domain (a positive denominator, a positive base or a natural exponent for ^).
SMOOTH = expressions(4, variables=("x", "y", "z"), numbers=("0.5", "2", "3", "1.5"), in_domain=True,
                     ops=("add", "sub", "mul", "div", "pow", "neg", "sin", "cos", "exp", "tanh", "atan"))


def operations(text: str) -> int:
    return sum(t.kind in ("op", "call") for t in to_postfix(text))


def random_expression(seed: int, size: int) -> str:
    """A smooth expression with at least ``size`` operations, the same for a seed on every run.

    Every variable appears in a product term, so that every Hessian entry is exercised.
    """
    a, b = example(st.tuples(SMOOTH, SMOOTH), seed, lambda ab: operations(ab[0]) >= size)
    return f"{a} + ({b}) * x * y * z"


def sympy_hessian(text: str, names: list[str], point: dict[str, float]) -> np.ndarray:
    symbols = sympy.symbols(names)
    e = sympy.sympify(text.replace("^", "**"), locals=dict(zip(names, symbols)))
    h = sympy.hessian(e, symbols)
    fn = sympy.lambdify(symbols, h.tolist(), modules="math")
    return np.array(fn(*(point[n] for n in names)), dtype=float)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.slow
def test_hessian_matches_sympy(seed: int) -> None:
    rng = random.Random(seed)
    text = random_expression(seed, 8)
    f = SecondOrder(parse(text, Graph()))
    names = list(f.variables)
    for _ in range(3):
        point = {n: rng.uniform(-1, 1) for n in names}
        got = f.hessian(point)
        want = sympy_hessian(text, names, point)
        assert np.allclose(got, want, rtol=1e-9, atol=1e-9 * (1 + np.abs(want).max())), text


def test_hessian_expressions_are_shared_and_symmetric() -> None:
    g = Graph()
    e = parse("exp(x*y) + sin(x)*z^2", g)
    h = hessian(e)
    n = len(h)
    assert all(h[i][j] is h[j][i] or h[i][j] == h[j][i] for i in range(n) for j in range(n))
    assert h[2][2] == 2 * parse("sin(x)", g)  # d²/dz² of sin(x)*z^2, as the same node
    # Hash-consing: asking again builds nothing new.
    before = len(g)
    again = hessian_nodes(g, e.id, [g.var(v) for v in e.variables])
    assert len(g) == before
    assert again == [[x.id for x in row] for row in h]


def test_value_grad_hess_agrees_with_gradient_and_batches() -> None:
    f = SecondOrder(parse("100*(y-x^2)^2+(1-x)^2", Graph()))
    points = np.array([[-1.2, 1.0], [1.0, 1.0], [0.3, -0.7]])
    values, grads, hessians = f.value_grad_hess(points)
    assert hessians.shape == (3, 2, 2)
    for k, pt in enumerate(points):
        v, g = f.value_and_grad(pt)
        assert values[k] == v and np.array_equal(grads[k], g)
        x, y = pt
        expected = [[1200 * x**2 - 400 * y + 2, -400 * x], [-400 * x, 200]]
        assert np.allclose(hessians[k], expected, rtol=1e-12)
        assert np.array_equal(f.hessian(pt), hessians[k])


@pytest.mark.parametrize("seed", range(6))
def test_hessp_matches_hessian_times_vector(seed: int) -> None:
    rng = np.random.default_rng(seed)
    text = random_expression(100 + seed, 7)
    f = SecondOrder(parse(text, Graph()))
    n = len(f.variables)
    for _ in range(3):
        x, p = rng.uniform(-1, 1, n), rng.normal(size=n)
        assert np.allclose(f.hessp(x, p), f.hessian(x) @ p, rtol=1e-9, atol=1e-9)
    xs, ps = rng.uniform(-1, 1, (5, n)), rng.normal(size=(5, n))
    want = np.einsum("kij,kj->ki", f.hessian(xs), ps)
    assert np.allclose(f.hessp(xs, ps), want, rtol=1e-9, atol=1e-9)
    assert np.allclose(f.hessp(xs, ps[0]), f.hessian(xs) @ ps[0], rtol=1e-9, atol=1e-9)


def chained_rosenbrock(n: int) -> str:
    return " + ".join(f"100*(x{i + 1}-x{i}^2)^2+(1-x{i})^2" for i in range(1, n))


def test_hessp_on_chained_rosenbrock() -> None:
    f = SecondOrder(parse(chained_rosenbrock(30), Graph()))
    rng = np.random.default_rng(1)
    x, p = rng.normal(size=30), rng.normal(size=30)
    h = f.hessian(x)
    assert np.count_nonzero(h) == 30 + 2 * 29  # tridiagonal
    assert np.allclose(f.hessp(x, p), h @ p, rtol=1e-12)


def test_hvp_program_grows_like_the_gradient_not_like_n_squared() -> None:
    # exp(Σ c_i x_i) has a dense Hessian: n² distinct entries c_i c_j exp(...).
    n = 30
    text = "exp(" + " + ".join(f"{k + 2}*x{k}" for k in range(n)) + ")"
    f = SecondOrder(parse(text, Graph()), backend="python")  # sizes, not speed: skip native code
    sizes = f.sizes()
    assert sizes["value_grad_hess"] > n * (n + 1) // 2
    assert sizes["hvp"] < 4 * sizes["value_grad"]
    x, p = np.linspace(-0.1, 0.1, n), np.linspace(1, 2, n)
    assert np.allclose(f.hessp(x, p), f.hessian(x) @ p, rtol=1e-12)


def test_jvp_many_is_one_sweep_equal_to_separate_jvps() -> None:
    g = Graph()
    e = parse("sin(x*y) + x^3*z", g)
    grads = e.grad()
    tangents = {g.var("x"): g.const(1.0), g.var("y"): g.const(-2.0), g.var("z"): g.var("t")}
    together = jvp_many(g, [d.id for d in grads.values()], tangents)
    separate = [jvp(g, d.id, tangents) for d in grads.values()]
    assert together == separate


def test_hvp_expressions() -> None:
    g = Graph()
    e = parse("x^3*y", g)
    products = hvp(e, {"x": 1, "y": parse("t", g)})
    f = SecondOrder(e)
    got = [products[v].compile(["x", "y", "t"]).value([2.0, 3.0, 5.0]) for v in ("x", "y")]
    assert np.allclose(got, f.hessian([2.0, 3.0]) @ [1.0, 5.0])


def test_no_variables_and_errors() -> None:
    f = SecondOrder(parse("2+3", Graph()))
    value, grad, hess = f.value_grad_hess([])
    assert value == 5 and grad.shape == (0,) and hess.shape == (0, 0)
    g = SecondOrder(parse("x*y", Graph()))
    with pytest.raises(PointError):
        g.hessp([1, 2], [1, 2, 3])
    with pytest.raises(PointError):
        g.hessian([1, 2, 3])


def test_nonfinite_second_derivatives_follow_ieee() -> None:
    f = SecondOrder(parse("sqrt(x)*y", Graph()))
    h = f.hessian(x=0, y=1)
    assert h[0, 0] == -np.inf and h[0, 1] == np.inf and h[1, 1] == 0


@pytest.mark.parametrize("seed", range(40))
def test_the_hessian_interpreted_row_by_row_has_the_programs_bits(seed: int) -> None:
    """`value_grad_hess_interpreted` (tapes, one row at a time: what `symad hessian --at` runs)
    gives the bits of the compiled program, non-finite entries included."""
    text = example(expressions(3, variables=("x", "y", "z"), sums=False), seed)
    f = SecondOrder(parse(text, Graph()), ["x", "y", "z"], background=False)
    point = [random.Random(seed).uniform(-2, 2) for _ in range(3)]
    want = f.value_grad_hess(point)
    got = f.value_grad_hess_interpreted(point)
    assert np.float64(got[0]).tobytes() == np.float64(want[0]).tobytes(), text
    assert got[1].tobytes() == np.asarray(want[1], dtype=float).tobytes(), text
    assert got[2].tobytes() == np.asarray(want[2], dtype=float).tobytes(), text


def test_the_hessian_interpreted_takes_parameters_and_refuses_batches() -> None:
    f = SecondOrder("a*x^3*y", wrt=["x", "y"], background=False)
    value, grad, hess = f.value_grad_hess_interpreted([1.0, 2.0], {"a": 2.0})
    assert value == 4.0 and grad.tolist() == [12.0, 2.0] and hess.tolist() == [[24.0, 6.0], [6.0, 0.0]]
    with pytest.raises(PointError):
        f.value_grad_hess_interpreted([[1.0, 2.0], [1.0, 2.0]], {"a": 2.0})
