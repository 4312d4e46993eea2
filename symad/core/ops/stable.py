"""The op table's numerically stable functions (stable in value and in derivative), the inverse
hyperbolic functions, the cube root, and rounding."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from symad.core import semantics as sem
from symad.core.ops.arith import difference_error
from symad.core.ops.table import (
    Call,
    Inline,
    Sympy,
    cos,
    define,
    equal,
    exp,
    fabs,
    fmin,
    hypot,
    less,
    sigmoid,
    sqrt,
    where,
)

_np = sem.NumpyFunction  # numpy.<name>, imported on first use
_INF = "math.inf"  # where math.<name> raises: it overflows


def _logaddexp_partial(k: int) -> Callable[..., Any]:
    """∂logaddexp(a, b)/∂a = sigmoid(a − b) and ∂/∂b = sigmoid(−(a − b)), with the rounding error
    t of a − b put back to first order (sigmoid(±(d + t)) = σ± ± σ+σ−t): the smaller argument's
    partial, e^−|a−b| in its tail, would lose |a − b|/2 ulp.  At a = b = ±inf (a − b = nan) each is
    0.5, the limit along a = b: a masked (−inf) entry of logsumexp gets exactly 0."""

    def rule(a: Any, b: Any, out: Any) -> Any:
        # sigmoid(-(a - b)), not sigmoid(b - a): the same |a - b| as the value's, so one exp serves all three
        d = a - b
        up, down = sigmoid(d), sigmoid(-d)
        t = difference_error(a, b, d)
        shift = up * down * where(equal(t, t), t, 0.0)  # (t is nan where a or b is inf: no shift)
        return where(equal(a, b), 0.5, up + shift if k == 0 else down - shift)

    return rule


def _gauss(a: Any) -> Any:
    """exp(−a²) to full relative accuracy: a² rounded would lose a²/2 ulp (340 at a = 26).  |a|
    (at most 28: beyond, exp(−a²) underflows) is split into h + l with h of 26 bits (Veltkamp),
    so h·h is exact and exp(−a²) = exp(−h·h)·exp(−l·(|a| + h))."""
    c = fmin(fabs(a), 28.0)
    p = c * 134217729.0
    h = p - (p - c)
    return exp(-(h * h)) * exp(-((c - h) * (c + h)))


# sinc'(x) = sum over n ≥ 1 of (-1)^n 2n x^(2n-1)/(2n+1)!: -1/3, 1/30, -1/840, ... (to n = 10, the
# last term kept, 4e-19 relative below |x| = 1)
_SINC_SERIES = tuple((-1) ** n * 2 * n / math.factorial(2 * n + 1) for n in range(1, 11))


def _sinc_partial(a: Any, out: Any) -> Any:
    """sinc'(x) = (cos(x) - sinc(x))/x, which cancels near 0 (4.5/x² ulp lost): there, below
    |x| = 1, its Taylor series; 0 at 0."""
    x2 = a * a
    series = _SINC_SERIES[-1]
    for c in reversed(_SINC_SERIES[:-1]):
        series = c + x2 * series
    return where(less(fabs(a), sem.SINC_SERIES_BELOW), a * series, (cos(a) - out) / a)


def _hypot_divisor(out: Any) -> Any:
    """hypot's partials are a/out and b/out; at the origin (out = 0: hypot is 0 only there) they
    are 0, the documented choice (abs'(0) = 0 alike), not 0/0."""
    return where(equal(out, 0.0), 1.0, out)


# Stable in value and in derivative: each derivative is itself a stable op (softplus' is
# sigmoid, not e^x/(1 + e^x)).  The composite ones compute, step for step, what
# symad.core.semantics computes on floats and arrays.
_EXP, _LOG, _FABS = ("llvm.exp.f64", 1), ("llvm.log.f64", 1), ("llvm.fabs.f64", 1)


def _log1p_lines(x: str, r: str) -> str:
    """IR template of ``r = log1p(x)`` as :func:`symad.core.semantics.py_log1p` computes it (the
    denominator is 1 where it is not used, so that no evaluator divides by zero)."""
    return (f"{{t}}Lu = fadd double 1.0, {x}\n{{t}}Lo = fcmp oeq double {{t}}Lu, 1.0\n"
            f"{{t}}Ld = fsub double {{t}}Lu, 1.0\n{{t}}Le = select i1 {{t}}Lo, double 1.0, double {{t}}Ld\n"
            f"{{t}}Lq = fdiv double {x}, {{t}}Le\n{{t}}Ll = call double @llvm.log.f64(double {{t}}Lu)\n"
            f"{{t}}Lp = fmul double {{t}}Ll, {{t}}Lq\n{{t}}Li = fcmp oeq double {{t}}Lu, 0x7FF0000000000000\n"
            f"{{t}}Ls = select i1 {{t}}Li, double {{t}}Lu, double {{t}}Lp\n"
            f"{r} = select i1 {{t}}Lo, double {x}, double {{t}}Ls\n")


# e = exp(-|x|), u = 1 + e, q = 1/u: what the stable functions share (as symad.core.semantics
# computes them), so that LLVM computes them once for a value and its derivative
def _e_abs(x: str) -> str:
    return (f"{{t}}Ea = call double @llvm.fabs.f64(double {x})\n{{t}}En = fneg double {{t}}Ea\n"
            "{t}Ee = call double @llvm.exp.f64(double {t}En)\n{t}Eu = fadd double 1.0, {t}Ee\n"
            "{t}Eq = fdiv double 1.0, {t}Eu\n")


# {t}El = log1p(e) for e in [0, 1], from u and q (semantics.py_log1p_unit)
_UNIT_LOG1P = ("{t}Eg = call double @llvm.log.f64(double {t}Eu)\n{t}Ed = fsub double {t}Eu, 1.0\n"
               "{t}Ec = fsub double {t}Ee, {t}Ed\n{t}Ek = fmul double {t}Ec, {t}Eq\n"
               "{t}El = fadd double {t}Eg, {t}Ek\n")
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

define("log1p", 1, sem.py_log1p, sem.np_log1p, (lambda a, out: 1.0 / (1.0 + a),),
       llvm=Inline(_log1p_lines("{0}", "{r}").rstrip("\n"), calls=(_LOG,)),
       domain=((0.4,), (-0.6,)), doc="log(1 + x), accurate for small x",
       sympy=Sympy(build=lambda sp, a: sp.log(1 + a)), numpy=("log1p",))
define("expm1", 1, math.expm1, _np("expm1", math.expm1), (lambda a, out: exp(a),), llvm=Call("expm1"),
       doc="exp(x) - 1, accurate for small x",
       sympy=Sympy(build=lambda sp, a: sp.exp(a) - 1), math_raises=_INF)
define("sigmoid", 1, sem.py_sigmoid, sem.np_sigmoid, (lambda a, out: out * sigmoid(-a),),
       llvm=Inline("{t}p = fcmp oge double {0}, 0.0\n" + _e_abs("{0}") + "{t}s = fmul double {t}Ee, {t}Eq\n"
                   "{r} = select i1 {t}p, double {t}Eq, double {t}s", calls=(_FABS, _EXP)),
       doc="the logistic function 1/(1 + exp(-x)), without overflow",
       sympy=Sympy(build=lambda sp, a: 1 / (1 + sp.exp(-a))))
define("softplus", 1, sem.py_softplus, sem.np_softplus, (lambda a, out: sigmoid(a),),
       llvm=Inline("{t}p = fcmp ogt double {0}, 0.0\n{t}m = select i1 {t}p, double {0}, double 0.0\n"
                   + _e_abs("{0}") + _UNIT_LOG1P + "{r} = fadd double {t}m, {t}El", calls=(_FABS, _EXP, _LOG)),
       doc="log(1 + exp(x)), stable: max(x, 0) + log1p(exp(-|x|)); its derivative is sigmoid",
       sympy=Sympy(build=lambda sp, a: sp.log(1 + sp.exp(a))))
define("log_sigmoid", 1, sem.py_log_sigmoid, sem.np_log_sigmoid, (lambda a, out: sigmoid(-a),),
       llvm=Inline("{t}p = fcmp olt double {0}, 0.0\n{t}m = select i1 {t}p, double {0}, double 0.0\n"
                   + _e_abs("{0}") + _UNIT_LOG1P + "{r} = fsub double {t}m, {t}El", calls=(_FABS, _EXP, _LOG)),
       doc="log(sigmoid(x)) = -softplus(-x)",
       sympy=Sympy(build=lambda sp, a: -sp.log(1 + sp.exp(-a))))
define("logaddexp", 2, sem.py_logaddexp, sem.np_logaddexp,
       (_logaddexp_partial(0), _logaddexp_partial(1)),
       llvm=Inline("{t}q = fcmp oeq double {0}, {1}\n{t}d = fsub double {0}, {1}\n"
                   "{t}g = fcmp ogt double {t}d, 0.0\n" + _e_abs("{t}d") + _UNIT_LOG1P
                   + "{t}m = select i1 {t}g, double {0}, double {1}\n"
                   "{t}s = fadd double {t}m, {t}El\n{t}w = fadd double {0}, 0x3FE62E42FEFA39EF\n"
                   "{r} = select i1 {t}q, double {t}w, double {t}s", calls=(_FABS, _EXP, _LOG)),
       commutative=True, domain=((0.4, -1.1), (-0.6, 0.8), (3.0, 3.5)),
       doc="log(exp(a) + exp(b)) without overflow; logsumexp(a, b, ...) folds it",
       sympy=Sympy(build=lambda sp, a, b: sp.log(sp.exp(a) + sp.exp(b))), numpy=("logaddexp",))
define("erf", 1, math.erf, sem.each_libm(math.erf), (lambda a, out: TWO_OVER_SQRT_PI * _gauss(a),),
       llvm=Call("erf"), doc="the error function", sympy="erf")
define("erfc", 1, math.erfc, sem.each_libm(math.erfc), (lambda a, out: -TWO_OVER_SQRT_PI * _gauss(a),),
       llvm=Call("erfc"), doc="1 - erf(x), accurate where erf(x) is near 1", sympy="erfc")
define("hypot", 2, sem.py_hypot, _np("hypot"),
       (lambda a, b, out: a / _hypot_divisor(out), lambda a, b, out: b / _hypot_divisor(out)),
       llvm=Call("hypot"), commutative=True, doc="sqrt(a^2 + b^2) without overflow or underflow",
       sympy=Sympy(build=lambda sp, a, b: sp.sqrt(a**2 + b**2)))
define("sinc", 1, sem.py_sinc, sem.np_sinc, (_sinc_partial,),
       llvm=Inline("{t}z = fcmp oeq double {0}, 0.0\n{t}s = call double @llvm.sin.f64(double {0})\n"
                   "{t}d = select i1 {t}z, double 1.0, double {0}\n{t}q = fdiv double {t}s, {t}d\n"
                   "{r} = select i1 {t}z, double 1.0, double {t}q", calls=(("llvm.sin.f64", 1),)),
       domain=((0.05,), (-1.3,)), doc="sin(x)/x, 1 at 0 (unnormalised; NumPy's sinc is sin(pi x)/(pi x))", sympy="sinc")
define("cbrt", 1, math.cbrt, _np("cbrt", math.cbrt), (lambda a, out: 1.0 / (3.0 * (out * out)),), llvm=Call("cbrt"),
       doc="the real cube root (negative for negative x)",
       sympy=Sympy(build=lambda sp, a: sp.sign(a) * sp.Abs(a) ** sp.Rational(1, 3)))
define("asinh", 1, math.asinh, _np("arcsinh", math.asinh), (lambda a, out: 1.0 / hypot(a, 1.0),), llvm=Call("asinh"),
       sympy="asinh")
define("acosh", 1, math.acosh, _np("arccosh", math.acosh), (lambda a, out: 1.0 / (sqrt(a - 1.0) * sqrt(a + 1.0)),),
       llvm=Call("acosh"), domain=((1.4,), (2.5,)), sympy="acosh", math_raises="math.nan")
define("atanh", 1, math.atanh, _np("arctanh", math.atanh), (lambda a, out: 1.0 / ((1.0 - a) * (1.0 + a)),),
       llvm=Call("atanh"), domain=((0.4,), (-0.6,)), sympy="atanh",
       math_raises="math.copysign(math.inf, x) if abs(x) == 1.0 else math.nan")

# rounding: derivative 0
define("floor", 1, sem.py_floor, _np("floor"), (0.0,), llvm=Call("llvm.floor.f64"),
       domain=((0.4,), (-1.3,)), doc="the largest integer ≤ x; derivative 0",
       latex=(r"\left\lfloor ", 0, r"\right\rfloor"), sympy="floor")
define("ceil", 1, sem.py_ceil, _np("ceil"), (0.0,), llvm=Call("llvm.ceil.f64"),
       domain=((0.4,), (-1.3,)), doc="the smallest integer ≥ x; derivative 0",
       latex=(r"\left\lceil ", 0, r"\right\rceil"), sympy="ceiling")
define("round", 1, sem.py_round, sem.np_round, (0.0,), llvm=Call("llvm.round.f64"),
       domain=((0.4,), (-1.3,)), doc="the nearest integer, halfway cases away from zero (C's round); derivative 0",
       sympy=Sympy(build=lambda sp, a: sp.sign(a) * sp.floor(sp.Abs(a) + sp.Rational(1, 2))))
