"""The sweeps step by step: a wrapper recording what another algebra does, edge by edge.

``explain``'s tables and the pictures show each step of a sweep: the values, each user's
adjoint (or each node's tangent), the local partial of each edge, its contribution, and the
sum a shared node collects.  They do not walk the graph themselves: :func:`reverse` and
:func:`forward` run the one reverse sweep (:func:`symad.ad.reverse.backward`) and the one
forward sweep (:func:`symad.ad.forward.sweep`) on numbers at a point
(:class:`symad.ad.numbers.Numbers`, the tape's arithmetic) wrapped in :class:`Traced`, so
what they show is what the gradient computes, bit for bit.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from symad.ad import branches
from symad.ad.forward import ForwardAlgebra
from symad.ad.forward import sweep as forward_sweep
from symad.ad.numbers import Numbers
from symad.ad.reverse import Algebra, backward
from symad.ad.sweep import Ks, active, canonical_order
from symad.core.dag import Graph
from symad.core.semantics import numpy


@dataclass
class Edge:
    """One step along an edge: ``user``'s argument ``k`` (node ``arg``)."""

    user: int
    k: int
    arg: int
    factor: float  # what flows in: the user's adjoint (reverse), the argument's tangent (forward)
    partial: float  # ∂user/∂arg at the point
    term: float | None  # the contribution (None: nothing, the partial being the number 0)
    blocked: bool  # through a branch not taken, or a zero adjoint from one: contributes 0


@dataclass
class Trace:
    """A sweep at a point: each node's value and derivative, and every edge in sweep order."""

    order: list[int]  # the canonical order: the nodes, children before parents
    values: dict[int, float]
    derivative: dict[int, float]  # adjoint (reverse) or tangent (forward) of each node reached
    edges: list[Edge]

    def incoming(self, node: int, reverse: bool = True) -> list[Edge]:
        """The edges whose contributions ``node``'s derivative adds up, in the order added."""
        return [e for e in self.edges if (e.arg if reverse else e.user) == node]


class Traced(Algebra, ForwardAlgebra):
    """Any algebra, with every step it takes recorded: ``(user, its adjoint, ks, terms,
    partials (None for a selection), shape)``."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.seed, self.partials, self.times = inner.seed, inner.partials, inner.times  # type: ignore[method-assign]
        self.select, self.add = inner.select, inner.add  # type: ignore[method-assign]
        self.kept = getattr(inner, "kept", None)  # forward mode's
        self.steps: list[tuple[int, Any, Ks, list[Any], Any, branches.Shape]] = []

    def visit(self, node: int, factor: Any, ks: Ks, terms: list[Any], partials: Any,  # type: ignore[override]
              shape: branches.Shape) -> None:
        self.steps.append((node, factor, ks, terms, partials, shape))


def reverse(graph: Graph, root: int, point: Mapping[str, float] | None,
            sources: Collection[int] | None = None) -> Trace:
    """The reverse sweep of ``root`` at ``point`` (every variable's value), step by step.

    ``sources``: the nodes derivatives are taken with respect to (default: every variable).
    Without a point the steps are those of any point (which edges carry what is a matter of
    structure), at every variable 1, and only branches' verdicts mean nothing.
    """
    order = canonical_order(graph, [root])
    if point is None:
        point = {str(graph.data[n]): 1.0 for n in order if graph.op[n] == "var"}
    numbers = Numbers(graph, order, point)
    traced = Traced(numbers)
    live = active(graph, order, sources)
    with numpy().errstate(all="ignore"):
        adjoint = backward(graph, order, root, traced, live)
        # the seed of a root that depends on no source is no adjoint to show
        return _reverse_trace(graph, order, numbers, traced, {n: a for n, a in adjoint.items() if n in live})


def _reverse_trace(graph: Graph, order: list[int], numbers: Numbers, traced: Traced,
                   adjoint: dict[int, Any]) -> Trace:
    values = numbers.values
    edges = []
    for node, adj, ks, terms, partials, shape in traced.steps:
        args = graph.args[node]
        for j, (k, term) in enumerate(zip(ks, terms)):
            if partials is None:  # a selection: the adjoint, where this arm is taken
                taken = branches.arm_taken(graph, node, k, values)
                edges.append(Edge(node, k, args[k], float(adj), 1.0 if taken else 0.0, float(term), not taken))
                continue
            partial = numbers.value(partials[j])
            blocked = shape is not None and not branches.passes(shape, adj, values)
            edges.append(Edge(node, k, args[k], float(adj), float(partial),
                              None if term is None else float(term), blocked))
    return Trace(order, {n: float(v) for n, v in values.items()},
                 {n: float(a) for n, a in adjoint.items()}, edges)


def forward(graph: Graph, root: int, point: Mapping[str, float], direction: Mapping[str, float]) -> Trace:
    """The forward sweep of ``root`` at ``point`` along ``direction`` (a number per variable name,
    missing ones 0), step by step."""
    order = canonical_order(graph, [root])
    numbers = Numbers(graph, order, point)
    traced = Traced(_NumberTangents(numbers, graph, direction))
    sources = {n for n in order if graph.op[n] == "var" and direction.get(str(graph.data[n]), 0.0) != 0.0}
    with numpy().errstate(all="ignore"):
        tangent = forward_sweep(graph, order, active(graph, order, sources), traced)
        return _forward_trace(graph, order, numbers, traced, tangent)


def _forward_trace(graph: Graph, order: list[int], numbers: Numbers, traced: Traced,
                   tangent: dict[int, Any]) -> Trace:
    values = numbers.values
    edges = []
    for node, _, ks, terms, partials, _shape in traced.steps:
        args = graph.args[node]
        for j, (k, term) in enumerate(zip(ks, terms)):
            factor = float(tangent[args[k]])
            if partials is None:  # a selection: the arm's tangent, where this arm is taken
                taken = branches.arm_taken(graph, node, k, values)
                edges.append(Edge(node, k, args[k], factor, 1.0 if taken else 0.0, factor if taken else 0.0, not taken))
                continue
            partial = numbers.value(partials[j])
            edges.append(Edge(node, k, args[k], factor, float(partial), None if term is None else float(term), False))
    return Trace(order, {n: float(v) for n, v in values.items()}, {n: float(t) for n, t in tangent.items()}, edges)


class _NumberTangents(ForwardAlgebra):
    """The numeric algebra of forward mode at a point: a tangent is a number."""

    def __init__(self, numbers: Numbers, graph: Graph, direction: Mapping[str, float]):
        self.numbers, self.graph, self.direction = numbers, graph, direction
        self.partials = numbers.partials

    def seed(self, node: int) -> float | None:
        return float(self.direction.get(str(self.graph.data[node]), 0.0)) or None  # 0: nothing

    def times(self, tangent: Any, partial: Any) -> Any:
        return None if type(partial) is float and partial == 0.0 else tangent * self.numbers.value(partial)

    def select(self, node: int, arms: list[Any]) -> Any:
        cond = self.numbers.values[self.graph.args[node][0]]
        taken = arms[0] if cond != 0.0 else arms[1]
        return 0.0 if taken is None else taken

    def add(self, previous: Any, term: Any) -> Any:
        return previous + term

    def kept(self, tangent: Any) -> Any:
        return tangent
