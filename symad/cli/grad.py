"""``symad grad``: the value and every partial derivative at a point."""

from __future__ import annotations

import argparse
import math

from symad.cli.common import (
    add_params_option,
    emit,
    format_number,
    json_number,
    nonfinite_warnings,
    point_and_params,
    table,
    tape_of,
)
from symad.expr import Expr


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--params`` beside the common options."""
    add_params_option(parser, "not differentiated (no partials)")


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Compute and print the value and gradient at ``--at``."""
    point, params = point_and_params(args, expr.variables)
    everything = {**point, **params}
    # One point: the tape (a Function's first call) needs no compile and no NumPy.
    value, grad = tape_of(expr).value_and_grad([everything[v] for v in expr.variables])
    value = float(value)
    partials = {v: float(g) for v, g in zip(expr.variables, grad) if v not in params}
    obj = {"expr": text.strip(), "at": point, **({"params": params} if params else {}),
           "value": json_number(value), "grad": {v: json_number(g) for v, g in partials.items()}}
    rows = [("f", format_number(value))] + [(f"df/d{v}", format_number(g)) for v, g in partials.items()]
    outputs = {"f": (value, expr)}
    if not all(map(math.isfinite, partials.values())):
        symbolic = expr.grad(list(partials))
        outputs.update({f"df/d{v}": (g, symbolic[v]) for v, g in partials.items()})
    emit(args, obj, table(rows), nonfinite_warnings(outputs, everything, text))
