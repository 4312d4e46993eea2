"""``symad eval``: the value at a point."""

from __future__ import annotations

import argparse

from symad.cli.common import emit, format_number, json_number, nonfinite_warnings, point_of, tape_of
from symad.expr import Expr


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``symad eval`` has only the common options."""


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Compute and print the value at ``--at``."""
    point = point_of(args.at, expr.variables)
    value = float(tape_of(expr).value(list(point.values())))  # as `grad` computes it
    obj = {"expr": text.strip(), "at": point, "value": json_number(value)}
    emit(args, obj, [format_number(value)], nonfinite_warnings({"f": (value, expr)}, point, text))
