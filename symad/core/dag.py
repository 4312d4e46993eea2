"""The hash-consed expression DAG: a flat node table where children precede parents.

A node is an integer id into parallel lists (``op``, ``args``, ``data``).  Building
a node that already exists returns the existing id, so structural equality *is*
id equality.  Nodes are keyed by the ids of their children, never by text, and
constants by their exact bits (``float.hex``), so ``0.0`` and ``-0.0`` differ.
Because a child is always built before its parent, ascending id order is a
topological order and every pass below is a plain loop.
"""

from __future__ import annotations

import hashlib
import math
import struct
import threading
import weakref
from collections.abc import Container, Iterable, Mapping, Sequence

from symad.core import forksafe
from symad.core.errors import SymadError
from symad.core.limits import LIMITS
from symad.core.ops import OPS
from symad.core.semantics import numpy, power_product, small_power
from symad.core.simplify import RULES

# Adding a node is check-then-append: a background compile (which builds the gradient)
# and the caller's thread may both add nodes.  Lookups need no lock.  One lock for all
# graphs, held across a fork so that a child never sees a node half added.
_INTERN_LOCK = threading.Lock()
forksafe.hold_across_fork(_INTERN_LOCK)
_lock, _unlock = _INTERN_LOCK.acquire, _INTERN_LOCK.release


_VARIABLES_KEPT = 16  # Graph.variables keeps the sorted lists of this many roots (a command asks again)


