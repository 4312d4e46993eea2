"""Reverse mode on the DAG: every partial derivative of a root in one backward sweep.

The gradient is built as new nodes of the same graph, so it can be printed,
compiled and differentiated again.  A ``where`` passes its adjoint into the arm it
takes only, and what flows on from there has a strong zero (:mod:`symad.ad.branches`):
the arm not taken contributes 0, never ``0 * inf``.
"""

from __future__ import annotations

from symad.ad import branches
from symad.ad.local import local_partials, times
from symad.ad.sweep import active, canonical_order, reverse_nodes
from symad.core.gcpause import without_gc
from symad.core.graph import Graph
from symad.core.ops import OPS


@without_gc
def gradient(graph: Graph, root: int, wrt: list[int] | None = None) -> dict[int, int]:
    """Reverse mode: ``{variable node: ∂root/∂variable}`` in one backward sweep.

    Nodes are visited in reverse topological order from the root (the sweep of
    :mod:`symad.ad.sweep`); a node used by several parents receives the sum of their
    adjoint contributions, added in the canonical order (:func:`canonical_order`), so the
    gradient's bits are a function of the expression alone, whatever else the graph holds.
    """
    order = canonical_order(graph, [root])
    adjoint: dict[int, int] = {root: graph.const(1.0)}
    # the shapes of adjoints that come through a branch (none to track without a `where`)
    shapes = branches.Shapes(graph) if branches.any_branch(graph, order) else None
    args_of, op_of, make = graph.args, graph.op, graph.make
    for node, ks in reverse_nodes(graph, order, active(graph, order)):
        adj = adjoint.get(node)
        if adj is None or not ks:
            continue
        args = args_of[node]
        arms = OPS[op_of[node]].arms
        if arms:  # a selection: the arms get the adjoint selected, the condition nothing
            ks = tuple(k for k in ks if k in arms)
        own = shapes.of.get(node) if shapes is not None else None
        for k, local in zip(ks, [None] * len(ks) if arms else local_partials(graph, node, ks)):
            arg = args[k]
            if arms:
                contribution: int | None = branches.select(graph, node, k, adj)
            elif own is not None:
                contribution = branches.strong_times(graph, adj, local, own)  # type: ignore[arg-type]
            else:
                contribution = times(graph, adj, local)  # type: ignore[arg-type]
            if contribution is None:
                continue
            if shapes is not None:
                shapes.pass_on(node, k, arg)
            previous = adjoint.get(arg)
            adjoint[arg] = contribution if previous is None else make("add", previous, contribution)
    if wrt is None:
        wrt = [n for n in order if graph.op[n] == "var"]
    zero = graph.const(0.0)
    return {v: adjoint.get(v, zero) for v in wrt}
