"""Large batches on native code, split among threads: each part reads and writes its own rows.

The machine code releases the interpreter lock, so the parts of a batch of
:data:`~symad.runtime.blocks.PARALLEL_MIN_ROWS` points or more run at once, one part a thread
of :mod:`symad.runtime.blocks` (the threads every loop over rows shares).  A point's outputs
do not depend on the part it falls in.
"""

from __future__ import annotations

import numpy as np

from symad import native
from symad.runtime import blocks


def run_batch(program: native.NativeProgram, rows: np.ndarray, out: np.ndarray) -> None:
    """``program``'s outputs at each row of ``rows`` (C-contiguous float64) into the rows of
    ``out``: in one call, or in parts on the block threads for a large batch."""
    n = rows.shape[0]
    threads = blocks.THREADS if n >= blocks.PARALLEL_MIN_ROWS else 1
    if threads <= 1:
        program.batch(rows.ctypes.data, out.ctypes.data, n)
        return
    bounds = np.linspace(0, n, threads + 1).astype(int).tolist()
    in_row, out_row = rows.ctypes.data, out.ctypes.data
    width_in, width_out = 8 * rows.shape[1], 8 * out.shape[1]

    def run(part: int) -> None:
        lo, hi = bounds[part], bounds[part + 1]
        program.batch(in_row + lo * width_in, out_row + lo * width_out, hi - lo)

    blocks.share(threads, run, threads)
