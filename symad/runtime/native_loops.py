"""Sums and maps kept as loops, run as machine code: one compiled loop per binder, whatever its range.

A binder's body is scheduled once over its own inputs: the index (a column ``lo..hi``), each
entry ``x[i + c]`` (a column: ``x`` read in place from ``lo + c``) and its captures (the same in
every row).  A ``sum`` runs the row-sum loop of :func:`symad.native.compile_rows` over blocks of
:data:`BLOCK` rows, the blocks shared among the threads and added in block order, so the bits
are the same on any number of cores; an ``each`` runs :func:`symad.native.compile_map` over the
indices where every entry it reads lies inside its vector, and the few edge indices (where a
guarded term would read past an end) run in NumPy (:mod:`symad.backends.arrays`), with the
same ops and so the same bits.  Compile time and memory depend on the body, not on the range.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from symad import native
from symad.backends.arrays import BLOCK, ArrayProgram
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import SymadError
from symad.runtime import batches
from symad.schedule.schedule import Schedule

Vectors = Mapping[str, tuple[np.ndarray, tuple[int, ...]]]


class _Loop:
    """One binder's compiled body, with where each input comes from."""

    def __init__(self, graph: Graph, node: int):
        self.graph, self.node = graph, node
        self.level, self.low, self.high = graph.data[node]  # type: ignore[misc]
        self.op = graph.op[node]
        body, *caps = graph.args[node]
        index = graph.index(self.level)
        self.items = binders.items(graph, body, self.level)
        self.caps = caps
        inputs = [index, *self.items, *caps]
        self.schedule = Schedule.build(graph, [body], inputs)
        self.sources = [("col", 0), *(("col", k + 1) for k in range(len(self.items))),
                        *(("w", k) for k in range(len(caps)))]
        self.shifts = []
        for item in self.items:
            if len(graph.args[item]) != 2:
                raise NotImplementedError  # an entry of several indices: NumPy runs this loop
            coef, shift = binders.affine(graph, graph.args[item][1])  # type: ignore[misc]
            if coef != {self.level: 1}:
                raise NotImplementedError  # a stride other than 1: NumPy runs this loop
            self.shifts.append((graph.data[graph.args[item][0]], shift))
        self.index = np.arange(self.low, self.high + 1, dtype=np.float64)
        compile_ = native.compile_rows if self.op == "sum" else native.compile_map
        self.program = compile_(self.schedule, self.sources)

    def _columns(self, low: int, vectors: Vectors) -> list[np.ndarray]:
        """The columns from index ``low`` on: the index, then each entry's vector read in place."""
        cols = [self.index[low - self.low:]]
        for name, shift in self.shifts:
            array, (first,) = vectors[name]
            cols.append(array[low + shift - first:])
        return cols

    def interior(self, vectors: Vectors) -> tuple[int, int]:
        """The indices at which every entry read lies inside its vector."""
        low, high = self.low, self.high
        for name, shift in self.shifts:
            array, (first,) = vectors[name]
            low = max(low, first - shift)
            high = min(high, first + len(array) - 1 - shift)
        return low, high

    def sum(self, caps: list[float], vectors: Vectors) -> float:
        cols = self._columns(self.low, vectors)
        pointers = np.array([c.ctypes.data for c in cols], dtype=np.uintp)
        strides = np.ones(len(cols), dtype=np.int64)
        w = np.array(caps, dtype=np.float64) if caps else np.zeros(1)
        count = self.high - self.low + 1
        blocks = -(-count // BLOCK)
        partial = np.zeros(blocks)
        rows = self.program.rows
        wp, cp, sp, out = w.ctypes.data, pointers.ctypes.data, strides.ctypes.data, partial.ctypes.data

        def run(b: int) -> None:
            rows(wp, cp, sp, None, b * BLOCK, min(count, (b + 1) * BLOCK), out + 8 * b)

        _share(blocks, run)
        return float(partial.sum() if blocks > 1 else partial[0])

    def each(self, caps: list[float], vectors: Vectors, low: int, high: int, out: np.ndarray) -> None:
        """The body at indices ``low..high`` (all inside) into ``out[low - self.low ...]``."""
        cols = self._columns(low, vectors)
        pointers = np.array([c.ctypes.data for c in cols], dtype=np.uintp)
        w = np.array(caps, dtype=np.float64) if caps else np.zeros(1)
        count = high - low + 1
        run_map = self.program.map
        base = out[low - self.low:].ctypes.data
        wp, cp = w.ctypes.data, pointers.ctypes.data
        blocks = -(-count // BLOCK)

        def run(b: int) -> None:
            run_map(wp, cp, b * BLOCK, min(count, (b + 1) * BLOCK), base, 0)

        _share(blocks, run)


def _share(blocks: int, run: Callable[[int], None]) -> None:
    """``run(b)`` for every block, on the batch threads when there are several blocks."""
    pool = batches.pool() if blocks > 1 else None
    if pool is None:
        for b in range(blocks):
            run(b)
        return
    todo = iter(range(blocks))

    def work() -> None:
        for b in todo:
            run(b)

    futures = [pool.submit(work) for _ in range(batches.BATCH_THREADS - 1)]
    work()
    for f in futures:
        f.result()


def compiled_loops(graph: Graph, program: ArrayProgram) -> dict[int, Callable[..., Any]]:
    """Runners for ``program``'s top-level binders that compile (the others stay in NumPy):
    ``runner(captures, vectors)`` gives the binder's value."""
    if not native.available():
        return {}
    runners: dict[int, Callable[..., Any]] = {}
    for node in program.loops:
        if binders.levels(graph)[node] >= 0 or graph.op[node] not in ("sum", "each"):
            continue
        try:
            loop = _Loop(graph, node)
        except (NotImplementedError, SymadError):  # a loop inside, or an entry it cannot read in place
            continue
        runners[node] = _runner(loop, program)
    return runners


def _runner(loop: _Loop, program: ArrayProgram) -> Callable[..., Any]:
    if loop.op == "sum":
        return loop.sum

    def each(caps: list[float], vectors: Vectors) -> np.ndarray:
        out = np.empty(loop.high - loop.low + 1)
        low, high = loop.interior(vectors)
        if low > high:
            out[:] = program.each_at(loop.node, loop.low, loop.high, caps, vectors)
            return out
        loop.each(caps, vectors, low, high, out)
        for lo, hi in ((loop.low, low - 1), (high + 1, loop.high)):
            if lo <= hi:  # the edges, where a guarded term would read past an end: NumPy, clamped
                out[lo - loop.low:hi - loop.low + 1] = program.each_at(loop.node, lo, hi, caps, vectors)
        return out

    return each
