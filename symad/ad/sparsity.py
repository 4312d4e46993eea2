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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from symad.ad.local import local_partial
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


def merged(patterns: Sequence[tuple[np.ndarray, np.ndarray]], size: int) -> tuple[np.ndarray, np.ndarray]:
    """The union of patterns, row-major sorted, without repeats."""
    return _sorted_unique(patterns, size)


def places(rows: np.ndarray, cols: np.ndarray, part_rows: np.ndarray, part_cols: np.ndarray,
           size: int) -> np.ndarray:
    """Where each entry of a part sits among the entries ``(rows, cols)`` (both row-major sorted)."""
    size = max(size, 1)
    return np.searchsorted(rows * size + cols, part_rows * size + part_cols)


# ------------------------------------------------------------------ SciPy's matrices of a pattern
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
