"""Sums of a schedule's outputs over the rows of data: one fused loop, the cores sharing the rows.

The loop is one case of :mod:`symad.runtime.blocks`, the mechanism every compiled loop over rows
runs on (an indexed function's ``sum(i = ..., ...)`` too): the rows are cut into blocks of
:data:`~symad.runtime.blocks.BLOCK` rows (a fixed size, not one that depends on the machine),
each block's sums computed in the canonical order of a block (two lanes), the blocks shared among
the cores and their sums added in the canonical order (:func:`symad.runtime.blocks.add`).  The
result is therefore the same bits on every run, on any number of cores, and those of the same
sum written over indexed data.  The data are read in place: each column is a float64 array at any
stride.

A row's subexpressions that are the same in every row are not computed in the loop
(:func:`row_parts`): those of the point alone (``lgamma(exp(a))``) once a call, before it (the
``prelude``); those of the data alone (``lgamma(y + 1)``) once, into derived columns the loop reads
(:func:`symad.objectives.columns.derived_columns`).  Each is computed by the same op's code, so
the sums are the bits the loop computing them itself gives.

Native code (:func:`symad.native.compile_rows`) runs the loop.  Under the ``auto``
backend, when the optimised loop is neither compiled in this process nor on disk, the shared
instruction interpreter runs it (:class:`symad.backends.vm.InterpretedRows`: built in about a
microsecond a step, without loading LLVM) while the optimised loop compiles in a background
thread: a tier of the blocks' mechanism, each block run by the loop serving when it starts, so
blocks started after the optimised loop arrives run on it, even within a pass.  Both give the
same bits, so which one ran a block never shows.  Without llvmlite, NumPy code runs the loop, a
block at a time (its inputs gathered into a block-sized array, its rows added in the block's
order by :func:`symad.backends.arrays.blocked_sum`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from symad import native
from symad.backends.arrays import blocked_sum
from symad.backends.vm import InterpretedRows, VMProgram
from symad.core import forksafe
from symad.core.dag import Graph
from symad.core.ops.straight import instructions
from symad.runtime import background, blocks
from symad.runtime.program import Program
from symad.schedule.schedule import Schedule

# What computing a subexpression apart must save per row to beat reading its value from memory:
# about a few instructions' worth (a C library call counts many: straight.LIBRARY_CALL).
HOIST_COST = 8
_COST_CAP = 1 << 30  # (a DAG's shared parts are counted once per use: the sums may grow fast)


def row_parts(graph: Graph, schedule: Schedule, point: Sequence[int],
              data: Sequence[int]) -> tuple[list[int], list[int]]:
    """The subexpressions of a row's ``schedule`` (its inputs ``point`` then ``data``) worth
    computing apart: ``(per_call, per_data)``, the largest ones of the ``point`` variables alone
    (and constants), and of the ``data`` variables alone, that the rest of the row (or an output)
    reads, each costing at least :data:`HOIST_COST` instructions a row (cheaper ones stay in the
    loop: reading a value back would cost as much), and at most as many of the data's as ``data``
    has columns (the costliest).  Nodes of ``graph``, in the schedule's order."""
    mask: dict[int, int] = dict.fromkeys(schedule.consts, 0)  # 1: the point's alone, 2: the data's, 3: both
    mask.update(dict.fromkeys(point, 1))
    mask.update(dict.fromkeys(data, 2))
    cost: dict[int, int] = dict.fromkeys(mask, 0)  # instructions (shared parts counted each time), capped
    read = set(schedule.outputs)
    for node, op, args in schedule.steps:
        m, c = 0, instructions(op)
        for a in args:
            m |= mask[a]
            c += cost[a]
        mask[node], cost[node] = m, min(c, _COST_CAP)
        if m == 3:
            read.update(args)
    per_call: list[int] = []
    per_data: list[int] = []
    known = len(graph.op)  # (the lowering's own nodes are numbered past the graph's: never inputs)
    for node, _, _ in schedule.steps:
        if node in read and node < known and mask[node] in (1, 2) and cost[node] >= HOIST_COST:
            (per_call if mask[node] == 1 else per_data).append(node)
    # at most as many derived columns as data columns (the memory at most doubles): the costliest
    kept = set(sorted(per_data, key=lambda n: -cost[n])[:len(data)])
    return per_call, [n for n in per_data if n in kept]


def evaluator(graph: Graph, outputs: Sequence[int], inputs: Sequence[int], backend: str) -> Any:
    """``outputs`` of ``inputs`` with ``point(x)`` and ``batch(rows)``, built without a compile: on the
    instruction interpreter (the ops' own machine code) where native code is on, else Python code."""
    schedule = Schedule.build(graph, outputs, inputs)
    if backend != "python" and native.available():
        return VMProgram(schedule)
    return Program.from_schedule(schedule, "python", background=False)


