"""An objective over data is used as a compiled function is, with the same conventions for
names, parameters and points: scipy_functions, penalties, fixed values, constraints, wrt=["w"]
for w[1..n], a 2-D array for x[1..m], parameters at each call; its data's names obey the name
rule and every column is one the expression reads; a mini-batch run reports the whole objective."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.optimize

import symad
from symad import NameRuleError, PointError, SymadError, VariableError
from symad.optimize import minimize, scipy_functions

LOSS = "(sum(j = 1..3, w[j]*x[j]) + b - y)^2"
TRUE_W = np.array([1.0, -2.0, 0.5])


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    y = X @ TRUE_W + 0.3 + 0.05 * rng.normal(size=400)
    return X, y


def least_squares(X, y, ridge=0.0):
    A = np.column_stack([X, np.ones(len(X))])
    return np.linalg.solve(A.T @ A + np.diag([ridge] * X.shape[1] + [0.0]), A.T @ y)


def test_a_2d_array_feeds_the_indexed_variables_and_wrt_spreads_over_them(data):
    X, y = data
    obj = symad.objective(LOSS, {"x": X, "y": y}, wrt=["w", "b"])
    assert obj.wrt == ("w[1]", "w[2]", "w[3]", "b") and obj.params == ()
    assert obj.data_names == ("x[1]", "x[2]", "x[3]", "y")
    columns = symad.objective(LOSS, {"x[1]": X[:, 0], "x[2]": X[:, 1], "x[3]": X[:, 2], "y": y}, wrt=["w", "b"])
    w = np.array([0.5, 0.25, -1.0, 2.0])
    assert obj.value_and_grad(w)[0] == columns.value_and_grad(w)[0]
    # a point by name: w for every w[k], as a compiled function takes it
    assert obj.value({"w": [0.5, 0.25, -1.0], "b": 2.0}) == obj.value(w)
    assert obj.value(w=[0.5, 0.25, -1.0], b=2.0) == obj.value(w)


def test_a_2d_array_with_too_few_columns_is_explained(data):
    X, y = data
    with pytest.raises(VariableError, match=r"the expression uses x\[4\], but data x has 3 column\(s\)"):
        symad.objective("(w*x[4] - y)^2", {"x": X, "y": y})


def test_scipy_functions_takes_an_objective(data):
    X, y = data
    obj = symad.objective(LOSS, {"x": X, "y": y}, wrt=["w", "b"])
    s = scipy_functions(obj)  # was AttributeError
    assert s.variables == ["w[1]", "w[2]", "w[3]", "b"]
    r = scipy.optimize.minimize(s.fun, s.x0({"w": 0.0, "b": 0.0}), jac=True, hess=s.hess, method="trust-exact",
                                options={"gtol": 1e-10})
    np.testing.assert_allclose(r.x, least_squares(X, y), atol=1e-8)
    x = np.array([0.1, 0.2, 0.3, 0.4])
    assert s.value(x) == obj.value(x) and np.array_equal(s.jac(x), obj.grad(x))
    np.testing.assert_array_equal(s.hessp(x, np.ones(4)), obj.hessp(x, np.ones(4)))


def test_a_penalty_adds_to_the_sum_with_its_parameter_given_at_each_call(data):
    X, y = data
    obj = symad.objective(LOSS, {"x": X, "y": y}, wrt=["w", "b"])
    ridge = obj + symad.parse("lam*sum(j = 1..3, w[j]^2)")  # was TypeError
    assert ridge.params == ("lam",) and obj.params == ()  # the objective itself is unchanged
    w = np.array([0.5, 0.25, -1.0, 2.0])
    v, g = ridge.value_and_grad(w, {"lam": 0.7})
    v0, g0 = obj.value_and_grad(w)
    assert v == pytest.approx(v0 + 0.7 * np.sum(w[:3] ** 2), rel=1e-14)
    np.testing.assert_allclose(g, g0 + np.r_[1.4 * w[:3], 0.0], rtol=1e-14)
    np.testing.assert_allclose(ridge.hessian(w, [0.7]), obj.hessian(w) + np.diag([1.4, 1.4, 1.4, 0.0]), rtol=1e-14)
    p = np.array([1.0, -1.0, 2.0, 0.5])
    np.testing.assert_allclose(ridge.hessp(w, p, [0.7]), ridge.hessian(w, [0.7]) @ p, rtol=1e-12)
    for lam in (0.0, 10.0):  # new values, nothing compiled again
        r = minimize(ridge, np.zeros(4), params={"lam": lam})
        assert r.success
        np.testing.assert_allclose(r.x, least_squares(X, y, lam), atol=1e-9)
    # text, numbers, either side, and pickling keep the penalty
    assert ("0.5*b^2" + obj).value(w) == pytest.approx(v0 + 2.0, rel=1e-14)
    assert (obj - 1.5).value(w) == pytest.approx(v0 - 1.5, rel=1e-14)
    again = pickle.loads(pickle.dumps(ridge))
    assert again.params == ("lam",) and again.value(w, [0.7]) == v


def test_a_penalty_over_data_is_refused(data):
    X, y = data
    obj = symad.objective(LOSS, {"x": X, "y": y}, wrt=["w", "b"])
    with pytest.raises(VariableError, match="cannot use the data column y"):
        obj + "0.1*y^2"
    with pytest.raises(TypeError):
        obj + obj


def test_parameters_of_the_row_are_given_at_each_call(data):
    X, y = data
    huber = symad.objective("r = a*x + b - y; where(abs(r) <= d, r^2/2, d*(abs(r) - d/2))",
                            {"x": X[:, 0], "y": y}, wrt=["a", "b"])
    assert huber.wrt == ("a", "b") and huber.params == ("d",)
    r = X[:, 0] * 1.0 + 0.5 - y
    for d in (0.5, 2.0):
        expected = np.where(np.abs(r) <= d, r ** 2 / 2, d * (np.abs(r) - d / 2)).sum()
        assert huber.value([1.0, 0.5], [d]) == pytest.approx(expected, rel=1e-12)
        assert huber.value([1.0, 0.5], {"d": d}) == huber.value({"a": 1.0, "b": 0.5, "d": d})
    with pytest.raises(VariableError, match="missing value for parameter d"):
        huber.value([1.0, 0.5])
    with pytest.raises(VariableError, match="missing value for parameter d"):
        minimize(huber, [0.0, 0.0])
    fit = minimize(huber, [0.0, 0.0], params={"d": 1.0})
    assert fit.success and fit.point["d"] == 1.0
    scipy_fit = scipy.optimize.minimize(huber.value_and_grad, [0.0, 0.0], args=({"d": 1.0},), jac=True)
    np.testing.assert_allclose(scipy_fit.x, fit.x, atol=1e-5)


def test_fixed_values_and_constraints_work_with_an_objective(data):
    X, y = data
    obj = symad.objective(LOSS, {"x": X, "y": y}, wrt=["w", "b"])
    r = minimize(obj, {"w": 0.0, "b": 0.0}, fixed={"b": 0.0})  # was refused
    assert r.success and r.variables == ["w[1]", "w[2]", "w[3]"] and r.point["b"] == 0.0
    np.testing.assert_allclose(r.x, np.linalg.lstsq(X, y, rcond=None)[0], atol=1e-9)
    c = minimize(obj, np.zeros(4), constraints=[("ineq", "w[1] <= 0.5"), ("eq", "b == 0.25")])  # was refused
    assert c.success and c.method == "slsqp"
    assert c.x[0] == pytest.approx(0.5, abs=1e-7) and c.x[3] == pytest.approx(0.25, abs=1e-9)
    # the KKT point: with w[1] and b held where the constraints put them, the rest is least squares
    rest = np.linalg.lstsq(X[:, 1:], y - 0.5 * X[:, 0] - 0.25, rcond=None)[0]
    np.testing.assert_allclose(c.x[1:3], rest, atol=1e-6)


def test_a_mini_batch_run_reports_the_whole_objective(data):
    X, y = data
    obj = symad.objective(LOSS, {"x": X, "y": y}, wrt=["w", "b"])
    r = minimize(obj, np.zeros(4), method="adam", batch_size=32, max_iter=200, lr=0.05, seed=1)
    v, g = obj.value_and_grad(r.x)
    assert r.fun == v and np.array_equal(r.jac, g)  # was the last mini-batch's
    assert r.grad_norm == pytest.approx(float(np.linalg.norm(g)), rel=1e-15)
    # the last mini-batch's numbers, which the stopping rules judged, are kept apart
    assert r.batch_fun != r.fun and r.batch_jac.shape == (4,) and r.batch_grad_norm > 0
    whole = minimize(obj, np.zeros(4), method="adam", max_iter=5)
    assert "batch_fun" not in whole


@pytest.mark.parametrize("data_, wrt, error, words", [
    ({"x": [1.0, 2.0], "e": [3.0, 4.0]}, None, NameRuleError, "a data column: 'e'"),
    ({"x": [1.0, 2.0], "pi": [3.0, 4.0]}, None, NameRuleError, "a data column: 'pi'"),
    ({"x": [1.0, 2.0], "my y": [3.0, 4.0]}, None, NameRuleError, "a data column: 'my y'"),
    ({"x": [1.0, 2.0], "y": [3.0, 4.0]}, ["a", "inf"], NameRuleError, "wrt: 'inf'"),
    ({"X": [1.0, 2.0], "y": [3.0, 4.0]}, None, VariableError, "data column X is not a variable of the expression"),
])
def test_data_and_wrt_names_obey_the_name_rule_and_the_expression(data_, wrt, error, words):
    # a column named e was read as the constant e (the loss 3.47 where it should be 0); a column
    # the expression does not read (X for x) left x a fitted variable
    with pytest.raises(error, match=words):
        symad.objective("(a*x - y)^2", data_, wrt=wrt)


def test_a_column_named_like_a_constant_is_no_longer_the_constant():
    with pytest.raises(NameRuleError):
        symad.objective("(a*x - e)^2", {"x": [1.0, 2.0], "e": [1.0, 2.0]})


def test_points_and_parameters_are_checked_as_a_functions_are(data):
    X, y = data
    obj = symad.objective(LOSS, {"x": X, "y": y}, wrt=["w", "b"])
    with pytest.raises(PointError, match="has no parameters"):
        obj.value(np.zeros(4), [1.0])
    with pytest.raises(PointError, match="sequence or as keywords"):
        obj.value(np.zeros(4), b=1.0)
    with pytest.raises(VariableError, match=r"missing b"):
        obj.value({"w": [1, 2, 3]})
    with pytest.raises(SymadError, match="takes no variables"):
        minimize(obj, np.zeros(4), variables=["b"])
