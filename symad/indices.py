"""Index objects: ``sum(i = 1..n, ...)``, ``prod`` and ``each`` written in Python, the text's own nodes.

``i = symad.index("i", 1, n)`` is an index running from 1 to n; ``x[i + 1]`` (``x`` the name of
indexed variables: ``symad.indexed("x")``), ``A[i, j]``, arithmetic and the language's functions build a body with it,
and ``symad.sum(i, body)`` (``symad.prod``, ``symad.each``) binds it: the nodes are those the text
``sum(i = 1..n, body)`` builds in the same graph, a loop past the text's threshold, written out
below it (:mod:`symad.core.unrolling`).

>>> import symad
>>> g = symad.Graph()
>>> i, x = symad.index("i", 1, 3), symad.indexed("x", g)
>>> print(symad.sum(i, (x[i + 1] - x[i]) ** 2))
(x[2] - x[1])^2 + (x[3] - x[2])^2 + (x[4] - x[3])^2

Until its sum binds it, an index is a *placeholder*: an index leaf of a level far past any loop's
(:data:`PLACEHOLDER_BASE` + a serial number), so a sum built inside another (whose index is still
free) stays a loop node of a level past its free indices.  Binding the outermost index moves
every level to the text's (:func:`symad.core.binders.substitute` relevels the loops inside), then
decides which sums stay loops as the text does.  An expression that still has a free index (one
used outside its sum) is refused where it is used (:func:`check_bound`).
"""

from __future__ import annotations

import itertools
import math
import numbers
from typing import Any

from symad.core import binders
from symad.core.dag import BINDERS, Graph
from symad.core.errors import SymadError
from symad.core.term import Arithmetic, Term, as_node, unwrapped
from symad.core.unrolling import entries_as_items, lowered, summed
from symad.expr import Expr, default_graph
from symad.symbolic_array import plain_name

PLACEHOLDER_BASE = 1 << 20  # index levels from here on are free indices of index objects, never a loop's
_LARGEST_BOUND = 2**31  # as the text's bounds
_serial = itertools.count()
_names: dict[int, str] = {}  # placeholder level -> the index's name, for error messages


class Index(Arithmetic):
    """An index running from ``low`` to ``high`` (whole numbers), for :func:`bound` (``symad.sum``,
    ``symad.prod``, ``symad.each``); in arithmetic it is the index's value, a number of the body."""

    __slots__ = ("name", "low", "high", "level")

    def __init__(self, name: str, low: int, high: int):
        self.name, self.low, self.high = name, low, high
        self.level = PLACEHOLDER_BASE + next(_serial)
        _names[self.level] = name

    def term(self, graph: Graph | None = None) -> Any:
        """The index as an expression of ``graph`` (the default graph if None)."""
        g = default_graph() if graph is None else graph
        return Expr(g, g.index(self.level))

    def _binary(self, op: str, other: Any, reflected: bool = False) -> Any:
        other = unwrapped(other)
        here = self.term(other.graph if isinstance(other, Term) else None)
        if isinstance(other, Index):
            other = other.term(here.graph)
        return here._binary(op, other, reflected)

    def __neg__(self) -> Any:
        return -self.term()

    def __pos__(self) -> Index:
        return self

    def __repr__(self) -> str:
        return f"index({self.name!r}, {self.low}, {self.high})"


def index(*args: Any) -> Index:
    """``symad.index("i", 1, n)`` (or ``symad.index(1, n)``, named ``i``): an index from ``1`` to ``n``.

    >>> index("k", 0, 9)
    index('k', 0, 9)
    """
    if len(args) == 2:
        args = ("i", *args)
    if len(args) != 3:
        raise TypeError("symad.index takes a name and two bounds: symad.index('i', 1, n)")
    name, low, high = args
    if not isinstance(name, str) or not name.isidentifier():
        raise SymadError(f"an index's name is an identifier such as 'i', not {name!r}")
    return Index(name, _bound(low, "first"), _bound(high, "last"))


def _bound(value: Any, which: str) -> int:
    """A bound as a whole number within ±2^31, as the text's bounds."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, numbers.Real)):
        raise SymadError(f"an index's {which} value must be a whole number, not {value!r}")
    number = float(value)
    if not math.isfinite(number) or number != int(number):
        raise SymadError(f"an index's {which} value must be a whole number, not {value!r}")
    if abs(number) > _LARGEST_BOUND:
        raise SymadError(f"an index's {which} value is {int(number)}, beyond ±2^31")
    return int(number)


class IndexedName:
    """``symad.indexed("x")``: the name of indexed variables (or data); ``x[i + 1]``, ``A[i, j]``
    are entries, expressions, as the text's (``x[3]``: the variable ``x[3]``)."""

    __slots__ = ("name", "graph")

    def __init__(self, name: str, graph: Graph | None = None):
        self.name, self.graph = plain_name(name, "symad.indexed"), graph

    def __getitem__(self, key: Any) -> Any:
        keys = key if isinstance(key, tuple) else (key,)
        g = self.graph if self.graph is not None else _graph_of(keys)
        return Expr(g, entry(g, self.name, keys))

    def __repr__(self) -> str:
        return f"indexed({self.name!r})"


