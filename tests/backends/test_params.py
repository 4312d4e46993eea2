"""Parameters: variables given at each call, never differentiated, never recompiled for."""

import pickle

import numpy as np
import pytest

import symad
from symad import Graph, PointError, SymadError, VariableError, parse
from symad.native import jit

LOSS = "log(1 + exp(-y*(w1*x1 + w2*x2 + b)))"
W, DATA = [0.3, -0.7, 0.1], {"x1": 1.5, "x2": -0.25, "y": 1.0}


def reference(w, data):
    """Value and gradient in w1, w2, b, from the function with every variable differentiated."""
    full = parse(LOSS, Graph()).compile(backend="python")
    value, grad = full.value_and_grad(dict(zip(("w1", "w2", "b"), w), **data))
    order = list(full.variables)
    return value, np.array([grad[order.index(v)] for v in ("w1", "w2", "b")])


@pytest.fixture(params=["auto", "python", "native"])
def fn(request):
    if request.param == "native" and not jit.available():
        pytest.skip("llvmlite not installed")
    return parse(LOSS, Graph()).compile(wrt=["w1", "w2", "b"], backend=request.param)


def test_the_other_variables_are_parameters_in_natural_order(fn):
    assert fn.variables == ("w1", "w2", "b")
    assert fn.params == ("x1", "x2", "y")


def test_every_call_form_gives_the_partials_in_wrt_only(fn):
    want_value, want_grad = reference(W, DATA)
    w = np.array(W)
    forms = [fn.value_and_grad(w, DATA), fn.value_and_grad(W, [DATA[p] for p in fn.params]),
             fn.value_and_grad(dict(zip(fn.variables, W), **DATA)), fn.value_and_grad(dict(zip(fn.variables, W)), DATA),
             fn.value_and_grad(w1=W[0], w2=W[1], b=W[2], **DATA)]
    for _ in range(3):  # the first calls (interpreted, instructions) and later ones agree
        forms.append(fn.value_and_grad(w, DATA))
    for value, grad in forms:
        assert value == pytest.approx(want_value, rel=1e-15) and grad.shape == (3,)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-14)
    assert fn.value(w, DATA) == pytest.approx(want_value, rel=1e-15)
    np.testing.assert_allclose(fn.grad(w, DATA), want_grad, rtol=1e-14)


def test_new_parameter_values_never_recompile():
    fn = parse(LOSS, Graph()).compile(wrt=["w1", "w2", "b"])
    fn.prepare()
    program, stats = fn.value_grad_program(), jit.compile_stats()
    rng = np.random.default_rng(1)
    for _ in range(50):
        data = dict(zip(fn.params, rng.normal(size=3)))
        value, grad = fn.value_and_grad(np.array(W), data)
        want_value, want_grad = reference(W, data)
        assert value == pytest.approx(want_value, rel=1e-14)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-13, atol=1e-300)
    assert fn.value_grad_program() is program and jit.compile_stats()["compiles"] == stats["compiles"]


def test_a_batch_of_points_shares_the_parameters(fn):
    points = np.random.default_rng(2).normal(size=(7, 3))
    values, grads = fn.value_and_grad(points, DATA)
    assert values.shape == (7,) and grads.shape == (7, 3)
    for k, w in enumerate(points):
        value, grad = reference(w, DATA)
        assert values[k] == pytest.approx(value, rel=1e-14)
        np.testing.assert_allclose(grads[k], grad, rtol=1e-13)
    out = np.empty((7, 4))
    v2, g2 = fn.value_and_grad_into(points, out, DATA)
    np.testing.assert_array_equal(v2, values)
    np.testing.assert_array_equal(g2, grads)


def test_scipy_takes_the_parameters_as_args():
    scipy_optimize = pytest.importorskip("scipy.optimize")
    fn = symad.compile("(x - a)^2 + b*(y - x^2)^2", wrt=["x", "y"])
    for a, b in ((1.0, 100.0), (2.0, 10.0)):
        r = scipy_optimize.minimize(fn.value_and_grad, np.array([-1.2, 1.0]), args=({"a": a, "b": b},), jac=True,
                                    method="L-BFGS-B", options={"gtol": 1e-10})
        np.testing.assert_allclose(r.x, [a, a * a], rtol=1e-5)


