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

Values follow one semantics in every backend (``docs/numerics.md``): IEEE
arithmetic, the C library's functions (C99 Annex F special cases), and
``min``/``max`` as IEEE 754-2019 minimum/maximum.  ``py`` and ``np`` below give
those bits: the NumPy functions are NumPy's own only where they match the C
library's (checked by ``tests/test_special_values.py``).
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


sin, cos, sqrt, log, sign, step, sinh, cosh, power, fabs, fmax = map(
    _call, ["sin", "cos", "sqrt", "log", "sign", "step", "sinh", "cosh", "pow", "abs", "max"])


# --- scalar helpers with IEEE-friendly behaviour where `math` has none ---------------

def _py_sign(x: float) -> float:
    return math.copysign(1.0, x) if x != 0 and x == x else (x if x != x else 0.0)


def _py_step(x: float) -> float:
    if x != x:
        return x
    return 1.0 if x > 0 else (0.0 if x < 0 else 0.5)


def _py_min(a: float, b: float) -> float:
    """IEEE 754-2019 minimum: nan if either is nan, and −0 < +0 (so it is commutative)."""
    if a < b:
        return a
    if b < a:
        return b
    if a == b:
        return a if math.copysign(1.0, a) < 0 else b
    return math.nan


def _py_max(a: float, b: float) -> float:
    """IEEE 754-2019 maximum: nan if either is nan, and −0 < +0."""
    if a > b:
        return a
    if b > a:
        return b
    if a == b:
        return b if math.copysign(1.0, a) < 0 else a
    return math.nan


# np.minimum/np.maximum return either zero for (+0, −0), depending on the CPU's instructions.
# The IEEE minimum has its sign bit set exactly when an argument has (−0 < +0); the maximum
# when both have.
def _np_min(a: Any, b: Any) -> Any:
    return np.copysign(np.minimum(a, b), np.minimum(np.copysign(1.0, a), np.copysign(1.0, b)))


def _np_max(a: Any, b: Any) -> Any:
    return np.copysign(np.maximum(a, b), np.maximum(np.copysign(1.0, a), np.copysign(1.0, b)))


def _np_step(x: Any) -> Any:
    return np.heaviside(x, 0.5)


def _np_pow(a: Any, b: Any) -> Any:
    """``a^b`` by the C library's ``pow``, as ``math.pow`` and native code compute it."""
    if np.ndim(b):
        return np.power(a, b)
    # With one exponent for all bases, NumPy computes a^2, a^-1 and a^0.5 as a*a, 1/a and
    # sqrt(a), 1 ulp off the C library's pow on ~0.1% of inputs (and sqrt(−0) = −0,
    # sqrt(−inf) = nan, where pow gives +0 and inf).  An array of exponents takes its pow loop.
    return np.power(np.reshape(a, -1), np.full(max(1, np.size(a)), b)).reshape(np.shape(a))[()]


def _each(fn: Callable[[float], float]) -> Callable[[Any], Any]:
    """``fn``, a C library function (through ``math``) defined at every double, on each element.

    For ops whose NumPy version is NumPy's own vector code (``tanh``: 1 ulp off libm's on
    ~16% of inputs): 7x slower than it on arrays, but the bits of ``math`` and native code.
    """

    def each(x: Any) -> Any:
        if np.ndim(x) == 0:
            return np.float64(fn(float(x)))
        x = np.asarray(x, dtype=np.float64)
        return np.fromiter(map(fn, x.ravel().tolist()), np.float64, x.size).reshape(x.shape)

    each.__name__ = fn.__name__
    return each


def _atan2_partial(k: int) -> Callable[..., Any]:
    """∂atan2(y, x)/∂y = x/(x² + y²) (k = 0) or ∂/∂x = −y/(x² + y²) (k = 1), with x and y
    first divided by m = max(|x|, |y|), as hypot scales: the partials are homogeneous of
    degree −1, so this is exact algebra, and x² + y² can no longer overflow or underflow
    where the partial itself is a normal number (x = 3e-170, y = 4e-170; x = 1, y = 1e200)."""

    def rule(y: Any, x: Any, out: Any) -> Any:
        m = fmax(fabs(x), fabs(y))
        s, t = x / m, y / m
        return (s if k == 0 else -t) / (s * s + t * t) / m

    return rule


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
_op("pow", 2, math.pow, _np_pow,
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
_op("tanh", 1, math.tanh, _each(math.tanh), (lambda a, out: 1.0 - out * out,))
_op("exp", 1, math.exp, np.exp, (lambda a, out: out,))
_op("log", 1, math.log, np.log, (lambda a, out: 1.0 / a,), doc="natural log; log(x, b) is log base b")
_op("sqrt", 1, math.sqrt, np.sqrt, (lambda a, out: 0.5 / out,))
_op("abs", 1, abs, np.abs, (lambda a, out: sign(a),))
_op("atan2", 2, math.atan2, np.arctan2, (_atan2_partial(0), _atan2_partial(1)))
_op("min", 2, _py_min, _np_min,
    (lambda a, b, out: step(b - a), lambda a, b, out: step(a - b)), commutative=True)
_op("max", 2, _py_max, _np_max,
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
