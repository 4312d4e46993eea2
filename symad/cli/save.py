"""``symad save``: the expression (or several outputs) as a symad JSON document, for ``@FILE``."""

from __future__ import annotations

import argparse
import sys

from symad.cli.common import emit
from symad.core import document
from symad.core.dag import Graph
from symad.core.files import write_atomically
from symad.expr import Expr
from symad.frontend.parser import parse_outputs_into

NEEDS_EXPR = False  # one or several outputs: parsed here, run(args, text, None); a document's: run(args, text, outputs)

EPILOG = """\
The file holds the DAG (node table, exact numbers, outputs) in symad's versioned JSON format;
every command reads it where it reads an expression, as @FILE, and symad.load() in Python.

examples:
  symad save "(x+y)+x*(x+y)" -o f.json        then: symad grad @f.json --at x=1,y=2
  symad save "t = x*y; t + x; t - y" -o v.json  several outputs, for symad jacobian @v.json
  symad save "x^2" -o -                        the JSON on standard output
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``-o FILE``, required."""
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the file to write ('-': standard output)")
    p.epilog = EPILOG


def run(args: argparse.Namespace, text: str, expr: list[Expr] | None) -> None:
    """Write the document and say what it holds."""
    graph = Graph() if expr is None else expr[0].graph
    roots = parse_outputs_into(text, graph) if expr is None else [e.id for e in expr]
    doc = document.to_document(graph, roots, "expression" if len(roots) == 1 else "expressions")
    content = document.dumps(doc)
    if args.output == "-":
        sys.stdout.write(content)
        sys.stdout.flush()
        return
    write_atomically(args.output, content)
    outputs = f"{len(roots)} outputs" if len(roots) > 1 else "1 output"
    summary = f"wrote {args.output}: {len(doc['nodes'])} nodes, {outputs}"
    emit(args, {"expr": text.strip(), "file": args.output, "nodes": len(doc["nodes"]), "outputs": len(roots)},
         [summary], [])
