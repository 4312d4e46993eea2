"""What an export computes: an expression's value, gradient and Hessian entries as one schedule,
and text made safe for a comment of the exported source."""

from __future__ import annotations

from collections.abc import Sequence

from symad.ad.matrices import hessian_nodes
from symad.ad.reverse import gradient
from symad.core.errors import SymadError
from symad.expr import Expr
from symad.schedule.schedule import Schedule


def exported_schedule(expr: Expr, variables: Sequence[str] | None, grad: bool,
                      hessian: bool) -> tuple[list[str], Schedule]:
    """The variables' order and the schedule of the value, the gradient and the Hessian's entries."""
    g = expr.graph
    names = list(expr.variables if variables is None else variables)
    missing = [v for v in expr.variables if v not in names]
    if missing:
        raise SymadError(f"the expression uses {', '.join(missing)}, which is not in variables")
    inputs = [g.var(v) for v in names]
    outputs = [expr.id]
    if grad:
        partials = gradient(g, expr.id, inputs)
        outputs += [partials[v] for v in inputs]
    if hessian:
        outputs += [h for row in hessian_nodes(g, expr.id, inputs) for h in row]
    return names, Schedule.build(g, outputs, inputs)


def comment(text: str, most: int = 200) -> str:
    """``text`` safe inside a C comment, shortened."""
    text = text.replace("*/", "* /").replace("\n", " ")
    return text if len(text) <= most else text[:most - 3] + "..."
