"""The compiled function users call: value and gradient at points, single or batched."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import background, compiler, forksafe, native
from .compiler import BACKENDS, NATIVE_BATCH_POINTS, Program
from .errors import PointError, SymadError, name_list
from .tape import Tape

_F64 = np.dtype(np.float64)
_STRIDE = (8,)  # a contiguous vector of float64
COMPILE_AFTER_CALLS = 1  # `auto` compiles a program once it has been interpreted this many times


class _Tiers:
    """One set of outputs (the value, or the value and gradient) of a Function, tiered.

    With backend ``auto`` the first call is interpreted by a :class:`Tape` (no
    code to build); a second call starts compiling the program in a background
    thread, and calls are interpreted until it is ready.  Other backends compile
    on first use.  A batch of ``NATIVE_BATCH_POINTS`` or more waits for the
    compiled program: its fused loop repays the compile at once.
    """

    def __init__(self, fn: Function, with_grad: bool):
        self.fn, self.with_grad = fn, with_grad
        self.program: Program | None = None
        self.floats: Any = None  # the program's Python code on floats, when points run in Python
        self.calls = 0
        self.thread: threading.Thread | None = None
        self.error: Exception | None = None
        self._lock = threading.Lock()
        forksafe.register(self)

    def compiled(self) -> Program:
        """The compiled program, built now (or awaited) if need be."""
        while self.program is None:
            thread = self.start()
            thread.join()
            if self.error is not None:
                raise self.error
        return self.program

    def start(self) -> threading.Thread:
        """Start compiling in the background (once); the compile thread."""
        with self._lock:
            thread = self.thread
            if thread is None or (self.program is None and self.error is None and not thread.is_alive()):
                # None yet, or one that ended without a result: a thread of the parent
                # process, in a child forked while it ran (its program never arrives here).
                thread = self.thread = background.start(self._build)
            return thread

    def _build(self) -> None:
        fn = self.fn
        if self.program is not None:
            return
        try:
            outs = [fn.expr.id]
            if self.with_grad:
                partials = fn.expr.grad(list(fn.variables))
                outs += [partials[v].id for v in fn.variables]
            program = Program(fn.expr.graph, outs, fn._inputs, fn.backend)
            if not program.prefer_native_points:
                self.floats = program.run_float
            self.program = program
            fn._compiled_one()
        except Exception as err:  # noqa: BLE001 - the tape keeps serving; compiled() raises it
            self.error = err

    def outputs(self, x: np.ndarray, batch: bool) -> np.ndarray:
        """The outputs at one point (a vector) or at a batch of points (rows)."""
        program = self.program
        if program is None:
            if self.fn.backend != "auto" or (batch and len(x) >= NATIVE_BATCH_POINTS):
                program = self.compiled()
            else:
                return self._interpret(x, batch)
        return program.batch(x) if batch else program.point(x)

    def _interpret(self, x: np.ndarray, batch: bool) -> np.ndarray:
        self.calls += 1
        if self.calls > COMPILE_AFTER_CALLS and compiler.BACKGROUND_OPTIMIZE:
            self.start()
        tape = self.fn._shared_tape()
        if not batch:
            value, grads = tape._sweep(x.tolist(), self.with_grad)
            return np.array([value, *grads], dtype=float)
        value, grads = tape._sweep(list(x.T), self.with_grad)
        out = np.empty((len(x), 1 + len(grads)))
        for k, column in enumerate([value, *grads]):
            out[:, k] = column
        return out


class Function:
    """A compiled expression: ``value``, ``grad`` and ``value_and_grad`` at any point.

    A point is a dict or keyword arguments ``{name: value}``, or a sequence in
    ``variables`` order.  Values may be NumPy arrays (broadcast together), or the
    sequence an array of shape ``(n_points, n_vars)``: then every result has one
    entry per point, computed in one vectorised pass.

    ``backend`` is ``"python"``, ``"native"`` (LLVM through llvmlite) or ``"auto"``:
    the first call interpreted (nothing to build), and from the second call on
    code compiled in the background (Python for tiny expressions, native code
    otherwise).  All give the same numbers.

    >>> from symad import parse
    >>> f = parse("(x+y)+x*(x+y)").compile()
    >>> f.value_and_grad(x=1, y=2)
    (6.0, array([5., 2.]))
    """

    def __init__(self, expr: Any, variables: Sequence[str] | None = None, backend: str = "auto"):
        if backend not in BACKENDS:
            raise SymadError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        if backend == "native" and not native.available():
            raise SymadError("the native backend needs llvmlite: pip install llvmlite")
        self.expr = expr
        self.backend = backend
        used = expr.variables
        self.variables: tuple[str, ...] = tuple(used if variables is None else variables)
        if len(set(self.variables)) != len(self.variables):
            raise SymadError("variables listed twice")
        listed = set(self.variables)
        missing = [v for v in used if v not in listed]
        if missing:
            raise SymadError(f"the expression uses {name_list(missing)}, which is not in variables")
        self._inputs = [expr.graph.var(v) for v in self.variables]
        self._shape = (len(self.variables),)
        self._value = _Tiers(self, with_grad=False)
        self._value_grad = _Tiers(self, with_grad=True)
        self._tape: Tape | None = None

    def __reduce__(self) -> tuple:
        # Pickled as its expression (a DAG), its variables and backend: compiled again on load.
        return (Function, (self.expr, self.variables, self.backend))

    def _shared_tape(self) -> Tape:
        """The interpreter of the expression, shared by the value and value-and-gradient tiers."""
        tape = self._tape
        if tape is None:
            tape = self._tape = Tape(self.expr.graph, self.expr.id, self._inputs)
        return tape

    def _compiled_one(self) -> None:
        if self._value.program is not None and self._value_grad.program is not None:
            self._tape = None  # both programs compiled: the interpreter's memory can go

    # ------------------------------------------------------------------ programs
    def value_program(self) -> Program:
        """The compiled program of the value alone (compiled now if not yet)."""
        return self._value.compiled()

    def value_grad_program(self) -> Program:
        """The compiled program of the value and every partial (compiled now if not yet)."""
        return self._value_grad.compiled()

    def prepare(self) -> Function:
        """Compile both programs now and wait for them (and for optimised native code, also
        that of batches where single points run in Python)."""
        for tiers in (self._value, self._value_grad):
            program = tiers.compiled()
            program.wait_native()
            program.prepare_batches()
        return self

    # ------------------------------------------------------------------ calling
    def value(self, point: Any = None, /, **kwargs: Any) -> Any:
        """The value at a point (a float, or an array for a batch)."""
        program = self._value.program
        if (program is not None and program.call is not None and type(point) is np.ndarray
                and point.dtype is _F64 and point.shape == self._shape and point.strides == _STRIDE):
            return program.call(point, point)  # native code reads the array in place (one output)
        floats = self._value.floats
        if floats is not None and type(point) is np.ndarray and point.dtype is _F64 and point.shape == self._shape:
            try:
                return floats(*point.tolist())[0]
            except (ArithmeticError, ValueError):
                pass
        out, shape = self._run(self._value, point, kwargs)
        return float(out[0]) if shape is None else out[:, 0].reshape(shape)

    __call__ = value

    def grad(self, point: Any = None, /, **kwargs: Any) -> np.ndarray:
        """The gradient, in ``variables`` order (last axis for a batch)."""
        return self.value_and_grad(point, **kwargs)[1]

    def value_and_grad(self, point: Any = None, /, **kwargs: Any) -> tuple[Any, np.ndarray]:
        """``(value, gradient)``: the form ``scipy.optimize.minimize(..., jac=True)`` expects."""
        program = self._value_grad.program
        if (program is not None and program.call is not None and type(point) is np.ndarray
                and point.dtype is _F64 and point.shape == self._shape and point.strides == _STRIDE):
            # An optimizer's call: native code reads the point in place and writes the gradient
            # straight into the array returned, with no copy on either side.
            grad = np.empty(self._shape)
            return program.call(point, grad), grad
        floats = self._value_grad.floats
        if floats is not None and type(point) is np.ndarray and point.dtype is _F64 and point.shape == self._shape:
            # An optimizer's call on a small expression: straight to the Python code on floats.
            try:
                out = floats(*point.tolist())
                return out[0], np.array(out[1:])
            except (ArithmeticError, ValueError):
                pass  # the general path below redoes the point with IEEE (NumPy) semantics
        out, shape = self._run(self._value_grad, point, kwargs)
        if shape is None:
            return float(out[0]), out[1:]
        n = len(self.variables)
        return out[:, 0].reshape(shape), out[:, 1:].reshape(*shape, n)

    def value_and_grad_into(self, points: Any, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Batch ``value_and_grad`` writing into ``out`` (shape ``(n_points, 1 + n_vars)``,
        float64, C-contiguous, writeable, aligned: else a PointError), for repeated calls
        without allocation; returns views of it.

        >>> from symad import parse
        >>> import numpy as np
        >>> f = parse("x*y").compile()
        >>> buf = np.empty((2, 3))
        >>> v, g = f.value_and_grad_into([[1, 2], [3, 4]], buf)
        >>> v, g
        (array([ 2., 12.]), array([[2., 1.],
               [4., 3.]]))
        """
        arr = _array(points, None)
        n = len(self.variables)
        if arr.ndim != 2 or arr.shape[1] != n:
            raise PointError(f"points must have shape (n_points, {n}), got {arr.shape}")
        result = self.value_grad_program().batch(arr, out)  # which checks ``out`` (compiler.check_out)
        return result[:, 0], result[:, 1:]

    def _run(self, tiers: _Tiers | Program, point: Any, kwargs: Mapping[str, Any]) -> tuple[np.ndarray, Any]:
        """Outputs as a vector (one point; shape None) or rows (a batch of the given shape)."""
        n = len(self.variables)
        if type(point) is np.ndarray and point.dtype == np.float64 and point.shape == (n,) and not kwargs:
            return tiers.outputs(np.ascontiguousarray(point), False), None  # the optimizer's fast path
        x, shape = self._arguments(point, kwargs)
        return tiers.outputs(x, shape is not None), shape

    def _arguments(self, point: Any, kwargs: Mapping[str, Any]) -> tuple[np.ndarray, Any]:
        from .expr import check_variables

        n = len(self.variables)
        if point is None or isinstance(point, Mapping):
            given = dict(point or {}, **kwargs)
            check_variables(self.variables, given)
            values = [_array(given[v], v) for v in self.variables]
            if all(v.ndim == 0 for v in values):
                return np.array(values, dtype=float).reshape(n), None
            try:
                arrays = np.broadcast_arrays(*values)
            except ValueError as err:
                raise PointError(f"the point's arrays do not broadcast together: {err}") from None
            shape = arrays[0].shape
            return np.stack(arrays, axis=-1).reshape(int(np.prod(shape)), n), shape
        if kwargs:
            raise PointError("give a point either as a sequence or as keywords, not both")
        arr = _array(point, None)
        if arr.ndim == 0 and n == 1:  # a function of one variable takes a plain number
            return arr.reshape(1), None
        if arr.ndim == 0 or arr.shape[-1] != n:
            raise PointError(f"a point needs {n} value(s) ({name_list(self.variables)}), got shape {arr.shape}")
        if arr.ndim == 1:
            return np.ascontiguousarray(arr), None
        return arr.reshape(int(np.prod(arr.shape[:-1])), n), arr.shape[:-1]


def _array(value: Any, name: str | None) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        where = f" for {name}" if name else ""
        raise PointError(f"value{where} is not a number: {value!r:.60}") from None
