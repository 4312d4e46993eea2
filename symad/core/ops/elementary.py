"""The op table's elementary functions: trigonometric, hyperbolic, exp and log, roots,
``abs``, ``min``/``max`` and ``sign``/``step``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from symad.core import semantics as sem
from symad.core.ops.table import (
    Call,
    Inline,
    Sympy,
    cos,
    cosh,
    define,
    equal,
    fabs,
    fmax,
    hypot,
    sign,
    sin,
    sinh,
    sqrt,
    step,
    where,
)

_np = sem.NumpyFunction  # numpy.<name>, imported on first use
# Where math.<name> raises, C's value: nan outside the domain, inf on overflow
_NAN, _INF = "math.nan", "math.inf"


def _reciprocal_square(x: Any) -> Any:
    """1/x² as (1/x)·(1/x): x² would overflow from 1.3e154 on, where 1/x² is still a
    subnormal, not 0."""
    r = 1.0 / x
    return r * r


def _atan2_partial(k: int) -> Callable[..., Any]:
    """∂atan2(y, x)/∂y = x/(x² + y²) (k = 0) or ∂/∂x = −y/(x² + y²) (k = 1), with x and y
    first divided by m = max(|x|, |y|), as hypot scales: the partials are homogeneous of
    degree −1, so this is exact algebra, and x² + y² can no longer overflow or underflow
    where the partial itself is a normal number (x = 3e-170, y = 4e-170; x = 1, y = 1e200)."""

    def rule(y: Any, x: Any, out: Any) -> Any:
        m = fmax(fabs(x), fabs(y))
        s, t = x / m, y / m
        # At an infinite argument (where s or t is inf/inf) the partial is 0, its limit there.
        return where(equal(m, math.inf), 0.0, (s if k == 0 else -t) / (s * s + t * t) / m)

    return rule


def _tie(a: Any, b: Any, d: Any) -> Any:
    """min's and max's partial step(d), d = ±(a − b): 0.5 at a tie, equal infinities too (where d is
    nan), so that max(-inf, -inf, 1) passes 0, not nan, to a masked entry."""
    return where(equal(a, b), 0.5, step(d))


# min/max: IEEE 754-2019 minimum/maximum (llvm.minimum needs LLVM 16 on x86).  Unequal ordered
# arguments: the comparison decides; equal ones differ at most in the sign of zero, and the OR
# (AND) of their bits is -0 (+0); an unordered pair yields a + b, a nan.
_MIN_MAX = ("{t}l = fcmp olt double {0}, {1}\n{t}g = fcmp ogt double {0}, {1}\n"
            "{t}u = fcmp uno double {0}, {1}\n{t}n = fadd double {0}, {1}\n"
            "{t}a = bitcast double {0} to i64\n{t}b = bitcast double {1} to i64\n"
            "{t}o = BITS i64 {t}a, {t}b\n{t}e = bitcast i64 {t}o to double\n"
            "{t}q = select i1 {t}u, double {t}n, double {t}e\n"
            "{t}s = select i1 {t}FIRST, double {1}, double {t}q\n{r} = select i1 {t}SECOND, double {0}, double {t}s")
# sign: -1, 0, 1 and step: 0, 0.5, 1, for arguments < 0, = 0, > 0 (nan stays nan)
_THREE_WAY = ("{t}p = fcmp ogt double {0}, 0.0\n{t}a = select i1 {t}p, double 1.0, double ZERO\n"
              "{t}n = fcmp olt double {0}, 0.0\n{t}b = select i1 {t}n, double NEGATIVE, double {t}a\n"
              "{t}u = fcmp uno double {0}, {0}\n{r} = select i1 {t}u, double {0}, double {t}b")

define("sin", 1, math.sin, _np("sin"), (lambda a, out: cos(a),), llvm=Call("llvm.sin.f64"),
       latex=r"\sin", sympy="sin", math_raises=_NAN)
define("cos", 1, math.cos, _np("cos"), (lambda a, out: -sin(a),), llvm=Call("llvm.cos.f64"),
       latex=r"\cos", sympy="cos", math_raises=_NAN)
define("tan", 1, math.tan, _np("tan", math.tan), (lambda a, out: 1.0 + out * out,), llvm=Call("tan"),
       latex=r"\tan", sympy="tan", math_raises=_NAN)
# asin', acos' on (1 - x)(1 + x), exact near ±1 where 1 - x² cancels; atan' without 1 + x² overflowing
define("asin", 1, math.asin, _np("arcsin", math.asin), (lambda a, out: 1.0 / sqrt((1.0 - a) * (1.0 + a)),),
       llvm=Call("asin"), domain=((0.3,), (-0.6,)), latex=r"\arcsin", sympy="asin", math_raises=_NAN)
define("acos", 1, math.acos, _np("arccos", math.acos), (lambda a, out: -1.0 / sqrt((1.0 - a) * (1.0 + a)),),
       llvm=Call("acos"), domain=((0.3,), (-0.6,)), latex=r"\arccos", sympy="acos", math_raises=_NAN)
define("atan", 1, math.atan, _np("arctan", math.atan), (lambda a, out: _reciprocal_square(hypot(a, 1.0)),),
       llvm=Call("atan"), latex=r"\arctan", sympy="atan")
define("sinh", 1, math.sinh, _np("sinh", math.sinh), (lambda a, out: cosh(a),), llvm=Call("sinh"),
       latex=r"\sinh", sympy="sinh", math_raises="math.copysign(math.inf, x)")
define("cosh", 1, math.cosh, _np("cosh", math.cosh), (lambda a, out: sinh(a),), llvm=Call("cosh"),
       latex=r"\cosh", sympy="cosh", math_raises=_INF)
define("tanh", 1, math.tanh, sem.each_libm(math.tanh), (lambda a, out: _reciprocal_square(cosh(a)),),
       llvm=Call("tanh"), latex=r"\tanh", sympy="tanh", numpy=("tanh",))
define("exp", 1, math.exp, _np("exp", math.exp), (lambda a, out: out,), llvm=Call("llvm.exp.f64"),
       latex=r"\exp", sympy="exp", math_raises=_INF)
define("log", 1, math.log, _np("log", math.log), (lambda a, out: 1.0 / a,), llvm=Call("llvm.log.f64"),
       domain=((0.7,), (2.5,)), doc="natural log; log(x, b) is log base b",
       latex=r"\log", sympy="log", math_raises="-math.inf if x == 0.0 else math.nan")
define("sqrt", 1, math.sqrt, _np("sqrt"), (lambda a, out: 0.5 / out,), llvm=Call("llvm.sqrt.f64", lanewise=True),
       domain=((0.7,), (2.5,)), latex=(r"\sqrt{", 0, "}"), sympy=Sympy(build=lambda sp, a: sp.sqrt(a)),
       math_raises=_NAN)  # (SymPy's sqrt is a power: read back as one, x**(1/2))
define("abs", 1, abs, _np("absolute"), (lambda a, out: sign(a),), llvm=Call("llvm.fabs.f64"), domain=((0.7,), (-1.3,)),
       latex=(r"\left|", 0, r"\right|"), sympy="Abs", numpy=("fabs",))
define("atan2", 2, math.atan2, _np("arctan2", math.atan2), (_atan2_partial(0), _atan2_partial(1)), llvm=Call("atan2"),
       domain=((0.5, -1.2), (-0.7, 0.4), (1.1, 0.9)), sympy="atan2")
define("min", 2, sem.py_min, sem.np_min, (lambda a, b, out: _tie(a, b, b - a), lambda a, b, out: _tie(a, b, a - b)),
       llvm=Inline(_MIN_MAX.replace("BITS", "or").replace("FIRST", "g").replace("SECOND", "l")),
       commutative=True, domain=((0.3, 0.9), (1.2, -0.4)), latex=r"\min", sympy="Min", numpy=("minimum",))
define("max", 2, sem.py_max, sem.np_max, (lambda a, b, out: _tie(a, b, a - b), lambda a, b, out: _tie(a, b, b - a)),
       llvm=Inline(_MIN_MAX.replace("BITS", "and").replace("FIRST", "l").replace("SECOND", "g")),
       commutative=True, domain=((0.3, 0.9), (1.2, -0.4)), latex=r"\max", sympy="Max", numpy=("maximum",))
define("sign", 1, sem.py_sign, _np("sign"), (0.0,),
       llvm=Inline(_THREE_WAY.replace("ZERO", "0.0").replace("NEGATIVE", "-1.0")),
       domain=((0.7,), (-1.3,)), doc="-1, 0 or 1; the derivative of abs", sympy="sign")
# SymPy's Heaviside(x, 1/2): its second argument, the value at 0, is not read back
define("step", 1, sem.py_step, sem.np_step, (0.0,),
       llvm=Inline(_THREE_WAY.replace("ZERO", "0.5").replace("NEGATIVE", "0.0")),
       domain=((0.7,), (-1.3,)), doc="Heaviside step with step(0) = 0.5; the derivative of max",
       sympy=Sympy("Heaviside", lambda sp, a: sp.Heaviside(a, sp.Rational(1, 2))))
