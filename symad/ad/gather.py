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

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from symad.ad.reverse import Nodes, backward, body_adjoints, gradient
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
    {vector name: its partials as one each node})``, every partial a node of ``graph``.  Vectors
    of several indices are data: they get no partials."""
    order = canonical_order(graph, [root])
    op_of, args_of = graph.op, graph.args
    sources = [n for n in order if op_of[n] in ("var", "vector")]
    adjoint = backward(graph, order, root, Nodes(graph), active(graph, order, sources))
    zero = graph.const(0.0)
    scalars = {v: adjoint.get(v, zero) for v in sources if op_of[v] == "var"}
    span = binders.index_span(graph, [root])
    parts: dict[str, list[tuple[int, int, int]]] = {name: [] for name, dims in span.items() if len(dims) == 1}
    lv = binders.levels(graph)
    for node in order:
        adj = adjoint.get(node)
        if adj is None or lv[node] >= 0:
            continue
        op = op_of[node]
        if op == "item" and len(args_of[node]) == 2:  # x[3] outside any loop
            vector, index = args_of[node]
            at = int(graph.data[index])  # type: ignore[arg-type]
            parts[graph.data[vector]].append((at, at, adj))  # type: ignore[index]
        elif op in BINDERS:
            _gather(graph, node, adj, parts, span)
    k = graph.index(0)
    vectors = {}
    for name, terms in parts.items():
        ((low, high),) = span[name]
        vectors[name] = VectorPartial(binders.reduce(graph, "each", 0, low, high, _guarded(graph, k, low, high, terms)),
                                      low, high)
    return scalars, vectors


def _gather(graph: Graph, loop: int, adjoint: int, parts: dict[str, list[tuple[int, int, int]]],
            span: dict[str, list[tuple[int, int]]]) -> None:
    """What top-level binder ``loop`` (adjoint ``adjoint``) and the loops inside it pass to each
    entry ``x[k]`` of a vector: ``(low, high, term)`` in ``parts[x]``, ``term`` an expression of
    ``k = index(0)`` (the loops around the entry other than the one solved for become sums)."""
    todo = [(loop, adjoint, ())]
    while todo:
        node, adj, around = todo.pop()
        level, low, high = graph.data[node]  # type: ignore[misc]
        chain = (*around, (level, low, high))
        body = graph.args[node][0]
        inner = body_adjoints(graph, node)
        for item in binders.items(graph, body, level):
            partial = inner.get(item)
            name = graph.data[graph.args[item][0]]
            if partial is not None and name in parts:
                parts[name].append(_entry_term(graph, item, graph.make("mul", adj, partial), chain,  # type: ignore[index]
                                               span[name][0]))  # type: ignore[index]
        for inside in binders.nested(graph, body, level):
            partial = inner.get(inside)
            if partial is not None:
                todo.append((inside, graph.make("mul", adj, partial), chain))


def _entry_term(graph: Graph, item: int, term: int, chain: tuple[tuple[int, int, int], ...],
                domain: tuple[int, int]) -> tuple[int, int, int]:
    """``(low, high, term at k)``: the contribution of ``term`` (an expression of the loops of
    ``chain``) to ``∂/∂x[k]`` through entry ``item = x[Σ c_l i_l + shift]``: the deepest index with
    a coefficient ±1 is solved for k, the others summed over their ranges."""
    vector, at = graph.args[item]
    coef, shift = binders.affine(graph, at)  # type: ignore[misc]
    solvable = [lvl for lvl in coef if abs(coef[lvl]) == 1]
    if not solvable:
        return _strided_term(graph, item, term, chain)
    solved_level = max(solvable)
    rest = [(lvl, lo, hi) for lvl, lo, hi in chain if lvl != solved_level]
    k = graph.index(0)
    mapping = {graph.index(lvl): graph.index(m + 1) for m, (lvl, _, _) in enumerate(rest)}
    # x[a*i_s + Σ c_l i_l + shift] = x[k]  <=>  i_s = a*(k - shift - Σ c_l i_l), for a = ±1
    solved = graph.make("sub", k, graph.const(float(shift)))
    for lvl, c in coef.items():
        if lvl != solved_level:
            solved = graph.make("sub", solved, graph.make("mul", graph.const(float(c)), mapping[graph.index(lvl)]))
    a = coef[solved_level]
    if a < 0:
        solved = graph.make("neg", solved)
    mapping[graph.index(solved_level)] = solved
    term = binders.substitute(graph, term, mapping)
    (_, low, high), = [c for c in chain if c[0] == solved_level]
    if len(coef) == 1:  # the entry's index is k alone: its range is a guard on k, outside the sums
        for m in range(len(rest) - 1, -1, -1):
            term = binders.reduce(graph, "sum", m + 1, rest[m][1], rest[m][2], term)
        lo, hi = sorted((a * low + shift, a * high + shift))
        return lo, hi, term
    zero = graph.const(0.0)
    inside = graph.make("and", graph.make("le", graph.const(float(low)), solved),
                        graph.make("le", solved, graph.const(float(high))))
    term = graph.make("where", inside, term, zero)
    for m in range(len(rest) - 1, -1, -1):
        _, lo, hi = rest[m]
        term = binders.reduce(graph, "sum", m + 1, lo, hi, term)
    return domain[0], domain[1], term


def _strided_term(graph: Graph, item: int, term: int, chain: tuple[tuple[int, int, int], ...]
                  ) -> tuple[int, int, int]:
    """``_entry_term`` for an entry ``x[a*i + shift]`` of one index, ``|a| > 1``: iteration
    ``i = (k - shift)/a`` contributes to ``x[k]`` where ``a`` divides ``k - shift``.  The term's
    entries of ``i`` are written in k (``y[b*i + c]`` is ``y[(b/a)*(k - shift) + c]``, whole
    coefficients: ``a`` must divide ``b``), its other uses of ``i`` read ``(k - shift)/a``; at the
    other k the term is left out (a ``where``), its entries still within the vectors' spans."""
    vector, at = graph.args[item]
    coef, shift = binders.affine(graph, at)  # type: ignore[misc]
    name = graph.data[vector]
    if len(coef) != 1:
        raise SymadError(f"the gradient through an entry of {name} whose index mixes several sums' indices, none "
                         "of them at a stride of 1, is not supported yet")
    ((level, a),) = coef.items()
    k = graph.index(0)
    rest = [(lvl, lo, hi) for lvl, lo, hi in chain if lvl != level]
    mapping = {graph.index(lvl): graph.index(m + 1) for m, (lvl, _, _) in enumerate(rest)}
    renamed = dict(mapping)  # the other loops' indices, for an entry's indices without i
    # An entry is rewritten whole, so its other indices are renamed here: those of the loops around
    # it (the chain) are; a loop inside the term keeps its level only where no level moves.
    chain_levels = {lvl for lvl, _, _ in chain}
    unmoved = level == 0 and all(lvl == m + 1 for m, (lvl, _, _) in enumerate(rest))
    offset = graph.make("sub", k, graph.const(float(shift)))  # a*i at the k it reaches
    quotient = graph.make("div", offset, graph.const(float(a)))  # i there (whole where a divides k - shift)
    mapping[graph.index(level)] = quotient
    for it in graph.reachable([term]):
        if graph.op[it] != "item":
            continue
        indices = []
        for index in graph.args[it][1:]:
            form = binders.affine(graph, index)
            if form is None or level not in form[0]:
                indices.append(None)
                continue
            c, const = form
            if len(c) != 1 or c[level] % a:
                other = f"a stride of {abs(c[level])}" if len(c) == 1 else "an index mixing several sums' indices"
                raise SymadError(f"the gradient through {name}[{a}*i{f'{shift:+d}' if shift else ''}] (a stride of "
                                 f"{abs(a)}) needs the other entries of i in its term at strides that {abs(a)} "
                                 f"divides: {graph.data[graph.args[it][0]]}[...] is at {other} (not supported yet)")
            indices.append(graph.make("add", graph.make("mul", graph.const(float(c[level] // a)), offset),
                                      graph.const(float(const))))
        if any(i is not None for i in indices) and not unmoved:
            for new, old in zip(indices, graph.args[it][1:]):
                form = binders.affine(graph, old)
                if new is None and form is not None and set(form[0]) - chain_levels:
                    raise SymadError(f"the gradient through {name}[...] at a stride other than 1, beside an entry "
                                     "that also uses the index of a loop inside the term, is not supported yet")
        if any(i is not None for i in indices):  # (an entry in the mapping is not entered: rename its other indices)
            mapping[it] = binders.item(graph, graph.args[it][0], *(
                new if new is not None else binders.substitute(graph, old, renamed)
                for new, old in zip(indices, graph.args[it][1:])))
    term = binders.substitute(graph, term, mapping)
    whole = graph.make("eq", graph.make("mul", graph.make("floor", quotient), graph.const(float(a))), offset)
    term = graph.make("where", whole, term, graph.const(0.0))
    for m in range(len(rest) - 1, -1, -1):
        term = binders.reduce(graph, "sum", m + 1, rest[m][1], rest[m][2], term)
    (_, low, high), = [c for c in chain if c[0] == level]
    lo, hi = sorted((a * low + shift, a * high + shift))
    return lo, hi, term


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


class Band(NamedTuple):
    """Second derivatives ``∂²f/∂row ∂column`` as one expression: ``row`` a scalar's name or a vector
    ``x`` at ``x[k]``, ``column`` a scalar's name or a vector ``y`` at ``y[a*k + shift]`` (``a = 0``:
    a fixed entry); ``node`` an expression of ``k = index(0)`` for ``k = low..high`` (a scalar's
    row and column: no k, ``a = 0``, ``low > high``)."""

    row: str
    column: str
    a: int
    shift: int
    node: int
    low: int
    high: int


def hessian_band_nodes(graph: Graph, wrt: Sequence[str], spans: Mapping[str, Sequence[tuple[int, int]]],
                       partials: Mapping[str, int], scalars: Mapping[str, int]) -> list[Band]:
    """The Hessian as bands, every row's (both triangles; a row's entries along another
    vector's or scalar's in that row): a vector ``x``'s row along ``y[a*k + c]`` is the partial
    of ``∂f/∂x[k]``'s body along its entry ``y[a*k + c]`` (the body's own reverse sweep, as the
    gradient's; only the entries of vectors), a scalar's row the indexed gradient of its partial
    (along vectors and scalars).  ``partials``: each variable's partial (a vector's an ``each``
    node), ``scalars``: the scalar variables' nodes.  Parts of a row inside loops nested in the
    gradient's body are not bands (a dense coupling): not listed."""
    out: list[Band] = []
    for name in wrt:
        partial = partials[name]
        if name not in spans:
            row_scalars, row_vectors = indexed_gradient(graph, partial)
            for other in wrt:
                if other in spans:
                    band = row_vectors.get(other)
                    if band is not None and not graph.is_const(graph.args[band.node][0], 0.0):
                        out.append(Band(name, other, 1, 0, graph.args[band.node][0], band.low, band.high))
                else:
                    entry = row_scalars.get(scalars[other])
                    if entry is not None and not graph.is_const(entry, 0.0):
                        out.append(Band(name, other, 0, 0, entry, 0, -1))
            continue
        _, low, high = graph.data[partial]  # type: ignore[misc]
        inner = body_adjoints(graph, partial)
        found = []
        body, *caps = graph.args[partial]
        # its entries at k, and the entries at a fixed index it captures (x[1]*x[n] beside a loop),
        # directly or inside a capture computed from them (x[5]^2*x[7] beside a loop: 2*x[5]*x[7])
        through = _through_captures(graph, caps, inner, spans)
        fixed = [c for c in caps if graph.op[c] == "item" and len(graph.args[c]) == 2]
        fixed += [t for t in through if t not in fixed]
        for item in [*binders.items(graph, body, 0), *fixed]:
            entry = inner.get(item)
            for part in through.get(item, ()):
                entry = part if entry is None else graph.make("add", entry, part)
            vector, *at = graph.args[item]
            other = graph.data[vector]
            if entry is None or other not in spans or other not in partials or len(at) != 1:
                continue
            coef, shift = binders.affine(graph, at[0])  # type: ignore[misc]
            a = coef.get(0, 0)
            if a not in (1, -1, 0) or set(coef) - {0}:
                continue
            (olow, ohigh), = spans[other]
            if a == 0:
                reach = (low, high)
            else:
                reach = (max(low, olow - shift), min(high, ohigh - shift)) if a == 1 else \
                    (max(low, shift - ohigh), min(high, shift - olow))
            found.append(((wrt.index(other), a, shift), Band(name, other, a, shift, entry, *reach)))  # type: ignore[arg-type]
        out.extend(band for _, band in sorted(found))
    return out


def _through_captures(graph: Graph, caps: Sequence[int], inner: Mapping[int, int],
                      spans: Mapping[str, Sequence[tuple[int, int]]]) -> dict[int, list[int]]:
    """What a row's captures computed from fixed entries (not an entry themselves, no loop inside)
    pass on to those entries: ``{entry: [∂body/∂c · ∂c/∂entry, ...]}`` over the captures ``c``,
    each ``∂c/∂entry`` by reverse mode on ``c`` (a capture is a leaf of the body's sweep, so a
    capture inside another is counted once, by each)."""
    level = binders.levels(graph)
    out: dict[int, list[int]] = {}
    for c in caps:
        weight = inner.get(c)
        if graph.op[c] == "item" or weight is None or graph.is_const(weight, 0.0):
            continue
        reached = graph.reachable([c])
        if any(graph.op[n] in BINDERS for n in reached):
            continue  # a loop: a dense coupling (dense_coupling), not bands
        entries = [n for n in reached if graph.op[n] == "item" and level[n] < 0 and len(graph.args[n]) == 2
                   and graph.data[graph.args[n][0]] in spans]
        if not entries:
            continue
        stand_in = {t: graph.var(f"entry'{k}") for k, t in enumerate(entries)}
        back = {v: t for t, v in stand_in.items()}
        partials = gradient(graph, binders.substitute(graph, c, stand_in), list(stand_in.values()))
        for t, v in stand_in.items():
            d = partials.get(v)
            if d is not None and not graph.is_const(d, 0.0):
                out.setdefault(t, []).append(graph.make("mul", weight, binders.substitute(graph, d, back)))
    return out


def dense_coupling(graph: Graph, wrt: Sequence[str], spans: Mapping[str, Sequence[tuple[int, int]]],
                   partials: Mapping[str, int]) -> tuple[str, int] | None:
    """A vector's Hessian row that is not bands (:func:`hessian_band_nodes` leaves it out):
    ``(its name x, a loop)`` where ``∂f/∂x[k]`` depends on a loop (a sum or a product inside its
    body, or in a part of it the same for every k) reading entries of a variable, which couples
    x[k] with every entry that loop reads; None where every row is bands."""
    vectors = {name for name in wrt if name in spans}
    for name in wrt:
        if name not in spans:
            continue
        partial = partials[name]
        body, *caps = graph.args[partial]
        inner = body_adjoints(graph, partial)
        for node in [*binders.nested(graph, body, graph.data[partial][0]), *caps]:  # type: ignore[index]
            weight = inner.get(node)
            if weight is None or graph.is_const(weight, 0.0):
                continue
            loop = _loop_reading(graph, node, vectors)
            if loop is not None:
                return name, loop
    return None


def _loop_reading(graph: Graph, node: int, vectors: set[str]) -> int | None:
    """A loop ``node`` reaches whose body reads an entry of one of ``vectors``, or None."""
    for loop in graph.reachable([node]):
        if graph.op[loop] in ("sum", "prod") and any(
                graph.op[n] == "item" and graph.data[graph.args[n][0]] in vectors for n in graph.reachable([loop])):
            return loop
    return None


def hessian_bands(graph: Graph, wrt: Sequence[str], spans: Mapping[str, Sequence[tuple[int, int]]],
                  partials: Mapping[str, int], scalars: Mapping[str, int]
                  ) -> list[tuple[str, str, int, tuple[int, int] | None]]:
    """The Hessian's bands, ``(row, column, node, range)`` each, each pair once, the node's free
    index (if any) k (see :meth:`symad.indexed_function.IndexedFunction.hessian_text`)."""
    position = {name: k for k, name in enumerate(wrt)}
    out: list[tuple[str, str, int, tuple[int, int] | None]] = []
    for band in hessian_band_nodes(graph, wrt, spans, partials, scalars):
        row, column = band.row, band.column
        if row not in spans:  # a scalar's row: along a vector, or a scalar from its own place on
            if column in spans:
                labels = (row, f"{column}[k]") if position[row] < position[column] else (f"{column}[k]", row)
                out.append((*labels, band.node, (band.low, band.high)))
            elif position[column] >= position[row]:
                out.append((row, column, band.node, None))
            continue
        if position[column] < position[row] or (column == row and band.a == 1 and band.shift < 0):
            continue
        if band.a == 1:
            label = f"{column}[k{band.shift:+d}]" if band.shift else f"{column}[k]"
        elif band.a == 0:
            label = f"{column}[{band.shift}]"
        else:
            label = f"{column}[{band.shift} - k]"
        out.append((f"{row}[k]", label, band.node, (band.low, band.high)))
    return out
