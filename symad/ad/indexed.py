"""Gradients that stay indexed: ∂/∂x of an expression with sums over ``x[i + c]`` as one ``each`` node.

For ``S = sum(i = lo..hi, f(x[i + c1], ..., x[i + cm]))`` the partial along ``x[k]`` gathers
what each reference passes: ``Σ_j ∂f/∂(x[i + cj])`` at ``i = k - cj``, where
``lo <= k - cj <= hi``.  That is ``each(k = ..., Σ_j where(k in range j, term j, 0))``: one
node whose body is a short sum over the references (race-free, vectorisable, printable as
``d/dx[k] = ...`` and differentiable again: its Jacobian is banded with offsets cj - cl).
The partials ``∂f/∂(x[i + cj])`` come from the body's own reverse sweep
(:func:`symad.ad.reverse.body_adjoints`); the sums' adjoints from the one backward sweep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from symad.ad.reverse import Nodes, backward, body_adjoints
from symad.ad.sweep import active, canonical_order
from symad.core import binders
from symad.core.dag import BINDERS, Graph
from symad.core.errors import SymadError
from symad.core.gcpause import without_gc


class VectorPartial(NamedTuple):
    """∂root/∂x[k] for k = low..high: ``node`` is ``each(k = low..high, ...)``."""

    node: int
    low: int
    high: int


@without_gc
def indexed_gradient(graph: Graph, root: int) -> tuple[dict[int, int], dict[str, VectorPartial]]:
    """Reverse mode over an expression with indexed sums: ``({variable node: ∂root/∂variable},
    {vector name: its partials as one each node})``, every partial a node of ``graph``."""
    order = canonical_order(graph, [root])
    op_of, args_of = graph.op, graph.args
    sources = [n for n in order if op_of[n] in ("var", "vector")]
    adjoint = backward(graph, order, root, Nodes(graph), active(graph, order, sources))
    zero = graph.const(0.0)
    scalars = {v: adjoint.get(v, zero) for v in sources if op_of[v] == "var"}
    span = binders.index_span(graph, [root])
    parts: dict[str, list[tuple[int, int, int]]] = {name: [] for name in span}  # name -> (low, high, term)
    k = graph.index(0)
    lv = binders.levels(graph)
    for node in order:
        adj = adjoint.get(node)
        if adj is None or lv[node] >= 0:
            continue
        op = op_of[node]
        if op == "item":  # x[3] outside any loop
            vector, index = args_of[node]
            at = int(graph.data[index])  # type: ignore[arg-type]
            parts[graph.data[vector]].append((at, at, adj))  # type: ignore[index]
        elif op in BINDERS:
            _gather(graph, node, adj, k, parts)
    vectors = {}
    for name, terms in parts.items():
        low, high = span[name]
        vectors[name] = VectorPartial(binders.reduce(graph, "each", 0, low, high, _guarded(graph, k, low, high, terms)),
                                      low, high)
    return scalars, vectors


def _gather(graph: Graph, node: int, adjoint: int, k: int, parts: dict[str, list[tuple[int, int, int]]]) -> None:
    """What binder ``node`` (adjoint ``adjoint``) passes to each vector entry ``x[k]``."""
    level, low, high = graph.data[node]  # type: ignore[misc]
    inner = body_adjoints(graph, node)
    index = graph.index(level)
    for item in binders.items(graph, graph.args[node][0], level):
        partial = inner.get(item)
        if partial is None:
            continue
        vector, at = graph.args[item]
        coef, shift = binders.affine(graph, at)  # type: ignore[misc]
        if set(coef) != {level} or abs(coef[level]) != 1:
            raise SymadError(f"the gradient through {graph.data[vector]}[...] at a stride other than 1 "
                             "is not supported yet")
        a = coef[level]
        # x[a*i + shift] = x[k]  <=>  i = a*(k - shift), for a = ±1
        solved = graph.make("sub", k, graph.const(float(shift)))
        if a < 0:
            solved = graph.make("neg", solved)
        term = binders.substitute(graph, partial, {index: solved})
        lo, hi = sorted((a * low + shift, a * high + shift))
        parts[graph.data[vector]].append((lo, hi, graph.make("mul", adjoint, term)))  # type: ignore[index]


def _guarded(graph: Graph, k: int, low: int, high: int, terms: Sequence[tuple[int, int, int]]) -> int:
    """``Σ where(lo <= k <= hi, term, 0)`` over ``terms``, each guard left out where its range
    covers ``low..high`` on that side."""
    total = None
    zero = graph.const(0.0)
    for lo, hi, term in terms:
        conditions = []
        if lo > low:
            conditions.append(graph.make("le", graph.const(float(lo)), k))
        if hi < high:
            conditions.append(graph.make("le", k, graph.const(float(hi))))
        if lo == hi and (lo > low or hi < high):
            conditions = [graph.make("eq", k, graph.const(float(lo)))]
        if conditions:
            condition = conditions[0] if len(conditions) == 1 else graph.make("and", *conditions)
            term = graph.make("where", condition, term, zero)
        total = term if total is None else graph.make("add", total, term)
    return zero if total is None else total
