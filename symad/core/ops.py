"""The one table of operations: arity, evaluation, derivative rule and printing, as data.

Every other layer (parser, simplifier, differentiator, interpreters, Python and
LLVM code generators, printer, renderer, tests) reads this table; adding an
operation is one :func:`define` call (``tests/core/test_ops.py`` shows it).

Derivative rules are *local partials* written as expression construction: for an
op ``out = f(a, b)`` the entry ``partials=(da, db)`` holds one function per
argument, called as ``da(a, b, out)`` with :class:`symad.expr.Expr` arguments and
returning the expression ``∂out/∂a`` (or a plain number where the partial is one,
as for ``a + b``).  Reverse mode multiplies them by the adjoint, forward mode by
the tangent, so one rule serves both; :mod:`symad.backends.tape` runs the same functions
on numbers.

Conventions at non-differentiable points (documented in docs/architecture.md):
``abs'(0) = sign(0) = 0``; for ``min``/``max`` a tie splits the derivative
evenly (``step(0) = 0.5``), so ``d/dx max(x, x) = 1``.

Values follow one semantics in every backend (``docs/numerics.md``): IEEE
arithmetic, the C library's functions (C99 Annex F special cases), and
``min``/``max`` as IEEE 754-2019 minimum/maximum.  ``py`` and ``np`` below give
those bits: the NumPy functions are NumPy's own only where they match the C
library's (checked by ``tests/core/test_special_values.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from symad.core import semantics as sem

_np = sem.NumpyFunction  # numpy.<name>, imported on first use

# Printing precedence levels, lowest binds loosest (as grammar/symad.lark layers them).
PREC_OR, PREC_AND, PREC_NOT, PREC_CMP = -3, -2, -1, 0
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
    assoc: str = "left"  # infix associativity: "left", "right" or "none" (comparisons)
    commutative: bool = False
    code: str | None = None  # inline Python template, e.g. "{0} + {1}"; else a call of ``py``/``np``
    llvm: Any = None  # lowering to LLVM IR: Inline(template) or Call(symbol)
    domain: tuple[tuple[float, ...], ...] = ()  # points inside the domain where the tests check it
    doc: str = ""
    # The arguments the op selects between by its first (``where``): reverse mode passes the
    # adjoint into the arm taken only, and forward mode selects the arms' tangents.
    arms: tuple[int, ...] = ()

    def partial(self, k: int, *args_and_out: Any) -> Any:
        """∂out/∂(argument k) at ``(*args, out)``: an expression, or a number for a constant rule."""
        rule = self.partials[k]
        return rule if isinstance(rule, float) else rule(*args_and_out)


def _call(name: str) -> Callable[..., Any]:
    """Op ``name`` applied to expressions (building a node) or to numbers (computing it).

    Derivative rules call these, so one rule serves symbolic differentiation and
    the numeric reverse sweep of :mod:`symad.backends.tape`.  On a Python float the scalar
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


sin, cos, sqrt, log, sign, step, sinh, cosh, power, fabs, fmax, fmin, exp, hypot, sigmoid, where, less, equal, \
    sinc = map(_call, ["sin", "cos", "sqrt", "log", "sign", "step", "sinh", "cosh", "pow", "abs", "max", "min", "exp",
                       "hypot", "sigmoid", "where", "lt", "eq", "sinc"])


# Derivatives to full relative accuracy wherever they are finite doubles (docs/numerics.md's
# derivative table, tests/core/test_derivative_tails.py): the rules below keep the digits a
# textbook formula loses in an op's tails.
def difference_error(a: Any, b: Any, d: Any) -> Any:
    """The rounding error of ``d = a - b`` (Knuth's TwoSum): ``a - b = d + t`` exactly; 0 where
    the difference is exact (``a - b`` of nearby numbers, of integers), nan where a or b is inf."""
    bb = d - a
    return (a - (d - bb)) - (b + bb)


def _pow_base_partial(a: Any, b: Any, out: Any) -> Any:
    """b·a^(b−1) as b·a^s·a^e, with s = b − 1 rounded and e its rounding error: a^s alone loses
    e·log a (x^(1/3) at 1e300: 87 ulp); past 2^53, where e = ±1, it has the wrong sign for a
    negative base.  Where b − 1 is exact (x^2.5, any b below 2^53 of integer or half-integer
    form) e = 0 and a^0 = 1, folded away for a constant exponent.  At an infinite b (e is nan
    there) it is b·a^s, and where a^b = 0 (|a| < 1 and b = inf, |a| > 1 and b = −inf) its
    limit 0, not inf·0; for a finite constant b that condition folds away."""
    s = b - 1.0
    written = b * power(a, s)
    return where(equal(fabs(b), math.inf), where(equal(out, 0.0), 0.0, written),
                 written * power(a, difference_error(b, 1.0, s)))


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


