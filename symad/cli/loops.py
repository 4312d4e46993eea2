"""The command line over expressions with a sum kept as a loop (over more than
:data:`symad.core.binders.UNROLL_MAX_TERMS` terms): which commands take them, and ``grad``/``eval``."""

from __future__ import annotations

import argparse
import importlib
import math

from symad.cli.common import emit, format_number, json_number, parse_point
from symad.core import binders
from symad.core.errors import SymadError
from symad.expr import Expr

# the commands that take loops; the others say they do not take them yet
COMMANDS = ("grad", "eval", "diff", "postfix", "save", "graph", "stats", "explain", "export-c", "export-py")


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
    point = parse_point(args.at)
    for name, given in point.items():  # one number for a vector: every entry
        if name in f.spans and isinstance(given, float):
            point[name] = [given] * math.prod(hi - lo + 1 for lo, hi in f.spans[name])
    value, grad = f.value_and_grad(point)
    names = [name for variable in f.variables for name in _entries(variable)]
    obj: dict = {"expr": text.strip(), "value": json_number(value)}
    rows = [("f", format_number(value))]
    if with_grad:
        obj["grad"] = {n: json_number(float(g)) for n, g in zip(names, grad)}
        rows += [(f"df/d{n}", format_number(float(g))) for n, g in zip(names, grad)]
    width = max(len(label) for label, _ in rows)
    emit(args, obj, [f"{label.ljust(width)} = {v}" for label, v in rows] if with_grad else [rows[0][1]], [])


def _entries(variable: str) -> list[str]:
    """``x[1..3]`` -> ``x[1], x[2], x[3]``; a scalar's name as it is."""
    base, bracket, rest = variable.partition("[")
    if not bracket:
        return [variable]
    low, high = (int(v) for v in rest[:-1].split(".."))
    return [f"{base}[{k}]" for k in range(low, high + 1)]
