"""The fast first tier: a schedule flattened into instructions for one shared interpreter.

Compiling a program with LLVM costs milliseconds to seconds, growing with its size;
flattening its (lowered) :class:`~symad.schedule.schedule.Schedule` into an instruction array
costs about a microsecond a step, and the interpreter (machine code generated once a
process from the op table, :func:`symad.native.ir.interpreter_ir`) runs an
instruction in nanoseconds.  An instruction is ``(opcode, destination, a, b)`` over
one array of values: the inputs, then the constants, then every step's result.  The
interpreter computes each op with the op's own LLVM lowering, so the numbers are the
bits of compiled code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from symad import native
from symad.core.errors import PointError
from symad.core.gcpause import without_gc
from symad.schedule.schedule import Schedule

_OPCODES = native.interpreter_opcodes()


def check_out(out: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``out`` if compiled code may write results into it in place, else a PointError.

    Machine code (the interpreter's, or a native program's) writes through the array's
    address: a read-only buffer (``bytes``, a read-only memmap) would crash the process or
    change immutable data.
    """
    want = f"out must be a writeable, aligned, C-contiguous float64 array of shape {shape}"
    if not isinstance(out, np.ndarray):
        raise PointError(f"{want}, got {type(out).__name__}")
    if out.shape != shape or out.dtype != np.float64:
        raise PointError(f"{want}, got {out.dtype} {out.shape}")
    flags = out.flags
    bad = [name for name, ok in (("read-only", flags.writeable), ("misaligned", flags.aligned),
                                 ("not C-contiguous", flags.c_contiguous)) if not ok]
    if bad:
        raise PointError(f"{want}, got one that is {' and '.join(bad)}")
    return out


class VMProgram:
    """A schedule as instructions for the interpreter: ``point``, ``batch`` and ``call`` as
    :class:`~symad.runtime.program.Program` has them."""

    @without_gc
    def __init__(self, schedule: Schedule):
        self.schedule = schedule
        self.n_in, self.n_out = len(schedule.inputs), len(schedule.outputs)
        slot = {node: k for k, node in enumerate(schedule.inputs)}
        values = [0.0] * self.n_in
        for node, value in schedule.consts.items():
            if node not in slot:
                slot[node] = len(values)
                values.append(value)
        opcodes = _OPCODES
        rows = []
        level = [0] * len(values)  # a slot's distance from the inputs: 0 for inputs and constants
        row_level = []  # each instruction's
        at = len(values)
        for node, op, args in schedule.steps:
            a = slot[args[0]]
            if len(args) == 1:
                rows.append((opcodes[op], at, a, a))
                level.append(level[a] + 1)
            elif len(args) == 2:
                b = slot[args[1]]
                rows.append((opcodes[op], at, a, b))
                la, lb = level[a], level[b]
                level.append((la if la > lb else lb) + 1)
            else:  # the first operand copied into the destination, where the op reads it
                b, c = slot[args[1]], slot[args[2]]
                rows.append((opcodes[native.COPY], at, a, a))
                row_level.append(level[a] + 1)
                rows.append((opcodes[op], at, b, c))
                level.append(max(level[a] + 1, level[b], level[c]) + 1)
            row_level.append(level[-1])
            slot[node] = at
            at += 1
        values += [0.0] * (at - len(values))
        code = np.array(rows, dtype=np.int32).reshape(len(rows), 4)
        # Run level by level (a level's instructions only read earlier levels), each level's
        # instructions grouped by opcode: the interpreter's dispatch then jumps where it jumped
        # last time, and its branch predictor is right (Rosenbrock n=1000: 13,000 runs of one
        # opcode become 16; an instruction costs ~40% less).  The values are the same bits.
        if len(code):
            code = code[np.lexsort((code[:, 0], np.array(row_level)))]
        self.code = code
        self.values = np.array(values, dtype=np.float64)  # one point's values; constants in place
        self.outs = np.array([slot[n] for n in schedule.outputs], dtype=np.int64)
        # The record the interpreter reads: code, its length, values, n_in, outs, n_out.
        self.record = np.array([code.ctypes.data, len(code), self.values.ctypes.data, self.n_in,
                                self.outs.ctypes.data, self.n_out], dtype=np.int64)
        self.interpreter = native.interpreter()
        self.address = self.record.ctypes.data
        # call(x, rest) -> output 0 at the point x (a contiguous float64 vector), outputs 1..
        # into rest: the interpreter's entry with this program bound, a builtin function (no
        # Python frame or ctypes conversion between).  (None where NumPy's array layout was not
        # found: points then go through ``batch``.)
        self.call = self.interpreter.bound_call(self.address, (self.record, code, self.values, self.outs))

    @property
    def size(self) -> int:
        """Number of instructions."""
        return len(self.code)

    def point(self, x: np.ndarray) -> np.ndarray:
        """The outputs at one point ``x``."""
        x = np.require(x, np.float64, ("C", "A"))
        if x.shape != (self.n_in,):
            raise PointError(f"a point needs {self.n_in} value(s), got shape {x.shape}")
        if self.call is None:
            return self.batch(x.reshape(1, -1))[0]
        out = np.empty(self.n_out)
        out[0] = self.call(x, out[1:])
        return out

    def batch(self, rows: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The outputs at each row of ``rows`` (shape (n_points, n_inputs)) as rows."""
        n = rows.shape[0]
        out = np.empty((n, self.n_out)) if out is None else check_out(out, (n, self.n_out))
        rows = np.require(rows, np.float64, ("C", "A"))
        if n:
            scratch = self.values.copy()  # the GIL is released: a buffer of this call's own
            self.interpreter.batch(self.address, scratch.ctypes.data, rows.ctypes.data, out.ctypes.data, n)
        return out

    def outputs(self, x: np.ndarray, batch: bool) -> np.ndarray:
        """The outputs at one point (a vector) or at a batch of points (rows)."""
        return self.batch(x) if batch else self.point(x)

    def __getstate__(self) -> Any:
        raise TypeError("a VMProgram holds addresses: pickle the Function instead")


class InterpretedRows:
    """Sums of a schedule's outputs over rows of data, run by the interpreter: the bits of the
    compiled loop (:class:`symad.native.RowsProgram`), ready in microseconds a step.

    ``sources`` as :class:`symad.objectives.row_sums.RowSums` takes them.  ``rows(w, cols, strides,
    idx, start, end, out)`` has the compiled loop's arguments, ``w`` as an array; it releases the GIL.
    """

    def __init__(self, schedule: Schedule, sources: list[tuple[str, int]]):
        self.vm = VMProgram(schedule)
        self.n_out = self.vm.n_out
        # (value slot, column) of each data input; the inputs' slots are their positions
        self.colin = np.array([(k, i) for k, (kind, i) in enumerate(sources) if kind == "col"],
                              dtype=np.int64).reshape(-1, 2)
        self.w_slots = np.array([k for k, (kind, _) in enumerate(sources) if kind == "w"], dtype=np.intp)
        self.w_items = np.array([i for kind, i in sources if kind == "w"], dtype=np.intp)

    def rows(self, w: np.ndarray, cols: int, strides: int, idx: int | None, start: int, end: int, out: int) -> None:
        """The sums over rows ``start`` … ``end - 1`` (of ``idx`` if given) into the doubles at ``out``."""
        values = self.vm.values.copy()  # this call's own: the GIL is released
        values[self.w_slots] = w[self.w_items]
        acc = np.empty(2 * self.n_out)
        self.vm.interpreter.rows(self.vm.address, values.ctypes.data, self.colin.ctypes.data, len(self.colin),
                                 cols, strides, idx, start, end, out, acc.ctypes.data)
