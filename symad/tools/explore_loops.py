"""The page of an expression with sums kept as loops: each loop one box holding its body.

The steps are ``symad explain``'s over loops (:func:`symad.tools.loop_explanation.explain_loops`):
the top level, where a loop is one step receiving its adjoint; each loop's body once, at one
iteration (its rows ``w1``, ``w2``, ..., a loop inside it a box inside its box, its rows ``v1``,
...); the gathers of the partials along an entry ``x[k]``.
The picture is drawn from those rows (each row's arguments are the names its text uses), so every
step has its node: the top level's outside the boxes, a body's inside its loop's box, with the
loop's own node (Σ) fed by the body's last row.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

import graphviz

from symad.core.dag import Graph
from symad.core.errors import LimitError, SymadError
from symad.core.ops import OPS
from symad.expr import Expr, parse
from symad.tools import viz
from symad.tools.explanation import Explanation, explain
from symad.tools.explore_data import number, rows_layout_attrs, shown, sweep_data
from symad.tools.loop_explanation import LETTERS, term_text

_LOOP_SYMBOL = {"sum": "Σ", "prod": "Π", "each": "each"}
_BOX_FILLS = ("#f8f4fd", "#efe6fa", "#e6d8f6", "#dccaf1")  # a box inside a box a shade darker
_NAME = re.compile(rf"\b[{LETTERS}]\d+\b")  # the rows' names: z at the top level, w, v, ... in bodies


def loop_parts(expr: Expr, point: Mapping[str, Any], max_drawn: int, rankdir: str,
               iteration: int | None = None) -> tuple[graphviz.Digraph, dict[str, Any]]:
    """The picture and the page's data of ``expr`` (with loops) at ``point``, each body at ``iteration``."""
    steps = explain(expr, point, iteration=iteration)
    drawn = len(steps.top.rows) + sum(len(s.body.rows) for s in steps.loops)
    if drawn > max_drawn:
        raise LimitError(f"the page of an expression with loops draws every node of its top level and of its "
                         f"loops' bodies: {drawn} nodes, more than {max_drawn}; raise the limit with "
                         f"{{setting}}{drawn}", "max_drawn")
    loops = {s.name: s for s in steps.loops}
    dot = graphviz.Digraph("symad", graph_attr=rows_layout_attrs(rankdir, drawn))
    dot.attr("node", fontname="Helvetica", fontsize="13", margin="0.12,0.05", height="0.4")
    dot.attr("edge", fontname="Helvetica", fontsize="11", color="#555555", arrowsize="0.7")
    edges: dict[str, list[str]] = {}

    def edge(tail: str, head: str, where: graphviz.Digraph = dot) -> None:
        name = f"sx-e{sum(len(v) for v in edges.values())}"
        where.edge(tail, head, id=name)
        edges.setdefault(head, []).append(name)

    top_rows = _rows(steps.top, "")
    for row in top_rows:
        if row["z"] in loops:
            row["loop"] = True
        else:
            _node(dot, f"sx-{row['z']}", row, root=row is top_rows[-1])
    sections = [{"key": "", "rows": top_rows, "sweep": sweep_data(steps.top)}]
    boxes: dict[str, graphviz.Digraph] = {}
    for k, step in enumerate(steps.loops, 1):  # a loop before the loops of its body (their boxes go in its box)
        key, parent = step.name, step.parent
        at = ", ".join(f"{k} = {v}" for k, v in step.at.items())
        rows = _rows(step.body, key)
        box = boxes[key] = graphviz.Digraph(name=f"cluster_loop{k}")
        depth = key.count("/")
        box.attr(id=f"sx-box-{key}", label=f"{step.text}: its body at {at}",
                 **{**viz.LOOP_BOX_STYLE, "fillcolor": _BOX_FILLS[min(depth, len(_BOX_FILLS) - 1)]})
        symbol = _LOOP_SYMBOL.get(step.text.split("(", 1)[0].strip(), "Σ")
        own = f"sx-{parent}-{key.rsplit('/', 1)[-1]}" if parent else f"sx-{key}"  # its row's node, a step above
        box.node(own, f'<<FONT POINT-SIZE="17">{symbol}</FONT><BR/><FONT POINT-SIZE="10" '
                 f'COLOR="#666666">{html.escape(key.rsplit("/", 1)[-1])}</FONT>>', id=own, **viz.LOOP_STYLES["sum"])
        for row in rows:
            if f"{key}/{row['z']}" in loops:
                row["loop"] = True  # drawn in its own box, inside this one
            else:
                _node(box, f"sx-{key}-{row['z']}", row)
        if rows:
            edge(f"sx-{key}-{rows[-1]['z']}", own, box)
        for row in rows:
            for a in row["args"]:
                edge(f"sx-{key}-{a}", f"sx-{key}-{row['z']}", box)
        bar = _bar(key.rsplit("/", 1)[-1])
        scale = step.scale
        whose = (f" (for 1 of the body of {parent}); the body's adjoints are for 1, times {shown(scale)} for f "
                 f"(the adjoints of the loops around it, multiplied)" if parent else
                 f"; the body's adjoints are for 1, times {shown(scale)} for f" + (
                     " (with what the bodies that read it pass on)" if scale != step.seed and step.factor is None
                     else ""))
        sections.append({
            "key": key, "rows": rows, "sweep": sweep_data(step.body), "box": f"sx-box-{key}",
            "title": f"the body of {key} at {at}",
            "note": f"{key} = {step.text}: its body at {at} (of {step.low}..{step.high}). "
                    f"{_sentence(step.received(bar, shown))}{whose}."})
    for step in reversed(steps.loops):  # the innermost boxes first: a box is whole when it goes in its parent's
        (boxes[step.parent] if step.parent else dot).subgraph(boxes[step.name])
    for row in top_rows:
        for a in row["args"]:
            edge(f"sx-{a}", f"sx-{row['z']}")
    gathers = []
    nested = steps.nested
    for entry, terms in steps.gathers.items():
        gathers.append({"entry": entry, "d": number(steps.gradient[entry]), "terms": [
            {"text": term_text(t), "value": number(t.value)} for t in terms],
            "note": f"The partial along {entry} adds, over every body's entries of the vector, what the entry passes "
                    f"on (its adjoint times its loops') over the iterations that read {entry}: a sum over the "
                    f"indices the entry leaves free, from the compiled gradient." if nested else
                    f"The partial along {entry} adds, over each loop's entries x[i + c], the body's adjoint of the "
                    f"entry at i = k - c times the loop's adjoint (an iteration outside the range adds nothing)."})
    names = steps.top.result_names
    gradient = [{"var": v, "z": names.get(v), "d": number(d)} for v, d in steps.gradient.items()]
    at = ", ".join(f"{k} = {v if isinstance(v, str) else shown(v)}" for k, v in steps.point.items())
    data = {"at": at, "sections": sections, "gathers": gathers, "gradient": gradient, "edges": edges,
            "notes": [], "boxes": {},
            "gradientNote": "The partials along the other entries are gathered the same way (symad grad "
                            "prints them all)." if gathers else ""}
    return dot, data


