"""Copy-and-patch: a schedule's machine code stitched from the stencils, without a compiler.

A program's frame holds its inputs, then its constants, then every step's result, one double
each (the instruction VM's layout).  Its body is each step's stencil
(:mod:`symad.native.stencils`) copied in order, each one's holes patched with its operands'
and result's byte offsets in the frame, each one's jump to the next stencil dropped (the next
one follows) or pointed at it, and a ``ret``; after the code, a copy of the stencils'
read-only data and one trampoline per C function they call (``jmp *addr``), which their
relative calls reach.  Every address in the body is relative, so the bytes are built before
pages are mapped for them.

Steps that repeat themselves run four at a time, as packs (:mod:`symad.native.packing`): a
pack is one vector stencil in place of four, reading its operands as vectors from neighbouring
slots, which the layout gives it.

Everything is NumPy over arrays of steps and bytes (no Python loop per step past reading the
schedule): all stencil copies are one gather from the library's bytes, and every patch one
scattered write of four bytes.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from symad.core.errors import PointError
from symad.core.gcpause import without_gc
from symad.native import elf, fastcall, packing
from symad.native.stencils import (
    ACC,
    HOLE,
    KEEP,
    LANES,
    MEMORY,
    PC_CALL,
    PC_DATA,
    PC_NEXT,
    VECTOR_BASE,
    Library,
    StencilError,
)
from symad.schedule.schedule import Schedule

_RET = 0xC3
_TRAMPOLINE = 16  # ff 25 00 00 00 00 (jmp *0(%rip)), the address, two bytes of padding
MAX_FRAME_SLOTS = (2**31 - 8) // 8  # a frame offset is a 32-bit displacement
_NODE, _OP, _ARGS = (operator.itemgetter(k) for k in range(3))  # a step's fields


@without_gc
def layout(schedule: Schedule, library: Library,
           block_outputs: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each entry's stencil (the library's number: a step's, or a pack's of four steps, in the
    order they run) and the frame slots of its operands (a row of three, unused ones repeating
    the first; a pack's: the first of its four) and of its result; the frame's template (inputs'
    slots zero, constants in place, the packs' constant blocks); the outputs' slots (with
    ``block_outputs``, one after another when they can be, and packs found
    (:func:`packing.find`) laid out at multiples of four slots; else step ``i``'s result is in
    slot ``i`` past the inputs and constants).

    Operands are read from registers where :func:`registers` finds them there, and a result no
    step reads from the frame (nor an output) is not stored (:func:`stencils.variant`)."""
    steps = schedule.steps
    n_in = len(schedule.inputs)
    inputs = set(schedule.inputs)
    const_nodes = [node for node in schedule.consts if node not in inputs]
    n = len(steps)
    # One pass over the steps for each field (no tuples of the fields built), and an op's arity
    # is the table's (every primitive has one): the argument tuples are read once, for their nodes.
    nodes_a = np.fromiter(map(_NODE, steps), dtype=np.int64, count=n)
    op_ids = np.fromiter(map(library.ops.__getitem__, map(_OP, steps)), dtype=np.int64, count=n)
    arity = library.arity[op_ids]
    flat_args = itertools.chain.from_iterable(map(_ARGS, steps))
    flat = np.fromiter(flat_args, dtype=np.int64, count=int(arity.sum()))
    if next(flat_args, None) is not None:
        raise ValueError("a step has more arguments than its op")
    base = n_in + len(const_nodes)
    slot = _slots(np.array(schedule.inputs, dtype=np.int64), np.array(const_nodes, dtype=np.int64), nodes_a)
    first = np.cumsum(arity) - arity
    operands = np.empty((n, 4), dtype=np.int64)
    for k in range(3):
        operands[:, k] = slot(flat[first + np.minimum(k, arity - 1)])
    operands[:, 3] = base + np.arange(n)
    frame = np.zeros(base + n)
    frame[n_in:base] = [schedule.consts[node] for node in const_nodes]
    outs = slot(np.array(schedule.outputs, dtype=np.int64))
    # The outputs' slots one after another, in order, where each is a step of its own: the entries
    # then copy them out in one block (gathering a thousand partials one by one costs more).
    block = block_outputs and len(outs) and (outs >= base).all() and len(set(outs.tolist())) == len(outs)
    found = None
    if block and library.vectorizable.any():
        found = packing.find(operands, arity, op_ids, library.vectorizable, outs, n_in, frame,
                             library.ops.get("add", -1))
    if found is not None:
        frame = np.concatenate([frame, found.const_values])
        entry_ops, entry_arity, result, op_ids, pack_of = _entries(operands, arity, op_ids, found, base)
    else:
        entry_ops, entry_arity, result, pack_of = operands, arity, operands[:, 3], None

    scalar = result >= 0
    sources, keep = registers(entry_ops, entry_arity, result, len(frame))
    reads_memory = (sources == MEMORY) & (np.arange(3) < entry_arity[:, None])
    read = np.zeros(len(frame), dtype=bool)  # read from the frame, or an output
    read[entry_ops[:, :3][reads_memory]] = True
    read[outs] = True
    if pack_of is not None:  # a pack reads every lane of its operands
        lanes = found.groups  # type: ignore[union-attr]
        for k in range(3):
            present = arity[lanes[:, 0]] > k
            read[operands[lanes[present], k]] = True
    number = sources[:, 0] + 4 * sources[:, 1] + 16 * sources[:, 2]  # (int8: at most 42)
    number = number + 64 * keep + 128 * read[np.maximum(result, 0)]
    if pack_of is not None:
        number[~scalar] = VECTOR_BASE + found.kinds[pack_of[~scalar]] @ (3 ** np.arange(3))  # type: ignore[union-attr]
    stencil = library.variants[op_ids, number]
    if (stencil < 0).any():  # (a library without a variant the layout asks for: never the stencils' own)
        raise StencilError("the stencils lack a variant this program needs")
    if block:
        order = np.full(len(frame), -1, dtype=np.int64)
        order[:base] = np.arange(base)
        at = base
        if found is not None:  # the outputs' packs (from output 1 on) at a multiple of LANES slots
            at += -(base + 1) % LANES
        order[outs] = at + np.arange(len(outs))
        at += len(outs)
        if found is not None:  # each path's packs one after another from a multiple of LANES slots
            laid = np.lexsort((found.seed, found.path))
            laid = laid[found.path[laid] > 0]
            path = found.path[laid]
            first = np.flatnonzero(np.append(True, path[1:] != path[:-1])).tolist() + [len(laid)]
            place = np.empty(len(laid), dtype=np.int64)
            for lo, hi in zip(first[:-1], first[1:]):  # (a pass a path: a few dozen)
                at += -at % LANES
                place[lo:hi] = at + LANES * np.arange(hi - lo)
                at += LANES * (hi - lo)
            order[found.groups[laid] + base] = place[:, None] + np.arange(LANES)
        rest = np.flatnonzero(order < 0)
        order[rest] = at + np.arange(len(rest))
        if found is not None:  # (else the steps' slots, zeros, move among themselves alone)
            laid_out = np.zeros(int(order.max()) + 1)
            laid_out[order] = frame
            frame = laid_out
        entry_ops, outs = order[entry_ops], order[outs]
    return stencil, entry_ops, frame, outs


