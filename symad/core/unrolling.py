"""Sums built whole, then written out where the text would write them out: the graph side of
:mod:`symad.symbolic_array`.

The text decides, as it reads a sum, whether to keep it as a loop (:mod:`symad.frontend.fold`);
code that builds a sum's body first (``A @ x`` inside ``x @ A @ x``) cannot, since an inner sum
is written out or kept depending on the sum around it.  So such code builds every sum as a
loop node and :func:`lowered` makes the text's decisions afterwards, outermost first: a sum
stays a loop when written out it would repeat its innermost body more than the limit (its
length times those of the sums nested in it, :func:`repeats`), the limit being
:data:`~symad.core.binders.UNROLL_MAX_TERMS`, or ``UNROLL_INSIDE_LOOP`` inside a loop kept; otherwise
its terms are written out as the text unrolls them (:func:`written_out`).
"""

from __future__ import annotations

from symad.core import binders
from symad.core.dag import BINDERS, Graph

REDUCTIONS = {"sum": ("add", 0.0), "prod": ("mul", 1.0)}  # the op combining the terms, the empty value


def rebuilt(graph: Graph, body: int, position: int, level: int = 0, deeper: int = 0, entries: bool = False) -> int:
    """``body`` with its index ``index(level)`` replaced by node ``position``, the deeper indices and
    the binders inside (of deeper levels) moved ``deeper`` levels down; with ``entries``, an entry
    of one index that became a number is the scalar variable ``x[k]``, as the text writes it.
    Parts that do not use the index are kept as they are (a loop closed inside ``body`` binds
    its own index, of a level that may be ``level``)."""
    return _replayed(graph, _dependents(graph, body, level), body, position, level, deeper, entries)


def _dependents(graph: Graph, body: int, level: int) -> list[int]:
    """The nodes of ``body`` that use ``index(level)`` or deeper ones, children first."""
    lv = binders.levels(graph)
    if lv[body] < level:
        return []
    args_of = graph.args
    todo: set[int] = set()
    stack = [body]
    while stack:
        node = stack.pop()
        if node not in todo:
            todo.add(node)
            stack.extend(a for a in args_of[node] if lv[a] >= level and a not in todo)
    return sorted(todo)


def _replayed(graph: Graph, order: list[int], body: int, position: int, level: int, deeper: int,
              entries: bool) -> int:
    """:func:`rebuilt` over the nodes ``order`` (:func:`_dependents`)."""
    op_of, args_of, data_of = graph.op, graph.args, graph.data
    done: dict[int, int] = {}
    for node in order:  # children first
        op, data = op_of[node], data_of[node]
        args = tuple(done.get(a, a) for a in args_of[node])
        if op == "index":
            done[node] = position if data == level else graph.index(data + deeper)  # type: ignore[operator]
        elif op in BINDERS:
            at, low, high = data  # type: ignore[misc]
            done[node] = binders.reduce(graph, op, at + deeper, low, high, args[0])
        elif op == "item":
            at = args[1:]
            if entries and len(at) == 1 and op_of[at[0]] == "const":
                done[node] = graph.var(f"{data_of[args[0]]}[{int(data_of[at[0]])}]")  # type: ignore[arg-type]
            else:
                done[node] = binders.item(graph, args[0], *at)
        else:
            done[node] = graph.build(op, data, args)
    return done.get(body, body)


def repeats(graph: Graph, node: int) -> int:
    """How many times ``node`` written out would repeat the innermost body of its deepest nest of
    sums (the product of their lengths; 1 without sums), as the text counts a body's ranges."""
    count: dict[int, int] = {}
    op_of, args_of, data_of = graph.op, graph.args, graph.data
    for n in graph.reachable([node]):
        args = args_of[n]
        if op_of[n] in BINDERS:
            _, low, high = data_of[n]  # type: ignore[misc]
            count[n] = max(0, high - low + 1) * count[args[0]]
        else:
            count[n] = max((count[a] for a in args), default=1)
    return count[node]