def test_float_function_takes_the_parameters_after_the_variables():
    fn = symad.compile("a*x^2 + b*x", wrt=["x"])
    assert fn.float_function()(3.0, 2.0, 1.0) == (21.0, 13.0)


def test_pickled_function_keeps_its_parameters():
    fn = parse(LOSS, Graph()).compile(wrt=["w1", "w2", "b"])
    copy = pickle.loads(pickle.dumps(fn))
    assert (copy.variables, copy.params) == (fn.variables, fn.params)
    assert copy.value_and_grad(W, DATA)[0] == fn.value_and_grad(W, DATA)[0]


@pytest.mark.parametrize("call, error, message", [
    (lambda f: f.value_and_grad(W), VariableError, r"missing value for parameter x1, x2, y: pass them after"),
    (lambda f: f.value_and_grad(W, {"x1": 1.0, "x2": 2.0}), VariableError, r"missing value for parameter y"),
    (lambda f: f.value_and_grad(W, dict(DATA, z=1.0)), VariableError, r"unknown parameter z"),
    (lambda f: f.value_and_grad(W, [1.0, 2.0]), PointError, r"the parameters need 3 value\(s\) \(x1, x2, y\)"),
    (lambda f: f.value_and_grad([1.0, 2.0], DATA), PointError, r"a point needs 3 value\(s\) \(w1, w2, b\)"),
    (lambda f: f.value_and_grad(W, {"x1": "one", "x2": 0, "y": 1}), PointError, r"value for x1 is not a number"),
])
def test_bad_parameters_are_explained(call, error, message):
    """A missing or unknown name is a VariableError, as for variables; a bad value or shape a PointError."""
    fn = parse(LOSS, Graph()).compile(wrt=["w1", "w2", "b"])
    with pytest.raises(error, match=message):
        call(fn)


def test_bad_wrt_is_a_clear_error():
    e = parse(LOSS, Graph())
    with pytest.raises(SymadError, match="not both"):
        e.compile(["w1"], wrt=["w1"])
    with pytest.raises(SymadError, match="lists a name twice"):
        e.compile(wrt=["w1", "w1"])
    with pytest.raises(SymadError, match="a list of names"):
        e.compile(wrt="w1")
    with pytest.raises(PointError, match="no parameters"):
        e.compile().value_and_grad([1.0] * 6, [1.0])


def test_a_wrt_name_the_expression_does_not_use_has_partial_zero():
    fn = symad.compile("a*x", wrt=["x", "t"])
    assert fn.params == ("a",)
    value, grad = fn.value_and_grad([2.0, 5.0], [3.0])
    assert value == 6.0 and grad.tolist() == [3.0, 0.0]


# ---------------------------------------------------------------- second order
def test_second_order_differentiates_wrt_only():
    """Hessian, Hessian-vector products and value_grad_hess in the wrt variables: the wrt block of
    the Hessian over every variable, the parameters' values given at each call."""
    from symad.second_order import SecondOrder

    text = "a*x^3*y + b*sin(x*y) + a*b*y^2"
    full = SecondOrder(parse(text, Graph()))
    fn = SecondOrder(parse(text, Graph()), wrt=["x", "y"])
    assert (fn.variables, fn.params) == (("x", "y"), ("a", "b"))
    x, p = np.array([0.7, -1.3]), {"a": 2.0, "b": 0.5}
    point = dict(zip(fn.variables, x), **p)
    names = list(full.variables)
    block = np.ix_([names.index("x"), names.index("y")], [names.index("x"), names.index("y")])
    want_h = full.hessian(point)[block]
    value, grad, hess = fn.value_grad_hess(x, p)
    assert value == pytest.approx(full.value(point), rel=1e-15)
    np.testing.assert_allclose(grad, full.grad(point)[[names.index("x"), names.index("y")]], rtol=1e-14)
    np.testing.assert_allclose(hess, want_h, rtol=1e-14)
    np.testing.assert_allclose(fn.hessian(x, [2.0, 0.5]), want_h, rtol=1e-14)
    d = np.array([0.3, -2.0])
    np.testing.assert_allclose(fn.hessp(x, d, p), want_h @ d, rtol=1e-13)
    xs, ds = np.array([x, x + 0.1, x - 0.2]), np.array([d, -d, 2 * d])
    batch = fn.hessp(xs, ds, p)
    for k in range(3):
        np.testing.assert_allclose(batch[k], fn.hessian(xs[k], p) @ ds[k], rtol=1e-12)


