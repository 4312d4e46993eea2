"""Graphviz pictures of the DAG (forward) and of the reverse sweep over it (backward).

:func:`to_digraph` returns a :class:`graphviz.Digraph` (a notebook shows it inline);
:func:`write` saves it by file extension.  Node names come from each node's
position in the topological order of the drawn DAG (``n0``, ``n1``, ... and ``g0``,
``g1``, ... for adjoints), never from ``id()``, so the same expression always gives
the same DOT text, whatever else its graph holds.

The backward cluster draws the one reverse sweep (:func:`symad.ad.trace.reverse`, the steps of
:func:`symad.ad.reverse.backward`): one adjoint node ``∂f/∂n`` per forward node the sweep
reaches, an edge from each user's adjoint to each argument's adjoint labelled with the
local partial (from the op table), and a sum ``Σ`` where a shared node collects several
contributions.  At a point, the adjoints are the sweep's numbers: the gradient's bits.

A sum kept as a loop is drawn as one box holding its body (:mod:`symad.tools.loop_picture`);
with ``grad``, beside it the gradient, which stays indexed: a vector's partial is one ``each``
box over its entries k, drawn as the DAG it is (values at a point are not drawn for loops yet).
"""

from __future__ import annotations

import html
import math
import subprocess
import sys
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path

import graphviz

from symad.ad import trace
from symad.ad.local import local_partial
from symad.backends.interpret import node_values
from symad.core import binders, indexed
from symad.core.dag import BINDERS, Graph
from symad.core.errors import LimitError, SymadError, VariableError, check_variables
from symad.core.files import write_atomically
from symad.core.ops import OPS, PREC_ATOM
from symad.core.printing import format_number, scoped_names, to_infix
from symad.expr import Expr, parse
from symad.tools import loop_picture

MAX_NODES = 300
"""Default limit on drawn nodes (forward + backward): beyond it pictures are unreadable and slow.

Drawing time grows with the number of nodes times the rank span of their edges (a
variable used at every depth crosses every rank): ~300 such nodes take ``dot`` seconds,
~500 about a minute.
"""

LARGE = 120
"""Above this many nodes, layout is traded for speed: straight edges, bounded iterations."""

RENDER_TIMEOUT = 60.0
"""Seconds ``dot`` may run before :func:`render` gives up (a safety net behind MAX_NODES)."""

_LARGE_LAYOUT = {"splines": "line", "nslimit": "0.2", "nslimit1": "0.2", "mclimit": "0.1"}

FORMATS = ("png", "svg", "pdf", "dot", "gv")
"""File extensions :func:`write` understands; ``dot``/``gv`` are DOT text, the rest need ``dot``."""

_SHORT = 9  # expressions up to this many tree nodes are printed in labels; larger ones by name
_FONT = "Helvetica"

# ------------------------------------------------------------------ drawing style, per op
# One style per op kind of the op table; leaves get their own.  STYLES has an entry for
# every key of OPS (a test checks it), so a new op is drawn without touching this module.
_KIND_STYLE: dict[str, dict[str, str]] = {
    "infix": {"shape": "box", "style": "rounded,filled", "fillcolor": "#fff3c4", "color": "#b08a00"},
    "prefix": {"shape": "box", "style": "rounded,filled", "fillcolor": "#fff3c4", "color": "#b08a00"},
    "call": {"shape": "box", "style": "filled", "fillcolor": "#fde2cf", "color": "#c0622a"},
}
_LEAF_STYLE: dict[str, dict[str, str]] = {
    "var": {"shape": "ellipse", "style": "filled", "fillcolor": "#d4e6fa", "color": "#2d6db5",
            "penwidth": "1.5"},
    "const": {"shape": "box", "style": "filled", "fillcolor": "#eeeeee", "color": "#999999",
              "fontcolor": "#444444", "height": "0.3", "margin": "0.06,0.03"},
}
STYLES: dict[str, dict[str, str]] = {
    name: _LEAF_STYLE[name] if op.kind == "leaf" else _KIND_STYLE[op.kind] for name, op in OPS.items()
}
"""Graphviz node attributes per op name (a key of :data:`symad.core.ops.OPS`)."""

