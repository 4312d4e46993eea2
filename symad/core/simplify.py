"""Construction-time rewrites, as a table keyed by op name.

Each rule gets the graph and the argument ids (commutative arguments already in
canonical order: a number comes last in a sum, first in a product) and returns an existing node id to use
instead, or None to build the node as asked.  These are the *only* rewrites
symad does (constant folding lives in :meth:`symad.core.dag.Graph.make`):

====== ===================================================================
add    ``a + 0 → a``;  ``a + (-b) → a - b``;  ``a + (-c) → a - c`` (c a positive number);
       ``where(c, a, b) + where(c, d, e) → where(c, a + d, b + e)``
sub    ``a - 0 → a``;  ``0 - a → -a``;  ``a - a → 0``;  ``a - (-b) → a + b``;  ``a - (-c) → a + c``
mul    ``0 * a → 0``;  ``1 * a → a``;  ``-1 * a → -a``
div    ``a / 1 → a``;  ``a / -1 → -a``
pow    ``a ^ 1 → a``;  ``a ^ 0 → 1``
neg    ``-(-a) → a``
where  ``where(c, a, a) → a``;  ``where(c, a, b) → a`` or ``b`` for a number ``c`` (true if not 0)
====== ===================================================================

``0 * a → 0`` and ``a - a → 0`` hold for every finite ``a``; where ``a`` is
inf or nan IEEE arithmetic would give nan instead.  This is the usual choice of
computer algebra systems (SymPy does the same) and is what keeps derivative
DAGs small.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Graph(Protocol):
    """What a rule reads and builds of the DAG (:class:`symad.core.dag.Graph`, which imports this table)."""

    op: list[str]
    args: list[tuple[int, ...]]
    data: list[float | str | None]

    def const(self, value: float) -> int: ...

    def make(self, op: str, *args: int) -> int: ...


Rule = Callable[[Graph, tuple[int, ...]], "int | None"]


# The rules read `op` and `data` themselves (no call per test): they run at every node a parse
# or a gradient builds.
def _add(g: Graph, args: tuple[int, ...]) -> int | None:
    a, b = args  # a number, if any, is b
    op = g.op
    if op[b] == "const":
        value = g.data[b]
        if value == 0.0:
            return a
        if value < 0:  # type: ignore[operator]
            return g.make("sub", a, g.const(-value))  # type: ignore[operator]
    elif op[b] == "neg":
        return g.make("sub", a, g.args[b][0])
    if op[a] == "neg":
        return g.make("sub", b, g.args[a][0])
    if op[a] == "where" and op[b] == "where" and g.args[a][0] == g.args[b][0]:
        (c, t1, e1), (_, t2, e2) = g.args[a], g.args[b]
        return g.make("where", c, g.make("add", t1, t2), g.make("add", e1, e2))
    return None


def _sub(g: Graph, args: tuple[int, ...]) -> int | None:
    a, b = args
    op = g.op
    if op[b] == "const" and g.data[b] == 0.0:
        return a
    if op[a] == "const" and g.data[a] == 0.0:
        return g.make("neg", b)
    if a == b:
        return g.const(0.0)
    if op[b] == "const":
        if g.data[b] < 0:  # type: ignore[operator]
            return g.make("add", a, g.const(-g.data[b]))  # type: ignore[operator]
    elif op[b] == "neg":
        return g.make("add", a, g.args[b][0])
    return None


def _mul(g: Graph, args: tuple[int, ...]) -> int | None:
    a, b = args
    if g.op[a] == "const":
        value = g.data[a]
        if value == 0.0:
            return a
        if value == 1.0:
            return b
        if value == -1.0:
            return g.make("neg", b)
    return None


def _div(g: Graph, args: tuple[int, ...]) -> int | None:
    a, b = args
    if g.op[b] == "const":
        value = g.data[b]
        if value == 1.0:
            return a
        if value == -1.0:
            return g.make("neg", a)
    return None


def _pow(g: Graph, args: tuple[int, ...]) -> int | None:
    a, b = args
    if g.op[b] == "const":
        value = g.data[b]
        if value == 1.0:
            return a
        if value == 0.0:
            return g.const(1.0)
    return None


def _neg(g: Graph, args: tuple[int, ...]) -> int | None:
    (a,) = args
    if g.op[a] == "neg":
        return g.args[a][0]
    return None


def _where(g: Graph, args: tuple[int, ...]) -> int | None:
    c, a, b = args
    if a == b:
        return a
    if g.op[c] == "const":
        return a if g.data[c] != 0.0 else b
    return None


RULES: dict[str, Rule] = {
    "add": _add, "sub": _sub, "mul": _mul, "div": _div, "pow": _pow, "neg": _neg, "where": _where,
}