def aligned_copy(frame: np.ndarray) -> np.ndarray:
    """A copy of ``frame`` whose first slot is at a multiple of 64 bytes (a pack's four slots,
    at a multiple of four, then never straddle two cache lines)."""
    room = np.empty(len(frame) + 8)
    at = (-room.ctypes.data % 64) // 8
    copy = room[at:at + len(frame)]
    copy[:] = frame
    return copy


def _entries(operands: np.ndarray, arity: np.ndarray, op_ids: np.ndarray, found: packing.Packs,
             base: int) -> tuple[np.ndarray, ...]:
    """The program's stencils in the order they run, with packs: the steps not in a pack in
    their order, each pack right after the step it runs after (:class:`packing.Packs`).  Each
    entry's operands (a pack's: the slots it reads, and its first lane's as the destination),
    arity, result slot (-1: a pack), op number and pack (-1: a step)."""
    n = len(arity)
    in_pack = np.zeros(n, dtype=bool)
    in_pack[found.groups] = True
    steps = np.flatnonzero(~in_pack)
    m = len(found.groups)
    position = np.concatenate([steps, found.after])
    tie = np.concatenate([np.zeros(len(steps), dtype=np.int64), 1 + found.depth])
    order = np.lexsort((tie, position))
    pack_of = np.concatenate([np.full(len(steps), -1, dtype=np.int64), np.arange(m)])[order]
    first_lane = found.groups[:, 0]
    entry_ops = np.concatenate([operands[steps], np.column_stack([found.slots, base + first_lane])])[order]
    result = np.where(pack_of >= 0, -1, entry_ops[:, 3])
    entry_arity = np.concatenate([arity[steps], arity[first_lane]])[order]
    entry_op_ids = np.concatenate([op_ids[steps], op_ids[first_lane]])[order]
    return entry_ops, entry_arity, result, entry_op_ids, pack_of


