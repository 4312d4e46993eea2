"""``symad export-c`` and ``symad export-py``: the expression (and its derivatives) as source code."""

from __future__ import annotations

import argparse
import os
import sys

from symad.cli.common import emit
from symad.core.errors import SymadError
from symad.expr import Expr
from symad.tools.export import c_source, python_source

EPILOG = """\
The code is from the same schedule and op lowerings as symad's native code, and computes
the same bits: the C file straight-line (compiled without -ffast-math, with
-ffp-contract=off); the Python file, needing only the standard library, computes only the
arm a where(...) takes, and never raises: where math would (log(0), 1/0, exp(800)), it
gives symad's inf or nan.

examples:
  symad export-c "100*(y-x^2)^2 + (1-x)^2" --grad -o rosen.c    rosen.c and rosen.h:
        double f(const double *x, double *grad)
  symad export-c "x^3*y" --hessian --name cubic -o cubic.c      double cubic(x, grad, hess)
  symad export-py "x^3*y" --grad -o cubic.py                    def f(x): return value, grad
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``-o``, ``--grad``, ``--hessian``, ``--name``."""
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the file to write (a C file's header goes beside it, as .h; '-': standard output)")
    p.add_argument("--grad", action="store_true", help="also the gradient")
    p.add_argument("--hessian", action="store_true", help="also the gradient and the Hessian (row by row)")
    p.add_argument("--name", default="f", help="the function's name (default f)")
    p.epilog = EPILOG


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Write the source file(s) and say what they hold."""
    if args.command == "export-c":
        header = "-" if args.output == "-" else os.path.splitext(args.output)[0] + ".h"
        c_text, h_text = c_source(expr, args.name, args.grad, args.hessian,
                                  header=os.path.basename(header) if header != "-" else f"{args.name}.h")
        files = [(header, h_text), (args.output, c_text)] if header != "-" else [("-", h_text + "\n" + c_text)]
    else:
        files = [(args.output, python_source(expr, args.name, args.grad, args.hessian))]
    for path, content in files:
        if path == "-":
            sys.stdout.write(content)
            sys.stdout.flush()
            continue
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(content)
        except OSError as err:
            raise SymadError(f"cannot write {path}: {err.strerror}") from None
    if args.output != "-":
        what = "value" + (", gradient" if args.grad or args.hessian else "") + (", Hessian" if args.hessian else "")
        written = " and ".join(path for path, _ in files)
        emit(args, {"expr": text.strip(), "files": [path for path, _ in files], "name": args.name,
                    "variables": list(expr.variables)},
             [f"wrote {written}: {args.name}({', '.join(expr.variables)}), {what}"], [])
