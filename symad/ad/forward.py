"""Forward mode, written once: the forward sweep, and directional derivatives (JVPs) as nodes.

:func:`sweep` carries tangents from the inputs up, whatever they are (an algebra, as
:func:`symad.ad.reverse.backward`'s): :class:`Tangent` (here) carries a node, :class:`Tangents`
a node per direction for any number of directions at once, so each local partial is built
once for all of them; :mod:`symad.ad.trace` carries numbers at a point.  One convention: a partial that is
the number 0 passes nothing and 1 multiplies by nothing, and a tangent that is nothing (the
number 0, folded) is dropped, so the parts of the graph it would reach cost nothing.  A
``where`` selects its arms' tangents as it selects their values, so the arm not taken
(``sqrt`` at 0, its tangent inf) never reaches the result.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from symad.ad import products
from symad.ad.branches import SELECTS
from symad.ad.local import local_partials, times
from symad.ad.sweep import Ks, active, forward_nodes
from symad.core.dag import SCOPED, Graph
from symad.core.errors import SymadError
from symad.core.gcpause import without_gc
from symad.core.ops import OPS


class ForwardAlgebra:
    """What flows through the forward sweep: ``seed(variable)``, ``partials(node, ks)``,
    ``times(tangent, partial)`` (None: nothing), ``select(node, [tangent of each arm])``,
    ``add`` and ``kept(tangent)`` (None where it is nothing); the sweep asks for each node's
    :meth:`combine` or :meth:`choose`, made of them here, which an algebra may do in one step."""

    visit: Any = None  # as :class:`symad.ad.reverse.Algebra`'s, the factor None

    def entry(self, node: int, vector: Any) -> Any:
        """The tangent of entry ``node`` (``x[i + c]``), given the tangent of its vector."""
        raise SymadError("this forward sweep does not take loops yet")

    def loop(self, node: int, body: Any) -> Any:
        """The tangent of binder ``node`` (``sum(i = ..., body)``), given its body's tangent
        (:func:`symad.ad.products.loop_tangent`)."""
        raise SymadError("this forward sweep does not take loops yet")

    def combine(self, node: int, ks: Ks, tangents: list[Any]) -> Any:
        """The tangent of ``node``: Σ tangent of argument k × ∂node/∂(argument k), for k in ``ks``."""
        partials = self.partials(node, ks)  # type: ignore[attr-defined]
        times_, add = self.times, self.add  # type: ignore[attr-defined]
        terms = [times_(t, p) for t, p in zip(tangents, partials)]
        total = None
        for term in terms:
            if term is not None:
                total = term if total is None else add(total, term)
        if self.visit is not None:
            self.visit(node, None, ks, terms, partials, None)
        return total

    def choose(self, node: int, ks: Ks, arms: list[Any]) -> Any:
        """The tangent of ``where`` node ``node``: its arms' tangents (``arms``) selected."""
        if self.visit is not None:
            self.visit(node, None, ks, [a for a in arms if a is not None], None, None)
        return self.select(node, arms)  # type: ignore[attr-defined]


def sweep(graph: Graph, order: list[int], live: Collection[int], algebra: Any) -> dict[int, Any]:
    """The forward sweep: ``{node: tangent}`` for every node a seed's tangent reaches.

    ``order`` is topological (a node's tangent sums its arguments' terms in argument order,
    so the order of nodes changes no bits), ``live`` the nodes that depend on a seed, and
    ``algebra`` a :class:`ForwardAlgebra`.
    """
    tangent: dict[int, Any] = {}
    args_of, op_of = graph.args, graph.op
    seed, combine, choose, kept = algebra.seed, algebra.combine, algebra.choose, algebra.kept
    for node, ks in forward_nodes(graph, order, live):
        args = args_of[node]
        if not args:  # a variable: its seed
            t = seed(node)
            if t is not None:
                tangent[node] = t
            continue
        op = op_of[node]
        if op in SCOPED:  # an entry's tangent is the tangent vector's entry; a loop's, the loop of its body's
            inner = tangent.get(args[0])
            if inner is None:
                total = None
            else:
                total = algebra.entry(node, inner) if op == "item" else algebra.loop(node, inner)
        elif op in SELECTS:  # where(c, a, b): the tangent of the arm taken, selected
            arms = OPS[op].arms
            wanted = tuple(k for k in ks if k in arms and args[k] in tangent)
            total = choose(node, wanted, [tangent.get(args[k]) for k in arms]) if wanted else None
        else:
            wanted = tuple(k for k in ks if args[k] in tangent)
            total = combine(node, wanted, [tangent[args[k]] for k in wanted]) if wanted else None
        if total is not None:
            total = kept(total)
            if total is not None:
                tangent[node] = total
    return tangent


