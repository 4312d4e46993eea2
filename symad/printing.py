"""DAG → infix text with the fewest parentheses that parse back to the same node.

Printing walks an explicit stack of pieces and joins them once at the end, so
deep expressions neither recurse nor copy ever-longer strings.
"""

from __future__ import annotations

import math

from .graph import Graph
from .ops import OPS, PREC_ATOM, PREC_UNARY

_NAMED = {math.pi.hex(): "pi", math.e.hex(): "e"}


def format_number(value: float, named_constants: bool = True) -> str:
    """Shortest text that reads back as exactly ``value``: ``2``, ``0.5``, ``1e-05``, ``pi``."""
    named = _NAMED.get(value.hex()) or _NAMED.get((-value).hex()) if named_constants else None
    if named is not None:
        return named if value > 0 else "-" + named
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def precedence(graph: Graph, node: int) -> int:
    """How tightly the printed node binds (a negative number prints like unary minus)."""
    op = graph.op[node]
    if op == "const":
        value = graph.data[node]
        return PREC_UNARY if math.copysign(1.0, value) < 0 and not math.isnan(value) else PREC_ATOM  # type: ignore[arg-type]
    return OPS[op].prec


def to_infix(graph: Graph, root: int) -> str:
    """The expression as infix text; ``parse(to_infix(g, n))`` is node ``n`` again.

    Infix printing expands shared nodes once per use (a tree), so heavily
    shared DAGs print long; :func:`symad.graph.Graph.tree_size` tells how long.
    """
    out: list[str] = []
    stack: list[object] = [root]  # ints are nodes to print, strings are literal pieces
    op_of, args_of, data_of = graph.op, graph.args, graph.data
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        node = item  # type: ignore[assignment]
        op = op_of[node]
        if op == "const":
            out.append(format_number(data_of[node]))  # type: ignore[arg-type]
            continue
        if op == "var":
            out.append(data_of[node])  # type: ignore[arg-type]
            continue
        spec = OPS[op]
        args = args_of[node]
        pieces: list[object]
        if spec.kind == "infix":
            left, right = args
            lp, rp = precedence(graph, left), precedence(graph, right)
            if spec.assoc == "left":
                left_paren, right_paren = lp < spec.prec, rp <= spec.prec
            else:  # right-assoc power: base is an atom, exponent a unary expression
                left_paren, right_paren = lp <= spec.prec, rp < PREC_UNARY
            sep = f" {spec.symbol} " if spec.prec == OPS["add"].prec else spec.symbol
            pieces = [*_wrap(left, left_paren), sep, *_wrap(right, right_paren)]
        elif spec.kind == "prefix":
            (arg,) = args
            pieces = [spec.symbol, *_wrap(arg, precedence(graph, arg) < PREC_UNARY)]
        else:
            pieces = [spec.symbol, "("]
            for i, arg in enumerate(args):
                if i:
                    pieces.append(", ")
                pieces.append(arg)
            pieces.append(")")
        stack.extend(reversed(pieces))
    return "".join(out)


def _wrap(node: int, paren: bool) -> list[object]:
    return ["(", node, ")"] if paren else [node]
