"""The one mechanism of loops over rows (symad.runtime.blocks): blocks shared among threads and
their sums added in the canonical order, so an objective over data, the same sum written over
indexed data, NumPy and any number of threads give the same bits."""

from __future__ import annotations

import os
import select
import signal
import threading

import numpy as np
import pytest

import symad
from symad import native
from symad.backends.arrays import blocked_sum
from symad.runtime import blocks, native_loops

needs_native = pytest.mark.skipif(not native.available(), reason="needs llvmlite")

# a logistic loss with a square: several outputs (value, two partials), terms of both signs
ROW = "log(1 + exp(-y*(a*x + b))) + (a - x)^2*b"
INDEXED = "sum(r = 1..{R}, log(1 + exp(-y[r]*(a*x[r] + b))) + (a - x[r])^2*b)"
POINT = {"a": 0.3, "b": -0.7}


def _data(rows: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(rows)
    x = rng.standard_normal(rows) * 10.0 ** rng.integers(-2, 3, rows)
    return {"x": x, "y": np.sign(rng.standard_normal(rows))}


def _threads(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    monkeypatch.setattr(blocks, "THREADS", count)
    monkeypatch.setattr(blocks, "_pool", [])


@pytest.mark.parametrize("n", [1, 7, blocks.BLOCK, 9 * blocks.BLOCK + 3, 200 * blocks.BLOCK + 1])
def test_blocks_sums_added_are_the_canonical_sum(n: int) -> None:
    """Each block summed in the canonical order of a block, then ``add``: the order of
    ``blocked_sum`` (and of the generated code) over the whole range, for one output or several."""
    rng = np.random.default_rng(n)
    terms = rng.standard_normal((3, n)) * 10.0 ** rng.integers(-8, 8, (3, n))
    partial = np.array([blocked_sum(terms[:, slice(*blocks.span(b, n))]) for b in range(blocks.count(n))])
    assert np.array_equal(blocks.add(partial), blocked_sum(terms))
    assert blocks.add(np.ascontiguousarray(partial[:, 1])) == blocked_sum(terms[1])
    assert blocks.count(n) == -(-n // blocks.BLOCK) and blocks.span(blocks.count(n) - 1, n)[1] == n


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_every_block_runs_once_on_at_most_the_threads_asked(threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _threads(monkeypatch, 8)
    runs: list[int] = []
    names: set[str] = set()
    lock = threading.Lock()

    def run(b: int) -> None:
        with lock:
            runs.append(b)
            names.add(threading.current_thread().name)

    blocks.share(40, run, threads)
    assert sorted(runs) == list(range(40))
    assert len(names) <= threads
    assert all(name.startswith("symad-blocks") for name in names - {threading.current_thread().name})


def test_a_share_from_a_pool_thread_with_the_others_busy_finishes(monkeypatch: pytest.MonkeyPatch) -> None:
    _threads(monkeypatch, 2)
    pool, release = blocks.pool(), threading.Event()
    busy = pool.submit(release.wait, 60)
    done: list[int] = []
    try:
        pool.submit(blocks.share, 9, done.append, 2).result(timeout=30)
    finally:
        release.set()
        busy.result()
        pool.shutdown()
    assert sorted(done) == list(range(9))


def test_a_batch_of_points_is_split_on_the_block_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    _threads(monkeypatch, 3)
    monkeypatch.setattr(blocks, "PARALLEL_MIN_ROWS", 10)
    f = symad.parse("100*(y - x^2)^2 + (1 - x)^2 + z*x").compile(backend="native" if native.available() else "python")
    points = np.random.default_rng(1).normal(size=(1001, 3))
    split = f.value_and_grad(points)
    monkeypatch.setattr(blocks, "PARALLEL_MIN_ROWS", 10**9)
    whole = f.value_and_grad(points)
    assert np.array_equal(split[0], whole[0]) and np.array_equal(split[1], whole[1])
    if native.available():
        assert blocks._pool and blocks._pool[0][0] == 3
        blocks._pool[0][1].shutdown()


@needs_native
@pytest.mark.parametrize("rows", [301, 3 * blocks.BLOCK + 1, 30 * blocks.BLOCK + 7])
@pytest.mark.parametrize("tiled", [False, True], ids=["one call", "tiled"])
def test_an_objective_over_data_is_the_sum_over_indexed_data_on_any_threads(
        rows: int, tiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The row loop and an indexed function's sum (one call of its whole program, or tiled) are one
    mechanism: the same bits, on 1, 2 and 5 threads, and NumPy's (the python backends)."""
    d = _data(rows)
    monkeypatch.setattr(native_loops, "WHOLE_MAX_ROWS", 0 if tiled else 10**9)
    f = symad.compile(INDEXED.format(R=rows), wrt=["a", "b"])
    assert f._whole is not None and f._whole.program.tiled == tiled
    numpy_only = symad.compile(INDEXED.format(R=rows), wrt=["a", "b"], backend="python")
    at = {**POINT, **d}
    want_v, want_g = numpy_only.value_and_grad(at)
    python_rows = symad.objective(ROW, d, wrt=["a", "b"], backend="python")
    assert python_rows.value_and_grad([0.3, -0.7])[0] == want_v
    for threads in (1, 2, 5):
        _threads(monkeypatch, threads)
        obj = symad.objective(ROW, d, wrt=["a", "b"], threads=threads)
        for v, g in (obj.value_and_grad([0.3, -0.7]), f.value_and_grad(at)):
            assert v == want_v and np.array_equal(g, want_g), threads
        assert obj.value([0.3, -0.7]) == f.value(at) == want_v


@needs_native
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_starts_its_own_block_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    _threads(monkeypatch, 2)
    d = _data(3 * blocks.BLOCK + 1)
    obj = symad.objective(ROW, d, wrt=["a", "b"], threads=2)
    want = obj.value_and_grad([0.3, -0.7])
    assert blocks._pool  # the parent's pool, whose threads the child has not
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            v, g = obj.value_and_grad([0.3, -0.7])
            os.write(write, np.concatenate([[v], g]).tobytes())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        if not select.select([pipe], [], [], 60)[0]:  # only a hang takes this long (the child takes ms)
            os.kill(pid, signal.SIGKILL)
        got = np.frombuffer(pipe.read(), dtype=np.float64)
    os.waitpid(pid, 0)
    assert np.array_equal(got, np.concatenate([[want[0]], want[1]]))
    blocks._pool[0][1].shutdown()
