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
import weakref
from collections.abc import Callable, Collection, Sequence
from typing import Any

from symad.ad import branches, products
from symad.ad.local import local_partials, times
from symad.ad.sweep import Dead, Ks, active, canonical_order, reverse_nodes
from symad.core import binders
from symad.core.dag import BINDERS, SCOPED, Graph
from symad.core.errors import SymadError
from symad.core.gcpause import without_gc
from symad.core.ops import OPS


class Algebra:
    """What flows through the reverse sweep: the operations :func:`backward` calls.

    An algebra gives :meth:`seed`, :meth:`partials`, :meth:`times`, :meth:`select` and
    :meth:`add`; the sweep asks for each user's :meth:`terms` and :meth:`selected`, made of
    them here, which an algebra may do in one step (a recording writes a step of its tape).
    """

    # Called after each user's contributions, or None: (user, its adjoint, the ks it passed along,
    # their terms (None: nothing), its partials (None for a selection), the shape of its adjoint).
    visit: Callable[[int, Any, Ks, list[Any], Sequence[Any] | None, branches.Shape], None] | None = None

    def seed(self) -> Any:
        """The output's adjoint (1)."""
        raise NotImplementedError

    def partials(self, node: int, ks: Ks) -> Sequence[Any]:
        """∂node/∂(argument k) for each k of ``ks``, in this algebra (the number 0: nothing to pass)."""
        raise NotImplementedError

    def times(self, adjoint: Any, partial: Any, shape: branches.Shape) -> Any:
        """``adjoint * partial`` with the strong zero of ``shape`` (:mod:`symad.ad.branches`); None:
        nothing (a partial that is the number 0)."""
        raise NotImplementedError

    def select(self, node: int, k: int, adjoint: Any) -> Any:
        """What ``where`` node ``node`` passes to its arm ``k``: ``adjoint`` where that arm is taken, else 0."""
        raise NotImplementedError

    def add(self, previous: Any, term: Any) -> Any:
        """The sum of two contributions to one adjoint."""
        raise NotImplementedError

    def terms(self, node: int, ks: Ks, adjoint: Any, shape: branches.Shape) -> list[Any]:
        """What ``node`` passes to each argument k of ``ks``: its adjoint times the local partial."""
        partials = self.partials(node, ks)
        terms = [self.times(adjoint, p, shape) for p in partials]
        if self.visit is not None:
            self.visit(node, adjoint, ks, terms, partials, shape)
        return terms

    def selected(self, node: int, ks: Ks, adjoint: Any) -> list[Any]:
        """What ``where`` node ``node`` passes to each of its arms k of ``ks``."""
        terms = [self.select(node, k, adjoint) for k in ks]
        if self.visit is not None:
            self.visit(node, adjoint, ks, terms, None, None)
        return terms


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
    terms_of, selected, add, selects = algebra.terms, algebra.selected, algebra.add, branches.SELECTS
    for node, ks in reverse_nodes(graph, order, live, dead):
        adj = adjoint.get(node)
        if adj is None or not ks:
            continue
        args = args_of[node]
        op = op_of[node]
        if op in selects:  # a selection: the arms get the adjoint selected, the condition nothing
            arms = OPS[op].arms
            ks = tuple(k for k in ks if k in arms)
            terms = selected(node, ks, adj)
        else:
            terms = terms_of(node, ks, adj, shapes.of.get(node) if shapes is not None else None)
        for k, term in zip(ks, terms):
            if term is None:
                continue
            arg = args[k]
            if shapes is not None:
                shapes.pass_on(node, k, arg)
            previous = adjoint.get(arg)
            adjoint[arg] = term if previous is None else add(previous, term)
    return adjoint