_TABLE_RATIO, _TABLE_SLACK = 8, 4096  # a table by node id where its ids are this dense (see _slots)


def _slots(*parts: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Node ids to frame slots: an id's place in ``parts`` one after another (its last part's).
    A table indexed by node id where the ids are dense enough; else (a small program in a large
    graph) a binary search of the sorted ids, so that the time is the program's, not the graph's."""
    keys = np.concatenate(parts)
    top = int(keys.max(initial=-1)) + 1
    if top > _TABLE_RATIO * len(keys) + _TABLE_SLACK:
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        if (np.diff(ordered) > 0).all():
            def search(ids: np.ndarray) -> np.ndarray:
                at = np.minimum(np.searchsorted(ordered, ids), len(ordered) - 1)
                if not (ordered[at] == ids).all():
                    raise ValueError("a step reads a node no step, input or constant gives")
                return order[at]
            return search
    table = np.full(top, -1, dtype=np.int64)
    at = 0
    for part in parts:
        table[part] = np.arange(at, at + len(part))
        at += len(part)
    return table.__getitem__


def registers(operands: np.ndarray, arity: np.ndarray, result: np.ndarray, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each entry (a step, or a pack: ``result`` -1) reads its operands
    (:data:`~symad.native.stencils.MEMORY`, ``ACC``, ``KEEP``; a row of three, unused ones
    ``MEMORY``), and which steps keep their result in ``KEEP``; ``slots``: the frame's size.

    ``ACC`` holds the last result not kept (most often the previous step's).  ``KEEP`` serves
    chains: a step whose result is next read two or more steps later, by a step whose own result
    is read so too (a running sum ``s = s + term``: the sum waits in ``KEEP`` while the term is
    computed), keeps it, chosen greedily by the end of the wait (most waits, none overlapping); a
    chain's links then pass in a register, not through a store and a load, which would lengthen
    every link by the store's forwarding latency.  A pack reads the frame, and leaves both
    registers as they were."""
    n = len(operands)
    scalar = result >= 0
    present = (np.arange(3) < arity[:, None]) & scalar[:, None]
    step = np.broadcast_to(np.arange(n)[:, None], (n, 3))
    at = np.full(slots, -1, dtype=np.int64)
    at[result[scalar]] = np.flatnonzero(scalar)
    producer = at[operands[:, :3]]  # the entry computing an operand (-1: an input, constant or pack)
    far = present & (producer >= 0) & (step >= producer + 2)
    first_far = np.full(n, n, dtype=np.int64)  # each step's result's first read two or more entries on
    np.minimum.at(first_far, producer[far], step[far])
    waits = np.flatnonzero(first_far < n)
    ends = first_far[waits]
    chain = first_far[ends] < n  # the reader's own result waits too: a link of a chain
    keep = np.zeros(n, dtype=bool)
    keep[_earliest_ends(waits[chain], ends[chain], n)] = True
    # The results in the registers before each entry: in KEEP the last kept one before it, in ACC
    # the last one not kept (a kept result, and a pack, leave ACC as it was).
    kept_slot = _last_before(keep, result)
    acc_slot = _last_before(~keep & scalar, result)
    slots_read = operands[:, :3]
    in_keep = present & (slots_read == kept_slot[:, None])
    in_acc = present & (slots_read == acc_slot[:, None]) & ~in_keep
    sources = np.full((n, 3), MEMORY, dtype=np.int8)
    sources[in_keep] = KEEP
    sources[in_acc] = ACC
    return sources, keep


