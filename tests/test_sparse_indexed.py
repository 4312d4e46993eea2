"""Sparse Hessians of sums kept as loops: patterns read from the loops' entries against the same
text written out, values against the written-out Hessian and finite differences, bands as text."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from support.loops import loop_bodies, looping, parse_looped, parse_unrolled
from support.properties import property_test

import symad
from symad.ad import sparse_values, sparsity
from symad.core import binders
from symad.indexed_function import IndexedFunction
from symad.second_order import SecondOrder

N = 12  # a loop under the lowered limit (support.loops), written out under the default one

TEXTS = {
    "rosenbrock": f"sum(i = 1..{N - 1}, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)",
    "scalar": f"sum(i = 1..{N - 1}, y*x[i+1]*x[i]^2) + y^3",
    "offsets at the edges": f"sum(i = 3..{N - 2}, exp(x[i-2]*x[i+2]) + x[i]^2) + x[1]*x[{N}]",
    "linear variables": f"sum(i = 1..{N}, x[i]^2 + 3*z[i]) + 2*y",
    "reversed": f"sum(i = 1..{N}, x[{N + 1}-i]*x[i] + sin(x[i]))",
    "two vectors": f"sum(i = 2..{N}, (x[i] - u[i-1])^2*u[i])",
    "branches": f"sum(i = 2..{N - 1}, where(x[i] > 0, x[i+1], -x[i-1])*max(x[i], x[i+1]) + abs(x[i-1]))",
    "smooth functions": f"sum(i = 2..{N - 1}, exp(-x[i]^2)*tanh(x[i+1]) + log(1 + x[i-1]^2)/(2 + sin(y)))",
    "index as a number": f"sum(i = 1..{N}, (x[i] - i/10)^2*x[{N + 1}-i])",
    # entries at a fixed index beside the loop, inside what the gradient's rows capture (once left out)
    "fixed entries beside": f"sum(i = 1..{N}, x[i]^3) + x[5]^2*x[7] + sin(x[2]*y) + exp(x[3])*x[5]",
}


def functions(text: str) -> tuple[IndexedFunction, SecondOrder]:
    looped = IndexedFunction(parse_looped(text))
    names = []
    for name in looped.wrt:  # the written-out variables in the looped function's flat order
        span = looped.spans.get(name)
        names += [name] if span is None else [f"{name}[{k}]" for k in range(span[0][0], span[0][1] + 1)]
    unrolled = parse_unrolled(text)
    written = SecondOrder(unrolled, variables=names, backend="python") if set(unrolled.variables) <= set(names) \
        else None
    assert written is not None, names
    return looped, written


def lower_set(rows: np.ndarray, cols: np.ndarray) -> set[tuple[int, int]]:
    return set(zip(rows.tolist(), cols.tolist()))


@pytest.mark.parametrize("name", list(TEXTS))
def test_pattern_and_values_match_the_written_out_form(name: str) -> None:
    looped, written = functions(TEXTS[name])
    rows, cols = looped.hessian_pattern()
    assert np.all(rows >= cols) and np.all(np.diff(rows * looped.size + cols) > 0)
    assert lower_set(rows, cols) == lower_set(*written.hessian_pattern())  # the same structure, not unrolled
    rng = np.random.default_rng(3)
    for _ in range(2):
        point = rng.uniform(-1.5, 1.5, looped.size)
        dense = written.hessian(point)
        nonzero = {(r, c) for r, c in zip(*np.nonzero(dense)) if r >= c}
        assert nonzero <= lower_set(rows, cols)
        # forward over reverse against reverse over reverse: the same derivatives, summed in other orders
        scale = np.abs(dense).max() + 1.0
        np.testing.assert_allclose(looped.hessian(point), dense, rtol=0, atol=1e-13 * scale)
        H = looped.sparse_hessian(point)
        np.testing.assert_allclose(H.toarray(), dense, rtol=0, atol=1e-13 * scale)


def test_rosenbrock_is_tridiagonal_and_matches_finite_differences() -> None:
    n = 1000
    f = symad.compile(f"n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)")
    rows, cols = f.hessian_pattern()
    assert rows.size == 2 * n - 1 and np.all(rows - cols <= 1)
    x = np.random.default_rng(0).uniform(-1, 1, n)
    H = f.sparse_hessian(x)
    assert H.nnz == 3 * n - 2
    # The gradient is a cubic polynomial: a central difference's error is h^2/6 times its third
    # derivative (at most 2400 per entry, 2 terms a row) plus rounding (eps*|g|/h, |g| < 10^4).
    h = 1e-4
    for j in (0, 1, n // 2, n - 1):
        e = np.zeros(n)
        e[j] = h
        column = (f.grad(x + e) - f.grad(x - e)) / (2 * h)
        np.testing.assert_allclose(H[:, j].toarray().ravel(), column, rtol=0, atol=h * h / 6 * 4800 + 1e-16 * 1e4 / h)


def test_strides_and_products_from_the_index_structure() -> None:
    """x[2*i] and a prod: the pattern (read without unrolling) against the written-out one, where
    the indexed gradient does not go yet."""
    for text in (f"sum(i = 1..{N}, x[2*i]*x[2*i-1]^2)", f"prod(i = 1..{N}, x[i]) + sum(i = 1..{N}, x[i]^2)"):
        with looping():
            looped = parse_looped(text)
        g = looped.graph
        span = binders.index_span(g, [looped.id])
        ((low, high),) = span["x"]
        layout = sparsity.Layout({}, {"x": (0, low, high)}, high - low + 1)
        rows, cols = sparsity.hessian_pattern(g, looped.id, layout)
        written = symad.compile(parse_unrolled(text), variables=[f"x[{k}]" for k in range(low, high + 1)])
        assert lower_set(rows, cols) == lower_set(*written.hessian_pattern()), text


def test_nested_loops_are_read_as_a_dense_block() -> None:
    n = 20  # an inner loop past UNROLL_INSIDE_LOOP stays a loop
    f = IndexedFunction(parse_looped(f"sum(i = 1..{n}, sum(j = 1..{n}, A[i,j]*x[i]*x[j]))"), wrt=["x"])
    rows, cols = f.hessian_pattern()
    assert rows.size == n * (n + 1) // 2


def test_constant_and_linear_functions_have_empty_patterns() -> None:
    f = IndexedFunction(parse_looped(f"sum(i = 1..{N}, 2*x[i] + c[i])"), wrt=["x"])
    rows, _ = f.hessian_pattern()
    assert rows.size == 0
    data = {"c": np.ones(N)}
    assert f.hessian_values(np.ones(N), data).size == 0
    assert f.sparse_hessian(np.ones(N), data).nnz == 0


def test_hessian_text_bands() -> None:
    f = symad.compile("n = 20000; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)")
    bands = f.hessian_text()
    assert [(row, col, rng) for row, col, _, rng in bands] == [("x[k]", "x[k]", (1, 20000)),
                                                             ("x[k]", "x[k+1]", (1, 19999))]
    assert "x[k]" in bands[1][2]
    looped = IndexedFunction(parse_looped(TEXTS["scalar"]))
    labels = [(row, col) for row, col, _, _ in looped.hessian_text()]
    assert labels == [("x[k]", "x[k]"), ("x[k]", "x[k+1]"), ("x[k]", "y"), ("y", "y")]
    reversed_ = IndexedFunction(parse_looped(TEXTS["reversed"]))
    assert any(col == f"x[{N + 1} - k]" for _, col, _, _ in reversed_.hessian_text())


def test_lagrangian_of_a_constraint_family_with_multipliers_as_data() -> None:
    n = 30
    text = f"sigma*sum(i = 1..{n - 1}, (x[i+1] - x[i])^2) + sum(i = 1..{n - 1}, lam[i]*(x[i+1] - x[i]^2))"
    L = IndexedFunction(parse_looped(text), wrt=["x"])
    rng = np.random.default_rng(1)
    point, data = rng.uniform(-1, 1, n), {"sigma": 0.5, "lam": rng.uniform(-1, 1, n - 1)}
    H = L.sparse_hessian(point, data).toarray()
    written = symad.compile(parse_unrolled(text), wrt=[f"x[{k}]" for k in range(1, n + 1)])
    params = {"sigma": 0.5, **{f"lam[{k + 1}]": v for k, v in enumerate(data["lam"])}}
    want = SecondOrder(written.expr, wrt=list(written.variables)).hessian(point, params)
    np.testing.assert_allclose(H, want, rtol=0, atol=1e-13)


def test_dense_second_order_entry_points_point_at_the_sparse_hessian() -> None:
    text = "n = 20000; sum(i = 1..n-1, (x[i+1] - x[i]^2)^2)"
    for entry in (SecondOrder, symad.hessian):
        with pytest.raises(symad.SymadError, match="sparse_hessian"):
            entry(text)


@pytest.mark.parametrize("name", list(TEXTS))
def test_bands_and_hessian_vector_products_agree(name: str) -> None:
    """The values from the bands compiled as loops, and from products along colours."""
    f = IndexedFunction(parse_looped(TEXTS[name]))
    point = np.random.default_rng(4).uniform(-1.5, 1.5, f.size)
    from_bands = f.hessian_values(point)
    assert f._bands is not None and f._bands.covers
    colours = sparse_values.Compression(*f.hessian_pattern(), f.size, f.size, lower=True)
    from_products = colours.values(lambda d: f.hessp(point, d))
    np.testing.assert_allclose(from_bands, from_products, rtol=1e-13, atol=1e-13)


def test_nested_loops_take_the_products() -> None:
    n = 20
    f = IndexedFunction(parse_looped(f"sum(i = 1..{n}, sum(j = 1..{n}, A[i,j]*x[i]*x[j]) + x[i]^4)"), wrt=["x"])
    rng = np.random.default_rng(6)
    A, x = rng.uniform(-1, 1, (n, n)), rng.uniform(-1, 1, n)
    H = f.hessian(x, {"A": A})
    assert f._bands is not None and not f._bands.covers
    np.testing.assert_allclose(H, A + A.T + np.diag(12 * x**2), rtol=1e-13, atol=1e-13)


# Hessians that are not bands: each entry coupled with every other through a loop in the gradient.
NOT_BANDS = {
    "squared sum": f"sum(i = 1..{N}, x[i])^2 + sum(i = 1..{N}, x[i]^4)",
    "product": f"prod(i = 1..{N}, 1 + x[i]/4)",
    "a sum's sine times entries": f"sin(sum(i = 1..{N}, x[i]^2))*y + sum(i = 1..{N}, y*x[i])",
}


@pytest.mark.parametrize("name", [*TEXTS, *NOT_BANDS])
def test_the_bands_are_printed_exactly_where_they_hold_the_whole_hessian(name: str) -> None:
    """hessian_text prints bands only where they hold every structural nonzero (hessian_values'
    own test of them, checked above against the written-out Hessian); else it refuses, never
    printing part of the Hessian (it once printed a product's diagonal alone)."""
    looped, written = functions({**TEXTS, **NOT_BANDS}[name])
    point = np.random.default_rng(5).uniform(-1.5, 1.5, looped.size)
    rows, cols = looped.hessian_pattern()
    np.testing.assert_allclose(looped.hessian_values(point), written.hessian(point)[rows, cols], rtol=1e-12,
                               atol=1e-12)
    assert prints_bands(looped) == looped._bands.covers == (name in TEXTS)


def prints_bands(f: IndexedFunction) -> bool:
    """Whether ``f.hessian_text()`` prints bands (else it refuses, saying the Hessian is not bands)."""
    try:
        f.hessian_text()
    except symad.SymadError as err:
        assert "not a few bands" in str(err)
        return False
    return True


@property_test(60)
@given(body=loop_bodies(), wrap=st.sampled_from(["{s}", "({s})^2", "y*{s}", "sin({s})"]),
       beside=st.sampled_from(["", " + x[5]^2*x[7]", " + x[1]*y^2", " + exp(x[3])*x[46]"]))
def test_random_loops_print_their_bands_exactly_where_they_hold_the_hessian(body, wrap, beside) -> None:
    """For any loop: hessian_text prints bands only where they hold every structural nonzero
    (hessian_values' own criterion), else refuses; and the pattern holds the written-out Hessian's
    nonzeros."""
    text = wrap.format(s=f"sum(i = 3..42, {body('i')})") + beside
    with looping():
        expr = symad.parse(text, symad.Graph())
    assume(binders.has_scoped(expr.graph, [expr.id]))  # else the body simplified to something free of i
    looped, written = functions(text)
    point = np.random.default_rng(11).uniform(-1.5, 1.5, looped.size)
    rows, cols = looped.hessian_pattern()
    dense = written.hessian(point)
    assert {(r, c) for r, c in zip(*np.nonzero(dense)) if r >= c} <= lower_set(rows, cols)
    looped.hessian_values(point)  # (its bands, and whether they cover the pattern)
    assert prints_bands(looped) == looped._bands.covers, text
