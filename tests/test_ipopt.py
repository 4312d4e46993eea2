"""``minimize(..., method="ipopt")`` and ``symad minimize --method ipopt``: IPOPT on symad's exact
sparse derivatives; its status, multipliers, options and progress; bad input."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from support.cli_helpers import fresh_python, run

from symad.core.errors import PointError, SymadError
from symad.optimize import minimize
from symad.optimize.nlp import constrained_problem
from symad.optimize.sparse import SparseHessian, Union

pytest.importorskip("cyipopt")
pytest.importorskip("scipy")

HS071 = dict(fun="x1*x4*(x1 + x2 + x3) + x3", x0={"x1": 1, "x2": 5, "x3": 5, "x4": 1},
             constraints=[("ineq", "x1*x2*x3*x4 - 25"), ("eq", "x1^2 + x2^2 + x3^2 + x4^2 - 40")],
             bounds={v: (1, 5) for v in ("x1", "x2", "x3", "x4")})


def test_the_lagrangian_hessian_ipopt_gets_is_the_dense_one_on_its_pattern() -> None:
    """σ∇²f + Σ μ_i ∇²c_i on the union of the parts' patterns equals the dense sum, and misses no nonzero."""
    problem, cons = constrained_problem(HS071["fun"], HS071["constraints"], None, None, None, False, None)
    f = SparseHessian(problem.fn, 4)
    c = cons.sparse_hessian()
    union = Union([(f.rows, f.cols), (c.rows, c.cols)], 4)
    x, mu, sigma = np.array([1.1, 4.2, 3.3, 1.4]), np.array([0.7, -1.3]), 0.6
    values = union.combine([sigma * f.values(x), cons.hessian_values(x, mu)])
    dense = sigma * problem.fn.hessian(x) + cons.hess(x, mu)
    lower = np.zeros((4, 4))
    lower[union.rows, union.cols] = values
    np.testing.assert_allclose(lower, np.tril(dense), rtol=1e-14, atol=1e-14)
    assert np.all(union.rows >= union.cols)
    keys = union.rows * 4 + union.cols
    assert np.all(np.diff(keys) > 0)  # row-major, each entry once


def test_multipliers_and_the_kkt_residual_in_symad_sign() -> None:
    r = minimize(HS071["fun"], HS071["x0"], method="ipopt", constraints=HS071["constraints"],
                 bounds=HS071["bounds"])
    assert r.method == "ipopt" and r.hessian == "sparse" and r.success
    assert 0 < r.evaluation_time < r.time  # symad's callbacks: a part of the solve
    # ∇f = Σ λ_i ∇c_i + (bounds' share): the active bound x1 = 1 carries the rest
    lower, upper = r.bound_multipliers
    grad_c = np.array([[r.x[1] * r.x[2] * r.x[3], r.x[0] * r.x[2] * r.x[3], r.x[0] * r.x[1] * r.x[3],
                        r.x[0] * r.x[1] * r.x[2]], 2 * r.x])
    np.testing.assert_allclose(r.jac - grad_c.T @ r.multipliers - lower + upper, 0, atol=1e-6)
    assert lower[0] > 0.5 and r.multipliers[0] > 0  # active: x1 at its bound, the product at 25


def test_options_pass_through_and_bad_ones_are_refused() -> None:
    r = minimize("(x-1)^2 + (y-2)^2", {"x": 0, "y": 0}, method="ipopt", constraints=[("ineq", "1 - x - y")],
                 options={"mu_strategy": "adaptive", "max_iter": 50})
    assert r.success and r.x == pytest.approx([0.0, 1.0], abs=1e-7)
    with pytest.raises(SymadError, match="no_such_option.*not a valid option"):
        minimize("x^2", {"x": 1}, method="ipopt", options={"no_such_option": 1})
    with pytest.raises(SymadError, match="tol='abc'.*of type"):
        minimize("x^2", {"x": 1}, method="ipopt", options={"tol": "abc"})
    with pytest.raises(SymadError, match="a number or a string"):
        minimize("x^2", {"x": 1}, method="ipopt", options={"print_level": [0]})
    with pytest.raises(SymadError, match="method ipopt does not take lr"):
        minimize("x^2", {"x": 1}, method="ipopt", lr=0.1)


@pytest.mark.parametrize("options, said", [
    ({}, "mumps_permuting_scaling = 0"),  # symad's one default of its own
    ({"mumps_permuting_scaling": 7}, "mumps_permuting_scaling = 7"),  # a user's option wins
    ({"linear_solver": "mumps"}, "mumps_permuting_scaling = 0"),
])
def test_mumps_permuting_scaling_is_off_unless_the_options_say_otherwise(capfd, options, said) -> None:
    r = minimize("(x-1)^2 + (y-2)^2", {"x": 0, "y": 0}, method="ipopt", constraints=[("ineq", "1 - x - y")],
                 options={"print_user_options": "yes", "print_level": 1, **options})
    assert r.success
    printed = capfd.readouterr().out
    assert "List of user-set options" in printed and said in printed


def test_max_iter_stops_ipopt() -> None:
    r = minimize("100*(y-x^2)^2 + (1-x)^2", {"x": -1.2, "y": 1}, method="ipopt", max_iter=3)
    assert not r.success and r.status == -1 and r.nit == 3
    assert r.message.startswith("maximum number of iterations reached")


