"""The ``symad graph`` command: draw the DAG, and with ``--grad`` the reverse sweep, with Graphviz;
an ``.html`` output is the interactive page of the sweep (:mod:`symad.tools.explore`)."""

from __future__ import annotations

import argparse
import re

from symad.cli.common import emit, parse_point
from symad.core.errors import LimitError, SymadError, VariableError
from symad.expr import Expr
from symad.tools.explore import MAX_DRAWN, explore
from symad.tools.viz import MAX_NODES, to_digraph, write_picture


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``symad graph``."""
    parser.add_argument("-o", "--output", metavar="FILE", default="-",
                        help="the picture; the extension picks the format (.png, .svg, .pdf need "
                             "Graphviz's dot; .dot is the DOT text; .html is a page stepping through the "
                             "forward pass and the backward sweep at --at); '-' prints DOT text (default)")
    parser.add_argument("--grad", action="store_true",
                        help="add the backward graph: the adjoint ∂f/∂node of every node the "
                             "reverse sweep reaches")
    parser.add_argument("--wrt", metavar="x[,y]", help="draw the backward graph only into these variables "
                                                     "(implies --grad)")
    parser.add_argument("--rankdir", type=str.upper, choices=("TB", "LR", "BT", "RL"), default="TB",
                        help="layout direction: TB top to bottom (default), LR left to right")
    parser.add_argument("--iteration", type=int, metavar="K",
                        help="in an .html page over sums kept as loops, the iteration each loop's body is "
                             "shown at and the entry x[K] gathered, as symad explain --iteration (default: "
                             "each loop's first)")
    parser.add_argument("--max-nodes", type=int, default=None, metavar="N",
                        help=f"refuse to draw more than N nodes (default {MAX_NODES}); in an .html page, "
                             f"collapse subgraphs past N drawn nodes (default {MAX_DRAWN})")


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Build the picture and write it; prints nothing unless the output is '-' or --json."""
    if args.max_nodes is not None and args.max_nodes < 1:
        raise LimitError(f"--max-nodes must be at least 1, got {args.max_nodes}")
    if args.output.lower().endswith(".html"):
        _page(args, text, expr)
        return
    if args.iteration is not None:
        raise SymadError("--iteration places the loops' bodies in an .html page of the sweep (-o page.html)")
    args.max_nodes = MAX_NODES if args.max_nodes is None else args.max_nodes
    point = parse_point(args.at) if args.at else None
    wrt = [w.strip() for w in args.wrt.split(",") if w.strip()] if args.wrt else None
    for w in wrt or ():
        if w not in expr.variables:
            uses = ", ".join(expr.variables) or "no variables"
            raise VariableError(f"--wrt: {w} is not a variable of the expression (it uses {uses})", (w,))
    title = text.strip() if len(text.strip()) <= 60 and "\n" not in text.strip() else None
    dot = to_digraph(expr, grad=args.grad, wrt=wrt, at=point, rankdir=args.rankdir,
                     max_nodes=args.max_nodes, title=title)
    if args.json:
        obj = {"expr": text.strip(), "output": args.output,
               "nodes": sum(1 for line in dot.source.splitlines() if _is_node(line)),
               "edges": sum("->" in line for line in dot.source.splitlines())}
        if args.output == "-":
            obj["dot"] = dot.source
        else:
            write_picture(dot, args.output)
        emit(args, obj, [], [])
    else:
        write_picture(dot, args.output)


def _page(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Write the interactive page of the sweep at --at."""
    if not args.at:
        raise SymadError("an .html page steps through the sweep at a point: give it with --at "
                         "(for example --at x=1,y=2)")
    if args.wrt:
        raise SymadError("--wrt is for pictures: an .html page steps through the whole sweep")
    title = text.strip() if len(text.strip()) <= 200 and "\n" not in text.strip() else None
    page = explore(expr, parse_point(args.at), max_drawn=args.max_nodes or MAX_DRAWN, title=title,
                   rankdir=args.rankdir, iteration=args.iteration)
    page.save(args.output)
    if args.json:
        emit(args, {"expr": text.strip(), "output": args.output, "nodes": page.nodes, "drawn": page.drawn,
                    "collapsed": page.collapsed, "bytes": len(page.html.encode("utf-8"))}, [], [])


def _is_node(line: str) -> bool:
    return re.match(r"\s*[ng]\d+ \[label=", line) is not None
