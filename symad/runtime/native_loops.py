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
from symad.schedule.loop_nest import NotCompiled, loop_nest
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
        # the index, where the body reads it as a number, is counted by the loop (w's last slot holds
        # the first row's), not read from a column (10^7 rows: 80 MB)
        self.reads_index = index in graph.reachable([body], {*self.items, *caps})
        inputs = [*self.items, *caps] + [index] * self.reads_index
        self.schedule = Schedule.build(graph, [body], inputs)
        self.sources = ([("col", k) for k in range(len(self.items))] + [("w", k) for k in range(len(caps))]
                        + [("row", len(caps))] * self.reads_index)
        self.shifts = []
        for item in self.items:
            if len(graph.args[item]) != 2:
                raise NotImplementedError  # an entry of several indices: NumPy runs this loop
            coef, shift = binders.affine(graph, graph.args[item][1])  # type: ignore[misc]
            if coef != {self.level: 1}:
                raise NotImplementedError  # a stride other than 1: NumPy runs this loop
            self.shifts.append((graph.data[graph.args[item][0]], shift))
        self.names = sorted({name for name, _ in self.shifts})
        self._clamped: dict[tuple[int, int, int], np.ndarray] = {}  # read-only: safe across threads
        self.strides = np.ones(max(1, len(self.items)), dtype=np.int64)
        compile_ = native.compile_rows if self.op == "sum" else native.compile_map
        self.program = compile_(self.schedule, self.sources)

    def _columns(self, low: int, high: int, vectors: Vectors, bases: dict[str, int],
                 keep: list[np.ndarray]) -> np.ndarray:
        """The addresses of the columns of indices ``low..high``: the index, then each entry's vector
        read in place (``bases``: each vector's address), or, where an entry would read past an end,
        a copy reading the nearest entry instead, kept alive in ``keep``: only a guarded term reads
        there, as in :mod:`symad.backends.arrays`."""
        count = high - low + 1
        pointers = np.empty(max(1, len(self.shifts)), dtype=np.uintp)
        for k, (name, shift) in enumerate(self.shifts):
            array, (first,) = vectors[name]
            start = low + shift - first
            if start >= 0 and start + count <= len(array):
                pointers[k] = bases[name] + 8 * start
                continue
            key = (start, count, len(array))
            picks = self._clamped.get(key)
            if picks is None:  # the same few edge indices at every call: found once
                picks = self._clamped[key] = np.clip(np.arange(start, start + count), 0, len(array) - 1)
            copy = array[picks]
            keep.append(copy)
            pointers[k] = copy.__array_interface__["data"][0]
        return pointers

    def interior(self, vectors: Vectors) -> tuple[int, int]:
        """The indices at which every entry read lies inside its vector."""
        low, high = self.low, self.high
        for name, shift in self.shifts:
            array, (first,) = vectors[name]
            low = max(low, first - shift)
            high = min(high, first + len(array) - 1 - shift)
        return low, high

    def _bases(self, vectors: Vectors) -> dict[str, int]:
        return {name: vectors[name][0].__array_interface__["data"][0] for name in self.names}

    def sum(self, caps: list[float], vectors: Vectors) -> float:
        keep: list[np.ndarray] = []
        pointers = self._columns(self.low, self.high, vectors, self._bases(vectors), keep)
        strides = self.strides
        w = self._w(caps, self.low)
        count = self.high - self.low + 1
        blocks = -(-count // BLOCK)
        partial = np.zeros(blocks)
        rows = self.program.rows
        wp, cp, sp, out = (a.__array_interface__["data"][0] for a in (w, pointers, strides, partial))

        def run(b: int) -> None:
            rows(wp, cp, sp, None, b * BLOCK, min(count, (b + 1) * BLOCK), out + 8 * b)

        _share(blocks, count, run)
        return float(partial.sum() if blocks > 1 else partial[0])

    def each(self, caps: list[float], vectors: Vectors) -> np.ndarray:
        """The body at every index: the indices whose entries lie inside their vectors read them in
        place, the few at the edges read copies (see :meth:`_columns`)."""
        out = np.empty(self.high - self.low + 1)
        low, high = self.interior(vectors)
        parts = [(low, high)] if low <= high else []
        if low > high:
            parts.append((self.low, self.high))
        else:
            parts += [(lo, hi) for lo, hi in ((self.low, low - 1), (high + 1, self.high)) if lo <= hi]
        keep: list[np.ndarray] = []
        base = out.__array_interface__["data"][0]
        bases = self._bases(vectors)
        for lo, hi in parts:
            self._map(self._w(caps, lo), self._columns(lo, hi, vectors, bases, keep), base + 8 * (lo - self.low),
                      hi - lo + 1)
        return out

    def _w(self, caps: list[float], low: int) -> np.ndarray:
        """The values the same in every row: the captures, then the first row's index if it is read."""
        values = [*caps, float(low)] if self.reads_index else caps
        return np.array(values, dtype=np.float64) if values else np.zeros(1)

    def _map(self, w: np.ndarray, pointers: np.ndarray, base: int, count: int) -> None:
        run_map = self.program.map
        wp, cp = w.__array_interface__["data"][0], pointers.__array_interface__["data"][0]
        blocks = -(-count // BLOCK)

        def run(b: int) -> None:
            run_map(wp, cp, b * BLOCK, min(count, (b + 1) * BLOCK), base, 0)

        _share(blocks, count, run)


def _share(blocks: int, count: int, run: Callable[[int], None]) -> None:
    """``run(b)`` for every block, on the batch threads when the loop is long enough to pay."""
    pool = batches.pool() if count >= batches.PARALLEL_MIN_POINTS else None
    if pool is None:
        for b in range(blocks):
            run(b)
        return
    todo = iter(range(blocks))

    def work() -> None:
        for b in todo:
            run(b)

    futures = [pool.submit(work) for _ in range(min(blocks, batches.BATCH_THREADS) - 1)]
    work()
    for f in futures:
        f.result()


class _Nest:
    """A top-level binder with loops inside its body (or entries of several indices, or strides),
    as one machine-code loop nest (:func:`symad.native.compile_nest`)."""

    def __init__(self, graph: Graph, node: int, spans: Mapping[str, Any]):
        self.nest = loop_nest(graph, node, spans)
        self.program = native.compile_nest(self.nest)
        _, self.low, self.high = graph.data[node]  # type: ignore[misc]
        self.sums = graph.op[node] == "sum"

    def __call__(self, caps: list[float], vectors: Vectors) -> Any:
        w = np.array(caps, dtype=np.float64) if caps else np.zeros(1)
        bases = np.array([vectors[name][0].__array_interface__["data"][0] for name in self.nest.vectors] or [0],
                         dtype=np.uintp)
        count = self.high - self.low + 1
        blocks = -(-count // BLOCK)
        out = np.zeros(blocks) if self.sums else np.empty(count)
        run_nest = self.program.nest
        wp, bp, op = (a.__array_interface__["data"][0] for a in (w, bases, out))
        sums = self.sums

        def run(b: int) -> None:
            run_nest(wp, bp, b * BLOCK, min(count, (b + 1) * BLOCK), op + 8 * b if sums else op)

        _share(blocks, count, run)
        if not sums:
            return out
        return float(out.sum() if blocks > 1 else out[0])


def compiled_loops(graph: Graph, program: ArrayProgram, spans: Mapping[str, Any] | None = None
                   ) -> dict[int, Callable[..., Any]]:
    """Runners for ``program``'s top-level binders that compile (the others stay in NumPy):
    ``runner(captures, vectors)`` gives the binder's value.  ``spans`` (the vectors' domains) let a
    binder with loops inside compile as a loop nest."""
    if not native.available():
        return {}
    runners: dict[int, Callable[..., Any]] = {}
    for node in program.loops:
        if binders.levels(graph)[node] >= 0 or graph.op[node] not in ("sum", "each"):
            continue
        try:
            loop = _Loop(graph, node)
        except (NotImplementedError, SymadError):  # a loop inside, or an entry it cannot read in place
            if spans is None:
                continue
            try:
                runners[node] = _Nest(graph, node, spans)
            except NotCompiled:
                pass
            continue
        runners[node] = _runner(loop, program)
    return runners


def _runner(loop: _Loop, program: ArrayProgram) -> Callable[..., Any]:
    return loop.sum if loop.op == "sum" else loop.each
