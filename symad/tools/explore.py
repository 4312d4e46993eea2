"""An interactive page of the reverse sweep: the DAG, stepped through forward and backward.

:func:`explore` writes one self-contained HTML file (:class:`Page`): Graphviz's layout of the DAG
as inline SVG, the steps of :func:`symad.tools.explanation.explain` (the one reverse sweep of
:mod:`symad.ad.trace`, so every number is the gradient's, bit for bit) as JSON, and a little
JavaScript that steps through the forward pass and then the backward sweep, one node at a time.
No network access, no external file: the page works offline, in a browser or inline in Jupyter.

Each node of the picture is named after its row of the explanation (``z3``), so the page, the
table of ``symad explain`` and the picture say the same thing.  Past ``max_drawn`` nodes the
picture collapses: it draws the part nearest the output and one box per collapsed subgraph (the
steps still go through every node, highlighting the box that holds it), and says so.
"""

from __future__ import annotations

import html
import json
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import graphviz

from symad.ad.sweep import canonical_order
from symad.core import binders, indexed
from symad.core.dag import Graph
from symad.core.errors import LimitError, SymadError, check_variables
from symad.core.files import write_atomically
from symad.core.ops import OPS
from symad.core.printing import format_number, to_infix
from symad.expr import Expr, parse
from symad.tools import viz
from symad.tools.explanation import Explanation, explain
from symad.tools.explore_data import number, rows_layout_attrs, shown, sweep_data
from symad.tools.explore_loops import loop_parts

MAX_DRAWN = 150
"""Nodes drawn before the picture collapses subgraphs into boxes (``dot``'s layout time grows fast
past a few hundred nodes; the steps still cover every node)."""

_FULL_TEXT = 40  # a node's whole expression is shown on hover up to this many tree nodes
_COLLAPSED_STYLE = {"shape": "box", "style": "rounded,dashed,filled", "fillcolor": "#f2f2f2",
                    "color": "#888888", "fontcolor": "#444444"}
_NUMBERS_WIDTH = 110  # points right of the layout for the values and adjoints written beside nodes
_FRAME_HEIGHT = 640  # pixels of the inline frame in a notebook
_EDGE = "#555555"  # the edges' colour (set by the page's style)


@dataclass
class Page:
    """The page of an expression at a point: ``html`` (one file), ``save(path)``, inline in Jupyter."""

    html: str = field(repr=False)
    expression: str
    nodes: int  # nodes of the DAG (numbers included)
    drawn: int  # nodes of the DAG drawn in the picture
    collapsed: int = 0  # boxes standing for collapsed subgraphs
    notes: list[str] = field(default_factory=list)

    def save(self, path: str) -> None:
        """Write the page to ``path`` (UTF-8 HTML)."""
        write_atomically(path, self.html)

    def _repr_html_(self) -> str:
        # A frame of its own: two pages in one notebook share no ids, styles or key handlers.
        return (f'<iframe srcdoc="{html.escape(self.html, quote=True)}" sandbox="allow-scripts" '
                f'style="width:100%;height:{_FRAME_HEIGHT}px;border:1px solid #ddd" '
                f'title="symad explore: {html.escape(self.expression, quote=True)}"></iframe>')


def explore(expr: Expr | str, at: Mapping[str, Any], *, max_drawn: int = MAX_DRAWN,
            title: str | None = None, rankdir: str = "TB", iteration: int | None = None) -> Page:
    """The interactive page of ``expr``'s forward pass and reverse sweep at ``at``.

    ``max_drawn`` bounds the nodes drawn (past it, subgraphs collapse into boxes); ``title``
    replaces the expression's text as the page's heading; ``rankdir`` is the layout's direction
    (``TB`` inputs at the top, ``LR`` inputs on the left); with sums kept as loops, ``iteration``
    is where each loop's body is shown and the entry ``x[iteration]`` gathered (``symad explain
    --iteration``; by default each loop's first).

    >>> page = explore("(x+y)+x*(x+y)", at={"x": 1, "y": 2})
    >>> page.html.startswith("<!DOCTYPE html>"), page.drawn
    (True, 5)
    """
    if rankdir.upper() not in ("TB", "LR", "BT", "RL"):
        raise SymadError(f"rankdir must be TB, LR, BT or RL, not {rankdir!r}")
    if max_drawn < 1:
        raise LimitError(f"{{setting}} must be at least 1, got {max_drawn}", "max_drawn")
    if isinstance(expr, str):
        expr = parse(expr, Graph())
    g, root = expr.graph, expr.id
    if binders.has_scoped(g, [root]):
        dot, data = loop_parts(expr, at, max_drawn, rankdir.upper(), iteration)
        heading = title if title is not None else _cut(str(expr))
        data["title"] = heading
        nodes = sum(len(s["rows"]) for s in data["sections"])
        return Page(_fill(heading, _svg(dot), data), heading, nodes, nodes)
    if iteration is not None:
        raise SymadError("iteration is for sums kept as loops (this expression has none)")
    if g.op[root] == "const":
        raise SymadError(f"the expression is the number {str(expr)}: there is no sweep to step through")
    point = indexed.expand_point(expr.variables, at)
    check_variables(expr.variables, point)
    steps = explain(expr, point)
    order = canonical_order(g, [root])
    named = [n for n in order if g.op[n] != "const"]
    if len(named) != len(steps.rows):  # (explain names the same nodes in the same order)
        raise SymadError("internal error: the page's nodes and the explanation's rows differ")
    z = {node: row.name for node, row in zip(named, steps.rows, strict=True)}
    layout = _Layout(g, root, order, z, max_drawn, rankdir.upper())
    svg = _svg(layout.digraph())
    sizes = _tree_sizes(g, order)
    heading = title if title is not None else to_infix(g, root) if sizes[root] <= _FULL_TEXT else \
        f"{steps.rows[-1].expr}   ({len(named)} nodes; z names as in the steps)"
    data = _data(g, steps, named, z, layout, heading, sizes)
    page = _fill(heading, svg, data)
    return Page(page, heading, len(order), len(layout.drawn), len(layout.boxes), layout.notes)


