"""The sweeps over a DAG: which nodes carry derivatives, along which edges, in what order.

Every derivative computation of symad walks these edges, in two places: the one reverse
sweep (:func:`symad.ad.reverse.backward`, from the output down, users in
:func:`canonical_order` reversed) and the one forward sweep (:func:`symad.ad.forward.sweep`,
from the inputs up), whatever flows through them (nodes, numbers, a trace: the algebras of
:mod:`symad.ad.reverse`).  :func:`reverse_nodes` / :func:`forward_nodes` give each
user with the positions ``k`` of its arguments that carry derivatives (what the
hot loops want: no allocation per edge), :func:`reverse_edges` / :func:`forward_edges`
the same as ``(user, k, argument)`` triples.  Iterative, no recursion: DAGs of millions of
nodes are fine."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

from symad.core.dag import Graph
from symad.core.ops import OPS

Ks = tuple[int, ...]  # the positions k of a user's arguments that carry derivatives, ascending
Dead = Mapping[int, Collection[int]]  # user -> the k of its edges whose local partial is the number 0


_COMMUTATIVE = frozenset(name for name, spec in OPS.items() if spec.commutative)


def canonical_order(graph: Graph, roots: Iterable[int]) -> list[int]:
    """Every node the roots depend on, children before parents, in an order that is a function
    of the expressions alone: never of node ids, which depend on what else a graph holds.

    A depth-first post-order from the roots, arguments in their order, a commutative node's
    arguments ordered by height, name and structure (:meth:`Graph.digest`).  The reverse sweep
    visits users in this order reversed, so a node's adjoint adds up its contributions in the
    same order, and gives the same bits, in every graph, thread and process.

    >>> from symad import parse
    >>> e = parse("sin(x) + y")
    >>> [e.graph.op[n] for n in canonical_order(e.graph, [e.id])][-1]
    'add'
    """
    roots = list(roots)
    args_of, op_of = graph.args, graph.op
    height, tied = _heights(graph, roots)
    digest = graph.digests(tied) if tied else {}  # one walk, and only where heights and names tie
    seen = bytearray(len(args_of))
    out: list[int] = []
    add = out.append
    for root in roots:
        stack = [root]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            if node < 0:  # its arguments are done
                add(~node)
                continue
            if seen[node]:
                continue
            seen[node] = 1
            push(~node)
            args = args_of[node]
            if len(args) == 2:
                a, b = args
                # the taller argument first (a chain of sums runs down its spine, as it was written,
                # keeping each term's adjoints next to its values), then a variable by name (x
                # before y), then by structure
                if op_of[node] in _COMMUTATIVE and a != b:
                    ha, hb = height[a], height[b]
                    if ha != hb:
                        swap = hb > ha
                    else:
                        na, nb = _name(graph, a), _name(graph, b)
                        swap = nb < na if na != nb else digest[b] < digest[a]
                    if swap:
                        a, b = b, a
                if not seen[b]:
                    push(b)
                if not seen[a]:
                    push(a)
            else:
                for a in reversed(args):
                    if not seen[a]:
                        push(a)
    return out


def _name(graph: Graph, node: int) -> str:
    """A variable's name, else ``""``: what orders a commutative node's arguments of equal height."""
    return graph.data[node] if graph.op[node] == "var" else ""  # type: ignore[return-value]


def _heights(graph: Graph, roots: list[int]) -> tuple[dict[int, int], list[int]]:
    """Each node's height (the longest path down to a leaf): structural, as a digest is; and the
    arguments of commutative nodes that only a digest orders (equal heights, not variables apart)."""
    args_of, op_of = graph.args, graph.op
    height: dict[int, int] = {}
    tied: list[int] = []
    for node in graph.reachable(roots):  # children first
        args = args_of[node]
        if len(args) == 2:
            a, b = args
            ha, hb = height[a], height[b]
            height[node] = 1 + (ha if ha > hb else hb)
            if ha == hb and a != b and op_of[node] in _COMMUTATIVE and _name(graph, a) == _name(graph, b):
                tied += args
        else:
            height[node] = 1 + max([height[a] for a in args]) if args else 0
    return height, tied


def active(graph: Graph, order: list[int], sources: Collection[int] | None = None,
           dead: Dead | None = None) -> set[int]:
    """Nodes in ``order`` (topological) that depend on a source; ``None``: every variable.

    Only they carry derivatives: an adjoint flows into, and a tangent out of, them only.
    ``dead`` names edges that carry nothing (a partial that is the number 0, as for
    ``sign``): a node reached only through them is not active.
    """
    args_of = graph.args
    found: set[int] = set()
    add, disjoint = found.add, found.isdisjoint
    if sources is None:
        op_of = graph.op
        sources = [n for n in order if op_of[n] == "var"]
    if not isinstance(sources, (set, frozenset, dict)):
        sources = set(sources)
    for node in order:
        if node in sources:
            add(node)
            continue
        args = args_of[node]
        if not args or disjoint(args):
            continue
        ks = dead.get(node) if dead else None
        if ks is None or any(a in found for k, a in enumerate(args) if k not in ks):
            add(node)
    return found


def _users(graph: Graph, order: Iterable[int], live: Collection[int], dead: Dead | None) -> Iterator[tuple[int, Ks]]:
    """``(node, ks)`` for each live node of ``order``: ks the live, not dead, arguments' positions."""
    args_of = graph.args
    dead = dead or {}
    for node in order:
        if node not in live:
            continue
        args = args_of[node]
        if node in dead:
            ks = dead[node]
            yield node, tuple(k for k, a in enumerate(args) if a in live and k not in ks)
        elif len(args) == 2:  # the common case, spelled out (no allocation): this runs once per node
            a, b = args
            yield node, ((0, 1) if b in live else (0,)) if a in live else (1,) if b in live else ()
        elif len(args) == 1:
            yield node, (0,) if args[0] in live else ()
        else:
            yield node, tuple(k for k, a in enumerate(args) if a in live)


