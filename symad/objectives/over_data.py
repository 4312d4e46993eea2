"""Objectives over data: the loss of one row, summed (or averaged) over every row in one fused loop.

>>> import numpy as np, symad
>>> x = np.array([0.0, 1.0, 2.0]); y = np.array([1.0, 3.0, 5.0])
>>> fit = symad.objective("(a*x + b - y)^2", data={"x": x, "y": y})
>>> fit.wrt
('a', 'b')
>>> fit.value_and_grad([2.0, 1.0])
(0.0, array([0., 0.]))
>>> ridge = symad.objective("(a*x + b - y)^2", data={"x": x, "y": y}, wrt=["a", "b"]) + "lam*a^2"
>>> ridge.params, ridge.value([2.0, 1.0], {"lam": 0.5})
(('lam',), 2.0)
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symad.ad import sparse_values, sparsity
from symad.ad.matrices import direction_names, hessian_nodes, jvp_many
from symad.ad.reverse import gradient
from symad.core.dag import Graph
from symad.core.errors import PointError, SymadError, VariableError, name_list
from symad.core.indexed import expand_point
from symad.core.name_rule import checked
from symad.core.names import expand_names
from symad.expr import Expr, parse
from symad.objectives.columns import data_columns, derived_columns, float_column
from symad.objectives.dask_sums import DaskSums, RowsRecipe, dask_columns, is_dask_array
from symad.objectives.row_sums import RowSums, evaluator, row_parts
from symad.schedule.schedule import Schedule
from symad.second_order import SecondOrder

REDUCTIONS = ("sum", "mean")


def objective(expr: Expr | str, data: Any, wrt: Sequence[str] | None = None, *, reduce: str = "sum",
              columns: Sequence[str] | None = None, backend: str = "auto", threads: int | None = None) -> Objective:
    """The loss of one row (``expr``), summed (``reduce="sum"``) or averaged (``"mean"``) over the
    rows of ``data``, as a function of the variables ``wrt``.

    ``data`` gives each data variable one value per row: a dict of 1-D arrays (a 2-D array
    under ``x`` feeds ``x[1]``, ..., ``x[m]`` from its columns), a NumPy structured array, a
    pandas DataFrame, or a 2-D array with ``columns=[names]``; every column must be a
    variable of the expression.  ``wrt`` defaults to the expression's variables that are
    not data, in their natural order; as for ``compile(wrt=)``, ``x`` in it stands for every
    ``x[k]``, and the variables neither data nor in ``wrt`` are parameters (``params``),
    whose values each call takes after the point.
    The per-row value and gradient compile once (the build does not grow with the rows);
    every call runs one loop over the rows, the cores sharing them, reading the data in
    place.  Results are the same bits on every run and any number of cores.
    """
    return Objective(expr, data, wrt, reduce=reduce, columns=columns, backend=backend, threads=threads)


class Objective:
    """A sum over rows of data: ``value``, ``grad``, ``value_and_grad``, ``hessian`` and ``hessp``
    at a point ``w`` (a sequence in ``wrt`` order, a dict or keywords by name, ``w`` standing for
    every ``w[k]``), the parameters' values after it (a sequence in ``params`` order, or a dict),
    over every row or a mini-batch (``rows=``: an index array, a slice or a mask).  ``objective +
    penalty`` (an expression or its text in ``wrt`` and ``params``, not data) adds the penalty
    once to the sum (or mean).  See :func:`objective`."""

    def __init__(self, expr: Expr | str, data: Any, wrt: Sequence[str] | None = None, *, reduce: str = "sum",
                 columns: Sequence[str] | None = None, backend: str = "auto", threads: int | None = None):
        if reduce not in REDUCTIONS:
            raise SymadError(f"reduce must be one of {', '.join(REDUCTIONS)}, not {reduce!r}")
        self.expr = parse(expr, Graph()) if isinstance(expr, str) else expr
        if not isinstance(self.expr, Expr):
            raise SymadError(f"an objective is the text or expression of one row's loss, not {type(expr).__name__}")
        self.reduce, self.backend, self.threads = reduce, backend, threads
        used = self.expr.variables
        table = data_columns(data, columns, used)
        # Dask arrays: summed chunk by chunk on Dask's workers (symad.objectives.dask_sums)
        self.dask = any(is_dask_array(c) for c in table.values())
        if self.dask:
            table = dask_columns(table)
        if isinstance(wrt, str):
            raise SymadError(f"wrt is a list of names, not the string {wrt!r}")
        if wrt is None:
            self.wrt: tuple[str, ...] = tuple(v for v in used if v not in table)
        else:  # `w` stands for every w[k] the expression uses, as in compile(wrt=)
            self.wrt = tuple(expand_names([checked(v, "wrt") for v in wrt], used))
        if len(set(self.wrt)) != len(self.wrt):
            raise SymadError("wrt lists a name twice")
        both = [v for v in self.wrt if v in table]
        if both:
            raise VariableError(f"{name_list(both)} is data, so it cannot be differentiated (drop it from wrt or "
                                f"from data)")
        self.data_names: tuple[str, ...] = tuple(v for v in used if v in table)
        # Parameters: neither data nor differentiated, their values given at each call.
        self.params: tuple[str, ...] = tuple(v for v in used if v not in table and v not in self.wrt)
        self._row_inputs = len(self.wrt) + len(self.params)  # (a penalty may add parameters after these)
        self.columns = [table[v] if self.dask else float_column(table[v], v) for v in self.data_names]
        lengths = {c.shape[0] for c in self.columns}
        if len(lengths) > 1:
            sizes = ", ".join(f"{v}: {len(c)}" for v, c in zip(self.data_names, self.columns))
            raise SymadError(f"the data columns differ in length ({sizes})")
        if not lengths:
            raise SymadError("the data has no columns: an objective sums a loss over rows of data")
        self.n_rows = lengths.pop()
        if self.n_rows == 0:
            raise SymadError("the data has no rows")
        g = self.expr.graph
        self._w = [g.var(v) for v in self.wrt]
        self._p = [g.var(v) for v in self.params]
        self._d = [g.var(v) for v in self.data_names]
        self._grad: list[int] | None = None
        self._sums: dict[str, RowSums | DaskSums] = {}
        self._derived: dict[int, np.ndarray] = {}  # the data-only subexpressions' columns, by node
        self._operations: int | None = None
        self._hess_index: np.ndarray | None = None
        self.penalty: Expr | None = None
        self._penalty: SecondOrder | None = None
        self._penalty_params = np.zeros(0, dtype=np.intp)
        # the Hessian's pattern: (rows, cols, the row's entries' places in it, the penalty's)
        self._sparse: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None = None
        self._sparse_csr: sparsity.CsrShape | None = None

    def __repr__(self) -> str:
        params = f", params={list(self.params)}" if self.params else ""
        penalty = f", penalty={self.penalty.to_text()!r}" if self.penalty is not None else ""
        return (f"Objective({self.expr.to_text()!r}, {self.n_rows} rows of {name_list(self.data_names)}"
                f", wrt={list(self.wrt)}{params}, reduce={self.reduce!r}{penalty})")

    def __copy__(self) -> Objective:
        # The same compiled loops and derived columns (copy's default would go through __reduce__,
        # building everything again).
        out = object.__new__(Objective)
        out.__dict__.update(self.__dict__)
        out._sums = dict(self._sums)  # a loop one builds later is its own (with its Hessian's index)
        return out

    def __reduce__(self) -> tuple:
        # Its expression (a DAG) and its data: compiled again where it is loaded.
        data = dict(zip(self.data_names, self.columns))
        return (_rebuilt, (self.expr, data, self.wrt, self.reduce, self.backend, self.threads, self.penalty))

    # ------------------------------------------------------------------ penalties
    def __add__(self, other: Any) -> Objective:
        term = _term(other)
        if term is NotImplemented:
            return NotImplemented
        return self.with_penalty(term if self.penalty is None else self.penalty + term)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Objective:
        term = _term(other)
        return NotImplemented if term is NotImplemented else self + (-term)

    def with_penalty(self, penalty: Expr | None) -> Objective:
        """This objective with ``penalty`` (None: none) added once to its sum (or mean), a function
        of ``wrt`` and ``params`` (not of the data); the rows' compiled loops are shared."""
        out = copy.copy(self)  # (the same row sums: the penalty is compiled apart)
        out.params = self.params[:self._row_inputs - len(self.wrt)]  # the row's own
        out.penalty, out._penalty, out._penalty_params = penalty, None, np.zeros(0, dtype=np.intp)
        out._sparse = out._sparse_csr = None
        if penalty is None:
            return out
        used = penalty.variables
        data = [v for v in used if v in self.data_names]
        if data:
            raise VariableError(f"a penalty is added once, not per row: it cannot use the data column "
                                f"{name_list(data)} (put a per-row term in the row's loss)", tuple(data))
        # its variables not in wrt are parameters, as the row's are
        out.params += tuple(v for v in used if v not in self.wrt and v not in out.params)
        out._penalty = SecondOrder(penalty, wrt=list(self.wrt), backend=self.backend)
        out._penalty_params = np.array([out.params.index(k) for k in out._penalty.params], dtype=np.intp)
        return out

    def with_wrt(self, wrt: Sequence[str]) -> Objective:
        """The same objective over the same data differentiated in ``wrt`` (a subset of this one's
        variables): the others are parameters (how ``minimize`` holds ``fixed`` ones)."""
        data = dict(zip(self.data_names, self.columns))
        out = Objective(self.expr, data, wrt, reduce=self.reduce, backend=self.backend, threads=self.threads)
        out._derived = self._derived  # the same data: the same derived columns
        return out if self.penalty is None else out.with_penalty(self.penalty)

    def _penalty_args(self, wp: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The penalty's point and parameters' values (None: it has none) from the input vector ``wp``."""
        n = len(self.wrt)
        return np.ascontiguousarray(wp[:n]), (wp[n:][self._penalty_params] if len(self._penalty_params) else None)

    # ------------------------------------------------------------------ the programs
    def _gradient(self) -> list[int]:
        if self._grad is None:
            partials = gradient(self.expr.graph, self.expr.id, self._w)
            self._grad = [partials[v] for v in self._w]
        return self._grad

    def _row_sums(self, what: str) -> RowSums | DaskSums:
        sums = self._sums.get(what)
        if sums is None:
            g, n = self.expr.graph, len(self._w)
            inputs = self._w + self._p + self._d
            if what == "value":
                outputs = [self.expr.id]
            elif what == "value_grad":
                outputs = [self.expr.id, *self._gradient()]
            elif what == "hessian_entries":  # the row's Hessian at its own pattern's entries only
                rows, cols = sparsity.hessian_pattern(g, self.expr.id, sparsity.Layout.of_scalars(self._w))
                outputs = sparse_values.partial_entries(g, self._gradient(), self._w, rows, cols) or [g.const(0.0)]
            elif what == "hessian":
                rows = hessian_nodes(g, self.expr.id, self._w, self._gradient())
                distinct: dict[int, int] = {}
                index = [distinct.setdefault(h, len(distinct)) for row in rows for h in row]
                self._hess_index = np.asarray(index, dtype=np.intp).reshape(n, n)
                outputs = list(distinct)
            else:  # "hessp": inputs w, then the direction p, then the parameters, then the data
                directions = [g.var(d) for d in direction_names(self.wrt)]
                outputs = jvp_many(g, self._gradient(), dict(zip(self._w, directions)))
                inputs = self._w + directions + self._p + self._d
            n_w = len(inputs) - len(self._d)
            if self.dask:
                schedule = Schedule.build(g, outputs, inputs)
                sources = [("w", k) for k in range(n_w)] + [("col", j) for j in range(len(self._d))]
                recipe = RowsRecipe(g, outputs, inputs, sources, self.backend)
                sums = self._sums[what] = DaskSums(recipe, schedule, self.columns)
            else:
                sums = self._sums[what] = self._loop(outputs, inputs[:n_w])
        return sums

    def _loop(self, outputs: list[int], point: list[int]) -> RowSums:
        """The loop summing ``outputs`` over the rows, given the values of ``point`` (the point,
        directions and parameters): a row's subexpressions of the point alone computed before it
        at each call, and those of the data alone read from derived columns computed once
        (:func:`~symad.objectives.row_sums.row_parts`)."""
        g = self.expr.graph
        per_call, per_data = row_parts(g, Schedule.build(g, outputs, point + self._d), point, self._d)
        missing = [n for n in per_data if n not in self._derived]
        if missing:
            self._derived.update(zip(missing, derived_columns(g, missing, self._d, self.columns, self.backend,
                                                              self.threads)))
        given = point + per_call
        # the data columns the loop still reads (some may be read through derived columns only)
        read = {a for n in g.reachable(outputs, set(given + self._d + per_data)) for a in g.args[n]}
        read.update(outputs)
        data = [j for j, v in enumerate(self._d) if v in read]
        inputs = given + [self._d[j] for j in data] + per_data
        columns = [self.columns[j] for j in data] + [self._derived[n] for n in per_data]
        sources = [("w", k) for k in range(len(given))] + [("col", j) for j in range(len(columns))]
        prelude = evaluator(g, per_call, point, self.backend).point if per_call else None
        return RowSums(Schedule.build(g, outputs, inputs), sources, columns, self.n_rows, self.backend,
                       self.threads, prelude=prelude)

    def operations(self) -> int:
        """Operations of one row's value and gradient (those computed apart from the loop included)."""
        if self._operations is None:
            outputs = [self.expr.id, *self._gradient()]
            self._operations = Schedule.build(self.expr.graph, outputs, self._w + self._p + self._d).size
        return self._operations

    def prepare(self, optimised: bool = True) -> Objective:
        """Compile the value-and-gradient loop now (else on the first call).

        When neither this process nor the disk cache has the loop's optimised code, the first
        passes run on the instruction interpreter while the optimised loop compiles in the
        background; with ``optimised=False`` return as soon as the interpreter's program is
        ready (what a first call waits for), else once the optimised loop is.
        """
        sums = self._row_sums("value_grad")
        sums.optimised_program() if optimised else sums.program()
        return self

    # ------------------------------------------------------------------ calling
    def value(self, w: Any = None, params: Any = None, /, *, rows: Any = None, **names: Any) -> float:
        """The sum (or mean) of the loss over the rows (or the mini-batch ``rows``), plus the penalty."""
        wp = self._point(w, params, names)
        picked, count = self._rows(rows)
        out = float(self._row_sums("value").sums(wp[:self._row_inputs], picked)[0]) / self._divisor(count)
        if self._penalty is not None:
            out += self._penalty.value(*self._penalty_args(wp))
        return out

    __call__ = value

    def grad(self, w: Any = None, params: Any = None, /, *, rows: Any = None, **names: Any) -> np.ndarray:
        """The gradient with respect to ``wrt``."""
        return self.value_and_grad(w, params, rows=rows, **names)[1]

    def value_and_grad(self, w: Any = None, params: Any = None, /, *, rows: Any = None,
                       **names: Any) -> tuple[float, np.ndarray]:
        """The value and the gradient in one pass over the rows (what ``scipy.optimize.minimize(...,
        jac=True)`` takes; ``args=(params,)`` passes the parameters)."""
        wp = self._point(w, params, names)
        picked, count = self._rows(rows)
        out = self._row_sums("value_grad").sums(wp[:self._row_inputs], picked) / self._divisor(count)
        value, grad = float(out[0]), out[1:]
        if self._penalty is not None:
            v, g = self._penalty.value_and_grad(*self._penalty_args(wp))
            value, grad = value + v, grad + g
        return value, grad

    def hessian(self, w: Any = None, params: Any = None, /, *, rows: Any = None, **names: Any) -> np.ndarray:
        """The Hessian with respect to ``wrt`` (the sum of the rows' Hessians), a symmetric matrix."""
        wp = self._point(w, params, names)
        picked, count = self._rows(rows)
        sums = self._row_sums("hessian")
        entries = sums.sums(wp[:self._row_inputs], picked) / self._divisor(count)
        out = entries[self._hess_index]
        if self._penalty is not None:
            out = out + self._penalty.hessian(*self._penalty_args(wp))
        return out

    def hessp(self, w: Any, p: Any, params: Any = None, /, *, rows: Any = None) -> np.ndarray:
        """The Hessian times the vector ``p`` (forward over reverse, row by row; no matrix formed)."""
        wp = self._point(w, params, {})
        picked, count = self._rows(rows)
        n = len(self.wrt)
        direction = self._vector(p, "p")
        inputs = np.concatenate((wp[:n], direction, wp[n:self._row_inputs]))
        out = self._row_sums("hessp").sums(inputs, picked) / self._divisor(count)
        if self._penalty is not None:
            point, params = self._penalty_args(wp)
            out = out + self._penalty.hessp(point, direction, params)
        return out

    # ------------------------------------------------------------------ sparse Hessians
    def hessian_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        """The Hessian's structural nonzeros, lower triangle: ``(rows, cols)`` int64 arrays with
        ``rows >= cols``, row-major sorted, positions in ``wrt`` order: the row loss's pairs of
        variables that meet in a nonlinear operation (data and parameters are constants there),
        with the penalty's.

        >>> import numpy as np, symad
        >>> fit = symad.objective("(a*x + b - y)^2 + c", data={"x": np.arange(3.0), "y": np.ones(3)}) + "c^4"
        >>> fit.hessian_pattern()
        (array([0, 1, 1, 2]), array([0, 0, 1, 2]))
        >>> fit.sparse_hessian([1.0, 2.0, 1.0]).toarray()
        array([[10.,  6.,  0.],
               [ 6.,  6.,  0.],
               [ 0.,  0., 12.]])
        """
        if self._sparse is None:
            g = self.expr.graph
            own = sparsity.hessian_pattern(g, self.expr.id, sparsity.Layout.of_scalars(self._w))
            parts = [own] if self._penalty is None else [own, self._penalty.hessian_pattern()]
            rows, cols = sparsity.merged(parts, len(self.wrt))
            places = [sparsity.places(rows, cols, *part, len(self.wrt)) for part in parts]
            self._sparse = (rows, cols, places[0], places[1] if len(places) > 1 else None)
        return self._sparse[0], self._sparse[1]

    def hessian_values(self, w: Any = None, params: Any = None, /, *, rows: Any = None,
                       **names: Any) -> np.ndarray:
        """The Hessian's entries at :meth:`hessian_pattern`'s positions: the row's second derivatives
        at those entries only (compiled once into the loop over rows), summed (or averaged) over
        the rows (or the mini-batch ``rows``), plus the penalty's."""
        pattern_rows, _ = self.hessian_pattern()
        _, _, own, penalty = self._sparse  # type: ignore[misc]
        wp = self._point(w, params, names)
        picked, count = self._rows(rows)
        out = np.zeros(pattern_rows.size)
        sums = self._row_sums("hessian_entries").sums(wp[:self._row_inputs], picked) / self._divisor(count)
        out[own] = sums[:own.size]
        if self._penalty is not None and penalty is not None:
            out[penalty] += self._penalty.hessian_values(*self._penalty_args(wp))
        return out

    def sparse_hessian(self, w: Any = None, params: Any = None, /, *, rows: Any = None, **names: Any) -> Any:
        """The Hessian as a ``scipy.sparse.csr_matrix``, full and symmetric (SciPy:
        ``pip install "symad[scipy]"``)."""
        values = self.hessian_values(w, params, rows=rows, **names)
        shape = self._sparse_csr
        if shape is None:
            n = len(self.wrt)
            shape = self._sparse_csr = sparsity.CsrShape(*self.hessian_pattern(), (n, n), mirrored=True)
        return shape.matrix(values)

    # ------------------------------------------------------------------ arguments
    def _divisor(self, count: int) -> float:
        return float(count) if self.reduce == "mean" else 1.0

    def _point(self, w: Any, params: Any, names: Mapping[str, Any]) -> np.ndarray:
        """The loop's input vector: the point's values in ``wrt`` order, then the parameters'."""
        every = self.wrt + self.params
        if w is None or isinstance(w, Mapping):
            given = expand_point(every, dict(w or {}, **names))
            if params is not None:
                given.update(self._params_dict(params))
            missing = [v for v in every if v not in given]
            unknown = [k for k in given if k not in every]
            if missing or unknown:
                raise VariableError(f"w needs a value for each of {name_list(every)}"
                                    + (f"; missing {name_list(missing)}" if missing else "")
                                    + (f"; unknown {', '.join(map(str, unknown))}" if unknown else ""))
            return self._vector([given[v] for v in every], "w", every)
        if names:
            raise PointError("give w either as a sequence or as keywords, not both")
        x = self._vector(w, "w")
        if not self.params:
            if params is not None:
                raise PointError("this objective has no parameters (give wrt=[...] to make the other variables "
                                 "parameters)")
            return x
        if params is None:
            raise VariableError(f"missing value for parameter {name_list(self.params)}: pass them after the "
                                f"point, e.g. value(w, {{{self.params[0]!r}: ...}})")
        given = self._params_dict(params)
        missing = [k for k in self.params if k not in given]
        if missing:
            raise VariableError(f"missing value for parameter {name_list(missing)} (the parameters are "
                                f"{name_list(self.params)})")
        return np.concatenate((x, self._vector([given[k] for k in self.params], "params", self.params)))

    def _params_dict(self, params: Any) -> dict[str, Any]:
        """The parameters' values by name, from a dict or a sequence in ``params`` order."""
        if isinstance(params, Mapping):
            given = expand_point(self.params, params)
            unknown = [k for k in given if k not in self.params]
            if unknown:
                raise VariableError(f"unknown parameter {', '.join(map(str, unknown))} (the parameters are "
                                    f"{name_list(self.params) or 'none'})")
            return given
        return dict(zip(self.params, self._vector(params, "params", self.params)))

    def _vector(self, values: Any, what: str, names: Sequence[str] | None = None) -> np.ndarray:
        names = self.wrt if names is None else names
        try:
            x = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise PointError(f"{what} is not a vector of numbers: {values!r:.60}") from None
        if x.ndim == 0 and len(names) == 1:
            x = x.reshape(1)
        if x.shape != (len(names),):
            raise PointError(f"{what} needs {len(names)} value(s) ({name_list(names)}), got shape {x.shape}")
        return np.ascontiguousarray(x)

    def _rows(self, rows: Any) -> tuple[np.ndarray | None, int]:
        """A mini-batch as int64 row indexes (None: every row), and its size."""
        if rows is None:
            return None, self.n_rows
        if isinstance(rows, slice):
            rows = np.arange(*rows.indices(self.n_rows))
        picked = np.asarray(rows)
        if picked.dtype == bool:
            if picked.shape != (self.n_rows,):
                raise PointError(f"a boolean row mask needs {self.n_rows} entries, got shape {picked.shape}")
            picked = np.flatnonzero(picked)
        if picked.ndim != 1 or (picked.size and not np.issubdtype(picked.dtype, np.integer)):
            raise PointError("rows must be a slice, a 1-D array of row indexes or a boolean mask")
        picked = picked.astype(np.int64, copy=False)
        if picked.size and (picked.min() < -self.n_rows or picked.max() >= self.n_rows):
            bad = picked[(picked < -self.n_rows) | (picked >= self.n_rows)][0]
            raise PointError(f"row {bad} is out of range: the data has {self.n_rows} rows")
        if picked.size and picked.min() < 0:
            picked = np.where(picked < 0, picked + self.n_rows, picked)
        if picked.size == 0:
            raise PointError("rows selects no row")
        return np.ascontiguousarray(picked), len(picked)


def _term(value: Any) -> Any:
    """A penalty (an expression, its text, or a number) as an expression; NotImplemented for
    anything else."""
    if isinstance(value, str):
        return parse(value, Graph())
    if isinstance(value, Expr):
        return value
    if isinstance(value, Objective):
        return NotImplemented
    try:
        return parse("0", Graph()) + value
    except TypeError:
        return NotImplemented


def _rebuilt(expr: Expr, data: dict[str, Any], wrt: tuple[str, ...], reduce: str, backend: str,
             threads: int | None, penalty: Expr | None = None) -> Objective:
    """A pickled objective compiled again."""
    out = Objective(expr, data, wrt, reduce=reduce, backend=backend, threads=threads)
    return out if penalty is None else out.with_penalty(penalty)
