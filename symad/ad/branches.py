"""Branches in reverse mode: the adjoint flows only into the arm ``where`` takes.

Every AD system users know differentiates ``where(x > 0, sqrt(x), 0)`` at ``x = 0``
into ``nan``: the arm not taken gets a zero adjoint, and ``0 * inf`` (the partial of
``sqrt`` at 0) is ``nan``.  symad never multiplies such a zero: the adjoint of an arm
is ``where(c, adjoint, 0)``, a selection, and a node whose adjoint comes through a
branch passes it on with a *strong zero*: where the branch is not taken, its
contribution is 0, whatever the local partial is (inf, nan).

Each node's adjoint has a :data:`Shape`, known from the graph's structure alone, so the
symbolic algebra (:class:`symad.ad.reverse.Nodes`) and the numeric one (:mod:`symad.ad.numbers`)
take the same decisions in the one sweep and compute the same bits:

* ``None``: an ordinary adjoint, multiplied by partials as IEEE arithmetic does;
* :class:`Select`: the adjoint is ``where(cond, inner, 0)`` (or ``where(cond, 0, inner)``),
  ``inner`` shaped ``Select.inner``; times a partial ``p`` it is
  ``where(cond, inner ⊙ p, 0)``, the selection pushed outward, so a derivative prints
  as the branch it is (``where(x > 0, 0.5/sqrt(x), 0)``);
* :data:`GENERAL`: a sum with a branch's adjoint in it; times ``p`` it is
  ``where(adjoint != 0, adjoint*p, 0)``, a zero adjoint contributing 0 (times a number,
  which cannot be inf or nan, it is the plain product).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Union

from symad.ad.local import times
from symad.core.dag import Graph
from symad.core.ops import OPS


@dataclass(frozen=True)
class Select:
    """An adjoint that is ``inner`` where the branch of ``cond`` is taken, else 0."""

    cond: int  # the condition's node
    then: bool  # taken where cond is true (the `then` arm), or where it is 0 (the `else` arm)
    inner: Shape


GENERAL = "general"
Shape = Union[Select, str, None]  # noqa: UP007 (a runtime alias)


def arm_shape(graph: Graph, user: int, k: int, user_shape: Shape) -> Select:
    """The shape of what ``where`` node ``user`` passes to its argument ``k`` (an arm)."""
    return Select(graph.args[user][0], k == 1, user_shape)


def merged(first: Shape, second: Shape) -> Shape:
    """The shape of the sum of two contributions: a selection by one condition stays one."""
    if first is None and second is None:
        return None
    if isinstance(first, Select) and isinstance(second, Select) \
            and (first.cond, first.then) == (second.cond, second.then):
        return Select(first.cond, first.then, merged(first.inner, second.inner))
    return GENERAL


def select(graph: Graph, user: int, k: int, adjoint: int) -> int:
    """What ``where`` node ``user`` passes to its arm ``k``: its adjoint where that arm is taken."""
    zero = graph.const(0.0)
    cond = graph.args[user][0]
    return graph.make("where", cond, adjoint, zero) if k == 1 else graph.make("where", cond, zero, adjoint)


def strong_times(graph: Graph, adjoint: int, local: int | float, shape: Shape) -> int | None:
    """``adjoint * local`` with the strong zero of ``shape`` (None where it is the number 0)."""
    peeled: list[tuple[int, bool]] = []
    node = adjoint
    while isinstance(shape, Select):
        if graph.op[node] != "where" or graph.args[node][0] != shape.cond:
            shape = GENERAL  # the graph simplified the selection: keep its strong zero whole
            break
        peeled.append((shape.cond, shape.then))
        node = graph.args[node][1 if shape.then else 2]
        shape = shape.inner
    if isinstance(local, float) and local == 0.0:
        return None
    zero = graph.const(0.0)
    # Nothing to guard: an ordinary adjoint, a number times a zero adjoint (0), or an adjoint
    # that is a number (zero or not, it is known here).
    if shape is None or isinstance(local, float) or graph.op[node] == "const":
        out = times(graph, node, local)
    else:
        factor = graph.const(local) if isinstance(local, float) else local
        out = graph.make("where", graph.make("ne", node, zero), graph.make("mul", node, factor), zero)
    if out is None:
        return None
    for cond, then in reversed(peeled):
        out = graph.make("where", cond, out, zero) if then else graph.make("where", cond, zero, out)
    return out


def passes(shape: Shape, adjoint: float, value_of: Mapping[int, float]) -> bool:
    """Whether an adjoint of ``shape`` (its value ``adjoint``) passes anything on, at a point
    whose node values ``value_of`` holds: every branch of it taken, and for a sum, not 0."""
    while isinstance(shape, Select):
        if (value_of[shape.cond] != 0.0) != shape.then:
            return False
        shape = shape.inner
    return not (shape is GENERAL and adjoint == 0.0)


def arm_taken(graph: Graph, user: int, k: int, value_of: Mapping[int, float]) -> bool:
    """Whether ``where`` node ``user`` takes its arm ``k`` at a point (node values ``value_of``)."""
    return (value_of[graph.args[user][0]] != 0.0) == (k == 1)


SELECTS = frozenset(name for name, spec in OPS.items() if spec.arms)


def any_branch(graph: Graph, order: list[int]) -> bool:
    """Whether any node of ``order`` selects (a ``where``): else every adjoint is ordinary, and a
    sweep need not track shapes at all."""
    op_of = graph.op
    return any(op_of[n] in SELECTS for n in order)


class Shapes:
    """The shape of each node's adjoint in a reverse sweep, recorded edge by edge as the
    sweep passes contributions (users before their arguments, as every sweep visits them)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.of: dict[int, Shape] = {}
        self._reached: set[int] = set()

    def pass_on(self, user: int, k: int, arg: int) -> Shape:
        """Record the contribution of ``user``'s argument ``k`` (node ``arg``); its shape."""
        own = self.of.get(user)
        spec = OPS.get(self.graph.op[user])  # an indexed node (a sum over a loop) has no arms
        new = arm_shape(self.graph, user, k, own) if spec is not None and k in spec.arms else own
        if arg in self._reached:
            shape = merged(self.of.get(arg), new)
            if shape is not None:
                self.of[arg] = shape
        else:
            self._reached.add(arg)
            if new is not None:
                self.of[arg] = new
        return new
