"""``symad jacobian``: several outputs' values and every first partial, at a point or as expressions."""

from __future__ import annotations

import argparse
import math

from symad.cli import loop_commands as loops
from symad.cli.common import (
    add_params_option,
    emit,
    format_number,
    json_number,
    nonfinite_warnings,
    point_and_params,
    table,
)
from symad.core.dag import Graph
from symad.core.errors import PointError
from symad.expr import Expr, parse_outputs
from symad.vector_function import VectorFunction

NEEDS_EXPR = False  # several outputs: parsed here, run(args, text, None); a document's: run(args, text, outputs)

EPILOG = """\
outputs are separated by ';' (definitions before them are shared: "t = x*y; t + x; t - y")

examples:
  symad jacobian "x*y; x + y; sin(x)" --at x=1,y=2       one output per line: value and partials
  symad jacobian "x*y; x + y" --at x=1,y=2 --json        the values, and the matrix as rows
  symad jacobian "a*x^2; x*y" --at x=3,y=1 --params a=2  a held at 2, not differentiated
  symad jacobian "x*y; x + y"                            the partials as expressions (no --at)
  symad jacobian "each(i = 1..9999, x[i+1] - x[i]^2)"    a family of rows, its partials in i
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--params`` beside the common options."""
    add_params_option(p, "not differentiated (no Jacobian column)")
    p.epilog = EPILOG


def run(args: argparse.Namespace, text: str, expr: list[Expr] | None) -> None:
    """Print each output's value and partials at ``--at``, or the partials as expressions."""
    outputs = expr if expr is not None else parse_outputs(text, Graph())
    if loops.has_loops(outputs):  # each(i = ...) families and long sums
        loops.jacobian(args, text, outputs)
        return
    names = outputs[0].graph.variables([e.id for e in outputs])
    labels = [f"f{i + 1}" for i in range(len(outputs))]
    if args.params and not args.at:
        raise PointError("--params gives values, which the Jacobian as expressions (no --at) does not use: "
                         "add --at for the other variables")
    if not args.at:
        entries = VectorFunction(outputs, background=False).jacobian_exprs()
        rows = [(label, str(e)) for label, e in zip(labels, outputs)]
        rows += [(f"d{label}/d{v}", str(entries[i][j])) for i, label in enumerate(labels) for j, v in enumerate(names)]
        emit(args, {"exprs": [str(e) for e in outputs], "variables": names,
                    "jacobian": [[str(e) for e in row] for row in entries]}, table(rows), [])
        return
    point, params = point_and_params(args, names)
    free = [v for v in names if v not in params]
    fn = VectorFunction(outputs, background=False, wrt=free)  # the others (--params) are parameters
    values, jac = fn.value_and_jacobian([point[v] for v in free], params or None)
    obj = {"exprs": [str(e) for e in outputs], "at": point, **({"params": params} if params else {}),
           "variables": free, "values": [json_number(v) for v in values],
           "jacobian": [[json_number(d) for d in row] for row in jac]}
    rows = [[(label, float(values[i])), *((f"d{label}/d{v}", float(jac[i, j])) for j, v in enumerate(free))]
            for i, label in enumerate(labels)]
    warnings = []
    if not (all(map(math.isfinite, values)) and all(map(math.isfinite, jac.flat))):
        symbolic = fn.jacobian_exprs()
        checked = {}
        for i, row in enumerate(rows):
            checked[row[0][0]] = (row[0][1], outputs[i])
            checked.update({k: (v, symbolic[i][j]) for j, (k, v) in enumerate(row[1:])})
        warnings = nonfinite_warnings(checked, {**point, **params})
    emit(args, obj, _cells(rows), warnings)


def _cells(rows: list[list[tuple[str, float]]]) -> list[str]:
    """One line per output, ``name = value`` cells in columns."""
    texts = [[f"{k} = {format_number(v)}" for k, v in row] for row in rows]
    widths = [max(len(row[c]) for row in texts) for c in range(len(texts[0]))]
    return ["   ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in texts]