class Nodes(Algebra):
    """The symbolic algebra: adjoints are nodes of ``graph`` (the derivative as an expression)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.add = functools.partial(graph.make, "add")  # type: ignore[method-assign]  # no Python frame per sum

    def seed(self) -> int:
        return self.graph.const(1.0)

    def partials(self, node: int, ks: Ks) -> list[int | float]:
        if self.graph.op[node] in SCOPED:
            return scoped_partials(self.graph, node, ks)
        return local_partials(self.graph, node, ks)

    def times(self, adjoint: int, partial: int | float, shape: branches.Shape) -> int | None:
        if shape is not None:
            return branches.strong_times(self.graph, adjoint, partial, shape)
        return times(self.graph, adjoint, partial)

    def terms(self, node: int, ks: Ks, adjoint: int, shape: branches.Shape) -> list[int | None]:
        if shape is not None or self.graph.op[node] in SCOPED:
            return super().terms(node, ks, adjoint, shape)
        g = self.graph
        make, const = g.make, g.const
        out: list[int | None] = []
        for partial in local_partials(g, node, ks):  # times, inlined: this runs once per edge
            if type(partial) is float:
                out.append(None if partial == 0.0 else adjoint if partial == 1.0
                           else make("mul", const(partial), adjoint))
            else:
                out.append(make("mul", adjoint, partial))
        return out

    def select(self, node: int, k: int, adjoint: int) -> int:
        return branches.select(self.graph, node, k, adjoint)


_BODY_ADJOINTS: weakref.WeakKeyDictionary[Graph, dict[int, dict[int, int]]] = weakref.WeakKeyDictionary()


def body_adjoints(graph: Graph, node: int) -> dict[int, int]:
    """For binder ``node``, ``{leaf: ∂node/∂leaf}`` at one iteration, as nodes (expressions of its
    index), for the leaves of its body (its captures and its items) and the loops directly inside
    it: ``∂body/∂leaf`` for a sum or an each, times the product of the other factors for a prod
    (:mod:`symad.ad.products`).  The body's own reverse sweep, done once."""
    done = _BODY_ADJOINTS.setdefault(graph, {})
    known = done.get(node)
    if known is not None:
        return known
    level = graph.data[node][0]  # type: ignore[index]
    body, *caps = graph.args[node]
    sources = {*caps, *binders.items(graph, body, level)}
    order = canonical_order(graph, [body])
    # vectors make the loops inside active, whose own entries take their partials from them
    sources.update(n for n in order if graph.op[n] == "vector")
    # A capture is a leaf here: what it passes to its own arguments (another capture inside it,
    # sin(y) to y) is the outer sweep's business, which sees the sum's partial along it.
    dead = {c: tuple(range(len(graph.args[c]))) for c in caps}
    adjoint = backward(graph, order, body, Nodes(graph), active(graph, order, sources, dead), dead)
    kept = [*sources, *binders.nested(graph, body, level)]  # a loop inside passes on to its own entries
    known = {n: adjoint[n] for n in kept if n in adjoint}
    if graph.op[node] == "prod":  # each iteration's factor passes on the product of the others
        weight = products.factor_partial(graph, node)
        known = {n: graph.make("mul", weight, partial) for n, partial in known.items()}
    done[node] = known
    return known


def scoped_partials(graph: Graph, node: int, ks: Ks) -> list[int | float]:
    """The local partials of an indexed node: an item is a leaf of the sweeps (its vector's
    gradient is gathered from the binders, :mod:`symad.ad.gather`); a sum's or a prod's partial
    along its body is 0 and along a capture ``c`` is ``sum(i, ∂node/∂c at i)``
    (:func:`body_adjoints`)."""
    op = graph.op[node]
    if op not in BINDERS:
        return [0.0 for _ in ks]
    if op == "each":
        raise SymadError("derivatives through each(...) kept as a loop are not supported yet")
    level, low, high = graph.data[node]  # type: ignore[misc]
    inner = body_adjoints(graph, node)
    args = graph.args[node]
    out: list[int | float] = []
    for k in ks:
        partial = inner.get(args[k]) if k else None
        out.append(0.0 if partial is None else binders.reduce(graph, "sum", level, low, high, partial))
    return out


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
