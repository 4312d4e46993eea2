"""Sparsity patterns read off the DAG: which variables each output depends on (the Jacobian's
pattern) and which pairs of variables meet in a nonlinear operation (the Hessian's).

One forward pass over the nodes, children before parents, carries each node's *dependency set*
(the variables it depends on through a derivative that is not identically zero; a Python int
used as a bitset over the variables' flat positions).  A node passes its arguments' sets on
along the arguments its op differentiates, and adds the pairs ``D(a_k) × D(a_j)`` for each
argument ``a_j`` its partial along ``a_k`` depends on: ``x + y`` adds none, ``x*y`` adds
``D(x) × D(y)``, ``sin(x)`` adds ``D(x) × D(x)``.  Which is which comes from the op table's
derivative rules (:func:`op_rules`), never from a list here.  Only nodes that reach the output
along such arguments count (``x*y < 1`` as a ``where``'s condition adds nothing).  A pattern
is structural: it may hold entries that happen to be 0 at a point, never miss one that is not.

A loop ``sum(i = lo..hi, body)`` at the top level is read once, its entries ``x[a*i + c]`` as
*slots*: a pair of slots ``(p, q)`` becomes the entries ``(a_p i + c_p, a_q i + c_q)`` for every
``i`` of the range (NumPy arrays: a band for Rosenbrock, never the terms written out).  A loop
nested in a loop's body is read conservatively: it depends on every entry its own entries reach
over the ranges, and those meet each other (a dense block, which a nested sum such as ``x'Ax``
with a dense matrix is).

>>> from symad import parse
>>> e = parse("x*y + sin(z) + w")
>>> g = e.graph
>>> layout = Layout.of_scalars([g.var(v) for v in ("w", "x", "y", "z")])
>>> hessian_pattern(g, e.id, layout)
(array([2, 3]), array([1, 3]))
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from symad.ad.reverse import gradient
from symad.core import binders
from symad.core.dag import BINDERS, Graph
from symad.core.errors import LimitError, SymadError
from symad.core.ops import OPS

# A pattern past this many entries is refused: the Hessian is dense at that size, and
# Hessian-vector products (hessp) are the way to use it.
MAX_ENTRIES = 50_000_000

Dep = tuple[int, int]  # (slots of the loop whose body is read: a bitset, variables: a bitset)
_NONE: Dep = (0, 0)


@dataclass(frozen=True)
class Layout:
    """Where each variable sits in the flat vector of positions: scalar variables by node,
    vectors (one index) by name as ``(position of the first entry, first index, last index)``;
    anything else (parameters, data) is a constant here."""

    scalars: Mapping[int, int]
    vectors: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    size: int = 0

    @classmethod
    def of_scalars(cls, nodes: Sequence[int]) -> Layout:
        """The layout of scalar variables, ``nodes`` in position order."""
        return cls({node: k for k, node in enumerate(nodes)}, {}, len(nodes))


# ------------------------------------------------------------------ the op table's rules
@functools.cache
def _flows(name: str) -> tuple[int, ...]:
    """The arguments along which op ``name``'s derivative is not identically zero."""
    op = OPS[name]
    graph, args, node = _scratch(name)
    if node is None:
        return tuple(range(op.arity))
    out = []
    for k, rule in enumerate(op.partials):
        if isinstance(rule, float):
            if rule != 0.0:
                out.append(k)
            continue
        from symad.ad.local import local_partial

        partial = local_partial(graph, node, k)
        if not graph.is_const(partial, 0.0):
            out.append(k)
    return tuple(out)


@functools.cache
def op_rules(name: str) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """``(k, S_k)`` for each argument ``k`` op ``name`` differentiates along, ``S_k`` the arguments
    its partial along ``k`` depends on (empty: linear in ``k``), from the op's derivative rule.

    >>> op_rules("add"), op_rules("mul"), op_rules("sin")
    (((0, ()), (1, ())), ((0, (1,)), (1, (0,))), ((0, (0,)),))
    """
    op = OPS[name]
    graph, args, node = _scratch(name)
    flows = _flows(name)
    if node is None:  # the op rewrote itself on plain variables: every argument meets every other
        return tuple((k, tuple(range(op.arity))) for k in flows)
    from symad.ad.local import local_partial

    position = {a: k for k, a in enumerate(args)}
    out = []
    for k in flows:
        partial = local_partial(graph, node, k)
        out.append((k, tuple(sorted(_through(graph, partial, position)))))
    return tuple(out)


