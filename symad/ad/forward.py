"""Forward mode, written once: the forward sweep, and directional derivatives (JVPs) as nodes.

:func:`sweep` carries tangents from the inputs up, whatever they are (an algebra, as
:func:`symad.ad.reverse.backward`'s): :class:`Tangents` (here) carries, for any number of
directions at once, a node per direction, so each local partial is built once for all of
them; :mod:`symad.ad.trace` carries numbers at a point.  One convention: a partial that is
the number 0 passes nothing and 1 multiplies by nothing, and a tangent that is nothing (the
number 0, folded) is dropped, so the parts of the graph it would reach cost nothing.  A
``where`` selects its arms' tangents as it selects their values, so the arm not taken
(``sqrt`` at 0, its tangent inf) never reaches the result.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from symad.ad.local import local_partials, times
from symad.ad.sweep import Ks, active, forward_nodes
from symad.core.gcpause import without_gc
from symad.core.graph import Graph
from symad.core.ops import OPS


def sweep(graph: Graph, order: list[int], live: Collection[int], algebra: Any) -> dict[int, Any]:
    """The forward sweep: ``{node: tangent}`` for every node a seed's tangent reaches.

    ``order`` is topological (a node's tangent sums its arguments' terms in argument order,
    so the order of nodes changes no bits), ``live`` the nodes that depend on a seed.  The
    algebra gives ``seed(variable)``, ``partials(node, ks)``, ``times(tangent, partial)``
    (None: nothing), ``select(node, [tangent of each arm])``, ``add``, ``kept(tangent)``
    (None where it is nothing) and ``visit`` (None, or called with each node's steps, as
    :class:`symad.ad.reverse.Algebra`'s).
    """
    tangent: dict[int, Any] = {}
    args_of, op_of = graph.args, graph.op
    seed, partials, times_, select, add, kept, visit = (algebra.seed, algebra.partials, algebra.times,
                                                         algebra.select, algebra.add, algebra.kept, algebra.visit)
    for node, ks in forward_nodes(graph, order, live):
        args = args_of[node]
        if not args:  # a variable: its seed
            t = seed(node)
            if t is not None:
                tangent[node] = t
            continue
        arms = OPS[op_of[node]].arms
        wanted = tuple(k for k in ks if args[k] in tangent and (not arms or k in arms))
        if not wanted:
            continue
        ps = None
        if arms:  # where(c, a, b): the tangent of the arm taken, selected
            terms = [tangent[args[k]] for k in wanted]
            total = select(node, [tangent.get(args[k]) for k in arms])
        else:
            ps = partials(node, wanted)
            terms = [times_(tangent[args[k]], p) for k, p in zip(wanted, ps)]
            total = None
            for term in terms:
                if term is not None:
                    total = term if total is None else add(total, term)
        if visit is not None:
            visit(node, None, wanted, terms, ps, None)
        if total is not None:
            total = kept(total)
            if total is not None:
                tangent[node] = total
    return tangent


class Tangents:
    """The symbolic algebra of forward mode: a tangent is a tuple of nodes, one per direction
    (None: nothing along that direction)."""

    visit = None

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


@without_gc
def forward(graph: Graph, roots: Sequence[int], directions: Sequence[Mapping[int, int]]) -> list[list[int]]:
    """Forward mode for any number of roots and tangent directions, in one sweep.

    ``directions[d]`` maps variable nodes to the nodes of their components along
    direction ``d`` (missing ones are 0); the result's ``[d][r]`` is the tangent of
    ``roots[r]`` along it.  Each local partial is built once, for all directions.
    """
    algebra = Tangents(graph, directions)
    sources = {v for d in directions for v, t in d.items() if graph.op[v] == "var" and not graph.is_const(t, 0.0)}
    order = graph.reachable(roots)
    tangent = sweep(graph, order, active(graph, order, sources), algebra)
    zero = graph.const(0.0)
    out: list[list[int]] = []
    for d in range(len(directions)):
        row = []
        for r in roots:
            t = tangent.get(r)
            row.append(zero if t is None or t[d] is None else t[d])  # type: ignore[index]
        out.append(row)
    return out


def jvp(graph: Graph, root: int, tangents: Mapping[int, int]) -> int:
    """Forward mode: the directional derivative of ``root`` along ``tangents``.

    ``tangents`` maps variable nodes to the nodes of their direction components;
    variables not mentioned have tangent 0.  One forward sweep in topological order.
    """
    return forward(graph, [root], [tangents])[0][0]
