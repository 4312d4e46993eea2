"""``symad diff``: the derivative(s) as expressions."""

from __future__ import annotations

import argparse
import importlib
import re
from typing import Any

from symad.cli.common import emit
from symad.core import binders, name_rule
from symad.core.errors import VariableError
from symad.core.latex import latex_block, latex_label, latex_name
from symad.core.names import normal
from symad.core.printing import to_texts
from symad.expr import Expr

_LISTED = re.compile(r",(?![^\[]*\])")  # --wrt x,y,A[1,2]: the commas outside brackets
_ENTRY = re.compile(r"(.+)\[\s*(-?\d+)\s*\]")  # --wrt x[3]: an entry of a vector kept in loops
ALIGN_MAX = 40  # labels longer than this are not padded (nor pad the others)

EPILOG_NOTE = """\
When the partials printed one by one would be much larger than their DAG (more than 2,000
tree nodes and four times the DAG), or would print a sum or product kept as a loop more than
once, they are printed together: every subexpression used more than once, in any partial,
is defined once by name (_1 = x1*x2;) and the df/dx lines use the names, so the output grows
with the DAG.  --json then adds "shared": {name: text} beside "diff": {variable: text}.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``symad diff``."""
    parser.add_argument("--wrt", action="append", default=[], metavar="x[,y]",
                        help="the variable(s), comma-separated or repeated (a vector's name: each of its "
                             "entries x[1], x[2], ...); default: all")
    parser.add_argument("--latex", action="store_true",
                        help="print the partials as LaTeX (an aligned block; shared parts named t_{k})")
    parser.epilog = EPILOG_NOTE + "\n" + (parser.epilog or "")


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Print the partial derivatives."""
    wrt = [w.strip() for spec in args.wrt for w in _LISTED.split(spec) if w.strip()]
    for w in wrt:
        if name_rule.problem(w) is not None:
            raise VariableError(f"--wrt: {w!r} is not a variable name (such as x, theta_2 or x[3])")
    wrt = list(dict.fromkeys(normal(w) for w in wrt))  # x[ 2 ] is x[2]; repeated names: one partial each
    if binders.has_scoped(expr.graph, [expr.id]):
        _indexed(args, text, expr, wrt)
        return
    partials = expr.grad(wrt or None)  # a vector's name stands for its entries x[1], x[2], ...
    used = set(expr.variables)
    absent = [w for w in wrt if w in partials and w not in used]
    warnings = [f"{w} does not appear in the expression: its derivative is 0" for w in absent]
    if args.latex:
        labels = [rf"\frac{{\partial f}}{{\partial {latex_name(w)}}}" for w in partials]
        block = latex_block(expr.graph, [d.id for d in partials.values()], labels)
        emit(args, {"expr": text.strip(), "latex": block}, [block], warnings)
        return
    if len(wrt) == 1 and len(partials) == 1:  # one variable asked for: its partial alone
        ((name, d),) = partials.items()
        emit(args, {"expr": text.strip(), "diff": {name: str(d)}}, [str(d)], warnings)
        return
    definitions, texts = to_texts(expr.graph, [d.id for d in partials.values()])
    obj = {"expr": text.strip(), "diff": dict(zip(partials, texts))}
    if definitions:
        obj["shared"] = dict(definitions)
    labels = [f"df/d{w}" for w in partials]
    width = max((len(k) for k in labels if len(k) <= ALIGN_MAX), default=0)
    lines = [f"{name} = {body};" for name, body in definitions]
    lines += [f"{k.ljust(width)} = {t}" for k, t in zip(labels, texts)]
    emit(args, obj, lines, warnings)


def _indexed(args: argparse.Namespace, text: str, expr: Expr, wrt: list[str]) -> None:
    """The partials of an expression with a sum kept as a loop: a vector's as one indexed line."""
    indexed = importlib.import_module("symad.indexed_function")  # loaded for loops only: the CLI starts fast
    entries = {w: (m.group(1), int(m.group(2))) for w in wrt if (m := _ENTRY.fullmatch(w))}
    # (the partials as expressions: nothing compiled; a function of loops costs its loops to build)
    function = every = indexed.IndexedFunction(expr, prepare=False)
    if wrt:  # an entry x[3] asks for its vector x (an entry of no vector: 0, warned)
        bases = [entries[w][0] if w in entries else w for w in wrt
                 if w not in entries or entries[w][0] in every.spans]
        function = indexed.IndexedFunction(expr, wrt=list(dict.fromkeys(bases)), prepare=False) if bases else every
    rows, warnings = _asked_rows(function, wrt, entries)
    if args.latex:
        labels = [rf"\frac{{\partial f}}{{\partial {latex_label(label)}}}" for label, _, _ in rows]
        notes = [rf" \qquad k = {span[0]}, \dots, {span[1]}" if span else "" for _, _, span in rows]
        block = latex_block(function.graph, [root for _, root, _ in rows], labels, free_names=["k"], notes=notes)
        emit(args, {"expr": text.strip(), "latex": block}, [block], warnings)
        return
    definitions, partials = function.gradient_listing(rows=rows)
    obj = {"expr": text.strip(), "diff": {label: body for label, body, _ in partials},
           "ranges": {label: list(span) for label, _, span in partials if span is not None}}
    if definitions:
        obj["shared"] = dict(definitions)
    lines = [f"{name} = {body};" for name, body in definitions]
    for label, body, span in partials:
        where = f"    for k = {span[0]}..{span[1]}" if span is not None else ""
        lines.append(f"df/d{label} = {body}{where}")
    emit(args, obj, lines, warnings)


def _asked_rows(function: Any, wrt: list[str], entries: dict[str, tuple[str, int]]
                ) -> tuple[list[tuple[str, int, tuple[int, int] | None]], list[str]]:
    """The partials ``--wrt`` asks for, in its order (default: every one): a vector's indexed in k,
    an entry's (``x[3]``) that row at k = 3, a scalar's; and the warnings for entries outside
    their vector's range (derivative 0)."""
    every = function.gradient_roots()
    if not wrt:
        return every, []
    by_label = {label: (label, root, span) for label, root, span in every}
    rows, warnings = [], []
    for w in wrt:
        if w in entries:
            name, index = entries[w]
            if name not in function.spans:
                warnings.append(f"{w} does not appear in the expression ({name} is no vector of it): its derivative "
                                "is 0")
                rows.append((w, function.graph.const(0.0), None))
                continue
            (low, high), = function.spans[name]
            if not low <= index <= high:
                warnings.append(f"{w} does not appear in the expression ({name} runs over {low}..{high}): "
                                "its derivative is 0")
            rows.append((w, function.entry_partial(name, index), None))
        else:
            rows.append(by_label.get(f"{w}[k]") or by_label[w])
    return rows, warnings

