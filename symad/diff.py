"""Symbolic differentiation on the DAG: reverse mode (gradients) and forward mode (JVPs).

Both modes use the local partials of :mod:`symad.ops` and build their results as
new nodes of the same graph, so a derivative can be printed, compiled and
differentiated again.
"""

from __future__ import annotations

from typing import Mapping

from .graph import Graph
from .ops import OPS


def _active(graph: Graph, order: list[int]) -> set[int]:
    """Nodes in ``order`` that depend on some variable (only they carry derivatives)."""
    active: set[int] = set()
    for node in order:
        if graph.op[node] == "var" or any(a in active for a in graph.args[node]):
            active.add(node)
    return active


def _local_partial(graph: Graph, node: int, k: int) -> int:
    """The expression ∂node/∂(its k-th argument), built from the op table's rule."""
    from .expr import Expr, as_node

    args = [Expr(graph, a) for a in graph.args[node]]
    rule = OPS[graph.op[node]].partials[k]
    return as_node(graph, rule(*args, Expr(graph, node)))


def gradient(graph: Graph, root: int, wrt: list[int] | None = None) -> dict[int, int]:
    """Reverse mode: ``{variable node: ∂root/∂variable}`` in one backward sweep.

    Nodes are visited in reverse topological order from the root; a node used by
    several parents receives the sum of their adjoint contributions.
    """
    order = graph.reachable([root])
    active = _active(graph, order)
    adjoint: dict[int, int] = {root: graph.const(1.0)}
    for node in reversed(order):
        adj = adjoint.get(node)
        if adj is None or not graph.args[node]:
            continue
        for k, arg in enumerate(graph.args[node]):
            if arg not in active:
                continue
            contribution = graph.make("mul", adj, _local_partial(graph, node, k))
            previous = adjoint.get(arg)
            adjoint[arg] = contribution if previous is None else graph.make("add", previous, contribution)
    if wrt is None:
        wrt = [n for n in order if graph.op[n] == "var"]
    zero = graph.const(0.0)
    return {v: adjoint.get(v, zero) for v in wrt}


def jvp(graph: Graph, root: int, tangents: Mapping[int, int]) -> int:
    """Forward mode: the directional derivative of ``root`` along ``tangents``.

    ``tangents`` maps variable nodes to the nodes of their direction components;
    variables not mentioned have tangent 0.  One forward sweep in topological order.
    """
    tangent: dict[int, int] = {}
    for node in graph.reachable([root]):
        if graph.op[node] == "var":
            if node in tangents:
                tangent[node] = tangents[node]
            continue
        total: int | None = None
        for k, arg in enumerate(graph.args[node]):
            t = tangent.get(arg)
            if t is None:
                continue
            term = graph.make("mul", t, _local_partial(graph, node, k))
            total = term if total is None else graph.make("add", total, term)
        if total is not None:
            tangent[node] = total
    return tangent.get(root, graph.const(0.0))