def keeps_loop(length: int, body_repeats: int, inside: bool) -> bool:
    """Whether a sum of ``length`` terms whose body repeats ``body_repeats`` times stays a loop:
    :data:`~symad.core.binders.UNROLL_MAX_TERMS` is the limit of a sum outside loops,
    :data:`~symad.core.binders.UNROLL_INSIDE_LOOP` that of a sum inside a loop kept."""
    limit = binders.UNROLL_INSIDE_LOOP if inside else binders.UNROLL_MAX_TERMS
    return length * body_repeats > limit


def written_out(graph: Graph, body: int, level: int, low: int, high: int, inside: bool = False,
                op: str = "sum") -> int:
    """The sum (``op="prod"``: the product) of ``body`` over ``index(level) = low..high`` written
    out as the text unrolls it: the body once per index value (its sums decided in turn), entries
    of a constant index the scalar variables ``x[k]``, the terms combined left to right
    (``((t1 + t2) + t3) + ...``); 0 (1) when empty."""
    combine, empty = REDUCTIONS[op]
    order = _dependents(graph, body, level)  # the same for every term
    has_sums = any(graph.op[n] in REDUCTIONS for n in graph.reachable([body]))
    total = None
    for k in range(low, high + 1):
        term = _replayed(graph, order, body, graph.const(float(k)), level, 0, True)
        if has_sums:
            term = lowered(graph, term, inside)
        total = term if total is None else graph.make(combine, total, term)
    return graph.const(empty) if total is None else total


def summed(graph: Graph, body: int, level: int, low: int, high: int, inside: bool = False, op: str = "sum") -> int:
    """The sum (``op="prod"``: the product) of ``body`` over ``index(level) = low..high`` as the
    text builds it: one loop node (:func:`keeps_loop`), its body's sums decided inside it, or
    written out (:func:`written_out`)."""
    if keeps_loop(max(0, high - low + 1), repeats(graph, body), inside):
        return binders.reduce(graph, op, level, low, high, lowered(graph, body, inside=True))
    return written_out(graph, body, level, low, high, inside, op)


def lowered(graph: Graph, root: int, inside: bool = False) -> int:
    """``root`` with each of its sums kept as a loop or written out as the text decides, outermost
    first (``inside``: ``root`` is the body of a loop kept)."""
    op_of, args_of, data_of = graph.op, graph.args, graph.data
    todo: set[int] = set()
    stack = [root]
    while stack:  # the nodes around the outermost sums: a sum's own body is decided with it
        node = stack.pop()
        if node not in todo:
            todo.add(node)
            if op_of[node] not in REDUCTIONS:
                stack.extend(a for a in args_of[node] if a not in todo)
    done: dict[int, int] = {}
    for node in sorted(todo):  # children first
        args = args_of[node]
        op = op_of[node]
        if op in REDUCTIONS:
            level, low, high = data_of[node]  # type: ignore[misc]
            done[node] = summed(graph, args[0], level, low, high, inside, op)
            continue
        new = tuple(done[a] for a in args)
        if new == args:
            done[node] = node
        elif op in BINDERS:
            level, low, high = data_of[node]  # type: ignore[misc]
            done[node] = binders.reduce(graph, op, level, low, high, new[0])
        elif op == "item":
            done[node] = binders.item(graph, new[0], *new[1:])
        else:
            done[node] = graph.build(op, data_of[node], new)
    return done[root]


def entries_as_items(graph: Graph, node: int) -> int:
    """``node`` with each scalar variable ``x[k]`` of a vector that a loop indexes (``x[i]``) as the
    entry ``x[k]`` of that vector, as the text's reading ends (one variable, not two)."""
    return binders.entries_of(graph, [node], binders.looped_vectors(graph, graph.reachable([node])))[0]


def settled(graph: Graph, root: int) -> int:
    """``root``, built with its sums as loops, as the text would read it: sums decided
    (:func:`lowered`), then entries of looped vectors as items (:func:`entries_as_items`)."""
    return entries_as_items(graph, lowered(graph, root))
