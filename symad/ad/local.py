"""Local partials: ∂node/∂argument as nodes of the graph, from the op table's rules.

Both modes multiply them by what flows along an edge (the adjoint in reverse
mode, the tangent in forward mode), so one rule of :mod:`symad.core.ops` serves both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from symad.core.dag import Graph
from symad.core.ops import OPS
from symad.core.ops.arith import difference_error
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
        on_nodes = _ON_NODES.get(rule)
        if on_nodes is not None:
            built = on_nodes(graph, graph.args[node], node)
            if built is not None:
                out.append(built)
                continue
        if wrapped is None:
            wrapped = [Term(graph, a) for a in graph.args[node]]
            wrapped.append(Term(graph, node))
        local = rule(*wrapped)
        out.append(float(local) if isinstance(local, (int, float)) else local.id)
    return out


def _pow_base(graph: Graph, args: tuple[int, ...], node: int) -> int | None:
    """``pow``'s rule along its base for a finite constant exponent ``k`` (the common ``x^2``):
    ``k * a^s`` times ``a^e`` unless ``e`` is +0 (s = k − 1 rounded, e its rounding error)."""
    a, b = args
    if graph.op[b] != "const" or not math.isfinite(graph.data[b]):  # type: ignore[arg-type]
        return None
    fixed = graph.data[b]
    s = fixed - 1.0  # type: ignore[operator]
    make = graph.make
    exponent = graph.const(s)
    # a^1 is a, as make rewrites it, without its lookup and rule (x^2's partial, the commonest)
    power = a if s == 1.0 and graph.op[a] != "const" else make("pow", a, exponent)
    written = make("mul", b, power)
    e = difference_error(fixed, 1.0, s)
    return written if e == 0.0 and math.copysign(1.0, e) > 0 else make("mul", written, make("pow", a, graph.const(e)))


# The rules the gradient meets most, on node ids: each builds the nodes its op table rule builds on
# terms, in the same order, without a Term per argument (or None: that rule builds this one).
# Keyed by the rule itself, so an op defined again with other rules takes them.
_ON_NODES: dict[Callable, Callable[[Graph, tuple[int, ...], int], int | None]] = {
    OPS["mul"].partials[0]: lambda graph, args, node: args[1],
    OPS["mul"].partials[1]: lambda graph, args, node: args[0],
    OPS["exp"].partials[0]: lambda graph, args, node: node,
    OPS["pow"].partials[0]: _pow_base,
}


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
