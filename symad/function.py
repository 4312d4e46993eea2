"""The compiled function users call: value and gradient at points, single or batched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import native
from .compiler import BACKENDS, Program
from .errors import PointError, SymadError


class Function:
    """A compiled expression: ``value``, ``grad`` and ``value_and_grad`` at any point.

    A point is a dict or keyword arguments ``{name: value}``, or a sequence in
    ``variables`` order.  Values may be NumPy arrays (broadcast together), or the
    sequence an array of shape ``(n_points, n_vars)``: then every result has one
    entry per point, computed in one vectorised pass.

    ``backend`` is ``"python"``, ``"native"`` (LLVM through llvmlite) or ``"auto"``
    (Python for tiny expressions, native code otherwise; all give the same numbers).

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
            raise SymadError(f"the expression uses {', '.join(missing)}, which is not in variables")
        self._inputs = [expr.graph.var(v) for v in self.variables]
        self._value: Program | None = None
        self._value_grad: Program | None = None

    # ------------------------------------------------------------------ programs
    def value_program(self) -> Program:
        """The compiled program of the value alone (built on first use)."""
        if self._value is None:
            self._value = Program(self.expr.graph, [self.expr.id], self._inputs, self.backend)
        return self._value

    def value_grad_program(self) -> Program:
        """The compiled program of the value and every partial (built on first use)."""
        if self._value_grad is None:
            partials = self.expr.grad(list(self.variables))
            outs = [self.expr.id, *(partials[v].id for v in self.variables)]
            self._value_grad = Program(self.expr.graph, outs, self._inputs, self.backend)
        return self._value_grad

    # ------------------------------------------------------------------ calling
    def value(self, point: Any = None, /, **kwargs: Any) -> Any:
        """The value at a point (a float, or an array for a batch)."""
        out, shape = self._run(self.value_program(), point, kwargs)
        return float(out[0]) if shape is None else out[:, 0].reshape(shape)

    __call__ = value

    def grad(self, point: Any = None, /, **kwargs: Any) -> np.ndarray:
        """The gradient, in ``variables`` order (last axis for a batch)."""
        return self.value_and_grad(point, **kwargs)[1]

    def value_and_grad(self, point: Any = None, /, **kwargs: Any) -> tuple[Any, np.ndarray]:
        """``(value, gradient)``: the form ``scipy.optimize.minimize(..., jac=True)`` expects."""
        out, shape = self._run(self.value_grad_program(), point, kwargs)
        if shape is None:
            return float(out[0]), out[1:]
        n = len(self.variables)
        return out[:, 0].reshape(shape), out[:, 1:].reshape(*shape, n)

    def value_and_grad_into(self, points: Any, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Batch ``value_and_grad`` writing into ``out`` (shape ``(n_points, 1 + n_vars)``,
        float64, C-contiguous), for repeated calls without allocation; returns views of it.

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
        result = self.value_grad_program().batch(arr, out)
        return result[:, 0], result[:, 1:]

    def _run(self, program: Program, point: Any, kwargs: Mapping[str, Any]) -> tuple[np.ndarray, Any]:
        """Outputs as a vector (one point; shape None) or rows (a batch of the given shape)."""
        n = len(self.variables)
        if type(point) is np.ndarray and point.dtype == np.float64 and point.shape == (n,) and not kwargs:
            return program.point(np.ascontiguousarray(point)), None  # the optimizer's fast path
        x, shape = self._arguments(point, kwargs)
        if shape is None:
            return program.point(x), None
        return program.batch(x), shape

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
        if arr.ndim == 0 or arr.shape[-1] != n:
            raise PointError(f"a point needs {n} value(s) ({', '.join(self.variables)}), got shape {arr.shape}")
        if arr.ndim == 1:
            return np.ascontiguousarray(arr), None
        return arr.reshape(int(np.prod(arr.shape[:-1])), n), arr.shape[:-1]


def _array(value: Any, name: str | None) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        where = f" for {name}" if name else ""
        raise PointError(f"value{where} is not a number: {value!r:.60}") from None
