"""Optimisers on exact derivatives: built-in methods, the scipy adapter, and the CLI."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from support.cli_helpers import run as symad

from symad import Graph, PointError, SymadError, VariableError, parse
from symad.optimize import OptimizeResult, minimize, scipy_functions, substitute
from symad.second_order import SecondOrder

ROSENBROCK = "100*(y-x^2)^2+(1-x)^2"
START = {"x": -1.2, "y": 1.0}


def chained_rosenbrock(n: int) -> str:
    return " + ".join(f"100*(x{i + 1}-x{i}^2)^2+(1-x{i})^2" for i in range(1, n))


# ---------------------------------------------------------------- built-in methods
@pytest.mark.parametrize("method", ["newton", "trust-ncg", "gd", "momentum", "nesterov", "adam"])
def test_every_method_reaches_the_rosenbrock_minimum(method: str) -> None:
    r = minimize(ROSENBROCK, START, method=method)
    assert r.success, r.message
    assert np.abs(r.x - 1).max() < 1e-6
    assert r.grad_norm <= 1e-8 and r.fun < 1e-12
    assert r.nfev >= r.nit and r.njev == r.nfev


def test_second_order_methods_need_few_iterations() -> None:
    newton = minimize(ROSENBROCK, START, method="newton")
    trust = minimize(ROSENBROCK, START, method="trust-ncg")
    assert newton.nit < 40 and newton.nhev == newton.nit
    assert trust.nit < 60 and trust.nhev > trust.nit  # Hessian-vector products, several per step


def test_gradient_descent_is_expected_to_fail_within_a_small_budget() -> None:
    # Expected failure: near the minimum the Hessian's condition number is ~2500, so steepest
    # descent converges linearly at a rate ~(1 - 1/2500) per step and needs ~20,000 steps to
    # reach 1e-6. Within 2000 it must stop short -- and say so rather than claim success.
    r = minimize(ROSENBROCK, START, method="gd", max_iter=2000)
    assert not r.success and r.status == 2
    assert r.message == "maximum number of iterations reached"
    assert r.nit == 2000
    assert np.abs(r.x - 1).max() > 1e-6
    assert r.fun < 24.2  # it did descend from f(x0) = 24.2


def test_a_too_large_learning_rate_diverges_and_is_reported() -> None:
    # Expected failure: heavy ball is stable only for lr < 2(1+beta)/lambda_max ≈ 2.5e-3 here.
    r = minimize(ROSENBROCK, START, method="momentum", lr=0.05)
    assert not r.success and r.status == 5
    assert "not finite" in r.message


def test_fixed_parameters_are_substituted() -> None:
    r = minimize("(x-a)^2 + (y-2*a)^2 + a^2", {"x": 0, "y": 0}, fixed={"a": 3})
    assert r.variables == ["x", "y"]
    assert np.allclose(r.x, [3, 6]) and r.point == {"a": 3.0, "x": r.x[0], "y": r.x[1]}
    assert r.fun == pytest.approx(9)
    # A sequence may list all variables (the fixed one's value is ignored) or only the free ones.
    again = minimize("(x-a)^2 + (y-2*a)^2 + a^2", [100, 0, 0], fixed={"a": 3})
    assert np.allclose(again.x, r.x)
    g = Graph()
    e = parse("a*x + a^2", g)
    assert substitute(e, {"a": 2.0}) == parse("2*x + 4", g)


@pytest.mark.parametrize("method", ["newton", "trust-ncg", "gd", "momentum", "nesterov", "adam"])
def test_bounds_hold_and_the_constrained_minimum_is_found(method: str) -> None:
    # With x <= 0.5 the minimum of Rosenbrock is on the bound, at (0.5, 0.25), where df/dx = -1.
    r = minimize(ROSENBROCK, {"x": 0, "y": 0}, method=method, bounds={"x": (-2, 0.5)},
                 keep_path=True)
    assert r.success, r.message
    assert (r.path[:, 0] <= 0.5).all()
    assert np.allclose(r.x, [0.5, 0.25], atol=1e-6)
    assert r.jac[0] == pytest.approx(-1, abs=1e-5)


def test_start_outside_the_bounds_is_projected() -> None:
    r = minimize("(x-3)^2 + y^2", [10, 1], bounds=[(-1, 1), (None, None)], keep_path=True)
    assert r.path[0].tolist() == [1.0, 1.0]
    assert np.allclose(r.x, [1, 0])


def test_stopping_rules() -> None:
    r = minimize(ROSENBROCK, START, method="adam", lr=1e-4, tol=1e-300, max_time=0.05)
    assert r.status == 3 and not r.success and r.time < 1.0
    # A short step far from the minimum is no convergence: the gradient norm is still ~0.4.
    r = minimize(ROSENBROCK, START, method="gd", xtol=1e-3)
    assert r.status == 1 and not r.success and r.message.startswith("stalled: ")
    assert r.grad_norm > 0.1
    seen: list[OptimizeResult] = []
    r = minimize(ROSENBROCK, START, method="newton", callback=lambda i: seen.append(i) or i.nit == 5)
    assert r.status == 4 and r.nit == 5 and [i.nit for i in seen] == [1, 2, 3, 4, 5]
    assert np.array_equal(seen[-1].x, r.x) and seen[-1].fun == r.fun

    def stop(intermediate: OptimizeResult) -> None:
        raise StopIteration

    assert minimize(ROSENBROCK, START, callback=stop).nit == 1


def test_a_compiled_function_is_reused_across_starts() -> None:
    f = SecondOrder(parse(ROSENBROCK, Graph()))
    program = f.value_grad_hess_program()
    for start in ([-1.2, 1], [2, -1], [0, 3]):
        r = minimize(f, start)
        assert r.success and np.abs(r.x - 1).max() < 1e-6
    assert f.value_grad_hess_program() is program


def test_result_has_scipys_fields() -> None:
    r = minimize(ROSENBROCK, [-1.2, 1], method="newton", keep_path=True)
    for key in ("x", "fun", "jac", "nit", "nfev", "njev", "nhev", "success", "status", "message"):
        assert key in r and getattr(r, key) is r[key]
    assert r.path.shape == (r.nit + 1, 2) and r.path_fun[0] == pytest.approx(24.2)
    assert np.all(np.diff(r.path_fun) <= 0)  # a line search only accepts decrease
    assert "message" in repr(r)
    with pytest.raises(AttributeError):
        _ = r.nonexistent


def test_input_errors_are_symad_errors() -> None:
    with pytest.raises(SymadError, match="unknown method 'sgd'"):
        minimize(ROSENBROCK, START, method="sgd")
    with pytest.raises(SymadError, match="does not take lr"):
        minimize(ROSENBROCK, START, method="newton", lr=0.1)
    with pytest.raises(VariableError, match="missing value for variable y"):
        minimize(ROSENBROCK, {"x": 1})
    with pytest.raises(PointError, match="needs 2 value"):
        minimize(ROSENBROCK, [1, 2, 3])
    with pytest.raises(VariableError, match="cannot fix z"):
        minimize(ROSENBROCK, START, fixed={"z": 1})
    with pytest.raises(PointError, match="empty bounds"):
        minimize(ROSENBROCK, START, bounds={"x": (1, 0)})


def test_batch_value_and_grad_for_multistart() -> None:
    f = parse(ROSENBROCK, Graph()).compile()
    starts = np.random.default_rng(0).uniform(-2, 2, size=(500, 2))
    values, grads = f.value_and_grad(starts)  # one vectorised pass
    assert values.shape == (500,) and grads.shape == (500, 2)
    for k in (0, 123, 499):
        v, g = f.value_and_grad(starts[k])
        assert values[k] == pytest.approx(v, rel=1e-14) and np.allclose(grads[k], g, rtol=1e-14)
    best = starts[np.argmin(values)]
    assert minimize(ROSENBROCK, best).success


# ---------------------------------------------------------------- scipy adapter
@pytest.mark.parametrize("method, derivatives", [
    ("L-BFGS-B", ()), ("BFGS", ()), ("trust-ncg", ("hess",)), ("trust-ncg", ("hessp",)),
    ("Newton-CG", ("hessp",)), ("trust-exact", ("hess",)),
])
def test_scipy_methods_on_exact_derivatives(method: str, derivatives: tuple[str, ...]) -> None:
    so = pytest.importorskip("scipy.optimize")
    s = scipy_functions(ROSENBROCK)
    extra = {name: getattr(s, name) for name in derivatives}
    options = {"L-BFGS-B": {"ftol": 1e-15, "gtol": 1e-10}, "Newton-CG": {"xtol": 1e-10}}.get(
        method, {"gtol": 1e-10})
    r = so.minimize(s.fun, s.x0(START), jac=True, method=method, options=options, **extra)
    assert r.success, r.message
    assert np.abs(r.x - 1).max() < 1e-6


def test_scipy_lbfgsb_with_bounds_and_fixed() -> None:
    so = pytest.importorskip("scipy.optimize")
    s = scipy_functions("100*(y-x^2)^2+(a-x)^2", fixed={"a": 1})
    assert s.variables == ["x", "y"]
    r = so.minimize(s.fun, s.x0({"x": 0, "y": 0, "a": 99}), jac=True, method="L-BFGS-B",
                    bounds=s.bounds({"x": (None, 0.5)}), options={"ftol": 1e-15, "gtol": 1e-10})
    assert r.success and np.allclose(r.x, [0.5, 0.25], atol=1e-6)
    assert s.point(r.x) == {"a": 1.0, "x": r.x[0], "y": r.x[1]}
    assert s.bounds({"x": (None, 0.5)}) == [(None, 0.5), (None, None)]


@pytest.mark.slow
def test_chained_rosenbrock_100_converges_with_lbfgsb() -> None:
    so = pytest.importorskip("scipy.optimize")
    s = scipy_functions(chained_rosenbrock(100))
    assert len(s.variables) == 100 and s.variables[:3] == ["x1", "x2", "x3"]
    x0 = np.array([-1.2 if i % 2 == 0 else 1.0 for i in range(100)])
    r = so.minimize(s.fun, x0, jac=True, method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-10,
                                                                    "maxiter": 5000})
    assert r.success, r.message
    assert np.abs(r.x - 1).max() < 1e-6
    assert r.nfev < 2000  # exact gradients: no 2n finite-difference evaluations per step
    g = s.jac(r.x)
    assert np.allclose(s.hessp(r.x, g), s.hess(r.x) @ g)


def test_separate_value_and_gradient() -> None:
    s = scipy_functions(ROSENBROCK)
    value, grad = s.fun([-1.2, 1])
    assert s.value([-1.2, 1]) == value and np.array_equal(s.jac([-1.2, 1]), grad)


@pytest.mark.parametrize("point", [np.array([-1.2, 1.0]), [-1.2, 1], (-1.2, 1.0), np.array([-1, 1]),
                                   np.array([[-1.2, 1.0], [0.5, 0.25]])])
def test_scipy_calls_go_straight_to_the_function_and_give_the_same_numbers(point) -> None:
    """Without parameters ``fun`` and ``value`` are the compiled function's own (no wrapper a call
    of scipy's); lists, integers and batches are converted as before; with parameters they are passed."""
    s = scipy_functions(ROSENBROCK)
    assert s.fun == s.function.value_and_grad and s.value == s.function.value
    want = parse(ROSENBROCK).compile(backend="python").value_and_grad(np.asarray(point, dtype=float))
    value, grad = s.fun(point)
    assert np.array_equal(value, want[0]) and np.array_equal(grad, want[1])
    assert np.array_equal(s.value(point), want[0])
    p = scipy_functions("100*(y-x^2)^2+(a-x)^2", params={"a": 1.0})
    assert np.array_equal(p.fun(point)[1], grad) and np.array_equal(p.value(point), want[0])


