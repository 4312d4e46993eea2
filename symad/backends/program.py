"""A compiled program: a schedule's code, run at one point or at a batch of points.

Backends turn a :class:`~symad.backends.schedule.Schedule` into code:

* ``python``: one straight-line Python function (:mod:`symad.backends.python_code`),
  run on floats for a single point and on NumPy arrays for a batch.
* ``native``: LLVM machine code through llvmlite (:mod:`symad.backends.llvm.jit`),
  a function for one point and one fused loop for a batch.

The ``auto`` policy (below) picks between them by size.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from symad.backends import background
from symad.backends.llvm import jit
from symad.backends.llvm.jit import NativeProgram
from symad.backends.python_code import NP_NAMESPACE, PY_NAMESPACE, python_source
from symad.backends.schedule import Schedule
from symad.core import forksafe
from symad.core.dag import Graph
from symad.core.errors import PointError

BACKENDS = ("auto", "python", "native")
# `auto` policy: below NATIVE_MIN_OPS operations a foreign call costs more than the
# work, so single points run in Python.  Up to NATIVE_SYNC_OPS optimised native code
# (LLVM -O2) is compiled before the first call.  Beyond, quick native code (-O0,
# compiled in about the time Python needs to compile the same program, and in less
# memory) serves the calls; once they have cost what optimised code's compile will, a
# background thread compiles it, up to NATIVE_OPTIMIZE_OPS (-O2's time grows faster than
# linearly).  Past
# NATIVE_MAX_OPS, Python code compiled in chunks keeps memory bounded.
NATIVE_MIN_OPS = 16  # measured: native `call` ≈ 0.9 µs a point; Python code ≈ 0.5 µs + 50 ns an operation
NATIVE_SYNC_OPS = 3000
NATIVE_OPTIMIZE_OPS = 50_000
NATIVE_MAX_OPS = 200_000  # beyond, `auto` stays in Python: LLVM's memory grows with function size
PARALLEL_MIN_POINTS = 20_000


# What a native compile is expected to cost, for the ski rentals deciding when one pays
# (measured: LLVM -O2 ~20 ms plus ~150 µs an operation, -O0 ~25 µs an operation), and
# what a call of quick (-O0) code costs (~0.6 µs plus ~1.3 ns an operation).
COMPILE_S, COMPILE_S_PER_OP = 0.02, {0: 25e-6, 2: 150e-6}
CALL_S, QUICK_S_PER_OP = 0.6e-6, 1.3e-9
# A compile in the background is not free for the caller: while it runs, the caller's loop
# slows (on 2 cores, with SciPy's BLAS threads spinning beside it, by ~0.7 s during a 0.4 s
# compile).  The ski rentals count a compile at this multiple of its own time.
BACKGROUND_COST = 2.5


def first_native_opt(size: int) -> int:
    """The optimisation level of a program's first native code under ``auto``."""
    return 2 if size <= NATIVE_SYNC_OPS else 0


def compile_seconds(size: int, opt: int) -> float:
    """What a background native compile of ``size`` operations at ``opt`` is expected to cost
    the caller (its time, times ``BACKGROUND_COST``)."""
    return BACKGROUND_COST * (COMPILE_S + COMPILE_S_PER_OP[opt] * size)


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