class Graph:
    """An interning table of expression nodes.

    A graph lives as long as an expression, function or other graph that uses it
    (expressions hold their graph); nodes are never removed from a live graph.
    """

    __slots__ = ("op", "args", "data", "scoped", "_index", "_numbers", "_imports", "_digests", "_variables",
                 "__weakref__")

    def __init__(self) -> None:
        self.op: list[str] = []
        self.args: list[tuple[int, ...]] = []
        self.data: list[float | str | int | tuple | None] = []  # a constant's value, a variable's name, a range
        self._index: dict[tuple, int] = {}
        self._numbers: dict[float, int] = {}  # constants by value, a shortcut past their bits' text
        # Nodes copied in from other graphs: {source graph: {its node: our node}}
        self._imports: weakref.WeakKeyDictionary[Graph, dict[int, int]] = weakref.WeakKeyDictionary()
        self._digests: dict[int, int] = {}  # structural hashes, computed on demand
        self._variables: dict[int, list[str]] = {}  # the last roots' variables, sorted (nodes never change)
        self.scoped = False  # whether any node of an indexed expression (a loop, a vector) was built

    def __len__(self) -> int:
        return len(self.op)

    def __reduce__(self) -> tuple:
        return (_rebuilt_graph, (export(self, range(len(self))),))

    # ------------------------------------------------------------------ building
    def _intern(self, key: tuple, op: str, args: tuple[int, ...], data: float | str | None) -> int:
        node = self._index.get(key)
        if node is not None:
            return node
        return self._new(key, op, args, data)

    def _new(self, key: tuple, op: str, args: tuple[int, ...], data: float | str | None) -> int:
        """The node of ``key``, added unless another thread has just added it."""
        _lock()  # (rather than `with`: a third of the time, at every node built)
        try:
            node = self._index.get(key)
            if node is None:
                node = len(self.op)
                if node >= LIMITS.max_nodes:
                    raise LIMITS.nodes_exceeded()
                self.op.append(op)
                self.args.append(args)
                self.data.append(data)
                self._index[key] = node
        finally:
            _unlock()
        return node

    def const(self, value: float) -> int:
        """The node of a number (keyed by its exact bits)."""
        value = float(value)
        node = self._numbers.get(value)
        if node is None:
            node = self._intern(("const", value.hex()), "const", (), value)
            if value and value == value:  # equal floats have equal bits, but for 0.0, -0.0 and nans
                self._numbers[value] = node
        return node

    def var(self, name: str) -> int:
        """The node of a variable.  The name is not checked here: the parser makes only names
        the rule admits, the public entry points (``symad.var``, ``compile``'s ``variables``,
        documents...) check theirs (:mod:`symad.core.name_rule`), and the derivative machinery
        names its own variables with a quote (``x'``) that no admitted name has."""
        return self._intern(("var", name), "var", (), name)

    def index(self, level: int) -> int:
        """The leaf of the index bound by a ``sum``/``prod``/``each`` at nesting ``level`` (0: outermost).
        Indices are numbered by depth, not by the names in the text, so equal bodies are one node."""
        self.scoped = True
        return self._intern(("index", level), "index", (), level)

    def vector(self, name: str) -> int:
        """The leaf of an indexed variable or data ``name`` as a whole (its entries are ``item`` nodes)."""
        self.scoped = True
        return self._intern(("vector", name), "vector", (), name)

    def item(self, vector: int, *indices: int) -> int:
        """The entry ``vector[indices]``, each index an expression of index leaves
        (:mod:`symad.core.binders` checks that it is affine)."""
        args = (vector, *indices)
        return self._intern(("item", args), "item", args, None)

    def bind(self, op: str, level: int, low: int, high: int, body: int, captures: Sequence[int]) -> int:
        """The ``sum``/``prod``/``each`` of ``body`` over the index of ``level`` from ``low`` to ``high``;
        ``captures`` are the nodes of the enclosing scope the body uses (its arguments for the sweeps).
        Build it with :func:`symad.core.binders.reduce`, which finds them."""
        args = (body, *captures)
        data = (level, low, high)
        return self._intern((op, args, data), op, args, data)

    def make(self, op: str, *args: int) -> int:
        """The node ``op(*args)``, after constant folding and the rewrites of :mod:`symad.core.simplify`."""
        spec = _MAKE.get(op) or _make_entry(op)
        arity, commutative, number_last, py, np_fn, rule = spec
        if len(args) != arity:
            raise SymadError(f"{op} takes {arity} argument(s), got {len(args)}")
        ops = self.op
        if arity == 2:
            a, b = args
            ca, cb = ops[a] == "const", ops[b] == "const"
            # Canonical order: by id, except that numbers come last in sums and comparisons
            # and first elsewhere, as people write them: `x + 2`, `2*x`, `x != 0`.
            if commutative and (ca == number_last if ca != cb else b < a):
                args = (b, a)
            foldable = ca and cb
        elif arity == 1:
            foldable = ops[args[0]] == "const"
        else:
            foldable = all(ops[a] == "const" for a in args)
        key = (op, args)
        node = self._index.get(key)
        if node is not None:  # built before: rewrites are deterministic, so reuse it
            return node
        if foldable:
            folded = self._fold(py, np_fn, args)
            if folded is not None:
                return self.const(folded)
        if rule is not None:
            node = rule(self, args)
            if node is not None:
                return node
        return self._new(key, op, args, None)

    def _fold(self, py, np_fn, args: tuple[int, ...]) -> float | None:
        values = [self.data[a] for a in args]
        k = small_power(values[1]) if py is _POW else None
        try:
            result = float(py(*values) if k is None else power_product(values[0], k))
        except (ArithmeticError, ValueError):
            np = numpy()
            with np.errstate(all="ignore"):
                floats = [np.float64(v) for v in values]
                result = float(np_fn(*floats) if k is None else power_product(floats[0], k))
        # Keep `1/0`, `log(-1)`, `9^9^9` as nodes: folding them into inf/nan would
        # hide from the user *where* the non-finite value came from.
        if math.isfinite(result) or not all(math.isfinite(v) for v in values):  # type: ignore[arg-type]
            return result
        return None

    # ------------------------------------------------------------------ queries
    def is_const(self, node: int, value: float | None = None) -> bool:
        """Whether ``node`` is a constant (equal to ``value`` when given)."""
        return self.op[node] == "const" and (value is None or self.data[node] == value)

    def reachable(self, roots: Iterable[int], known: Container[int] = ()) -> list[int]:
        """Every node the roots depend on, in ascending (topological) order; the walk stops
        at nodes in ``known`` (left out), so extending known results costs only the new nodes."""
        args = self.args
        seen = bytearray(len(args))  # marks: cheaper than a set, even on a large graph
        found: list[int] = []
        stack = [r for r in roots if r not in known]
        pop, push, add = stack.pop, stack.extend, found.append
        while stack:
            node = pop()
            if seen[node]:
                continue
            seen[node] = 1
            add(node)
            if known:
                push([a for a in args[node] if a not in known])
            else:  # the common case, kept lean: every compile and sweep walks the graph this way
                push(args[node])
        found.sort()
        return found

    def variables(self, roots: Iterable[int]) -> list[str]:
        """Names of the variables the roots depend on, in natural order (x2 before x10)."""
        roots = list(roots)
        kept = self._variables  # (get, clear and set: each one step, safe beside a background compile)
        known = kept.get(roots[0]) if len(roots) == 1 else None
        if known is not None:
            return list(known)
        names = [self.data[n] for n in self.reachable(roots) if self.op[n] == "var"]
        ordered = sorted(names, key=natural_key)  # type: ignore[arg-type]
        if len(roots) == 1:
            if len(kept) >= _VARIABLES_KEPT:  # a few roots' lists, not one for every root asked
                kept.clear()
            kept[roots[0]] = ordered
        return list(ordered)

    def depth(self, root: int) -> int:
        """Length of the longest path from ``root`` down to a leaf (a leaf has depth 0)."""
        depth: dict[int, int] = {}
        for node in self.reachable([root]):
            depth[node] = 1 + max((depth[a] for a in self.args[node]), default=-1)
        return depth[root]

    def tree_size(self, root: int) -> int:
        """How many nodes the expression would have as a tree (shared nodes counted per use).

        Exact (a Python integer, however large), in one pass over the DAG; each node's
        count is dropped once its last user has read it.
        """
        order = self.reachable([root])
        args = self.args
        users: dict[int, int] = {}
        for node in order:
            for a in args[node]:
                users[a] = users.get(a, 0) + 1
        size: dict[int, int] = {}
        for node in order:
            total = 1
            for a in args[node]:
                total += size[a]
                users[a] -= 1
                if not users[a]:
                    del size[a]
            size[node] = total
        return size[root]

    # ------------------------------------------------------------------ across graphs
    def copy_from(self, source: Graph, roots: Iterable[int]) -> list[int]:
        """The nodes of ``source``'s ``roots`` built in this graph (as :meth:`make` builds
        them, so they are shared with equal nodes already here); remembered, so copying
        the same nodes again costs nothing."""
        roots = list(roots)
        if source is self:
            return roots
        done = self._imports.get(source)
        if done is None:
            done = self._imports[source] = {}
        todo: set[int] = set()
        stack = [r for r in roots if r not in done]
        src_args = source.args
        while stack:
            node = stack.pop()
            if node not in todo:
                todo.add(node)
                stack.extend(a for a in src_args[node] if a not in done and a not in todo)
        for node in sorted(todo):  # children first
            done[node] = self.build(source.op[node], source.data[node], [done[a] for a in src_args[node]])
        return [done[r] for r in roots]

    def build(self, op: str, data: float | str | None, args: Sequence[int]) -> int:
        """The node of ``op`` (a constant's value or a variable's name in ``data``) on ``args``,
        as :meth:`const`, :meth:`var` and :meth:`make` build it: how nodes are copied in."""
        if op == "const":
            return self.const(data)  # type: ignore[arg-type]
        if op == "var":
            return self.var(data)  # type: ignore[arg-type]
        if op in SCOPED:
            if op == "index":
                return self.index(data)  # type: ignore[arg-type]
            if op == "vector":
                return self.vector(data)  # type: ignore[arg-type]
            if op == "item":
                return self.item(*args)
            return self.bind(op, *data, args[0], args[1:])  # type: ignore[misc]
        return self.make(op, *args)

    def digests(self, roots: Iterable[int]) -> Mapping[int, int]:
        """The digests of every node the roots depend on (and of others computed before), by node:
        one walk instead of a call per node."""
        digests = self._digests
        for n in self.reachable(roots, digests):  # only the nodes not digested yet: k calls cost their new nodes
            op, data = self.op[n], self.data[n]
            if op == "const":
                digests[n] = hash((_OP_CODE[op], _float_bits(data)))  # type: ignore[arg-type]
            elif op == "var" or op == "vector":
                digests[n] = hash((_OP_CODE[op], stable_hash(data)))  # type: ignore[arg-type]
            elif op in SCOPED:  # an index's level, a binder's range: integers
                parts = [digests[a] for a in self.args[n]]
                extra = data if type(data) is tuple else () if data is None else (data,)  # hash(None) varies by process
                digests[n] = hash((_OP_CODE[op], *parts, *extra))
            else:
                parts = [digests[a] for a in self.args[n]]
                if _MAKE[op][1]:  # commutative: argument order is by node id, which graphs differ in
                    parts.sort()
                digests[n] = hash((_OP_CODE[op], *parts))
        return digests

    def digest(self, node: int) -> int:
        """A hash of the node's structure, equal in every graph and process for equal expressions."""
        known = self._digests.get(node)
        return known if known is not None else self.digests([node])[node]


