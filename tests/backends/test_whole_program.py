"""A whole program with loops as one function of machine code (native.compile_program): the same
bits as NumPy's evaluation of the same loops, for sums of one block to hundreds of blocks (whose
blocks' sums the code adds as NumPy's pairwise sum does), eaches with edges, loops inside loops."""

from __future__ import annotations

import numpy as np
import pytest
from support.loops import looping, parse_looped

import symad
from symad import native
from symad.indexed_function import IndexedFunction
from symad.runtime import native_loops

pytestmark = pytest.mark.skipif(not native.available(), reason="needs llvmlite")


@pytest.fixture
def whole_always(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_loops, "WHOLE_MAX_ROWS", 10**9)


@pytest.mark.parametrize("n", [7, 8193, 3 * 8192 + 5, 9 * 8192, 17 * 8192 + 1, 130 * 8192 + 3])
def test_a_whole_program_gives_numpys_bits(n: int, whole_always: None) -> None:
    # blocks: 1, 2, 4, 9 (NumPy's eight partial sums), 18, 131 (its halves): every path of its pairwise sum
    text = (f"n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i]/i)^2) "
            f"+ sin(y)*sum(i = 3..n-2, x[i-2]*x[i+2]) + y*x[2]")
    with looping(3):
        compiled = IndexedFunction(parse_looped(text))
        numpy_only = IndexedFunction(parse_looped(text), backend="python")
    assert compiled._whole is not None
    rng = np.random.default_rng(n)
    point = {"x": rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-3, 3, n), "y": 0.3}
    got, want = compiled.value_and_grad(point), numpy_only.value_and_grad(point)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


def test_a_whole_program_with_loops_inside_loops(whole_always: None) -> None:
    n = 40
    rng = np.random.default_rng(5)
    x, A, d = rng.uniform(-1, 1, n), rng.uniform(-1, 1, (n, n)), rng.uniform(-1, 1, n)
    text = f"sum(i = 1..{n}, (sum(j = 1..{n}, A[i,j]*x[j]) - d[i])^2) + sum(i = 1..{n}, x[i]^4)"
    with looping(3):
        compiled = IndexedFunction(parse_looped(text), wrt=["x"])
        numpy_only = IndexedFunction(parse_looped(text), wrt=["x"], backend="python")
    assert compiled._whole is not None
    point = {"x": x, "A": A, "d": d}
    got, want = compiled.value_and_grad(point), numpy_only.value_and_grad(point)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    assert got[0] == pytest.approx(np.sum((A @ x - d) ** 2) + np.sum(x**4), rel=1e-12)
    np.testing.assert_allclose(got[1], 2 * A.T @ (A @ x - d) + 4 * x**3, rtol=1e-11, atol=1e-12)


def test_past_the_size_limit_a_program_is_tiled_or_each_loop_runs_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_loops, "WHOLE_MAX_ROWS", 100)
    with looping(3):
        f = IndexedFunction(parse_looped("sum(i = 1..200, x[i]^2)"))
        reading = IndexedFunction(parse_looped("log(sum(i = 1..200, x[i]^2))"))  # the map reads the sum
    assert f._whole is not None and f._whole.program.tiled and f.value_and_grad(np.ones(200))[0] == 200.0
    assert reading._whole is None and reading.value_and_grad(np.ones(200))[0] == np.log(200.0)


def test_compiled_code_is_keyed_by_structure_never_by_node_ids() -> None:
    # the disk cache shares machine code by this key: two programs that differ only in which
    # constant sits at which node id must never share it, and equal programs always do
    from symad.core.dag import Graph
    from symad.schedule.loop_nest import loop_nest, loop_program

    def keys(text: str, graph: Graph) -> tuple[str, str]:
        with looping(3):
            expr = symad.parse(text, graph)
            f = IndexedFunction(expr)
        program = loop_program(graph, f._outputs, f.spans)
        return program.key, loop_nest(graph, expr.id, f.spans).key

    plain = keys("sum(i = 1..20, 2*x[i] + 3*x[i]^2)", Graph())
    other = Graph()
    other.const(3.0)
    other.const(2.0)
    other.var("unrelated")
    assert keys("sum(i = 1..20, 3*x[i] + 2*x[i]^2)", other)[0] != plain[0]
    shifted = Graph()
    shifted.const(7.0)
    shifted.var("unrelated")
    assert keys("sum(i = 1..20, 2*x[i] + 3*x[i]^2)", shifted) == plain


def test_long_straight_code_beside_a_loop_is_not_compiled_before_the_first_call(monkeypatch) -> None:
    """A long written-out product beside a loop gave the loops' code thousands of steps, which LLVM
    took minutes to compile before the first call: past policy.NATIVE_SYNC_OPS steps NumPy runs it,
    with the same numbers."""
    text = "sum(i=1..400, x[i]^2) + prod(j=1..40, 1 + y*x[j]/40)"
    x = np.r_[1 + 0.1 * np.sin(np.arange(400)), 0.5]
    compiled = IndexedFunction(symad.parse(text))
    monkeypatch.setattr(native_loops.policy, "NATIVE_SYNC_OPS", 20)
    quick = IndexedFunction(symad.parse(text))
    assert compiled._whole is not None and quick._whole is None
    assert quick.value_and_grad(x)[0] == compiled.value_and_grad(x)[0]
    np.testing.assert_allclose(quick.grad(x), compiled.grad(x), rtol=1e-14)
