"""Large batches on native code, split among threads: each part reads and writes its own rows.

The machine code releases the interpreter lock, so the parts of a batch of
``PARALLEL_MIN_POINTS`` points or more run at once, on a pool of ``BATCH_THREADS``
threads started on first need.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from symad import native
from symad.core import forksafe

PARALLEL_MIN_POINTS = 20_000
BATCH_THREADS = min(os.cpu_count() or 1, 8)  # large batches are split into this many parts
_pool: list[Any] = []  # the ThreadPoolExecutor, once started
_pool_lock = threading.Lock()


def _batch_pool() -> Any:
    """The threads that run the parts of a large batch, started once (starting threads for
    each batch cost as much as computing 10^6 points); None on one core."""
    if BATCH_THREADS == 1:
        return None
    with _pool_lock:
        if not _pool:
            from concurrent.futures import ThreadPoolExecutor  # (its import registers an exit hook)

            _pool.append(ThreadPoolExecutor(BATCH_THREADS, thread_name_prefix="symad-batch"))
    return _pool[0]


def pool() -> Any:
    """The batch threads' pool (None on one core): parts of any large loop may run on it."""
    return _batch_pool()


def _reset_after_fork() -> None:
    # The pool's threads do not exist in a child: a new pool starts on the child's first
    # large batch.  Compile threads do not exist there either (see Function's tiers).
    global _pool_lock
    _pool.clear()
    _pool_lock = threading.Lock()


forksafe.after_fork_in_child(_reset_after_fork)


def run_batch(program: native.NativeProgram, rows: np.ndarray, out: np.ndarray) -> None:
    """``program``'s outputs at each row of ``rows`` (C-contiguous float64) into the rows of
    ``out``: in one call, or in parts on the pool's threads for a large batch."""
    n = rows.shape[0]
    pool = _batch_pool() if n >= PARALLEL_MIN_POINTS else None
    if pool is None:
        program.batch(rows.ctypes.data, out.ctypes.data, n)
        return
    bounds = np.linspace(0, n, BATCH_THREADS + 1).astype(int).tolist()
    in_row, out_row = rows.ctypes.data, out.ctypes.data
    width_in, width_out = 8 * rows.shape[1], 8 * out.shape[1]

    def run(lo_hi: tuple[int, int]) -> None:
        lo, hi = lo_hi
        program.batch(in_row + lo * width_in, out_row + lo * width_out, hi - lo)

    futures = []
    for part in zip(bounds[:-1], bounds[1:]):
        try:
            futures.append(pool.submit(run, part))  # ctypes releases the GIL
        except RuntimeError:  # no thread could be started (or the pool is shut at exit)
            run(part)
    for future in futures:
        future.result()
