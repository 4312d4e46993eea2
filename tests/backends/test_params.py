"""Parameters: variables given at each call, never differentiated, never recompiled for."""

import pickle

import numpy as np
import pytest

import symad
from symad import Graph, PointError, SymadError, parse
from symad.backends.llvm import jit

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


@pytest.mark.parametrize("call, message", [
    (lambda f: f.value_and_grad(W), r"missing value for parameter x1, x2, y: pass them after the point"),
    (lambda f: f.value_and_grad(W, {"x1": 1.0, "x2": 2.0}), r"missing value for parameter y"),
    (lambda f: f.value_and_grad(W, dict(DATA, z=1.0)), r"unknown parameter z"),
    (lambda f: f.value_and_grad(W, [1.0, 2.0]), r"the parameters need 3 value\(s\) \(x1, x2, y\)"),
    (lambda f: f.value_and_grad([1.0, 2.0], DATA), r"a point needs 3 value\(s\) \(w1, w2, b\)"),
    (lambda f: f.value_and_grad(W, {"x1": "one", "x2": 0, "y": 1}), r"value for x1 is not a number"),
])
def test_bad_parameters_are_point_errors(call, message):
    fn = parse(LOSS, Graph()).compile(wrt=["w1", "w2", "b"])
    with pytest.raises(PointError, match=message):
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
