"""Evaluate DAG nodes one by one (slow, exact, for explaining): every node's value at a point."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from .graph import Graph
from .ops import OPS
from .semantics import power_product, small_power


def apply_op(op: str, args: list[float]) -> float:
    """``op`` on floats with IEEE semantics (``1/0 → inf``), as the compiled code computes it."""
    spec = OPS[op]
    try:
        return float(spec.py(*args))  # type: ignore[misc]
    except (ArithmeticError, ValueError):
        with np.errstate(all="ignore"):
            return float(spec.np(*(np.float64(a) for a in args)))  # type: ignore[misc]


def node_values(graph: Graph, roots: Iterable[int], point: Mapping[str, float],
                values: dict[int, float] | None = None) -> dict[int, float]:
    """The value of every node the roots depend on; ``values`` (if given) is reused and extended.

    >>> from symad import parse
    >>> e = parse("(x+y)*x")
    >>> node_values(e.graph, [e.id], {"x": 2.0, "y": 1.0})[e.id]
    6.0
    """
    values = {} if values is None else values
    for node in graph.reachable(roots):
        if node in values:
            continue
        op = graph.op[node]
        if op == "const":
            values[node] = graph.data[node]  # type: ignore[assignment]
        elif op == "var":
            values[node] = float(point[graph.data[node]])  # type: ignore[index]
        else:
            args = graph.args[node]
            k = small_power(graph.data[args[1]]) if op == "pow" and graph.op[args[1]] == "const" else None
            values[node] = float(power_product(values[args[0]], k)) if k is not None \
                else apply_op(op, [values[a] for a in args])
    return values
