"""Long loops cut into blocks the cores share: the one mechanism every compiled loop over rows runs on.

An objective's sums over data (:class:`symad.objectives.row_sums.RowSums`, a Dask chunk's, the
derived columns), an indexed function's top-level sums and maps
(:mod:`symad.runtime.native_loops`) and the parts of a large batch of points
(:mod:`symad.runtime.batches`) all run here.  A range of rows is cut into blocks of
:data:`BLOCK` rows: a size fixed by the code generator (:data:`symad.schedule.loop_nest.BLOCK`;
a whole program's sums are cut so inside its machine code), never by the machine.
:func:`share` runs a block at a time: this thread and the threads of the one pool (:func:`pool`)
each take the next block until none is left, and a helper that has not started when the caller
is done is withdrawn (so a call from a pool thread while the others are busy finishes alone).

A sum's block writes its sums into its own row of a partial-sums array, and :func:`add` adds the
blocks' sums in the canonical order: each output's blocks as one contiguous array, NumPy's
pairwise sum (the order of :func:`symad.backends.arrays.blocked_sum` and of the generated code).
Which thread ran a block, and how many threads there were, never shows in the bits.

What runs a block is the caller's tier, read afresh at each block: the optimised machine code;
before it, the row sums' instruction interpreter while the loop compiles in the background
(each block the loop's bits); without llvmlite, NumPy, a block at a time.

The pool starts on first need, grows when a caller asks for more threads, is started afresh in
a forked child (its threads do not exist there), and is joined at exit by
:mod:`concurrent.futures` (imported only with the first pool, which registers that hook).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from symad.core import forksafe
from symad.schedule.loop_nest import BLOCK


def default_threads() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


THREADS = default_threads()  # threads a loop runs on unless its caller says otherwise
PARALLEL_MIN_ROWS = 20_000  # a shorter loop (or batch) runs on the calling thread: threads would cost more

_pool: list[tuple[int, Any]] = []  # (its threads, the ThreadPoolExecutor), once started
_pool_lock = threading.Lock()


def pool(threads: int | None = None) -> Any:
    """The one pool of block threads, with at least ``threads`` (default :data:`THREADS`) threads:
    started on first need, replaced by a larger one when more are asked (the old one's threads end
    when it is dropped)."""
    want = max(1, threads or THREADS)
    with _pool_lock:
        if not _pool or _pool[0][0] < want:
            from concurrent.futures import ThreadPoolExecutor  # (its import registers an exit hook)

            _pool[:] = [(want, ThreadPoolExecutor(want, thread_name_prefix="symad-blocks"))]
        return _pool[0][1]


def _reset_after_fork() -> None:
    global _pool_lock
    _pool.clear()
    _pool_lock = threading.Lock()


forksafe.after_fork_in_child(_reset_after_fork)


def count(rows: int) -> int:
    """The blocks of ``rows`` rows (one at least)."""
    return max(1, -(-rows // BLOCK))


def span(block: int, rows: int) -> tuple[int, int]:
    """The rows ``start, end`` of block ``block`` of ``rows`` rows."""
    return block * BLOCK, min(rows, (block + 1) * BLOCK)


def on_threads(work: Callable[[], None], threads: int) -> None:
    """``work()`` on this thread and on ``threads - 1`` pool threads at once (each call takes what is
    left of a shared supply of blocks); returns when every call that started has returned."""
    futures = []
    if threads > 1:
        helpers = pool(threads)
        for _ in range(threads - 1):
            try:
                futures.append(helpers.submit(work))  # machine code releases the GIL
            except RuntimeError:  # no thread could be started (or the pool is shut at exit)
                break
    try:
        work()
    finally:
        # Wait for the helpers that started; withdraw the others, which would find nothing left (and
        # might never start: a call from a pool thread while the other pool threads wait).
        for f in futures:
            if not f.cancel():
                f.result()


def share(blocks: int, run: Callable[[int], None], threads: int | None = None) -> None:
    """``run(b)`` for every block ``b`` in ``range(blocks)``, each taken by the next free thread of
    at most ``threads`` (default :data:`THREADS`): a block's result must not depend on who runs it."""
    workers = min(blocks, threads or THREADS)
    if workers <= 1:
        for b in range(blocks):
            run(b)
        return
    todo: Iterator[int] = iter(range(blocks))  # (next() on a range iterator is atomic under the GIL)

    def work() -> None:
        for b in todo:
            run(b)

    on_threads(work, workers)


def add(partial: np.ndarray) -> Any:
    """The blocks' sums added in the canonical order: ``partial[b]`` block ``b``'s sum (a float), or
    its sums of several outputs (a row); each output's blocks as one contiguous array, NumPy's
    pairwise sum.  A float for 1-D ``partial``, else an array of the outputs.

    >>> add(np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]]))
    array([ 6., 60.])
    """
    if partial.ndim == 1:
        return float(partial[0]) if len(partial) == 1 else float(partial.sum())
    if len(partial) == 1:
        return partial[0].copy()
    # (summed down a column, NumPy adds the rows one after another: not the pairwise order)
    return np.ascontiguousarray(partial.T).sum(axis=1)
