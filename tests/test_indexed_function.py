"""IndexedFunction: value and gradient of an expression whose sums stay loops, over whole vectors."""

from __future__ import annotations

import numpy as np
import pytest

import symad
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import PointError, SymadError, VariableError
from symad.indexed_function import IndexedFunction

N = 2 * binders.UNROLL_MAX_TERMS
ROSENBROCK = "n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"


def rosenbrock(x: np.ndarray) -> tuple[float, np.ndarray]:
    """Chained Rosenbrock and its gradient, by hand with NumPy."""
    a, b = x[:-1], x[1:]
    value = float(np.sum(100 * (b - a * a) ** 2 + (1 - a) ** 2))
    grad = np.zeros_like(x)
    grad[:-1] = -400 * a * (b - a * a) - 2 * (1 - a)
    grad[1:] += 200 * (b - a * a)
    return value, grad


def _function(text: str, wrt: list[str] | None = None) -> IndexedFunction:
    return IndexedFunction(symad.parse(text, Graph()), wrt=wrt)


def test_variables_name_vectors_by_their_range() -> None:
    f = _function(f"sum(i = 3..{N}, x[i-2]*x[i+1]*y) + z")
    assert f.variables == (f"x[1..{N + 1}]", "y", "z")
    assert f.size == N + 3 and repr(f) == f"IndexedFunction(x[1..{N + 1}], y, z)"


def test_compile_returns_one_for_a_sum_kept_as_a_loop() -> None:
    f = symad.compile(ROSENBROCK.format(n=N))
    assert isinstance(f, IndexedFunction) and f.variables == (f"x[1..{N}]",)


def test_a_flat_point_a_mapping_and_keywords_agree() -> None:
    f = _function(f"sin(y)*sum(i = 1..{N}, x[i]^2) + y")
    x = np.linspace(-1, 1, N)
    flat = f.value_and_grad(np.append(x, 0.5))
    for other in (f.value_and_grad({"x": x, "y": 0.5}), f.value_and_grad(x=x, y=0.5),
                  f.value_and_grad({"x": x}, {"y": 0.5})):
        assert other[0] == flat[0] and np.array_equal(other[1], flat[1])
    assert f.value(x=x, y=0.5) == flat[0] and np.array_equal(f.grad(x=x, y=0.5), flat[1])
    # the partials by hand: the gradient holds x's partials, then y's
    assert np.allclose(flat[1][:N], 2 * np.sin(0.5) * x, rtol=1e-15, atol=0)
    assert flat[1][N] == pytest.approx(np.cos(0.5) * np.sum(x * x) + 1, rel=1e-13)


def test_data_vectors_are_given_by_name() -> None:
    f = _function(f"sum(i = 1..{N}, d[i]*(x[i] - c)^2)", wrt=["x"])
    assert f.variables == (f"x[1..{N}]",) and f.data == ("c", "d")
    rng = np.random.default_rng(3)
    x, d = rng.standard_normal(N), rng.uniform(1, 2, N)
    value, grad = f.value_and_grad(x, {"d": d, "c": 0.25})
    assert value == pytest.approx(np.sum(d * (x - 0.25) ** 2), rel=1e-13)
    assert np.allclose(grad, 2 * d * (x - 0.25), rtol=1e-15, atol=0)


def test_gradient_text_stays_indexed() -> None:
    n = 10**6
    f = _function(ROSENBROCK.format(n=n))
    (entry,) = f.gradient_text()
    label, text = entry[0], entry[1]
    assert "x[k]" in label
    assert len(text) < 300
    assert "where(2 <= k" in text and "x[k - 1]" in text and "x[k + 1]" in text
    assert f"k <= {n - 1}" in text


def test_a_wrong_length_names_the_vector_and_its_entries() -> None:
    f = _function(f"sum(i = 1..{N}, x[i]^2*y)")
    with pytest.raises(PointError, match=rf"x has {N:,} entries \(x\[1\] to x\[{N}\]\).*\(5,\)"):
        f.value({"x": np.ones(5), "y": 1.0})
    with pytest.raises(PointError, match=rf"{N + 1:,}"):
        f.value(np.ones(5))


def test_a_missing_vector_or_scalar_is_named() -> None:
    f = _function(f"sum(i = 1..{N}, x[i]^2*y)")
    with pytest.raises(PointError, match="x"):
        f.value({"y": 1.0})
    with pytest.raises(PointError, match="y"):
        f.value({"x": np.ones(N)})
    g = _function(f"sum(i = 1..{N}, x[i]*d[i])", wrt=["x"])
    with pytest.raises(PointError, match="d"):
        g.value({"x": np.ones(N)})


def test_an_unknown_name_to_differentiate_is_named() -> None:
    with pytest.raises(VariableError, match="z is not a variable or vector.*x, y"):
        _function(f"sum(i = 1..{N}, x[i]^2*y)", wrt=["z"])