LOOP_STYLES: dict[str, dict[str, str]] = {
    "index": {"shape": "ellipse", "style": "filled", "fillcolor": "#eadcf8", "color": "#6a3fa0", "penwidth": "1.5"},
    "item": {"shape": "ellipse", "style": "filled", "fillcolor": "#d4e6fa", "color": "#2d6db5", "penwidth": "1.5"},
    **dict.fromkeys(BINDERS, {"shape": "box", "style": "rounded,filled", "fillcolor": "#e3d2f7", "color": "#6a3fa0",
                              "penwidth": "2"}),
}
"""Graphviz node attributes of a loop's nodes: its index, an entry ``x[i + 1]``, the loop itself."""
LOOP_BOX_STYLE = {"style": "rounded,filled", "color": "#6a3fa0", "fillcolor": "#f8f4fd", "fontcolor": "#4a2a78",
                  "fontsize": "13"}
_LOOP_SYMBOL = {"sum": "Σ", "prod": "Π", "each": "each"}
_INDEX_EDGE = {"style": "dashed", "color": "#9b7fc4", "arrowsize": "0.5"}

ADJOINT_STYLE = {"shape": "box", "style": "rounded,filled", "fillcolor": "#d9f2d9", "color": "#2e7d32"}
SUM_STYLE = {**ADJOINT_STYLE, "fillcolor": "#b9e4b9", "penwidth": "1.8"}
OUTPUT_STYLE = {**ADJOINT_STYLE, "fillcolor": "#8fd18f", "penwidth": "2", "peripheries": "2"}
_FORWARD_EDGE = {"color": "#555555", "arrowsize": "0.7"}
_BACKWARD_EDGE = {"color": "#2e7d32", "fontcolor": "#1b5e20", "arrowsize": "0.7"}
_BAD = "#c62828"  # colour of non-finite values


class DotNotFoundError(SymadError):
    """Graphviz's ``dot`` program is needed for a picture format and is not installed."""


def fmt(value: float) -> str:
    """A value for a label: 4 significant digits.

    >>> fmt(2.0), fmt(1/3), fmt(-1e-7), fmt(float("inf"))
    ('2', '0.3333', '-1e-07', 'inf')
    """
    return format(value, ".4g")


# ------------------------------------------------------------------ numeric sweeps
def _tree_sizes(graph: Graph, roots: Sequence[int], sizes: dict[int, int]) -> None:
    """Fill ``sizes`` with each node's size as a tree, capped (only "small or not" matters)."""
    for node in graph.reachable(roots, sizes):
        sizes[node] = min(1 + sum(sizes[a] for a in graph.args[node]), _SHORT + 1)


# ------------------------------------------------------------------ labels
class _Namer:
    """Short text for a node: infix, with big drawn subexpressions replaced by their names (``n8``)."""

    def __init__(self, graph: Graph, local: Mapping[int, int]):
        self.graph, self.local = graph, local
        self.sizes: dict[int, int] = {}

    def text(self, node: int, wrap: bool = False, width: int = 40) -> str:
        g, local, sizes = self.graph, self.local, self.sizes
        _tree_sizes(g, [node], sizes)
        named: set[int] = set()
        inner: set[int] = set()
        stack = [node]
        while stack:  # stops at big drawn nodes, so the work per label stays small
            n = stack.pop()
            if n in named or n in inner:
                continue
            if n in local and sizes[n] > _SHORT:
                named.add(n)
            else:
                inner.add(n)
                stack.extend(g.args[n])
        # Rebuild the expression in a scratch graph with named nodes as variables, then print it.
        scratch, copy = Graph(), {}
        for n in sorted(inner):
            for a in g.args[n]:
                if a in named and a not in copy:
                    copy[a] = scratch.var(f"n{local[a]}")
            op = g.op[n]
            copy[n] = (scratch.const(g.data[n]) if op == "const" else scratch.var(g.data[n]) if op == "var"
                       else scratch.make(op, *(copy[a] for a in g.args[n])))  # type: ignore[arg-type]
        if node in named:
            copy[node] = scratch.var(f"n{local[node]}")
        text = to_infix(scratch, copy[node])
        if len(text) > width:
            text = text[:width - 1] + "…"
        op = scratch.op[copy[node]]
        if wrap and op not in ("var", "const") and OPS[op].kind != "call" and OPS[op].prec != PREC_ATOM:
            text = f"({text})"
        return text


