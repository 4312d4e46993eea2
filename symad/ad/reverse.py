"""Reverse mode on the DAG: every partial derivative of a root in one backward sweep.

The gradient is built as new nodes of the same graph, so it can be printed,
compiled and differentiated again.
"""

from __future__ import annotations

from symad.ad.local import local_partials, times
from symad.ad.sweep import active, reverse_nodes
from symad.core.graph import Graph


def gradient(graph: Graph, root: int, wrt: list[int] | None = None) -> dict[int, int]:
    """Reverse mode: ``{variable node: ∂root/∂variable}`` in one backward sweep.

    Nodes are visited in reverse topological order from the root (the sweep of
    :mod:`symad.ad.sweep`); a node used by several parents receives the sum of their
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
        for k, local in zip(ks, local_partials(graph, node, ks)):
            arg = args[k]
            contribution = times(graph, adj, local)
            if contribution is None:
                continue
            previous = adjoint.get(arg)
            adjoint[arg] = contribution if previous is None else make("add", previous, contribution)
    if wrt is None:
        wrt = [n for n in order if graph.op[n] == "var"]
    zero = graph.const(0.0)
    return {v: adjoint.get(v, zero) for v in wrt}