def _reciprocal_square(x: Any) -> Any:
    """1/x² as (1/x)·(1/x): x² would overflow from 1.3e154 on, where 1/x² is still a
    subnormal, not 0."""
    r = 1.0 / x
    return r * r


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


def _hypot_divisor(out: Any) -> Any:
    """hypot's partials are a/out and b/out; at the origin (out = 0: hypot is 0 only there) they
    are 0, the documented choice (abs'(0) = 0 alike), not 0/0."""
    return where(equal(out, 0.0), 1.0, out)


# ===================================================================== lowering to LLVM IR
@dataclass(frozen=True)
class Inline:
    """LLVM IR lines computing the op in place: ``{0}``, ``{1}`` the arguments, ``{r}`` the
    result, ``{t}`` a prefix for temporaries; ``calls``: the functions on doubles the lines
    call, as ``(symbol, number of arguments)``."""

    template: str
    calls: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Call:
    """A call of an LLVM intrinsic or C library function on doubles."""

    symbol: str
    # Called as `nobuiltin`, which LLVM leaves alone: its IR passes would rewrite pow(x, 0.5)
    # into sqrt(x) and pow(2, x) into exp2(x), 1 ulp off the C library's pow on ~0.1% of inputs.
    opaque: bool = False


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


# ===================================================================== the table
OPS: dict[str, Op] = {}
# Functions callable by name in the input language: name -> {arity: builder}.
FUNCTIONS: dict[str, dict[int, Callable[..., Any]]] = {}
_DOMAIN = {1: ((0.4,), (-1.1,)), 2: ((0.4, -1.1), (-0.6, 0.8))}


def define(name: str, arity: int, py: Any, np_fn: Any, partials: tuple = (), *, llvm: Inline | Call | None = None,
           kind: str = "call", symbol: str | None = None, prec: int = PREC_ATOM, assoc: str = "left",
           commutative: bool = False, code: str | None = None,
           domain: tuple[tuple[float, ...], ...] | None = None, doc: str = "", arms: tuple[int, ...] = ()) -> Op:
    """Add an operation to the table: everything symad needs to parse, simplify, differentiate,
    evaluate, compile, print and draw it (defined before the other modules are imported).

    ``domain`` lists points inside its domain, away from kinks and poles, where the tests
    check the partials against finite differences (default: points inside most domains).
    """
    if len(partials) != arity:
        raise TypeError(f"operation {name}: one partial per argument ({arity}), got {len(partials)}")
    if arity and llvm is None:
        raise TypeError(f"operation {name} has no LLVM lowering (llvm=Inline(...) or Call(...))")
    op = Op(name, arity, py, np_fn, partials, kind, symbol or name, prec, assoc, commutative, code,
            llvm, domain or _DOMAIN.get(arity, ()), doc, arms)
    OPS[name] = op
    if kind == "call":
        FUNCTIONS.setdefault(name, {})[arity] = _call(name)
    return op


# ===================================================================== leaves
define("const", 0, None, None, kind="leaf", doc="a number (also pi, e, inf, nan)")
define("var", 0, None, None, kind="leaf", doc="a variable")

# ===================================================================== arithmetic
define("add", 2, lambda a, b: a + b, _np("add"), (1.0, 1.0), llvm=Inline("{r} = fadd double {0}, {1}"),
       kind="infix", symbol="+", prec=PREC_SUM, commutative=True, code="{0} + {1}")
define("sub", 2, lambda a, b: a - b, _np("subtract"), (1.0, -1.0), llvm=Inline("{r} = fsub double {0}, {1}"),
       kind="infix", symbol="-", prec=PREC_SUM, code="{0} - {1}")
define("mul", 2, lambda a, b: a * b, _np("multiply"), (lambda a, b, out: b, lambda a, b, out: a),
       llvm=Inline("{r} = fmul double {0}, {1}"),
       kind="infix", symbol="*", prec=PREC_PRODUCT, commutative=True, code="{0} * {1}")
define("div", 2, lambda a, b: a / b, _np("divide"), (lambda a, b, out: 1.0 / b, lambda a, b, out: -out / b),
       llvm=Inline("{r} = fdiv double {0}, {1}"),
       kind="infix", symbol="/", prec=PREC_PRODUCT, code="{0} / {1}", domain=((0.7, 1.3), (-2.0, 0.4)))
