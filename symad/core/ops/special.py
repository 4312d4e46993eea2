"""The op table's special functions, for statistical models: ``lgamma``, ``digamma``,
``polygamma(n, x)``, ``gamma``, ``betaln`` (and its partial ``digamma_diff``), ``ndtr``, ``log_ndtr``,
``logit``, ``xlogy``, ``xlog1py`` (``beta`` is ``exp(betaln)``).

Each is written once as a kernel of straight-line steps (:mod:`.straight`): the same steps run
on floats (``py``), on NumPy arrays (``np``) and as the op's LLVM lowering, so every backend
and both exports give the same bits; no backend calls the platform's own ``lgamma`` (CPython's
``math.lgamma`` is its own code, other bits).  The kernels have no branches: each evaluates
every region of its function and selects, as the lowering's ``select`` does.

Accuracy (``docs/reference/numerics.md``): polynomials in a variable computed exactly carry
each function through its zeros (``lgamma`` at 1 and 2 as ``(x−1)(x−2)·Q(x)``, ``digamma`` at
its positive root x0 as ``(x − x0)·Q(x)``, x0 in two doubles); recurrences add terms of one
sign only; Stirling's series beyond 10; reflection for x < 0 (there only to a few ulp of the
largest term near the negative zeros).  Coefficients: :mod:`.special_fit`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from symad.core.ops import special_coefficients as fitted
from symad.core.ops.straight import inline_template, on_arrays, on_floats
from symad.core.ops.table import FUNCTIONS, OPS, Inline, Sympy, define, exp, fabs, fmin, log, op_call, where

POLYGAMMA_MAX = 10  # the highest order n of polygamma(n, x): its derivative, order 11, is nan
_PI = math.pi
_LOG_PI = math.log(math.pi)
_HALF_LOG_2PI = 0.9189385332046728  # log(2π)/2
_STIRLING_CONSTANT = 0.4189385332046727  # log(2π)/2 − 1/2, rounded once
_SQRT_2PI = 2.5066282746310002
_INV_SQRT_2PI = 0.3989422804014327
_TWO_OVER_SQRT_PI = 1.1283791670955126
_INV_SQRT2_HI = 0.7071067811865476  # 1/√2 = HI + LO
_INV_SQRT2_LO = -4.833646656726457e-17
_SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's splitter
_BIG = 10.0  # Stirling's series from here on
# Reflection (x ↦ 1 − x) below this only: above, the recurrences serve tiny negative x as they
# are, where sin(πx) would lose digits to subnormal rounding
_TINY = -(2.0 ** -30)


_B = [Fraction(1)]


def _bernoulli(n: int) -> Fraction:
    """B_n exactly (B_1 = −1/2), from Σ_{k<m+1} C(m+1, k) B_k = 0 (the list grows as needed)."""
    for m in range(len(_B), n + 1):
        _B.append(-sum(math.comb(m + 1, k) * _B[k] for k in range(m) if k == 1 or k % 2 == 0) / (m + 1))
    return _B[n]


# lgamma(x) ~ (x − ½)log x − x + log(2π)/2 + Σ B_2k/(2k(2k−1)) x^(1−2k); ψ(x) ~ log x − 1/(2x) − Σ B_2k/(2k) x^−2k
_LGAMMA_SERIES = tuple(float(_bernoulli(2 * k) / (2 * k * (2 * k - 1))) for k in range(1, 9))
_DIGAMMA_SERIES = tuple(float(_bernoulli(2 * k) / (2 * k)) for k in range(1, 10))


def _horner(t: Any, coefficients: tuple[float, ...]) -> Any:
    p = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        p = p * t + c
    return p


def _horner4(t: Any, coefficients: tuple[float, ...]) -> Any:
    """The polynomial as (A + t·B) + t²·(C + t·D) with A, B, C, D polynomials in t⁴ (the
    coefficients k mod 4): four chains of a quarter of the length, which the processor runs side
    by side (a long polynomial's Horner chain is its latency)."""
    t2 = t * t
    t4 = t2 * t2
    a, b, c, d = (_horner(t4, coefficients[k::4]) for k in range(4))
    return (a + t * b) + t2 * (c + t * d)


# ===================================================================== kernels
def _reflect(m: Any, x: Any) -> tuple[Any, Any]:
    """sin(πx) and cos(πx) of a finite x: x = n + r with n whole and |r| ≤ ½ (exact), the
    polynomials of r, and the sign of n's parity."""
    n = m.floor(x + 0.5)
    big = m.ge(m.fabs(x), 4503599627370496.0)  # 2^52: x is whole (and x + 0.5 may round up)
    n = m.where(big, x, n)
    r = m.where(big, 0.0, x - n)
    half = n * 0.5
    odd = m.ne(m.floor(half), half)
    s = r * _horner(r * r, fitted.SINPI)
    # cos(πr) near its zero |r| = ½ as sin(π(½ − |r|)), ½ − |r| exact: relative accuracy there
    h = 0.5 - m.fabs(r)
    c = m.where(m.gt(h, 0.25), _horner(r * r, fitted.COSPI), h * _horner(h * h, fitted.SINPI))
    return m.where(odd, -s, s), m.where(odd, -c, c)


def _steps_down(m: Any, w: Any) -> tuple[Any, Any]:
    """How many steps of 1 take w in [2.5, 10) down into [1.5, 2.5) (0 elsewhere, and for nan), and
    the argument there.  Each w − k is exact; every step's ``k <= n`` is known at once, so the
    recurrences' steps (at most 8) are no chain of comparisons."""
    mid = m.both(m.ge(w, 2.5), m.lt(w, _BIG))
    n = m.where(mid, m.floor(w - 1.5), 0.0)
    return n, w - n


def _log_gamma_positive(m: Any, w: Any) -> Any:
    """lgamma(w), w > −2^−30.  Regions: w < ¾: lgamma(w + 1) − log|w|; [¾, 2.5): the core polynomial;
    [2.5, 10): down to [1.5, 2.5) by lgamma(y + 1) = lgamma(y) + log y (terms of one sign);
    from 10: Stirling.  One log serves every region."""
    small, big = m.lt(w, 0.75), m.ge(w, _BIG)  # (w may be a tiny negative number)
    n, y = _steps_down(m, w)
    p = 1.0
    for k in range(1, 9):  # p = (w − 1)(w − 2)…(w − n), in that order
        p = m.where(m.le(float(k), n), p * (w - float(k)), p)
    y = m.where(small, w + 1.0, y)
    core = ((y - 1.0) * (y - 2.0)) * _horner4(y - 1.625, fitted.LGAMMA_CORE)
    logged = m.log(m.where(m.either(small, big), m.fabs(w), p))
    z = m.div(1.0, m.where(big, w, 1.0))
    stirling = (w - 0.5) * (logged - 1.0) + (_STIRLING_CONSTANT + z * _horner(z * z, _LGAMMA_SERIES))
    return m.where(big, stirling, m.where(small, core - logged, core + logged))


def lgamma(m: Any, x: Any) -> Any:
    """log|Γ(x)|: inf at 0, the negative integers and ±inf."""
    neg = m.lt(x, _TINY)
    positive = _log_gamma_positive(m, m.where(neg, -x, x))
    s, _ = _reflect(m, x)
    pole = m.either(m.eq(s, 0.0), m.eq(x, -math.inf))
    # Γ(x)·(−x)Γ(−x) = π/sin(πx): −x is exact where 1 − x would round (600 ulp lost at −128)
    reflected = (_LOG_PI - m.log(m.where(neg, m.fabs(x * s), 1.0))) - positive
    return m.where(neg, m.where(pole, math.inf, reflected), positive)


def _digamma_positive(m: Any, w: Any) -> Any:
    """ψ(w), w > −2^−30: w < 1: ψ(w + 1) − 1/w; [1, 2.5): (w − x0)·Q(w); [2.5, 10): down to [1.5, 2.5)
    adding 1/y (one fraction, one division); from 10: the asymptotic series."""
    small, big = m.lt(w, 1.0), m.ge(w, _BIG)
    n, y = _steps_down(m, w)
    num, den = 0.0, 1.0
    for k in range(1, 9):  # num/den = Σ 1/(w − k), k = 1…n, as one fraction
        go, yk = m.le(float(k), n), w - float(k)
        num = m.where(go, num * yk + den, num)
        den = m.where(go, den * yk, den)
    y = m.where(small, w + 1.0, y)
    core = ((y - fitted.DIGAMMA_ROOT_HI) - fitted.DIGAMMA_ROOT_LO) * _horner4(y - 1.75, fitted.DIGAMMA_CORE)
    ends = m.either(small, big)
    q = m.div(m.where(ends, 1.0, num), m.where(ends, w, den))
    z2 = q * q
    series = (m.log(m.where(big, w, 1.0)) - 0.5 * q) - z2 * _horner(z2, _DIGAMMA_SERIES)
    return m.where(big, series, m.where(small, core - q, core + q))


def digamma(m: Any, x: Any) -> Any:
    """ψ(x) = Γ'(x)/Γ(x): ∓inf at ±0, nan at the negative integers and −inf."""
    neg = m.lt(x, _TINY)
    positive = _digamma_positive(m, m.where(neg, -x, x))
    s, c = _reflect(m, x)
    pole = m.either(m.eq(s, 0.0), m.eq(x, -math.inf))
    # ψ(1−x) − ψ(x) = π cot(πx), ψ(1−x) = ψ(−x) − 1/x (−x exact)
    reflected = (positive - m.div(1.0, x)) - m.div(_PI * c, m.where(pole, 1.0, s))
    return m.where(neg, m.where(pole, math.nan, reflected), positive)


_ZETA_FROM = 12.0  # ζ(s, z) by Euler–Maclaurin from z = 12 on: below 2^-58 within 30 terms for s ≤ 11
# B_2j/(2j)!, j = 1..30: the tail's coefficients before the rising factorials (s)_(2j−1), rounded
# from the exact fractions (:func:`zeta_tail_exact`, checked by the tests): B_60 exactly takes
# milliseconds, which every process tracing the lowerings would pay.
_ZETA_TAIL = tuple(float.fromhex(h) for h in (
    '0x1.5555555555555p-4', '-0x1.6c16c16c16c17p-10', '0x1.1566abc011567p-15',
    '-0x1.bbd779334ef0bp-21', '0x1.66a8f2bf70ebep-26', '-0x1.22805d644267fp-31',
    '0x1.d6db2c4e09162p-37', '-0x1.7da4e1f79955cp-42', '0x1.355871d652e9ep-47',
    '-0x1.f57d968caacf1p-53', '0x1.967e1f09c376fp-58', '-0x1.497d9033a2b5cp-63',
    '0x1.0b132d7c6ad06p-68', '-0x1.b0f72d59f1c16p-74', '0x1.5ef2da4cca26dp-79',
    '-0x1.1c77df96de38bp-84', '0x1.cd299de521b62p-90', '-0x1.75cde656574a7p-95',
    '0x1.2efe8db3b4adfp-100', '-0x1.eb322904761ffp-106', '0x1.8e25ff9328464p-111',
    '-0x1.42ba1a349b5d3p-116', '0x1.0597b61cb30d4p-121', '-0x1.a813f6eaa7073p-127',
    '0x1.57bea2950f124p-132', '-0x1.16a101c5fde97p-137', '0x1.c3b23b05e39f9p-143',
    '-0x1.6e2193ae496d5p-148', '0x1.28c65557ea2a6p-153', '-0x1.e11cf33c632a8p-159',
))


def zeta_tail_exact() -> tuple[float, ...]:
    """:data:`_ZETA_TAIL` computed: B_2j/(2j)! from the exact Bernoulli numbers, rounded once."""
    return tuple(float(_bernoulli(2 * j) / math.factorial(2 * j)) for j in range(1, 31))


def polygamma(m: Any, n: Any, x: Any) -> Any:
    """ψ⁽ⁿ⁾(x), n rounded to the nearest whole number (nan outside [0, POLYGAMMA_MAX]): digamma for
    n = 0, else (−1)^(n+1) n! ζ(n+1, x): the terms (x+k)^−s (s = n + 1), all positive, up to
    x + k ≥ 12, then Euler–Maclaurin's tail; for x < 0 only n = 0 and n = 1
    (ψ'(x) = π²/sin²(πx) − ψ'(−x) + 1/x²), nan for higher n."""
    k = m.floor(n + 0.5)
    valid = m.both(m.ge(k, 0.0), m.le(k, float(POLYGAMMA_MAX)))
    s = k + 1.0
    factorial = 1.0
    for j in range(2, POLYGAMMA_MAX + 1):  # k!, exact (to 22!)
        factorial = factorial * m.where(m.le(float(j), k), float(j), 1.0)
    half = k * 0.5
    scale = m.where(m.ne(m.floor(half), half), factorial, -factorial)
    neg = m.lt(x, _TINY)
    z = m.where(neg, -x, x)
    terms = []
    for _ in range(int(_ZETA_FROM)):
        go = m.lt(z, _ZETA_FROM)
        terms.append(m.where(go, m.pow(z, -s), 0.0))
        z = m.where(go, z + 1.0, z)
    u = m.div(1.0, z)
    u2 = u * u
    rising, coefficients = s, []
    for j, c in enumerate(_ZETA_TAIL, 1):  # c·(s)_(2j−1), (s)_(2j+1) = (s)_(2j−1)·(s + 2j − 1)(s + 2j)
        coefficients.append(c * rising)
        rising = rising * ((s + float(2 * j - 1)) * (s + float(2 * j)))
    tail = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        tail = tail * u2 + c
    lead = m.div(1.0, m.where(m.gt(s, 1.0), s - 1.0, 1.0))
    zeta = m.pow(z, 1.0 - s) * ((lead + 0.5 * u) + u2 * tail)
    for t in reversed(terms):  # the smallest first
        zeta = zeta + t
    positive = scale * zeta
    sin, _ = _reflect(m, x)
    pole = m.either(m.eq(sin, 0.0), m.eq(x, -math.inf))
    # ψ'(x) + ψ'(1−x) = π²/sin²(πx), ψ'(1−x) = ψ'(−x) − 1/x² (−x exact)
    trigamma = m.where(pole, math.nan, (m.div(_PI * _PI, sin * sin) - positive) + m.div(1.0, x * x))
    higher = m.where(neg, m.where(m.eq(k, 1.0), trigamma, math.nan), positive)
    return m.where(valid, m.where(m.eq(k, 0.0), digamma(m, x), higher), math.nan)


def gamma(m: Any, x: Any) -> Any:
    """Γ(x): ±inf at ±0, nan at the negative integers and −inf, inf beyond 171.6; for
    x < −171 it underflows to ±0 (the reflection's Γ(−x) overflows first)."""
    neg = m.lt(x, _TINY)
    w = m.where(neg, -x, x)
    big, small, one = m.ge(w, _BIG), m.lt(w, 2.0), m.ge(w, 1.0)
    y, p = w, 1.0
    for _ in range(7):  # [3, 10) down to [2, 3): Γ(y + 1) = y·Γ(y)
        go = m.both(m.ge(y, 3.0), m.lt(y, _BIG))
        y = m.where(go, y - 1.0, y)
        p = m.where(go, p * y, p)
    y = m.where(small, m.where(one, w + 1.0, w + 2.0), y)  # below 2: up, dividing by w(w + 1)
    core = _horner(y - 2.5, fitted.GAMMA_CORE)
    below = m.where(one, w, w * (w + 1.0))
    # Stirling: sqrt(2π)·w^(w/2 − 1/4)·(w^(w/2 − 1/4)·e^−w)·exp(series), no step overflowing first
    wb = m.where(big, w, 1.0)
    z = m.div(1.0, wb)
    h = m.pow(wb, wb * 0.5 - 0.25)
    stirling = ((_SQRT_2PI * h) * (h * m.exp(-wb))) * m.exp(z * _horner(z * z, _LGAMMA_SERIES))
    stirling = m.where(m.gt(w, 171.7), math.inf, stirling)
    positive = m.where(big, stirling, m.where(small, m.div(core, below), core * p))
    s, _ = _reflect(m, x)
    pole = m.either(m.eq(s, 0.0), m.eq(x, -math.inf))
    reflected = m.div(-_PI, (x * s) * positive)  # Γ(x)·(−x)Γ(−x) = π/sin(πx), −x exact
    return m.where(neg, m.where(pole, math.nan, reflected), positive)


def _erfc_at(m: Any, x: Any) -> Any:
    """Φ(x) = erfc(−x/√2)/2 with −x/√2 = zh + zl to twice the precision (Dekker's product, x
    clamped to ±40, beyond which Φ is 0 or 1): erfc(zh + zl) = erfc(zh) − 2/√π·e^(−zh²)·zl to
    first order.  A rounded −x/√2 would lose 2z² ulp (1,400 at x = −38)."""
    c = m.where(m.lt(x, -40.0), -40.0, m.where(m.gt(x, 40.0), 40.0, x))
    p = c * _SPLIT
    ch = p - (p - c)
    cl = c - ch
    bp = _INV_SQRT2_HI * _SPLIT
    bh = bp - (bp - _INV_SQRT2_HI)
    bl = _INV_SQRT2_HI - bh
    prod = c * _INV_SQRT2_HI
    err = (((ch * bh - prod) + ch * bl) + cl * bh) + cl * bl
    zh = -prod
    zl = -(err + c * _INV_SQRT2_LO)
    return 0.5 * (m.erfc(zh) - (_TWO_OVER_SQRT_PI * m.exp(-(zh * zh))) * zl)


def ndtr(m: Any, x: Any) -> Any:
    """Φ(x), the standard normal distribution function."""
    return _erfc_at(m, x)


def _mills_reciprocal(terms: int) -> tuple[float, ...]:
    """R(u) = 1/S(u), S = 1 − u + 3u² − 15u³ + … (Φ(x) ~ φ(x)/(−x)·S(1/x²)): 1, 1, −2, 10, −74, …"""
    s = [(-1) ** k * math.prod(range(1, 2 * k, 2)) for k in range(terms)]
    r = [1]
    for k in range(1, terms):
        r.append(-sum(s[j] * r[k - j] for j in range(1, k + 1)))
    return tuple(map(float, r))


_MILLS = _mills_reciprocal(12)  # log Φ(x) = −x²/2 − log(−x·R(1/x²)) − log(2π)/2 below −20


def log_ndtr(m: Any, x: Any) -> Any:
    """log Φ(x): log of Φ(−|x|) (x ≤ 0) or log1p(−Φ(−|x|)) (x > 0, Goldberg's formula); below −20
    −x²/2 − log(−x·R) − log(2π)/2 with R = 1/S, S = 1 − 1/x² + 3/x⁴ − … (Φ's asymptotic series).  One log."""
    q = _erfc_at(m, -m.fabs(x))
    tail, pos = m.lt(x, -20.0), m.gt(x, 0.0)
    x2 = x * x
    u = m.div(1.0, m.where(tail, x2, 1.0))
    series = _horner(u, _MILLS)
    uq = 1.0 - q
    logged = m.log(m.where(tail, -x * series, m.where(pos, uq, q)))
    exact = m.eq(uq, 1.0)
    log1p = m.where(exact, 0.0 - q, logged * m.div(0.0 - q, m.where(exact, 1.0, uq - 1.0)))
    asymptotic = (-0.5 * x2 - logged) - _HALF_LOG_2PI
    return m.where(tail, asymptotic, m.where(pos, log1p, logged))


def logit(m: Any, p: Any) -> Any:
    """log(p/(1 − p)): −inf at 0, inf at 1, nan outside [0, 1].  In [¼, ¾] as log1p(d) with
    d = (2p − 1)/(1 − p) exact to a rounding (Goldberg's formula), elsewhere log(p/(1 − p)): one log."""
    mid = m.both(m.ge(p, 0.25), m.le(p, 0.75))
    q = 1.0 - p
    d = m.div(2.0 * p - 1.0, q)
    u = 1.0 + d
    logged = m.log(m.where(mid, u, m.div(p, q)))
    exact = m.eq(u, 1.0)
    log1p = m.where(exact, d, logged * m.div(d, m.where(exact, 1.0, u - 1.0)))
    return m.where(mid, log1p, logged)


def _log1p(m: Any, x: Any) -> Any:
    """log1p as :func:`symad.core.semantics.py_log1p` computes it (the same bits)."""
    u = 1.0 + x
    one = m.eq(u, 1.0)
    goldberg = m.log(u) * m.div(x, m.where(one, 1.0, u - 1.0))
    return m.where(one, x, m.where(m.eq(u, math.inf), u, goldberg))


def xlogy(m: Any, x: Any, y: Any) -> Any:
    """x·log(y), 0 where x = 0 (whatever y)."""
    return m.where(m.eq(x, 0.0), 0.0, x * m.log(y))


def xlog1py(m: Any, x: Any, y: Any) -> Any:
    """x·log1p(y), 0 where x = 0 (whatever y)."""
    return m.where(m.eq(x, 0.0), 0.0, x * _log1p(m, y))


def _stirling_correction(m: Any, w: Any) -> Any:
    """lgamma(w) − ((w − ½)log w − w + log(2π)/2) for w ≥ 10: Stirling's series beyond its leading terms."""
    z = m.div(1.0, w)
    return z * _horner(z * z, _LGAMMA_SERIES)


def betaln(m: Any, a: Any, b: Any) -> Any:
    """log|B(a, b)| = lgamma(a) + lgamma(b) − lgamma(a + b).  For a, b > 0 with x = min, y = max:
    y < 10: the three lgammas (terms of moderate size); y ≥ 10 > x: lgamma(x) plus
    lgamma(y) − lgamma(x + y) = −(y − ½)·log1p(x/y) − x·log(x + y) + x + (Stirling's corrections'
    difference), where the lgammas would cancel (y log y against x log y); x ≥ 10:
    log(2π)/2 − ½log y + (x − ½)·log(x/(x + y)) − y·log1p(x/y) + corrections, terms of one sign
    (TOMS 708's form).  Elsewhere (an argument ≤ 0 or nan) the three lgammas."""
    positive = m.both(m.gt(a, 0.0), m.gt(b, 0.0))
    x = m.where(m.lt(a, b), a, b)
    y = m.where(m.lt(a, b), b, a)
    s = x + y
    three = (lgamma(m, x) + lgamma(m, y)) - lgamma(m, s)
    big_y, big_x = m.ge(y, _BIG), m.ge(x, _BIG)
    yb = m.where(big_y, y, _BIG)  # a safe argument where the region is not taken
    xb = m.where(big_x, x, _BIG)
    sb = m.where(big_y, s, _BIG)
    h = m.div(x, yb)
    l1p = _log1p(m, h)
    corr_y, corr_s = _stirling_correction(m, yb), _stirling_correction(m, sb)
    # one log serves both regions: log(x + y) (x < 10) or log(x/(x + y)) = log(h/(1 + h)) (x ≥ 10)
    logged = m.log(m.where(big_x, m.div(h, 1.0 + h), sb))
    one_large = (lgamma(m, x) - ((yb - 0.5) * l1p + x * logged)) + (x + (corr_y - corr_s))
    corrections = (_stirling_correction(m, xb) + corr_y) - corr_s
    both_large = ((_HALF_LOG_2PI - 0.5 * m.log(yb)) + corrections) + ((xb - 0.5) * logged - yb * l1p)
    value = m.where(big_x, both_large, m.where(big_y, one_large, three))
    value = m.where(m.eq(y, math.inf), -math.inf, value)
    return m.where(positive, value, three)


def digamma_diff(m: Any, a: Any, b: Any) -> Any:
    """ψ(a) − ψ(a + b), the partial of betaln(a, b) in a, without the difference's cancellation
    (b small against a, or both large).  For a, b > 0: a moved up to w ≥ 10 by
    ψ(y) − ψ(y + b) = ψ(y + 1) − ψ(y + 1 + b) − b/(y(y + b)) (terms of one sign), then
    −log1p(b/w) − b/(2w(w + b)) − (S(w) − S(w + b)) with S the asymptotic series, its difference
    as (t₁ − t₂)·(divided difference of S's polynomial in t = 1/w²).  Elsewhere ψ(a) − ψ(a + b)."""
    positive = m.both(m.gt(a, 0.0), m.gt(b, 0.0))
    plain = digamma(m, a) - digamma(m, a + b)
    y = m.where(positive, a, _BIG)
    terms = 0.0
    for step in range(int(_BIG)):
        go = m.lt(y, _BIG)
        p = y * (y + b)
        term = m.div(b, p)  # in one rounding, unless p leaves the normal range: then b/(y + b)/y
        if step == 0:  # (from y ≥ 1 on, p ≥ 1: only overflow)
            term = m.where(m.ge(p, 2.2250738585072014e-308), term, m.div(m.div(b, y + b), y))
        term = m.where(m.lt(p, 1e300), term, m.div(m.div(b, y + b), y))
        terms = terms + m.where(go, term, 0.0)
        y = m.where(go, y + 1.0, y)
    bb = m.where(positive, b, 1.0)
    w2 = y + bb
    d = m.div(m.div(bb, w2), y)  # 1/w − 1/(w + b)
    z1, z2 = m.div(1.0, y), m.div(1.0, w2)
    t1, t2 = z1 * z1, z2 * z2
    p1 = p2 = _DIGAMMA_SERIES[-1]
    dd = 0.0
    for c in reversed(_DIGAMMA_SERIES[:-1]):
        dd = dd * t1 + p2
        p1, p2 = p1 * t1 + c, p2 * t2 + c
    # S(t) = t·P(t): S(t₁) − S(t₂) = (t₁ − t₂)·(t₁·D + P(t₂)), D the divided difference of P
    series = (d * (z1 + z2)) * (t1 * dd + p2)
    asymptotic = -((_log1p(m, m.div(bb, y)) + 0.5 * d) + series)
    value = m.where(m.eq(b, math.inf), -math.inf, asymptotic - terms)
    return m.where(positive, value, plain)


# ===================================================================== the table's entries
def _define(name: str, kernel: Any, arity: int, partials: tuple, **facts: Any) -> None:
    define(name, arity, on_floats(kernel), on_arrays(kernel), partials,
           llvm=Inline(trace=lambda: inline_template(kernel, arity)), **facts)


_digamma, _lgamma, _ndtr, _log_ndtr = map(op_call, ["digamma", "lgamma", "ndtr", "log_ndtr"])


def _polygamma(n: Any, x: Any) -> Any:
    """polygamma(n, x) of expressions (building a node) or numbers, n a number or an expression."""
    if type(x) is float and type(n) is float:
        return OPS["polygamma"].py(n, x)
    if hasattr(x, "graph"):
        g = x.graph
        order = n.id if hasattr(n, "graph") else g.const(float(n))
        return type(x)(g, g.make("polygamma", order, x.id))
    if hasattr(n, "apply"):
        return n.apply("polygamma", x)
    return OPS["polygamma"].np(n, x)


def _gauss_half(a: Any) -> Any:
    """exp(−a²/2) to full relative accuracy: |a| (to 40) = h + l with h of 26 bits, so h·h/2 is
    exact, and exp(−a²/2) = exp(−h·h/2)·exp(−l·(|a| + h)/2) (as erf's derivative does)."""
    c = fmin(fabs(a), 40.0)
    p = c * _SPLIT
    h = p - (p - c)
    return exp(-(h * h) * 0.5) * exp(-((c - h) * (c + h)) * 0.5)


def _log_ndtr_partial(a: Any, out: Any) -> Any:
    """φ(x)/Φ(x): below −20 the derivative of the value's own asymptotic form, −x − (1 − 2u·R'(u)/R)/x
    with u = 1/x² (no cancellation), else φ from the split exponent over Φ."""
    u = 1.0 / (a * a)
    series = _horner(u, _MILLS)
    d_series = _horner(u, tuple(k * c for k, c in enumerate(_MILLS))[1:]) * u  # u·R'(u)
    tail = -a - (1.0 - 2.0 * d_series / series) / a
    return where(op_call("lt")(a, -20.0), tail, _gauss_half(a) * _INV_SQRT_2PI / _ndtr(a))


_define("lgamma", lgamma, 1, (lambda a, out: _digamma(a),), domain=((0.4,), (2.5,), (-1.3,), (15.0,)),
        doc="log|Γ(x)|, the log of the gamma function's absolute value; inf at 0, −1, −2, …",
        latex=r"\ln\Gamma", sympy="loggamma")
_define("digamma", digamma, 1, (lambda a, out: _polygamma(1.0, a),), domain=((0.4,), (2.5,), (-1.3,), (15.0,)),
        doc="ψ(x) = lgamma'(x); polygamma(0, x)", latex=r"\psi",
        sympy=Sympy(build=lambda sp, a: sp.polygamma(0, a)))  # (SymPy writes digamma so)
_define("polygamma", polygamma, 2, (0.0, lambda n, a, out: _polygamma(n + 1.0, a)),
        domain=((1.0, 0.4), (1.0, -1.3), (2.0, 2.5), (3.0, 15.0), (0.0, 0.7)),
        doc=f"ψ⁽ⁿ⁾(x), the n-th derivative of digamma; n is rounded to a whole number from 0 to {POLYGAMMA_MAX} "
            "(else nan) and has derivative 0", latex=(r"\psi^{(", 0, r")}\left(", 1, r"\right)"), sympy="polygamma")
_define("gamma", gamma, 1, (lambda a, out: out * _digamma(a),), domain=((0.4,), (2.5,), (-1.3,), (15.0,)),
        doc="Γ(x); ±inf at ±0, nan at −1, −2, …", latex=r"\Gamma", sympy="gamma")
_define("ndtr", ndtr, 1, (lambda a, out: _gauss_half(a) * _INV_SQRT_2PI,), domain=((0.4,), (-1.3,), (-6.0,)),
        doc="Φ(x), the standard normal distribution function", latex=r"\Phi",
        sympy=Sympy(build=lambda sp, a: (1 + sp.erf(a / sp.sqrt(2))) / 2))
_define("log_ndtr", log_ndtr, 1, (_log_ndtr_partial,), domain=((0.4,), (-1.3,), (-25.0,), (3.0,)),
        doc="log Φ(x), accurate far into the lower tail", latex=r"\log\Phi",
        sympy=Sympy(build=lambda sp, a: sp.log((1 + sp.erf(a / sp.sqrt(2))) / 2)))
_define("logit", logit, 1, (lambda a, out: 1.0 / a + 1.0 / (1.0 - a),), domain=((0.4,), (0.1,), (0.9,)),
        doc="log(p/(1 − p)), the inverse of sigmoid; ∓inf at 0 and 1",
        sympy=Sympy(build=lambda sp, a: sp.log(a / (1 - a))))
_define("xlogy", xlogy, 2, (lambda a, b, out: log(b), lambda a, b, out: where(op_call("eq")(a, 0.0), 0.0, a / b)),
        domain=((0.4, 1.1), (-0.6, 0.8)), doc="x·log(y), 0 where x = 0",
        sympy=Sympy(build=lambda sp, a, b: a * sp.log(b)))
_define("xlog1py", xlog1py, 2,
        (lambda a, b, out: op_call("log1p")(b), lambda a, b, out: where(op_call("eq")(a, 0.0), 0.0, a / (1.0 + b))),
        domain=((0.4, 1.1), (-0.6, -0.3)), doc="x·log1p(y), 0 where x = 0",
        sympy=Sympy(build=lambda sp, a, b: a * sp.log(1 + b)))

_digamma_diff = op_call("digamma_diff")
_define("betaln", betaln, 2, (lambda a, b, out: _digamma_diff(a, b), lambda a, b, out: _digamma_diff(b, a)),
        domain=((0.4, 2.5), (3.0, 15.0), (12.0, 30.0), (0.7, 1e6)),
        doc="log|B(a, b)| = lgamma(a) + lgamma(b) − lgamma(a + b), without the cancellation where one "
            "argument is large", latex=r"\ln\mathrm{B}",
        sympy=Sympy(build=lambda sp, a, b: sp.loggamma(a) + sp.loggamma(b) - sp.loggamma(a + b)))
_define("digamma_diff", digamma_diff, 2,
        (lambda a, b, out: _polygamma(1.0, a) - _polygamma(1.0, a + b), lambda a, b, out: -_polygamma(1.0, a + b)),
        domain=((0.4, 2.5), (3.0, 15.0), (12.0, 0.3), (0.7, 1e6)),
        doc="ψ(a) − ψ(a + b), betaln's partial in a, without the difference's cancellation",
        sympy=Sympy(build=lambda sp, a, b: sp.polygamma(0, a) - sp.polygamma(0, a + b)))

FUNCTIONS["polygamma"] = {2: _polygamma}
FUNCTIONS["beta"] = {2: lambda a, b: exp(op_call("betaln")(a, b))}
