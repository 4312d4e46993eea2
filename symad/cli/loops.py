"""The command line over expressions with a sum kept as a loop (over more than
:data:`symad.core.binders.UNROLL_MAX_TERMS` terms): which commands take them, and ``grad``/``eval``."""

from __future__ import annotations

import argparse
import importlib
import math
from typing import Any

from symad.cli.common import emit, format_number, json_number, parse_point
from symad.core import binders
from symad.core.errors import SymadError
from symad.expr import Expr

# the commands that take loops; the others say they do not take them yet
COMMANDS = ("grad", "eval", "diff", "postfix", "save", "graph", "stats", "explain", "hessian", "export-c",
            "export-py")


def has_loops(expr: Expr | list[Expr] | None) -> bool:
    """Whether ``expr`` (or any of several outputs) has a sum kept as a loop."""
    exprs = expr if isinstance(expr, list) else [] if expr is None else [expr]
    return any(e.graph.scoped and binders.has_scoped(e.graph, [e.id]) for e in exprs)


def refuse(command: str) -> SymadError:
    """The error for a command that does not take loops yet."""
    return SymadError(f"symad {command} does not support sums kept as loops yet (a sum stays a loop past "
                      f"{binders.UNROLL_MAX_TERMS:,} terms or {binders.UNROLL_MAX_STEPS:,} written-out steps); "
                      f"{', '.join(COMMANDS)} and the Python API (symad.compile) do")


def value_and_grad(args: argparse.Namespace, text: str, expr: Expr, with_grad: bool) -> None:
    """``symad grad``/``eval`` of an expression with loops: a vector is given whole, ``x=[...]``, or
    as one number for every entry, ``x=0.5``."""
    if getattr(args, "params", None):
        raise SymadError("--params is not supported yet with sums kept as loops")
    f = importlib.import_module("symad.indexed_function").IndexedFunction(expr)  # loaded for loops only
    value, grad = f.value_and_grad(indexed_point(f, args.at))
    names = [name for variable in f.variables for name in _entries(variable)]
    obj: dict = {"expr": text.strip(), "value": json_number(value)}
    rows = [("f", format_number(value))]
    if with_grad:
        obj["grad"] = {n: json_number(float(g)) for n, g in zip(names, grad)}
        rows += [(f"df/d{n}", format_number(float(g))) for n, g in zip(names, grad)]
    width = max(len(label) for label, _ in rows)
    emit(args, obj, [f"{label.ljust(width)} = {v}" for label, v in rows] if with_grad else [rows[0][1]], [])


def indexed_point(f: Any, at: list[str]) -> dict[str, Any]:
    """``--at`` for an IndexedFunction ``f``: a vector given whole (``x=[...]``) or as one number
    for every entry (``x=0.5``)."""
    point = parse_point(at)
    for name, given in point.items():
        if name in f.spans and isinstance(given, float):
            point[name] = [given] * math.prod(hi - lo + 1 for lo, hi in f.spans[name])
    return point


def hessian(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """``symad hessian`` of an expression with loops: its bands as indexed expressions
    (``d2f/dx[k]dx[k+1] = ...    for k = 1..n-1``), or with ``--at`` the value and the nonzeros of
    the lower triangle, found from the loops' entries (never n x n)."""
    if args.params or args.latex:
        raise SymadError("--params and --latex are not supported yet with sums kept as loops")
    f = importlib.import_module("symad.indexed_function").IndexedFunction(expr)  # loaded for loops only
    if not args.at:
        bands = f.hessian_text()
        lines = [(f"d2f/d{row}2" if row == col else f"d2f/d{row}d{col}") + f" = {body}"
                 + (f"    for k = {span[0]}..{span[1]}" if span else "") for row, col, body, span in bands]
        obj = {"expr": text.strip(), "variables": list(f.variables),
               "hessian": [{"row": row, "col": col, "expr": body, **({"range": list(span)} if span else {})}
                           for row, col, body, span in bands]}
        emit(args, obj, lines, [])
        return
    point = indexed_point(f, args.at)
    value = f.value(point)
    rows, cols = f.hessian_pattern()
    values = f.hessian_values(point)
    names = [name for variable in f.variables for name in _entries(variable)]
    obj = {"expr": text.strip(), "variables": list(f.variables), "value": json_number(value),
           "hessian": {"rows": rows.tolist(), "cols": cols.tolist(), "values": [json_number(float(v)) for v in values]}}
    lines = [f"f = {format_number(value)}", f"hessian: {len(values):,} nonzeros of the lower triangle"]
    lines += [(f"d2f/d{names[r]}2" if r == c else f"d2f/d{names[r]}d{names[c]}") + f" = {format_number(float(v))}"
              for r, c, v in zip(rows, cols, values)]
    emit(args, obj, lines, [])


def _entries(variable: str) -> list[str]:
    """``x[1..3]`` -> ``x[1], x[2], x[3]``; a scalar's name as it is."""
    base, bracket, rest = variable.partition("[")
    if not bracket:
        return [variable]
    low, high = (int(v) for v in rest[:-1].split(".."))
    return [f"{base}[{k}]" for k in range(low, high + 1)]