def _html(*lines: tuple[str, str]) -> str:
    """An HTML-like label from (text, font attributes) lines."""
    rows = []
    for text, attrs in lines:
        body = html.escape(text)
        rows.append(f"<FONT {attrs}>{body}</FONT>" if attrs else body)
    return "<" + "<BR/>".join(rows) + ">"


def _value_line(values: Mapping[int, float] | None, node: int, prefix: str = "= ") -> list[tuple[str, str]]:
    if values is None:
        return []
    v = values[node]
    return [(prefix + fmt(v), "" if math.isfinite(v) else f'COLOR="{_BAD}"')]


# ------------------------------------------------------------------ the reverse sweep
class _Sweep:
    """The reverse sweep's steps, for drawing: numeric at a point (else only its edges count)."""

    def __init__(self, g: Graph, root: int, wrt: Sequence[str] | None, point: Mapping[str, float] | None):
        var_nodes = {g.data[n]: n for n in g.reachable([root]) if g.op[n] == "var"}
        for w in wrt or ():
            if w not in var_nodes:
                uses = ", ".join(str(v) for v in var_nodes) or "no variables"
                raise VariableError(f"wrt: {w} is not a variable of the expression (it uses {uses})", (w,))
        steps = trace.reverse(g, root, point, {var_nodes[w] for w in (wrt or var_nodes)})
        self.adjoint = steps.derivative
        self.nodes = [n for n in reversed(steps.order) if n in self.adjoint]  # sweep order: output first
        self.edges: list[tuple[int, int, int]] = []  # (user, argument, node of ∂user/∂argument)
        self.incoming: dict[int, list[int]] = {}  # argument -> indices into edges
        self.terms: dict[int, list[float]] = {}  # argument -> numeric contributions, in edge order
        self.blocked: set[int] = set()  # edges through a branch not taken at the point (contributing 0)
        self.partial: list[float] = []  # each edge's partial at the point
        for e in steps.edges:
            self.incoming.setdefault(e.arg, []).append(len(self.edges))
            if e.blocked and point is not None:
                self.blocked.add(len(self.edges))
            self.edges.append((e.user, e.arg, local_partial(g, e.user, e.k)))  # the partial's text
            self.partial.append(e.partial)
            self.terms.setdefault(e.arg, []).append(0.0 if e.term is None else e.term)


