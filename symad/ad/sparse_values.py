"""Values at a sparse pattern's entries (:mod:`symad.ad.sparsity`), and SciPy's matrices of them.

Three ways, each computing the entries alone, never the dense matrix:

* :func:`partial_entries`: each entry's symbolic partial, for written-out functions (compiled once
  into one program);
* :class:`EntryPlaces`: entries computed as indexed expressions (the Hessian's bands,
  :func:`band_places`; a family of outputs' partials along its entries), a loop each, placed in
  the pattern's order;
* :class:`Compression`: products of the matrix with one vector per colour of its columns (forward
  over reverse for a Hessian, forward mode for a Jacobian), each entry read off alone.

:class:`~symad.ad.sparsity.CsrShape` turns a pattern's values into a ``scipy.sparse.csr_matrix``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from symad.ad.reverse import gradient
from symad.ad.sparsity import Layout, symmetric
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import SymadError


def _distinct(values: np.ndarray) -> int:
    """How many distinct values (sorting: faster than np.unique's hashing)."""
    if values.size < 2:
        return int(values.size)
    ordered = np.sort(values)
    return 1 + int(np.count_nonzero(ordered[1:] != ordered[:-1]))


# ------------------------------------------------------------------ values at the pattern's entries
def partial_entries(graph: Graph, roots: Sequence[int], wrt: Sequence[int], rows: np.ndarray,
                    cols: np.ndarray) -> list[int]:
    """The nodes of ``∂roots[r]/∂wrt[c]`` for each entry ``(r, c)`` (rows sorted): one reverse sweep
    per row that has entries, over that row's part only.  A Jacobian's entries, or a Hessian's with
    ``roots`` the gradient's nodes in ``wrt`` order."""
    out: list[int] = []
    starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1]))) if rows.size else rows
    bounds = [*starts.tolist(), rows.size]
    for s, e in zip(bounds[:-1], bounds[1:]):
        want = [wrt[c] for c in cols[s:e].tolist()]
        row = gradient(graph, roots[int(rows[s])], want)
        out.extend(row[w] for w in want)
    return out



# ------------------------------------------------------------------ values from Hessian-vector products
# A row or column with more entries than this, and than DENSE_FACTOR times the median, is dense:
# it gets products of its own (a scalar met by every entry of a vector would otherwise make every
# column of the vector a colour of its own).
DENSE_MIN = 64
DENSE_FACTOR = 10