class RowSums:
    """The sums of ``schedule``'s outputs over rows: ``sums(w, rows)``.

    ``sources[k]`` places input ``k``: ``("w", i)`` (the vector ``w``) or ``("col", j)``
    (``columns[j]``, one float64 value per row).  ``prelude`` (None: none) gives the values
    the same in every row from the ``w`` a call is given; the loop reads them after it
    (``("w", len(w) + k)``).
    """

    def __init__(self, schedule: Schedule, sources: list[tuple[str, int]], columns: list[np.ndarray],
                 n_rows: int, backend: str = "auto", threads: int | None = None, tiered: bool = True,
                 prelude: Callable[[np.ndarray], np.ndarray] | None = None):
        self.schedule, self.sources, self.n_rows, self.prelude = schedule, sources, n_rows, prelude
        self.n_out = len(schedule.outputs)
        self.columns = columns  # kept alive: the machine code reads them by address
        self.threads = threads or blocks.THREADS
        self.native = backend != "python" and native.available()
        # the interpreter first, the optimised loop in the background (backend auto; not on Dask's workers)
        self.tiered = tiered and self.native and backend == "auto"
        self._program: Any = None
        self._optimised = False  # whether _program is the optimised loop (or the only one there is)
        self._thread: background.Task | None = None
        self._lock = threading.Lock()
        forksafe.register(self)
        if columns:
            self._cols = np.array([c.ctypes.data for c in columns], dtype=np.uintp)
            self._strides = np.array([c.strides[0] // 8 for c in columns], dtype=np.int64)
        else:
            self._cols = np.zeros(1, dtype=np.uintp)
            self._strides = np.zeros(1, dtype=np.int64)

    @property
    def optimised(self) -> bool:
        """Whether the passes run on the optimised loop (or on the only code there is)."""
        return self._optimised

    def program(self) -> Any:
        """The loop that serves passes now: built on first use (see the module's notes)."""
        if self._program is None:
            with self._lock:
                if self._program is None:
                    self._program = self._first_program()
        return self._program

    def optimised_program(self) -> Any:
        """The optimised loop, compiled now (or awaited, if a background compile is under way)."""
        self.program()
        thread = self._thread
        if not self._optimised and thread is not None:
            thread.join()
        if not self._optimised:  # its compile failed, or ran in the parent of this forked process
            with self._lock:
                if not self._optimised:
                    self._program, self._optimised = native.compile_rows(self.schedule, self.sources), True
        return self._program

    def _first_program(self) -> Any:
        if not self.native:
            self._optimised = True
            return Program.from_schedule(self.schedule, "python", background=False)
        best = native.rows_if_cached(self.schedule, self.sources) if self.tiered else None
        if best is None and not self.tiered:
            best = native.compile_rows(self.schedule, self.sources)
        if best is not None:
            self._optimised = True
            return best
        first = InterpretedRows(self.schedule, self.sources)
        # A task of the background pool: skipped if this object is dropped first, abandoned at exit.
        self._thread = background.submit(self._optimise)
        return first

    def _optimise(self) -> None:
        try:
            program = native.compile_rows(self.schedule, self.sources)
        except Exception:  # noqa: BLE001 - the interpreter keeps serving; optimised_program() compiles again
            return
        with self._lock:
            self._program, self._optimised = program, True

    def sums(self, w: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Each output summed over every row (``rows`` None) or over the rows ``rows`` (int64 indexes)."""
        return blocks.add(self.block_sums(w, rows))

    def block_sums(self, w: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Each block's sums, in block order (shape ``(blocks, outputs)``): what :meth:`sums` adds."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        if self.prelude is not None:
            w = np.concatenate((w, self.prelude(w)))
        count = self.n_rows if rows is None else len(rows)
        partial = np.zeros((blocks.count(count), self.n_out))
        program = self.program()
        if self.native:
            run = self._native_block(w, rows, count, partial)
        else:
            run = self._numpy_block(program, w, rows, count, partial)
        blocks.share(len(partial), run, self.threads)  # a block's sums are the same whoever runs it
        return partial

    def _native_block(self, w: np.ndarray, rows: np.ndarray | None, count: int, partial: np.ndarray) -> Any:
        wp, cp, sp = w.ctypes.data, self._cols.ctypes.data, self._strides.ctypes.data
        ip = None if rows is None else rows.ctypes.data
        out, width = partial.ctypes.data, 8 * self.n_out

        def run(b: int) -> None:
            program = self._program  # the loop serving now: the optimised one once it has arrived
            (start, end), at = blocks.span(b, count), out + b * width
            if isinstance(program, native.RowsProgram):
                program.rows(wp, cp, sp, ip, start, end, at)
            else:
                program.rows(w, cp, sp, ip, start, end, at)

        return run

    def _numpy_block(self, program: Program, w: np.ndarray, rows: np.ndarray | None, count: int,
                     partial: np.ndarray) -> Any:
        def run(b: int) -> None:
            start, end = blocks.span(b, count)
            picked = slice(start, end) if rows is None else rows[start:end]
            inputs = np.empty((end - start, len(self.sources)))
            for k, (kind, i) in enumerate(self.sources):
                inputs[:, k] = w[i] if kind == "w" else self.columns[i][picked]
            # each output's rows added as the compiled loop adds them (one block: two lanes)
            partial[b] = blocked_sum(np.ascontiguousarray(program.batch(inputs).T))

        return run