def test_taped_hessp_takes_parameters_too(monkeypatch):
    from symad.runtime import policy
    from symad.second_order import SecondOrder

    fn = SecondOrder(parse("a*x^3*y + b*sin(x*y)", Graph()), wrt=["x", "y"])
    x, d, p = np.array([0.7, -1.3]), np.array([0.3, -2.0]), {"a": 2.0, "b": 0.5}
    want = fn.hessp(x, d, p)
    monkeypatch.setattr(policy, "NATIVE_MAX_OPS", 0)  # as if too large to compile: a tape
    assert fn.hvp_interpreted()
    np.testing.assert_allclose(fn.hessp(x, d, p), want, rtol=1e-14)
    np.testing.assert_allclose(fn.hessp(np.array([x, x]), d, p), [want, want], rtol=1e-14)


# ---------------------------------------------------------------- optimizers
ROSEN = "b*(y - x^2)^2 + (a - x)^2"


def test_minimize_takes_parameters_and_reuses_one_compiled_function():
    """One SecondOrder compiled with wrt=[x, y] solves for several parameter values: the optimum
    (a, a^2) each time, nothing compiled again."""
    from symad.optimize import minimize
    from symad.second_order import SecondOrder

    fn = SecondOrder(parse(ROSEN, Graph()), wrt=["x", "y"])
    fn.prepare()
    programs = (fn.value_grad_program(), fn.value_grad_hess_program())
    for a, b in ((1.0, 100.0), (2.0, 10.0), (-0.5, 3.0)):
        for method in ("newton", "trust-ncg"):
            r = minimize(fn, {"x": -1.2, "y": 1.0}, method, params={"a": a, "b": b})
            assert r.success, r.message
            np.testing.assert_allclose(r.x, [a, a * a], rtol=1e-6, atol=1e-9)
            assert r.variables == ["x", "y"] and (r.point["a"], r.point["b"]) == (a, b)
            assert r.point["x"] == pytest.approx(a, abs=1e-6) and r.point["y"] == pytest.approx(a * a, abs=1e-6)
    assert (fn.value_grad_program(), fn.value_grad_hess_program()) == programs


def test_minimize_from_text_with_parameters_matches_fixed():
    from symad.optimize import minimize

    with_params = minimize(ROSEN, {"x": -1.2, "y": 1.0}, params={"a": 2.0, "b": 10.0})
    with_fixed = minimize(ROSEN, {"x": -1.2, "y": 1.0}, fixed={"a": 2.0, "b": 10.0})
    np.testing.assert_allclose(with_params.x, with_fixed.x, rtol=1e-12)


def test_scipy_functions_take_parameters():
    scipy_optimize = pytest.importorskip("scipy.optimize")
    from symad.optimize import scipy_functions

    s = scipy_functions(ROSEN, params={"a": 2.0, "b": 10.0})
    assert s.variables == ["x", "y"]
    r = scipy_optimize.minimize(s.fun, s.x0({"x": -1.2, "y": 1.0}), jac=True, hess=s.hess, method="trust-exact",
                                options={"gtol": 1e-10})
    np.testing.assert_allclose(r.x, [2.0, 4.0], rtol=1e-8)
    np.testing.assert_allclose(s.hessp(r.x, [1.0, 0.0]), s.hess(r.x)[:, 0], rtol=1e-12)
    assert s.point(r.x)["a"] == 2.0


def test_optimizer_parameter_errors():
    from symad import VariableError
    from symad.optimize import minimize
    from symad.second_order import SecondOrder

    fn = SecondOrder(parse(ROSEN, Graph()), wrt=["x", "y"])
    with pytest.raises(VariableError, match="missing value for parameter a, b of the compiled function"):
        minimize(fn, [0.0, 0.0])
    with pytest.raises(VariableError, match="cannot give a parameter value for z: not a variable"):
        minimize(ROSEN, {"x": 0, "y": 0}, params={"a": 1, "b": 1, "z": 3})
    with pytest.raises(VariableError, match="a is both fixed and a parameter"):
        minimize(ROSEN, {"x": 0, "y": 0}, params={"a": 1, "b": 1}, fixed={"a": 1})
