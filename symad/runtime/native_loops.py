"""Sums and maps kept as loops, run as machine code, whatever their range.

Up to :data:`WHOLE_MAX_ROWS` rows in all (and iterations, counting the sums inside the bodies), a
function's outputs are one call of one function (:class:`WholeProgram`,
:func:`symad.native.compile_program`). Beyond, the same program runs tiled: block ``b`` of every
loop at once (x read once, the gradient written once), the blocks taken by the block threads in
any order, unless a loop reads what another computes. Then, and for the other programs over loops
(Hessian-vector products...), each top-level loop runs on its own: its body is scheduled once over
its inputs (each entry ``x[i + c]`` a column, ``x`` read in place; its captures and, where the
body reads it, its first index, the same in every row). A ``sum`` runs the row-sum loop
(:func:`symad.native.compile_rows`, the loop an objective's sums over data run) over blocks of
:data:`~symad.runtime.blocks.BLOCK` rows; an ``each`` runs the vectorised map loop
(:func:`symad.native.compile_map`) over the rows whose entries lie inside their vectors, a block
at a time, and its clamped twin over the few edge rows; a loop with loops inside runs as a loop
nest (:func:`symad.native.compile_nest`). Blocks, threads and the addition of the blocks' sums are
:mod:`symad.runtime.blocks`'s, the one mechanism of every loop over rows: every sum adds in the
canonical order of :func:`symad.backends.arrays.blocked_sum`, so the bits are NumPy's on any
number of cores. Compile time and memory depend on the body, not on the range.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from symad import native
from symad.backends.arrays import ArrayProgram, blocked_prod
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import SymadError
from symad.runtime import blocks, policy
from symad.schedule.loop_nest import LoopProgram, NotCompiled, Scope, loop_nest, loop_program
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
        _check_quick(self.schedule.size)
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
        self.strides = np.ones(max(1, len(self.items)), dtype=np.int64)
        self.strides_at = self.strides.__array_interface__["data"][0]
        self._lock = threading.Lock()  # who uses the kept buffers
        self._kept = _Buffers(len(self.shifts), len(caps) + self.reads_index, self.high - self.low + 1)
        compile_ = native.compile_rows if self.op == "sum" else native.compile_map
        self.program = compile_(self.schedule, self.sources)

    def _buffers(self) -> _Buffers:
        """This loop's small arrays (column addresses, their limits, the values the same in every
        row, the blocks' sums) and their addresses: kept and reused a call, or fresh while another
        thread uses them (a call allocates nothing else but its result)."""
        if self._lock.acquire(blocking=False):
            return self._kept
        return _Buffers(len(self.shifts), len(self.caps) + self.reads_index, self.high - self.low + 1)

    def _release(self, buffers: _Buffers) -> None:
        if buffers is self._kept:
            self._lock.release()

    def _columns(self, vectors: Vectors, buffers: _Buffers) -> None:
        """The addresses of the entries' columns at row 0 (index ``low``), each vector read in place,
        and per column the rows at which it lies inside its vector (``lims[2k]``, ``lims[2k+1]``):
        an address may point past an end, where only the clamped loop reads (see :meth:`each`)."""
        pointers, lims = buffers.pointers, buffers.lims
        bases: dict[str, int] = {}
        low, high = 0, self.high - self.low  # the rows at which every entry lies inside its vector
        for k, (name, shift) in enumerate(self.shifts):
            array, (first,) = vectors[name]
            base = bases.get(name)
            if base is None:
                base = bases[name] = array.__array_interface__["data"][0]
            start = self.low + shift - first  # the entry at row 0, as an offset into the array
            pointers[k] = (base + 8 * start) % (1 << 64)
            lims[2 * k] = -start
            lims[2 * k + 1] = last = len(array) - 1 - start
            low, high = max(low, -start), min(high, last)
        buffers.interior = (low, high)

    def sum(self, caps: list[float], vectors: Vectors) -> float:
        buffers = self._buffers()
        try:
            self._columns(vectors, buffers)  # a sum's entries lie inside their vectors (their spans)
            self._w(caps, self.low, buffers.w)
            count = self.high - self.low + 1
            rows = self.program.rows
            wp, cp, sp, out = buffers.w_at, buffers.pointers_at, self.strides_at, buffers.partial_at

            def run(b: int) -> None:
                rows(wp, cp, sp, None, *blocks.span(b, count), out + 8 * b)

            _share(blocks.count(count), count, run)
            return blocks.add(buffers.partial)
        finally:
            self._release(buffers)

    def each(self, caps: list[float], vectors: Vectors) -> np.ndarray:
        """The body at every index: the rows whose entries lie inside their vectors read them in place
        (the vectorised loop), the few at the edges clamped (``edge``)."""
        count = self.high - self.low + 1
        out = np.empty(count)
        buffers = self._buffers()
        try:
            self._columns(vectors, buffers)
            self._w(caps, self.low, buffers.w)
            wp, cp, lp = buffers.w_at, buffers.pointers_at, buffers.lims_at
            op = out.__array_interface__["data"][0]
            low, high = buffers.interior  # the rows at which every entry lies inside its vector
            program = self.program
            if low > high:
                program.edge(wp, cp, lp, 0, count, op, 0)
                return out
            if low:
                program.edge(wp, cp, lp, 0, low, op, 0)
            if high + 1 < count:
                program.edge(wp, cp, lp, high + 1, count, op, 0)
            run_map = program.map
            inside = high - low + 1

            def run(b: int) -> None:
                start, end = blocks.span(b, inside)
                run_map(wp, cp, low + start, low + end, op, 0)

            _share(blocks.count(inside), inside, run)
            return out
        finally:
            self._release(buffers)

    def prod(self, caps: list[float], vectors: Vectors) -> float:
        """The factors as a map (:meth:`each`), multiplied in the canonical order
        (:func:`symad.backends.arrays.blocked_prod`): NumPy's bits."""
        return blocked_prod(self.each(caps, vectors))

    def _w(self, caps: list[float], low: int, w: np.ndarray) -> None:
        """The values the same in every row: the captures, then the first row's index if it is read."""
        for k, c in enumerate(caps):
            w[k] = c
        if self.reads_index:
            w[len(caps)] = low