# ------------------------------------------------------------------ the picture
def to_digraph(expr: Expr | str, *, grad: bool = False, wrt: Sequence[str] | str | None = None,
               at: Mapping[str, float] | None = None, rankdir: str = "TB",
               max_nodes: int = MAX_NODES, title: str | None = None) -> graphviz.Digraph:
    """The DAG of ``expr`` as a Graphviz digraph; with ``grad`` (or ``wrt``) also the reverse sweep.

    ``at`` annotates every node with its value (and adjoint nodes with ∂f/∂node);
    ``wrt`` limits the backward graph to the paths into those variables.  Raises
    :class:`~symad.core.errors.LimitError` beyond ``max_nodes`` drawn nodes.

    >>> d = to_digraph("(x+y)+x*(x+y)", grad=True, at={"x": 1, "y": 2})
    >>> d.source.count("[label=<")  # 5 DAG nodes and their 5 adjoints
    10
    >>> "3 + 2 = 5" in d.source  # ∂f/∂x sums what its two users pass back
    True
    """
    if isinstance(expr, str):
        expr = parse(expr, Graph())
    if isinstance(wrt, str):
        wrt = [w.strip() for w in wrt.split(",") if w.strip()]
    grad = grad or bool(wrt)
    if rankdir.upper() not in ("TB", "LR", "BT", "RL"):
        raise SymadError(f"rankdir must be TB, LR, BT or RL, not {rankdir!r}")
    if max_nodes < 1:
        raise LimitError(f"{{setting}} must be at least 1, got {max_nodes}", "max_nodes")
    g, root = expr.graph, expr.id
    looped = binders.has_scoped(g, [root])
    if looped and at is not None:
        raise SymadError("values at a point are not drawn for sums kept as loops yet: draw without at")
    order = g.reachable([root])
    found = loop_picture.boxes(g, root) if looped else None
    drawn = sum(len(box.nodes) for box in found) if found else len(order)
    _check_size(drawn, max_nodes, "the DAG")
    partials = _indexed_partials(expr, wrt) if grad and looped else []
    drawn += sum(len(box.nodes) for _, _, boxes in partials for box in boxes)
    _check_size(drawn, max_nodes, "the expression and its indexed gradient")
    local = _numbered(order, found)

    values: dict[int, float] | None = None
    point: dict[str, float] = {}
    if at is not None:
        at = indexed.expand_point(expr.variables, at)
        check_variables(expr.variables, at)
        point = {v: float(at[v]) for v in expr.variables}
        values = node_values(g, [root], point)
    sweep = _Sweep(g, root, wrt, point if at is not None else None) if grad and not looped else None
    total = drawn + (len(sweep.nodes) if sweep else 0)
    _check_size(total, max_nodes, "the forward and backward graph" if grad else "the DAG")
    large = total > LARGE

    names = _Namer(g, local)
    if title is None:
        _tree_sizes(g, [root], names.sizes)
        title = f"f = {to_infix(g, root)}" if names.sizes[root] <= _SHORT else None
    else:
        title = f"f = {title}"
    if title and point:
        title += "   at " + ", ".join(f"{k} = {format_number(v, False)}" for k, v in point.items())

    dot = graphviz.Digraph("symad", graph_attr={
        "rankdir": rankdir.upper(), "fontname": _FONT, "labelloc": "t", "fontsize": "16",
        "nodesep": "0.35", "ranksep": "0.45", "newrank": "true", **(_LARGE_LAYOUT if large else {}),
        **({"label": title} if title else {})})
    dot.attr("node", fontname=_FONT, fontsize="13", margin="0.12,0.05", height="0.4")
    dot.attr("edge", fontname=_FONT, fontsize="11")
    if found is not None and not partials:
        _draw_loops(dot, g, root, local, found, large)
        return dot
    if found is not None:
        _draw_indexed_gradient(dot, g, root, local, found, partials, large)
        return dot
    if sweep is None:
        _draw_forward(dot, g, order, local, root, values, large)
        return dot
    forward = graphviz.Digraph("cluster_forward", graph_attr={
        "label": "forward: the DAG, arguments → users", "color": "#bbbbbb", "style": "rounded",
        "fontsize": "13", "fontcolor": "#555555"})
    _draw_forward(forward, g, order, local, root, values, large)
    dot.subgraph(forward)
    if sweep.nodes:
        _draw_backward(dot, g, order, local, root, sweep, values, names, large)
    return dot


def _indexed_partials(expr: Expr, wrt: Sequence[str] | None) -> list[tuple[str, int, list[loop_picture.Box]]]:
    """The gradient of an expression with loops as drawn: ``(label, root, boxes)`` a partial, a
    vector's one ``each(k = ..., ...)`` node (:meth:`symad.expr.Expr.grad`)."""
    out = []
    for name, partial in expr.grad(list(wrt) if wrt else None).items():
        node = partial.id
        if expr.graph.op[node] == "each":
            _, low, high = expr.graph.data[node]  # type: ignore[misc]
            name = f"{name}[k], k = {low}..{high}"
        out.append((f"∂f/∂{name}", node, loop_picture.boxes(expr.graph, node)))
    return out


