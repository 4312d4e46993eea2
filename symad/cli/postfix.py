"""``symad postfix``: the parser's postfix (RPN) form of the expression."""

from __future__ import annotations

import argparse

from symad.cli.common import emit
from symad.core.dag import Graph
from symad.frontend.parser import fold, to_postfix

NEEDS_EXPR = False  # works on the text: run(args, text, None)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``symad postfix`` has only the common options."""


def run(args: argparse.Namespace, text: str, expr: None) -> None:
    """Print the postfix tokens."""
    tokens = to_postfix(text)
    fold(tokens, Graph(), text)  # reports what parsing alone cannot (e.g. double definitions)
    words = [str(t) for t in tokens]
    emit(args, {"expr": text.strip(), "postfix": words}, [" ".join(words)], [])