define("pow", 2, math.pow, sem.np_pow,
       (_pow_base_partial, lambda a, b, out: out * log(a)), llvm=Call("pow", opaque=True),
       kind="infix", symbol="^", prec=PREC_POWER, assoc="right", domain=((1.3, 0.7), (0.8, -2.2), (2.0, 3.0)))
define("neg", 1, lambda a: -a, _np("negative"), (-1.0,), llvm=Inline("{r} = fneg double {0}"),
       kind="prefix", symbol="-", prec=PREC_UNARY, code="-{0}")

# ===================================================================== elementary functions
define("sin", 1, math.sin, _np("sin"), (lambda a, out: cos(a),), llvm=Call("llvm.sin.f64"))
define("cos", 1, math.cos, _np("cos"), (lambda a, out: -sin(a),), llvm=Call("llvm.cos.f64"))
define("tan", 1, math.tan, _np("tan", math.tan), (lambda a, out: 1.0 + out * out,), llvm=Call("tan"))
# asin', acos' on (1 - x)(1 + x), exact near ±1 where 1 - x² cancels; atan' without 1 + x² overflowing
define("asin", 1, math.asin, _np("arcsin", math.asin), (lambda a, out: 1.0 / sqrt((1.0 - a) * (1.0 + a)),),
       llvm=Call("asin"), domain=((0.3,), (-0.6,)))
define("acos", 1, math.acos, _np("arccos", math.acos), (lambda a, out: -1.0 / sqrt((1.0 - a) * (1.0 + a)),),
       llvm=Call("acos"), domain=((0.3,), (-0.6,)))
define("atan", 1, math.atan, _np("arctan", math.atan), (lambda a, out: _reciprocal_square(hypot(a, 1.0)),),
       llvm=Call("atan"))
define("sinh", 1, math.sinh, _np("sinh", math.sinh), (lambda a, out: cosh(a),), llvm=Call("sinh"))
define("cosh", 1, math.cosh, _np("cosh", math.cosh), (lambda a, out: sinh(a),), llvm=Call("cosh"))
define("tanh", 1, math.tanh, sem.each_libm(math.tanh), (lambda a, out: _reciprocal_square(cosh(a)),), llvm=Call("tanh"))
define("exp", 1, math.exp, _np("exp", math.exp), (lambda a, out: out,), llvm=Call("llvm.exp.f64"))
define("log", 1, math.log, _np("log", math.log), (lambda a, out: 1.0 / a,), llvm=Call("llvm.log.f64"),
       domain=((0.7,), (2.5,)), doc="natural log; log(x, b) is log base b")
define("sqrt", 1, math.sqrt, _np("sqrt"), (lambda a, out: 0.5 / out,), llvm=Call("llvm.sqrt.f64"),
       domain=((0.7,), (2.5,)))
define("abs", 1, abs, _np("abs"), (lambda a, out: sign(a),), llvm=Call("llvm.fabs.f64"), domain=((0.7,), (-1.3,)))
define("atan2", 2, math.atan2, _np("arctan2", math.atan2), (_atan2_partial(0), _atan2_partial(1)), llvm=Call("atan2"),
       domain=((0.5, -1.2), (-0.7, 0.4), (1.1, 0.9)))
define("min", 2, sem.py_min, sem.np_min, (lambda a, b, out: _tie(a, b, b - a), lambda a, b, out: _tie(a, b, a - b)),
       llvm=Inline(_MIN_MAX.replace("BITS", "or").replace("FIRST", "g").replace("SECOND", "l")),
       commutative=True, domain=((0.3, 0.9), (1.2, -0.4)))
define("max", 2, sem.py_max, sem.np_max, (lambda a, b, out: _tie(a, b, a - b), lambda a, b, out: _tie(a, b, b - a)),
       llvm=Inline(_MIN_MAX.replace("BITS", "and").replace("FIRST", "l").replace("SECOND", "g")),
       commutative=True, domain=((0.3, 0.9), (1.2, -0.4)))
define("sign", 1, sem.py_sign, _np("sign"), (0.0,),
       llvm=Inline(_THREE_WAY.replace("ZERO", "0.0").replace("NEGATIVE", "-1.0")),
       domain=((0.7,), (-1.3,)), doc="-1, 0 or 1; the derivative of abs")
