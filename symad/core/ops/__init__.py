"""The one table of operations: arity, evaluation, derivative rule, printing, and every other
per-op fact (LaTeX, SymPy, NumPy, the Python export, pictures), as data.

Every other layer (parser, simplifier, differentiator, interpreters, Python and
LLVM code generators, printer, renderer, tests) reads this table; adding an
operation is one :func:`define` call (``tests/test_new_op.py`` shows it).  The entries are
in one module per family (:mod:`.arith`, :mod:`.elementary`, :mod:`.stable`, :mod:`.logic`,
:mod:`.special`);
this module assembles them and adds the derived forms of the language (``log(x, b)``, ``clip``,
``logsumexp``...).

Derivative rules are *local partials* written as expression construction: for an
op ``out = f(a, b)`` the entry ``partials=(da, db)`` holds one function per
argument, called as ``da(a, b, out)`` with :class:`symad.expr.Expr` arguments and
returning the expression ``∂out/∂a`` (or a plain number where the partial is one,
as for ``a + b``).  Reverse mode multiplies them by the adjoint, forward mode by
the tangent, so one rule serves both; :mod:`symad.ad.numbers` (the tape) runs the same functions
on numbers.

Conventions at non-differentiable points (documented in docs/reference/architecture.md):
``abs'(0) = sign(0) = 0``; for ``min``/``max`` a tie splits the derivative
evenly (``step(0) = 0.5``), so ``d/dx max(x, x) = 1``.

Values follow one semantics in every backend (``docs/reference/numerics.md``): IEEE
arithmetic, the C library's functions (C99 Annex F special cases), and
``min``/``max`` as IEEE 754-2019 minimum/maximum.  ``py`` and ``np`` below give
those bits: the NumPy functions are NumPy's own only where they match the C
library's (checked by ``tests/core/test_special_values.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

# The families define their entries, in the table's order.
from symad.core.ops import arith, elementary, stable, logic, special  # noqa: F401  # isort: skip
from symad.core.ops.arith import difference_error
from symad.core.ops.stable import TWO_OVER_SQRT_PI
from symad.core.ops.table import (
    FUNCTIONS,
    OPS,
    PREC_AND,
    PREC_ATOM,
    PREC_CMP,
    PREC_NOT,
    PREC_OR,
    PREC_POWER,
    PREC_PRODUCT,
    PREC_SUM,
    PREC_UNARY,
    Call,
    Inline,
    Op,
    Sympy,
    define,
    fmax,
    log,
    op_call,
)

__all__ = ["COMPARISONS", "CONSTANTS", "FUNCTIONS", "OPS", "PREC_AND", "PREC_ATOM", "PREC_CMP", "PREC_NOT", "PREC_OR",
           "PREC_POWER", "PREC_PRODUCT", "PREC_SUM", "PREC_UNARY", "TWO_OVER_SQRT_PI", "AnyArity", "Call", "Inline",
           "Op", "Sympy", "define", "difference_error", "op_call", "signatures"]

# The comparison operators of the language: symbol -> op
COMPARISONS = {spec.symbol: name for name, spec in OPS.items() if spec.kind == "infix" and spec.prec == PREC_CMP}

# Derived forms, rewritten into primitives.
FUNCTIONS["pow"] = {2: op_call("pow")}
FUNCTIONS["log"][2] = lambda x, base: log(x) / log(base)
FUNCTIONS["clip"] = {3: lambda x, lo, hi: op_call("min")(fmax(x, lo), hi)}


class AnyArity(dict):
    """The arities of a function taking ``least`` or more arguments: one builder for them all."""

    def __init__(self, least: int, build: Callable[..., Any]):
        super().__init__({least: build})
        self.least, self.build = least, build

    def __contains__(self, arity: object) -> bool:
        return isinstance(arity, int) and arity >= self.least

    def __getitem__(self, arity: int) -> Callable[..., Any]:
        if arity not in self:
            raise KeyError(arity)
        return self.build


def _folded(name: str) -> Callable[..., Any]:
    """``name(a, b, c, ...)`` as ``name(name(a, b), c) ...``, left to right (one argument: itself)."""
    binary = op_call(name)

    def build(first: Any, *rest: Any) -> Any:
        out = first
        for x in rest:
            out = binary(out, x)
        return out
    return build


FUNCTIONS["logsumexp"] = AnyArity(1, _folded("logaddexp"))
FUNCTIONS["min"] = AnyArity(2, _folded("min"))
FUNCTIONS["max"] = AnyArity(2, _folded("max"))
_PARAMETERS = {("atan2", 2): "y, x", ("where", 3): "condition, a, b", ("log", 2): "x, base", ("clip", 3): "x, lo, hi",
               ("logsumexp", 1): "a, b, ...", ("min", 2): "a, b, ...", ("max", 2): "a, b, ..."}


def signatures() -> list[str]:
    """How each function is called, for help texts: ``sin``, …, ``atan2(y, x)``, ``log(x, base)``."""
    one = [name for name, forms in FUNCTIONS.items() if 1 in forms and not isinstance(forms, AnyArity)]
    more = [f"{name}({_PARAMETERS.get((name, n), ', '.join('abcd'[:n]))})"
            for name, forms in FUNCTIONS.items() for n in sorted(forms) if n != 1 or isinstance(forms, AnyArity)]
    return one + more

# Names that denote numbers, not variables.
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}
