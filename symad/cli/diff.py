"""``symad diff``: the derivative(s) as expressions."""

from __future__ import annotations

import argparse
import importlib

from symad.cli.common import emit
from symad.core import binders
from symad.core.errors import SymadError, VariableError
from symad.core.latex import latex_block, latex_name
from symad.core.printing import to_texts
from symad.expr import Expr

ALIGN_MAX = 40  # labels longer than this are not padded (nor pad the others)

EPILOG_NOTE = """\
When the partials printed one by one would be much larger than their DAG (more than 2,000
tree nodes and four times the DAG), they are printed together: every subexpression used
more than once, in any partial, is defined once by name (_1 = x1*x2;) and the df/dx lines
use the names, so the output grows with the DAG.  --json then adds "shared": {name: text}
beside "diff": {variable: text}.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``symad diff``."""
    parser.add_argument("--wrt", action="append", default=[], metavar="x[,y]",
                        help="the variable(s), comma-separated or repeated; default: all")
    parser.add_argument("--latex", action="store_true",
                        help="print the partials as LaTeX (an aligned block; shared parts named t_{k})")
    parser.epilog = EPILOG_NOTE + "\n" + (parser.epilog or "")


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Print the partial derivatives."""
    wrt = [w.strip() for spec in args.wrt for w in spec.split(",") if w.strip()]
    for w in wrt:
        if not w.isidentifier():
            raise VariableError(f"--wrt: {w!r} is not a variable name")
    wrt = list(dict.fromkeys(wrt))  # repeated names: one partial each
    if binders.has_scoped(expr.graph, [expr.id]):
        _indexed(args, text, expr, wrt)
        return
    partials = expr.grad(wrt or None)
    if args.latex:
        labels = [rf"\frac{{\partial f}}{{\partial {latex_name(w)}}}" for w in partials]
        block = latex_block(expr.graph, [d.id for d in partials.values()], labels)
        emit(args, {"expr": text.strip(), "latex": block}, [block], [])
        return
    if len(wrt) == 1:
        (d,) = partials.values()
        emit(args, {"expr": text.strip(), "diff": {wrt[0]: str(d)}}, [str(d)], [])
        return
    definitions, texts = to_texts(expr.graph, [d.id for d in partials.values()])
    obj = {"expr": text.strip(), "diff": dict(zip(partials, texts))}
    if definitions:
        obj["shared"] = dict(definitions)
    labels = [f"df/d{w}" for w in partials]
    width = max((len(k) for k in labels if len(k) <= ALIGN_MAX), default=0)
    lines = [f"{name} = {body};" for name, body in definitions]
    lines += [f"{k.ljust(width)} = {t}" for k, t in zip(labels, texts)]
    emit(args, obj, lines, [])


def _indexed(args: argparse.Namespace, text: str, expr: Expr, wrt: list[str]) -> None:
    """The partials of an expression with a sum kept as a loop: a vector's as one indexed line."""
    if args.latex:
        raise SymadError("--latex is not supported yet for sums over more than "
                         f"{binders.UNROLL_MAX_TERMS:,} terms (kept as loops)")
    indexed = importlib.import_module("symad.indexed_function")  # loaded for loops only: the CLI starts fast
    partials = indexed.IndexedFunction(expr, wrt=wrt or None).gradient_text()
    obj = {"expr": text.strip(), "diff": {label: body for label, body, _ in partials},
           "ranges": {label: list(span) for label, _, span in partials if span is not None}}
    lines = []
    for label, body, span in partials:
        where = f"    for k = {span[0]}..{span[1]}" if span is not None else ""
        lines.append(f"df/d{label} = {body}{where}")
    emit(args, obj, lines, [])