define("step", 1, sem.py_step, sem.np_step, (0.0,),
       llvm=Inline(_THREE_WAY.replace("ZERO", "0.5").replace("NEGATIVE", "0.0")),
       domain=((0.7,), (-1.3,)), doc="Heaviside step with step(0) = 0.5; the derivative of max")

# ===================================================================== numerically stable functions
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
       domain=((0.4,), (-0.6,)), doc="log(1 + x), accurate for small x")
define("expm1", 1, math.expm1, _np("expm1", math.expm1), (lambda a, out: exp(a),), llvm=Call("expm1"),
       doc="exp(x) - 1, accurate for small x")
define("sigmoid", 1, sem.py_sigmoid, sem.np_sigmoid, (lambda a, out: out * sigmoid(-a),),
       llvm=Inline("{t}p = fcmp oge double {0}, 0.0\n" + _e_abs("{0}") + "{t}s = fmul double {t}Ee, {t}Eq\n"
                   "{r} = select i1 {t}p, double {t}Eq, double {t}s", calls=(_FABS, _EXP)),
       doc="the logistic function 1/(1 + exp(-x)), without overflow")
define("softplus", 1, sem.py_softplus, sem.np_softplus, (lambda a, out: sigmoid(a),),
       llvm=Inline("{t}p = fcmp ogt double {0}, 0.0\n{t}m = select i1 {t}p, double {0}, double 0.0\n"
                   + _e_abs("{0}") + _UNIT_LOG1P + "{r} = fadd double {t}m, {t}El", calls=(_FABS, _EXP, _LOG)),
       doc="log(1 + exp(x)), stable: max(x, 0) + log1p(exp(-|x|)); its derivative is sigmoid")
define("log_sigmoid", 1, sem.py_log_sigmoid, sem.np_log_sigmoid, (lambda a, out: sigmoid(-a),),
       llvm=Inline("{t}p = fcmp olt double {0}, 0.0\n{t}m = select i1 {t}p, double {0}, double 0.0\n"
                   + _e_abs("{0}") + _UNIT_LOG1P + "{r} = fsub double {t}m, {t}El", calls=(_FABS, _EXP, _LOG)),
       doc="log(sigmoid(x)) = -softplus(-x)")
define("logaddexp", 2, sem.py_logaddexp, sem.np_logaddexp,
       (_logaddexp_partial(0), _logaddexp_partial(1)),
       llvm=Inline("{t}q = fcmp oeq double {0}, {1}\n{t}d = fsub double {0}, {1}\n"
                   "{t}g = fcmp ogt double {t}d, 0.0\n" + _e_abs("{t}d") + _UNIT_LOG1P
                   + "{t}m = select i1 {t}g, double {0}, double {1}\n"
                   "{t}s = fadd double {t}m, {t}El\n{t}w = fadd double {0}, 0x3FE62E42FEFA39EF\n"
                   "{r} = select i1 {t}q, double {t}w, double {t}s", calls=(_FABS, _EXP, _LOG)),
       commutative=True, domain=((0.4, -1.1), (-0.6, 0.8), (3.0, 3.5)),
       doc="log(exp(a) + exp(b)) without overflow; logsumexp(a, b, ...) folds it")
define("erf", 1, math.erf, sem.each_libm(math.erf), (lambda a, out: TWO_OVER_SQRT_PI * _gauss(a),),
       llvm=Call("erf"), doc="the error function")
define("erfc", 1, math.erfc, sem.each_libm(math.erfc), (lambda a, out: -TWO_OVER_SQRT_PI * _gauss(a),),
       llvm=Call("erfc"), doc="1 - erf(x), accurate where erf(x) is near 1")
define("hypot", 2, sem.py_hypot, _np("hypot"),
       (lambda a, b, out: a / _hypot_divisor(out), lambda a, b, out: b / _hypot_divisor(out)),
       llvm=Call("hypot"), commutative=True, doc="sqrt(a^2 + b^2) without overflow or underflow")
define("sinc", 1, sem.py_sinc, sem.np_sinc, (_sinc_partial,),
       llvm=Inline("{t}z = fcmp oeq double {0}, 0.0\n{t}s = call double @llvm.sin.f64(double {0})\n"
                   "{t}d = select i1 {t}z, double 1.0, double {0}\n{t}q = fdiv double {t}s, {t}d\n"
                   "{r} = select i1 {t}z, double 1.0, double {t}q", calls=(("llvm.sin.f64", 1),)),
       domain=((0.05,), (-1.3,)), doc="sin(x)/x, 1 at 0 (unnormalised; NumPy's sinc is sin(pi x)/(pi x))")