def _through(graph: Graph, root: int, position: Mapping[int, int]) -> set[int]:
    """The arguments (scratch variables) ``root`` depends on along differentiated edges."""
    dep: dict[int, frozenset[int]] = {}
    for n in graph.reachable([root]):
        op = graph.op[n]
        if n in position:
            dep[n] = frozenset((position[n],))
        elif op in ("const", "var"):
            dep[n] = frozenset()
        else:
            args = graph.args[n]
            dep[n] = frozenset().union(*(dep[args[k]] for k in _flows(op)))
    return set(dep[root])


def _scratch(name: str) -> tuple[Graph, list[int], int | None]:
    """A graph holding ``name`` applied to fresh variables (None: it rewrote itself)."""
    graph = Graph()
    args = [graph.var(f"a{k}") for k in range(OPS[name].arity)]
    node = graph.make(name, *args)
    return graph, args, node if graph.op[node] == name else None


# ------------------------------------------------------------------ bitsets and pairs
def bits(mask: int) -> np.ndarray:
    """The positions of a bitset's ones, ascending (int64)."""
    if not mask:
        return np.empty(0, dtype=np.int64)
    raw = mask.to_bytes((mask.bit_length() + 7) // 8, "little")
    return np.flatnonzero(np.unpackbits(np.frombuffer(raw, np.uint8), bitorder="little")).astype(np.int64)


def mask_of(positions: np.ndarray) -> int:
    """The bitset of ``positions`` (non-negative ints)."""
    if positions.size == 0:
        return 0
    low, high = int(positions.min()), int(positions.max())
    if high - low + 1 == positions.size and (positions.size == 1 or np.all(np.diff(positions) == 1)):
        return ((1 << positions.size) - 1) << low  # a run, the common case
    flags = np.zeros(high - low + 1, dtype=bool)
    flags[positions - low] = True
    return int.from_bytes(np.packbits(flags, bitorder="little").tobytes(), "little") << low


class Pairs:
    """The Hessian's entries found so far: products of two bitsets and arrays of (row, col)."""

    def __init__(self) -> None:
        self.products: set[tuple[int, int]] = set()
        self.chunks: list[tuple[np.ndarray, np.ndarray]] = []
        self.count = 0

    def product(self, a: int, b: int) -> None:
        if not a or not b:
            return
        key = (a, b) if a <= b else (b, a)
        if key not in self.products:
            self.products.add(key)
            self._counted(a.bit_count() * b.bit_count())

    def arrays(self, rows: np.ndarray, cols: np.ndarray) -> None:
        if rows.size:
            self.chunks.append((rows, cols))
            self._counted(rows.size)

    def _counted(self, more: int) -> None:
        self.count += more
        if self.count > MAX_ENTRIES:
            raise LimitError(f"the Hessian's pattern has over {MAX_ENTRIES:,} entries (a dense Hessian at this "
                             "size): use Hessian-vector products (hessp) instead")

    def lower(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        """The lower triangle (row >= col), row-major sorted, without repeats."""
        rows: list[int] = []
        cols: list[int] = []
        chunks = list(self.chunks)
        for a, b in self.products:
            if a.bit_count() * b.bit_count() <= 16:  # small: in Python, without NumPy's overhead
                ra, rb = _small_bits(a), _small_bits(b)
                for r in ra:
                    rows.extend([r] * len(rb))
                    cols.extend(rb)
            else:
                ra, rb = bits(a), bits(b)
                chunks.append((np.repeat(ra, rb.size), np.tile(rb, ra.size)))
        chunks.append((np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)))
        return _sorted_unique([(np.maximum(r, c), np.minimum(r, c)) for r, c in chunks], size)


def _small_bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _distinct(values: np.ndarray) -> int:
    """How many distinct values (sorting: faster than np.unique's hashing)."""
    if values.size < 2:
        return int(values.size)
    ordered = np.sort(values)
    return 1 + int(np.count_nonzero(ordered[1:] != ordered[:-1]))


def _sorted_unique(chunks: Iterable[tuple[np.ndarray, np.ndarray]], size: int) -> tuple[np.ndarray, np.ndarray]:
    keys = [np.asarray(r, dtype=np.int64) * max(size, 1) + np.asarray(c, dtype=np.int64) for r, c in chunks]
    if not keys:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    flat = np.sort(np.concatenate(keys))  # (sorting then dropping repeats: faster than np.unique's hashing)
    if flat.size > 1:
        flat = flat[np.concatenate(([True], flat[1:] != flat[:-1]))]
    return flat // max(size, 1), flat % max(size, 1)


# ------------------------------------------------------------------ the pass over one scope
class _Slots:
    """The entries ``x[a*i + c]`` of one loop's body, numbered as they are met."""

    def __init__(self, layout: Layout, low: int, high: int):
        self.layout, self.low, self.high = layout, low, high
        self.forms: list[tuple[str, int, int]] = []
        self.number: dict[tuple[str, int, int], int] = {}
        self._positions: dict[int, np.ndarray] = {}

    def slot(self, name: str, a: int, c: int) -> int:
        key = (name, a, c)
        k = self.number.get(key)
        if k is None:
            k = self.number[key] = len(self.forms)
            self.forms.append(key)
        return k

    def positions(self, k: int) -> np.ndarray:
        """Slot ``k``'s flat positions for ``i = low..high``, in order of ``i``."""
        known = self._positions.get(k)
        if known is None:
            name, a, c = self.forms[k]
            start, first, _ = self.layout.vectors[name]
            begin = start + a * self.low + c - first
            known = self._positions[k] = np.arange(begin, begin + a * (self.high - self.low + 1), a, dtype=np.int64)
        return known


class _Pass:
    """Dependency sets of the nodes of one graph, and the Hessian's pairs if ``pairs``."""

    def __init__(self, graph: Graph, layout: Layout, pairs: Pairs | None):
        self.graph, self.layout, self.pairs = graph, layout, pairs
        self.levels = binders.levels(graph)
        self.known: dict[int, Dep] = {}  # the top level's nodes
        # a top-level each's body, unexpanded: (its dependency, its slots)
        self.bodies: dict[int, tuple[Dep, _Slots]] = {}

    def top(self, root: int) -> int:
        """The variables ``root`` (of the top level) depends on."""
        self._scope(root, -1, None)
        return self.known[root][1]

    def _scope(self, root: int, level: int, slots: _Slots | None) -> Dep:
        """Read the nodes of one scope (the top level, or a loop body at ``level``), children first."""
        graph, lv, known = self.graph, self.levels, self.known
        op_of, args_of = graph.op, graph.args
        if level < 0:
            order = [n for n in binders.scope_nodes(graph, root, lambda n: n not in known) if n not in known]
            deps = known
        else:
            order = binders.scope_nodes(graph, root, lambda n: lv[n] >= level)
            deps = {}
        live = self._live(root, order, level)
        local_pairs: set[tuple[int, int]] = set()
        mixed: dict[int, int] = {}  # slot -> variables it meets
        dense: list[Dep] = []  # loops nested in this body: what each depends on, all meeting all
        for node in order:
            if node not in live:
                continue
            op = op_of[node]
            if level >= 0 and lv[node] < level:  # the enclosing scope's (a capture), a constant or a vector
                deps[node] = known.get(node, _NONE) if op not in ("var", "item") else self._leaf(node)
                continue
            if op in BINDERS:
                deps[node] = self._loop(node, level, deps, dense)
                continue
            if op == "item":
                deps[node] = self._item(node, level, slots)
                continue
            if op not in OPS or not OPS[op].arity:
                deps[node] = self._leaf(node)
                continue
            args = args_of[node]
            local = glob = 0
            for k, meets in op_rules(op):
                dl, dg = deps[args[k]]
                local |= dl
                glob |= dg
                if self.pairs is not None:
                    for j in meets:
                        self._pair(deps[args[k]], deps[args[j]], local_pairs, mixed)
            deps[node] = (local, glob)
        if slots is not None and self.pairs is not None:
            self._expand(slots, local_pairs, mixed, dense)
        return deps[root]

    def _live(self, root: int, order: list[int], level: int) -> set[int]:
        """The nodes of ``order`` that reach ``root`` along differentiated arguments."""
        graph, lv = self.graph, self.levels
        live = {root}
        for node in reversed(order):
            if node not in live or (level >= 0 and lv[node] < level):
                continue
            op = graph.op[node]
            args = graph.args[node]
            if op in BINDERS:
                live.update(args[1:])
            elif args and op != "item":
                live.update(args[k] for k in _flows(op))
        return live

    def _leaf(self, node: int) -> Dep:
        graph = self.graph
        op = graph.op[node]
        if op == "var":
            position = self.layout.scalars.get(node)
            return (0, 0) if position is None else (0, 1 << position)
        if op == "item":
            return self._item(node, -1, None)
        return _NONE

    def _item(self, node: int, level: int, slots: _Slots | None) -> Dep:
        graph = self.graph
        vector, *at = graph.args[node]
        name = graph.data[vector]
        place = self.layout.vectors.get(name)  # type: ignore[arg-type]
        if place is None or len(at) != 1:
            return _NONE  # data
        coef, shift = binders.affine(graph, at[0])  # type: ignore[misc]
        start, first, last = place
        if not coef:
            if not first <= shift <= last:
                raise SymadError(f"{name}[{shift}] is outside {name}[{first}..{last}]")
            return (0, 1 << (start + shift - first))
        if slots is None or set(coef) != {level}:
            raise SymadError(f"an entry of {name} inside a loop is read without its loop")
        return (1 << slots.slot(name, coef[level], shift), 0)  # type: ignore[arg-type]

    def _loop(self, node: int, level: int, deps: Mapping[int, Dep], dense: list[Dep]) -> Dep:
        """A loop met in a scope: read precisely at the top level, conservatively inside a loop."""
        graph = self.graph
        inner_level, low, high = graph.data[node]  # type: ignore[misc]
        caps = graph.args[node][1:]
        if level < 0:
            slots = _Slots(self.layout, low, high)
            body_local, body_glob = self._scope(graph.args[node][0], inner_level, slots)
            if graph.op[node] == "each":
                self.bodies[node] = ((body_local, body_glob), slots)
            glob = body_glob
            for k in _small_bits(body_local):
                glob |= mask_of(slots.positions(k))
            if graph.op[node] == "prod" and self.pairs is not None:
                self.pairs.product(glob, glob)
            return (0, glob)
        local = glob = 0
        for c in caps:
            dl, dg = deps.get(c, _NONE)
            local |= dl
            glob |= dg
        glob |= self._reach(node)
        dense.append((local, glob))
        return (local, glob)

    def _reach(self, loop: int) -> int:
        """Every entry of a vector of the layout that the entries inside ``loop`` can reach, over
        the ranges of the loops around them (bounds not known here: the vectors' whole spans)."""
        graph = self.graph
        glob = 0
        for n in graph.reachable([graph.args[loop][0]]):
            if graph.op[n] == "item" and len(graph.args[n]) == 2:
                place = self.layout.vectors.get(graph.data[graph.args[n][0]])  # type: ignore[arg-type]
                if place is not None:
                    start, first, last = place
                    glob |= ((1 << (last - first + 1)) - 1) << start
        return glob

    def _pair(self, a: Dep, b: Dep, local_pairs: set[tuple[int, int]], mixed: dict[int, int]) -> None:
        (al, ag), (bl, bg) = a, b
        self.pairs.product(ag, bg)  # type: ignore[union-attr]
        if al or bl:
            for p in _small_bits(al):
                for q in _small_bits(bl):
                    local_pairs.add((p, q) if p <= q else (q, p))
                if bg:
                    mixed[p] = mixed.get(p, 0) | bg
            if ag:
                for q in _small_bits(bl):
                    mixed[q] = mixed.get(q, 0) | ag

    def _expand(self, slots: _Slots, local_pairs: set[tuple[int, int]], mixed: dict[int, int],
                dense: list[Dep]) -> None:
        """A loop body's pairs over its whole range."""
        pairs = self.pairs
        assert pairs is not None
        for p, q in sorted(local_pairs):
            pairs.arrays(slots.positions(p), slots.positions(q))
        for p, glob in sorted(mixed.items()):
            pairs.product(mask_of(slots.positions(p)), glob)
        for local, glob in dense:
            reach = glob
            for k in _small_bits(local):
                reach |= mask_of(slots.positions(k))
            pairs.product(reach, reach)


# ------------------------------------------------------------------ the patterns
def dependencies(graph: Graph, roots: Sequence[int], layout: Layout) -> list[int]:
    """Per root, the bitset of the variables (positions of ``layout``) it depends on."""
    sweep = _Pass(graph, layout, None)
    return [sweep.top(r) for r in roots]


def jacobian_pattern(graph: Graph, roots: Sequence[int], layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """The Jacobian's entries ``(rows, cols)``, row-major sorted: one row per scalar root and one
    per index of a top-level ``each`` root (its range's rows, in order), a column per position."""
    sweep = _Pass(graph, layout, None)
    chunks = []
    row = 0
    for root in roots:
        glob = sweep.top(root)
        body = sweep.bodies.get(root) if graph.op[root] == "each" else None
        if body is None:
            cols = bits(glob)
            chunks.append((np.full(cols.size, row, dtype=np.int64), cols))
            row += 1
            continue
        (local, glob), slots = body
        count = slots.high - slots.low + 1
        rows = np.arange(row, row + count, dtype=np.int64)
        for k in _small_bits(local):
            chunks.append((rows, slots.positions(k)))
        cols = bits(glob)
        if cols.size:
            chunks.append((np.repeat(rows, cols.size), np.tile(cols, count)))
        row += count
    return _sorted_unique(chunks, layout.size)


def hessian_pattern(graph: Graph, root: int, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """The Hessian's lower triangle ``(rows, cols)`` (row >= col), row-major sorted: the pairs of
    positions of ``layout`` that meet in a nonlinear operation on the way to ``root``."""
    pairs = Pairs()
    _Pass(graph, layout, pairs).top(root)
    return pairs.lower(layout.size)


def symmetric(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A lower triangle's entries with their mirror images: the full symmetric pattern."""
    off = rows != cols
    return np.concatenate([rows, cols[off]]), np.concatenate([cols, rows[off]])


# ------------------------------------------------------------------ values at the pattern's entries
def hessian_entries(graph: Graph, grad: Sequence[int], wrt: Sequence[int], rows: np.ndarray,
                    cols: np.ndarray) -> list[int]:
    """The nodes of ``∂grad[r]/∂wrt[c]`` for each entry ``(r, c)`` (``grad``: the gradient's nodes
    in ``wrt`` order): one reverse sweep per row that has entries, over that row's part only."""
    out: list[int] = []
    starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1]))) if rows.size else rows
    bounds = [*starts.tolist(), rows.size]
    for s, e in zip(bounds[:-1], bounds[1:]):
        want = [wrt[c] for c in cols[s:e].tolist()]
        row = gradient(graph, grad[int(rows[s])], want)
        out.extend(row[w] for w in want)
    return out