def test_an_infeasible_problem_says_so() -> None:
    r = minimize("x^2 + y^2", {"x": 0, "y": 0}, method="ipopt", constraints=[("ineq", "x - 2"), ("ineq", "1 - x")])
    assert not r.success and r.status == 2 and r.ipopt_status == "Infeasible_Problem_Detected"
    assert r.message.startswith("infeasible") and r.constraints["violation"] > 0.1


def test_an_unbounded_problem_diverges() -> None:
    r = minimize("-x - y", {"x": 0, "y": 0}, method="ipopt", constraints=[("ineq", "x - y")])
    assert not r.success and r.status == 4 and r.message.startswith("diverged")
    assert r.fun < -1e15


def test_nan_at_the_start_point() -> None:
    r = minimize("log(x) + y^2", {"x": -1, "y": 0}, method="ipopt", constraints=[("eq", "y - 1")])
    assert not r.success and r.status == -13 and r.message.startswith("non-finite at the start point: f")
    with pytest.raises(PointError, match="not finite: y"):
        minimize("x^2 + y^2", {"x": 1, "y": float("nan")}, method="ipopt")


def test_missing_cyipopt_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cyipopt", None)  # an import of it raises ImportError
    with pytest.raises(SymadError, match=r'pip install "symad\[ipopt\]"'):
        minimize("x^2", {"x": 1}, method="ipopt")


def test_ipopt_loads_cyipopt_without_scipy_and_cyipopt_stays_whole() -> None:
    """minimize(method="ipopt") loads cyipopt's wrapper alone (its package's __init__ imports
    scipy.optimize, which takes most of the import's time); a later ``import cyipopt`` still gets
    the whole package, its scipy interface included.  In a fresh process: this one has both."""
    code = ("import sys\n"
            "from symad.optimize import minimize\n"
            "r = minimize('(x-1)^2', {'x': 0}, method='ipopt')\n"
            "assert r.success and abs(r.x[0] - 1) < 1e-7, r\n"
            "assert 'scipy' not in sys.modules, sorted(m for m in sys.modules if 'scipy' in m)[:5]\n"
            "import cyipopt\n"
            "from cyipopt import minimize_ipopt\n"
            "from symad.optimize.ipopt import cyipopt_module\n"
            "assert cyipopt.Problem is cyipopt_module().Problem\n"
            "assert 'scipy.optimize' in sys.modules and type(cyipopt) is type(sys)\n"
            "print(minimize_ipopt(lambda x: (x[0] - 2) ** 2, [0.0]).x[0])\n")
    assert float(fresh_python(code).split()[-1]) == pytest.approx(2.0, abs=1e-6)


def test_the_callback_sees_each_iteration_and_may_stop_it() -> None:
    seen = []
    r = minimize("100*(y-x^2)^2 + (1-x)^2", {"x": -1.2, "y": 1}, method="ipopt",
                 callback=lambda it: seen.append((it.nit, it.fun, it.grad_norm)))
    assert r.success and [n for n, _, _ in seen] == list(range(r.nit + 1))
    assert seen[0][1] == pytest.approx(24.2)
    r = minimize("100*(y-x^2)^2 + (1-x)^2", {"x": -1.2, "y": 1}, method="ipopt", callback=lambda it: it.nit >= 2)
    assert not r.success and r.message == "stopped by the callback" and r.status == 5


def test_fixed_values_and_parameters() -> None:
    r = minimize("(x-a)^2 + (y-b)^2", {"x": 0, "y": 0}, method="ipopt", fixed={"a": 3}, params={"b": 1, "c": 1},
                 constraints=[("eq", "x + y - c*2")])
    assert r.success and r.point["a"] == 3 and r.point["b"] == 1 and r.variables == ["x", "y"]
    assert [r.point["x"], r.point["y"]] == pytest.approx([2.0, 0.0], abs=1e-8)


def test_the_command_line_runs_ipopt_with_options() -> None:
    out = run("minimize", "x^2+y^2", "--from", "x=0,y=0", "--eq", "x+y-1", "--method", "ipopt",
              "--option", "mu_strategy=adaptive", "--option", "max_iter=20", "--json")
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert obj["method"] == "ipopt" and obj["success"] is True and obj["ipopt_status"] == "Solve_Succeeded"
    assert obj["x"]["x"] == pytest.approx(0.5, abs=1e-8)
    assert obj["constraints"][0]["multiplier"] == pytest.approx(1.0, abs=1e-7)
    bad = run("minimize", "x^2", "--from", "x=0", "--method", "ipopt", "--option", "nonsense=1")
    assert bad.returncode == 2 and "IPOPT option nonsense=1: It is not a valid option" in bad.stderr
    assert "Traceback" not in bad.stderr and bad.stdout == ""
    infeasible = run("minimize", "x^2", "--from", "x=0", "--eq", "x^2+1", "--method", "ipopt", "--strict")
    assert infeasible.returncode == 1 and "infeasible" in infeasible.stderr
    wrong = run("minimize", "x^2", "--from", "x=0", "--option", "tol=1")
    assert wrong.returncode == 2 and "--option sets IPOPT's options" in wrong.stderr


def test_limited_memory_hessian_never_asks_for_the_hessian() -> None:
    r = minimize("100*(y-x^2)^2 + (1-x)^2", {"x": -1.2, "y": 1}, method="ipopt",
                 options={"hessian_approximation": "limited-memory"})
    assert r.success and r.nhev == 0
    assert r.x == pytest.approx([1.0, 1.0], abs=1e-6)