def stable_hash(text: str) -> int:
    """A 64-bit hash of ``text`` that is the same in every process (``hash`` of a str is
    salted per process; a tuple of ints hashes the same everywhere)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def _float_bits(value: float) -> int:
    return int.from_bytes(struct.pack("<d", value), "little")


# Digests are built from integers only, so that they (and every order chosen by them) are
# a function of the expression alone, equal in every graph, thread and process.
_OP_CODE = {name: stable_hash(name) for name in OPS}
# Nodes of indexed expressions (:mod:`symad.core.binders`): built by their own methods, not `make`.
BINDERS = frozenset({"sum", "prod", "each"})
SCOPED = frozenset({"index", "vector", "item", *BINDERS})
_OP_CODE.update({name: stable_hash(name) for name in SCOPED})


_POW = OPS["pow"].py  # folded as every evaluator computes it: small integer powers are products
# Per op, what `make` needs, looked up once: arity, commutative, numbers last, evaluators, rewrite rule.
_MAKE: dict[str, tuple] = {}


def _make_entry(op: str) -> tuple:
    """``make``'s entry for ``op``, from the op table (also for an op defined after this module loaded)."""
    spec = OPS.get(op)
    if spec is None or spec.kind == "leaf":
        raise SymadError(f"unknown operation {op!r}")
    _OP_CODE.setdefault(op, stable_hash(op))
    entry = _MAKE[op] = (spec.arity, spec.commutative, spec.number_last, spec.py, spec.np, RULES.get(op))
    return entry


