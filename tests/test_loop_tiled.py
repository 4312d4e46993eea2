"""A tiled whole program (a long function's loops run block by block, every loop's block at once,
the blocks taken by the threads in any order): NumPy's bits and the one-call program's, on any
number of threads; a loop reading another's result keeps the loops run one by one; calls from
several threads, and from a block thread itself, finish."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from support.loops import looping, parse_looped
from support.threads import assert_threads_agree

from symad import native
from symad.indexed_function import IndexedFunction
from symad.runtime import blocks, native_loops

pytestmark = pytest.mark.skipif(not native.available(), reason="needs llvmlite")

# two sums over different ranges (their blocks end at different rows), a variable, an entry outside
# the loops, steps after the loops; the gradient's map has clamped edges in its first and last blocks
TEXT = ("n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i]/i)^2) "
        "+ sin(y)*sum(i = 3..n-2, x[i-2]*x[i+2]) + y*x[2]")


@pytest.fixture
def tiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_loops, "WHOLE_MAX_ROWS", 0)


def _threads(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """The block threads' pool of ``count`` threads (none on one), started afresh."""
    monkeypatch.setattr(blocks, "THREADS", count)
    monkeypatch.setattr(blocks, "_pool", [])


def _point(n: int) -> dict[str, object]:
    rng = np.random.default_rng(n)
    return {"x": rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-3, 3, n), "y": 0.3}


