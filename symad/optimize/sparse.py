"""Sparse second and first derivatives of a constrained problem, in coordinate form.

IPOPT takes the constraints' Jacobian and the Lagrangian's Hessian ``σ∇²f + Σ λ_i ∇²c_i``
as a pattern fixed once (rows, columns; the Hessian's lower triangle) and values aligned
with it at each point; scipy's ``trust-constr`` takes the same as sparse matrices.  The
patterns come from the functions' own sparse API where they have one
(``hessian_pattern``/``hessian_values``, ``jacobian_pattern``/``jacobian_values``), else from
the symbolic derivatives: an entry is in the pattern unless its expression is the constant 0,
so a pattern never misses a nonzero.

>>> from symad.second_order import SecondOrder
>>> h = SparseHessian(SecondOrder("x^2*y + z"))
>>> h.rows.tolist(), h.cols.tolist()
([0, 1], [0, 0])
>>> h.values([1.0, 2.0, 3.0]).tolist()
[4.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from symad.core.dag import Graph
from symad.expr import Expr

Pattern = tuple[np.ndarray, np.ndarray]


def _nonzero(e: Expr) -> bool:
    """Whether an entry's expression may be nonzero (anything but the constant 0)."""
    g: Graph = e.graph
    return not (g.op[e.id] == "const" and g.data[e.id] == 0.0)


def _coordinates(entries: Sequence[tuple[int, int]]) -> Pattern:
    rows = np.array([r for r, _ in entries], dtype=np.int64)
    cols = np.array([c for _, c in entries], dtype=np.int64)
    return rows, cols


class SparseHessian:
    """The lower triangle (row ≥ column, row-major) of a function's Hessian: ``rows``, ``cols``
    and ``values(x, *args)`` aligned with them (``args``: its parameters' values, as its calls take).

    A function with ``hessian_pattern()`` gives it; a :class:`~symad.second_order.SecondOrder`
    without it, the nonzero entries of its symbolic Hessian; anything else (an objective over
    data), the whole triangle."""

    def __init__(self, fn: Any, size: int):
        self.fn = fn
        if hasattr(fn, "hessian_pattern") and hasattr(fn, "hessian_values"):
            self.rows, self.cols = (np.asarray(a, dtype=np.int64) for a in fn.hessian_pattern())
            self._values: Callable[..., np.ndarray] = lambda x, *args: np.asarray(
                fn.hessian_values(x, *args), dtype=float)
            return
        if hasattr(fn, "hessian_exprs"):
            rows = fn.hessian_exprs()
            entries = [(i, j) for i in range(size) for j in range(i + 1) if _nonzero(rows[i][j])]
        else:
            entries = [(i, j) for i in range(size) for j in range(i + 1)]
        self.rows, self.cols = _coordinates(entries)
        self._values = lambda x, *args: np.asarray(fn.hessian(x, *args), dtype=float)[self.rows, self.cols]

    def __len__(self) -> int:
        return len(self.rows)

    def values(self, x: Any, *args: Any) -> np.ndarray:
        return self._values(np.ascontiguousarray(x, dtype=float), *args)


class SparseJacobian:
    """Every structurally nonzero entry of a vector function's Jacobian: ``rows``, ``cols`` and
    ``values(x, *args)`` aligned with them."""

    def __init__(self, fn: Any):
        self.fn = fn
        if hasattr(fn, "jacobian_pattern") and hasattr(fn, "jacobian_values"):
            self.rows, self.cols = (np.asarray(a, dtype=np.int64) for a in fn.jacobian_pattern())
            self._values: Callable[..., np.ndarray] = lambda x, *args: np.asarray(
                fn.jacobian_values(x, *args), dtype=float)
            return
        table = fn.jacobian_exprs()
        self.rows, self.cols = _coordinates([(i, j) for i, row in enumerate(table)
                                             for j, e in enumerate(row) if _nonzero(e)])
        self._values = lambda x, *args: np.asarray(fn.jacobian(x, *args), dtype=float)[self.rows, self.cols]

    def __len__(self) -> int:
        return len(self.rows)

    def values(self, x: Any, *args: Any) -> np.ndarray:
        return self._values(np.ascontiguousarray(x, dtype=float), *args)


class Union:
    """Several lower-triangle patterns as one (sorted row-major, each entry once), and where each
    part's entries land in it, so a weighted sum of the parts' values is a few scatter-adds."""

    def __init__(self, parts: Sequence[Pattern], n: int):
        keys = [rows * n + cols for rows, cols in parts]
        merged = np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
        self.rows, self.cols = merged // n, merged % n
        self.where = [np.searchsorted(merged, k) for k in keys]

    def __len__(self) -> int:
        return len(self.rows)

    def combine(self, values: Sequence[np.ndarray]) -> np.ndarray:
        """The parts' values (aligned with their patterns) added into the union's."""
        out = np.zeros(len(self.rows))
        for where, v in zip(self.where, values):
            out[where] += v  # a part's entries are distinct: no two land on one place
        return out


def symmetric_csr(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, n: int) -> Any:
    """The full symmetric ``n × n`` matrix of a lower triangle, as ``scipy.sparse.csr_matrix``."""
    from scipy.sparse import coo_matrix

    off = rows != cols
    r = np.concatenate([rows, cols[off]])
    c = np.concatenate([cols, rows[off]])
    return coo_matrix((np.concatenate([values, values[off]]), (r, c)), shape=(n, n)).tocsr()


def csr(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> Any:
    """Coordinates and values as ``scipy.sparse.csr_matrix``."""
    from scipy.sparse import coo_matrix

    return coo_matrix((values, (rows, cols)), shape=shape).tocsr()
