"""Second derivatives on the DAG: Hessian rows (reverse over reverse) and Hessian-vector
products (forward over reverse), as nodes of the same graph."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from symad.ad.forward import forward
from symad.ad.reverse import gradient
from symad.core.dag import Graph


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
