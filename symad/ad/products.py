"""The partials of a product kept as a loop: what each factor's iteration receives.

For ``P = prod(i = lo..hi, f_i)`` the partial along factor ``f_i`` is the product of the other
factors.  Written with loops over the same range, ``Z`` the number of factors equal to 0, ``Q``
the product of the nonzero ones and ``F`` the sum of the zero ones (its value 0, its tangent
theirs)::

    ∂P/∂f_i = P / f_i          where Z = 0              (NaN where P is not a normal double)
            = Q                where Z = 1 and f_i = 0
            = F · (Q / f_i)    where Z = 1 and f_i ≠ 0     (value 0)
            = (F - f_i) · Q    where Z = 2 and f_i = 0     (value 0)
            = 0                otherwise

It is an expression of ``i`` in the same DAG as everything else, so a product's gradient
prints, compiles and differentiates again like any other: the branches are selects, the arm
not taken passes nothing back.  The arms of value 0 carry the tangents that make the next
derivative exact too: a Hessian of a product is exact wherever its factors are, zeros included
(past the second derivative, at factors equal to 0, the form is not; and its diagonal, 0, comes
out as 0 to rounding).  With no factor 0, ``P / f_i`` equals the product of the other factors to
rounding (as PyTorch's ``prod`` computes its gradient; the unrolled form's derivative multiplies
them out in another order) while ``P`` is a normal double; where the product over- or underflows
(or passes through a subnormal, or a factor is inf or NaN) the quotient would be a wrong number,
so the partial is NaN there: write such a product as ``exp(sum(log(...)))`` of its magnitudes.
"""

from __future__ import annotations

import math
import sys
import weakref

from symad.core import binders
from symad.core.dag import Graph

_WEIGHTS: weakref.WeakKeyDictionary[Graph, dict[int, int]] = weakref.WeakKeyDictionary()


def factor_partial(graph: Graph, node: int) -> int:
    """``∂P/∂f_i`` for the ``prod`` binder ``node`` (``P``): a node of its body's scope (an
    expression of the binder's index and of loops over its range), built once per graph."""
    known = _WEIGHTS.setdefault(graph, {})
    if node in known:
        return known[node]
    level, low, high = graph.data[node]  # type: ignore[misc]
    factor = graph.args[node][0]
    make, zero, one = graph.make, graph.const(0.0), graph.const(1.0)

    def over_range(op: str, body: int) -> int:
        return binders.reduce(graph, op, level, low, high, body)

    is_zero = make("eq", factor, zero)
    zeros = over_range("sum", make("where", is_zero, one, zero))  # Z
    nonzero = over_range("prod", make("where", is_zero, one, factor))  # Q
    # F: the sum of the factors equal to 0: its value is 0, its tangent that of those factors
    zero_factors = over_range("sum", make("where", is_zero, factor, zero))
    # A quotient is the product of the other factors only where the product it divides is a normal
    # double: past its ends (or through a subnormal) it is not, and NaN says so rather than a wrong number.
    others = make("where", _normal(graph, node), make("div", node, factor), graph.const(math.nan))
    others_nonzero = make("where", _normal(graph, nonzero), make("div", nonzero, factor), zero)
    if_one = make("where", is_zero, nonzero, make("mul", zero_factors, others_nonzero))
    if_two = make("where", is_zero, make("mul", make("sub", zero_factors, factor), nonzero), zero)
    partial = make("where", make("eq", zeros, zero), others,
                   make("where", make("eq", zeros, one), if_one,
                        make("where", make("eq", zeros, graph.const(2.0)), if_two, zero)))
    known[node] = partial
    return partial


def _normal(graph: Graph, node: int) -> int:
    """Whether ``node``'s value is a normal double (finite, not 0, not subnormal)."""
    size = graph.make("abs", node)
    return graph.make("and", graph.make("ge", size, graph.const(sys.float_info.min)),
                      graph.make("le", size, graph.const(sys.float_info.max)))


def loop_tangent(graph: Graph, node: int, body: int) -> int:
    """The tangent of binder ``node`` given its body's tangent ``body`` (forward mode): the loop of
    the body's tangent for a sum or an each, ``sum(i, ∂P/∂f_i · ḟ_i)`` for a prod."""
    op = graph.op[node]
    level, low, high = graph.data[node]  # type: ignore[misc]
    if op == "prod":
        op, body = "sum", graph.make("mul", factor_partial(graph, node), body)
    return binders.reduce(graph, op, level, low, high, body)