def _earliest_ends(starts: np.ndarray, ends: np.ndarray, n: int) -> np.ndarray:
    """The waits (distinct ``starts``, each before its end; all below ``n``) that the greedy choice
    by earliest end keeps: in order of end (then of start), each one that starts at or after the
    end of the last one kept.  The one kept after wait ``k`` is the first in that order starting
    at or after its end (any such ends later), found for every wait at once; only the walk along
    the kept ones is a loop, and it steps over a chain's links (each kept one followed by the
    next in order) a run at a time."""
    if not len(starts):
        return starts
    key = np.sort(ends * n + starts)  # keys are distinct: the starts are
    starts, ends = key % n, key // n
    m = len(starts)
    at = np.full(n + 1, m, dtype=np.int64)  # at[t]: the first wait in order starting at t
    at[starts] = np.arange(m)
    first_from = np.minimum.accumulate(at[::-1])[::-1]  # ... starting at t or later
    after = first_from[ends]  # (m: none)
    order = np.arange(m)
    link = after == order + 1
    link[-1] = False
    run_end = np.minimum.accumulate(np.where(link, m, order)[::-1])[::-1]  # the first non-link at or after k
    jump = after[run_end]
    heads, k = [], 0
    while k < m:
        heads.append(k)
        k = int(jump[k])
    head = np.fromiter(heads, dtype=np.int64, count=len(heads))
    runs = np.zeros(m + 1, dtype=np.int64)  # the kept ones: each head to its run's end
    runs[head] += 1
    runs[run_end[head] + 1] -= 1
    return starts[np.cumsum(runs[:m]) > 0]


def _last_before(which: np.ndarray, result: np.ndarray) -> np.ndarray:
    """For each entry, the result slot of the last entry before it where ``which`` holds (-1: none)."""
    at = np.where(which, np.arange(len(which)), -1)
    last = np.concatenate([[-1], np.maximum.accumulate(at)[:-1]]) if len(which) else at
    return np.where(last >= 0, result[last], -1)


_CHUNK = 1 << 14  # steps copied and patched at a time (see body)


