"""Objectives over data: the loss of one row, summed (or averaged) over every row in one fused loop.

>>> import numpy as np, symad
>>> x = np.array([0.0, 1.0, 2.0]); y = np.array([1.0, 3.0, 5.0])
>>> fit = symad.objective("(a*x + b - y)^2", data={"x": x, "y": y})
>>> fit.wrt
('a', 'b')
>>> fit.value_and_grad([2.0, 1.0])
(0.0, array([0., 0.]))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symad.ad.hessian import direction_names, hessian_nodes, jvp_many
from symad.ad.reverse import gradient
from symad.backends.dask_sums import DaskSums, RowsRecipe, dask_columns, is_dask_array
from symad.backends.row_sums import RowSums
from symad.backends.schedule import Schedule
from symad.core.errors import PointError, SymadError, VariableError, name_list
from symad.core.graph import Graph
from symad.expr import Expr, parse

REDUCTIONS = ("sum", "mean")


def objective(expr: Expr | str, data: Any, wrt: Sequence[str] | None = None, *, reduce: str = "sum",
              columns: Sequence[str] | None = None, backend: str = "auto", threads: int | None = None) -> Objective:
    """The loss of one row (``expr``), summed (``reduce="sum"``) or averaged (``"mean"``) over the
    rows of ``data``, as a function of the variables ``wrt``.

    ``data`` gives each data variable one value per row: a dict of 1-D arrays, a NumPy
    structured array, a pandas DataFrame, or a 2-D array with ``columns=[names]``.
    ``wrt`` defaults to the expression's variables that are not data, in their natural order.
    The per-row value and gradient compile once (the build does not grow with the rows);
    every call runs one loop over the rows, the cores sharing them, reading the data in
    place.  Results are the same bits on every run and any number of cores.
    """
    return Objective(expr, data, wrt, reduce=reduce, columns=columns, backend=backend, threads=threads)


class Objective:
    """A sum over rows of data: ``value``, ``grad``, ``value_and_grad``, ``hessian`` and ``hessp``
    at a point ``w`` (a sequence in ``wrt`` order, or a dict), over every row or a mini-batch
    (``rows=``: an index array or a slice).  See :func:`objective`."""

    def __init__(self, expr: Expr | str, data: Any, wrt: Sequence[str] | None = None, *, reduce: str = "sum",
                 columns: Sequence[str] | None = None, backend: str = "auto", threads: int | None = None):
        if reduce not in REDUCTIONS:
            raise SymadError(f"reduce must be one of {', '.join(REDUCTIONS)}, not {reduce!r}")
        self.expr = parse(expr, Graph()) if isinstance(expr, str) else expr
        if not isinstance(self.expr, Expr):
            raise SymadError(f"an objective is the text or expression of one row's loss, not {type(expr).__name__}")
        self.reduce, self.backend, self.threads = reduce, backend, threads
        used = self.expr.variables
        table = _columns(data, columns)
        # Dask arrays: summed chunk by chunk on Dask's workers (symad.backends.dask_sums)
        self.dask = any(is_dask_array(c) for c in table.values())
        if self.dask:
            table = dask_columns(table)
        if isinstance(wrt, str):
            raise SymadError(f"wrt is a list of names, not the string {wrt!r}")
        self.wrt: tuple[str, ...] = tuple(v for v in used if v not in table) if wrt is None else tuple(wrt)
        if len(set(self.wrt)) != len(self.wrt):
            raise SymadError("wrt lists a name twice")
        both = [v for v in self.wrt if v in table]
        if both:
            raise VariableError(f"{name_list(both)} is data, so it cannot be differentiated (drop it from wrt or "
                                f"from data)")
        self.data_names: tuple[str, ...] = tuple(v for v in used if v in table)
        missing = [v for v in used if v not in table and v not in self.wrt]
        if missing:
            raise VariableError(f"{name_list(missing)} is neither data nor in wrt (wrt: "
                                f"{name_list(self.wrt) or 'none'}; data: {name_list(sorted(table)) or 'none'})")
        self.columns = [table[v] if self.dask else _column(table[v], v) for v in self.data_names]
        lengths = {c.shape[0] for c in self.columns}
        if len(lengths) > 1:
            sizes = ", ".join(f"{v}: {len(c)}" for v, c in zip(self.data_names, self.columns))
            raise SymadError(f"the data columns differ in length ({sizes})")
        self.n_rows = lengths.pop() if lengths else _rows_of(table)
        if self.n_rows == 0:
            raise SymadError("the data has no rows")
        g = self.expr.graph
        self._w = [g.var(v) for v in self.wrt]
        self._d = [g.var(v) for v in self.data_names]
        self._grad: list[int] | None = None
        self._sums: dict[str, RowSums] = {}
        self._hess_index: np.ndarray | None = None

    def __repr__(self) -> str:
        return (f"Objective({self.expr.to_text()!r}, {self.n_rows} rows of {name_list(self.data_names) or 'no data'}"
                f", wrt={list(self.wrt)}, reduce={self.reduce!r})")

    def __reduce__(self) -> tuple:
        # Its expression (a DAG) and its data: compiled again where it is loaded.
        data = dict(zip(self.data_names, self.columns))
        return (_rebuilt, (self.expr, data, self.wrt, self.reduce, self.backend, self.threads, self.n_rows))

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
            inputs = self._w + self._d
            if what == "value":
                outputs = [self.expr.id]
            elif what == "value_grad":
                outputs = [self.expr.id, *self._gradient()]
            elif what == "hessian":
                rows = hessian_nodes(g, self.expr.id, self._w, self._gradient())
                distinct: dict[int, int] = {}
                index = [distinct.setdefault(h, len(distinct)) for row in rows for h in row]
                self._hess_index = np.asarray(index, dtype=np.intp).reshape(n, n)
                outputs = list(distinct)
            else:  # "hessp": inputs w, then the direction p, then the data
                directions = [g.var(d) for d in direction_names(self.wrt)]
                outputs = jvp_many(g, self._gradient(), dict(zip(self._w, directions)))
                inputs = self._w + directions + self._d
            schedule = Schedule.build(g, outputs, inputs)
            n_w = len(inputs) - len(self._d)
            sources = [("w", k) for k in range(n_w)] + [("col", j) for j in range(len(self._d))]
            if self.dask:
                recipe = RowsRecipe(g, outputs, inputs, sources, self.backend)
                sums = self._sums[what] = DaskSums(recipe, schedule, self.columns)
            else:
                sums = self._sums[what] = RowSums(schedule, sources, self.columns, self.n_rows, self.backend,
                                                  self.threads)
        return sums

    def operations(self) -> int:
        """Operations of one row's value and gradient."""
        return self._row_sums("value_grad").schedule.size

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
    def value(self, w: Any, rows: Any = None) -> float:
        """The sum (or mean) of the loss over the rows (or the mini-batch ``rows``)."""
        picked, count = self._rows(rows)
        return float(self._row_sums("value").sums(self._point(w), picked)[0]) / self._divisor(count)

    __call__ = value

    def grad(self, w: Any, rows: Any = None) -> np.ndarray:
        """The gradient with respect to ``wrt``."""
        return self.value_and_grad(w, rows)[1]

    def value_and_grad(self, w: Any, rows: Any = None) -> tuple[float, np.ndarray]:
        """The value and the gradient in one pass over the rows (what ``scipy.optimize.minimize(...,
        jac=True)`` takes)."""
        picked, count = self._rows(rows)
        out = self._row_sums("value_grad").sums(self._point(w), picked) / self._divisor(count)
        return float(out[0]), out[1:]

    def hessian(self, w: Any, rows: Any = None) -> np.ndarray:
        """The Hessian with respect to ``wrt`` (the sum of the rows' Hessians), a symmetric matrix."""
        picked, count = self._rows(rows)
        sums = self._row_sums("hessian")
        entries = sums.sums(self._point(w), picked) / self._divisor(count)
        return entries[self._hess_index]

    def hessp(self, w: Any, p: Any, rows: Any = None) -> np.ndarray:
        """The Hessian times the vector ``p`` (forward over reverse, row by row; no matrix formed)."""
        picked, count = self._rows(rows)
        wp = np.concatenate((self._point(w), self._point(p, "p")))
        return self._row_sums("hessp").sums(wp, picked) / self._divisor(count)

    # ------------------------------------------------------------------ arguments
    def _divisor(self, count: int) -> float:
        return float(count) if self.reduce == "mean" else 1.0

    def _point(self, w: Any, what: str = "w") -> np.ndarray:
        n = len(self.wrt)
        if isinstance(w, Mapping):
            missing = [v for v in self.wrt if v not in w]
            unknown = [k for k in w if k not in self.wrt]
            if missing or unknown:
                raise VariableError(f"{what} needs a value for each of {name_list(self.wrt)}"
                                    + (f"; missing {name_list(missing)}" if missing else "")
                                    + (f"; unknown {', '.join(map(str, unknown))}" if unknown else ""))
            w = [w[v] for v in self.wrt]
        try:
            x = np.asarray(w, dtype=np.float64)
        except (TypeError, ValueError):
            raise PointError(f"{what} is not a vector of numbers: {w!r:.60}") from None
        if x.ndim == 0 and n == 1:
            x = x.reshape(1)
        if x.shape != (n,):
            raise PointError(f"{what} needs {n} value(s) ({name_list(self.wrt)}), got shape {x.shape}")
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


