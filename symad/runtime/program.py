"""A compiled program: a schedule's code, run at one point or at a batch of points.

Backends turn a :class:`~symad.schedule.schedule.Schedule` into code:

* ``python``: one straight-line Python function (:mod:`symad.backends.python_code`),
  run on floats for a single point and on NumPy arrays for a batch.
* ``native``: LLVM machine code (:mod:`symad.native`), a function for one point and one
  fused loop for a batch (split among threads when large: :mod:`symad.runtime.batches`).

The ``auto`` policy (:mod:`symad.runtime.policy`) picks between them by size.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from symad import native
from symad.backends.python_code import python_functions, schedule_source
from symad.backends.vm import check_out
from symad.core import forksafe
from symad.core.dag import Graph
from symad.core.errors import PointError
from symad.runtime import background, batches, policy
from symad.schedule.schedule import Schedule


class Program:
    """A schedule with its Python code, and native code when the backend policy asks for it."""

    def __init__(self, graph: Graph, outputs: Sequence[int], inputs: Sequence[int], backend: str = "python", *,
                 background: bool = True, schedule: Schedule | None = None):
        self.schedule = Schedule.build(graph, outputs, inputs) if schedule is None else schedule
        self.n_out = len(self.schedule.outputs)
        self._native: native.NativeProgram | None = None
        # `call` (see NativeProgram) of the native code single points run on, once there is one
        self.call: Any = None
        self._python: tuple[Any, Any] | None = None
        self._compiling: background.Task | None = None  # the -O2 compile of quick code
        self._optimizable = False  # quick code whose -O2 compile waits for its calls to pay
        self._probe: np.ndarray | None = None  # a point of the calls that paid for that compile
        self.background = background  # False: no optimised recompile in a background thread (one-shot callers)
        use_native = policy.native_points(backend, self.size)
        self.prefer_native_points = use_native
        # Reused argument buffers: reading an array's address costs more than copying
        # a point into a buffer whose address is known.
        self._in = np.empty(max(1, len(self.schedule.inputs)))
        self._out = np.empty(max(1, self.n_out))
        self._addresses = (self._in.ctypes.data, self._out.ctypes.data, self._out.ctypes.data + 8)
        self._lock = threading.Lock()
        forksafe.register(self)
        if use_native and self.size <= policy.NATIVE_SYNC_OPS:
            self.native = native.compile(self.schedule)
        elif use_native:
            self._quick_native()
        # Small programs run single points in Python, but a large batch is worth a native compile.
        self._native_for_batches = policy.native_batches(backend, self.size)

    @classmethod
    def from_schedule(cls, schedule: Schedule, backend: str = "python", *, background: bool = True) -> Program:
        """The program of a schedule already built."""
        return cls(None, schedule.outputs, schedule.inputs, backend,  # type: ignore[arg-type]
                   background=background, schedule=schedule)

    @property
    def native(self) -> native.NativeProgram | None:
        """The native code, when compiled (optimised code replaces quick code when ready)."""
        return self._native

    @native.setter
    def native(self, program: native.NativeProgram | None) -> None:
        self._native = program
        self.call = program.call if program is not None and self.prefer_native_points else None

    def _quick_native(self, optimize: bool = True) -> None:
        """Quick native code now (stitched from stencils where this machine has them, else -O0);
        with ``optimize``, optimised code (-O2) from a background thread once the quick code's
        calls have cost what that compile will (a ski rental: a short loop never pays for it,
        nor waits for it, nor shares its cores with it)."""
        stitched = policy.stitched(self.size)
        if stitched:
            try:
                self.native = native.stitch(self.schedule)
            except Exception:  # noqa: BLE001 - unusable stencils: compiled quick code instead
                stitched = False
        if not stitched:
            if self.size > policy.NATIVE_MAX_OPS:
                self.prefer_native_points = False  # no LLVM code this large: Python code
                return
            self.native = native.compile(self.schedule, opt=0)
        quick = self.call
        if not optimize or self.size > policy.NATIVE_OPTIMIZE_OPS or not self.background:
            return
        self._optimizable = True
        if quick is None:
            self._optimize_in_background()
            return
        left = [policy.quick_calls_before_optimising(self.size)]

        def counted(x: np.ndarray, rest: np.ndarray) -> float:
            left[0] -= 1
            if left[0] == 0:
                self._probe = np.array(x, dtype=float)  # (the point both codes are timed at)
                self._optimize_in_background()
            return quick(x, rest)

        if self.call is quick:  # (optimised code that arrived meanwhile is left alone)
            self.call = counted

    def _optimize_in_background(self) -> None:
        if self.size <= policy.NATIVE_OPTIMIZE_OPS and self.background and self._compiling is None:
            self._compiling = background.submit(self._compile_native)

    def _compile_native(self) -> None:
        try:
            optimised = native.compile(self.schedule, opt=2)
        except Exception:  # keep serving the quick code; -O2 is an optimisation
            return
        quick, probe = self._native, self._probe
        if quick is not None and probe is not None and quick.call is not None and optimised.call is not None:
            try:
                keep = not faster(optimised.call, quick.call, probe, self.n_out)
            except Exception:  # noqa: BLE001 - a timing that fails decides nothing: -O2 as before
                keep = False
            if keep:
                self.native = quick  # (stitched code can beat -O2 code: kept, and no longer counted)
                return
        self.native = optimised

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
                    self.native = native.compile(self.schedule, opt=2)

    @property
    def source(self) -> str:
        """The generated Python source."""
        return schedule_source(self.schedule)

    @property
    def size(self) -> int:
        """Number of operations."""
        return self.schedule.size

    def _python_functions(self) -> tuple[Any, Any]:
        if self._python is None:
            self._python = python_functions(self.schedule)
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
        if nat is None and self._native_for_batches and n >= policy.NATIVE_BATCH_POINTS:
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

    def _batch(self, rows: np.ndarray, out: np.ndarray, nat: native.NativeProgram | None) -> np.ndarray:
        if nat is not None:
            rows = np.require(rows, np.float64, ("C", "A"))  # machine code reads it in place
            if rows.size:
                batches.run_batch(nat, rows, out)
            return out
        with np.errstate(all="ignore"):
            cols = self.run_numpy(*(rows[:, k] for k in range(rows.shape[1])))
        for k, c in enumerate(cols):
            out[:, k] = c
        return out


def faster(first: Any, second: Any, x: np.ndarray, n_out: int, rounds: int = 5,
           clock: Callable[[], float] = time.perf_counter) -> bool:
    """Whether ``first`` (a native code's ``call``) runs ``x`` faster than ``second`` does: each
    timed (by ``clock``, in seconds) over a block of calls of about 0.2 ms, in turn, ``rounds``
    times, the fastest block of each compared (a block the process waited through is slower, not
    faster).  The same bits either way: this decides which serves, not what it gives."""
    rest = np.empty(max(1, n_out - 1))
    t = clock()
    second(x, rest)
    once = max(clock() - t, 1e-8)
    reps = int(min(10_000, max(1, 2e-4 / once)))
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for k, call in enumerate((first, second)):
            t = clock()
            for _ in range(reps):
                call(x, rest)
            best[k] = min(best[k], clock() - t)
    return best[0] < best[1]
