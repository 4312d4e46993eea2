"""DAG → infix text with the fewest parentheses that parse back to the same node.

Printing walks an explicit stack of pieces and joins them once at the end, so
deep expressions neither recurse nor copy ever-longer strings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from symad.core import binders
from symad.core.dag import SCOPED, Graph
from symad.core.ops import OPS, PREC_ATOM, PREC_SUM, PREC_UNARY

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
    if op in SCOPED:
        return PREC_ATOM
    return OPS[op].prec


# `auto` printing switches to named shared subexpressions when expanding the DAG
# into a tree would give more than this many nodes *and* SHARED_RATIO times the DAG.
SHARED_MIN_TREE = 2000
SHARED_RATIO = 4


def to_text(graph: Graph, root: int, form: str = "auto") -> str:
    """The expression as text: ``"inline"`` infix, ``"shared"`` with named shared
    subexpressions (``_1 = x + y; _1*_1``), or ``"auto"``: shared only when inline
    text would be much larger than the DAG.  Every form parses back to ``root``.
    """
    if form not in ("auto", "inline", "shared"):
        raise ValueError(f"form must be auto, inline or shared, not {form!r}")
    if form == "auto":
        tree = graph.tree_size(root)
        shared = tree > SHARED_MIN_TREE and tree > SHARED_RATIO * len(graph.reachable([root]))
        form = "shared" if shared else "inline"
    return to_infix(graph, root) if form == "inline" else to_shared(graph, root)


def to_shared(graph: Graph, root: int) -> str:
    """Infix text in which every operation used more than once is defined once by name.

    The text grows with the DAG, not with the tree, whatever the sharing.
    """
    definitions, (text,) = shared_texts(graph, [root])
    return "\n".join([f"{name} = {body};" for name, body in definitions] + [text])


def to_texts(graph: Graph, roots: list[int], form: str = "auto",
             index_names: Sequence[str] = ()) -> tuple[list[tuple[str, str]], list[str]]:
    """Several expressions printed together: ``(definitions, texts)``.

    ``"auto"`` prints each root as :func:`to_text` does (no definitions) unless
    the roots together would print much larger than their DAG, or would print a
    loop (a sum or product, its body with it) more than once where naming a part
    prints it once; then, as in ``"shared"``, every operation used more than once,
    within a root or across roots, is defined once by name and the texts refer to
    those names.  The definitions written ``_1 = ...; _2 = ...;`` followed by a
    text parse back to that root.  Either way the output grows with the DAG.
    ``index_names``: the names of the free index levels of the roots that leave some free (the
    definitions leave none).
    """
    if form not in ("auto", "inline", "shared"):
        raise ValueError(f"form must be auto, inline or shared, not {form!r}")
    if form == "auto":
        order = graph.reachable(roots)
        sizes = _tree_sizes(graph, order)
        tree = sum(sizes[r] for r in roots)
        if not (tree > SHARED_MIN_TREE and tree > SHARED_RATIO * len(order)) and not loop_repeated(graph, roots):
            # Within budget: each root's own text costs at most its tree, so this stays linear.
            if index_names:
                return [], [to_infix(graph, r, index_names=free_index_names(graph, r, index_names)) for r in roots]
            return [], [to_text(graph, r) for r in roots]
        form = "shared"
    if form == "inline":
        return [], [to_infix(graph, r, index_names=free_index_names(graph, r, index_names)) for r in roots]
    return shared_texts(graph, roots, index_names)


def free_index_names(graph: Graph, root: int, index_names: Sequence[str]) -> Sequence[str]:
    """``index_names`` for a root that leaves an index free (the body of an ``each``); none for
    another, whose loops are named as usual (i, j, ...)."""
    return index_names if index_names and graph.scoped and binders.levels(graph)[root] >= 0 else ()


def loop_repeated(graph: Graph, roots: list[int]) -> bool:
    """Whether a part the shared form names (used more than once) holds a loop: printed inline,
    that loop would be printed, body and all, once a use."""
    named = shared_names(graph, roots)
    if not named:
        return False
    holds: dict[int, bool] = {}
    for node in graph.reachable(roots):  # topological: arguments first
        holds[node] = graph.op[node] in SCOPED or any(holds[a] for a in graph.args[node])
    return any(holds[n] for n in named)


def shared_names(graph: Graph, roots: list[int]) -> list[int]:
    """The operations the roots use more than once, children first: what the shared forms name."""
    order = graph.reachable(roots)
    uses: dict[int, int] = {}
    for node in order:
        for a in graph.args[node]:
            uses[a] = uses.get(a, 0) + 1
    for r in roots:
        uses[r] = uses.get(r, 0) + 1
    free = binders.levels(graph)  # a part of a loop's body is named inside it, never outside
    return [node for node in order if graph.args[node] and uses[node] > 1 and free[node] < 0
            and graph.op[node] != "item"]


def shared_texts(graph: Graph, roots: list[int],
                 index_names: Sequence[str] = ()) -> tuple[list[tuple[str, str]], list[str]]:
    """``(definitions, texts)`` naming every operation the roots use more than once (never a
    part of a loop's body, nor one with a free index: see :func:`shared_names`); the free index
    levels of the roots that leave some free print as ``index_names``."""
    order = graph.reachable(roots)
    taken = {graph.data[n] for n in order if graph.op[n] == "var"}
    prefix = "_"
    while any(isinstance(v, str) and v.startswith(prefix) and v[len(prefix):].isdigit() for v in taken):
        prefix += "_"
    names: dict[int, str] = {}
    definitions: list[tuple[str, str]] = []
    for node in shared_names(graph, roots):
        name = f"{prefix}{len(names) + 1}"
        definitions.append((name, to_infix(graph, node, names)))
        names[node] = name
    return definitions, [names.get(r) or to_infix(graph, r, names, free_index_names(graph, r, index_names))
                         for r in roots]


def _tree_sizes(graph: Graph, order: list[int]) -> dict[int, int | float]:
    """Tree size of every node in ``order`` (topological), in one pass; floats past 2**53."""
    size: dict[int, int | float] = {}
    args_of = graph.args
    for node in order:
        s = 1 + sum(size[a] for a in args_of[node])
        size[node] = float(s) if s > 2**53 else s
    return size


def to_infix(graph: Graph, root: int, names: dict[int, str] | None = None,
             index_names: Sequence[str] = ()) -> str:
    """The expression as infix text; ``parse(to_infix(g, n))`` is node ``n`` again.

    Infix printing expands shared nodes once per use (a tree), so heavily
    shared DAGs print long (see :func:`to_text`).  Nodes in ``names`` print as
    those names; index levels as ``index_names`` (then i, j, k...).
    """
    names = names or {}
    indices = IndexNames(graph, root, index_names)

    def compose(node: int, op: str, args: tuple[int, ...]) -> list[object]:
        if op in SCOPED:
            return compose_scoped(graph, node, indices)
        spec = OPS[op]
        if spec.kind == "infix":
            left, right = args
            lp = PREC_ATOM if left in names else precedence(graph, left)
            rp = PREC_ATOM if right in names else precedence(graph, right)
            if spec.assoc == "left":
                left_paren, right_paren = lp < spec.prec, rp <= spec.prec
            elif spec.assoc == "none":  # a comparison: `(a < b) < c` is not the chain `a < b < c`
                left_paren, right_paren = lp <= spec.prec, rp <= spec.prec
            else:  # right-assoc power: base is an atom, exponent a unary expression
                left_paren, right_paren = lp <= spec.prec, rp < PREC_UNARY
            sep = f" {spec.symbol} " if spec.prec <= PREC_SUM else spec.symbol
            return [*_wrap(left, left_paren), sep, *_wrap(right, right_paren)]
        if spec.kind == "prefix":
            (arg,) = args
            paren = arg not in names and precedence(graph, arg) < spec.prec
            return [spec.symbol, *_wrap(arg, paren)]
        pieces: list[object] = [spec.symbol, "("]
        for i, arg in enumerate(args):
            if i:
                pieces.append(", ")
            pieces.append(arg)
        pieces.append(")")
        return pieces

    return render(graph, root, names, lambda op, data: format_number(data) if op == "const" else data, compose)


def scoped_names(graph: Graph, root: int) -> list[str]:
    """Names for the index levels under ``root``: i, j, k... unless a variable has the name."""
    order = graph.reachable([root])
    taken = {graph.data[n] for n in order if graph.op[n] in ("var", "vector")}
    return binders.index_names(taken, binders.MAX_NESTING + 1)  # type: ignore[arg-type]


class IndexNames:
    """The name of each index as the printer meets its loop: a loop's index is named by how many
    loops the text has opened around it (levels count the loops an index *depends on*, so a loop
    inside another that does not use its index has the same level, and needs another name).
    The indices ``root`` leaves free (the body of an ``each`` printed alone) come first."""

    def __init__(self, graph: Graph, root: int, chosen: Sequence[str] = ()):
        self.graph, self.root, self.chosen = graph, root, list(chosen)
        self.names: list[str] = []
        self.free = binders.levels(graph)[root] + 1 if graph.scoped else 0
        self.open: dict[int, list[str]] = {}  # level -> the names of the loops of that level open now
        self.depth = 0

    def _name(self, depth: int) -> str:
        if not self.names:
            self.names = self.chosen + [n for n in scoped_names(self.graph, self.root) if n not in self.chosen]
        return self.names[depth]

    def of(self, level: int) -> str:
        """The name of the index of ``level`` here."""
        stack = self.open.get(level)
        return stack[-1] if stack else self._name(level)

    def enter(self, level: int) -> str:
        """A loop of ``level`` opens: its index's name."""
        name = self._name(self.free + self.depth)
        self.depth += 1
        self.open.setdefault(level, []).append(name)
        return name

    def leave(self, level: int) -> None:
        self.depth -= 1
        self.open[level].pop()


def compose_scoped(graph: Graph, node: int, index_names: IndexNames) -> list[object]:
    """The pieces of an indexed node: ``i``, ``x``, ``x[i + 1]``, ``sum(i = 1..n, body)``."""
    op, args, data = graph.op[node], graph.args[node], graph.data[node]
    if op == "index":
        return [index_names.of(data)]  # type: ignore[arg-type]
    if op == "vector":
        return [data]  # type: ignore[list-item]
    if op == "item":
        pieces: list[object] = [graph.data[args[0]], "["]
        for k, a in enumerate(args[1:]):
            pieces.extend([", ", a] if k else [a])
        return [*pieces, "]"]
    level, low, high = data  # type: ignore[misc]
    name = index_names.enter(level)
    return [f"{op}({name} = {low}..{high}, ", args[0], lambda: index_names.leave(level), ")"]


def render(graph: Graph, root: int, names: dict[int, str], leaf: Callable[[str, Any], str],
           compose: Callable[[int, str, tuple[int, ...]], list[object]]) -> str:
    """Text of ``root`` from an explicit stack of pieces: ``leaf(op, data)`` for a constant or a
    variable, ``compose(node, op, args)`` for an operation (strings, nodes to print in their place,
    and actions to run once the pieces before them are printed), nodes in ``names`` as their names.
    No recursion, one join at the end."""
    out: list[str] = []
    stack: list[object] = [root]  # ints are nodes to print, strings are literal pieces
    op_of, args_of, data_of = graph.op, graph.args, graph.data
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        if callable(item):  # a loop's body is done: its index's name is free again
            item()
            continue
        node = item  # type: ignore[assignment]
        if node in names and node != root:
            out.append(names[node])
            continue
        op = op_of[node]
        if op in ("const", "var"):
            out.append(leaf(op, data_of[node]))
            continue
        stack.extend(reversed(compose(node, op, args_of[node])))
    return "".join(out)


def _wrap(node: int, paren: bool) -> list[object]:
    return ["(", node, ")"] if paren else [node]
