"""Symbolic differentiation on the DAG: reverse mode (gradients) and forward mode (JVPs).

Both modes use the local partials of :mod:`symad.ops` and build their results as
new nodes of the same graph, so a derivative can be printed, compiled and
differentiated again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .graph import Graph
from .ops import OPS
from .sweep import active, forward_nodes, reverse_nodes


def _local_partials(graph: Graph, node: int, wanted: Sequence[int]) -> list[int | float]:
    """∂node/∂(argument k) for each k in ``wanted``, from the op table's rules.

    A partial that is a plain number (1 for a sum, -1 for a difference) stays a
    float, so callers can skip multiplying by it.
    """
    from .expr import Expr

    wrapped = [Expr(graph, a) for a in graph.args[node]]
    wrapped.append(Expr(graph, node))
    spec = OPS[graph.op[node]]
    out: list[int | float] = []
    for k in wanted:
        local = spec.partial(k, *wrapped)
        out.append(float(local) if isinstance(local, (int, float)) else local.id)
    return out


def _times(graph: Graph, factor: int, local: int | float) -> int | None:
    """``factor * local`` as a node; None when ``local`` is 0."""
    if isinstance(local, float):
        if local == 0.0:
            return None
        return factor if local == 1.0 else graph.make("mul", graph.const(local), factor)
    return graph.make("mul", factor, local)


def gradient(graph: Graph, root: int, wrt: list[int] | None = None) -> dict[int, int]:
    """Reverse mode: ``{variable node: ∂root/∂variable}`` in one backward sweep.

    Nodes are visited in reverse topological order from the root (the sweep of
    :mod:`symad.sweep`); a node used by several parents receives the sum of their
    adjoint contributions.
    """
    order = graph.reachable([root])
    adjoint: dict[int, int] = {root: graph.const(1.0)}
    args_of, make = graph.args, graph.make
    for node, ks in reverse_nodes(graph, order, active(graph, order)):
        adj = adjoint.get(node)
        if adj is None or not ks:
            continue
        args = args_of[node]
        for k, local in zip(ks, _local_partials(graph, node, ks)):
            arg = args[k]
            contribution = _times(graph, adj, local)
            if contribution is None:
                continue
            previous = adjoint.get(arg)
            adjoint[arg] = contribution if previous is None else make("add", previous, contribution)
    if wrt is None:
        wrt = [n for n in order if graph.op[n] == "var"]
    zero = graph.const(0.0)
    return {v: adjoint.get(v, zero) for v in wrt}


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
    and a tangent that folds to the constant 0 is dropped (as :func:`symad.hessian.jvp_many`).
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
        locals_ = _local_partials(graph, node, wanted)
        for known in tangent:
            total: int | None = None
            for k, local in zip(wanted, locals_):
                t = known.get(args[k])
                if t is None:
                    continue
                term = _times(graph, t, local)
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


def local_partial(graph: Graph, node: int, k: int) -> int:
    """The expression ∂node/∂(its k-th argument), as a node."""
    local = _local_partials(graph, node, [k])[0]
    return graph.const(local) if isinstance(local, float) else local

