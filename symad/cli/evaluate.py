"""``symad eval``: the value at a point."""

from __future__ import annotations

import argparse

from symad.cli.common import (
    add_params_option,
    emit,
    format_number,
    json_number,
    nonfinite_warnings,
    point_and_params,
    tape_of,
)
from symad.expr import Expr


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--params`` beside the common options."""
    add_params_option(parser, "as --at gives the others")


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Compute and print the value at ``--at``."""
    point, params = point_and_params(args, expr.variables)
    merged = {**point, **params}  # parameters are values here too
    point = {v: merged[v] for v in expr.variables}
    value = float(tape_of(expr).value(list(point.values())))  # as `grad` computes it
    obj = {"expr": text.strip(), "at": point, "value": json_number(value)}
    emit(args, obj, [format_number(value)], nonfinite_warnings({"f": (value, expr)}, point, text))