# ------------------------------------------------------------------ what is drawn
class _Layout:
    """The drawn nodes (all, or the part nearest the output and one box per collapsed subgraph)."""

    def __init__(self, g: Graph, root: int, order: list[int], z: Mapping[int, str], max_drawn: int,
                 rankdir: str = "TB"):
        self.g, self.root, self.z, self.rankdir = g, root, z, rankdir
        self.notes: list[str] = []
        self.boxes: list[int] = []  # the first node of each collapsed subgraph (its head)
        self.members: dict[int, list[int]] = {}  # head -> the named nodes it stands for
        if len(order) <= max_drawn:
            self.drawn = list(order)
            self.owner: dict[int, int] = {}
            return
        drawn: list[int] = []
        seen, queue = {root}, deque([root])
        while queue and len(drawn) + len(queue) < max_drawn:  # breadth first from the output
            node = queue.popleft()
            drawn.append(node)
            for a in g.args[node]:
                if a not in seen:
                    seen.add(a)
                    queue.append(a)
        for node in queue:
            (drawn if g.op[node] in ("const", "var") else self.boxes).append(node)
        inside = set(drawn)
        owner: dict[int, int] = {}
        for head in self.boxes:  # each hidden node belongs to the first box that reaches it
            stack = [head]
            while stack:
                node = stack.pop()
                if node in inside or node in owner:
                    continue
                owner[node] = head
                stack.extend(g.args[node])
        for node in order:
            if node in owner and g.op[node] != "const":
                self.members.setdefault(owner[node], []).append(node)
        self.drawn = [n for n in order if n in inside]
        self.owner = owner
        hidden = sum(len(m) for m in self.members.values())
        self.notes.append(f"The DAG has {len(order)} nodes: the picture draws the {len(self.drawn)} nearest the "
                          f"output and collapses {hidden} others into {len(self.boxes)} dashed boxes; the steps "
                          f"go through every node, highlighting the box that holds a collapsed one.")

    def element(self, node: int) -> str | None:
        """The id of the picture's element showing ``node`` (its own, or its box's)."""
        if node in self.owner:
            return f"sx-box-{self.z[self.owner[node]]}"
        return self._id(node)

    def _id(self, node: int) -> str:
        return f"sx-{self.z[node]}" if node in self.z else f"sx-c{self.drawn.index(node)}"

    def digraph(self) -> graphviz.Digraph:
        g = self.g
        large = len(self.drawn) + len(self.boxes) > viz.LARGE
        dot = graphviz.Digraph("symad", graph_attr=rows_layout_attrs(self.rankdir, len(self.drawn) + len(self.boxes)))
        dot.attr("node", fontname="Helvetica", fontsize="13", margin="0.12,0.05", height="0.4")
        dot.attr("edge", fontname="Helvetica", fontsize="11", color=_EDGE, arrowsize="0.7")
        inputs = []
        for node in self.drawn:
            attrs = dict(viz.STYLES[g.op[node]])
            if large:  # a plain box is a fifth of a rounded one's path in the file
                attrs["style"] = attrs["style"].replace("rounded,", "")
            if node == self.root:
                attrs.update(penwidth="2.5", peripheries="2")
            dot.node(self._id(node), self._label(node), id=self._id(node), **attrs)
            if g.op[node] == "var":
                inputs.append(self._id(node))
        for head in self.boxes:
            count = len(self.members[head])
            label = (f"<{html.escape(self.z[head])} …<BR/><FONT POINT-SIZE=\"10\">{count} collapsed "
                     f"node{'s' if count > 1 else ''}</FONT>>")
            dot.node(f"sx-box-{self.z[head]}", label, id=f"sx-box-{self.z[head]}", **_COLLAPSED_STYLE)
        if not large and len(inputs) > 1:
            with dot.subgraph() as row:
                row.attr(rank="min")
                for name in inputs:
                    row.node(name)
        count = 0
        for node in self.drawn:
            spec = OPS[g.op[node]]
            numbered = len(g.args[node]) > 1 and not spec.commutative
            for k, a in enumerate(g.args[node]):
                extra = {"headlabel": spec.roles[k] if spec.roles else str(k + 1), "labelfontsize": "9",
                         "labelfontcolor": "#777777"} if numbered else {}
                dot.edge(self.element(a), self._id(node), id=f"sx-e{count}", **extra)  # type: ignore[arg-type]
                count += 1
        return dot

    def _label(self, node: int) -> str:
        g, op = self.g, self.g.op[node]
        caption = f'<BR/><FONT POINT-SIZE="10" COLOR="#666666">{html.escape(self.z.get(node, ""))}</FONT>'
        if op == "var":
            return f'<<FONT POINT-SIZE="16">{html.escape(str(g.data[node]))}</FONT>{caption}>'
        if op == "const":
            return f"<{html.escape(format_number(g.data[node]))}>"  # type: ignore[arg-type]
        spec = OPS[op]
        return f'<<FONT POINT-SIZE="17">{html.escape(spec.symbol)}</FONT>{caption}>'

    def edges_into(self) -> dict[str, list[str]]:
        """Each drawn user's element id -> the ids of the edges into it, in argument order."""
        out: dict[str, list[str]] = {}
        count = 0
        for node in self.drawn:
            for _ in self.g.args[node]:
                out.setdefault(self._id(node), []).append(f"sx-e{count}")
                count += 1
        return out


