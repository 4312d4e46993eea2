"""Sums inside a loop's body longer than a block run as machine code (symad.native.loop_ir's
``_blocked_sum``): a loop over the blocks, each block's sum in a stack array, the blocks' sums
added as NumPy's pairwise sum adds them.  The same bits as the NumPy evaluator
(:func:`symad.backends.arrays.blocked_sum`) for values, gradients (the gradient's maps with sums
inside: gathers) and Hessian-vector products, at 1 to 130 blocks with odd tails; the numbers
NumPy computes by hand, to rounding; code whose size does not grow with the range."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from support.loops import looping

import symad
from symad import native
from symad.core import binders
from symad.core.dag import Graph
from symad.indexed_function import IndexedFunction
from symad.native import jit, loop_ir
from symad.runtime import native_loops
from symad.runtime.native_loops import WholeProgram
from symad.schedule.loop_nest import BLOCK, INNER_MAX, NotCompiled, loop_program

pytestmark = pytest.mark.skipif(not native.available(), reason="needs llvmlite")

# terms of a sum inside: 1, 2, 3, 9, 17 and 130 blocks (past the written-out addition of the
# blocks' sums, and past NumPy's 128-element pairwise leaves), tails odd, one range whole blocks
TERMS = {1: BLOCK - 1, 2: BLOCK + 1, 3: 2 * BLOCK + 4097, 9: 8 * BLOCK + 8191, 17: 16 * BLOCK + 3,
         130: 129 * BLOCK + 777, "2 whole": 2 * BLOCK}
ROWS = {blocks: 2 if blocks == 130 else 3 for blocks in TERMS}  # (NumPy's evaluation takes a second a row at 130)


def _functions(text: str, wrt: list[str] | None = None) -> tuple[IndexedFunction, IndexedFunction]:
    """The text compiled (machine code) and evaluated by NumPy alone, from one graph (every sum of
    more than one term a loop)."""
    with looping(1):
        expr = symad.parse(text, Graph())
    return IndexedFunction(expr, wrt=wrt), IndexedFunction(expr, wrt=wrt, backend="python")


def _all_compiled(f: IndexedFunction, program) -> bool:
    """Whether every top-level loop of an ArrayProgram runs as machine code (none left to NumPy)."""
    g = f.graph
    top = {n for n in program.loops if binders.levels(g)[n] < 0 and g.op[n] in ("sum", "each")}
    return set(program.runners) == top


def _same_bits(compiled: IndexedFunction, numpy_only: IndexedFunction, point: dict) -> tuple[float, np.ndarray]:
    value, grad = compiled.value_and_grad(point)
    want_value, want_grad = numpy_only.value_and_grad(point)
    assert value == want_value and np.array_equal(grad, want_grad)  # bit for bit
    return value, grad


@pytest.mark.parametrize("blocks", list(TERMS))
def test_a_sum_inside_of_several_blocks_gives_numpys_bits(blocks) -> None:
    m, n = TERMS[blocks], ROWS[blocks]
    rng = np.random.default_rng(m)
    x, y = rng.uniform(-1, 1, n), rng.uniform(-2, 2, m) * 10.0 ** rng.integers(-3, 4, m)
    compiled, numpy_only = _functions(f"sum(i = 1..{n}, x[i]*sum(j = 1..{m}, cos(y[j] - x[i])))")
    assert isinstance(compiled._whole, WholeProgram)  # value and gradient: one machine-code call
    value, grad = _same_bits(compiled, numpy_only, {"x": x, "y": y})
    c, s = np.cos(y[None, :] - x[:, None]), np.sin(y[None, :] - x[:, None])
    scale = 1e-13 * m  # rounding of sums of m terms of size one (the by-hand sums' and the loops')
    assert value == pytest.approx(float(x @ c.sum(axis=1)), abs=scale)
    assert grad[:n] == pytest.approx(c.sum(axis=1) + x * s.sum(axis=1), abs=scale)
    assert grad[n:] == pytest.approx(-(x @ s), abs=1e-13)


@pytest.mark.parametrize("blocks", [2, 17])
def test_hessian_vector_products_of_sums_inside_of_several_blocks_give_numpys_bits(blocks) -> None:
    m, n = TERMS[blocks], ROWS[blocks]
    rng = np.random.default_rng(blocks)
    x, y = rng.uniform(-1, 1, n), rng.uniform(-2, 2, m)
    compiled, numpy_only = _functions(f"sum(i = 1..{n}, x[i]*sum(j = 1..{m}, cos(y[j] - x[i])))")
    point, d = {"x": x, "y": y}, rng.standard_normal(n + m)
    got = compiled.hessp(point, d)
    assert _all_compiled(compiled, compiled._hvp)
    assert np.array_equal(got, numpy_only.hessp(point, d))
    # by hand: H = [[diag(dxx), dxy], [dxy', diag(dyy)]] of f = sum_ij x_i cos(y_j - x_i)
    c, s = np.cos(y[None, :] - x[:, None]), np.sin(y[None, :] - x[:, None])
    dxx = 2 * s.sum(axis=1) - x * c.sum(axis=1)
    dxy = -s + x[:, None] * c
    dyy = -(x @ c)
    dx, dy = d[:n], d[n:]
    assert got[:n] == pytest.approx(dxx * dx + dxy @ dy, abs=1e-12 * m)
    assert got[n:] == pytest.approx(dxy.T @ dx + dyy * dy, abs=1e-12)


@pytest.mark.parametrize("rows, tiled", [(2 * BLOCK + 4097, False), (8 * BLOCK + 8191, False),
                                         (2 * BLOCK + 4097, True)])
def test_a_gather_whose_sums_inside_run_over_the_rows_gives_numpys_bits(rows: int, tiled: bool, monkeypatch) -> None:
    # the gradient over y is each(k = 1..17, sum(i = 1..rows, ...)): a map over y of sums of many
    # blocks; tiled, each block of the rows' loops runs on the block threads, the map in one of them
    monkeypatch.setattr(native_loops, "WHOLE_MAX_ROWS", 1000 if tiled else 10**9)
    rng = np.random.default_rng(rows)
    x, y = rng.uniform(-1, 1, rows), rng.uniform(-2, 2, 17)
    compiled, numpy_only = _functions(f"sum(i = 1..{rows}, x[i]*sum(j = 1..17, cos(y[j] - x[i])))")
    assert compiled._whole is not None and compiled._whole.program.tiled == tiled
    point = {"x": x, "y": y}
    _, grad = _same_bits(compiled, numpy_only, point)
    assert grad[rows:] == pytest.approx(-(x @ np.sin(y[None, :] - x[:, None])), abs=1e-13 * rows)
    d = rng.standard_normal(rows + 17)
    assert np.array_equal(compiled.hessp(point, d), numpy_only.hessp(point, d))
    assert _all_compiled(compiled, compiled._hvp)


def test_sums_inside_reading_past_the_ends_of_their_vectors_read_clamped_as_numpy_does() -> None:
    # d/dx[k] holds sum(j, ... y[j + k + 1] ...) under the guard k + 1 <= 5: at k = 5 its entries
    # read past y's end (clamped, the term discarded), and at k = 1 the other term's guard is off
    m = 2 * BLOCK + 3
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-1, 1, 5), rng.uniform(-1, 1, m + 3)  # y[3] ... y[m + 5]
    text = f"sum(i = 2..5, x[i - 1]*sum(j = 1..{m}, cos(y[j + i]*x[i])))"
    compiled, numpy_only = _functions(text)
    point = {"x": x, "y": y}
    value, grad = _same_bits(compiled, numpy_only, point)
    Y = np.stack([y[i - 3 + np.arange(1, m + 1)] for i in range(2, 6)])  # y[j + i], rows i = 2..5
    by_hand = sum(x[i - 2] * np.cos(Y[i - 2] * x[i - 1]).sum() for i in range(2, 6))
    assert value == pytest.approx(by_hand, abs=1e-13 * m)
    for k in range(1, 6):  # x[k] as x[i - 1] (i = k + 1) and as x[i] (i = k)
        want = np.cos(Y[k - 1] * x[k]).sum() if k <= 4 else 0.0
        if k >= 2:
            want += x[k - 2] * (-np.sin(Y[k - 2] * x[k - 1]) * Y[k - 2]).sum()
        assert grad[k - 1] == pytest.approx(want, abs=1e-13 * m)
    d = rng.standard_normal(len(grad))
    assert np.array_equal(compiled.hessp(point, d), numpy_only.hessp(point, d))
    assert _all_compiled(compiled, compiled._hvp)


@pytest.mark.parametrize("text", ["sum(i = 1..3, x[i]*sum(j = 1..{m}, A[i,j]*y[j]))",
                                  "sum(i = 1..3, x[i]*sum(j = 1..{m}, B[j,i]*y[j]))"], ids=["along", "across"])
def test_sums_inside_computed_for_every_row_first_give_numpys_bits(text: str) -> None:
    # dot products reading only the row's index are computed for all rows before the rows' loop
    m = 2 * BLOCK + 4097
    rng = np.random.default_rng(4)
    x, y, A = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, m), rng.uniform(-1, 1, (3, m))
    compiled, numpy_only = _functions(text.format(m=m), wrt=["x", "y"])
    point = {"x": x, "y": y, "A": A, "B": np.ascontiguousarray(A.T)}
    point = {k: v for k, v in point.items() if k in compiled.wrt + compiled.data}
    value, grad = _same_bits(compiled, numpy_only, point)
    assert value == pytest.approx(float(x @ A @ y), abs=1e-13 * m)
    assert grad[:3] == pytest.approx(A @ y, abs=1e-13 * m)


def _pairwise_machine_code():
    """``@pairwise`` compiled alone, behind a function taking a NumPy array's address and length."""
    text = loop_ir._with_helpers("define double @added(ptr %a, i64 %n) {\nentry:\n"
                                 "  %s = call double @pairwise(ptr %a, i64 %n)\n  ret double %s\n}\n")
    code = jit._loop_code(f"test-pairwise-{hash(text)}", lambda: text, 2, None, lambda e: e)
    return code, ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.c_int64)(
        code.get_function_address("added"))


