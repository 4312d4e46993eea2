"""symad.minimize on an objective whose sums stay loops: symad's own methods over its whole
vectors (value, gradient and Hessian-vector products as loops), the same path as written out."""

from __future__ import annotations

import numpy as np
import pytest

import symad
from symad.core import binders

N = 2 * binders.UNROLL_MAX_TERMS  # long enough to stay a loop
LOOPED = f"n = {N}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"
WRITTEN = " + ".join(f"100*(x[{i + 1}] - x[{i}]^2)^2 + (1 - x[{i}])^2" for i in range(1, N))


@pytest.mark.parametrize("method", ["newton", "trust-ncg", "gd"])
def test_a_loop_objective_takes_the_path_of_its_written_out_form(method: str) -> None:
    x0 = 1 + 0.3 * np.sin(np.arange(N))
    looped = symad.minimize(LOOPED, x0, method=method, max_iter=30)
    written = symad.minimize(WRITTEN, x0, method=method, max_iter=30)
    assert looped.nit == written.nit and looped.hessian == written.hessian
    np.testing.assert_allclose(looped.point["x"], written.x, rtol=1e-9, atol=1e-12)
    assert looped.fun == pytest.approx(written.fun, rel=1e-9, abs=1e-18)


def test_a_loop_objective_converges_from_a_point_given_by_vector_name() -> None:
    r = symad.minimize(LOOPED, {"x": 1.1})  # one number for every entry
    assert r.success and r.fun < 1e-16 and np.allclose(r.point["x"], 1)
    assert r.variables[:2] == ["x[1]", "x[2]"] and len(r.variables) == N


def test_the_result_names_its_variables_without_a_string_each_until_read() -> None:
    """A loop objective's names are made when read (a million of them were 60 MB of a run of the
    command line); they read as the list they stand for."""
    from symad.optimize.loops import Labels, Layout

    r = symad.minimize(f"sum(i = 1..{N}, (x[i] - i)^2) + (y - 2)^2", {"x": 0, "y": 0}, method="l-bfgs-b")
    names = [f"x[{i}]" for i in range(1, N + 1)] + ["y"]
    assert isinstance(r.variables, Labels) and r.variables == names and list(r.variables) == names
    assert r.variables[0] == "x[1]" and r.variables[-1] == "y" and r.variables[N - 2:N] == names[N - 2:N]
    assert repr(r.variables) == f"Labels(x[1..{N}], y)" and r.variables != names[:-1]
    with pytest.raises(IndexError):
        Labels(Layout([["a", "b"]]))[2]


def test_bounds_on_a_whole_vector() -> None:
    r = symad.minimize(LOOPED, np.zeros(N), bounds={"x": (-0.5, 0.5)})
    assert r.success and r.point["x"].max() <= 0.5 and r.point["x"].min() >= -0.5
    assert r.point["x"][0] == 0.5  # the first entry is held at its bound


@pytest.mark.parametrize("given, message", [
    (np.zeros(N - 1), f"x0 needs {N:,} numbers"),
    ({"y": 1.0}, "y is not a variable of the problem"),
])
def test_bad_start_points_are_clear_errors(given, message: str) -> None:
    with pytest.raises(symad.SymadError, match=message):
        symad.minimize(LOOPED, given)


def test_fixed_and_params_hold_whole_names_given_to_the_loops_as_data() -> None:
    """fixed and params with loops (they were refused): a scalar or a whole vector held at its
    value, not a variable of the problem; an entry is held by its bounds, as the error says."""
    text = f"sum(i = 1..{N}, (x[i] - c*d[i])^2) + (y - c)^2"
    d = np.arange(1.0, N + 1)
    r = symad.minimize(text, {"x": 0, "y": 0}, method="l-bfgs-b", fixed={"c": 2.0}, params={"d": d})
    assert r.success and list(r.point) == ["x", "y"] and r.variables[-1] == "y" and len(r.variables) == N + 1
    np.testing.assert_allclose(r.point["x"], 2 * d, rtol=1e-12)
    assert r.point["y"] == pytest.approx(2.0, rel=1e-12)
    newton = symad.minimize(text, {"x": 0, "y": 0}, method="newton", fixed={"c": 2.0, "d": 1.5})  # one number: d
    np.testing.assert_allclose(newton.point["x"], 3.0, rtol=1e-12)
    with pytest.raises(symad.SymadError, match=r"an entry such as x\[1\] is held by its bounds"):
        symad.minimize(LOOPED, np.zeros(N), fixed={"x[1]": 0.0})
    with pytest.raises(symad.SymadError, match="z held \\(fixed or params\\) is not a variable of the objective"):
        symad.minimize(text, {"x": 0, "y": 0}, fixed={"z": 1.0})


