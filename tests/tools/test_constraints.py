"""Constrained minimisation (SLSQP and trust-constr with exact derivatives) on textbook problems
with known solutions, and scipy_functions(...).constraints() checked against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import symad
from symad import SymadError, VariableError
from symad.optimize import scipy_functions

# Hock & Schittkowski problem 71 (the IPOPT tutorial's): f* = 17.0140173 at
# (1, 4.7429994, 3.8211503, 1.3794082).
HS071 = "x1*x4*(x1 + x2 + x3) + x3"
HS071_CONSTRAINTS = [("ineq", "x1*x2*x3*x4 - 25"), ("eq", "x1^2 + x2^2 + x3^2 + x4^2 - 40")]
HS071_START = {"x1": 1, "x2": 5, "x3": 5, "x4": 1}
HS071_BOUNDS = {f"x{i}": (1, 5) for i in range(1, 5)}
HS071_X = [1.0, 4.7429994, 3.8211503, 1.3794082]


@pytest.mark.parametrize("method, tol", [("slsqp", 1e-10), ("trust-constr", 1e-12)])
def test_hs071(method: str, tol: float) -> None:
    r = symad.minimize(HS071, HS071_START, method=method, constraints=HS071_CONSTRAINTS, bounds=HS071_BOUNDS,
                       tol=tol)
    assert r.success, r.message
    assert r.fun == pytest.approx(17.0140173, abs=2e-7)
    np.testing.assert_allclose(r.x, HS071_X, atol=1e-5)
    assert r.constraints["violation"] <= 1e-8
    # KKT: the objective's gradient is Σ λ_i ∇c_i plus the active bound's (x1 = 1, its first entry)
    jac = symad.compile([c for _, c in HS071_CONSTRAINTS]).jacobian(r.x)
    residual = r.jac - r.multipliers @ jac
    np.testing.assert_allclose(residual[1:], 0, atol=1e-5)
    assert residual[0] > 0 and r.multipliers[0] > 0  # the active lower bound and inequality push up


def test_the_scipy_tutorial_problem_with_inequalities() -> None:
    # scipy.optimize's tutorial: the minimum is at (1.4, 1.7)
    r = symad.minimize("(x - 1)^2 + (y - 2.5)^2", {"x": 2, "y": 0}, bounds={"x": (0, None), "y": (0, None)},
                       constraints=[("ineq", "x - 2*y + 2"), ("ineq", "-x - 2*y + 6"), ("ineq", "-x + 2*y + 2")])
    assert r.success and r.method == "slsqp"  # the default with constraints
    np.testing.assert_allclose(r.x, [1.4, 1.7], atol=1e-8)


def test_equality_constrained_quadratic_and_its_multiplier() -> None:
    for method in ("slsqp", "trust-constr"):
        r = symad.minimize("x^2 + y^2", [2, 0], method=method, constraints=[("eq", "x + y - 1")])
        assert r.success
        np.testing.assert_allclose(r.x, [0.5, 0.5], atol=1e-7)
        np.testing.assert_allclose(r.multipliers, [1.0], atol=1e-6)  # ∇f = λ∇c: (1, 1) = λ(1, 1)


def test_a_constraint_may_use_a_variable_the_objective_does_not() -> None:
    r = symad.minimize("x^2", {"x": 3, "y": 0}, constraints=[("eq", "x - y - 1"), ("ineq", "y")])
    assert r.variables == ["x", "y"] and r.success
    np.testing.assert_allclose(r.x, [1, 0], atol=1e-8)


def test_fixed_values_and_parameters_reach_the_constraints() -> None:
    r = symad.minimize("x^2 + y^2", {"x": 1, "y": 1, "a": 0}, fixed={"a": 2},
                       constraints=[("eq", "x + y - a")])
    np.testing.assert_allclose(r.x, [1, 1], atol=1e-8)
    r = symad.minimize("x^2 + y^2 + 0*a", {"x": 1, "y": 1}, params={"a": 4}, method="trust-constr",
                       constraints=[("eq", "x + y - a")])
    np.testing.assert_allclose(r.x, [2, 2], atol=1e-6)
    assert r.point["a"] == 4


def test_scipy_functions_constraints_carry_exact_jacobians_and_lagrangian_hessians() -> None:
    s = scipy_functions("x*y*z")
    (con,) = s.constraints([("eq", "x^2 + y^2 + z^2 - 3"), ("ineq", "x*sin(y) + z")])
    x, v, h = np.array([0.7, -0.4, 1.3]), np.array([0.5, -2.0]), 1e-6
    fd_jac = np.array([(con.fun(x + h * e) - con.fun(x - h * e)) / (2 * h) for e in np.eye(3)]).T
    np.testing.assert_allclose(con.jac(x), fd_jac, atol=1e-8)
    fd_hess = np.array([(v @ con.jac(x + h * e) - v @ con.jac(x - h * e)) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(con.hess(x, v), fd_hess, atol=1e-7)
    np.testing.assert_array_equal(con.lb, [0, 0])
    np.testing.assert_array_equal(con.ub, [0, np.inf])
    # the dict form, for SLSQP, and a solve through scipy directly
    dicts = s.constraint_dicts([("eq", "x^2 + y^2 + z^2 - 3")])
    r = scipy.optimize.minimize(s.fun, [1.2, 0.8, 1.1], jac=True, method="SLSQP", constraints=dicts,
                                options={"ftol": 1e-12})
    assert r.success and r.fun == pytest.approx(-1.0, abs=1e-9)  # two of x, y, z at -1, one at 1


def test_errors() -> None:
    with pytest.raises(SymadError, match="method newton takes no constraints"):
        symad.minimize("x^2", [1], method="newton", constraints=[("eq", "x")])
    with pytest.raises(SymadError, match='kind is "eq"'):
        symad.minimize("x^2", [1], constraints=[("le", "x")])
    with pytest.raises(SymadError, match="a constraint is"):
        symad.minimize("x^2", [1], constraints=["x - 1"])
    with pytest.raises(SymadError, match="does not take lr"):
        symad.minimize("x^2", [1], method="slsqp", lr=0.1)
    with pytest.raises(VariableError, match="a constraint uses z"):
        scipy_functions("x^2").constraints([("eq", "x - z")])
    with pytest.raises(SymadError, match="unknown method 'cg'.*slsqp, trust-constr"):
        symad.minimize("x^2", [1], method="cg")


def test_a_violated_constraint_is_never_called_success() -> None:
    # infeasible: x >= 2 and x <= 1
    r = symad.minimize("x^2", [0], constraints=[("ineq", "x - 2"), ("ineq", "1 - x")])
    assert not r.success
    assert r.constraints["violation"] > 0.1
