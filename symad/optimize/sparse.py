"""Sparse derivatives of a constrained problem, in the coordinate form IPOPT takes.

IPOPT takes the constraints' Jacobian and the Lagrangian's Hessian ``σ∇²f + Σ λ_i ∇²c_i``
as a pattern fixed once (rows, columns; the Hessian's lower triangle) and values aligned
with it at each point; scipy's ``trust-constr`` takes the same as sparse matrices.  The
patterns and values are the functions' own (``hessian_pattern``/``hessian_values``,
``jacobian_pattern``/``jacobian_values``: :mod:`symad.ad.sparsity`); the objective's and the
constraints' Hessians are two parts of the Lagrangian's, added on the union of their patterns.

>>> from symad.second_order import SecondOrder
>>> h = SparseHessian(SecondOrder("x^2*y + z"), 3)
>>> h.rows.tolist(), h.cols.tolist()
([0, 1], [0, 0])
>>> h.values([1.0, 2.0, 3.0]).tolist()
[4.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from symad.ad.sparsity import csr

Pattern = tuple[np.ndarray, np.ndarray]


class SparseHessian:
    """The lower triangle (row ≥ column, row-major) of a function's Hessian: ``rows``, ``cols``
    and ``values(x, *args)`` aligned with them (``args``: its parameters' values, as its calls
    take them).  A function without ``hessian_pattern`` gives its dense ``hessian``'s whole
    triangle."""

    def __init__(self, fn: Any, size: int):
        if hasattr(fn, "hessian_pattern"):
            self.rows, self.cols = (np.asarray(a, dtype=np.int64) for a in fn.hessian_pattern())
            self._values: Callable[..., np.ndarray] = fn.hessian_values
        else:
            self.rows, self.cols = (a.astype(np.int64) for a in np.tril_indices(size))
            order = np.lexsort((self.cols, self.rows))
            self.rows, self.cols = self.rows[order], self.cols[order]
            self._values = lambda x, *args: np.asarray(fn.hessian(x, *args), dtype=float)[self.rows, self.cols]

    def __len__(self) -> int:
        return len(self.rows)

    def values(self, x: Any, *args: Any) -> np.ndarray:
        return np.asarray(self._values(np.ascontiguousarray(x, dtype=float), *args), dtype=float)


class Union:
    """Several lower-triangle patterns as one (sorted row-major, each entry once), and where each
    part's entries land in it, so a weighted sum of the parts' values is a few scatter-adds."""

    def __init__(self, parts: Sequence[Pattern], n: int):
        keys = [np.asarray(rows, dtype=np.int64) * n + cols for rows, cols in parts]
        merged = np.sort(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
        if merged.size > 1:  # (sorting then dropping repeats: np.unique would import numpy.ma, ~15 ms)
            merged = merged[np.concatenate(([True], merged[1:] != merged[:-1]))]
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
    return csr(rows, cols, values, (n, n), mirrored=True)
