"""Indexed expressions kept as loops: ``sum``, ``prod`` and ``each`` over an index range, one node each.

Four kinds of node, built by :class:`~symad.core.dag.Graph`'s own methods:

* ``index``: the index a binder runs, named by its nesting level (0: the outermost), not by
  the text's name, so ``sum(i = 1..n, x[i])`` and ``sum(j = 1..n, x[j])`` are one node;
* ``vector``: an indexed variable (or data) ``x`` as a whole;
* ``item``: the entry ``x[e]``, ``e`` an affine expression of indices (``i + 1``, ``2*i - 1``);
* ``sum``/``prod``/``each``: a binder, data ``(level, low, high)``, arguments ``(body, *captures)``.

A binder's *captures* are the largest parts of its body that do not depend on its index (nor
on any index bound inside it): the enclosing scope's nodes the body uses.  The sweeps see a
binder as an operation on its captures (its body is argument 0, along which nothing flows),
so an indexed sum enters reverse mode as one node with one rule: ``∂S/∂c = sum(i, ∂body/∂c)``.
Constants and vectors are never captured: a vector is reached through its items.

Ranges short enough unroll as the text is read (:data:`UNROLL_MAX_TERMS`); longer ones stay
one node whatever their length, so the DAG grows with the text, not with the range: a ``prod``
as a ``sum`` does (its derivative: :mod:`symad.ad.products`).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Container, Iterable, Mapping, Sequence

from symad.core import names
from symad.core.dag import BINDERS, SCOPED, Graph
from symad.core.errors import SymadError

# A sum stays one node (a loop) past this many terms, or when writing it out would take more than
# UNROLL_MAX_STEPS tokens (its terms times its body's length).  Measured by
# `python -m benchmarks.indexed.unrolling` (benchmarks/indexed/unrolling.json: the same text as a loop
# and written out, n = 10 ... 10^4, in fresh processes): the first value and gradient is cheaper as
# a loop from about a hundred terms on (written out, LLVM compiles every term: 2.4x at n = 1000 for
# Rosenbrock, 6x for a body of a dozen functions at 1000); a call, written out, is cheaper for short
# programs (Rosenbrock up to 300 terms about 2x; its gradient as a loop evaluates each partial once
# per entry that reads it), and dearer past a few thousand operations (-O2 code of a long program
# arrives late or never: Rosenbrock at 1000 terms 1.5x the loop's call in the first seconds).  The
# written-out calls win up to about 10^4 tokens whatever the body (Rosenbrock 300 terms of 33
# tokens, the long body 100 of 90); a body of a few tokens still stays a loop past 300 terms,
# where the loop's vectorised call has caught up.
UNROLL_MAX_TERMS = 300
UNROLL_MAX_STEPS = 10_000
# Inside a loop's body a sum stays a loop past this many terms: the body is compiled once, and
# a short sum written out there (three coordinates) is what code generation wants.
UNROLL_INSIDE_LOOP = 16
# Binders nest at most this deep (their rules recurse once per level).
MAX_NESTING = 8

_EMPTY = {"sum": 0.0, "prod": 1.0}
_levels: weakref.WeakKeyDictionary[Graph, list[int]] = weakref.WeakKeyDictionary()


def levels(graph: Graph) -> list[int]:
    """Per node, the deepest index level it depends on freely (-1: none), kept up to date."""
    known = _levels.get(graph)
    if known is None:
        known = _levels[graph] = []
    op_of, args_of, data_of = graph.op, graph.args, graph.data
    for node in range(len(known), len(op_of)):
        op = op_of[node]
        if op == "index":
            known.append(data_of[node])  # type: ignore[arg-type]
            continue
        args = args_of[node]
        if op in BINDERS:
            args = args[1:]  # the body's own index is bound here
        known.append(max((known[a] for a in args), default=-1))
    return known


def scope_nodes(graph: Graph, root: int, expand: Callable[[int], bool]) -> list[int]:
    """The nodes ``root`` reaches in its own scope, in topological order: the walk enters a loop's
    captures, never its body (the loop's own business), and the arguments of a node only where
    ``expand(node)``; the nodes not expanded are in the list too (the scope's frontier)."""
    op_of, args_of = graph.op, graph.args
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if expand(node):
            args = args_of[node]
            stack.extend(args[1:] if op_of[node] in BINDERS else args)
    return sorted(seen)


def has_scoped(graph: Graph, roots: Iterable[int]) -> bool:
    """Whether the roots use any indexed node (a binder, an item, an index)."""
    if not graph.scoped:
        return False
    return any(graph.op[n] in SCOPED for n in graph.reachable(roots))


def refuse(graph: Graph, roots: Iterable[int], what: str, instead: str = "") -> None:
    """Raise a SymadError if the roots have a sum kept as a loop, which ``what`` does not take yet;
    ``instead`` says what to do (default: which entry points take loops)."""
    roots = list(roots)
    if graph.scoped and has_scoped(graph, roots):
        instead = instead or "symad.compile, grad, eval and diff take them, or write the sum shorter"
        raise SymadError(f"{what} does not support sums kept as loops yet (a sum stays a loop past "
                         f"{UNROLL_MAX_TERMS:,} terms or {UNROLL_MAX_STEPS:,} written-out steps): {instead}")


def is_binder(graph: Graph, node: int) -> bool:
    return graph.op[node] in BINDERS


def range_of(graph: Graph, node: int) -> tuple[int, int, int]:
    """A binder's ``(level, low, high)``."""
    return graph.data[node]  # type: ignore[return-value]


def body_of(graph: Graph, node: int) -> int:
    return graph.args[node][0]


def reduce(graph: Graph, op: str, level: int, low: int, high: int, body: int) -> int:
    """The binder ``op`` (``sum``, ``prod`` or ``each``) of ``body`` over ``index(level) = low..high``.

    An empty ``sum`` is 0 and an empty ``prod`` 1; a body that does not depend on the index is
    hoisted (``n*body``, ``body^n``)."""
    if op not in BINDERS:
        raise SymadError(f"unknown binder {op!r}")
    lv = levels(graph)
    if op in _EMPTY:
        if low > high:
            return graph.const(_EMPTY[op])
        if lv[body] < level:
            count = graph.const(float(high - low + 1))
            return graph.make("mul", count, body) if op == "sum" else graph.make("pow", body, count)
    caps = captures(graph, body, level)
    # A binder's level is one past the deepest index its captures use: a loop that does not use
    # the loops around it is the same node as the one written outside them.
    lowest = 1 + max((lv[c] for c in caps), default=-1)
    if lowest < level:
        body = substitute(graph, body, {graph.index(level): graph.index(lowest)})
        level = lowest
        caps = captures(graph, body, level)
    return graph.bind(op, level, low, high, body, caps)


def captures(graph: Graph, body: int, level: int) -> list[int]:
    """The largest parts of ``body`` that do not depend on indices of ``level`` or deeper,
    constants and vectors left out, in an order fixed by their structure."""
    lv, op_of = levels(graph), graph.op
    found = [n for n in scope_nodes(graph, body, lambda n: lv[n] >= level)
             if lv[n] < level and op_of[n] != "const" and op_of[n] != "vector"]
    return sorted(found, key=lambda n: (graph.digest(n), n))


def affine(graph: Graph, node: int) -> tuple[dict[int, int], int] | None:
    """``node`` as ``(coefficients by index level, constant)`` with whole numbers, or None
    when it is not an affine expression of indices."""
    op_of, args_of, data_of = graph.op, graph.args, graph.data
    out: dict[int, tuple[dict[int, int], int] | None] = {}
    for n in graph.reachable([node]):
        op = op_of[n]
        a = [out.get(x) for x in args_of[n]]
        if op == "const":
            v = data_of[n]
            out[n] = ({}, int(v)) if math.isfinite(v) and v == int(v) else None  # type: ignore[arg-type]
        elif op == "index":
            out[n] = ({data_of[n]: 1}, 0)  # type: ignore[dict-item]
        elif op in ("add", "sub") and None not in a:
            sign = 1 if op == "add" else -1
            (ca, ka), (cb, kb) = a  # type: ignore[misc]
            coef = dict(ca)
            for lvl, c in cb.items():
                coef[lvl] = coef.get(lvl, 0) + sign * c
            out[n] = ({k: c for k, c in coef.items() if c}, ka + sign * kb)
        elif op == "neg" and None not in a:
            (ca, ka), = a  # type: ignore[misc]
            out[n] = ({k: -c for k, c in ca.items()}, -ka)
        elif op == "mul" and None not in a and (not a[0][0] or not a[1][0]):  # type: ignore[index]
            (ca, ka), (cb, kb) = a  # type: ignore[misc]
            scale, (coef, k) = (ka, (cb, kb)) if not ca else (kb, (ca, ka))
            out[n] = ({lvl: c * scale for lvl, c in coef.items() if c * scale}, k * scale)
        else:
            out[n] = None
    return out[node]


def item(graph: Graph, vector: int, *indices: int) -> int:
    """The entry ``vector[indices]`` with each index in its normal affine form (``a*i + b``), so
    that ``x[i + 1]``, ``x[1 + i]`` and ``x[i - 1 + 2]`` are one node."""
    return graph.item(vector, *(_normal_index(graph, index) for index in indices))


def _normal_index(graph: Graph, index: int) -> int:
    form = affine(graph, index)
    if form is None:
        raise SymadError("an index must be an affine expression of indices")
    coef, shift = form
    node = None
    for level in sorted(coef):
        a = coef[level]
        term = graph.index(level)
        if a == -1:
            node = graph.make("sub", node, term) if node is not None else graph.make("neg", term)
            continue
        if a != 1:
            term = graph.make("mul", graph.const(float(a)), term)
        node = term if node is None else graph.make("add", node, term)
    if node is None:
        return graph.const(float(shift))
    if shift:
        node = graph.make("add" if shift > 0 else "sub", node, graph.const(float(abs(shift))))
    return node


def substitute(graph: Graph, root: int, mapping: Mapping[int, int]) -> int:
    """``root`` with every free occurrence of a node of ``mapping`` replaced by its image, all at
    once.  A loop inside is rebuilt around its body: the indices it binds are never replaced, and
    it takes the level one past the deepest index its new captures use, so an image's index is
    never captured by it (``sum(j, x[j]*y[i])`` with i -> j becomes ``sum(k, x[k]*y[j])``)."""
    op_of, args_of, data_of = graph.op, graph.args, graph.data
    done: dict[int, int] = {}
    for node in scope_nodes(graph, root, lambda n: n not in mapping):
        image = mapping.get(node)
        if image is not None:
            done[node] = image
            continue
        args = args_of[node]
        op = op_of[node]
        if op in BINDERS:
            level, low, high = data_of[node]  # type: ignore[misc]
            body, *caps = args
            new_caps = [done[c] for c in caps]
            lv = levels(graph)
            new_level = 1 + max((lv[c] for c in new_caps), default=-1)
            inner = {k: v for k, v in mapping.items() if not (op_of[k] == "index" and data_of[k] >= level)}  # type: ignore[operator]
            inner.update(zip(caps, new_caps))
            inner[graph.index(level)] = graph.index(new_level)
            done[node] = reduce(graph, op, new_level, low, high, substitute(graph, body, inner))
            continue
        new = tuple(done[a] for a in args)
        if new == args:
            done[node] = node
        elif op == "item":
            done[node] = item(graph, new[0], *new[1:])
        else:
            done[node] = graph.build(op, data_of[node], new)
    return done[root]


def items(graph: Graph, body: int, level: int) -> list[int]:
    """The ``item`` nodes of ``body`` whose index depends on ``level``, in id order; the walk
    does not enter nested binders (their items are theirs: :func:`nested`)."""
    return _inside(graph, body, level)[0]


def nested(graph: Graph, body: int, level: int) -> list[int]:
    """The binders directly inside ``body`` (of a binder of ``level``), in id order."""
    return _inside(graph, body, level)[1]


def _inside(graph: Graph, body: int, level: int) -> tuple[list[int], list[int]]:
    lv = levels(graph)
    op_of, args_of = graph.op, graph.args
    found: list[int] = []
    loops: list[int] = []
    seen: set[int] = set()
    stack = [body]
    while stack:
        node = stack.pop()
        if node in seen or lv[node] < level:
            continue
        seen.add(node)
        op = op_of[node]
        if op == "item":
            found.append(node)
        elif op in BINDERS:
            loops.append(node)
            stack.extend(args_of[node][1:])
        else:
            stack.extend(args_of[node])
    return sorted(found), sorted(loops)


def looped_vectors(graph: Graph, nodes: Iterable[int]) -> set[str]:
    """The names of the vectors with an entry at a loop's index among ``nodes``."""
    lv, op_of, args_of, data_of = levels(graph), graph.op, graph.args, graph.data
    return {data_of[args_of[n][0]] for n in nodes if op_of[n] == "item" and lv[n] >= 0}  # type: ignore[misc]


def entries_of(graph: Graph, roots: Sequence[int], bases: Container[str]) -> list[int]:
    """The roots with each variable ``x[k]`` whose base ``x`` is in ``bases`` read as the entry ``k``
    of the vector ``x``: one variable, not two (``x[3]`` beside a loop over ``x[i]``)."""
    op_of, data_of = graph.op, graph.data
    mapping = {}
    for n in graph.reachable(roots):
        parts = names.split(data_of[n]) if op_of[n] == "var" else None  # type: ignore[arg-type]
        if parts and parts[0] in bases:
            mapping[n] = graph.item(graph.vector(parts[0]), graph.const(parts[1]))
    return [substitute(graph, r, mapping) for r in roots] if mapping else list(roots)


def index_names(taken: Iterable[str], count: int) -> list[str]:
    """Names for index levels ``0..count-1`` that no variable uses: i, j, k, l, m, p, q, then i1, i2..."""
    taken = set(taken)
    out: list[str] = []
    candidates = iter([*"ijklmpq", *(f"i{n}" for n in range(1, 10_000))])
    while len(out) < count:
        name = next(candidates)
        if name not in taken:
            out.append(name)
    return out


def vectors(graph: Graph, roots: Iterable[int]) -> list[str]:
    """The names of the vectors the roots use, sorted."""
    return sorted({graph.data[n] for n in graph.reachable(roots) if graph.op[n] == "vector"})  # type: ignore[misc]


def index_span(graph: Graph, roots: Sequence[int]) -> dict[str, list[tuple[int, int]]]:
    """Per vector, the smallest and largest index its items reach in each dimension over the
    ranges of the loops around them (the vector's domain: it covers every index in between)."""
    op_of, args_of, data_of = graph.op, graph.args, graph.data
    span: dict[str, list[tuple[int, int]]] = {}

    def reach(node: int, bounds: Mapping[int, tuple[int, int]]) -> None:
        name = data_of[args_of[node][0]]
        reached = []
        for at in args_of[node][1:]:
            coef, lo = affine(graph, at)  # type: ignore[misc]
            hi = lo
            for level, c in coef.items():
                low, high = bounds[level]
                lo += min(c * low, c * high)
                hi += max(c * low, c * high)
            reached.append((lo, hi))
        old = span.get(name)  # type: ignore[arg-type]
        if old is None:
            span[name] = reached  # type: ignore[index]
        elif len(old) != len(reached):
            raise SymadError(f"{name} is used with {len(old)} and with {len(reached)} indices")
        else:
            span[name] = [(min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(old, reached)]  # type: ignore[index]

    lv = levels(graph)
    for n in graph.reachable(roots):
        if op_of[n] == "item" and lv[n] < 0:
            reach(n, {})
    todo: list[tuple[int, dict[int, tuple[int, int]]]] = [
        (n, {}) for n in graph.reachable(roots) if op_of[n] in BINDERS and lv[n] < 0]
    while todo:
        loop, bounds = todo.pop()
        level, low, high = data_of[loop]  # type: ignore[misc]
        inner = {**bounds, level: (low, high)}
        body = args_of[loop][0]
        found, loops = _inside(graph, body, level)
        for it in found:
            reach(it, inner)
        todo.extend((n, inner) for n in loops)
    return span
