"""``symad hessian``: every second partial derivative, at a point or as expressions."""

from __future__ import annotations

import argparse
import math

from symad.cli import loop_commands as loops
from symad.cli.common import add_params_option, emit, format_number, nonfinite_warnings, point_and_params
from symad.core.errors import PointError
from symad.core.latex import to_latex
from symad.expr import Expr
from symad.second_order import SecondOrder, hessian

EPILOG = """\
examples:
  symad hessian "100*(y-x^2)^2+(1-x)^2" --at x=1,y=1     value, gradient and Hessian matrix
  symad hessian "x^3*y" --at x=1,y=2 --json
  symad hessian "x^3*y"                                  the entries as expressions (no --at)
  symad hessian "sum(i = 1..100000, (x[i+1] - x[i]^2)^2)"  a loop's Hessian as bands in k
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--params`` beside the common options."""
    add_params_option(p, "not differentiated (no partials, no Hessian rows or columns)")
    p.add_argument("--latex", action="store_true", help="print the Hessian as a LaTeX matrix of expressions")
    p.epilog = EPILOG


def latex_matrix(expr: Expr, names: list[str]) -> str:
    """The Hessian as a LaTeX ``pmatrix`` of its entries' expressions."""
    rows = hessian(expr, names)
    return ("\\begin{pmatrix}\n" + " \\\\\n".join(" & ".join(to_latex(e.graph, e.id) for e in row) for row in rows)
            + "\n\\end{pmatrix}")


def _label(names: list[str], i: int, j: int) -> str:
    return f"d2f/d{names[i]}2" if i == j else f"d2f/d{names[i]}d{names[j]}"


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Print the Hessian: a matrix of numbers with --at, else the upper triangle as expressions."""
    if loops.has_loops(expr):  # its bands, or its nonzeros at a point
        loops.hessian(args, text, expr)
        return
    names = list(expr.variables)
    if args.params and not args.at:
        raise PointError("--params gives values, which the Hessian as expressions (no --at) does not use: "
                         "add --at for the other variables")
    if args.latex:
        if args.at or args.params:
            raise PointError("--latex prints the Hessian's expressions: leave out --at and --params")
        emit(args, {"expr": text.strip(), "variables": names, "latex": latex_matrix(expr, names)},
             [latex_matrix(expr, names)], [])
        return
    if not args.at and names:
        entries = hessian(expr, names)
        n = len(names)
        rows = [(_label(names, i, j), str(entries[i][j])) for i in range(n) for j in range(i, n)]
        width = max(len(k) for k, _ in rows)
        obj = {"expr": text.strip(), "variables": names,
               "hessian": [[str(e) for e in row] for row in entries]}
        emit(args, obj, [f"{k.ljust(width)} = {v}" for k, v in rows], [])
        return
    point, params = point_and_params(args, names)
    names = [v for v in names if v not in params]
    fn = SecondOrder(expr, background=False, wrt=names)
    # One point: interpreted row by row (compiling n rows into one program costs memory per term)
    value, grad, hess = fn.value_grad_hess_interpreted([point[v] for v in names], params or None)
    outputs = {"f": (value, expr)}
    if not (math.isfinite(value) and all(map(math.isfinite, grad)) and all(map(math.isfinite, hess.flat))):
        symbolic_grad, symbolic_hess = expr.grad(names), hessian(expr, names)
        outputs.update({f"df/d{v}": (float(g), symbolic_grad[v]) for v, g in zip(names, grad)})
        outputs.update({_label(names, i, j): (float(hess[i, j]), symbolic_hess[i][j])
                        for i in range(len(names)) for j in range(i, len(names))})
    obj = {"expr": text.strip(), "at": point, **({"params": params} if params else {}),
           "variables": names, "value": _json(value),
           "grad": {v: _json(g) for v, g in zip(names, grad)},
           "hessian": [[_json(h) for h in row] for row in hess]}
    labels = ["f", *(f"df/d{v}" for v in names)]
    width = max(map(len, labels))
    lines = [f"{k.ljust(width)} = {format_number(float(v))}" for k, v in zip(labels, [value, *grad])]
    if names:
        lines += ["hessian:", *_matrix(names, hess)]
    emit(args, obj, lines, nonfinite_warnings(outputs, {**point, **params}))


def _matrix(names: list[str], hess) -> list[str]:
    """The matrix with variable names on both sides, columns right-aligned."""
    cells = [[format_number(float(h)) for h in row] for row in hess]
    widths = [max(len(names[j]), *(len(row[j]) for row in cells)) for j in range(len(names))]
    left = max(map(len, names))
    header = " " * left + "".join("  " + n.rjust(w) for n, w in zip(names, widths))
    return [header] + [n.ljust(left) + "".join("  " + c.rjust(w) for c, w in zip(row, widths))
                       for n, row in zip(names, cells)]


def _json(v: float) -> float | str:
    v = float(v)
    return v if math.isfinite(v) else format_number(v)