def _columns(data: Any, columns: Sequence[str] | None) -> dict[str, Any]:
    """``data`` as ``{name: column}``."""
    if columns is not None and is_dask_array(data):  # a 2-D Dask array: its columns, not computed here
        if data.ndim != 2 or data.shape[1] != len(columns):
            raise SymadError(f"columns=[...] names {len(columns)} column(s), but the data array has shape "
                             f"{data.shape}: give a 2-D array with one column per name")
        return {name: data[:, k] for k, name in enumerate(columns)}
    if columns is not None:
        table = np.asarray(data)
        if table.ndim != 2 or table.shape[1] != len(columns):
            raise SymadError(f"columns=[...] names {len(columns)} column(s), but the data array has shape "
                             f"{table.shape}: give a 2-D array with one column per name")
        return {name: table[:, k] for k, name in enumerate(columns)}
    if isinstance(data, np.ndarray) and data.dtype.names:
        return {name: data[name] for name in data.dtype.names}
    if isinstance(data, Mapping):
        return dict(data)
    if hasattr(data, "columns") and hasattr(data, "__getitem__"):  # a pandas DataFrame
        return {str(name): data[name].to_numpy() for name in data.columns}
    if isinstance(data, np.ndarray):
        raise SymadError("a 2-D data array needs its columns' names: objective(..., columns=['x1', ...])")
    raise SymadError(f"data must be a dict of columns, a structured array, a DataFrame or a 2-D array with "
                     f"columns=[...], not {type(data).__name__}")


