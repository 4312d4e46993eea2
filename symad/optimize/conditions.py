"""Conditions (comparisons and logic, whose value is 1 or 0 and derivative 0) where an
optimiser needs a function: a comparison given as a constraint is read as what it says, and
anything else that cannot mean what it says is refused, as is a condition to minimise."""

from __future__ import annotations

from symad.core.errors import SymadError
from symad.core.ops import COMPARISONS
from symad.expr import Expr

# A comparison as a constraint: its kind, and which argument is minuend (``a >= b`` is a - b ≥ 0).
RELATIONS = {"ge": ("ineq", 0), "le": ("ineq", 1), "eq": ("eq", 0)}
STRICT = {"lt": "le", "gt": "ge"}  # an open set: no optimiser holds it; its closure is what to write
LOGIC = ("and", "or", "not")  # conditions of conditions (with the comparisons: 1 or 0, derivative 0)
SYMBOLS = {name: symbol for symbol, name in COMPARISONS.items()}


def condition(expr: Expr) -> str | None:
    """What makes ``expr`` a condition (its value 1 or 0, its derivative 0 everywhere): the
    comparison or logical operator at its top, or of every arm of a ``where`` at its top; None
    for an expression that is not one."""
    g = expr.graph
    found, stack = None, [expr.id]
    while stack:  # a where's arms, down to what they are
        node = stack.pop()
        op = g.op[node]
        if op in SYMBOLS or op in LOGIC:
            found = found or (SYMBOLS.get(op) or op)
        elif op == "where":
            stack.extend(g.args[node][1:])
        elif not (op == "const" and g.data[node] in (0.0, 1.0)):
            return None
    return found or ("where" if expr.op == "where" else None)  # where(c, 1, 0): an indicator


def as_constraint(kind: str, expr: Expr) -> tuple[str, Expr]:
    """``(kind, expr)`` as scipy reads it: a comparison rewritten to what it says (``a <= b``
    is ``("ineq", b - a)``, ``a >= b`` ``("ineq", a - b)``, ``a == b`` ``("eq", a - b)``), any
    other expression as it is; a SymadError saying how to write one that cannot mean what it says."""
    g, op = expr.graph, expr.op
    if op in RELATIONS:
        said, minuend = RELATIONS[op]
        a, b = g.args[expr.id]
        if said != kind:
            if said == "eq":
                instead = "write the inequality with <= or >="
            else:
                instead = f"write the equality with == ({Expr(g, g.make('eq', a, b)).to_text()})"
            raise SymadError(f"{expr.to_text()} is {'an equality' if said == 'eq' else 'an inequality'}, given "
                             f"as an {kind} constraint: give it as an {said} constraint (--{said} on the command "
                             f"line), or {instead}")
        first, second = (a, b) if minuend == 0 else (b, a)
        return kind, Expr(g, g.make("sub", first, second))
    if op in STRICT:
        closed = Expr(g, g.make(STRICT[op], *g.args[expr.id])).to_text()
        raise SymadError(f"{expr.to_text()} is a strict inequality, which no optimiser can hold (its set is open): "
                         f"write {closed}")
    if op == "ne":
        raise SymadError(f"{expr.to_text()} cannot be a constraint: the points where a != b are no set an optimiser "
                         f"can hold; write an equality (==) or an inequality (<=, >=)")
    what = condition(expr)
    if what is not None:
        raise SymadError(f"{expr.to_text()} is a condition (built with {what}), whose value is 1 or 0, not a "
                         f"constraint: give each comparison as a constraint of its own (0 <= x <= 1 is two: x >= 0 and "
                         f"x <= 1)")
    return kind, expr


def check_objective(expr: Expr) -> None:
    """A SymadError if ``expr`` is a condition: its gradient is 0 wherever it is defined, so
    minimising it means nothing (``minimize("x > 1", ...)``)."""
    what = condition(expr)
    if what is not None:
        raise SymadError(f"the objective {expr.to_text()} is a condition (built with {what}), whose value is 1 "
                         f"or 0 and whose gradient is 0: minimise a function of the variables (e.g. a squared "
                         f"distance), and give a comparison as a constraint")
