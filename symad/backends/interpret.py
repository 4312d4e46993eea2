"""Evaluate DAG nodes one by one (slow, exact, for explaining): every node's value at a point."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from symad.core.dag import Graph
from symad.core.semantics import numpy
from symad.schedule.lowering import LOWERED, PRIMITIVES, lower


def apply_op(op: str, args: list[float]) -> float:
    """Primitive ``op`` (see :mod:`symad.schedule.lowering`) on floats with IEEE semantics
    (``1/0 → inf``), as the compiled code computes it."""
    spec = PRIMITIVES[op]
    try:
        return float(spec.py(*args))  # type: ignore[misc]
    except (ArithmeticError, ValueError):
        np = numpy()
        with np.errstate(all="ignore"):
            return float(spec.np(*[np.float64(a) for a in args]))  # type: ignore[misc]


def node_values(graph: Graph, roots: Iterable[int], point: Mapping[str, float],
                values: dict[int, float] | None = None) -> dict[int, float]:
    """The value of every node the roots depend on; ``values`` (if given) is reused and extended.

    The one node-by-node evaluator (explanations, drawings, diagnostics): the walk
    stops at nodes ``values`` already holds, so adding a few nodes over evaluated
    ones (a local partial) costs only those.  Floats with the compiled code's
    semantics: each node computed as its lowered steps (small integer powers as
    products), ``1/0 → inf`` (:func:`apply_op`).

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
        elif op not in LOWERED:
            args = args_of[node]
            values[node] = apply_op(op, [values[a] for a in args])
        else:  # computed as its lowered steps, as compiled code computes it
            args = args_of[node]
            steps, consts, _ = lower(graph, [*(a for a in args if op_of[a] == "const"), node])
            local = {**{a: values[a] for a in args}, **consts}  # the steps' own values
            for step, step_op, step_args in steps:
                local[step] = apply_op(step_op, [local[a] for a in step_args])
            values[node] = local[node]
    return values