def _numbered(order: list[int], found: list[loop_picture.Box] | None) -> dict[int, int]:
    """A number for each node drawn: those reached, then any a box holds beside them (the index of
    a loop whose body does not use it, as in the partial each(k, 20000) of 20000*sum(x))."""
    local = {node: i for i, node in enumerate(order)}
    for box in found or ():
        for node in box.nodes:
            local.setdefault(node, len(local))
    return local


def _draw_indexed_gradient(dot: graphviz.Digraph, g: Graph, root: int, local: Mapping[int, int],
                           found: list[loop_picture.Box], partials: list[tuple[str, int, list[loop_picture.Box]]],
                           large: bool) -> None:
    """An expression with loops beside its gradient, which stays indexed: each vector's partial
    one ``each`` box over k (what ``symad diff`` prints as one line), drawn as the DAG it is."""
    forward = graphviz.Digraph("cluster_forward", graph_attr={
        "label": "forward: the DAG, each loop a box", "color": "#bbbbbb", "style": "rounded",
        "fontsize": "13", "fontcolor": "#555555"})
    _draw_loops(forward, g, root, local, found, large)
    dot.subgraph(forward)
    back = graphviz.Digraph("cluster_backward", graph_attr={
        "label": "backward: the gradient, indexed (one expression a vector, over its entries k)",
        "color": "#2e7d32", "style": "rounded", "fontsize": "13", "fontcolor": "#2e7d32", "bgcolor": "#f4fbf4"})
    for j, (label, node, boxes) in enumerate(partials):
        part = graphviz.Digraph(f"cluster_d{j}", graph_attr={
            "label": label, "color": "#2e7d32", "style": "rounded", "fontsize": "12", "fontcolor": "#2e7d32"})
        names = scoped_names(g, node)
        names = ["k", *(n for n in names if n != "k")] if "k" in names else names
        _draw_loops(part, g, node, _numbered(g.reachable([node]), boxes), boxes, large, prefix=f"d{j}_",
                    index_names=names)
        back.subgraph(part)
    dot.subgraph(back)


def _check_size(count: int, limit: int, what: str) -> None:
    if count > limit:
        raise LimitError(f"{what} has {count} nodes, more than the {limit} drawn at most; "
                         f"raise the limit with {{setting}}{count}", "max_nodes")


def _draw_forward(dot: graphviz.Digraph, g: Graph, order: list[int], local: Mapping[int, int],
                  root: int, values: Mapping[int, float] | None, large: bool) -> None:
    for node in order:
        attrs = dict(STYLES[g.op[node]])
        if node == root:
            attrs.update(penwidth="2.5", peripheries="2")
        if values is not None and not math.isfinite(values[node]):
            attrs["color"] = _BAD
        dot.node(f"n{local[node]}", _label(g, node, local[node], values), **attrs)
    if not large:  # inputs on one row, in natural order (costly for dot on big graphs)
        _same_rank(dot, [f"n{local[n]}" for n in order if g.op[n] == "var"], "min")
    for node in order:
        for a, extra in _arguments(g, node):
            dot.edge(f"n{local[a]}", f"n{local[node]}", **_FORWARD_EDGE, **extra)


def _label(g: Graph, node: int, i: int, values: Mapping[int, float] | None,
           index_names: list[str] | None = None, prefix: str = "n") -> str:
    """A forward node's label: a name, a number, or an op's symbol over its caption (``n4 sin``)."""
    op = g.op[node]
    caption_font = 'POINT-SIZE="10" COLOR="#777777"'
    if op == "var":
        return _html((str(g.data[node]), 'POINT-SIZE="16"'), *_value_line(values, node))
    if op == "const":
        return _html((format_number(g.data[node]), ""))  # type: ignore[arg-type]
    if op == "index":
        return _html((index_names[g.data[node]], 'POINT-SIZE="16"'), ("index", caption_font))  # type: ignore[index]
    if op == "item":
        return _html((to_infix(g, node, index_names=index_names or ()), 'POINT-SIZE="15"'))
    if op in BINDERS:
        return _html((_LOOP_SYMBOL[op], 'POINT-SIZE="17"'), (f"{prefix}{i} {op}", caption_font))
    spec = OPS[op]
    caption = f"{prefix}{i} {op}" if spec.symbol != op else f"{prefix}{i}"
    return _html((spec.symbol, 'POINT-SIZE="17"'), (caption, caption_font), *_value_line(values, node))


