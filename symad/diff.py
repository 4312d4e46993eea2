"""Symbolic differentiation on the DAG: reverse mode (gradients) and forward mode (JVPs).

Both modes use the local partials of :mod:`symad.ops` and build their results as
new nodes of the same graph, so a derivative can be printed, compiled and
differentiated again.
"""

from __future__ import annotations

from collections.abc import Mapping

from .graph import Graph
from .ops import OPS


def _active(graph: Graph, order: list[int]) -> set[int]:
    """Nodes in ``order`` that depend on some variable (only they carry derivatives)."""
    active: set[int] = set()
    for node in order:
        if graph.op[node] == "var" or any(a in active for a in graph.args[node]):
            active.add(node)
    return active


def _local_partials(graph: Graph, node: int, wanted: list[int]) -> list[int | float]:
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

    Nodes are visited in reverse topological order from the root; a node used by
    several parents receives the sum of their adjoint contributions.
    """
    order = graph.reachable([root])
    active = _active(graph, order)
    adjoint: dict[int, int] = {root: graph.const(1.0)}
    for node in reversed(order):
        adj = adjoint.get(node)
        args = graph.args[node]
        if adj is None or not args:
            continue
        wanted = [k for k, a in enumerate(args) if a in active]
        for k, local in zip(wanted, _local_partials(graph, node, wanted)):
            contribution = _times(graph, adj, local)
            if contribution is None:
                continue
            arg = args[k]
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
        args = graph.args[node]
        wanted = [k for k, a in enumerate(args) if a in tangent]
        if not wanted:
            continue
        for k, local in zip(wanted, _local_partials(graph, node, wanted)):
            term = _times(graph, tangent[args[k]], local)
            if term is not None:
                total = term if total is None else graph.make("add", total, term)
        if total is not None:
            tangent[node] = total
    return tangent.get(root, graph.const(0.0))


def local_partial(graph: Graph, node: int, k: int) -> int:
    """The expression ∂node/∂(its k-th argument), as a node."""
    local = _local_partials(graph, node, [k])[0]
    return graph.const(local) if isinstance(local, float) else local


_local_partial = local_partial  # older name, still used by some modules
