"""The one table of operations: arity, evaluation, derivative rule and printing, as data.

Every other layer (parser, simplifier, differentiator, compiler, printer, renderer)
reads this table; adding an operation is adding one ``_op(...)`` line.

Derivative rules are *local partials* written as expression construction: for an
op ``out = f(a, b)`` the entry ``partials=(da, db)`` holds one function per
argument, called as ``da(a, b, out)`` with :class:`symad.expr.Expr` arguments and
returning the expression ``∂out/∂a`` (or a plain number where the partial is one,
as for ``a + b``).  Reverse mode multiplies them by the adjoint, forward mode by
the tangent, so one rule serves both; :mod:`symad.tape` runs the same functions
on numbers.

Conventions at non-differentiable points (documented in the README):
``abs'(0) = sign(0) = 0``; for ``min``/``max`` a tie splits the derivative
evenly (``step(0) = 0.5``), so ``d/dx max(x, x) = 1``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

# Printing precedence levels, lowest binds loosest.
PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_POWER, PREC_ATOM = 1, 2, 3, 4, 5


@dataclass(frozen=True)
class Op:
    """One operation: everything symad knows about it."""

    name: str  # the one name used everywhere: grammar alias, table key, DOT label
    arity: int  # 0 for leaves (const, var)
    py: Callable[..., float] | None  # scalar evaluation on floats; may raise on domain errors
    np: Callable[..., Any] | None  # NumPy evaluation with IEEE semantics
    partials: tuple[Callable[..., Any] | float, ...]  # d out / d arg_i: expression builders or numbers
    kind: str  # printing form: "leaf", "infix", "prefix" or "call"
    symbol: str  # infix/prefix symbol, or the function name for calls
    prec: int = PREC_ATOM
    assoc: str = "left"  # infix associativity: "left" or "right"
    commutative: bool = False
    code: str | None = None  # inline code template, e.g. "{0} + {1}"; else a call
    doc: str = ""

    def partial(self, k: int, *args_and_out: Any) -> Any:
        """∂out/∂(argument k) at ``(*args, out)``: an expression, or a number for a constant rule."""
        rule = self.partials[k]
        return rule if isinstance(rule, float) else rule(*args_and_out)


def _call(name: str) -> Callable[..., Any]:
    """Op ``name`` applied to expressions (building a node) or to numbers (computing it).

    Derivative rules call these, so one rule serves symbolic differentiation and
    the numeric reverse sweep of :mod:`symad.tape`.  On a Python float the scalar
    function runs and may raise on a domain error (callers retry with NumPy); on
    NumPy values the NumPy function runs with IEEE semantics.
    """

    def build(first: Any, *rest: Any) -> Any:
        if type(first) is float:
            return OPS[name].py(first, *rest)  # type: ignore[misc]
        apply = getattr(first, "apply", None)
        if apply is None:
            return OPS[name].np(first, *rest)  # type: ignore[misc]
        return apply(name, *rest)

    build.__name__ = name
    return build


sin, cos, sqrt, log, sign, step, sinh, cosh, power = map(
    _call, ["sin", "cos", "sqrt", "log", "sign", "step", "sinh", "cosh", "pow"])


# --- scalar helpers with IEEE-friendly behaviour where `math` has none ---------------

def _py_sign(x: float) -> float:
    return math.copysign(1.0, x) if x != 0 and x == x else (x if x != x else 0.0)


def _py_step(x: float) -> float:
    if x != x:
        return x
    return 1.0 if x > 0 else (0.0 if x < 0 else 0.5)


def _py_min(a: float, b: float) -> float:
    return math.nan if a != a or b != b else (a if a <= b else b)


def _py_max(a: float, b: float) -> float:
    return math.nan if a != a or b != b else (a if a >= b else b)


def _np_step(x: Any) -> Any:
    return np.heaviside(x, 0.5)


OPS: dict[str, Op] = {}


def _op(name: str, arity: int, py: Any, np_fn: Any, partials: tuple = (), *, kind: str = "call",
        symbol: str | None = None, prec: int = PREC_ATOM, assoc: str = "left",
        commutative: bool = False, code: str | None = None, doc: str = "") -> None:
    assert len(partials) == arity, f"{name}: one partial per argument"
    OPS[name] = Op(name, arity, py, np_fn, partials, kind, symbol or name, prec, assoc,
                   commutative, code, doc)


# ===================================================================== leaves
_op("const", 0, None, None, kind="leaf", doc="a number (also pi, e, inf, nan)")
_op("var", 0, None, None, kind="leaf", doc="a variable")

# ===================================================================== arithmetic
_op("add", 2, lambda a, b: a + b, np.add,
    (1.0, 1.0),
    kind="infix", symbol="+", prec=PREC_SUM, commutative=True, code="{0} + {1}")
_op("sub", 2, lambda a, b: a - b, np.subtract,
    (1.0, -1.0),
    kind="infix", symbol="-", prec=PREC_SUM, code="{0} - {1}")
_op("mul", 2, lambda a, b: a * b, np.multiply,
    (lambda a, b, out: b, lambda a, b, out: a),
    kind="infix", symbol="*", prec=PREC_PRODUCT, commutative=True, code="{0} * {1}")
_op("div", 2, lambda a, b: a / b, np.divide,
    (lambda a, b, out: 1.0 / b, lambda a, b, out: -out / b),
    kind="infix", symbol="/", prec=PREC_PRODUCT, code="{0} / {1}")
_op("pow", 2, math.pow, np.power,
    (lambda a, b, out: b * power(a, b - 1.0), lambda a, b, out: out * log(a)),
    kind="infix", symbol="^", prec=PREC_POWER, assoc="right")
_op("neg", 1, lambda a: -a, np.negative, (-1.0,),
    kind="prefix", symbol="-", prec=PREC_UNARY, code="-{0}")

# ===================================================================== elementary functions
_op("sin", 1, math.sin, np.sin, (lambda a, out: cos(a),))
_op("cos", 1, math.cos, np.cos, (lambda a, out: -sin(a),))
_op("tan", 1, math.tan, np.tan, (lambda a, out: 1.0 + out * out,))
_op("asin", 1, math.asin, np.arcsin, (lambda a, out: 1.0 / sqrt(1.0 - a * a),))
_op("acos", 1, math.acos, np.arccos, (lambda a, out: -1.0 / sqrt(1.0 - a * a),))
_op("atan", 1, math.atan, np.arctan, (lambda a, out: 1.0 / (1.0 + a * a),))
_op("sinh", 1, math.sinh, np.sinh, (lambda a, out: cosh(a),))
_op("cosh", 1, math.cosh, np.cosh, (lambda a, out: sinh(a),))
_op("tanh", 1, math.tanh, np.tanh, (lambda a, out: 1.0 - out * out,))
_op("exp", 1, math.exp, np.exp, (lambda a, out: out,))
_op("log", 1, math.log, np.log, (lambda a, out: 1.0 / a,), doc="natural log; log(x, b) is log base b")
_op("sqrt", 1, math.sqrt, np.sqrt, (lambda a, out: 0.5 / out,))
_op("abs", 1, abs, np.abs, (lambda a, out: sign(a),))
_op("atan2", 2, math.atan2, np.arctan2,
    (lambda y, x, out: x / (x * x + y * y), lambda y, x, out: -y / (x * x + y * y)))
_op("min", 2, _py_min, np.minimum,
    (lambda a, b, out: step(b - a), lambda a, b, out: step(a - b)), commutative=True)
_op("max", 2, _py_max, np.maximum,
    (lambda a, b, out: step(a - b), lambda a, b, out: step(b - a)), commutative=True)
_op("sign", 1, _py_sign, np.sign, (0.0,), doc="-1, 0 or 1; the derivative of abs")
_op("step", 1, _py_step, _np_step, (0.0,),
    doc="Heaviside step with step(0) = 0.5; the derivative of max")


# Functions callable by name in the input language: name -> {arity: builder}.
# Plain ops map to themselves; derived forms are rewritten into primitives.
FUNCTIONS: dict[str, dict[int, Callable[..., Any]]] = {
    name: {op.arity: _call(name)} for name, op in OPS.items() if op.kind == "call"
}
FUNCTIONS["pow"] = {2: _call("pow")}
FUNCTIONS["log"][2] = lambda x, base: log(x) / log(base)

# Names that denote numbers, not variables.
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}

RESERVED = frozenset(FUNCTIONS) | frozenset(CONSTANTS)