for _name in OPS:
    if OPS[_name].kind != "leaf":
        _make_entry(_name)


def natural_key(name: str) -> tuple:
    """Sort key that orders embedded numbers numerically: x2 < x10 < y."""
    key: list = []
    digits = ""
    for ch in name + "\0":
        if ch.isdigit():
            digits += ch
            continue
        if digits:
            key.append((1, int(digits), digits))
            digits = ""
        if ch != "\0":
            key.append((0, ch, ""))
    return tuple(key)


def export(graph: Graph, roots: Iterable[int]) -> tuple[list[str], list[tuple[int, ...]], list, list[int]]:
    """The nodes the roots need, numbered from 0 in topological order: ``(ops, args,
    data, roots)``, a plain-data form of an expression (for pickling and copying)."""
    roots = list(roots)
    order = graph.reachable(roots)
    number = {node: k for k, node in enumerate(order)}
    return ([graph.op[n] for n in order], [tuple(number[a] for a in graph.args[n]) for n in order],
            [graph.data[n] for n in order], [number[r] for r in roots])


def rebuild(graph: Graph, ops: Sequence[str], args: Sequence[tuple[int, ...]], data: Sequence,
            roots: Sequence[int]) -> list[int]:
    """Build an :func:`export`-ed expression in ``graph``; its roots' nodes there."""
    built: list[int] = []
    for op, a, d in zip(ops, args, data):
        built.append(graph.build(op, d, [built[k] for k in a]))
    return [built[r] for r in roots]


def _rebuilt_graph(dag: tuple) -> Graph:
    graph = Graph()
    rebuild(graph, *dag)
    return graph
