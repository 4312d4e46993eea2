"""each(...) families as outputs: values, sparse Jacobians read from the index structure, jvp and
vjp, against the same outputs written out one by one."""

from __future__ import annotations

import numpy as np
import pytest
from support.loops import looping

import symad
from symad.ad import sparse_values
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import PointError, SymadError
from symad.indexed_vector_function import IndexedVectorFunction

N = 12

# (looped text, the same outputs written out)
CASES = {
    "chain": (f"each(i = 1..{N - 1}, x[i+1] - x[i]^2)", [f"x[{i + 1}] - x[{i}]^2" for i in range(1, N)]),
    "offsets and a scalar": (f"each(i = 3..{N - 1}, x[i+1]*x[i-2] + y*x[i]); y^2 - x[1]",
                             [f"x[{i + 1}]*x[{i - 2}] + y*x[{i}]" for i in range(3, N)] + ["y^2 - x[1]"]),
    "two families and a sum": (f"each(i = 1..{N}, exp(x[i]) - u[i]); each(i = 2..{N}, x[i] - x[i-1]*u[i]);"
                               f" sum(i = 1..{N}, x[i]^2) - 1",
                               [f"exp(x[{i}]) - u[{i}]" for i in range(1, N + 1)]
                               + [f"x[{i}] - x[{i - 1}]*u[{i}]" for i in range(2, N + 1)]
                               + [" + ".join(f"x[{i}]^2" for i in range(1, N + 1)) + " - 1"]),
    "reversed": (f"each(i = 1..{N}, x[{N + 1}-i]*x[i])", [f"x[{N + 1 - i}]*x[{i}]" for i in range(1, N + 1)]),
}


def looped(text: str) -> IndexedVectorFunction:
    with looping():
        exprs = symad.parse_outputs(text, Graph())
    assert any(binders.has_scoped(e.graph, [e.id]) for e in exprs)
    return IndexedVectorFunction(exprs)


def written(F: IndexedVectorFunction, texts: list[str]) -> symad.VectorFunction:
    names = []
    for name in F.wrt:
        span = F.spans.get(name)
        names += [name] if span is None else [f"{name}[{k}]" for k in range(span[0][0], span[0][1] + 1)]
    return symad.VectorFunction(texts, variables=names, backend="python")


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_jacobians_match_the_written_out_outputs(name: str) -> None:
    text, texts = CASES[name]
    F = looped(text)
    W = written(F, texts)
    assert len(F) == len(texts)
    rows, cols = F.jacobian_pattern()
    assert np.all(np.diff(rows * F.size + cols) > 0)
    assert set(zip(rows.tolist(), cols.tolist())) == set(zip(*map(np.ndarray.tolist, W.jacobian_pattern())))
    rng = np.random.default_rng(5)
    for _ in range(2):
        x = rng.uniform(-1.5, 1.5, F.size)
        values, dense = W.value_and_jacobian(x)
        np.testing.assert_allclose(F.value(x), values, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(F.jacobian(x), dense, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(F.sparse_jacobian(x).toarray(), dense, rtol=1e-14, atol=1e-14)
        u, v = rng.uniform(-1, 1, len(F)), rng.uniform(-1, 1, F.size)
        np.testing.assert_allclose(F.vjp(x, u), u @ dense, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(F.jvp(x, v), dense @ v, rtol=1e-12, atol=1e-13)


def test_data_in_the_body_is_given_at_the_call() -> None:
    with looping():
        exprs = symad.parse_outputs(f"each(i = 1..{N - 1}, x[i+1] - c[i]*x[i])", Graph())
    F = IndexedVectorFunction(exprs, wrt=["x"])
    assert F.data == ("c",)
    c, x = np.arange(1.0, N), np.linspace(0, 1, N)
    J = F.sparse_jacobian(x, {"c": c}).toarray()
    assert np.array_equal(np.diag(J), -c) and np.array_equal(np.diag(J, 1), np.ones(N - 1))


def test_compile_dispatches_each_and_mixes() -> None:
    n = 100_000
    F = symad.compile(f"n = {n}; each(i = 1..n-1, x[i+1] - x[i]^2)")
    assert isinstance(F, IndexedVectorFunction) and len(F) == n - 1
    rows, cols = F.jacobian_pattern()
    assert rows.size == 2 * (n - 1)
    x = np.linspace(-1, 1, n)
    J = F.sparse_jacobian(x)
    assert J.shape == (n - 1, n) and J.nnz == 2 * (n - 1)
    np.testing.assert_array_equal(J.diagonal(), -2 * x[:-1])
    np.testing.assert_array_equal(J.diagonal(1), np.ones(n - 1))
    mixed = symad.compile(["n = 20000; each(i = 1..n-1, x[i+1] - x[i])", "x[1]^2 - 1"])
    assert isinstance(mixed, IndexedVectorFunction) and len(mixed) == 20000


def test_bad_input() -> None:
    F = symad.compile("n = 20000; each(i = 1..n-1, x[i+1] - x[i]^2)")
    with pytest.raises(PointError, match="19,999"):
        F.vjp(np.ones(20000), np.ones(3))
    with pytest.raises(PointError):
        F.value(np.ones(3))
    with pytest.raises(SymadError, match="IndexedVectorFunction"):
        symad.IndexedFunction(F.exprs[0])


@pytest.mark.parametrize("name", [*CASES, "a capture of a scalar"])
def test_entries_as_loops_and_products_along_colours_agree(name: str) -> None:
    text = CASES[name][0] if name in CASES else f"each(i = 1..{N}, x[i]*sin(y) + x[i]^2)"
    F = looped(text)
    x = np.random.default_rng(8).uniform(-1, 1, F.size)
    values = F.jacobian_values(x)
    assert F._entries is not None and F._entries.covers == (name in CASES)  # sin(y): along colours
    colours = sparse_values.Compression(*F.jacobian_pattern(), F.size, len(F), lower=False)
    products = colours.values(lambda v: F.jvp(x, v), lambda u: F.vjp(x, u))
    np.testing.assert_allclose(values, products, rtol=1e-13, atol=1e-13)