define("cbrt", 1, math.cbrt, _np("cbrt", math.cbrt), (lambda a, out: 1.0 / (3.0 * (out * out)),), llvm=Call("cbrt"),
       doc="the real cube root (negative for negative x)")
define("asinh", 1, math.asinh, _np("arcsinh", math.asinh), (lambda a, out: 1.0 / hypot(a, 1.0),), llvm=Call("asinh"))
define("acosh", 1, math.acosh, _np("arccosh", math.acosh), (lambda a, out: 1.0 / (sqrt(a - 1.0) * sqrt(a + 1.0)),),
       llvm=Call("acosh"), domain=((1.4,), (2.5,)))
define("atanh", 1, math.atanh, _np("arctanh", math.atanh), (lambda a, out: 1.0 / ((1.0 - a) * (1.0 + a)),),
       llvm=Call("atanh"), domain=((0.4,), (-0.6,)))
define("floor", 1, sem.py_floor, _np("floor"), (0.0,), llvm=Call("llvm.floor.f64"),
       domain=((0.4,), (-1.3,)), doc="the largest integer ≤ x; derivative 0")
define("ceil", 1, sem.py_ceil, _np("ceil"), (0.0,), llvm=Call("llvm.ceil.f64"),
       domain=((0.4,), (-1.3,)), doc="the smallest integer ≥ x; derivative 0")
define("round", 1, sem.py_round, sem.np_round, (0.0,), llvm=Call("llvm.round.f64"),
       domain=((0.4,), (-1.3,)), doc="the nearest integer, halfway cases away from zero (C's round); derivative 0")

# ===================================================================== comparisons, logic, selection
# A condition is a number: true where it is not 0 (nan is true, as in C); comparisons and the
# logical operators give 1 or 0, and their derivatives are 0.
_BOTH_TRUE = "{t}0 = fcmp une double {0}, 0.0\n{t}1 = fcmp une double {1}, 0.0\n"
_AS_NUMBER = "{r} = uitofp i1 {t}c to double"
COMPARISONS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
for _symbol, _name in COMPARISONS.items():
    _fcmp = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "une"}[_name]
    define(_name, 2, sem.py_comparison(_symbol), sem.np_comparison(_name), (0.0, 0.0),
           llvm=Inline(f"{{t}}c = fcmp {_fcmp} double {{0}}, {{1}}\n" + _AS_NUMBER),
           kind="infix", symbol=_symbol, prec=PREC_CMP, assoc="none", commutative=_name in ("eq", "ne"),
           doc=f"1 where a {_symbol} b, else 0")
define("and", 2, sem.py_and, sem.np_and, (0.0, 0.0),
       llvm=Inline(_BOTH_TRUE + "{t}c = and i1 {t}0, {t}1\n" + _AS_NUMBER),
       kind="infix", symbol="and", prec=PREC_AND, commutative=True, doc="1 where both are true, else 0")
define("or", 2, sem.py_or, sem.np_or, (0.0, 0.0),
       llvm=Inline(_BOTH_TRUE + "{t}c = or i1 {t}0, {t}1\n" + _AS_NUMBER),
       kind="infix", symbol="or", prec=PREC_OR, commutative=True, doc="1 where either is true, else 0")
define("not", 1, sem.py_not, sem.np_not, (0.0,), llvm=Inline("{t}c = fcmp oeq double {0}, 0.0\n" + _AS_NUMBER),
       kind="prefix", symbol="not ", prec=PREC_NOT, doc="1 where the argument is 0, else 0")
define("where", 3, sem.py_where, sem.np_where,
       (0.0, lambda c, a, b, out: where(c, 1.0, 0.0), lambda c, a, b, out: where(c, 0.0, 1.0)),
       llvm=Inline("{t}c = fcmp une double {0}, 0.0\n{r} = select i1 {t}c, double {1}, double {2}"),
       domain=((1.0, 0.4, -1.1), (-2.0, -0.6, 0.8)), arms=(1, 2),
       doc="a where the condition is true (not 0), else b; also written if c then a else b")

# Derived forms, rewritten into primitives.
FUNCTIONS["pow"] = {2: _call("pow")}
FUNCTIONS["log"][2] = lambda x, base: log(x) / log(base)
FUNCTIONS["clip"] = {3: lambda x, lo, hi: _call("min")(fmax(x, lo), hi)}


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
    binary = _call(name)

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