def _column(values: Any, name: str) -> np.ndarray:
    """One data column as float64 values at a whole-number stride (read in place when it is one)."""
    try:
        column = np.asarray(values)
        if column.dtype != np.float64:
            column = column.astype(np.float64)
    except (TypeError, ValueError):
        raise SymadError(f"data column {name} is not numbers") from None
    if column.ndim != 1:
        raise SymadError(f"data column {name} must be one value per row (1-D), got shape {column.shape}")
    if column.strides[0] % 8 or column.ctypes.data % 8:
        column = np.ascontiguousarray(column)
    return column


def _rows_of(table: Mapping[str, Any]) -> int:
    """The rows of data none of whose columns the expression reads."""
    lengths = {np.shape(c)[0] if np.ndim(c) else 0 for c in table.values()}
    if len(lengths) != 1:
        raise SymadError("the data's columns differ in length" if lengths else "the data has no columns")
    return lengths.pop()


def _rebuilt(expr: Expr, data: dict[str, np.ndarray], wrt: tuple[str, ...], reduce: str, backend: str,
             threads: int | None, n_rows: int) -> Objective:
    """A pickled objective compiled again."""
    return Objective(expr, data or {"_rows": np.zeros(n_rows)}, wrt, reduce=reduce, backend=backend,
                     threads=threads)
