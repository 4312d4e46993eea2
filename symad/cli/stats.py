"""``symad stats``: the expression's size as a tree and as a DAG, its gradient's, depth and variables."""

from __future__ import annotations

import argparse
import math

from symad.cli.common import emit
from symad.core import indexed
from symad.expr import Expr


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``symad stats`` has only the common options."""


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Print the sizes."""
    stats = expr.stats()
    stats["tree_nodes"] = count(stats["tree_nodes"])
    rows = [("tree nodes", str(stats["tree_nodes"])), ("DAG nodes", str(stats["dag_nodes"])),
            ("gradient nodes", str(stats["gradient_nodes"])), ("depth", str(stats["depth"])),
            ("variables", ", ".join(indexed.compact(stats["variables"])) or "(none)"),
            ("ops", ", ".join(f"{k} {v}" for k, v in stats["ops"].items()))]
    width = max(len(k) for k, _ in rows)
    emit(args, {"expr": text.strip(), **stats}, [f"{k.ljust(width)}  {v}" for k, v in rows], [])


def count(n: int) -> int | str:
    """An exact count; past 4,000 digits (more than Python prints), its order of magnitude."""
    if n.bit_length() < 13_000:
        return n
    shift = n.bit_length() - 60
    digits = math.log10(n >> shift) + shift * math.log10(2)  # log10(n) from its leading 60 bits
    mantissa = 10 ** (digits - math.floor(digits))
    return f"about {mantissa:.3f}e+{math.floor(digits)}"