class _Buffers:
    """A loop's small arrays for one call, and their addresses."""

    def __init__(self, columns: int, values: int, count: int):
        self.pointers = np.empty(max(1, columns), dtype=np.uintp)
        self.lims = np.empty(2 * max(1, columns), dtype=np.int64)
        self.w = np.zeros(max(1, values))
        self.partial = np.zeros(blocks.count(count))
        self.interior = (0, count - 1)
        self.pointers_at, self.lims_at, self.w_at, self.partial_at = (
            a.__array_interface__["data"][0] for a in (self.pointers, self.lims, self.w, self.partial))


def _share(count: int, rows: int, run: Callable[[int], None]) -> None:
    """``run(b)`` for each of ``count`` blocks of a loop of ``rows`` rows, on the block threads when
    the loop is long enough to pay."""
    blocks.share(count, run, blocks.THREADS if rows >= blocks.PARALLEL_MIN_ROWS else 1)


class _Nest:
    """A top-level binder with loops inside its body (or entries of several indices, or strides),
    as one machine-code loop nest (:func:`symad.native.compile_nest`)."""

    def __init__(self, graph: Graph, node: int, spans: Mapping[str, Any]):
        self.nest = loop_nest(graph, node, spans)
        _check_quick(_steps(self.nest.root))
        self.program = native.compile_nest(self.nest)
        _, self.low, self.high = graph.data[node]  # type: ignore[misc]
        self.sums = graph.op[node] == "sum"

    def __call__(self, caps: list[float], vectors: Vectors) -> Any:
        w = np.array(caps, dtype=np.float64) if caps else np.zeros(1)
        bases = np.array([vectors[name][0].__array_interface__["data"][0] for name in self.nest.vectors] or [0],
                         dtype=np.uintp)
        count = self.high - self.low + 1
        out = np.zeros(blocks.count(count)) if self.sums else np.empty(count)
        run_nest = self.program.run
        wp, bp, op = (a.__array_interface__["data"][0] for a in (w, bases, out))
        sums = self.sums

        def run(b: int) -> None:
            run_nest(wp, bp, *blocks.span(b, count), op + 8 * b if sums else op)

        _share(blocks.count(count), count, run)
        return blocks.add(out) if sums else out


def compiled_loops(graph: Graph, program: ArrayProgram, spans: Mapping[str, Any] | None = None
                   ) -> dict[int, Callable[..., Any]]:
    """Runners for ``program``'s top-level binders that compile (the others stay in NumPy):
    ``runner(captures, vectors)`` gives the binder's value.  ``spans`` (the vectors' domains) let a
    binder with loops inside compile as a loop nest."""
    if not native.available():
        return {}
    runners: dict[int, Callable[..., Any]] = {}
    for node in program.loops:
        if binders.levels(graph)[node] >= 0 or graph.op[node] not in ("sum", "each", "prod"):
            continue
        try:
            loop = _Loop(graph, node)
        except NotCompiled:
            continue
        except (NotImplementedError, SymadError):  # a loop inside, or an entry it cannot read in place
            if spans is None:
                continue
            try:
                runners[node] = _Nest(graph, node, spans)
            except NotCompiled:
                pass
            continue
        runners[node] = {"sum": loop.sum, "each": loop.each, "prod": loop.prod}[loop.op]
    return runners