class Tangent(ForwardAlgebra):
    """The symbolic algebra of forward mode along one direction: a tangent is a node."""

    def __init__(self, graph: Graph, direction: Mapping[int, int]):
        self.graph, self.direction = graph, direction
        self.add = functools.partial(graph.make, "add")

    def seed(self, node: int) -> int | None:
        return self.kept(self.direction[node]) if node in self.direction else None

    def partials(self, node: int, ks: Ks) -> list[int | float]:
        return local_partials(self.graph, node, ks)

    def times(self, tangent: int, partial: int | float) -> int | None:
        return times(self.graph, tangent, partial)

    def combine(self, node: int, ks: Ks, tangents: list[Any]) -> int | None:
        g = self.graph
        make, const = g.make, g.const
        total = None
        for t, p in zip(tangents, local_partials(g, node, ks)):  # times, inlined: once per edge
            if type(p) is float:
                if p == 0.0:
                    continue
                term = t if p == 1.0 else make("mul", const(p), t)
            else:
                term = make("mul", t, p)
            total = term if total is None else make("add", total, term)
        return total

    def select(self, node: int, arms: list[int | None]) -> int:
        g = self.graph
        zero, (cond, *_) = g.const(0.0), g.args[node]
        return g.make(g.op[node], cond, *(zero if t is None else t for t in arms))

    def kept(self, tangent: int) -> int | None:
        return None if self.graph.is_const(tangent, 0.0) else tangent

    def entry(self, node: int, vector: int) -> int:
        return self.graph.item(vector, *self.graph.args[node][1:])

    def loop(self, node: int, body: int) -> int:
        return products.loop_tangent(self.graph, node, body)


class Tangents(ForwardAlgebra):
    """The symbolic algebra of forward mode along several directions at once: a tangent is a tuple
    of nodes, one per direction (None: nothing along it), so each partial is built once for all."""

    def __init__(self, graph: Graph, directions: Sequence[Mapping[int, int]]):
        self.graph, self.directions = graph, directions

    def seed(self, node: int) -> tuple[int | None, ...] | None:
        return self.kept(tuple(d.get(node) for d in self.directions))

    def partials(self, node: int, ks: Ks) -> list[int | float]:
        return local_partials(self.graph, node, ks)

    def times(self, tangent: tuple[int | None, ...], partial: int | float) -> tuple[int | None, ...] | None:
        g = self.graph
        out = tuple(None if t is None else times(g, t, partial) for t in tangent)
        return None if all(t is None for t in out) else out

    def add(self, a: tuple[int | None, ...], b: tuple[int | None, ...]) -> tuple[int | None, ...]:
        make = self.graph.make
        return tuple(y if x is None else x if y is None else make("add", x, y) for x, y in zip(a, b))

    def select(self, node: int, arms: list[tuple[int | None, ...] | None]) -> tuple[int | None, ...]:
        g = self.graph
        zero, (cond, *_), op = g.const(0.0), g.args[node], g.op[node]
        ta, tb = ((None,) * len(self.directions) if t is None else t for t in arms)
        return tuple(None if a is None and b is None
                     else g.make(op, cond, zero if a is None else a, zero if b is None else b) for a, b in zip(ta, tb))

    def kept(self, tangent: tuple[int | None, ...]) -> tuple[int | None, ...] | None:
        g = self.graph
        out = tuple(None if t is None or g.is_const(t, 0.0) else t for t in tangent)
        return None if all(t is None for t in out) else out

    def entry(self, node: int, vector: tuple[int | None, ...]) -> tuple[int | None, ...]:
        g = self.graph
        return tuple(None if v is None else g.item(v, *g.args[node][1:]) for v in vector)

    def loop(self, node: int, body: tuple[int | None, ...]) -> tuple[int | None, ...] | None:
        return self.kept(tuple(None if b is None else products.loop_tangent(self.graph, node, b) for b in body))


@without_gc
def forward(graph: Graph, roots: Sequence[int], directions: Sequence[Mapping[int, int]]) -> list[list[int]]:
    """Forward mode for any number of roots and tangent directions, in one sweep.

    ``directions[d]`` maps variable nodes to the nodes of their components along
    direction ``d`` (missing ones are 0), vector nodes to the vector nodes of theirs; the
    result's ``[d][r]`` is the tangent of ``roots[r]`` along it.  Each local partial is built once, for all directions.
    """
    sources = {v for d in directions for v, t in d.items()
               if graph.op[v] in ("var", "vector") and not graph.is_const(t, 0.0)}
    order = graph.reachable(roots)
    live = active(graph, order, sources)
    zero = graph.const(0.0)
    if len(directions) == 1:  # a node per tangent, no tuple
        tangent = sweep(graph, order, live, Tangent(graph, directions[0]))
        return [[tangent.get(r, zero) for r in roots]]
    tangents = sweep(graph, order, live, Tangents(graph, directions))
    out: list[list[int]] = []
    for d in range(len(directions)):
        row = []
        for r in roots:
            t = tangents.get(r)
            row.append(zero if t is None or t[d] is None else t[d])
        out.append(row)
    return out


def jvp(graph: Graph, root: int, tangents: Mapping[int, int]) -> int:
    """Forward mode: the directional derivative of ``root`` along ``tangents``.

    ``tangents`` maps variable nodes to the nodes of their direction components;
    variables not mentioned have tangent 0.  One forward sweep in topological order.
    """
    return forward(graph, [root], [tangents])[0][0]
