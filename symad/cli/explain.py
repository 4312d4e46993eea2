"""``symad explain``: the forward pass and the reverse (or forward) sweep as tables."""

from __future__ import annotations

import argparse

from symad.cli import loop_commands as loops
from symad.cli.common import parse_point
from symad.core import indexed
from symad.core.errors import SymadError, check_variables
from symad.expr import Expr
from symad.tools.explanation import ALIGN_MAX, explain


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``symad explain``."""
    parser.add_argument("--mode", choices=("reverse", "forward"), default="reverse",
                        help="reverse: adjoints from the output down (default); forward: tangents along --seed")
    parser.add_argument("--seed", action="append", default=[], metavar="x=1",
                        help="forward mode's direction (default: 1 for the first variable, 0 for the others)")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--latex", action="store_true", help="print the steps as a LaTeX aligned block")
    parser.add_argument("--iteration", type=int, metavar="K",
                        help="with sums kept as loops: show each loop's body at i = K (a loop inside it at "
                             "i = j = K) and gather df/dx[K] (default: each loop's first index)")
    parser.epilog = (f"Text tables align their columns up to {ALIGN_MAX} characters: a longer cell (a node "
                     "with many users)\nis printed whole but unpadded. Every row, term and value is printed "
                     "in full, also\nwith --markdown and --json, so the output grows with the DAG.\n\n"
                     + (parser.epilog or ""))


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Print the explanation."""
    if loops.has_loops(expr):
        _run_loops(args, expr)
        return
    if args.iteration is not None:
        raise SymadError("--iteration is for sums kept as loops (this expression has none)")
    point = indexed.expand_point(expr.variables, parse_point(args.at))
    check_variables(expr.variables, point)
    direction = indexed.expand_point(expr.variables, parse_point(args.seed)) if args.seed else {}
    unknown = [v for v in direction if v not in expr.variables]
    if unknown:
        raise SymadError(f"--seed names {', '.join(unknown)}, which the expression does not use")
    if args.mode == "forward" and not direction and expr.variables:
        direction = {expr.variables[0]: 1.0}
    if args.seed and args.mode == "reverse":
        raise SymadError("--seed is for --mode forward (reverse mode always seeds the output with 1)")
    result = explain(expr, point, args.mode, direction)
    if args.json:
        print(result.to_json())
    elif args.markdown:
        print(result.to_markdown())
    elif args.latex:
        print(result.to_latex())
    else:
        print(result.to_text())


def _run_loops(args: argparse.Namespace, expr: Expr) -> None:
    """The explanation of an expression with sums kept as loops (reverse mode, text or JSON)."""
    if args.mode != "reverse" or args.seed:
        raise SymadError("with sums kept as loops, symad explain shows reverse mode (no --mode forward, --seed)")
    if args.markdown or args.latex:
        raise SymadError("with sums kept as loops, symad explain prints text or --json (no --markdown, --latex)")
    # entries written out beside the loops (x[1], x[2] of a short product) from x=[...] or x=0.5
    result = explain(expr, indexed.expand_point(expr.variables, parse_point(args.at)), iteration=args.iteration)
    print(result.to_json() if args.json else result.to_text())
