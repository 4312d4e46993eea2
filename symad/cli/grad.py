"""``symad grad``: the value and every partial derivative at a point."""

from __future__ import annotations

import argparse
import math

from symad.cli.common import emit, format_number, json_number, nonfinite_warnings, point_of, table, tape_of
from symad.expr import Expr


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``symad grad`` has only the common options."""


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Compute and print the value and gradient at ``--at``."""
    point = point_of(args.at, expr.variables)
    # One point: the tape (a Function's first call) needs no compile and no NumPy.
    value, grad = tape_of(expr).value_and_grad(list(point.values()))
    value = float(value)
    partials = {v: float(g) for v, g in zip(expr.variables, grad)}
    obj = {"expr": text.strip(), "at": point, "value": json_number(value),
           "grad": {v: json_number(g) for v, g in partials.items()}}
    rows = [("f", format_number(value))] + [(f"df/d{v}", format_number(g)) for v, g in partials.items()]
    outputs = {"f": (value, expr)}
    if not all(map(math.isfinite, partials.values())):
        symbolic = expr.grad()
        outputs.update({f"df/d{v}": (g, symbolic[v]) for v, g in partials.items()})
    emit(args, obj, table(rows), nonfinite_warnings(outputs, point, text))
