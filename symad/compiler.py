"""Compile outputs of the DAG into straight-line code, once; call it many times.

A :class:`Schedule` lists the operations the outputs need (dead code is never
emitted) in topological order: forward values first, then, for gradient
outputs, the adjoint nodes the backward sweep built.  Backends turn it into
code:

* ``python``: one Python function, temporaries register-allocated (a register is
  reused after its last use, so NumPy batches don't keep one array per node
  alive).  It runs against two namespaces: ``math`` on plain floats (fastest for
  a single point of a small expression) and NumPy ufuncs for batches and IEEE
  semantics (a float evaluation that raises is redone with NumPy, so
  ``1/0 → inf`` and ``log(-1) → nan`` whichever path ran).
* ``native``: LLVM machine code through llvmlite (:mod:`symad.native`), a
  function for one point and one fused loop for a batch.

The generated source contains only symad's own identifiers and ``repr`` of
floats, never user text.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import background, forksafe, native
from .errors import PointError, SymadError
from .graph import Graph
from .limits import LIMITS
from .native import NativeProgram
from .ops import OPS
from .semantics import small_power_step

BACKENDS = ("auto", "python", "native")
# `auto` policy: below NATIVE_MIN_OPS operations a foreign call costs more than the
# work, so single points run in Python.  Up to NATIVE_SYNC_OPS optimised native code
# (LLVM -O2) is compiled before the first call.  Beyond, quick native code (-O0,
# compiled in about the time Python needs to compile the same program, and in less
# memory) serves the first calls while a background thread compiles optimised code,
# up to NATIVE_OPTIMIZE_OPS (-O2's time grows faster than linearly).  Past
# NATIVE_MAX_OPS, Python code compiled in chunks keeps memory bounded.
NATIVE_MIN_OPS = 16  # measured: native `call` ≈ 0.9 µs a point; Python code ≈ 0.5 µs + 50 ns an operation
NATIVE_SYNC_OPS = 3000
NATIVE_OPTIMIZE_OPS = 50_000
NATIVE_MAX_OPS = 200_000  # beyond, `auto` stays in Python: LLVM's memory grows with function size
PARALLEL_MIN_POINTS = 20_000
BACKGROUND_OPTIMIZE = True  # one-shot callers (the CLI) turn background compiling off


NATIVE_BATCH_POINTS = 1000  # a batch this large compiles native code even for a tiny program
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


def _reset_after_fork() -> None:
    # The pool's threads do not exist in a child: a new pool starts on the child's first
    # large batch.  Compile threads do not exist there either (see Function's tiers).
    global _pool_lock
    _pool.clear()
    _pool_lock = threading.Lock()


forksafe.after_fork_in_child(_reset_after_fork)

_PY_NS: dict[str, Any] = {"inf": math.inf, "nan": math.nan}
_NP_NS: dict[str, Any] = {"inf": math.inf, "nan": math.nan}
for _name, _spec in OPS.items():
    if _spec.arity:
        _PY_NS[f"f_{_name}"] = _spec.py
        _NP_NS[f"f_{_name}"] = _spec.np


def _literal(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "(-inf)"
    return repr(value) if math.copysign(1.0, value) > 0 else f"({value!r})"


def power_code(base: str, k: int) -> str:
    """Python text of ``base^k`` as products (see :func:`symad.semantics.power_product`)."""
    product = " * ".join([base] * abs(k))
    return product if k > 0 else f"1.0 / ({product})"


@dataclass
class Schedule:
    """The operations computing ``outputs`` from ``inputs`` (variable nodes), in order."""

    inputs: list[int]
    outputs: list[int]
    steps: list[tuple[int, str, tuple[int, ...]]]  # (node, op, argument nodes)
    consts: dict[int, float]
    source: str  # the Python form, also the structural key
    key: str

    @classmethod
    def build(cls, graph: Graph, outputs: Sequence[int], inputs: Sequence[int]) -> Schedule:
        """Schedule the nodes the outputs need, and generate their Python source."""
        order = graph.reachable(outputs)
        LIMITS.check_program(len(order))
        known = set(inputs)
        steps, consts = [], {}
        for node in order:
            op = graph.op[node]
            if op == "const":
                consts[node] = graph.data[node]
            elif op == "var":
                if node not in known:
                    raise SymadError(f"no input for variable {graph.data[node]}")
            else:
                steps.append((node, op, graph.args[node]))
        source = _python_source(list(inputs), list(outputs), steps, consts)  # type: ignore[arg-type]
        key = hashlib.sha256(source.encode()).hexdigest()
        return cls(list(inputs), list(outputs), steps, consts, source, key)  # type: ignore[arg-type]

    @property
    def size(self) -> int:
        """Number of operations."""
        return len(self.steps)


def _straight_line(steps: list[tuple[int, str, tuple[int, ...]]], names: dict[int, str],
                   consts: dict[int, float], live_after: set[int], store: dict[int, str]) -> list[str]:
    """Python lines computing ``steps``; ``names`` maps nodes defined earlier to their text.

    Registers ``r0, r1, ...`` are reused after a value's last use (values in
    ``live_after`` are never released); a node in ``store`` is also written there.
    """
    last_use: dict[int, int] = {}
    for p, (_, _, args) in enumerate(steps):
        for a in args:
            last_use[a] = p
    for node in live_after:
        last_use[node] = len(steps)
    free: list[str] = []
    n_registers = 0
    lines = []
    for p, (node, op, args) in enumerate(steps):
        spec = OPS[op]
        arg_names = [names[a] for a in args]
        # Numbers alone (`1.0 / 0.0`, kept unfolded because the result is not finite)
        # go through the op's function: Python's operators would raise even when
        # the NumPy namespace is in use.
        numbers_only = all(a in consts for a in args)
        k = None if numbers_only else small_power_step(consts, op, args)
        if k is not None:
            text = power_code(arg_names[0], k)
        elif spec.code and not numbers_only:
            text = spec.code.format(*arg_names)
        else:
            text = f"f_{op}({', '.join(arg_names)})"
        for a in set(args):
            if last_use.get(a) == p and names[a][0] == "r":
                free.append(names[a])
        if free:
            reg = free.pop()
        else:
            reg = f"r{n_registers}"
            n_registers += 1
        names[node] = reg
        lines.append(f"    {reg} = {text}")
        if node in store:
            lines.append(f"    {store[node]} = {reg}")
    return lines


# Programs longer than this are split into functions of this many operations, so
# that compiling Python source takes bounded memory whatever the program's size.
CHUNK_OPS = 20_000


def _python_source(inputs: list[int], outputs: list[int], steps: list[tuple[int, str, tuple[int, ...]]],
                   consts: dict[int, float]) -> str:
    literals = {node: _literal(c) for node, c in consts.items()}
    if len(steps) <= CHUNK_OPS:
        names = {v: f"a{k}" for k, v in enumerate(inputs)}
        names.update(literals)
        lines = _straight_line(steps, names, consts, set(outputs), {})
        params = ", ".join(f"a{k}" for k in range(len(inputs)))
        result = ", ".join(names[n] for n in outputs)
        return f"def program({params}):\n" + "".join(ln + "\n" for ln in lines) + f"    return ({result},)\n"
    # Chunked: values that cross a chunk boundary live in the list `s`.
    chunks = [steps[i:i + CHUNK_OPS] for i in range(0, len(steps), CHUNK_OPS)]
    chunk_of = {node: c for c, chunk in enumerate(chunks) for node, _, _ in chunk}
    slot: dict[int, int] = {}
    for c, chunk in enumerate(chunks):
        for _, _, args in chunk:
            for a in args:
                if chunk_of.get(a, c) < c and a not in slot:
                    slot[a] = len(slot)
    for node in outputs:
        if node in chunk_of and node not in slot:
            slot[node] = len(slot)
    index = {v: k for k, v in enumerate(inputs)}
    parts = []
    for c, chunk in enumerate(chunks):
        names = dict(literals)
        head = []
        for _, _, args in chunk:
            for a in args:
                if a in names or chunk_of.get(a) == c:
                    continue
                if a in index:
                    names[a] = f"a{index[a]}"
                    head.append(f"    a{index[a]} = a[{index[a]}]")
                else:
                    names[a] = f"v{slot[a]}"
                    head.append(f"    v{slot[a]} = s[{slot[a]}]")
        store = {node: f"s[{slot[node]}]" for node, _, _ in chunk if node in slot}
        lines = head + _straight_line(chunk, names, consts, set(), store)
        parts.append(f"def chunk{c}(a, s):\n" + "".join(ln + "\n" for ln in lines) + "    return None\n")

    def ref(node: int) -> str:
        if node in literals:
            return literals[node]
        return f"a[{index[node]}]" if node in index else f"s[{slot[node]}]"

    calls = "".join(f"    chunk{c}(a, s)\n" for c in range(len(chunks)))
    result = ", ".join(ref(n) for n in outputs)
    parts.append(f"def program(*a):\n    s = [0.0] * {len(slot)}\n{calls}    return ({result},)\n")
    return "\n".join(parts)


def check_out(out: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``out`` if compiled code may write results into it in place, else a PointError.

    Machine code writes through the array's address: a read-only buffer (``bytes``, a
    read-only memmap) would crash the process or change immutable data.
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


class Program:
    """A schedule with its Python code, and native code when the backend policy asks for it."""

    def __init__(self, graph: Graph, outputs: Sequence[int], inputs: Sequence[int], backend: str = "python"):
        self.schedule = Schedule.build(graph, outputs, inputs)
        self.n_out = len(self.schedule.outputs)
        self._native: NativeProgram | None = None
        # `call` (see NativeProgram) of the native code single points run on, once there is one
        self.call: Any = None
        self._python: tuple[Any, Any] | None = None
        self._compiling: threading.Thread | None = None
        use_native = backend == "native" or (
            backend == "auto" and NATIVE_MIN_OPS <= self.size <= NATIVE_MAX_OPS and native.available())
        self.prefer_native_points = use_native
        # Reused argument buffers: reading an array's address costs more than copying
        # a point into a buffer whose address is known.
        self._in = np.empty(max(1, len(self.schedule.inputs)))
        self._out = np.empty(max(1, self.n_out))
        self._addresses = (self._in.ctypes.data, self._out.ctypes.data, self._out.ctypes.data + 8)
        self._lock = threading.Lock()
        forksafe.register(self)
        if use_native and self.size <= NATIVE_SYNC_OPS:
            self.native = native.compile_native(self.schedule)
        elif use_native:
            self._quick_native()
        # Small programs run single points in Python, but a large batch is worth a
        # native compile whatever the size: the fused loop beats one NumPy pass per node.
        self._native_for_batches = backend == "auto" and self.size <= NATIVE_MAX_OPS and native.available()

    @property
    def native(self) -> NativeProgram | None:
        """The native code, when compiled (optimised code replaces quick code when ready)."""
        return self._native

    @native.setter
    def native(self, program: NativeProgram | None) -> None:
        self._native = program
        self.call = program.call if program is not None and self.prefer_native_points else None

    def _quick_native(self, optimize: bool = True) -> None:
        """Quick native code (-O0) now, and optimised code (-O2) from a background thread
        (started later by :meth:`_optimize_in_background` if not ``optimize``)."""
        self.native = native.compile_native(self.schedule, opt=0)
        if optimize:
            self._optimize_in_background()

    def _optimize_in_background(self) -> None:
        if self.size <= NATIVE_OPTIMIZE_OPS and BACKGROUND_OPTIMIZE and self._compiling is None:
            self._compiling = background.start(self._compile_native)

    def _compile_native(self) -> None:
        try:
            self.native = native.compile_native(self.schedule, opt=2)
        except Exception:  # keep serving the quick code; -O2 is an optimisation
            pass

    def wait_native(self) -> None:
        """Block until a background native compile (if any) has finished."""
        if self._compiling is not None:
            self._compiling.join()

    def prepare_batches(self) -> None:
        """Compile now the optimised native code that large batches would compile on first use."""
        if self.native is None and self._native_for_batches:
            with self._lock:
                if self.native is None:
                    self.native = native.compile_native(self.schedule, opt=2)

    @property
    def source(self) -> str:
        """The generated Python source."""
        return self.schedule.source

    @property
    def size(self) -> int:
        """Number of operations."""
        return self.schedule.size

    def _python_functions(self) -> tuple[Any, Any]:
        if self._python is None:
            code = compile(self.schedule.source, "<symad>", "exec")
            py_ns, np_ns = dict(_PY_NS), dict(_NP_NS)
            exec(code, py_ns)  # generated from the op table, never from user text
            exec(code, np_ns)
            self._python = (py_ns["program"], np_ns["program"])
        return self._python

    @property
    def run_float(self) -> Any:
        """The Python function on floats."""
        return self._python_functions()[0]

    @property
    def run_numpy(self) -> Any:
        """The Python function on NumPy values."""
        return self._python_functions()[1]

    # ------------------------------------------------------------------ running
    def outputs(self, x: np.ndarray, batch: bool) -> np.ndarray:
        """The outputs at one point (a vector) or at a batch of points (rows)."""
        return self.batch(x) if batch else self.point(x)

    def point(self, x: np.ndarray) -> np.ndarray:
        """Outputs at one point ``x`` (a contiguous float64 vector of the inputs)."""
        call = self.call
        if call is not None:
            x = np.require(x, np.float64, ("C", "A"))  # machine code reads it in place: no other layout
            if x.shape != (len(self.schedule.inputs),):
                raise PointError(f"a point needs {len(self.schedule.inputs)} value(s), got shape {x.shape}")
            out = np.empty(self.n_out)
            out[0] = call(x, out[1:])
            return out
        nat = self.native
        if nat is not None and self.prefer_native_points:
            with self._lock:
                self._in[: len(x)] = x
                nat.point(*self._addresses)
                return self._out[: self.n_out].copy()
        args = x.tolist()
        try:
            return np.array(self.run_float(*args), dtype=float)
        except (ArithmeticError, ValueError):
            with np.errstate(all="ignore"):
                return np.array([float(v) for v in self.run_numpy(*(np.float64(a) for a in args))])

    def batch(self, rows: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Outputs at many points: ``rows`` has shape (n_points, n_inputs); result (n_points, n_out).

        ``out``, a C-contiguous float64 array of that shape, is written into and returned.
        """
        n = rows.shape[0]
        out = np.empty((n, self.n_out)) if out is None else check_out(out, (n, self.n_out))
        nat = self.native
        first = False
        if nat is None and self._native_for_batches and n >= NATIVE_BATCH_POINTS:
            with self._lock:
                if self.native is None:
                    self._quick_native(optimize=False)  # this batch waits for -O0 code only
                    first = True
            nat = self.native
        try:
            return self._batch(rows, out, nat)
        finally:
            if first:  # optimised code compiles once this batch is done, not competing for its cores
                self._optimize_in_background()

    def _batch(self, rows: np.ndarray, out: np.ndarray, nat: NativeProgram | None) -> np.ndarray:
        n = rows.shape[0]
        if nat is not None:
            rows = np.require(rows, np.float64, ("C", "A"))  # machine code reads it in place
            if not rows.size:
                return out
            pool = _batch_pool() if n >= PARALLEL_MIN_POINTS else None
            if pool is None:
                nat.batch(rows.ctypes.data, out.ctypes.data, n)
            else:
                bounds = np.linspace(0, n, BATCH_THREADS + 1).astype(int).tolist()
                in_row, out_row = rows.ctypes.data, out.ctypes.data
                width_in, width_out = 8 * rows.shape[1], 8 * self.n_out

                def run(lo_hi: tuple[int, int]) -> None:
                    lo, hi = lo_hi
                    nat.batch(in_row + lo * width_in, out_row + lo * width_out, hi - lo)

                list(pool.map(run, zip(bounds[:-1], bounds[1:])))  # ctypes releases the GIL
            return out
        with np.errstate(all="ignore"):
            cols = self.run_numpy(*(rows[:, k] for k in range(rows.shape[1])))
        for k, c in enumerate(cols):
            out[:, k] = c
        return out
