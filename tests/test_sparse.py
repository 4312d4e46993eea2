"""Sparse derivatives of written-out expressions: the patterns read off the DAG never miss a
nonzero of the dense symbolic Hessian or Jacobian, and the values at them are the dense ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.expressions import expressions

import symad
from symad.ad import sparsity
from symad.core.dag import Graph
from symad.core.errors import SymadError
from symad.second_order import SecondOrder

NAMES = ("x", "y", "z", "w")
# every op of the table, arguments in their domains three times in four
ANY = expressions(3, variables=NAMES, numbers=("0.5", "2", "3", "1.5"))
POINTS = [np.array([0.3, -0.7, 1.1, 0.45]), np.array([-1.2, 0.9, 0.25, -0.6])]


def dense_lower(matrix: np.ndarray) -> set[tuple[int, int]]:
    """The lower triangle's entries that are not 0 (nan and inf count: a value, not a zero)."""
    rows, cols = np.nonzero((matrix != 0) | ~np.isfinite(matrix))
    return {(r, c) for r, c in zip(rows.tolist(), cols.tolist()) if r >= c}


def pattern_set(rows: np.ndarray, cols: np.ndarray) -> set[tuple[int, int]]:
    return set(zip(rows.tolist(), cols.tolist()))


def check_sorted_lower(rows: np.ndarray, cols: np.ndarray) -> None:
    assert rows.dtype == np.int64 and cols.dtype == np.int64
    assert np.all(rows >= cols)
    keys = rows * 10**6 + cols
    assert np.all(np.diff(keys) > 0)  # row-major, no repeats


@settings(max_examples=60)
@given(parts=st.tuples(ANY, ANY, ANY), join=st.sampled_from(["({0})*({1}) + ({2})", "({0})/({1}) - ({2})",
                                                             "({0}) + ({1})*({2})"]))
def test_hessian_pattern_never_misses_a_nonzero(parts: tuple[str, str, str], join: str) -> None:
    text = join.format(*parts)
    f = SecondOrder(symad.parse(text, Graph()), variables=list(NAMES), backend="python")
    rows, cols = f.hessian_pattern()
    check_sorted_lower(rows, cols)
    found = pattern_set(rows, cols)
    with np.errstate(all="ignore"):
        for point in POINTS:
            dense = f.hessian(point)
            missed = dense_lower(dense) - found
            assert not missed, (text, missed)
            values = f.hessian_values(point)
            np.testing.assert_allclose(values, dense[rows, cols], rtol=1e-12, atol=1e-300, equal_nan=True)


@settings(max_examples=40)
@given(texts=st.lists(ANY, min_size=1, max_size=3))
def test_jacobian_pattern_never_misses_a_nonzero(texts: list[str]) -> None:
    F = symad.VectorFunction(texts, variables=list(NAMES), backend="python")
    rows, cols = F.jacobian_pattern()
    found = pattern_set(rows, cols)
    with np.errstate(all="ignore"):
        for point in POINTS:
            dense = F.jacobian(point)
            nonzero = {(r, c) for r, c in zip(*np.nonzero((dense != 0) | ~np.isfinite(dense)))}
            assert not nonzero - found, (texts, nonzero - found)
            np.testing.assert_allclose(F.jacobian_values(point), dense[rows, cols], rtol=1e-12, equal_nan=True)


def test_patterns_of_known_structure() -> None:
    f = symad.compile("x*y + sin(z) + w + abs(x) + where(x*y < 1, z, 2*z)", variables=list(NAMES))
    # x*y joins x and y; sin(z) meets itself; w, abs and the where's arms are linear
    assert pattern_set(*f.hessian_pattern()) == {(1, 0), (2, 2)}
    constant = symad.compile("3 + 0*x", variables=["x"])
    assert constant.hessian_pattern()[0].size == 0 and constant.hessian_values([1.0]).size == 0
    assert constant.sparse_hessian([1.0]).nnz == 0
    linear = symad.compile("2*x - y + 4", variables=["x", "y"])
    assert linear.hessian_pattern()[0].size == 0


def test_op_rules_come_from_the_table() -> None:
    assert sparsity.op_rules("add") == ((0, ()), (1, ()))
    assert sparsity.op_rules("mul") == ((0, (1,)), (1, (0,)))
    assert sparsity.op_rules("div") == ((0, (1,)), (1, (0, 1)))
    assert sparsity.op_rules("sign") == ()  # a derivative 0: no dependence passes
    assert sparsity.op_rules("where") == ((1, ()), (2, ()))  # linear in its arms, not its condition


def test_lagrangian_with_parameters() -> None:
    """σ∇²f + Σλᵢ∇²cᵢ as one expression whose multipliers are parameters."""
    text = "sigma*(x1*x4*(x1 + x2 + x3) + x3) + lam1*(x1*x2*x3*x4) + lam2*(x1^2 + x2^2 + x3^2 + x4^2)"
    L = symad.compile(text, wrt=["x1", "x2", "x3", "x4"])
    point, params = [1, 5, 5, 1], {"sigma": 0.5, "lam1": -0.3, "lam2": 1.7}
    dense = SecondOrder(L.expr, wrt=["x1", "x2", "x3", "x4"]).hessian(point, params)
    H = L.sparse_hessian(point, params)
    np.testing.assert_allclose(H.toarray(), dense, rtol=1e-14)
    assert (H != H.T).nnz == 0


def test_batches_and_errors() -> None:
    f = symad.compile("x^2*y + y^3", variables=["x", "y"])
    batch = f.hessian_values(np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert batch.shape == (2, f.hessian_pattern()[0].size)
    np.testing.assert_allclose(batch[1], f.hessian_values([3.0, 4.0]))
    with pytest.raises(SymadError, match="one point"):
        f.sparse_hessian(np.array([[1.0, 2.0], [3.0, 4.0]]))


def test_missing_scipy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_scipy(name: str, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        if name.startswith("scipy"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_scipy)
    f = symad.compile("x*y", variables=["x", "y"])
    with pytest.raises(SymadError, match=r'pip install "symad\[scipy\]"'):
        f.sparse_hessian([1.0, 2.0])


def test_objective_over_data() -> None:
    rng = np.random.default_rng(2)
    data = {"t": rng.uniform(0, 1, 50), "y": rng.uniform(-1, 1, 50)}
    fit = symad.objective("(a*exp(-k*t) + b - y)^2 + lam*b^2", data=data, wrt=["a", "b", "k", "c"],
                          reduce="mean") + "c^2*a + lam*k^2"
    rows, cols = fit.hessian_pattern()
    assert pattern_set(rows, cols) == {(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (3, 0), (3, 3)}
    w, params = [0.5, -0.2, 1.3, 0.7], {"lam": 0.25}
    for picked in (None, np.arange(10)):
        dense = fit.hessian(w, params, rows=picked)
        np.testing.assert_allclose(fit.hessian_values(w, params, rows=picked), dense[rows, cols], rtol=1e-13)
        np.testing.assert_allclose(fit.sparse_hessian(w, params, rows=picked).toarray(), dense, rtol=1e-13)