def jacobian_entries(graph: Graph, roots: Sequence[int], wrt: Sequence[int], rows: np.ndarray,
                     cols: np.ndarray) -> list[int]:
    """The nodes of ``∂roots[r]/∂wrt[c]`` for each entry ``(r, c)`` (rows sorted)."""
    return hessian_entries(graph, roots, wrt, rows, cols)


def scipy_sparse():  # noqa: ANN201
    """``scipy.sparse``, or a clear error naming the extra that installs it."""
    try:
        import scipy.sparse
    except ImportError:
        raise SymadError('sparse matrices need SciPy: pip install "symad[scipy]"') from None
    return scipy.sparse


class CsrShape:
    """A pattern's compressed-row structure, built once: a matrix at a point only orders its values.

    ``(rows, cols)`` row-major sorted, of a matrix of ``shape``; ``mirrored``: they are a symmetric
    matrix's lower triangle, and the matrix is the full one."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int], mirrored: bool = False):
        self.shape = shape
        self.order: np.ndarray | None = None
        if mirrored:
            index = np.arange(rows.size)
            off = rows != cols
            rows, cols, index = np.concatenate([rows, cols[off]]), np.concatenate([cols, rows[off]]), \
                np.concatenate([index, index[off]])
            order = np.lexsort((cols, rows))
            rows, cols, self.order = rows[order], cols[order], index[order]
        kind = np.int32 if max(shape) < 2**31 - 1 else np.int64
        self.indices = cols.astype(kind)
        self.indptr = np.searchsorted(rows, np.arange(shape[0] + 1)).astype(kind)

    def matrix(self, values: np.ndarray) -> object:
        """The ``scipy.sparse.csr_matrix`` of the pattern's values (in the pattern's order)."""
        sparse = scipy_sparse()
        data = values if self.order is None else values[self.order]
        return sparse.csr_matrix((data, self.indices.copy(), self.indptr.copy()), shape=self.shape)


def csr(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, shape: tuple[int, int],
        mirrored: bool = False) -> object:
    """A ``scipy.sparse.csr_matrix`` of the entries (row-major sorted); ``mirrored``: they are a
    lower triangle, and the matrix is the full symmetric one (:class:`CsrShape`, built each time)."""
    return CsrShape(rows, cols, shape, mirrored).matrix(values)


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


def merged(patterns: Sequence[tuple[np.ndarray, np.ndarray]], size: int) -> tuple[np.ndarray, np.ndarray]:
    """The union of patterns, row-major sorted, without repeats."""
    return _sorted_unique(patterns, size)


def places(rows: np.ndarray, cols: np.ndarray, part_rows: np.ndarray, part_cols: np.ndarray,
           size: int) -> np.ndarray:
    """Where each entry of a part sits among the entries ``(rows, cols)`` (both row-major sorted)."""
    size = max(size, 1)
    return np.searchsorted(rows * size + cols, part_rows * size + part_cols)


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
