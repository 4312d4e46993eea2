"""The compiled evaluator: straight-line code, points, batches, IEEE semantics."""

import math

import numpy as np
import pytest

from symad import Graph, PointError, SymadError, VariableError, parse


@pytest.fixture
def seed():
    return parse("(x+y)+x*(x+y)", Graph()).compile()


def test_point_forms(seed):
    expected = (6.0, [5.0, 2.0])
    for result in [seed.value_and_grad(x=1, y=2), seed.value_and_grad({"x": 1, "y": 2}),
                   seed.value_and_grad([1, 2]), seed.value_and_grad(np.array([1.0, 2.0])),
                   seed.value_and_grad((1, 2))]:
        value, grad = result
        assert type(value) is float and value == expected[0]
        assert isinstance(grad, np.ndarray) and list(grad) == expected[1]
    assert seed.value(x=1, y=2) == 6.0
    assert seed(x=1, y=2) == 6.0
    assert list(seed.grad(x=1, y=2)) == [5.0, 2.0]


def test_batch_of_points_matches_pointwise(seed):
    pts = np.random.default_rng(0).normal(size=(100, 2))
    values, grads = seed.value_and_grad(pts)
    assert values.shape == (100,) and grads.shape == (100, 2)
    for p, v, g in zip(pts, values, grads):
        v1, g1 = seed.value_and_grad(p)
        assert v == pytest.approx(v1, rel=1e-15) and np.allclose(g, g1, rtol=1e-15)


def test_dict_of_arrays_broadcasts(seed):
    values, grads = seed.value_and_grad(x=np.array([1.0, 3.0]), y=2.0)
    assert list(values) == [6.0, 20.0]
    assert grads.shape == (2, 2) and list(grads[:, 1]) == [2.0, 4.0] and list(grads[:, 0]) == [5.0, 9.0]


def test_constant_outputs_broadcast_over_a_batch():
    f = parse("2*x + y", Graph()).compile()
    values, grads = f.value_and_grad(np.ones((5, 2)))
    assert grads.shape == (5, 2) and (grads == [2.0, 1.0]).all()


def test_dead_code_is_not_emitted():
    g = Graph()
    e = parse("x*y + sin(z)*0", g)  # sin(z)*0 is rewritten away: z is not used
    assert e.variables == ("x", "y")
    e = parse("(x + exp(y)) * 2", g)
    f = e.compile()
    # the gradient needs exp(y) but never the product with 2 for d/dx, and the
    # value program never contains adjoint nodes
    assert "f_exp" in f.value_program().source
    assert f.value_program().size == 3  # exp, add, mul
    assert "f_sin" not in f.value_grad_program().source


def test_program_is_straight_line():
    f = parse("sin(x)^2/sqrt(1+y)", Graph()).compile()
    src = f.value_grad_program().source
    for word in ("for ", "while ", "if ", "lambda"):
        assert word not in src


def test_registers_are_reused():
    g = Graph()
    e = parse("x", g)
    for _ in range(200):
        e = (e * e + 1).apply("sin")
    program = e.compile().value_program()
    assert program.size == 600
    assert program.source.count("r3 =") == 0 or len(set(
        line.split("=")[0].strip() for line in program.source.splitlines()[1:-1])) < 10


def test_ieee_semantics_for_single_points():
    g = Graph()
    assert parse("1/x", g).compile().value(x=0) == math.inf
    assert math.isnan(parse("log(x)", g).compile().value(x=-1))
    assert parse("log(x)", g).compile().value(x=0) == -math.inf
    assert math.isnan(parse("sqrt(x)", g).compile().value(x=-1))
    assert math.isnan(parse("x^y", g).compile().value(x=-8, y=1 / 3))
    assert parse("exp(x)", g).compile().value(x=1000) == math.inf
    assert parse("x^y", g).compile().value(x=0, y=0) == 1.0
    v, grad = parse("1/x", g).compile().value_and_grad(x=0)
    assert v == math.inf and grad[0] == -math.inf


def test_float_and_numpy_paths_agree():
    g = Graph()
    e = parse("atan2(y, x) + sinh(x)*cosh(y) - tanh(x*y) + abs(x-y) + min(x, y)^2 + max(x, 1)", g)
    f = e.compile()
    pts = np.random.default_rng(1).uniform(-2, 2, size=(50, 2))
    batch_v, batch_g = f.value_and_grad(pts)
    for p, bv, bg in zip(pts, batch_v, batch_g):
        v, gr = f.value_and_grad(p)
        assert v == bv and np.array_equal(gr, bg)


def test_point_errors():
    f = parse("x*y", Graph()).compile()
    with pytest.raises(VariableError, match="missing value for variable y"):
        f.value(x=1)
    with pytest.raises(VariableError, match="unknown variable z"):
        f.value(x=1, y=2, z=3)
    with pytest.raises(PointError, match="not a number"):
        f.value(x="abc", y=1)
    with pytest.raises(PointError, match="needs 2 value"):
        f.value([1, 2, 3])
    with pytest.raises(PointError):
        f.value([1, 2], x=1)


def test_explicit_variable_order_and_extra_variables():
    g = Graph()
    f = parse("x*y", g).compile(variables=["y", "x", "z"])
    value, grad = f.value_and_grad([2, 3, 100])
    assert value == 6.0 and list(grad) == [3.0, 2.0, 0.0]
    with pytest.raises(SymadError, match="not in variables"):
        parse("x*y", g).compile(variables=["x"])


def test_constant_expression():
    f = parse("2*pi", Graph()).compile()
    assert f.value() == 2 * math.pi
    value, grad = f.value_and_grad()
    assert grad.shape == (0,)


def test_compiled_once_called_many_times():
    f = parse("(x+y)+x*(x+y)", Graph()).compile()
    program = f.value_grad_program()
    for i in range(100):
        f.value_and_grad(x=i, y=1)
    assert f.value_grad_program() is program


def test_scipy_accepts_value_and_grad():
    scipy_optimize = pytest.importorskip("scipy.optimize")
    f = parse("(x-1)^2 + 10*(y+2)^2", Graph()).compile()
    res = scipy_optimize.minimize(f.value_and_grad, [0.0, 0.0], jac=True, method="BFGS")
    assert res.success and np.allclose(res.x, [1, -2], atol=1e-6)


def test_a_compiled_function_has_a_useful_repr():
    import symad
    from symad.core.dag import Graph
    from symad.second_order import SecondOrder

    # a fresh graph: in the default one, what earlier tests built decides which of x^2 and y prints first
    assert repr(symad.compile(symad.parse("x^2 + y", Graph()))) == \
        "Function(x^2 + y, variables=('x', 'y'), backend='auto')"
    assert repr(symad.compile("x*y", wrt=["x"], backend="python")) == \
        "Function(x*y, variables=('x',), params=('y',), backend='python')"
    assert repr(symad.compile("x*y; x + y")) == "VectorFunction([x*y, x + y], variables=('x', 'y'), backend='auto')"
    assert repr(SecondOrder("x^3*y")).startswith("SecondOrder(x^3*y, ")
    long = repr(symad.compile(" + ".join(f"v{i}" for i in range(30))))
    assert long.startswith("Function(v0 + v1 + ") and "..." in long and "30 names" in long and len(long) < 200
    indexed = repr(symad.compile(" + ".join(f"x[{i}]^2" for i in range(1, 5001))))  # a large DAG: its size
    assert indexed.startswith("Function(<") and "nodes>, variables=('x[1..5000]',)" in indexed
