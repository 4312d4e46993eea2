"""Local partials: ∂node/∂argument as nodes of the graph, from the op table's rules.

Both modes multiply them by what flows along an edge (the adjoint in reverse
mode, the tangent in forward mode), so one rule of :mod:`symad.core.ops` serves both.
"""

from __future__ import annotations

from collections.abc import Sequence

from symad.core.dag import Graph
from symad.core.ops import OPS
from symad.core.term import Term


def local_partials(graph: Graph, node: int, wanted: Sequence[int]) -> list[int | float]:
    """∂node/∂(argument k) for each k in ``wanted``, from the op table's rules.

    A partial that is a plain number (1 for a sum, -1 for a difference) stays a
    float, so callers can skip multiplying by it.
    """
    rules = OPS[graph.op[node]].partials
    wrapped: list[Term] | None = None  # the arguments and the node as terms, built if a rule needs them
    out: list[int | float] = []
    for k in wanted:
        rule = rules[k]
        if isinstance(rule, float):
            out.append(rule)
            continue
        if wrapped is None:
            wrapped = [Term(graph, a) for a in graph.args[node]]
            wrapped.append(Term(graph, node))
        local = rule(*wrapped)
        out.append(float(local) if isinstance(local, (int, float)) else local.id)
    return out


def times(graph: Graph, factor: int, local: int | float) -> int | None:
    """``factor * local`` as a node; None when ``local`` is 0."""
    if isinstance(local, float):
        if local == 0.0:
            return None
        return factor if local == 1.0 else graph.make("mul", graph.const(local), factor)
    return graph.make("mul", factor, local)


def local_partial(graph: Graph, node: int, k: int) -> int:
    """The expression ∂node/∂(its k-th argument), as a node."""
    local = local_partials(graph, node, [k])[0]
    return graph.const(local) if isinstance(local, float) else local