# Up to this many rows in all its loops, a function's value and gradient run as one call of one
# machine-code function (no thread: what costs most at these sizes); beyond, as a tiled program
# whose blocks the cores share (each block of every loop at once, while its entries are in cache).
WHOLE_MAX_ROWS = 400_000
# Up to this many rows, a value and gradient over one vector go through the ``call`` entry, which
# keeps the GIL (about 50 us of work at most); longer programs release it for other threads.
CALL_MAX_ROWS = 1 << 16
# ``call(x, g) -> value``: keeps the GIL, takes the array objects (:func:`symad.native.loop_ir.program_ir`)
_CALL = ctypes.PYFUNCTYPE(ctypes.c_double, ctypes.py_object, ctypes.py_object)
# a tiled program's ``part(w, bases, outs)``: releases the GIL (:func:`symad.native.loop_ir.program_ir`)
_PART = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class WholeProgram:
    """Every output of a program with loops in one call of machine code (:func:`symad.native.compile_program`);
    ``tiled``: its loops run block by block, on every core (:meth:`_parts`)."""

    def __init__(self, graph: Graph, roots: list[int], spans: Mapping[str, Any], tiled: bool = False, *,
                 planned: LoopProgram | None = None, code: Any = None, remote: bool = False):
        """``planned``: :func:`planned_program`'s program (else planned here); ``code``: its machine code
        (else compiled here; with ``remote``, by the compile worker, from a pool task)."""
        if len(set(roots)) != len(roots):  # the code writes each output once: a repeat would be left unwritten
            raise ValueError("a whole program's roots must be distinct (indexed_function.Repeated serves repeats)")
        self.program = planned if planned is not None else planned_program(graph, roots, spans, tiled)
        tiled = self.program.tiled
        self.lengths = [graph.data[r][2] - graph.data[r][1] + 1 if kind == "each" else 0  # type: ignore[index]
                        for r, kind in zip(roots, self.program.kinds)]
        self._blocks = [blocks.count(self.program.top.inner[s].high - self.program.top.inner[s].low + 1)
                        for s in self.program.sums]
        self.code = code if code is not None else native.compile_program(self.program, remote=remote)
        self._part = _PART(self.code.engine.get_function_address("part")) if tiled else None
        self._lock = threading.Lock()
        self._kept = self._buffers()
        # value and gradient of one vector: the ``call`` entry, which takes the arrays themselves
        address = self.code.engine.get_function_address("call") if self.program.call_entry else 0
        self._call = (native.fast_call(self.code.engine) or _CALL(address)) if address else None
        self._vector = self.program.vectors[0] if self._call is not None else None
        self._length = self.lengths[-1]

    def _buffers(self) -> _WholeBuffers:
        return _WholeBuffers(len(self.program.variables), len(self.program.vectors), len(self.lengths),
                             len(self._blocks), self.program.blocks if self._part is not None else 0)

    def run(self, scalars: Mapping[int, float], vectors: Vectors) -> list[Any]:
        """The outputs: numbers, and arrays for ``each`` outputs (each array new: a later call never
        writes into one returned).  ``vectors`` hold contiguous float64 arrays of their spans' shapes."""
        if self._call is not None:  # one vector in, a value and its gradient out: one call, one allocation
            grad = np.empty(self._length)
            return [self._call(vectors[self._vector][0], grad), grad]
        kept = self._lock.acquire(blocking=False)
        buffers = self._kept if kept else self._buffers()
        try:
            w, bases, outs, numbers = buffers.w, buffers.bases, buffers.outs, buffers.numbers
            for k, node in enumerate(self.program.variables):
                w[k] = scalars[node]
            for v, name in enumerate(self.program.vectors):
                bases[v] = vectors[name][0].__array_interface__["data"][0]
            arrays = []
            for k, length in enumerate(self.lengths):
                if length:
                    out = np.empty(length)
                    arrays.append(out)
                    outs[k] = out.__array_interface__["data"][0]
                else:
                    arrays.append(None)
                    outs[k] = buffers.numbers_at + 8 * k
            if self._part is not None:
                self._parts(buffers)
            self.code.run(buffers.w_at, buffers.bases_at, buffers.outs_at)
            return [a if a is not None else float(numbers[k]) for k, a in enumerate(arrays)]
        finally:
            if kept:
                self._lock.release()

    def _parts(self, buffers: _WholeBuffers) -> None:
        """The tiled program's blocks: ``part`` on this thread and on the block threads at once, each
        taking the next block (the machine code's own counter) until none is left; then each sum's
        blocks added in the canonical order (:func:`symad.runtime.blocks.add`) into ``sums``."""
        buffers.counter[0] = 0
        part, args = self._part, (buffers.w_at, buffers.bases_at, buffers.outs_at)
        blocks.on_threads(lambda: part(*args), min(self.program.blocks, blocks.THREADS))
        for s, count in enumerate(self._blocks):
            buffers.sums[s] = blocks.add(buffers.partial[s, :count])


