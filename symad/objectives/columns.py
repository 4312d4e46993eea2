"""An objective's data as the columns its loop reads: one float64 array per variable, each
named by the name rule, a 2-D array spread over an indexed variable's ``x[1..m]``, and no
column the expression does not read; and the derived columns of the row's subexpressions of
the data alone, computed once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symad.core.dag import Graph
from symad.core.errors import SymadError, VariableError, name_list
from symad.core.name_rule import checked
from symad.core.names import groups, split
from symad.objectives.dask_sums import is_dask_array
from symad.objectives.row_sums import evaluator
from symad.runtime import blocks

DERIVED_BLOCKS = 8  # loop blocks a piece, when the cores share a derived column's computation


def data_columns(data: Any, columns: Sequence[str] | None, used: Sequence[str]) -> dict[str, Any]:
    """``data`` as ``{variable: column}`` for an expression using the variables ``used``.

    Every name is a variable's (:func:`~symad.core.name_rule.checked`: a column named ``e``
    or ``pi`` is refused, never read as the constant); a 2-D array under a base name ``x``
    feeds ``x[1]``, ..., ``x[m]`` from its columns 1 to m; a column the expression does not
    read is an error naming it (a misspelt one would otherwise leave its variable fitted).
    """
    by_base = groups(used)
    out: dict[str, Any] = {}
    for key, values in _table(data, columns).items():
        name = checked(key, "a data column")
        if name not in used and name in by_base and np.ndim(values) == 2:
            values = values if is_dask_array(values) else np.asarray(values)
            m = values.shape[1]
            for member in by_base[name]:
                j = int(split(member)[1])
                if not 1 <= j <= m:
                    raise VariableError(f"the expression uses {member}, but data {name} has {m} column(s): it "
                                        f"feeds {name}[1..{m}]", (member,))
                _put(out, member, values[:, j - 1])
            continue
        if name not in used:
            hint = (f"; a 2-D array under {name} feeds {name_list(by_base[name])}" if name in by_base else "")
            raise VariableError(f"data column {name} is not a variable of the expression (it uses "
                                f"{name_list(used) or 'no variables'}){hint}: drop it, or check its spelling",
                                (name,))
        _put(out, name, values)
    return out


def _put(out: dict[str, Any], name: str, values: Any) -> None:
    if name in out:
        raise SymadError(f"the data gives {name} twice")
    out[name] = values


def _table(data: Any, columns: Sequence[str] | None) -> dict[Any, Any]:
    """``data`` as ``{name: values}``, as given."""
    if columns is not None:
        if isinstance(columns, str):
            raise SymadError(f"columns is a list of names, not the string {columns!r}")
        table = data if is_dask_array(data) else np.asarray(data)  # a 2-D Dask array: not computed here
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
        raise SymadError("a 2-D data array needs its columns' names: objective(..., columns=['x1', ...]), or "
                         "data={'x': X} for an expression in x[1], ..., x[m]")
    raise SymadError(f"data must be a dict of columns, a structured array, a DataFrame or a 2-D array with "
                     f"columns=[...], not {type(data).__name__}")


def float_column(values: Any, name: str) -> np.ndarray:
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


def derived_columns(graph: Graph, nodes: Sequence[int], data: Sequence[int], columns: Sequence[np.ndarray],
                    backend: str, threads: int | None = None) -> list[np.ndarray]:
    """The values of ``nodes`` (expressions of the data variables ``data`` alone) at every row of
    ``columns`` (``data``'s, in order), one contiguous column each: computed once, by the ops'
    own code (:func:`~symad.objectives.row_sums.evaluator`), so a loop reading them sums the bits
    it would compute itself; the rows are cut into pieces the cores share (:func:`symad.runtime.blocks.share`:
    a row's value does not depend on its piece)."""
    if not nodes:
        return []
    read = set(graph.reachable(nodes))
    used = [k for k, v in enumerate(data) if v in read]
    program = evaluator(graph, nodes, [data[k] for k in used], backend)
    inputs = np.ascontiguousarray(np.column_stack([columns[k] for k in used]))
    values = np.empty((len(inputs), len(nodes)))
    rows = DERIVED_BLOCKS * blocks.BLOCK

    def piece(k: int) -> None:
        values[k * rows:(k + 1) * rows] = program.batch(inputs[k * rows:(k + 1) * rows])

    blocks.share(-(-len(inputs) // rows), piece, threads)
    return [np.ascontiguousarray(values[:, k]) for k in range(len(nodes))]
