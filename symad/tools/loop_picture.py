"""Where each node of an expression with loops is drawn: outside every loop, or in a loop's box.

A picture draws a ``sum``/``prod``/``each`` as one box (a Graphviz cluster) holding its body: the
loop's own node (its result), the body's nodes, and the loop's index as a leaf.  The loop's
captures (the parts of its body that do not use its index) are drawn outside, in the box around
it, with their edges going in; a loop inside a body is a box inside the box.  Entries are leaves
labelled ``x[i + 1]`` (their index arithmetic is in the label).  Constants are drawn in each box
that uses them, so that no edge crosses a box for a number.  :mod:`symad.tools.viz` draws it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from symad.core import binders
from symad.core.dag import BINDERS, Graph

_DRAWN_INSIDE = ("const", "vector")  # never captured: drawn in every box that uses them


class Box(NamedTuple):
    """A loop's box (``binder`` None: the picture outside every loop)."""

    binder: int | None
    parent: int | None  # the position of the box around it in :func:`boxes`' list
    nodes: list[int]  # drawn in it, in topological order


def boxes(graph: Graph, root: int) -> list[Box]:
    """The boxes of the picture of ``root``, each box after the one around it (breadth first)."""
    lv = binders.levels(graph)
    op_of, args_of, data_of = graph.op, graph.args, graph.data
    out: list[Box] = []
    todo: list[tuple[int | None, int | None]] = [(None, None)]
    while len(out) < len(todo):
        binder, parent = todo[len(out)]
        here = len(out)
        if binder is None:
            level, stack, members = -1, [root], set()
        else:
            level = data_of[binder][0]  # type: ignore[index]
            index = graph.index(level)  # (exists: a loop's body uses its index, else it was hoisted)
            stack, members = [args_of[binder][0]], {binder, index}
        inner: set[int] = set()
        while stack:
            node = stack.pop()
            if node in members or node in inner:
                continue
            op = op_of[node]
            if lv[node] < level and op not in _DRAWN_INSIDE:
                continue  # a capture: drawn in a box around this one
            if op in BINDERS:
                inner.add(node)
                todo.append((node, here))  # its own box, inside this one; its captures in this one
                stack.extend(args_of[node][1:])
                continue
            members.add(node)
            if op != "item":  # an entry's indices are in its label
                stack.extend(args_of[node])
        out.append(Box(binder, parent, sorted(members)))
    return out


def names(local: Mapping[int, int], found: list[Box], prefix: str = "n") -> list[dict[int, str]]:
    """Per box, the Graphviz name of each node drawn in it: ``n5`` outside loops, ``n5_b2`` in
    box 2 (a node may be drawn in several boxes, a loop in the body of several others); a loop's
    own node is drawn in its box and named so in the box around it too."""
    out = []
    for k, box in enumerate(found):
        suffix = f"_b{k}" if k else ""
        out.append({n: f"{prefix}{local[n]}{suffix}" for n in box.nodes})
    for k, box in enumerate(found):
        if box.parent is not None:
            out[box.parent][box.binder] = out[k][box.binder]  # type: ignore[index]
    return out


def name_of(node: int, box: int, found: list[Box], named: list[dict[int, str]]) -> str:
    """The name of ``node`` as seen from ``box``: drawn in it, or in the nearest box around it."""
    at: int | None = box
    while at is not None:
        name = named[at].get(node)
        if name is not None:
            return name
        at = found[at].parent
    raise KeyError(node)  # (every argument is drawn in its user's box or one around it)


def item_levels(graph: Graph, item: int) -> list[int]:
    """The index levels an entry's indices use, in order."""
    levels: set[int] = set()
    for index in graph.args[item][1:]:
        form = binders.affine(graph, index)
        if form is not None:
            levels.update(form[0])
    return sorted(levels)