def indexed(name: str, graph: Graph | None = None) -> IndexedName:
    """``symad.indexed("x")``: ``x[i + 1]``, ``x[2*i - 1]``, ``A[i, j]`` with indices of
    :func:`index` are the entries the text writes so.

    >>> x = indexed("x", Graph())
    >>> x[3]
    Expr('x[3]')
    """
    return IndexedName(name, graph)


def _graph_of(keys: tuple[Any, ...]) -> Graph:
    """Where an entry without a graph of its own is built: its keys' (the default graph if none)."""
    return next((k.graph for k in keys if isinstance(k, Term)), None) or default_graph()


def entry(graph: Graph, name: str, keys: tuple[Any, ...]) -> int:
    """The node of ``name[keys]``: an entry ``item`` of the vector ``name`` when a key uses an index
    (each key affine in indices), else the variable ``name[k]`` (the text's ``x[3]``)."""
    nodes = [k.term(graph).id if isinstance(k, Index) else as_node(graph, k) for k in keys]
    lv = binders.levels(graph)
    if len(nodes) == 1 and graph.op[nodes[0]] == "const":
        value = graph.data[nodes[0]]
        if value != int(value):  # type: ignore[arg-type]
            raise SymadError(f"an index of {name} must be a whole number, not {value:g}")
        return graph.var(f"{name}[{int(value)}]")  # type: ignore[arg-type]
    for node in nodes:
        if binders.affine(graph, node) is None:
            if lv[node] < 0:
                raise SymadError(f"the index of {name} must be a whole number or an expression of indices "
                                 "(symad.index), not a variable")
            raise SymadError(f"the index of {name} must be an affine expression of the loop's index "
                             "(such as i+1 or 2*i-1)")
    return binders.item(graph, graph.vector(name), *nodes)


def bound(op: str, over: Index, body: Any) -> Any:
    """``op`` (``sum``, ``prod`` or ``each``) of ``body`` over the index ``over``: the nodes the text
    ``op(i = low..high, body)`` builds, as an expression of ``body``'s graph."""
    if not isinstance(over, Index):
        raise TypeError(f"symad.{op} takes an index (symad.index) and a body, not {type(over).__name__}")
    body = unwrapped(body)
    if isinstance(body, Index):
        body = body.term()
    graph = body.graph if isinstance(body, Term) else default_graph()
    root = as_node(graph, body)
    mine = graph.index(over.level)
    free = _free(graph, root) - {over.level}
    if not free:  # the outermost: every level becomes the text's, then the text's decisions
        root = binders.substitute(graph, root, {mine: graph.index(0)})
        if op in ("sum", "prod"):
            node = summed(graph, root, 0, over.low, over.high, op=op)
        else:
            node = binders.reduce(graph, "each", 0, over.low, over.high, lowered(graph, root, inside=True))
        return Expr(graph, entries_as_items(graph, node))
    if op == "each":
        raise SymadError("each(...) is a vector of values: it can only be a whole output, not inside a sum "
                         f"over {', '.join(_names.get(level, '?') for level in sorted(free))}")
    # inside a sum still open: a loop past every level the body uses, until the outermost binds
    top = 1 + max(_levels_used(graph, root))
    root = binders.substitute(graph, root, {mine: graph.index(top)})
    return Expr(graph, binders.reduce(graph, op, top, over.low, over.high, root))


def _free(graph: Graph, root: int) -> set[int]:
    """The placeholder levels ``root`` uses freely (indices of index objects not bound yet)."""
    if binders.levels(graph)[root] < PLACEHOLDER_BASE:
        return set()
    lv = binders.levels(graph)
    return {graph.data[n] for n in binders.scope_nodes(graph, root, lambda n: lv[n] >= PLACEHOLDER_BASE)  # type: ignore[misc]
            if graph.op[n] == "index" and graph.data[n] >= PLACEHOLDER_BASE}  # type: ignore[operator]


def _levels_used(graph: Graph, root: int) -> list[int]:
    """Every index level in ``root``: its indices' and its loops' (0 if none)."""
    op_of, data_of = graph.op, graph.data
    out = [0]
    for n in graph.reachable([root]):
        if op_of[n] == "index":
            out.append(data_of[n])  # type: ignore[arg-type]
        elif op_of[n] in BINDERS:
            out.append(data_of[n][0])  # type: ignore[index]
    return out


def unbound_message(graph: Graph, root: int) -> str:
    """What is wrong with ``root`` that uses an index not bound by a sum (yet)."""
    names = sorted(_names.get(level, "?") for level in _free(graph, root))
    return (f"the index {', '.join(names)} is used outside its sum (an expression of it goes inside "
            f"symad.sum({names[0]}, ...), symad.prod or symad.each)")