class _WholeBuffers:
    """A whole program's small arrays for one call, and their addresses: the variables (``w``), the
    vectors' addresses (``bases``), the outputs' (``outs``) and the numbers' slots; a tiled
    program's ``outs`` also points at its blocks' sums (``partial``, a sum a row), its counter
    of blocks taken (alone on its cache line) and the sums' values."""

    def __init__(self, variables: int, vectors: int, outputs: int, sums: int, blocks: int):
        self.w = np.zeros(max(1, variables))
        self.bases = np.zeros(max(1, vectors), dtype=np.uintp)
        self.outs = np.zeros(outputs + 3, dtype=np.uintp)
        self.numbers = np.zeros(outputs)
        self.partial = np.zeros((max(1, sums), max(1, blocks)))
        self.sums = np.zeros(max(1, sums))
        line = np.zeros(24, dtype=np.int64)
        at = line.__array_interface__["data"][0]
        self.counter = line[(-at % 64) // 8 + 8:][:1]  # 64 bytes clear of the array's ends
        self.w_at, self.bases_at, self.outs_at, self.numbers_at = (
            a.__array_interface__["data"][0] for a in (self.w, self.bases, self.outs, self.numbers))
        self.outs[outputs:] = [a.__array_interface__["data"][0] for a in (self.partial, self.counter, self.sums)]


def planned_program(graph: Graph, roots: list[int], spans: Mapping[str, Any], tiled: bool) -> LoopProgram:
    """The whole program of ``roots``, ready to compile (tiled or not, with or without its ``call``
    entry); raises :class:`NotCompiled` for what it does not take."""
    program = loop_program(graph, roots, spans)
    _check_quick(_steps(program.top))
    if tiled and not program.tileable:
        raise NotCompiled("a loop reading what another loop computes")
    program.tiled = tiled
    program.call_entry = not tiled and program.takes_call and all_rows(graph, roots) <= CALL_MAX_ROWS
    return program


def _check_quick(steps: int) -> None:
    """Loop code is compiled before its first call: only code short enough to compile at once
    (a body of thousands of written-out steps, such as the gradient of a long written-out product
    beside a loop, took LLVM minutes) — NumPy runs the others."""
    if steps > policy.NATIVE_SYNC_OPS:
        raise NotCompiled(f"loop code of {steps:,} steps is not compiled before its first call")


def _steps(top: Scope) -> int:
    """The steps of a scope and of every loop inside it (each loop's body counted once)."""
    count, todo = 0, [top]
    while todo:
        scope = todo.pop()
        count += len(scope.steps)
        todo.extend(scope.inner.values())
    return count


def _top_loops(graph: Graph, root: int) -> list[int]:
    """The loops of ``root``'s own scope (not those inside their bodies)."""
    return [n for n in binders.scope_nodes(graph, root, lambda m: graph.op[m] != "item")
            if graph.op[n] in ("sum", "each", "prod")]


def _range(graph: Graph, loop: int) -> int:
    _, low, high = graph.data[loop]  # type: ignore[misc]
    return max(0, high - low + 1)


def all_rows(graph: Graph, roots: list[int]) -> int:
    """The rows of all the top-level loops computing ``roots``."""
    return sum(_range(graph, n) for r in roots for n in _top_loops(graph, r))


def _iterations(graph: Graph, roots: list[int]) -> int:
    """The iterations of all the loops computing ``roots``: a loop's range times the iterations of
    the loops around it."""
    total, work = 0, [(r, 1) for r in roots]
    while work:  # (loops nest at most binders.MAX_NESTING deep)
        root, around = work.pop()
        for n in _top_loops(graph, root):
            iterations = around * _range(graph, n)
            total += iterations
            work.append((graph.args[n][0], iterations))
    return total


def runs_tiled(graph: Graph, roots: list[int]) -> bool:
    """Whether to run the whole program tiled: past :data:`WHOLE_MAX_ROWS` rows of its top-level
    loops, or past that many iterations in all (long sums inside their bodies) where a top-level
    loop has two blocks at least for the threads to share (one block would only add the tiles'
    cost: x'Ax over 2,000 rows ran 3-5x slower tiled)."""
    rows = [_range(graph, n) for r in roots for n in _top_loops(graph, r)]
    if sum(rows) > WHOLE_MAX_ROWS:
        return True
    return max(rows, default=0) >= 2 * blocks.BLOCK and _iterations(graph, roots) > WHOLE_MAX_ROWS
