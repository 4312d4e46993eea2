"""Reverse mode, written once: the backward sweep, and the gradient as nodes of the graph.

:func:`backward` passes adjoints from the output down the sweep of :mod:`symad.ad.sweep`,
whatever they are: the sweep only decides which edges carry what, in which order, and
where a branch's strong zero applies (:mod:`symad.ad.branches`); an *algebra* says what
an adjoint is and how to seed, multiply, select and add them:

* :class:`Nodes` (here): adjoints are nodes of the graph, the gradient an expression
  (:func:`gradient`) that can be printed, compiled and differentiated again;
* :mod:`symad.ad.numbers`: numbers, the sweep recorded once as flat steps and run at points
  (the tape of :mod:`symad.backends.tape`), or run eagerly at one point;
* :mod:`symad.ad.trace`: a wrapper recording every step of another algebra (``explain``, the
  pictures).

A ``where`` passes its adjoint into the arm it takes only, and what flows on from there
has a strong zero: the arm not taken contributes 0, never ``0 * inf``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol

from symad.ad import branches
from symad.ad.local import local_partials
from symad.ad.sweep import Dead, Ks, active, canonical_order, reverse_nodes
from symad.core.gcpause import without_gc
from symad.core.graph import Graph
from symad.core.ops import OPS


class Algebra(Protocol):
    """What flows through the reverse sweep: the operations :func:`backward` calls."""

    def seed(self) -> Any:
        """The output's adjoint (1)."""

    def partials(self, node: int, ks: Ks) -> Sequence[Any]:
        """∂node/∂(argument k) for each k of ``ks``, in this algebra (a number 0 carries nothing)."""

    def times(self, adjoint: Any, partial: Any, shape: branches.Shape) -> Any:
        """``adjoint * partial`` with the strong zero of ``shape``; None where it is nothing."""

    def select(self, node: int, k: int, adjoint: Any) -> Any:
        """What ``where`` node ``node`` passes to its arm ``k``: ``adjoint`` where that arm is taken, else 0."""

    def add(self, previous: Any, term: Any) -> Any:
        """The sum of two contributions to one adjoint."""

    # Called after each user's contributions, or None: (user, its adjoint, the ks it passed along,
    # their terms (None: nothing), the shape of its adjoint).  The recording algebras use it.
    visit: Callable[[int, Any, Ks, list[Any], branches.Shape], None] | None


def backward(graph: Graph, order: list[int], root: int, algebra: Algebra,
             live: Collection[int], dead: Dead | None = None) -> dict[int, Any]:
    """The reverse sweep: ``{node: adjoint}`` for every node the output's adjoint reaches.

    ``order`` is :func:`canonical_order` of the root, ``live`` the nodes that carry adjoints
    (:func:`symad.ad.sweep.active`), ``dead`` edges known to carry nothing.  Users are visited
    in ``order`` reversed, so a node's contributions are added in an order fixed by the
    expression's structure: the same bits in every graph and every algebra.
    """
    adjoint: dict[int, Any] = {root: algebra.seed()}
    # the shapes of adjoints that come through a branch (none to track without a `where`)
    shapes = branches.Shapes(graph) if branches.any_branch(graph, order) else None
    args_of, op_of = graph.args, graph.op
    partials, times, select, add, visit = algebra.partials, algebra.times, algebra.select, algebra.add, algebra.visit
    for node, ks in reverse_nodes(graph, order, live, dead):
        adj = adjoint.get(node)
        if adj is None or not ks:
            continue
        args = args_of[node]
        own = shapes.of.get(node) if shapes is not None else None
        arms = OPS[op_of[node]].arms
        if arms:  # a selection: the arms get the adjoint selected, the condition nothing
            ks = tuple(k for k in ks if k in arms)
            terms = [select(node, k, adj) for k in ks]
        else:
            terms = [times(adj, p, own) for p in partials(node, ks)]
        for k, term in zip(ks, terms):
            if term is None:
                continue
            arg = args[k]
            if shapes is not None:
                shapes.pass_on(node, k, arg)
            previous = adjoint.get(arg)
            adjoint[arg] = term if previous is None else add(previous, term)
        if visit is not None:
            visit(node, adj, ks, terms, own)
    return adjoint


class Nodes:
    """The symbolic algebra: adjoints are nodes of ``graph`` (the derivative as an expression)."""

    visit = None

    def __init__(self, graph: Graph):
        self.graph = graph
        self.add = functools.partial(graph.make, "add")  # no Python frame per sum

    def seed(self) -> int:
        return self.graph.const(1.0)

    def partials(self, node: int, ks: Ks) -> list[int | float]:
        return local_partials(self.graph, node, ks)

    def times(self, adjoint: int, partial: int | float, shape: branches.Shape) -> int | None:
        if shape is not None:
            return branches.strong_times(self.graph, adjoint, partial, shape)
        if type(partial) is float:  # local.times, inlined: this runs once per edge
            if partial == 0.0:
                return None
            return adjoint if partial == 1.0 else self.graph.make("mul", self.graph.const(partial), adjoint)
        return self.graph.make("mul", adjoint, partial)  # type: ignore[arg-type]

    def select(self, node: int, k: int, adjoint: int) -> int:
        return branches.select(self.graph, node, k, adjoint)


@without_gc
def gradient(graph: Graph, root: int, wrt: list[int] | None = None) -> dict[int, int]:
    """Reverse mode: ``{variable node: ∂root/∂variable}`` in one backward sweep, as nodes.

    A node used by several parents receives the sum of their adjoint contributions, added in
    the canonical order (:func:`canonical_order`), so the gradient's bits are a function of the
    expression alone, whatever else the graph holds.

    >>> from symad import parse
    >>> from symad.core.printing import to_infix
    >>> e = parse("x*y + x")
    >>> {e.graph.data[v]: to_infix(e.graph, d) for v, d in gradient(e.graph, e.id).items()}
    {'y': 'x', 'x': 'y + 1'}
    """
    order = canonical_order(graph, [root])
    adjoint = backward(graph, order, root, Nodes(graph), active(graph, order))
    if wrt is None:
        wrt = [n for n in order if graph.op[n] == "var"]
    zero = graph.const(0.0)
    return {v: adjoint.get(v, zero) for v in wrt}
