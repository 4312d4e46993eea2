"""The compiled function users call: value and gradient at points, single or batched."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from symad import native
from symad.ad import sparsity
from symad.ad.reverse import gradient
from symad.ad.sparse_values import partial_entries
from symad.backends.tape import Tape
from symad.core import document, indexed
from symad.core.errors import PointError, SymadError, VariableError, check_variables, name_list
from symad.core.name_rule import checked_all
from symad.core.printing import to_text
from symad.runtime import policy
from symad.runtime.policy import BACKENDS
from symad.runtime.program import Program
from symad.runtime.tiering import TieredProgram

_F64 = np.dtype(np.float64)
_STRIDE = (8,)  # a contiguous vector of float64


def check_backend(backend: str) -> None:
    """A SymadError unless ``backend`` is one this machine runs."""
    if backend not in BACKENDS:
        raise SymadError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if backend == "native" and not native.available():
        raise SymadError("the native backend needs llvmlite: pip install llvmlite")


class Inputs:
    """The inputs of a compiled function: its ``variables`` (differentiated), then its
    ``params`` (given at each call, never differentiated); and how a point (a dict, keywords,
    a sequence or a batch) becomes the programs' input vector or rows."""

    def __init__(self, graph: Any, used: Sequence[str], variables: Sequence[str] | None,
                 wrt: Sequence[str] | None):
        if variables is not None and wrt is not None:
            raise SymadError("give variables (every one differentiated) or wrt (the others are parameters), "
                             "not both")
        listed = variables if wrt is None else wrt
        if listed is not None:  # `x` stands for every x[k] the expression uses
            listed = indexed.expand_names(checked_all(listed, "wrt" if wrt is not None else "variables"), used)
        self.variables: tuple[str, ...] = tuple(used if listed is None else listed)
        if len(set(self.variables)) != len(self.variables):
            raise SymadError(f"{'wrt' if wrt is not None else 'variables'} lists a name twice")
        # Parameters: the expression's other variables, given at each call, never differentiated.
        listed_set = set(self.variables)  # once: a set built per variable made compile quadratic in them
        self.params: tuple[str, ...] = tuple(v for v in used if v not in listed_set) if wrt is not None else ()
        missing = [] if wrt is not None else [v for v in used if v not in listed_set]
        if missing:
            raise SymadError(f"the expression uses {name_list(missing)}, which is not in variables")
        self._names = self.variables + self.params  # the programs' inputs, in order
        # the variables' nodes, then the parameters': the programs' inputs, in order
        self.inputs = [graph.var(v) for v in self._names]
        self.graph_of_inputs = graph
        self._shape = (len(self._names),)

    def described(self, graph: Any, roots: Sequence[int], many: bool) -> str:
        """``Kind(outputs, variables=(...), [params=(...),] backend='...')``, shortened: an
        output's text to its first 60 characters, never printing a large DAG."""
        texts = [_short_text(graph, root) for root in roots]
        shown = f"[{', '.join(texts)}]" if many else texts[0]
        params = f", params={_short_names(self.params)}" if self.params else ""
        return (f"{type(self).__name__}({shown}, variables={_short_names(self.variables)}{params}, "
                f"backend={self.backend!r})")  # type: ignore[attr-defined]

    @classmethod
    def rebuilt(cls, target: Any, variables: Sequence[str], parameters: bool, backend: str) -> Any:
        """The function of ``target`` (its expression or outputs) compiled again: ``variables``
        differentiated, and the other variables parameters if ``parameters``."""
        return cls(target, backend=backend, wrt=variables) if parameters else cls(target, variables, backend)

    def document_of(self, roots: list[int], kind: str) -> dict[str, Any]:
        """A document of the outputs ``roots`` with these inputs and the backend."""
        return document.to_document(self.graph_of_inputs, roots, kind, variables=list(self.variables),
                                    params=list(self.params), backend=self.backend)  # type: ignore[attr-defined]

    def with_params(self, point: Any, params: Any, kwargs: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        """The point extended by the parameters' values (as :meth:`point_array` reads it), and
        the keywords left.  With a dict or keywords, parameters may be among the names."""
        if not self.params:
            raise PointError("this function has no parameters (compile it with wrt=[...] to make some)")
        if point is None or isinstance(point, Mapping):
            given = dict(point or {}, **kwargs)
            if params is not None:
                given.update(self._params_dict(params))
            return given, {}
        if kwargs:
            raise PointError("give a point either as a sequence or as keywords, not both")
        if params is None:
            raise VariableError(f"missing value for parameter {name_list(self.params)}: "
                             f"pass them after the point, e.g. value_and_grad(x, {{{self.params[0]!r}: ...}})")
        p = self._params_vector(params)
        x = _array(point, None, self.variables)
        n = len(self.variables)
        if x.ndim == 0 and n == 1:
            x = x.reshape(1)
        if x.ndim == 0 or x.shape[-1] != n:
            raise PointError(f"a point needs {n} value(s) ({name_list(self.variables)}), got shape {x.shape}")
        if x.ndim == 1:
            return np.concatenate((x, p)), {}
        return np.concatenate((x, np.broadcast_to(p, (*x.shape[:-1], len(p)))), axis=-1), {}

    def _params_dict(self, params: Any) -> dict[str, Any]:
        if isinstance(params, Mapping):
            params = indexed.expand_point(self.params, params)
            unknown = [k for k in params if k not in self.params]
            if unknown:
                raise VariableError(f"unknown parameter {', '.join(map(str, unknown))} "
                                 f"(the parameters are {name_list(self.params) or 'none'})")
            return dict(params)
        return dict(zip(self.params, self._params_vector(params).tolist()))

    def _params_vector(self, params: Any) -> np.ndarray:
        """The parameters' values in ``params`` order, from a dict or a sequence."""
        if isinstance(params, Mapping):
            params = indexed.expand_point(self.params, params)
            missing = [k for k in self.params if k not in params]
            if missing:
                raise VariableError(f"missing value for parameter {name_list(missing)} "
                                 f"(the parameters are {name_list(self.params)})")
            self._params_dict(params)  # (unknown names)
            return np.array([float(_array(params[k], k)) for k in self.params])
        p = _array(params, None, self.params, "the parameters").reshape(-1) if np.ndim(params) <= 1 else None
        if p is None or len(p) != len(self.params):
            raise PointError(f"the parameters need {len(self.params)} value(s) ({name_list(self.params)}), "
                             f"got {np.shape(params)}")
        return p

    def with_direction(self, point: Any, direction: Any, params: Any, size: int,
                       what: str = "a direction") -> tuple[np.ndarray, np.ndarray]:
        """The point's inputs (parameters included) and ``direction`` (``size`` numbers), as
        arrays whose leading axes (none for one point and one direction) are broadcast together."""
        if self.params or params is not None:
            point, _ = self.with_params(point, params, {})
        x, shape = self.point_array(point, {})
        x = x.reshape(*(shape or ()), len(self._names))
        d = _array(direction, None, (), what)
        if d.ndim == 0 or d.shape[-1] != size:
            raise PointError(f"{what} needs {size} value(s), got shape {d.shape}")
        if x.ndim == 1 and d.ndim == 1:
            return x, d
        try:
            lead = np.broadcast_shapes(x.shape[:-1], d.shape[:-1])
        except ValueError as err:
            raise PointError(f"the points and directions do not broadcast together: {err}") from None
        return np.broadcast_to(x, lead + x.shape[-1:]), np.broadcast_to(d, lead + d.shape[-1:])

    @staticmethod
    def outputs_with(tiers: TieredProgram | Program, x: np.ndarray, d: np.ndarray) -> np.ndarray:
        """The outputs of a program whose inputs are the point's, then the direction's
        (``x`` and ``d`` from :meth:`with_direction`), with their leading axes."""
        if x.ndim == 1:
            return tiers.outputs(np.concatenate([x, d]), False)
        rows = np.concatenate([x, d], axis=-1)
        out = tiers.outputs(rows.reshape(-1, rows.shape[-1]), True)
        return out.reshape(*rows.shape[:-1], out.shape[-1])

    def outputs_at(self, tiers: TieredProgram | Program, point: Any,
                   kwargs: Mapping[str, Any]) -> tuple[np.ndarray, Any]:
        """Outputs as a vector (one point; shape None) or rows (a batch of the given shape)."""
        n = len(self._names)
        if type(point) is np.ndarray and point.dtype == np.float64 and point.shape == (n,) and not kwargs:
            return tiers.outputs(np.ascontiguousarray(point), False), None  # the optimizer's fast path
        x, shape = self.point_array(point, kwargs)
        return tiers.outputs(x, shape is not None), shape

    def point_array(self, point: Any, kwargs: Mapping[str, Any]) -> tuple[np.ndarray, Any]:
        """A point (dict, keywords, number or sequence) as a vector, shape None; or a batch as
        rows, with the batch's shape."""
        names = self._names
        n = len(names)
        if point is None or isinstance(point, Mapping):
            given = indexed.expand_point(names, dict(point or {}, **kwargs))
            check_variables(names, given)
            values = [_array(given[v], v) for v in names]
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
        arr = _unnamed(point, names)
        if arr.ndim == 0 and n == 1:  # a function of one variable takes a plain number
            return arr.reshape(1), None
        if arr.ndim == 0 or arr.shape[-1] != n:
            raise PointError(f"a point needs {n} value(s) ({name_list(names)}), got shape {arr.shape}")
        if arr.ndim == 1:
            return np.ascontiguousarray(arr), None
        return arr.reshape(int(np.prod(arr.shape[:-1])), n), arr.shape[:-1]


class Function(Inputs):
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

    def __init__(self, expr: Any, variables: Sequence[str] | None = None, backend: str = "auto", *,
                 background: bool = True, wrt: Sequence[str] | None = None):
        check_backend(backend)
        super().__init__(expr.graph, expr.variables, variables, wrt)
        self.expr = expr
        self.backend = backend
        self.background = background
        graph = expr.graph
        self._value = TieredProgram(graph, lambda: [expr.id], self.inputs, backend, tape=self.shared_tape,
                                    with_grad=False, background=background, compiled_hook=self._release_tape)
        self._value_grad = TieredProgram(graph, self._value_grad_nodes, self.inputs, backend, tape=self.shared_tape,
                                         with_grad=True, background=background, compiled_hook=self._release_tape,
                                         n_grads=len(self.variables))
        self._tape: Tape | None = None

    def to_document(self) -> dict[str, Any]:
        """The function as a document of symad's file format: its expression, variables,
        parameters and backend (loading compiles it again)."""
        return self.document_of([self.expr.id], "function")

    def __repr__(self) -> str:
        """``Function(x^2 + y, variables=('x', 'y'), backend='auto')``."""
        return self.described(self.expr.graph, [self.expr.id], False)

    def __reduce__(self) -> tuple:
        # Its expression (which pickles as a document of symad's format), variables, parameters
        # and backend: compiled again on load.
        return (_rebuilt, (type(self), self.expr, self.variables, self.backend, bool(self.params)))

    def _value_grad_nodes(self) -> list[int]:
        partials = self.expr.grad(list(self.variables))
        return [self.expr.id, *(partials[v].id for v in self.variables)]

    def shared_tape(self) -> Tape:
        """The interpreter of the expression, shared by the value and value-and-gradient tiers."""
        tape = self._tape
        if tape is None:
            tape = self._tape = Tape(self.expr.graph, self.expr.id, self.inputs)
        return tape

    def _release_tape(self) -> None:
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
            tiers.prepare()
        return self

    # ------------------------------------------------------------------ sparse second derivatives
    def hessian_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        """The Hessian's structural nonzeros, lower triangle: ``(rows, cols)`` int64 arrays with
        ``rows >= cols``, row-major sorted, positions in ``variables`` order; the pairs of variables
        that meet in a nonlinear operation (:mod:`symad.ad.sparsity`), read off the DAG once.
        Parameters are constants here, so a Lagrangian is one expression:

        >>> import symad
        >>> L = symad.compile("sigma*(x1^2*x2 + x3) + lam1*(x1*x3 - 1) + lam2*(x2 + x3)^2",
        ...                   wrt=["x1", "x2", "x3"])
        >>> L.hessian_pattern()
        (array([0, 1, 1, 2, 2, 2]), array([0, 0, 1, 0, 1, 2]))
        >>> L.hessian_values([1, 2, 3], {"sigma": 1, "lam1": 0.5, "lam2": 2})
        array([4. , 2. , 4. , 0.5, 4. , 4. ])
        >>> L.sparse_hessian([1, 2, 3], {"sigma": 1, "lam1": 0.5, "lam2": 2}).toarray()
        array([[4. , 2. , 0.5],
               [2. , 4. , 4. ],
               [0.5, 4. , 4. ]])
        """
        pattern = getattr(self, "_hessian_pattern", None)
        if pattern is None:
            layout = sparsity.Layout.of_scalars(self.inputs[:len(self.variables)])
            pattern = self._hessian_pattern = sparsity.hessian_pattern(self.expr.graph, self.expr.id, layout)
        return pattern

    def hessian_values(self, point: Any = None, params: Any = None, /, **kwargs: Any) -> np.ndarray:
        """The Hessian's entries at :meth:`hessian_pattern`'s positions (exact: the symbolic second
        derivatives of those entries only, compiled once into one program); a batch of points
        gives the batch's shape followed by the entries."""
        if self.params or params is not None:
            point, kwargs = self.with_params(point, params, kwargs)
        rows, cols = self.hessian_pattern()
        program = getattr(self, "_hessian_program", None)
        if program is None:
            graph, wrt = self.expr.graph, self.inputs[:len(self.variables)]
            partials = gradient(graph, self.expr.id, wrt)
            entries = partial_entries(graph, [partials[v] for v in wrt], wrt, rows, cols)
            entries = entries or [graph.const(0.0)]  # (a program has an output)
            program = self._hessian_program = Program(graph, entries, self.inputs, self.backend,
                                                      background=self.background)
        out, shape = self.outputs_at(program, point, kwargs)
        if shape is None:
            return np.array(out[:rows.size], dtype=float)
        return out[:, :rows.size].reshape(*shape, rows.size)

    def sparse_hessian(self, point: Any = None, params: Any = None, /, **kwargs: Any) -> Any:
        """The Hessian at one point as a ``scipy.sparse.csr_matrix``, full and symmetric
        (SciPy: ``pip install "symad[scipy]"``)."""
        values = self.hessian_values(point, params, **kwargs)
        if values.ndim != 1:
            raise PointError("sparse_hessian takes one point (hessian_values takes batches)")
        shape = getattr(self, "_hessian_csr", None)
        if shape is None:
            n = len(self.variables)
            shape = self._hessian_csr = sparsity.CsrShape(*self.hessian_pattern(), (n, n), mirrored=True)
        return shape.matrix(values)

    # ------------------------------------------------------------------ calling
    def value(self, point: Any = None, params: Any = None, /, **kwargs: Any) -> Any:
        """The value at a point (a float, or an array for a batch); ``params``: the parameters'
        values (a dict, or a sequence in ``params`` order), for a function compiled with ``wrt``."""
        if self.params or params is not None:
            point, kwargs = self.with_params(point, params, kwargs)
        program = self._value.program
        call = program.call if program is not None else self._value.vm_call()
        if (call is not None and type(point) is np.ndarray
                and point.dtype is _F64 and point.shape == self._shape and point.strides == _STRIDE):
            return call(point, point)  # machine code reads the array in place (one output)
        floats = self._value.floats
        if floats is not None and type(point) is np.ndarray and point.dtype is _F64 and point.shape == self._shape:
            return floats(*point.tolist())[0]  # the Python code on floats (IEEE results: see run_float)
        out, shape = self.outputs_at(self._value, point, kwargs)
        return float(out[0]) if shape is None else out[:, 0].reshape(shape)

    __call__ = value

    def grad(self, point: Any = None, params: Any = None, /, **kwargs: Any) -> np.ndarray:
        """The gradient, in ``variables`` order (last axis for a batch)."""
        return self.value_and_grad(point, params, **kwargs)[1]

    def value_and_grad(self, point: Any = None, params: Any = None, /, **kwargs: Any) -> tuple[Any, np.ndarray]:
        """``(value, gradient)``: the form ``scipy.optimize.minimize(..., jac=True)`` expects
        (``args=(params,)`` passes the parameters).  The gradient is in ``variables`` order:
        parameters are never differentiated."""
        if self.params or params is not None:
            point, kwargs = self.with_params(point, params, kwargs)
        program = self._value_grad.program
        call = program.call if program is not None else self._value_grad.vm_call()
        if (call is not None and type(point) is np.ndarray
                and point.dtype is _F64 and point.shape == self._shape and point.strides == _STRIDE):
            # An optimizer's call: machine code (compiled, or the interpreter's) reads the point
            # in place and writes the gradient straight into the array returned, with no copy.
            grad = np.empty(len(self.variables))
            return call(point, grad), grad
        floats = self._value_grad.floats
        if floats is not None and type(point) is np.ndarray and point.dtype is _F64 and point.shape == self._shape:
            # An optimizer's call on a small expression: straight to the Python code on floats.
            out = floats(*point.tolist())
            return out[0], np.array(out[1:])
        out, shape = self.outputs_at(self._value_grad, point, kwargs)
        if shape is None:
            return float(out[0]), out[1:]
        n = len(self.variables)
        return out[:, 0].reshape(shape), out[:, 1:].reshape(*shape, n)

    def value_and_grad_at(self, point: np.ndarray, grad: np.ndarray) -> float:
        """The value at ``point`` (a float64 vector in ``variables`` order), its gradient written
        into ``grad`` (a float64 vector as long): an optimizer's call with no array made, the
        bits of :meth:`value_and_grad`.  The function has no parameters."""
        if (type(point) is np.ndarray and point.dtype is _F64 and point.shape == self._shape
                and point.strides == _STRIDE and type(grad) is np.ndarray and grad.dtype is _F64
                and grad.shape == self._shape and grad.strides == _STRIDE):
            program = self._value_grad.program  # (asked after the arrays: the instructions count their calls)
            call = program.call if program is not None else self._value_grad.vm_call()
            if call is not None:
                return call(point, grad)
        value, grad[:] = self.value_and_grad(point)
        return value

    def point_call(self) -> Callable[[np.ndarray, np.ndarray], float] | None:
        """The compiled program's ``call(point, grad) -> value`` as it stands (the tier serving calls
        now), for a caller that passes float64 vectors of the variables' length itself, as
        :meth:`value_and_grad_at` checks; None before the program is compiled, or with parameters."""
        program = self._value_grad.program
        return program.call if program is not None and not self.params else None

    def float_function(self) -> Callable[..., tuple[float, ...]]:
        """``fn(x1, ..., xn) -> (value, ∂/∂x1, ..., ∂/∂xn)`` on plain floats, in ``variables``
        order (the parameters' values, if any, follow the variables'): the fastest call form
        for a small expression, as SymPy's ``lambdify`` gives one (compiled now; the numbers
        of every other form).

        >>> from symad import parse
        >>> parse("x*y + 1").compile().float_function()(2.0, 3.0)
        (7.0, 3.0, 2.0)
        """
        program = self.value_grad_program()
        # native code through a small array; a small program's Python code on the floats
        # themselves is faster (no array made)
        if program.call is not None and program.size >= policy.NATIVE_MIN_OPS:
            n_rest, call = len(self.variables), program.call

            def native(*xs: float) -> tuple[float, ...]:
                rest = np.empty(n_rest)
                return (call(np.array(xs, dtype=float), rest), *rest.tolist())

            return native
        return program.run_float  # IEEE results where Python's floats would raise (inf, nan)

    def value_and_grad_into(self, points: Any, out: np.ndarray, params: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Batch ``value_and_grad`` writing into ``out`` (shape ``(n_points, 1 + n_vars)``,
        float64, C-contiguous, writeable, aligned: else a PointError), for repeated calls
        without allocation; returns views of it.  ``params``: as for :meth:`value_and_grad`.

        >>> from symad import parse
        >>> import numpy as np
        >>> f = parse("x*y").compile()
        >>> buf = np.empty((2, 3))
        >>> v, g = f.value_and_grad_into([[1, 2], [3, 4]], buf)
        >>> v, g
        (array([ 2., 12.]), array([[2., 1.],
               [4., 3.]]))
        """
        if self.params or params is not None:
            arr = _array(points, None, self.variables)
            if arr.ndim != 2:
                raise PointError(f"points must have shape (n_points, {len(self.variables)}), got {arr.shape}")
            points, _ = self.with_params(arr, params, {})
        arr = _array(points, None, self._names)
        n = len(self._names)
        if arr.ndim != 2 or arr.shape[1] != n:
            raise PointError(f"points must have shape (n_points, {n}), got {arr.shape}")
        result = self.value_grad_program().batch(arr, out)  # which checks ``out`` (vm.check_out)
        return result[:, 0], result[:, 1:]

_REPR_NODES = 2_000  # a larger expression shows its size, not its text (printing it would cost)
_REPR_CHARS = 60
_REPR_NAMES = 8


def _short_text(graph: Any, root: int) -> str:
    size = len(graph.reachable([root]))
    if size > _REPR_NODES:
        return f"<{size:,} nodes>"
    text = to_text(graph, root, "auto")
    return text if len(text) <= _REPR_CHARS else text[:_REPR_CHARS - 3] + "..."


def _short_names(names: Sequence[str]) -> str:
    """The names as a tuple's repr, runs of indices compacted (``x[1..100]``), at most a few."""
    shown = indexed.compact(list(names))
    if len(shown) > _REPR_NAMES:
        return f"({', '.join(map(repr, shown[:_REPR_NAMES - 2]))}, ... {len(names):,} names)"
    return repr(tuple(shown))


def _rebuilt(cls: type, expr: Any, variables: tuple[str, ...], backend: str, parameters: bool) -> Function:
    """A pickled function compiled again (its expression pickles as a document of symad's format)."""
    return cls.rebuilt(expr, variables, parameters, backend)


def _unnamed(point: Any, names: tuple[str, ...]) -> np.ndarray:
    """``point`` as an array; one whose values carry names (a NumPy structured array, a pandas
    Series or DataFrame) must name the inputs in their order: it is never reordered silently."""
    fields = getattr(getattr(point, "dtype", None), "names", None)
    module = type(point).__module__
    if fields is None and module.startswith("pandas"):
        fields = getattr(point, "columns", None)
        fields = getattr(point, "index", None) if fields is None else fields
    if fields is None:
        return _array(point, None, names)
    fields = tuple(str(f) for f in fields)
    if fields != names:
        check_variables(names, dict.fromkeys(fields))  # names missing or unknown
        raise PointError(f"the point names its values in another order ({name_list(fields)}) than the "
                         f"function's inputs ({name_list(names)}): reorder it, or pass a dict")
    if module.startswith("pandas"):
        return _array(point.to_numpy(), None, names)
    from numpy.lib import recfunctions

    return _array(recfunctions.structured_to_unstructured(point, dtype=float), None, names)


def _array(value: Any, name: str | None, names: Sequence[str] = (), what: str = "the point") -> np.ndarray:
    """A value (``name``'s) or a point (of ``names`` along its last axis) as float64 numbers,
    else a PointError naming the variable (complex, None, too large...)."""
    kind = type(value)
    if kind is float or kind is int and -_BIG < value < _BIG or kind is np.ndarray and value.dtype.char in "dfl":
        return np.asarray(value, dtype=np.float64)  # the common cases, at once
    return indexed.as_floats(value, name, names, what)


_BIG = 2**53