class Compression:
    """How to read a sparse matrix's entries off a few products with vectors (direct recovery).

    Columns get colours such that no row, the dense rows aside, has entries in two columns of one
    colour: the product with ``Σ e_j`` over the columns ``j`` of colour ``c`` holds each of their
    entries alone.  When every row's columns lie within ``w + 1`` consecutive ones (a band: ``w = 2b``
    for a symmetric band of half-width ``b``) the colours are ``j mod (w + 1)``, without a search;
    otherwise greedy, column by column.  A dense column gets a colour of its own; a dense row is read
    from a product with its transpose (``row_product``), or for a symmetric matrix from its own column.

    ``(rows, cols)``: the entries, of ``size`` columns and ``n_rows`` rows; ``lower``: they are a
    symmetric matrix's lower triangle.
    """

    def __init__(self, rows: np.ndarray, cols: np.ndarray, size: int, n_rows: int, lower: bool):
        self.rows, self.cols, self.n_rows = rows, cols, n_rows
        full_rows, full_cols = symmetric(rows, cols) if lower else (rows, cols)
        dense_rows, dense_cols = _dense(full_rows), _dense(full_cols, size)
        keep = ~(np.isin(full_rows, dense_rows) | np.isin(full_cols, dense_cols))
        colours = _colours(full_rows[keep], full_cols[keep], size)
        first = int(colours.max()) + 1 if colours.size else 0
        colours[dense_cols] = first + np.arange(dense_cols.size)
        self.colours = colours
        self.dense_rows = dense_rows if not lower else np.empty(0, dtype=np.int64)
        self.own = dense_cols if lower else None  # a symmetric dense row: its column's colour
        self.count = int(colours.max()) + 1 if colours.size else 0

    def values(self, product: Callable[[np.ndarray], np.ndarray],
               row_product: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
        """The entries, from ``product(d)`` (the matrix times ``d``) once per colour, and
        ``row_product(u)`` (``uᵀ`` times the matrix) once per dense row."""
        rows, cols, colours = self.rows, self.cols, self.colours
        values = np.empty(rows.size)
        by_row = np.zeros(rows.size, dtype=bool)
        if self.own is not None and self.own.size:  # symmetric: row r of a dense r is its column
            by_row = np.isin(rows, self.own)
        elif self.dense_rows.size:
            by_row = np.isin(rows, self.dense_rows)
        colour_of = np.where(by_row, colours[rows] if self.own is not None else -1, colours[cols])
        for c in range(self.count):
            chosen = colour_of == c
            if chosen.any():
                out = product((colours == c).astype(float))
                values[chosen] = out[np.where(by_row[chosen], cols[chosen], rows[chosen])] \
                    if self.own is not None else out[rows[chosen]]
        for r in self.dense_rows.tolist():
            if row_product is None:
                raise SymadError("a dense row needs the product with the transpose")
            chosen = rows == r
            u = np.zeros(self.n_rows)
            u[r] = 1.0
            values[chosen] = row_product(u)[cols[chosen]]
        return values


def _dense(index: np.ndarray, size: int | None = None) -> np.ndarray:
    """The values of ``index`` (rows or columns of entries) that are dense (see :data:`DENSE_MIN`)."""
    if index.size == 0:
        return np.empty(0, dtype=np.int64)
    counts = np.bincount(index, minlength=size or 0)
    used = counts[counts > 0]
    limit = max(DENSE_MIN, DENSE_FACTOR * float(np.median(used)))
    return np.flatnonzero(counts > limit).astype(np.int64)


def _colours(rows: np.ndarray, cols: np.ndarray, size: int) -> np.ndarray:
    """A colour per column such that no row has entries in two columns of one colour."""
    if size == 0:
        return np.empty(0, dtype=np.int64)
    if rows.size == 0:
        return np.zeros(size, dtype=np.int64)
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    width = int(np.max(np.maximum.reduceat(cols, starts) - np.minimum.reduceat(cols, starts)))
    if width + 1 <= 64:
        return np.arange(size, dtype=np.int64) % (width + 1)
    n_rows = int(rows.max()) + 1
    row_start = np.searchsorted(rows, np.arange(n_rows + 1))
    by_col = np.lexsort((rows, cols))
    col_rows, col_start = rows[by_col], np.searchsorted(cols[by_col], np.arange(size + 1))
    rs, cs, rstart, cstart = cols.tolist(), col_rows.tolist(), row_start.tolist(), col_start.tolist()
    colours = [-1] * size
    forbidden: list[int] = []  # per colour, the last column it was forbidden for
    for j in range(size):
        for r in cs[cstart[j]:cstart[j + 1]]:
            for k in rs[rstart[r]:rstart[r + 1]]:
                c = colours[k]
                if c >= 0:
                    forbidden[c] = j
        c = next((c for c, last in enumerate(forbidden) if last != j), len(forbidden))
        if c == len(forbidden):
            forbidden.append(-1)
        colours[j] = c
    return np.array(colours, dtype=np.int64)


# ------------------------------------------------------------------ values from bands
class EntryPlaces:
    """Where entries computed as expressions sit in a pattern: each node added (:meth:`add`: an ``each``
    over ``count`` indices, or a scalar) gives the entries ``(rows, cols)`` (of its values, those
    ``keep`` selects); :meth:`values` puts their numbers in the pattern's order.  An entry outside the
    pattern is 0 (a band's range runs to a vector's edges, where a guard makes it 0: the pattern,
    which never misses a nonzero, does not hold it) and is dropped; ``covers``: every entry of the
    pattern is computed (else its values come from products along colours)."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, size: int):
        self.pattern = rows * max(size, 1) + cols
        self.size = max(size, 1)
        self.nodes: list[int] = []
        self.pieces: list[tuple[int, np.ndarray | None]] = []
        self._keys: list[np.ndarray] = []

    def add(self, node: int, rows: np.ndarray, cols: np.ndarray, count: int, keep: np.ndarray | None = None) -> None:
        self.nodes.append(node)
        self.pieces.append((count, None if keep is None or keep.all() else keep))
        self._keys.append(rows * self.size + cols)

    def finish(self) -> EntryPlaces:
        keys = np.concatenate(self._keys) if self._keys else np.empty(0, dtype=np.int64)
        pattern = self.pattern
        where = np.searchsorted(pattern, keys)
        inside = where < pattern.size
        inside[inside] = pattern[where[inside]] == keys[inside]
        self.inside = None if inside.all() else inside
        self.places = where[inside]
        distinct = _distinct(self.places)
        self.covers = distinct == pattern.size
        self.repeated = distinct != self.places.size
        self.count = pattern.size
        return self

    def values(self, parts: Sequence) -> np.ndarray:
        """The pattern's entries from the nodes' values (in :attr:`nodes` order)."""
        pieces = []
        for part, (count, keep) in zip(parts, self.pieces):
            part = np.broadcast_to(np.asarray(part, dtype=float).reshape(-1), (count,))
            pieces.append(part if keep is None else part[keep])
        flat = np.concatenate(pieces) if pieces else np.empty(0)
        if self.inside is not None:
            flat = flat[self.inside]
        out = np.zeros(self.count)
        if self.repeated:  # x[k] and x[c - k] at one entry: their partials add up
            np.add.at(out, self.places, flat)
        else:
            out[self.places] = flat
        return out


def band_places(graph: Graph, bands: Sequence, layout: Layout, rows: np.ndarray, cols: np.ndarray) -> EntryPlaces:
    """Where the entries of the Hessian's bands (:func:`symad.ad.gather.hessian_band_nodes`) sit in
    its lower triangle's pattern ``(rows, cols)``: an ``each`` node per band, a scalar's entry as it is."""
    scalar_names = {graph.data[node]: p for node, p in layout.scalars.items()}

    def places(name: str, index: np.ndarray | None) -> np.ndarray:
        if name in scalar_names:
            return np.full(1 if index is None else index.size, scalar_names[name], dtype=np.int64)
        start, first, _ = layout.vectors[name]
        return start + index - first  # type: ignore[operator]

    out = EntryPlaces(rows, cols, layout.size)
    for band in bands:
        if band.row in scalar_names and band.column in scalar_names:
            r, c = places(band.row, None), places(band.column, None)
            if r[0] >= c[0]:  # (else the same entry from the other's row)
                out.add(band.node, r, c, 1)
            continue
        if band.low > band.high:
            continue
        k = np.arange(band.low, band.high + 1, dtype=np.int64)
        r, c = places(band.row, k), places(band.column, band.a * k + band.shift)
        node = binders.reduce(graph, "each", 0, band.low, band.high, band.node)
        if band.row in scalar_names:  # a scalar's row holds its column's entries too
            out.add(node, np.maximum(r, c), np.minimum(r, c), k.size)
        else:
            keep = r >= c
            out.add(node, r[keep], c[keep], k.size, keep)
    return out.finish()
