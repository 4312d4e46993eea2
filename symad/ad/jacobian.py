"""First derivatives of several outputs: the Jacobian, and its products with vectors.

Every result is nodes of the same graph, as :mod:`symad.ad.reverse` builds a gradient:
outputs share their common subexpressions, and so do their derivatives.
"""

from __future__ import annotations

from collections.abc import Sequence

from symad.ad.forward import forward
from symad.ad.reverse import gradient
from symad.core.dag import Graph


def jacobian_nodes(graph: Graph, roots: Sequence[int], wrt: Sequence[int]) -> list[list[int]]:
    """``J[i][j] = ∂roots[i]/∂wrt[j]`` as node ids.

    With no more outputs than inputs, one reverse sweep per output (each gives a whole
    row); otherwise one forward sweep carrying a tangent per input (each a whole column),
    so the sweeps are ``min(outputs, inputs)`` either way.
    """
    if len(roots) <= len(wrt):
        rows = [gradient(graph, root, list(wrt)) for root in roots]
        return [[row[v] for v in wrt] for row in rows]
    one = graph.const(1.0)
    columns = forward(graph, list(roots), [{v: one} for v in wrt])
    return [[columns[j][i] for j in range(len(wrt))] for i in range(len(roots))]


def vjp_nodes(graph: Graph, roots: Sequence[int], wrt: Sequence[int], cotangent: Sequence[int]) -> list[int]:
    """``uᵀJ`` as node ids (one per ``wrt``): one reverse sweep from ``Σ u_i·roots[i]``, whose
    adjoint of each root is its cotangent ``u_i`` (a node, usually a fresh variable)."""
    total = graph.const(0.0)
    for root, u in zip(roots, cotangent):
        total = graph.make("add", total, graph.make("mul", u, root))
    partials = gradient(graph, total, list(wrt))
    return [partials[v] for v in wrt]


def jvp_nodes(graph: Graph, roots: Sequence[int], wrt: Sequence[int], tangent: Sequence[int]) -> list[int]:
    """``J·v`` as node ids (one per root): one forward sweep along the tangent ``v`` (nodes)."""
    return forward(graph, list(roots), [dict(zip(wrt, tangent))])[0]


def cotangent_names(count: int) -> list[str]:
    """Names of the cotangent variables of a vector-Jacobian product, one per output.

    The quote cannot occur in a parsed name (as in :func:`symad.ad.hessian.direction_names`),
    so they never collide with a user's variables."""
    return [f"u{i}'" for i in range(count)]