def _bar(name: str) -> str:
    return f"{name[0]}\u0304{name[1:]}"


def _rows(steps: Explanation, key: str) -> list[dict[str, Any]]:
    """A section's rows for the page: name, text, value, and the names of the rows it uses."""
    known = {row.name for row in steps.rows}
    out = []
    for row in steps.rows:
        args = list(dict.fromkeys(n for n in _NAME.findall(row.expr) if n in known and n != row.name))
        out.append({"z": row.name, "expr": row.expr, "v": number(row.value), "args": args})
    return out


def _node(where: graphviz.Digraph, name: str, row: Mapping[str, Any], root: bool = False) -> None:
    """A row's node: its operation's symbol over its name, or a leaf's text."""
    op = _operation(row["expr"]) if row["args"] else None
    caption = f'<BR/><FONT POINT-SIZE="10" COLOR="#666666">{html.escape(row["z"])}</FONT>'
    if op is None:
        leaf = "const" if re.fullmatch(r"-?[\d.e+-]+", row["expr"]) else "var"
        attrs = dict(viz.STYLES[leaf])
        label = f'<<FONT POINT-SIZE="15">{html.escape(row["expr"])}</FONT>{caption}>'
    else:
        attrs = dict(viz.STYLES[op])
        label = f'<<FONT POINT-SIZE="17">{html.escape(OPS[op].symbol)}</FONT>{caption}>'
    if root:
        attrs.update(penwidth="2.5", peripheries="2")
    where.node(name, label, id=name, **attrs)


def _operation(text: str) -> str | None:
    """The operation of a row's text (``z1 + z3`` is an ``add``), or None if it does not read as one."""
    try:
        e = parse(text, Graph())
    except SymadError:
        return None
    op = e.graph.op[e.id]
    return op if op in OPS and OPS[op].kind != "leaf" and op in viz.STYLES else None


def _sentence(text: str) -> str:
    """``text`` with its first letter a capital (the rest as it is)."""
    return text[:1].upper() + text[1:]