def _svg(dot: graphviz.Digraph) -> str:
    """The layout as an inline ``<svg>`` element that scales with its container."""
    text = viz.render(dot, "svg").decode("utf-8")
    text = text[text.index("<svg"):]
    text = re.sub(r'viewBox="([-\d.]+) ([-\d.]+) ([-\d.]+) ([-\d.]+)"',  # room for the numbers beside nodes
                  lambda m: f'viewBox="{m[1]} {m[2]} {float(m[3]) + _NUMBERS_WIDTH:.2f} {m[4]}"', text, count=1)
    text = re.sub(r'<svg width="[^"]*" height="[^"]*"', '<svg id="sx-svg" preserveAspectRatio="xMidYMin meet"',
                  text, count=1)
    text = re.sub(r"<!--.*?-->\n?", "", text, flags=re.S)  # Graphviz's comments: node names again
    text = re.sub(r"<title>[^<]*</title>\n?", "", text)  # the browser's own tooltips would say "sx-z3"
    # The page's style sets the font and the edges' colour once; coordinates to a tenth of a point.
    for attribute in (' font-family="Helvetica,sans-Serif"', f' fill="{_EDGE}"', f' stroke="{_EDGE}"'):
        text = text.replace(attribute, "")
    return re.sub(r'(\s(?:d|points|x|y|cx|cy|rx|ry)=")([^"]*)"',
                  lambda m: m[1] + re.sub(r"(\.\d)\d+", r"\1", m[2]) + '"', text)


# ------------------------------------------------------------------ the steps, as data
def _cut(text: str, most: int = 200) -> str:
    return text if len(text) <= most else text[:most - 1] + "…"


def _tree_sizes(g: Graph, order: list[int]) -> dict[int, int]:
    """Each node's size written out as a tree, capped past _FULL_TEXT (only "short or not" matters)."""
    sizes: dict[int, int] = {}
    for node in order:  # arguments first
        sizes[node] = min(1 + sum(sizes[a] for a in g.args[node]), _FULL_TEXT + 1)
    return sizes


def _data(g: Graph, steps: Explanation, named: list[int], z: Mapping[int, str], layout: _Layout,
          heading: str, sizes: Mapping[int, int]) -> dict[str, Any]:
    rows = []
    for node, row in zip(named, steps.rows, strict=True):
        item: dict[str, Any] = {"z": row.name, "expr": row.expr, "v": number(row.value)}
        if layout.element(node) != f"sx-{row.name}":
            item["el"] = layout.element(node)
        if g.op[node] != "var" and sizes[node] <= _FULL_TEXT:
            item["full"] = to_infix(g, node)
        item["args"] = [z[a] for a in g.args[node] if a in z]
        rows.append(item)
    gradient = [{"var": v, "z": steps.result_names[v], "d": number(d)} for v, d in steps.result.items()]
    at = ", ".join(f"{k} = {shown(v)}" for k, v in steps.point.items())
    return {"title": heading, "at": at, "sections": [{"key": "", "rows": rows, "sweep": sweep_data(steps)}],
            "gradient": gradient, "edges": layout.edges_into(), "notes": layout.notes,
            "boxes": {f"sx-box-{z[h]}": [z[n] for n in layout.members[h]] for h in layout.boxes}}


def _fill(heading: str, svg: str, data: dict[str, Any]) -> str:
    """The page template with its parts in place (one pass: no part is read as a placeholder)."""
    folder = resources.files("symad.tools")
    parts = {
        "TITLE": html.escape(heading),
        "STYLE": (folder / "explore_page.css").read_text(encoding="utf-8"),
        "SCRIPT": (folder / "explore_page.js").read_text(encoding="utf-8"),
        "SVG": svg,
        "DATA": json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c"),
    }
    template = (folder / "explore_page.html").read_text(encoding="utf-8")
    return re.sub(r"\{\{(\w+)\}\}", lambda m: parts[m[1]], template)