def _arguments(g: Graph, node: int) -> list[tuple[int, dict[str, str]]]:
    """A node's arguments, each with its edge's extra attributes (a role or position, if it matters)."""
    args = g.args[node]
    spec = OPS[g.op[node]]
    numbered = len(args) > 1 and not spec.commutative
    roles = spec.roles  # argument labels that say more than a position
    return [(a, {"headlabel": roles[k] if roles else str(k + 1), "labelfontsize": "9",
                 "labelfontcolor": "#777777"} if numbered else {}) for k, a in enumerate(args)]


def _draw_loops(dot: graphviz.Digraph, g: Graph, root: int, local: Mapping[int, int],
                found: list[loop_picture.Box], large: bool, prefix: str = "n",
                index_names: list[str] | None = None) -> None:
    """The DAG of an expression with loops: each loop a box holding its body (node names and
    captions start with ``prefix``: the gradient's drawing beside the expression's has its own)."""
    index_names = index_names or scoped_names(g, root)
    named = loop_picture.names(local, found, prefix)
    graphs = [dot]
    for box in found[1:]:
        level, low, high = g.data[box.binder]  # type: ignore[index,misc]
        graphs.append(graphviz.Digraph(f"cluster_{'' if prefix == 'n' else prefix}loop{len(graphs)}", graph_attr={
            "label": f"{g.op[box.binder]} {index_names[level]} = {low}..{high}", **LOOP_BOX_STYLE}))  # type: ignore[index]
    for k, box in enumerate(found):
        for node in box.nodes:
            op = g.op[node]
            attrs = dict(LOOP_STYLES.get(op) or STYLES[op])
            if node == root:
                attrs.update(penwidth="2.5", peripheries="2")
            graphs[k].node(named[k][node], _label(g, node, local[node], None, index_names, prefix), **attrs)
    depth = [0] * len(found)
    for k, box in enumerate(found[1:], 1):
        depth[k] = depth[box.parent] + 1  # type: ignore[index]
    for k in sorted(range(1, len(found)), key=lambda k: (-depth[k], k)):  # complete before it goes in its parent
        graphs[found[k].parent].subgraph(graphs[k])  # type: ignore[index]
    if not large:
        _same_rank(dot, [named[0][n] for n in found[0].nodes if g.op[n] == "var"], "min")
    for k, box in enumerate(found):
        for node in box.nodes:
            op, here = g.op[node], named[k][node]
            if op == "item":  # its index, whose arithmetic is in its label
                for level in loop_picture.item_levels(g, node):
                    dot.edge(loop_picture.name_of(g.index(level), k, found, named), here, **_INDEX_EDGE)
            elif op in BINDERS:  # the body's value into the loop
                dot.edge(loop_picture.name_of(g.args[node][0], k, found, named), here, **_FORWARD_EDGE)
            elif op != "index":
                for a, extra in _arguments(g, node):
                    dot.edge(loop_picture.name_of(a, k, found, named), here, **_FORWARD_EDGE, **extra)



def _same_rank(dot: graphviz.Digraph, names: list[str], rank: str) -> None:
    """Put ``names`` on one rank, in this order (inputs on top, outputs at the bottom)."""
    if not names or (len(names) < 2 and rank == "same"):
        return
    with dot.subgraph() as row:
        row.attr(rank=rank)
        for name in names:
            row.node(name)
        for a, b in pairwise(names):
            row.edge(a, b, style="invis")