def reverse_nodes(graph: Graph, order: list[int], live: Collection[int],
                  dead: Dead | None = None) -> Iterator[tuple[int, Ks]]:
    """Reverse mode: each node of ``live`` from the output down, with its live arguments.

    Yields ``(user, ks)``: the user's arguments ``graph.args[user][k]`` for k in ks
    (ascending) carry its adjoint; leaves come with none.  A consumer that has
    nothing to pass back from a user (a zero adjoint) skips it.
    """
    return _users(graph, reversed(order), live, dead)


def forward_nodes(graph: Graph, order: list[int], live: Collection[int],
                  dead: Dead | None = None) -> Iterator[tuple[int, Ks]]:
    """Forward mode: each node of ``live`` from the inputs up, with its live arguments' positions."""
    return _users(graph, order, live, dead)


def reverse_edges(graph: Graph, root: int, sources: Collection[int] | None = None, *,
                  order: list[int] | None = None,
                  live: Collection[int] | None = None) -> Iterator[tuple[int, int, int]]:
    """The reverse sweep's edges ``(user, k, argument)``, users in reverse topological order.

    ``sources`` are the nodes derivatives are taken with respect to (default: every
    variable); ``order`` and ``live`` may be passed when the caller has them already.

    >>> from symad import parse
    >>> e = parse("x*y + x")
    >>> [(e.graph.op[u], k) for u, k, _ in reverse_edges(e.graph, e.id)]
    [('add', 0), ('add', 1), ('mul', 0), ('mul', 1)]
    """
    if order is None:
        order = canonical_order(graph, [root])
    return _edges(graph, [root], sources, order, live, reverse_nodes)


def forward_edges(graph: Graph, roots: list[int], sources: Collection[int] | None = None, *,
                  order: list[int] | None = None,
                  live: Collection[int] | None = None) -> Iterator[tuple[int, int, int]]:
    """The forward sweep's edges ``(user, k, argument)``, users in topological order."""
    return _edges(graph, roots, sources, order, live, forward_nodes)


def _edges(graph: Graph, roots: list[int], sources: Collection[int] | None, order: list[int] | None,
           live: Collection[int] | None, nodes: Any) -> Iterator[tuple[int, int, int]]:
    if order is None:
        order = graph.reachable(roots)
    if live is None:
        live = active(graph, order, sources)
    args_of = graph.args
    for user, ks in nodes(graph, order, live):
        for k in ks:
            yield user, k, args_of[user][k]
