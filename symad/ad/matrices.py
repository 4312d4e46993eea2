"""Derivative matrices as nodes: the Jacobian of several outputs and its products with vectors,
the Hessian (reverse over reverse) and Hessian-vector products (forward over reverse).

Every result is nodes of the same graph, as :mod:`symad.ad.reverse` builds a gradient:
outputs share their common subexpressions, and so do their derivatives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from symad.ad.forward import forward
from symad.ad.reverse import gradient
from symad.core.dag import Graph


# ------------------------------------------------------------------ first derivatives
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

    The quote cannot occur in a parsed name (as in :func:`direction_names`), so they never
    collide with a user's variables."""
    return [f"u{i}'" for i in range(count)]


# ------------------------------------------------------------------ second derivatives
def jvp_many(graph: Graph, roots: Sequence[int], tangents: Mapping[int, int]) -> list[int]:
    """Forward mode for several outputs in one sweep: the tangent node of each root.

    ``tangents`` maps variable nodes to the nodes of their direction components.
    Nodes are visited once, in topological order, whatever the number of roots;
    a node whose tangent is zero carries none, so inactive parts cost nothing.
    (:func:`symad.ad.forward.forward` along one direction.)
    """
    return forward(graph, roots, [tangents])[0]


def hessian_nodes(graph: Graph, root: int, wrt: Sequence[int],
                  grad: Sequence[int] | None = None) -> list[list[int]]:
    """The Hessian of ``root`` as node ids, ``H[i][j] = ∂²root/∂wrt[i]∂wrt[j]``.

    Row ``i`` is the reverse-mode gradient of gradient component ``i`` (``grad``, the
    gradient's nodes in ``wrt`` order, if already built).  The upper triangle is
    mirrored, so the result is symmetric node for node.
    """
    if grad is None:
        partials = gradient(graph, root, list(wrt))
        grad = [partials[v] for v in wrt]
    rows = [gradient(graph, d, list(wrt)) for d in grad]
    n = len(wrt)
    return [[rows[min(i, j)][wrt[max(i, j)]] for j in range(n)] for i in range(n)]


def direction_names(variables: Sequence[str]) -> list[str]:
    """Names of the direction variables of a Hessian-vector product: ``x'`` for ``x``.

    The quote cannot occur in a parsed name, so they never collide with a user's variables.
    """
    return [f"{v}'" for v in variables]
