"""Evaluate DAG nodes one by one (slow, exact, for explaining): every node's value at a point."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from symad.core.graph import Graph
from symad.core.ops import OPS
from symad.core.semantics import numpy, power_product, small_power


def apply_op(op: str, args: list[float], power: int | None = None) -> float:
    """``op`` on floats with IEEE semantics (``1/0 → inf``), as the compiled code computes it;
    ``power``: a small integer exponent, computed as products (``x^3 = (x*x)*x``)."""
    spec = OPS[op]
    try:
        return float(spec.py(*args) if power is None else power_product(args[0], power))  # type: ignore[misc]
    except (ArithmeticError, ValueError):
        np = numpy()
        with np.errstate(all="ignore"):
            floats = [np.float64(a) for a in args]
            return float(spec.np(*floats) if power is None else power_product(floats[0], power))  # type: ignore[misc]


def node_values(graph: Graph, roots: Iterable[int], point: Mapping[str, float],
                values: dict[int, float] | None = None) -> dict[int, float]:
    """The value of every node the roots depend on; ``values`` (if given) is reused and extended.

    The one node-by-node evaluator (explanations, drawings, diagnostics): the walk
    stops at nodes ``values`` already holds, so adding a few nodes over evaluated
    ones (a local partial) costs only those.  Floats with the compiled code's
    semantics: small integer powers as products, ``1/0 → inf`` (:func:`apply_op`).

    >>> from symad import parse
    >>> e = parse("(x+y)*x")
    >>> node_values(e.graph, [e.id], {"x": 2.0, "y": 1.0})[e.id]
    6.0
    """
    values = {} if values is None else values
    op_of, args_of, data = graph.op, graph.args, graph.data
    for node in graph.reachable(roots, values):
        op = op_of[node]
        if op == "const":
            values[node] = data[node]  # type: ignore[assignment]
        elif op == "var":
            values[node] = float(point[data[node]])  # type: ignore[index]
        else:
            args = args_of[node]
            k = small_power(data[args[1]]) if op == "pow" and op_of[args[1]] == "const" else None
            values[node] = apply_op(op, [values[a] for a in args], k)
    return values