@pytest.mark.parametrize("n", [7, 8193, 3 * 8192 + 5, 9 * 8192, 17 * 8192 + 1])
def test_a_tiled_program_gives_numpys_bits_and_the_one_calls(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    with looping(3):
        numpy_only = IndexedFunction(parse_looped(TEXT.format(n=n)), backend="python")
        monkeypatch.setattr(native_loops, "WHOLE_MAX_ROWS", 10**9)
        one_call = IndexedFunction(parse_looped(TEXT.format(n=n)))
        monkeypatch.setattr(native_loops, "WHOLE_MAX_ROWS", 0)
        compiled = IndexedFunction(parse_looped(TEXT.format(n=n)))
    assert compiled._whole is not None and compiled._whole.program.tiled
    assert one_call._whole is not None and not one_call._whole.program.tiled
    point = _point(n)
    got, want, whole = compiled.value_and_grad(point), numpy_only.value_and_grad(point), one_call.value_and_grad(point)
    assert got[0] == want[0] == whole[0]
    assert np.array_equal(got[1], want[1]) and np.array_equal(got[1], whole[1])


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_the_same_bits_on_any_number_of_threads(threads: int, tiled: None, monkeypatch: pytest.MonkeyPatch) -> None:
    n = 40 * 8192 + 11
    with looping(3):
        f = IndexedFunction(parse_looped(TEXT.format(n=n)))
        numpy_only = IndexedFunction(parse_looped(TEXT.format(n=n)), backend="python")
    _threads(monkeypatch, threads)
    point = _point(n)
    want = numpy_only.value_and_grad(point)
    for _ in range(3):  # the threads take the blocks in another order each call
        got = f.value_and_grad(point)
        assert got[0] == want[0] and np.array_equal(got[1], want[1])
    assert bool(blocks._pool) == (threads > 1)
    if blocks._pool:
        blocks._pool[0][1].shutdown()


def test_loops_inside_a_tiled_loop(tiled: None) -> None:
    n = 3 * 8192 + 1
    text = f"sum(i = 2..{n - 1}, (sum(j = -1..1, x[i+j]*x[i+j]) - x[i])^2)"
    with looping(3):
        f = IndexedFunction(parse_looped(text))
        numpy_only = IndexedFunction(parse_looped(text), backend="python")
    assert f._whole is not None and f._whole.program.tiled
    x = np.random.default_rng(0).uniform(-1, 1, n)
    got, want = f.value_and_grad(x), numpy_only.value_and_grad(x)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


def test_a_loop_reading_another_loops_result_keeps_the_loops_one_by_one(tiled: None) -> None:
    # the gradient's map reads the sum (1/sum(...)): they cannot share blocks
    text = "log(sum(i = 1..20000, exp(x[i]/10)))"
    with looping(3):
        f = IndexedFunction(parse_looped(text))
        numpy_only = IndexedFunction(parse_looped(text), backend="python")
    assert f._whole is None
    x = np.linspace(-1, 1, 20000)
    got, want = f.value_and_grad(x), numpy_only.value_and_grad(x)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


def test_calls_from_several_threads_at_once(tiled: None) -> None:
    n = 5 * 8192
    with looping(3):
        f = IndexedFunction(parse_looped(TEXT.format(n=n)))
    points = [{"x": _point(n + k)["x"][:n], "y": 0.3} for k in range(4)]
    assert_threads_agree(f.value_and_grad, points, rounds=20)


@pytest.mark.parametrize("text", [TEXT, "n = {n}; log(sum(i = 1..n, exp(x[i]/10)))"], ids=["tiled", "one by one"])
def test_a_call_from_a_block_thread_with_the_others_busy_finishes(text: str, tiled: None,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # the helper it asks for never starts (the pool's other thread waits): the caller takes every
    # block and withdraws the request, rather than waiting for it
    _threads(monkeypatch, 2)
    n = 4 * 8192
    with looping(3):
        f = IndexedFunction(parse_looped(text.format(n=n)))
    point = _point(n) if "y" in text else _point(n)["x"]
    want = f.value_and_grad(point)
    pool, release = blocks.pool(), threading.Event()
    busy = pool.submit(release.wait, 60)
    try:
        got = pool.submit(f.value_and_grad, point).result(timeout=30)
    finally:
        release.set()
        busy.result()
        pool.shutdown()
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


@pytest.mark.parametrize("text", ["sum(i = 1..{n}, d[i]*(x[i] - x[i+2])^2)",
                                  "sum(i = 1..{n}, y*x[i]^3) + sum(i = 5..{n}, cos(x[i-4] + y))"])
def test_data_and_variables_tiled(text: str, tiled: None) -> None:
    n = 2 * 8192 + 3
    wrt = ["x"] if "d[" in text else None
    with looping(3):
        f = IndexedFunction(parse_looped(text.format(n=n)), wrt=wrt)
        numpy_only = IndexedFunction(parse_looped(text.format(n=n)), wrt=wrt, backend="python")
    assert f._whole is not None and f._whole.program.tiled
    rng = np.random.default_rng(7)
    point = ({"x": rng.uniform(-1, 1, n + 2), "d": rng.uniform(0, 1, n)} if wrt
             else {"x": rng.uniform(-1, 1, n), "y": 0.7})
    got, want = f.value_and_grad(point), numpy_only.value_and_grad(point)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


def test_a_tiled_programs_code_does_not_grow_with_n(tiled: None) -> None:
    from symad.native.loop_ir import program_ir
    from symad.schedule.loop_nest import loop_program

    sizes = []
    for n in (10**5, 10**7):
        with looping(3):
            f = IndexedFunction(parse_looped(TEXT.format(n=n)))
        program = loop_program(f.graph, f._outputs, f.spans)
        program.tiled = True
        sizes.append(len(program_ir(program).splitlines()))
    assert sizes[0] == sizes[1]


def test_a_whole_program_refuses_repeated_roots() -> None:
    """Its code writes each output once: a repeat would come back unwritten (indexed_function's
    Repeated runs the distinct roots and copies)."""
    e = parse_looped("sum(i = 1..400, x[i]^2)")
    with pytest.raises(ValueError, match="distinct"):
        native_loops.WholeProgram(e.graph, [e.id, e.id], {"x": [(1, 400)]})
    f = IndexedFunction(parse_looped("sum(k = 1..2000, x[k] + y[k])"))  # both partials are one node
    value, grad = f.value_and_grad({"x": np.arange(2000.0), "y": np.ones(2000)})
    assert value == 2000 * 1999 / 2 + 2000 and np.array_equal(grad, np.ones(4000))