def _unreachable(*xs: Any) -> Any:
    raise AssertionError("NumPy arithmetic raised under np.errstate(all='ignore')")


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

    def __init__(self, graph: Graph, outputs: Sequence[int], inputs: Sequence[int], backend: str = "python", *,
                 background: bool = True, schedule: Schedule | None = None):
        self.schedule = Schedule.build(graph, outputs, inputs) if schedule is None else schedule
        self.n_out = len(self.schedule.outputs)
        self._native: NativeProgram | None = None
        # `call` (see NativeProgram) of the native code single points run on, once there is one
        self.call: Any = None
        self._python: tuple[Any, Any] | None = None
        self._compiling: background.Task | None = None  # the -O2 compile of quick code
        self._optimizable = False  # quick code whose -O2 compile waits for its calls to pay
        self.background = background  # False: no optimised recompile in a background thread (one-shot callers)
        use_native = backend == "native" or (
            backend == "auto" and NATIVE_MIN_OPS <= self.size <= NATIVE_MAX_OPS and jit.available())
        self.prefer_native_points = use_native
        # Reused argument buffers: reading an array's address costs more than copying
        # a point into a buffer whose address is known.
        self._in = np.empty(max(1, len(self.schedule.inputs)))
        self._out = np.empty(max(1, self.n_out))
        self._addresses = (self._in.ctypes.data, self._out.ctypes.data, self._out.ctypes.data + 8)
        self._lock = threading.Lock()
        forksafe.register(self)
        if use_native and self.size <= NATIVE_SYNC_OPS:
            self.native = jit.compile_native(self.schedule)
        elif use_native:
            self._quick_native()
        # Small programs run single points in Python, but a large batch is worth a
        # native compile whatever the size: the fused loop beats one NumPy pass per node.
        self._native_for_batches = backend == "auto" and self.size <= NATIVE_MAX_OPS and jit.available()

    @classmethod
    def from_schedule(cls, schedule: Schedule, backend: str = "python", *, background: bool = True) -> Program:
        """The program of a schedule already built."""
        return cls(None, schedule.outputs, schedule.inputs, backend,  # type: ignore[arg-type]
                   background=background, schedule=schedule)

    @property
    def native(self) -> NativeProgram | None:
        """The native code, when compiled (optimised code replaces quick code when ready)."""
        return self._native

    @native.setter
    def native(self, program: NativeProgram | None) -> None:
        self._native = program
        self.call = program.call if program is not None and self.prefer_native_points else None

    def _quick_native(self, optimize: bool = True) -> None:
        """Quick native code (-O0) now; with ``optimize``, optimised code (-O2) from a background
        thread once the quick code's calls have cost what that compile will (a ski rental: a
        short loop never pays for it, nor waits for it, nor shares its cores with it)."""
        self.native = jit.compile_native(self.schedule, opt=0)
        quick = self.call
        if not optimize or self.size > NATIVE_OPTIMIZE_OPS or not self.background:
            return
        self._optimizable = True
        if quick is None:
            self._optimize_in_background()
            return
        left = [max(1, round(compile_seconds(self.size, 2) / (CALL_S + QUICK_S_PER_OP * self.size)))]

        def counted(x: np.ndarray, rest: np.ndarray) -> float:
            left[0] -= 1
            if left[0] == 0:
                self._optimize_in_background()
            return quick(x, rest)

        if self.call is quick:  # (optimised code that arrived meanwhile is left alone)
            self.call = counted

    def _optimize_in_background(self) -> None:
        if self.size <= NATIVE_OPTIMIZE_OPS and self.background and self._compiling is None:
            self._compiling = background.submit(self._compile_native)

    def _compile_native(self) -> None:
        try:
            self.native = jit.compile_native(self.schedule, opt=2)
        except Exception:  # keep serving the quick code; -O2 is an optimisation
            pass

    def wait_native(self) -> None:
        """Optimised native code now: start the -O2 compile of quick code whose calls have not
        started it yet, and block until it has finished (run here if it has not started)."""
        if self._optimizable:
            self._optimize_in_background()
        if self._compiling is not None:
            self._compiling.join()

    def prepare_batches(self) -> None:
        """Compile now the optimised native code that large batches would compile on first use."""
        if self.native is None and self._native_for_batches:
            with self._lock:
                if self.native is None:
                    self.native = jit.compile_native(self.schedule, opt=2)

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
            schedule = self.schedule
            source = python_source(schedule.inputs, schedule.outputs, schedule.steps, schedule.consts,
                                   schedule.chunks() if schedule.chunked else None, guard="_ieee")
            code = compile(source, "<symad>", "exec")
            py_ns, np_ns = dict(PY_NAMESPACE), dict(NP_NAMESPACE)
            np_ns["_ieee"] = _unreachable

            def ieee(*xs: float) -> tuple[float, ...]:
                with np.errstate(all="ignore"):
                    return tuple([float(v) for v in np_ns["program"](*[np.float64(x) for x in xs])])

            py_ns["_ieee"] = ieee
            exec(code, py_ns)  # generated from the op table, never from user text
            exec(code, np_ns)
            self._python = (py_ns["program"], np_ns["program"])
        return self._python

    @property
    def run_float(self) -> Any:
        """The Python function on floats (IEEE results, as NumPy gives them, where Python's
        arithmetic would raise)."""
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
        return np.array(self.run_float(*x.tolist()), dtype=float)

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

                futures = []
                for part in zip(bounds[:-1], bounds[1:]):
                    try:
                        futures.append(pool.submit(run, part))  # ctypes releases the GIL
                    except RuntimeError:  # no thread could be started (or the pool is shut at exit)
                        run(part)
                for future in futures:
                    future.result()
            return out
        with np.errstate(all="ignore"):
            cols = self.run_numpy(*(rows[:, k] for k in range(rows.shape[1])))
        for k, c in enumerate(cols):
            out[:, k] = c
        return out