def body(library: Library, stencil: np.ndarray, operands: np.ndarray) -> np.ndarray:
    """The machine code of the stencils ``stencil`` on frame slots ``operands`` (see :func:`layout`),
    with the stencils' data and trampolines after it, as bytes (position-independent); the
    trampolines' addresses are this process's.

    The steps are copied and patched ``_CHUNK`` at a time: the index arrays of a chunk (eight
    bytes for every byte of code) stay in the cache and their memory is reused, where those of a
    whole large program would be fresh pages, each a page fault, costing more than the copy."""
    n = len(stencil)
    lengths = library.length[stencil]
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    code_end = int(starts[-1]) + 1  # the ret
    data_at = -(-code_end // 16) * 16
    tramp_at = -(-(data_at + len(library.data)) // 16) * 16
    size = tramp_at + _TRAMPOLINE * len(library.calls)
    buf = np.zeros(size, dtype=np.uint8)  # (every address below is relative: the same bytes at any offset)
    buf[int(starts[-1])] = _RET
    buf[data_at:] = _tail(library)
    called: set[int] = set()
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        _copy(library, stencil[lo:hi], starts[lo:hi + 1], buf)
        called.update(_patch(library, stencil[lo:hi], operands[lo:hi], starts[lo:hi + 1], buf, data_at, tramp_at))
    addresses = _call_addresses(library)
    for k in called:
        if addresses[k] is None:
            raise OSError(f"the C library function {library.calls[k]} is not in this process")
    return buf


def _copy(library: Library, stencil: np.ndarray, starts: np.ndarray, buf: np.ndarray) -> None:
    """The stencils ``stencil`` copied one after another to ``buf[starts[0]:starts[-1]]``, in one
    gather: byte j of step i is library byte start[stencil i] + j."""
    total = int(starts[-1] - starts[0])
    if total:
        source = np.repeat(library.start[stencil] - (starts[:-1] - starts[0]), library.length[stencil])
        source += np.arange(total)
        np.take(library.blob, source, out=buf[starts[0]:starts[-1]])


def _patch(library: Library, stencil: np.ndarray, operands: np.ndarray, starts: np.ndarray, buf: np.ndarray,
           data_at: int, tramp_at: int) -> set[int]:
    """The relocations of the stencils ``stencil`` (at ``starts`` in ``buf``, on frame slots
    ``operands``) written, each a scattered write of four bytes; the C functions they call.
    Holes (most relocations) and relative ones apart: each kind's values without masks."""
    holes, relative = _relocations(library)
    step, row = _rows(holes, stencil)
    if len(row):
        value = library.rel_addend[row] + 8 * operands[step, library.rel_arg[row]]
        _write(buf, starts[step] + library.rel_offset[row], value)
    step, row = _rows(relative, stencil)
    if not len(row):
        return set()
    kind, arg = library.rel_kind[row], library.rel_arg[row]
    where = starts[step] + library.rel_offset[row]
    target = np.zeros(len(row), dtype=np.int64)
    target[kind == PC_NEXT] = starts[step[kind == PC_NEXT] + 1]
    target[kind == PC_DATA] = data_at + arg[kind == PC_DATA]
    calls = kind == PC_CALL
    target[calls] = tramp_at + _TRAMPOLINE * arg[calls]
    _write(buf, where, library.rel_addend[row] + target - where)
    return set(arg[calls].tolist())  # (not np.unique: NumPy's first call of it imports numpy.ma, 13 ms)


def _rows(table: tuple[np.ndarray, np.ndarray, np.ndarray], stencil: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of the library's relocations in ``table`` (a stencil's first and count, and the
    rows) for each step of ``stencil``, and their steps."""
    first, count, rows = table
    counts = count[stencil]
    m = int(counts.sum())
    step = np.repeat(np.arange(len(stencil)), counts)
    at = np.repeat(first[stencil] - (np.cumsum(counts) - counts), counts) + np.arange(m)
    return step, rows[at]


def _write(buf: np.ndarray, where: np.ndarray, value: np.ndarray) -> None:
    """``value[r]`` as four little-endian bytes at ``buf[where[r]]``."""
    buf[where[:, None] + np.arange(4)] = value.astype("<i4").view(np.uint8).reshape(len(value), 4)


def _relocations(library: Library) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]:
    """The library's relocations split into holes and relative ones, each as a stencil's first row
    and count, and the rows (of the library's table); built once."""
    if library.split is None:
        owner = np.repeat(np.arange(len(library.rel_count)), library.rel_count)
        rows = np.repeat(library.rel_start - (np.cumsum(library.rel_count) - library.rel_count),
                         library.rel_count) + np.arange(len(owner))  # by stencil, in each its own order
        tables = []
        for which in (library.rel_kind[rows] == HOLE, library.rel_kind[rows] != HOLE):
            count = np.bincount(owner[which], minlength=len(library.rel_count))
            tables.append((np.cumsum(count) - count, count, rows[which]))
        library.split = tuple(tables)
    return library.split


def _tail(library: Library) -> np.ndarray:
    """What follows every body from its data on (at a multiple of 16 bytes): the stencils' data,
    then at the next multiple of 16 a trampoline to each C function they call (``jmp *0(%rip)``,
    the function's address in this process); built once."""
    if library.tail is None:
        tail = np.zeros(-(-len(library.data) // 16) * 16 + _TRAMPOLINE * len(library.calls), dtype=np.uint8)
        tail[:len(library.data)] = np.frombuffer(library.data, dtype=np.uint8)
        for k, address in enumerate(_call_addresses(library)):
            at = len(tail) - _TRAMPOLINE * (len(library.calls) - k)
            tail[at:at + 6] = (0xFF, 0x25, 0, 0, 0, 0)
            tail[at + 6:at + 14] = np.frombuffer((address or 0).to_bytes(8, "little"), dtype=np.uint8)
        library.tail = tail
    return library.tail


def _call_addresses(library: Library) -> list[int | None]:
    """The addresses of the C functions the stencils call (None: not in this process), found once."""
    if library.addresses is None:
        library.addresses = [elf.symbol(name) for name in library.calls]
    return library.addresses


ENTRY_POINT = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 5)
ENTRY_BATCH = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4, ctypes.c_int64)
ENTRY_CALL = ctypes.PYFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.py_object, ctypes.py_object)


class Entries:
    """The entries of stitched bodies (:func:`symad.native.stencils.entries_ir`), loaded once."""

    def __init__(self, image: Any):
        self.image = image
        self.point = ENTRY_POINT(image.get_function_address("point"))
        self.batch = ENTRY_BATCH(image.get_function_address("batch"))
        call = image.get_function_address("call")
        self.call = ENTRY_CALL(call) if call else None
        self.fast = image.get_function_address("fast") if call else 0


class StitchedProgram:
    """A schedule's stitched machine code, with :class:`~symad.native.jit.NativeProgram`'s interface:
    ``point(in, out0, rest)`` and ``batch(in, out, n)`` on addresses (each call in a frame of its
    own: they release the GIL), and ``call(x, rest) -> output 0`` on NumPy arrays (in the program's
    own frame: the caller keeps the GIL), or None."""

    @without_gc  # (it creates no cycles: a collection due to earlier work waits till after)
    def __init__(self, schedule: Schedule, library: Library, entries: Entries):
        if len(schedule.inputs) + len(schedule.consts) + schedule.size > MAX_FRAME_SLOTS:
            raise PointError("a program this large has no stitched code")
        stencil, operands, frame, outs = layout(schedule, library)
        if len(frame) > MAX_FRAME_SLOTS:  # (the packs' constant blocks lengthen it)
            raise PointError("a program this large has no stitched code")
        # The record the entries read, which keeps alive what it points to: whoever holds ``call``
        # (a caller that took it just before this program was replaced) runs code still mapped.
        self.record = (ctypes.c_int64 * 6)()
        code = body(library, stencil, operands)
        self.image = elf.executable(code)
        if self.image is None:
            raise OSError("this process cannot map machine code")
        self.n_in, self.n_out = len(schedule.inputs), len(schedule.outputs)
        self.size = len(code)
        self.template = frame
        self.frame = aligned_copy(frame)  # call's
        self.outs = outs
        block = bool(len(outs)) and bool((np.diff(outs) == 1).all())
        self.record[:] = (self.image.base, self.n_in, outs.ctypes.data, self.n_out,
                          self.frame.ctypes.data, int(outs[0]) if block else -1)
        self.record.keep = (self.image, outs, self.frame)  # type: ignore[attr-defined]
        self.entries = entries
        self.call = None
        if entries.call is not None:  # a builtin function where CPython's API allows, else ctypes
            self.call = (fastcall.bound(entries.fast, ctypes.addressof(self.record), (self.record, entries))
                         or functools.partial(entries.call, self.record))
        self._address = ctypes.addressof(self.record)

    def point(self, inp: int, out0: int, rest: int) -> None:
        """Output 0 at the inputs at address ``inp`` to ``out0``, output k ≥ 1 to ``rest[k-1]``."""
        frame = aligned_copy(self.template)
        self.entries.point(self._address, frame.ctypes.data, inp, out0, rest)

    def batch(self, inp: int, out: int, n: int) -> None:
        """``n`` points, rows of inputs at ``inp``, into rows of outputs at ``out``."""
        frame = aligned_copy(self.template)
        self.entries.batch(self._address, frame.ctypes.data, inp, out, n)