def test_the_blocks_sums_are_added_as_numpy_adds_an_array_of_them() -> None:
    # NumPy's reduction starts from 0.0 and adds the pairwise sum of the whole array (not from the
    # first element): the written-out order and the routine's, at every length that changes the tree
    engine, added = _pairwise_machine_code()
    rng = np.random.default_rng(7)
    for n in [*range(1, 40), 127, 128, 129, 130, 135, 255, 256, 257, 1000, 1221, 4099, 32768]:
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9, n)
        want = np.sum(a)
        assert added(a.ctypes.data, n) == want, n
        fresh = iter(range(10**6))
        values = {f"v{k}": v for k, v in enumerate(a)}

        def add(p: str, q: str, values=values, fresh=fresh) -> str:
            name = f"s{next(fresh)}"
            values[name] = (0.0 if p == "0.0" else values[p]) + values[q]
            return name

        assert values[loop_ir._pairwise(list(values), add)] == want, n
    del engine


def test_code_and_stack_do_not_grow_with_the_range() -> None:
    def ir_of(m: int) -> str:
        expr = symad.parse(f"sum(i = 1..3, x[i]*sum(j = 1..{m}, cos(y[j] - x[i])))", Graph())
        f = IndexedFunction(expr, backend="python")
        return loop_ir.program_ir(loop_program(f.graph, f._outputs, f.spans))

    small, large = ir_of(9 * BLOCK + 1), ir_of(1000 * BLOCK + 1)
    assert len(small.splitlines()) == len(large.splitlines())
    # the sums of a nesting level share one array (each sum written once a lane: eight copies)
    allocas = [line for line in large.splitlines() if "alloca" in line]
    assert len({line.split("=")[0] for line in allocas}) == len(allocas)
    assert sum(int(line.rsplit(" ", 1)[1]) for line in allocas if "%ib" in line) <= 2 * 1001


def test_a_sum_inside_past_the_largest_range_stays_in_numpy() -> None:
    for m, compiles in ((INNER_MAX, True), (INNER_MAX + 1, False)):
        expr = symad.parse(f"sum(i = 1..2, x[i]*sum(j = 1..{m}, y[j]*x[i]))", Graph())
        spans = binders.index_span(expr.graph, [expr.id])
        if compiles:
            loop_program(expr.graph, [expr.id], spans)
        else:
            with pytest.raises(NotCompiled, match="more than"):
                loop_program(expr.graph, [expr.id], spans)


def test_long_sums_inside_a_loop_of_two_blocks_or_more_run_tiled_but_a_short_outer_loop_does_not() -> None:
    """The tiles are taken by the block threads where the work is the inner sums' (rows times terms)
    and the outer loop has blocks for them to share; x'Ax over 2,000 rows stays one call."""
    long_outer = symad.compile(f"sum(i = 1..{2 * BLOCK}, x[i]*sum(j = 1..40, cos(y[j] - x[i])))")
    short_outer = symad.compile("n = 2000; sum(i = 1..n, x[i]*sum(j = 1..n, A[i,j]*x[j]))", wrt=["x"])
    assert long_outer._whole.program.tiled and not short_outer._whole.program.tiled