# ---------------------------------------------------------------- CLI
def test_cli_minimize_json() -> None:
    p = symad("minimize", ROSENBROCK, "--from", "x=-1.2,y=1", "--json")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    out = json.loads(p.stdout)
    assert out["success"] is True and out["method"] == "newton"
    assert abs(out["x"]["x"] - 1) < 1e-6 and abs(out["x"]["y"] - 1) < 1e-6
    assert out["iterations"] > 0 and out["evaluations"] >= out["iterations"]
    assert out["grad_norm"] <= 1e-8 and out["time"] > 0
    assert set(out["grad"]) == {"x", "y"}


def test_cli_minimize_summary_trace_and_plot(tmp_path) -> None:
    trace, plot = tmp_path / "path.csv", tmp_path / "path.png"
    p = symad("minimize", ROSENBROCK, "--from", "x=-1.2", "--from", "y=1", "--method", "trust-ncg",
              "--trace", str(trace), "--plot", str(plot))
    assert p.returncode == 0, p.stderr
    lines = dict(line.split(None, 1) for line in p.stdout.splitlines() if not line.startswith("grad"))
    assert lines["status"].startswith("converged") and lines["method"] == "trust-ncg"
    assert abs(float(lines["x"]) - 1) < 1e-6 and abs(float(lines["y"]) - 1) < 1e-6
    assert "iterations" in lines and "evaluations" in lines and lines["time"].endswith("s compiling)")
    assert "\x1b" not in p.stderr and "it/s" not in p.stderr  # no progress bar when piped
    with open(trace, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["iteration", "f", "grad_norm", "x", "y"]
    assert len(rows) == int(lines["iterations"]) + 1
    assert (float(rows[0]["x"]), float(rows[0]["y"]), float(rows[0]["f"])) == (-1.2, 1.0, 24.199999999999996)
    assert abs(float(rows[-1]["x"]) - 1) < 1e-6
    data = plot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_cli_minimize_fix_bounds_and_not_converged() -> None:
    p = symad("minimize", "(x-a)^2+(y-2*a)^2", "--from", "x=0,y=0", "--fix", "a=3",
              "--bounds", "x=-1:1,y=:", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["fixed"] == {"a": 3.0} and set(out["x"]) == {"x", "y"}
    assert out["x"]["x"] == 1.0 and abs(out["x"]["y"] - 6) < 1e-9
    p = symad("minimize", ROSENBROCK, "--from", "x=-1.2,y=1", "--method", "gd", "--max-iter", "5")
    assert p.returncode == 0
    assert "not converged: maximum number of iterations reached" in p.stdout
    assert p.stderr == "symad: warning: did not converge: maximum number of iterations reached\n"
    p = symad("minimize", ROSENBROCK, "--from", "x=-1.2,y=1", "--method", "momentum", "--lr", "0.05",
              "--json")  # diverges: reported without a warning or traceback (PYTHONWARNINGS=error)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["success"] is False and out["value"] in ("inf", "nan") and "not finite" in out["message"]


@pytest.mark.parametrize("args, message", [
    (["minimize", ROSENBROCK, "--from", "x=1"], "--from has no value for y"),
    (["minimize", "x^2+y^2+z^2", "--from", "x=1,y=1,z=1", "--plot", "p.png"], "two free variables"),
    (["minimize", ROSENBROCK, "--from", "x=1,y=1", "--bounds", "x=1"], "--bounds expects name=lo:hi"),
    (["minimize", ROSENBROCK, "--from", "x=1,y=1", "--method", "newton", "--lr", "0.1"], "does not take lr"),
    (["hessian", ROSENBROCK, "--at", "x=1"], "missing value for variable y"),
])
@pytest.mark.slow
def test_cli_errors_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    p = symad(*args)
    assert p.returncode == 2
    assert p.stderr.startswith("symad: error: ") and message in p.stderr
    assert p.stderr.count("\n") == 1 and p.stdout == ""


def test_cli_hessian() -> None:
    p = symad("hessian", ROSENBROCK, "--at", "x=2,y=1", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    x, y = 2.0, 1.0
    assert out["variables"] == ["x", "y"] and out["value"] == 100 * (y - x**2) ** 2 + (1 - x) ** 2
    assert out["hessian"] == [[1200 * x**2 - 400 * y + 2, -400 * x], [-400 * x, 200]]
    text = symad("hessian", ROSENBROCK, "--at", "x=2,y=1").stdout.splitlines()
    assert text[:3] == ["f     = 901", "df/dx = 2402", "df/dy = -600"]
    assert text[3] == "hessian:" and text[5].split() == ["x", "4402", "-800"]
    symbolic = symad("hessian", "x^3*y", "--json")
    entries = json.loads(symbolic.stdout)["hessian"]
    d2_dxdy = parse(entries[0][1], Graph()).compile(["x", "y"])
    assert math.isclose(d2_dxdy.value(x=2, y=5), 12)  # d2/dxdy x^3 y = 3x^2


def test_cli_help_lists_the_commands() -> None:
    p = symad("--help")
    assert "minimize" in p.stdout and "hessian" in p.stdout
    p = symad("minimize", "--help")
    assert "--from" in p.stdout and "--plot" in p.stdout and "trust-ncg" in p.stdout
