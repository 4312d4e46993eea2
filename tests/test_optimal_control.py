"""Constrained problems written with loops (sums, ``each`` families): the sparse forms IPOPT and
trust-constr get, against finite differences and dense algebra, and discretised optimal control
against its exact discrete optimum and the same problem written out."""

from __future__ import annotations

import numpy as np
import pytest

from symad.core.errors import PointError, SymadError, VariableError
from symad.optimize import minimize
from symad.optimize.loops import LoopProblem
from symad.optimize.nlp import jacobian_t

pytest.importorskip("scipy")


def double_integrator(n: int) -> dict:
    defs = f"N = {n}; h = 1/N; "
    return {"fun": defs + "sum(k = 1..N, h*u[k]^2)",
            "constraints": [("eq", defs + "each(k = 1..N, p[k+1] - p[k] - h*v[k])"),
                            ("eq", defs + "each(k = 1..N, v[k+1] - v[k] - h*u[k])"),
                            ("eq", "p[1]"), ("eq", "v[1]"), ("eq", f"p[{n + 1}] - 1"), ("eq", f"v[{n + 1}]")]}


def van_der_pol(n: int) -> dict:
    defs = f"N = {n}; h = 10/N; "
    return {"fun": defs + "sum(k = 1..N, h*(x1[k]^2 + x2[k]^2 + u[k]^2))",
            "constraints": [("eq", defs + "each(k = 1..N, x1[k+1] - x1[k] - h*((1 - x2[k]^2)*x1[k] - x2[k] + u[k]))"),
                            ("eq", defs + "each(k = 1..N, x2[k+1] - x2[k] - h*x1[k])"),
                            ("eq", "x1[1]"), ("eq", "x2[1] - 1")],
            "bounds": {"u": (-1, 1), "x1": (-0.25, None)}}


def exact_double_integrator(n: int) -> float:
    """The discrete problem's optimum from its KKT system (a quadratic objective, linear constraints)."""
    h = 1 / n
    size = 3 * n + 2  # p[1..n+1], u[1..n], v[1..n+1]: the problem's order (names sorted)
    p, u, v = (lambda k: k - 1), (lambda k: n + 1 + k - 1), (lambda k: 2 * n + 1 + k - 1)
    rows = []
    for k in range(1, n + 1):
        r = np.zeros(size)
        r[p(k + 1)], r[p(k)], r[v(k)] = 1, -1, -h
        rows.append(r)
    for k in range(1, n + 1):
        r = np.zeros(size)
        r[v(k + 1)], r[v(k)], r[u(k)] = 1, -1, -h
        rows.append(r)
    for at in (p(1), v(1), p(n + 1), v(n + 1)):
        r = np.zeros(size)
        r[at] = 1
        rows.append(r)
    a = np.array(rows)
    b = np.zeros(len(rows))
    b[-2] = 1.0
    q = np.zeros((size, size))
    for k in range(1, n + 1):
        q[u(k), u(k)] = 2 * h
    kkt = np.block([[q, a.T], [a, np.zeros((len(rows), len(rows)))]])
    z = np.linalg.solve(kkt, np.concatenate([np.zeros(size), b]))[:size]  # Q > 0 on A's null space
    return float(0.5 * z @ q @ z)


@pytest.mark.parametrize("n", [20, 320])  # the objective's sum written out, and kept as a loop
def test_double_integrator_reaches_the_exact_discrete_optimum(n: int) -> None:
    pytest.importorskip("cyipopt")
    d = double_integrator(n)
    r = minimize(d["fun"], {"p": 0, "v": 0, "u": 0}, method="ipopt", constraints=d["constraints"])
    assert r.success, r.message
    assert r.fun == pytest.approx(exact_double_integrator(n), rel=1e-10)
    assert len(r.x) == 3 * n + 2 and r.variables[:2] == ["p[1]", "p[2]"]
    u = r.point["u"]
    assert u.shape == (n,) and u[0] == pytest.approx(-u[-1], rel=1e-8)  # symmetric about the middle
    assert r.point["p"][-1] == pytest.approx(1.0, abs=1e-10)
    assert r.grad_norm < 1e-7


def test_van_der_pol_with_loops_equals_the_same_problem_written_out() -> None:
    pytest.importorskip("cyipopt")
    n = 20
    vdp = van_der_pol(n)
    looped = minimize(vdp["fun"], {"x1": 0, "x2": 0, "u": 0}, method="ipopt", constraints=vdp["constraints"],
                      bounds=vdp["bounds"])
    h = 10 / n
    written = [("eq", f"x1[{k + 1}] - x1[{k}] - {h}*((1 - x2[{k}]^2)*x1[{k}] - x2[{k}] + u[{k}])")
               for k in range(1, n + 1)]
    written += [("eq", f"x2[{k + 1}] - x2[{k}] - {h}*x1[{k}]") for k in range(1, n + 1)]
    written += [("eq", "x1[1]"), ("eq", "x2[1] - 1")]
    objective = " + ".join(f"{h}*(x1[{k}]^2 + x2[{k}]^2 + u[{k}]^2)" for k in range(1, n + 1))
    bounds = {**{f"u[{k}]": (-1, 1) for k in range(1, n + 1)}, **{f"x1[{k}]": (-0.25, None) for k in range(1, n + 2)}}
    flat = minimize(objective, dict.fromkeys(looped.variables, 0.0), method="ipopt", constraints=written,
                    bounds=bounds)
    assert looped.success and flat.success
    assert looped.variables == flat.variables
    assert looped.fun == pytest.approx(flat.fun, rel=1e-9)
    np.testing.assert_allclose(looped.x, flat.x, atol=1e-6)
    assert looped.nit == flat.nit  # the same derivatives: the same path
    np.testing.assert_allclose(looped.multipliers, flat.multipliers, atol=1e-6)
    assert looped.point["u"].min() >= -1 - 1e-8 and looped.point["x1"].min() >= -0.25 - 1e-8