@pytest.mark.parametrize("method", ["trust-constr", "ipopt"])
def test_held_names_reach_every_piece_of_a_constrained_problem(method: str) -> None:
    """fixed and params with constraints: each piece (the objective, a scalar constraint, a family)
    reading a held name gets it, a vector cut to its own range; the same iterates, bit for bit, as
    the problem with the values written into its texts."""
    if method == "ipopt":
        pytest.importorskip("cyipopt")
    pytest.importorskip("scipy")
    n = 500
    d = np.arange(1.0, n + 1)
    held = symad.minimize(f"sum(i = 1..{n}, (x[i] - c*d[i])^2)", {"x": 0}, method=method, fixed={"c": 2.0},
                          params={"d": d}, constraints=[("eq", f"sum(i = 1..{n}, x[i]*d[i]) - c*100"),
                                                        ("ineq", f"each(i = 2..{n}, x[i] - x[i-1] + c*d[i-1]/1000)")])
    written = symad.minimize(f"sum(i = 1..{n}, (x[i] - 2*i)^2)", {"x": 0}, method=method,
                             constraints=[("eq", f"sum(i = 1..{n}, x[i]*i) - 200"),
                                          ("ineq", f"each(i = 2..{n}, x[i] - x[i-1] + 2*(i-1)/1000)")])
    assert held.success and written.success and list(held.variables) == list(written.variables)
    assert np.array_equal(held.x, written.x) and held.nit == written.nit
    x = held.point["x"]
    assert abs(x @ d - 200) <= 1e-6 and (np.diff(x) + 2 * d[:-1] / 1000).min() >= -1e-6  # checked here


def test_a_held_vectors_array_covers_the_range_its_pieces_read_together() -> None:
    pytest.importorskip("scipy")
    n = 400
    objective = f"sum(i = 1..{n}, (x[i] - d[i])^2)"
    family = f"each(i = 1..{n}, x[i] - d[i+1])"  # reads d[2..n+1]: together d[1..n+1]
    with pytest.raises(symad.SymadError, match=r"d is held with shape \(400,\): its pieces read d\[1..401\]"):
        symad.minimize(objective, {"x": 0}, method="trust-constr", fixed={"d": np.zeros(n)},
                       constraints=[("ineq", family)])
    d = np.arange(n + 1.0)
    r = symad.minimize(objective, {"x": 0}, method="trust-constr", fixed={"d": d}, constraints=[("ineq", family)])
    assert r.success and np.allclose(r.point["x"], np.maximum(d[:-1], d[1:]), atol=1e-4)
    with pytest.raises(symad.SymadError, match="q held \\(fixed or params\\) is not a variable of the problem"):
        symad.minimize(objective, {"x": 0}, method="trust-constr", fixed={"q": 1.0}, constraints=[("ineq", family)])


def test_a_name_held_only_in_a_written_out_constraint_is_substituted_there() -> None:
    pytest.importorskip("scipy")
    n = 500
    held = symad.minimize(f"sum(i = 1..{n}, (x[i] - i)^2)", {"x": 0}, method="trust-constr", fixed={"c": 0.5},
                          constraints=[("ineq", "c - x[1]")])
    written = symad.minimize(f"sum(i = 1..{n}, (x[i] - i)^2)", {"x": 0}, method="trust-constr",
                             constraints=[("ineq", "0.5 - x[1]")])
    assert held.success and np.array_equal(held.x, written.x)
    assert held.point["x"][0] == pytest.approx(0.5, abs=1e-3)  # (trust-constr's interior point: inside the bound)