def _draw_backward(dot: graphviz.Digraph, g: Graph, order: list[int], local: Mapping[int, int],
                   root: int, sweep: _Sweep, values: Mapping[int, float] | None, names: _Namer,
                   large: bool) -> None:
    back = graphviz.Digraph("cluster_backward", graph_attr={
        "label": "backward: reverse sweep, adjoints ∂f/∂node", "color": "#2e7d32", "style": "rounded",
        "fontsize": "13", "fontcolor": "#2e7d32", "bgcolor": "#f4fbf4"})
    for node in sweep.nodes:
        i, op = local[node], g.op[node]
        what = str(g.data[node]) if op == "var" else "f" if node == root else f"n{i}"
        lines: list[tuple[str, str]] = [(f"∂f/∂{what}", 'POINT-SIZE="14"')]
        count = len(sweep.incoming.get(node, ()))
        style = OUTPUT_STYLE if op == "var" else SUM_STYLE if count > 1 else ADJOINT_STYLE
        if count > 1:
            lines.append((f"Σ of {count} contributions", 'POINT-SIZE="10" COLOR="#1b5e20"'))
        if values is not None:
            v, terms = sweep.adjoint[node], sweep.terms.get(node, [])
            text = "= " + fmt(v)
            if 1 < len(terms) <= 4:
                text = fmt(terms[0]) + "".join((" − " if t < 0 else " + ") + fmt(abs(t)) for t in terms[1:]) \
                    + " " + text
            lines.append((text, "" if math.isfinite(v) else f'COLOR="{_BAD}"'))
        back.node(f"g{i}", _html(*lines), **style)
    _same_rank(back, [f"g{local[n]}" for n in sweep.nodes[::-1] if g.op[n] == "var"], "same")
    for e, (user, arg, partial) in enumerate(sweep.edges):
        label = "× " + names.text(partial, wrap=True)
        if values is not None and g.op[partial] != "const":
            label += " = " + fmt(sweep.partial[e])
        style = _BACKWARD_EDGE
        if e in sweep.blocked:
            label += "\nbranch not taken: passes 0"
            style = {**_BACKWARD_EDGE, "style": "dashed", "color": "#9e9e9e", "fontcolor": "#757575"}
        # Edge labels make dot rank twice as many rows; on big graphs they become tooltips.
        back.edge(f"g{local[user]}", f"g{local[arg]}", **({"tooltip": label} if large else {"label": label}),
                  **style)
    dot.subgraph(back)
    dot.edge(f"n{local[root]}", f"g{local[root]}", label="seed 1", style="dashed",
             color="#2e7d32", fontcolor="#2e7d32", arrowsize="0.7")


# ------------------------------------------------------------------ files
def write_picture(dot: graphviz.Digraph, path: str) -> None:
    """Write ``dot`` to ``path`` in the format its extension names; ``-`` prints the DOT text."""
    if path == "-":
        sys.stdout.write(dot.source)
        return
    fmt_ = Path(path).suffix.lower().lstrip(".")
    if fmt_ not in FORMATS:
        raise SymadError(f"cannot tell the picture format from {path!r}: "
                         f"use one of {', '.join('.' + f for f in FORMATS)}, or - for DOT text")
    if fmt_ in ("dot", "gv"):
        data: bytes = dot.source.encode("utf-8")
    else:
        data = render(dot, fmt_)
    write_atomically(path, data)


def render(dot: graphviz.Digraph, format: str, timeout: float = RENDER_TIMEOUT) -> bytes:  # noqa: A002
    """The picture as bytes (``png``, ``svg``, ``pdf``) from Graphviz's ``dot``, within ``timeout`` s."""
    try:
        proc = subprocess.run(["dot", f"-T{format}"], input=dot.source.encode("utf-8"),
                              capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise DotNotFoundError(
            f"writing {format.upper()} needs Graphviz's dot program, which is not installed: "
            "install it with 'apt-get install graphviz' (or write DOT text, a .dot file)") from None
    except subprocess.TimeoutExpired:
        raise LimitError(f"dot did not finish the layout within {timeout:g} s; draw a smaller "
                         "expression, or write DOT text (a .dot file) and run dot yourself") from None
    if proc.returncode:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SymadError("dot failed" + (f": {detail[0]}" if detail else f" with status {proc.returncode}"))
    return proc.stdout