def test_trust_constr_takes_the_same_sparse_forms() -> None:
    pytest.importorskip("cyipopt")
    vdp = van_der_pol(20)
    args = (vdp["fun"], {"x1": 0, "x2": 0, "u": 0})
    a = minimize(*args, method="ipopt", constraints=vdp["constraints"], bounds=vdp["bounds"])
    b = minimize(*args, method="trust-constr", constraints=vdp["constraints"], bounds=vdp["bounds"], tol=1e-10)
    assert b.success and b.hessian == "sparse"
    assert b.fun == pytest.approx(a.fun, rel=1e-6)  # trust-constr stops with its barrier parameter near 1e-7


def test_the_jacobian_and_the_lagrangian_hessian_against_finite_differences() -> None:
    vdp = van_der_pol(6)
    nlp = LoopProblem(vdp["fun"], vdp["constraints"], vdp["bounds"])
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, nlp.layout.size)
    mu = rng.uniform(-1, 1, nlp.m)
    sigma = 0.7
    eps = 1e-6
    # the Jacobian: central differences of the constraints' values, every entry in the pattern
    rows, cols = nlp.jacobian
    jac = np.zeros((nlp.m, len(x)))
    jac[rows, cols] = nlp.jacobian_values(x)
    fd = np.array([(nlp.values(x + eps * e) - nlp.values(x - eps * e)) / (2 * eps) for e in np.eye(len(x))]).T
    np.testing.assert_allclose(jac, fd, atol=1e-8)
    # the Lagrangian's Hessian: central differences of its gradient σ∇f + Jᵀμ
    def grad(z: np.ndarray) -> np.ndarray:
        return sigma * nlp.fg(z)[1] + jacobian_t(nlp, z, mu)

    dense = np.zeros((len(x), len(x)))
    dense[nlp.union.rows, nlp.union.cols] = nlp.hessian_values(x, sigma, mu)
    assert np.all(nlp.union.rows >= nlp.union.cols)
    fd = np.array([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])
    np.testing.assert_allclose(dense, np.tril(fd), atol=1e-7)


def test_points_and_bounds_by_vector_or_entry_and_bad_ones() -> None:
    d = double_integrator(5)
    nlp = LoopProblem(d["fun"], d["constraints"], {"u": (-2, 2), "u[3]": (0, 1), "p[6]": (1, 1)})
    assert nlp.layout.described() == "p[1..6], u[1..5], v[1..6]"
    u = slice(6, 11)
    assert nlp.lower[u].tolist() == [-2, -2, 0, -2, -2] and nlp.upper[u].tolist() == [2, 2, 1, 2, 2]
    assert nlp.lower[5] == nlp.upper[5] == 1
    x = nlp.start({"p": np.arange(6.0), "u": 5, "v": 0, "u[1]": -7})
    assert x[u].tolist() == [-2, 2, 1, 2, 2]  # clipped into the bounds
    with pytest.raises(PointError, match="x0 has no value for v"):
        nlp.start({"p": 0, "u": 0})
    with pytest.raises(PointError, match="p has 6 entries"):
        nlp.start({"p": [1, 2], "u": 0, "v": 0})
    with pytest.raises(VariableError, match="w is not a variable of the problem"):
        nlp.start({"p": 0, "u": 0, "v": 0, "w": 1})
    with pytest.raises(VariableError, match=r"bounds: u\[9\] is not a variable of the problem"):
        LoopProblem(d["fun"], d["constraints"], {"u[9]": (0, 1)})
    with pytest.raises(PointError, match="bounds: empty for"):
        LoopProblem(d["fun"], d["constraints"], {"u": (1, 0)})


def test_what_a_problem_with_loops_refuses() -> None:
    d = double_integrator(5)
    with pytest.raises(SymadError, match=r"q held \(fixed or params\) is not a variable of the problem"):
        minimize(d["fun"], {"p": 0, "u": 0, "v": 0}, method="trust-constr", constraints=d["constraints"],
                 fixed={"q": 1})
    with pytest.raises(SymadError, match="takes no variables"):
        minimize(d["fun"], {"p": 0, "u": 0, "v": 0}, method="trust-constr", constraints=d["constraints"],
                 variables=["u"])
    with pytest.raises(SymadError, match="slsqp takes dense matrices"):
        minimize(d["fun"], {"p": 0, "u": 0, "v": 0}, method="slsqp", constraints=d["constraints"])
    with pytest.raises(SymadError, match="copies of one constraint"):
        LoopProblem(d["fun"], [("eq", "each(k = 1..400, u[1] - 1)")], None)