def test_a_sum_free_of_the_outer_index_is_evaluated() -> None:
    # sum(i, sum(j, x[j])) is N*sum(j, x[j]), its sum at nesting level 1 though none encloses it
    f = _function(f"sum(i = 1..{N}, sum(j = 1..{N}, x[j]))")
    x = np.arange(N, dtype=float)
    value, grad = f.value_and_grad(x)
    assert value == N * np.sum(x) and np.all(grad == N)


def test_rosenbrock_with_a_million_variables_matches_numpy() -> None:
    n = 10**6
    f = _function(ROSENBROCK.format(n=n))
    x = np.random.default_rng(6).uniform(-2, 2, n)
    value, grad = f.value_and_grad(x)
    want_value, want_grad = rosenbrock(x)
    assert value == pytest.approx(want_value, rel=1e-12)
    scale = np.abs(want_grad) + 400 * np.abs(x) ** 3 + 1  # the terms' sizes: cancellation is bounded by them
    assert np.all(np.abs(grad - want_grad) <= 1e-12 * scale)
    assert np.max(np.abs(grad - want_grad) / np.maximum(np.abs(want_grad), 1)) < 1e-12


def test_stride_two_values_and_gradient_and_a_clear_error_where_strides_clash() -> None:
    f = IndexedFunction(symad.parse(f"sum(i = 1..{N}, x[2*i]^2)", Graph()))
    x = np.linspace(-1, 1, 2 * N - 1)  # x[2..2N]: the odd entries between are read by no term
    value, grad = f.value_and_grad({"x": x})
    assert value == pytest.approx(float(np.sum(x[::2] ** 2)), rel=1e-14)
    want = np.zeros_like(x)
    want[::2] = 2 * x[::2]
    np.testing.assert_array_equal(grad, want)
    with pytest.raises(SymadError, match="stride"):
        IndexedFunction(symad.parse(f"sum(i = 1..{N}, x[2*i]*x[i])", Graph()))


def test_an_entry_given_on_its_own_replaces_that_entry_and_an_unknown_name_is_refused() -> None:
    """`x=1,x[1]=100` was 400 for sum(x[i]), the entry dropped without a word; on the command line a
    name the expression does not use (`z`) was ignored where an expression without loops refuses it
    (from Python a mapping of data may hold more names, as before)."""
    from support.cli_helpers import run

    f = symad.compile("sum(i = 1..400, x[i]^2)")
    assert f.value({"x": np.ones(400), "x[1]": 10.0}) == 499.0
    assert f.value({"x": 1.0, "x[400]": 3.0}) == 408.0  # one number for every entry, then one entry
    assert f.value({"x": np.ones(400), "z": 1.0}) == 400.0  # a mapping of data may hold more
    for point, message in [({"x[1]": 10.0}, "given without x"),
                           ({"x": np.ones(400), "x[401]": 1.0}, r"x\[401\] is outside x\[1..400\]")]:
        with pytest.raises(symad.SymadError, match=message):
            f.value(point)
    assert run("eval", "sum(i = 1..400, x[i])", "--at", "x=1,x[1]=100").stdout.strip() == "499"
    p = run("grad", "sum(i = 1..400, x[i])", "--at", "x=1,z=3")
    assert p.returncode == 2 and "unknown variable z" in p.stderr
    shown = run("explain", "sum(i = 1..400, x[i]^2)", "--at", "x=1,x[1]=100").stdout
    assert shown.rstrip().endswith("df/dx[1] = 200")


def test_a_number_fills_a_vector_and_a_base_name_spreads_over_entries_as_without_loops() -> None:
    """`{"x": 1.0}` was refused (shape ()) though `{"x": 1.0, "x[3]": 2}` and the command line's
    `x=1` took it; `{"y": [1, 2, 3]}` for entries kept as scalars (`y[1]`, `y[2]`, `y[10]`) was
    refused though a function without loops spreads it over them in the order of their indices."""
    f = _function(f"sum(i = 1..{N}, x[i]^2) + y[1] - y[2] + 10*y[10]")
    written_out = symad.compile("y[1] - y[2] + 10*y[10]")
    assert f.value({"x": 2.0, "y[1]": 1, "y[2]": 2, "y[10]": 3}) == 4 * N + 29
    assert f.value({"x": 2.0, "y": [1, 2, 3]}) == 4 * N + 29 == 4 * N + written_out.value({"y": [1, 2, 3]})
    assert f.value({"x": 0.0, "y": 1.0}) == 10.0  # one number for every entry, as without loops
    _, g = f.value_and_grad({"x": np.arange(N, dtype=float), "y": [1, 2, 3]})
    assert g[-3:].tolist() == [1.0, -1.0, 10.0] and g[5] == 10.0
    for point, message in [({"x": 0.0, "y": [1, 2], "y[1]": 1}, r"y\[1\] is given twice"),
                           ({"x": 0.0, "y": [1, 2]}, r"y stands for 3 .*y\[1\], y\[2\], y\[10\]"),
                           ({"x": [1.0, 2.0], "y": 1.0}, rf"x has {N:,} entries")]:
        with pytest.raises(PointError, match=message):
            f.value(point)
