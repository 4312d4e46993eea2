"""Loops inside loops as machine code (symad.schedule.loop_nest, native.compile_nest): the same bits
as NumPy's evaluation of the same loops, and the numbers NumPy computes by hand."""

from __future__ import annotations

import numpy as np
import pytest
from support.loops import looping, parse_looped

import symad
from symad import Graph, native
from symad.indexed_function import IndexedFunction
from symad.runtime.native_loops import _Nest
from symad.schedule.loop_nest import NotCompiled, loop_nest

pytestmark = pytest.mark.skipif(not native.available(), reason="needs llvmlite")

N = 23  # rows: three blocks' worth of odd lengths would be slow here; 23 keeps every lane odd at the end
CASES = [
    ("sum(i = 1..{n}, x[i]*sum(j = 1..{n}, A[i,j]*x[j]))", lambda x, A, d: x @ A @ x),
    ("sum(i = 1..{n}, (sum(j = 1..{n}, A[i,j]*x[j]) - d[i])^2)", lambda x, A, d: np.sum((A @ x - d) ** 2)),
    ("sum(i = 1..{n}, sum(j = 1..{n}, A[j,i]*sin(x[j] - i/10)))",
     lambda x, A, d: sum(A[j, i] * np.sin(x[j] - (i + 1) / 10) for i in range(len(x)) for j in range(len(x)))),
    ("sum(i = 1..{n}, exp(-x[i]^2)*sum(j = 1..{n}, where(j <= i, A[i,j]*x[j], 0)))",
     lambda x, A, d: np.exp(-x**2) @ (np.tril(A) @ x)),
]


@pytest.mark.parametrize("text, by_hand", CASES, ids=["xAx", "least squares", "columns", "triangle"])
def test_a_nest_gives_numpys_bits_and_the_numbers_by_hand(text: str, by_hand) -> None:
    rng = np.random.default_rng(8)
    x, A, d = rng.uniform(-1, 1, N), rng.uniform(-1, 1, (N, N)), rng.uniform(-1, 1, N)
    with looping(3):
        expr = parse_looped(text.format(n=N))
        compiled = IndexedFunction(expr, wrt=["x"])
        numpy_only = IndexedFunction(expr, wrt=["x"], backend="python")
    assert any(isinstance(r, _Nest) for r in compiled._program.runners.values())
    point = {"x": x, "A": A, "d": d}
    point = {k: v for k, v in point.items() if k in compiled.wrt + compiled.data}
    value, grad = compiled.value_and_grad(point)
    want_value, want_grad = numpy_only.value_and_grad(point)
    assert value == want_value and np.array_equal(grad, want_grad)  # bit for bit
    assert value == pytest.approx(by_hand(x, A, d), rel=1e-12, abs=1e-12)
    h = 1e-6  # the gradient against central differences of the by-hand value (error ~h^2)
    for k in (0, N // 2, N - 1):
        e = np.zeros(N)
        e[k] = h
        fd = (by_hand(x + e, A, d) - by_hand(x - e, A, d)) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-6, abs=1e-7)


def test_a_nest_over_many_blocks_adds_in_the_canonical_order() -> None:
    n = 3 * 8192 + 7  # rows in several blocks (threads), each block's lanes ending odd
    rng = np.random.default_rng(9)
    x = rng.uniform(-1, 1, n)
    B = rng.uniform(-1, 1, (n, 3))
    with looping(2):
        expr = parse_looped(f"sum(i = 1..{n}, sum(j = 1..3, B[i,j]*x[i])^2)")
        compiled = IndexedFunction(expr, wrt=["x"])
        numpy_only = IndexedFunction(expr, wrt=["x"], backend="python")
    assert any(isinstance(r, _Nest) for r in compiled._program.runners.values())
    got = compiled.value_and_grad({"x": x, "B": B})
    want = numpy_only.value_and_grad({"x": x, "B": B})
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 16, 17, 30])
def test_inner_sums_of_every_length_in_eight_lanes(n: int) -> None:
    # each count of terms left over after the groups of eight (the one-at-a-time tail) has its path
    rng = np.random.default_rng(n)
    x, A = rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-4, 5, n), rng.uniform(-1, 1, (n, n))
    with looping(0):
        expr = parse_looped(f"sum(i = 1..{n}, x[i]*sum(j = 1..{n}, A[i,j]*x[j]))")
        compiled = IndexedFunction(expr, wrt=["x"])
        numpy_only = IndexedFunction(expr, wrt=["x"], backend="python")
    got = compiled.value_and_grad({"x": x, "A": A})
    want = numpy_only.value_and_grad({"x": x, "A": A})
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    assert got[0] == pytest.approx(x @ A @ x, rel=1e-9, abs=1e-9)


def test_sums_inside_computed_for_every_row_first_read_clamped_entries_as_numpy_does() -> None:
    # the gradient's each runs over k = 1..n, but A's rows are 2..n: its sums inside read A[1, j]
    # clamped (a guarded term), computed for all rows before the rows' loop, along and across
    n = 19
    rng = np.random.default_rng(5)
    x, A = rng.uniform(-1, 1, n), rng.uniform(-1, 1, (n - 1, n))
    with looping(0):
        expr = parse_looped(f"sum(i = 2..{n}, (x[i] - i/7)*sum(j = 1..{n}, A[i,j]*x[j]*x[i]))")
        compiled = IndexedFunction(expr, wrt=["x"])
        numpy_only = IndexedFunction(expr, wrt=["x"], backend="python")
    assert compiled._whole is not None
    got = compiled.value_and_grad({"x": x, "A": A})
    want = numpy_only.value_and_grad({"x": x, "A": A})
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    B = np.vstack([np.zeros(n), A])  # by hand: rows 2..n of A, x's weights (x[i] - i/7)
    w = x - np.arange(1, n + 1) / 7
    w[0] = 0.0
    assert got[0] == pytest.approx(float(np.sum(w * x * (B @ x))), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("inner", ["sum", "prod"])
def test_a_loop_inside_that_would_repeat_its_work_runs_in_numpy(inner: str) -> None:
    """The partial along y[k] of sum(i, sin(x[i])*loop(j, g(x[i], y[j]))) holds loop(j, ...) for
    every i, inside the map over k, whose index it does not read: as a nest it ran 8,192 times over
    (69 s a call for a sum), so NumPy runs it (once for each i); where it repeats 20 times, it stays
    machine code. Either way the bits are NumPy's."""
    body = "exp(sum(j = 1..{m}, log(1 + y[j]*x[i]/{m})))" if inner == "sum" else "prod(j = 1..{m}, 1 + y[j]*x[i]/{m})"
    for m, repeated in ((8192, True), (20, False)):
        text = f"sum(i = 1..301, sin(x[i])*{body.format(m=m)})"
        f = IndexedFunction(symad.parse(text, Graph()))
        partial_y = dict(zip(f.wrt, f._outputs[1:]))["y"]
        if repeated:
            with pytest.raises(NotCompiled, match=f"a loop inside repeated {m:,} times over"):
                loop_nest(f.graph, partial_y, f.spans)
        else:
            assert loop_nest(f.graph, partial_y, f.spans)
        point = np.random.default_rng(2).uniform(-1, 1, f.size)
        fast, plain = symad.compile(text), symad.compile(text, backend="python")
        (a, ga), (b, gb) = fast.value_and_grad(point), plain.value_and_grad(point)
        assert np.float64(a).tobytes() == np.float64(b).tobytes() and ga.tobytes() == gb.tobytes()
