"""Find where a non-finite value first appears, so the CLI can say *why* a result is inf or nan."""

from __future__ import annotations

import math
from collections.abc import Mapping

from symad.backends.interpret import node_values
from symad.core.dag import Graph
from symad.core.ops import OPS
from symad.core.printing import format_number, to_infix
from symad.core.semantics import numpy

_MAX_SHOWN = 60


def first_nonfinite(graph: Graph, root: int, point: Mapping[str, float]) -> str | None:
    """Describe the first subexpression of ``root`` that turns finite inputs into inf or nan.

    Interprets the DAG node by node (slow, used only to explain a bad result).

    >>> from symad import parse
    >>> e = parse("x + 1/(x - 1)")
    >>> first_nonfinite(e.graph, e.id, {"x": 1.0})
    '1/(x - 1) = inf (divide by zero)'
    """
    value = node_values(graph, [root], point)  # the one evaluator: the compiled code's numbers
    for node in graph.reachable([root]):
        op = graph.op[node]
        if op in ("const", "var"):
            continue
        inputs = [value[a] for a in graph.args[node]]
        result = value[node]
        reason = ""
        if not math.isfinite(result) and all(math.isfinite(v) for v in inputs):
            np = numpy()
            with np.errstate(all="raise"):  # ask NumPy which IEEE exception it was
                try:
                    OPS[op].np(*(np.float64(v) for v in inputs))  # type: ignore[misc]
                except FloatingPointError as err:
                    reason = str(err).split(" encountered")[0]
        if not math.isfinite(result) and all(math.isfinite(v) for v in inputs):
            text = to_infix(graph, node) if graph.tree_size(node) < 4 * _MAX_SHOWN else ""
            if not text or len(text) > _MAX_SHOWN:
                text = f"{op}(...)"
            why = f" ({reason})" if reason else f" ({op} outside its domain)"
            return f"{text} = {format_number(result)}{why}"
    return None
