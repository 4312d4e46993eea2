"""Forward mode on the DAG: directional derivatives (JVPs), any number of directions in one sweep.

Tangents are built as new nodes of the same graph, like the gradients of
:mod:`symad.ad.reverse`.  A ``where`` selects its arms' tangents as it selects their values,
so the arm not taken (``sqrt`` at 0, its tangent inf) never reaches the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from symad.ad.local import local_partial, local_partials, times
from symad.ad.sweep import active, forward_nodes
from symad.core.gcpause import without_gc
from symad.core.graph import Graph
from symad.core.ops import OPS


@without_gc
def forward(graph: Graph, roots: Sequence[int], directions: Sequence[Mapping[int, int]], *,
            drop_zeros: bool = False) -> list[list[int]]:
    """Forward mode for any number of roots and tangent directions, in one sweep.

    ``directions[d]`` maps variable nodes to the nodes of their components along
    direction ``d`` (missing ones are 0); the result's ``[d][r]`` is the tangent of
    ``roots[r]`` along it.  Each local partial is built once, for all directions.

    Two conventions for the products, both kept because their expressions differ:
    by default a partial that is the number 0 drops its term and 1 multiplies by
    nothing (all partials of a node built first, as :func:`jvp` always has); with
    ``drop_zeros`` every term is ``tangent * partial`` as a node, built edge by edge,
    and a tangent that folds to the constant 0 is dropped (as :func:`symad.ad.hessian.jvp_many`).
    """
    op_of, args_of, make = graph.op, graph.args, graph.make
    tangent: list[dict[int, int]] = [{} for _ in directions]
    sources = {v for d in directions for v, t in d.items()
               if op_of[v] == "var" and not (drop_zeros and graph.is_const(t, 0.0))}
    order = graph.reachable(roots)
    for node, ks in forward_nodes(graph, order, active(graph, order, sources)):
        if op_of[node] == "var":
            for seeds, known in zip(directions, tangent):
                if node in seeds and not (drop_zeros and graph.is_const(seeds[node], 0.0)):
                    known[node] = seeds[node]
            continue
        args = args_of[node]
        if OPS[op_of[node]].arms:  # where(c, a, b): the tangent of the arm taken, selected
            zero = graph.const(0.0)
            for known in tangent:
                ta, tb = known.get(args[1]), known.get(args[2])
                if ta is not None or tb is not None:
                    total = make(op_of[node], args[0], zero if ta is None else ta, zero if tb is None else tb)
                    if not (drop_zeros and graph.is_const(total, 0.0)):
                        known[node] = total
            continue
        if drop_zeros:
            totals: list[int | None] = [None] * len(tangent)
            for k in ks:
                arg = args[k]
                if not any(arg in known for known in tangent):
                    continue
                partial = local_partial(graph, node, k)
                for d, known in enumerate(tangent):
                    t = known.get(arg)
                    if t is not None:
                        term = make("mul", t, partial)
                        totals[d] = term if totals[d] is None else make("add", totals[d], term)
            for total, known in zip(totals, tangent):
                if total is not None and not graph.is_const(total, 0.0):
                    known[node] = total
            continue
        wanted = [k for k in ks if any(args[k] in known for known in tangent)]
        if not wanted:
            continue
        locals_ = local_partials(graph, node, wanted)
        for known in tangent:
            total: int | None = None
            for k, local in zip(wanted, locals_):
                t = known.get(args[k])
                if t is None:
                    continue
                term = times(graph, t, local)
                if term is not None:
                    total = term if total is None else make("add", total, term)
            if total is not None:
                known[node] = total
    zero = graph.const(0.0)
    return [[known.get(r, zero) for r in roots] for known in tangent]


def jvp(graph: Graph, root: int, tangents: Mapping[int, int]) -> int:
    """Forward mode: the directional derivative of ``root`` along ``tangents``.

    ``tangents`` maps variable nodes to the nodes of their direction components;
    variables not mentioned have tangent 0.  One forward sweep in topological order.
    """
    return forward(graph, [root], [tangents])[0][0]
