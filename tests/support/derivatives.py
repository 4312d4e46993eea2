"""Every op's derivatives against mpmath, over its whole domain: the sweep behind the
derivative table of ``docs/reference/numerics.md`` and ``tests/core/test_derivative_tails.py``.

For each op of the table: deterministic sample points (every binary exponent from the
subnormals to the largest double, ordinary numbers, the tails where an exp underflows,
the ends of a domain approached to the last bit, ±inf where the value is finite), symad's
partials there (Python code on a NumPy batch: the bits of every backend, which other
tests check are equal), and the exact partials, written here from calculus in mpmath at
256 bits.  The error of a partial is counted in units in the last place of the exact
value (an ulp of a subnormal is 2^-1074); where the exact partial is not a finite double
(it overflows, or is undefined) the point is not compared.  At a point where the op is
not differentiable (a kink, a jump, a tie of min/max, hypot's origin) symad's partial is
a documented choice: :data:`CHOICES` says which, and the sweep checks it is given there.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import mpmath
import numpy as np

import symad
from symad.core.ops import OPS

mp = mpmath.mp
mpf = mpmath.mpf
inf = math.inf
PREC = 256
TWO = mpf(2)


# ============================================================ exact partials, from calculus
def _sigmoid(x):
    return 1 / (1 + mpmath.exp(-x))


def _flat(*_):
    return 0


def _step(d):
    return mpf(1) if d > 0 else mpf(0)


def _div_b(a, b):
    return -a / (b * b)


def _pow_a(a, b):
    if mpmath.isinf(b):  # the limit of b·a^(b−1) where a^b tends to 0
        return mpf(0) if (abs(a) < 1) == (b > 0) and abs(a) != 1 else None
    if a < 0 and b != mpmath.floor(b):
        return None
    if a == 0:
        return None if b < 1 else (mpf(1) if b == 1 else mpf(0))
    return b * mpmath.power(a, b - 1)


def _pow_b(a, b):
    if a <= 0:
        return None  # log of a negative base: complex; at 0 the limit depends on b's side
    return mpmath.power(a, b) * mpmath.log(a)


def _logaddexp(k):
    def partial(a, b):
        mine, other = (a, b) if k == 0 else (b, a)
        if mpmath.isinf(mine) and mine < 0:
            return mpf(0) if other > mine else None
        return _sigmoid(mine - other)
    return partial


def _hypot(k):
    return lambda a, b: (a, b)[k] / mpmath.sqrt(a * a + b * b)


def _psi(k, a):
    """ψ^(k)(a); for a > 1000 its asymptotic series (mpmath's own takes seconds at large |a|, 256 bits):
    (−1)^(k+1)[(k−1)!/a^k + k!/(2a^(k+1)) + Σ B_2j (2j+k−1)!/(2j)! /a^(2j+k)], here to 1e-70; for a < 0
    (k ≤ 1) the reflection."""
    if a < 0 and k <= 1:  # mpmath's own is slow there: the reflection (ψ(1 − a) − ψ(a) = π cot πa)
        s = mpmath.sinpi(a)
        if s == 0:
            return None
        if k == 0:
            return _psi(0, 1 - a) - mpmath.pi * mpmath.cospi(a) / s
        return -_psi(1, 1 - a) + (mpmath.pi / s) ** 2
    if a <= 1e3:
        return mpmath.polygamma(k, a)
    if k == 0:
        return mpmath.log(a) - 1 / (2 * a) - sum(mpmath.bernoulli(2 * j) / (2 * j * a ** (2 * j)) for j in range(1, 13))
    terms = [mpmath.factorial(k - 1) / a ** k, mpmath.factorial(k) / (2 * a ** (k + 1))]
    terms += [mpmath.bernoulli(2 * j) * mpmath.factorial(2 * j + k - 1) / mpmath.factorial(2 * j) / a ** (2 * j + k)
              for j in range(1, 13)]
    return (-1) ** (k + 1) * mpmath.fsum(terms)


def _mills_ratio(a):
    """φ(a)/Φ(a); below −30 −a/S(a), Φ(a) = φ(a)/(−a)·S(a), S = Σ (−1)^k (2k−1)!!/a^2k to 1e-60
    (mpmath's Φ underflows there)."""
    if a < -30:
        return -a / mpmath.fsum((-1) ** k * mpmath.fac2(2 * k - 1) / a ** (2 * k) for k in range(40))
    return mpmath.npdf(a) / mpmath.ncdf(a)


def _polygamma(n, a, more=0):
    """ψ^(k + more)(a), k = n rounded to a whole number from 0 to 10 (None elsewhere, and where symad
    gives nan: n + more > 1 for a < 0)."""
    k = int(mpmath.floor(n + mpf(0.5)))
    if not 0 <= k <= 10 or a < -TWO ** -30 and k + more > 1 or mpmath.isinf(a):
        return None
    return _psi(k + more, a)


def _psi_difference(k, a, b):
    """ψ⁽ᵏ⁾(a) − ψ⁽ᵏ⁾(a + b) for a, b > 0 (None elsewhere), with the bits the difference cancels
    (up to ~2,000 where b/a is 1e-600)."""
    if not (0 < a < mpmath.inf and 0 < b < mpmath.inf):
        return None
    with mp.workprec(PREC + int(abs(mpmath.log(a / b, 2))) + 64):
        return +(_psi(k, a) - _psi(k, a + b))


def _atan2(k):  # atan2(y, x): ∂y = x/(x² + y²), ∂x = −y/(x² + y²)
    return lambda y, x: (x if k == 0 else -y) / (x * x + y * y)


def _sinc(x):
    if abs(x) < 1e-3:  # x cos x − sin x cancels to x³/3: its series, to 1e-25 relative
        x2 = x * x
        return x * (-mpf(1) / 3 + x2 * (mpf(1) / 30 + x2 * (-mpf(1) / 840 + x2 / 45360)))
    return (x * mpmath.cos(x) - mpmath.sin(x)) / (x * x)


# op -> its partials in mpmath (None where undefined).  A missing op fails the test that
# every op is swept, so a new op gets its exact partials here.
EXACT: dict[str, tuple[Callable[..., object], ...]] = {
    "add": (lambda a, b: 1, lambda a, b: 1), "sub": (lambda a, b: 1, lambda a, b: -1),
    "mul": (lambda a, b: b, lambda a, b: a), "div": (lambda a, b: 1 / b, _div_b),
    "pow": (_pow_a, _pow_b), "neg": (lambda a: -1,),
    "sin": (mpmath.cos,), "cos": (lambda a: -mpmath.sin(a),), "tan": (lambda a: 1 / mpmath.cos(a) ** 2,),
    "asin": (lambda a: 1 / mpmath.sqrt(1 - a * a),), "acos": (lambda a: -1 / mpmath.sqrt(1 - a * a),),
    "atan": (lambda a: 1 / (1 + a * a),),
    "sinh": (mpmath.cosh,), "cosh": (mpmath.sinh,), "tanh": (lambda a: mpmath.sech(a) ** 2,),
    "exp": (mpmath.exp,), "log": (lambda a: 1 / a,), "sqrt": (lambda a: 1 / (2 * mpmath.sqrt(a)),),
    "abs": (mpmath.sign,), "atan2": (_atan2(0), _atan2(1)),
    "min": (lambda a, b: _step(b - a), lambda a, b: _step(a - b)),
    "max": (lambda a, b: _step(a - b), lambda a, b: _step(b - a)),
    "sign": (_flat,), "step": (_flat,),
    "sigmoid": (lambda a: _sigmoid(a) * _sigmoid(-a),), "softplus": (_sigmoid,),
    "log_sigmoid": (lambda a: _sigmoid(-a),), "logaddexp": (_logaddexp(0), _logaddexp(1)),
    "log1p": (lambda a: 1 / (1 + a),), "expm1": (mpmath.exp,),
    "erf": (lambda a: 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-a * a),),
    "erfc": (lambda a: -2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-a * a),),
    "hypot": (_hypot(0), _hypot(1)), "sinc": (_sinc,),
    "cbrt": (lambda a: mpmath.cbrt(abs(a)) / (3 * abs(a)),),
    "asinh": (lambda a: 1 / mpmath.sqrt(a * a + 1),), "acosh": (lambda a: 1 / mpmath.sqrt(a * a - 1),),
    "atanh": (lambda a: 1 / (1 - a * a),),
    "floor": (_flat,), "ceil": (_flat,), "round": (_flat,),
    **{name: (_flat, _flat) for name in ("lt", "le", "gt", "ge", "eq", "ne", "and", "or")},
    "not": (_flat,),
    "where": (_flat, lambda c, a, b: mpf(c != 0), lambda c, a, b: mpf(c == 0)),
    # the special functions (symad/core/ops/special.py)
    "lgamma": (lambda a: _psi(0, a),), "digamma": (lambda a: _psi(1, a),),
    "polygamma": (_flat, lambda n, a: _polygamma(n, a, 1)),
    "gamma": (lambda a: mpmath.gamma(a) * _psi(0, a),),
    "ndtr": (mpmath.npdf,), "log_ndtr": (_mills_ratio,),
    "logit": (lambda a: 1 / (a * (1 - a)),),
    "xlogy": (lambda a, b: mpmath.log(b) if b > 0 else None, lambda a, b: a / b if b else None),
    "xlog1py": (lambda a, b: mpmath.log1p(b) if b > -1 else None, lambda a, b: a / (1 + b) if b != -1 else None),
    "betaln": (lambda a, b: _psi_difference(0, a, b), lambda a, b: _psi_difference(0, b, a)),
    "digamma_diff": (lambda a, b: _psi_difference(1, a, b), lambda a, b: -_psi(1, a + b) if a + b > 0 else None),
}


# ============================================================ documented choices
def _is_int(x: float, shift: float = 0.0) -> bool:
    return math.isfinite(x) and (x - shift) == math.floor(x - shift)


# op -> (where the op is not differentiable, the partials symad gives there, what the doc says)
CHOICES: dict[str, tuple[Callable[..., bool], tuple[float, ...], str]] = {
    "abs": (lambda a: a == 0, (0.0,), "abs'(0) = sign(0) = 0"),
    "sign": (lambda a: a == 0, (0.0,), "0 at 0"),
    "step": (lambda a: a == 0, (0.0,), "0 at 0"),
    "floor": (lambda a: _is_int(a), (0.0,), "0 at the integers"),
    "ceil": (lambda a: _is_int(a), (0.0,), "0 at the integers"),
    "round": (lambda a: _is_int(a, 0.5), (0.0,), "0 at the halves"),
    "min": (lambda a, b: a == b, (0.5, 0.5), "a tie (x = y) splits it: 0.5 each"),
    "max": (lambda a, b: a == b, (0.5, 0.5), "a tie (x = y) splits it: 0.5 each"),
    "hypot": (lambda a, b: a == 0 and b == 0, (0.0, 0.0), "0 at the origin, as abs'(0)"),
    "logaddexp": (lambda a, b: a == b and math.isinf(a), (0.5, 0.5),
                  "0.5 each at x = y = ±inf (the limit along x = y), so a masked (−inf) "
                  "logsumexp entry gets exactly 0"),
    **{name: (lambda a, b: a == b, (0.0, 0.0), "0 where x = y too")
       for name in ("lt", "le", "gt", "ge", "eq", "ne")},
}


# ============================================================ where the rule is known not to hold
def _pow_intermediate(k: int, a: float, b: float) -> bool:
    """a^(b−1) (for ∂a = b·a^(b−1)) or a^b (for ∂b = a^b·log a) alone is not a normal double:
    the product then carries the digits it lost."""
    if a == 0 or not math.isfinite(a) or not math.isfinite(b):
        return False
    v = abs(mpmath.power(abs(mpf(a)), mpf(b) - (1 - k)))
    return not TWO ** -1022 <= v <= LARGEST


def _sinc_cancels(k: int, x: float) -> bool:
    """cos x − sinc x, sinc' times x, cancels more than 4-fold (near a zero of sinc')."""
    if not math.isfinite(x) or abs(x) < 1:
        return False
    c, q = mpmath.cos(x), mpmath.sin(x) / x
    return abs(c) + abs(q) > 4 * abs(c - q)


def _quotient_subnormal(k: int, a: float, b: float) -> bool:
    """a/b is subnormal (a subnormal argument): the quotient, which ∂b = −(a/b)/b reuses, has lost digits."""
    return k == 1 and a != 0 and math.isfinite(b) and b != 0 and abs(a / b) < 2.2250738585072014e-308


def _scaled_subnormal(k: int, y: float, x: float) -> bool:
    """The smaller of |y|, |x| over the larger is subnormal: atan2's partials, on the arguments
    scaled by the larger (so that x² + y² cannot overflow), have lost its digits."""
    small, large = sorted((abs(x), abs(y)))
    return small != 0 and math.isfinite(large) and small / large < 2.2250738585072014e-308


def _digamma_cancels(k: int, x: float) -> bool:
    """x < 0 where ψ(x) = ψ(−x) − 1/x − π cot(πx) cancels more than 1.5-fold (near ψ's negative zeros
    −0.504…, −1.573…, −2.611…, …): the reflection's terms' size, not ψ's, bounds the error."""
    if not (math.isfinite(x) and x < -(2.0 ** -30)) or x == math.floor(x):
        return False
    terms = abs(_psi(0, -mpf(x))) + abs(1 / mpf(x)) + abs(mpmath.pi * mpmath.cot(mpmath.pi * x))
    return terms > 1.5 * abs(_psi(0, mpf(x)))


def _trigamma_cancels(a: float, b: float) -> bool:
    """ψ′(a) − ψ′(a + b) cancels more than 1.5-fold."""
    return _psi(1, mpf(a)) > 1.5 * abs(_psi_difference(1, mpf(a), mpf(b)))


# op -> (points where symad's rule loses digits the exact partial has, what the doc says)
KNOWN: dict[str, tuple[Callable[..., bool], str]] = {
    "pow": (_pow_intermediate, "where x^(y−1) (for ∂x) or x^y (for ∂y) alone leaves the normal range "
            "(is subnormal or inf) but the partial does not"),
    "sinc": (_sinc_cancels, "near the zeros of sinc' (x = 4.4934…, 7.7253…), where cos x − sinc x cancels: "
             "the error grows as (|cos x| + |sinc x|)/|cos x − sinc x|"),
    "div": (_quotient_subnormal, "∂y where x/y is subnormal (x is): −(x/y)/y reuses the quotient's lost digits"),
    "atan2": (_scaled_subnormal, "where the smaller argument over the larger is subnormal (the smaller is): "
              "the partials scale the arguments by the larger"),
    "lgamma": (_digamma_cancels, "x < 0 near the zeros of digamma (−0.504…, −1.573…, …), where its reflection "
               "ψ(−x) − 1/x − π·cot(πx) cancels: within a few ulp of the largest term"),
    "digamma_diff": (lambda k, a, b: not (a > 0 and b > 0) or k == 0 and _trigamma_cancels(a, b),
                     "an argument ≤ 0 (the plain differences), and ∂a = ψ′(a) − ψ′(a + b) where it cancels "
                     "more than 1.5-fold (b small against a): within a few ulp of ψ′(a)"),
    "gamma": (lambda k, x: math.isfinite(x) and x < -(2.0 ** -30),
              "x < 0, the reflection π/(sin(πx)·x·Γ(−x)) times digamma's: a few ulp more than 4, and near "
              "the zeros of digamma (as for lgamma) those of its largest term"),
}


# ============================================================ sample points
def _grid(rng: np.random.Generator) -> np.ndarray:
    """Numbers of every binary exponent, ordinary numbers, exp's tails, and the ends of domains."""
    every_exponent = np.ldexp(rng.uniform(1, 2, 300), np.arange(-1074, 1024, 7)[:300])
    ordinary = rng.uniform(0, 8, 120)
    tails = rng.uniform(8, 800, 120)
    k = np.arange(1, 61)
    near_one = np.concatenate([1 - np.ldexp(rng.uniform(1, 2, 60), -k), 1 + np.ldexp(rng.uniform(1, 2, 60), -k)])
    special = np.array([0.0, 5e-324, 2.2250738585072014e-308, 0.5, 1.0, 2.0, 1e-20, 0.1, 1e300, inf])
    # where derivatives vanish inside the domain: x = π/2 (cos), tan x = x (sinc')
    zeros = np.array([math.pi / 2, math.pi, 4.493409457909064, 7.725251836937707, 10.904121659428899])
    near_zeros = (zeros[:, None] * (1 + np.ldexp(rng.uniform(-1, 1, (5, 12)), -np.arange(1, 49, 4)))).ravel()
    positive = np.concatenate([every_exponent, ordinary, tails, near_one, special, zeros, near_zeros])
    return np.concatenate([positive, -positive])


def _pairs(rng: np.random.Generator, op: str) -> np.ndarray:
    """Pairs: random ones from the grid, equal and nearly equal ones, ±inf beside a number,
    and scaled ones (3t, 4t) over every exponent."""
    xs = _grid(rng)
    n = 700
    random = np.column_stack([rng.choice(xs, n), rng.choice(xs, n)])
    finite = xs[np.isfinite(xs)]
    some = rng.choice(finite, 60)
    near = np.column_stack([some, some * (1 + np.ldexp(1.0, -rng.integers(1, 53, 60)))])
    infinite = np.column_stack([np.full(40, -inf), rng.choice(finite, 40)])
    t = np.ldexp(1.0, np.arange(-1074, 1020, 9))
    scaled = np.column_stack([3 * t, 4 * t])
    tiny_over_small = np.column_stack([rng.uniform(-1, 1, 60) * 1e-311, 10.0 ** rng.uniform(-6, 0, 60)])
    rows = [random, np.column_stack([some, some]), near, infinite, infinite[:, ::-1], -infinite, scaled,
            tiny_over_small,
            np.array([[0.0, 0.0], [-inf, -inf], [inf, inf], [0.0, -0.0]])]
    if op == "pow":  # a^b over its range: b·log a from the subnormals to the overflow
        base = np.abs(rng.choice(finite[finite != 0], 500))
        base = base[base != 1]
        b = rng.uniform(-744, 709, len(base)) / np.log(base)
        integral = np.column_stack([-rng.uniform(0.5, 3, 60), rng.integers(-30, 30, 60).astype(float)])
        infinite_b = np.column_stack([base[:60], np.tile([inf, -inf], 30)])
        rows = [np.column_stack([base, b]), integral, infinite_b, random[:200], near]
    both = np.concatenate(rows)
    return both[np.all(np.isfinite(both) | np.isinf(both), axis=1)]


def points(op: str) -> np.ndarray:
    """The sample points of ``op``: an array of argument tuples."""
    rng = np.random.default_rng(29)
    arity = OPS[op].arity
    if arity == 1:
        return _grid(rng)[:, None]
    if arity == 2:
        return _pairs(rng, op)
    conditions = rng.choice([0.0, 1.0, -2.0, np.nan], 40)  # where(c, a, b)
    return np.column_stack([conditions, _pairs(rng, op)[:40]])


# ============================================================ the sweep
@dataclass
class Worst:
    """An op's worst partial: its error in ulps, relative error, and where."""

    ulps: float = 0.0
    relative: float = 0.0
    at: tuple[float, ...] = ()
    partial: int = 0
    compared: int = 0
    known: int = 0  # points of KNOWN, and the worst there
    known_ulps: float = 0.0
    known_at: tuple[float, ...] = ()
    choices: int = 0
    wrong_choices: list = field(default_factory=list)


def arguments(op: str) -> list[str]:
    """The names of ``op``'s arguments in the sweep and the table."""
    return {"where": ["c", "x", "y"], "atan2": ["y", "x"]}.get(op, ["x", "y"][: OPS[op].arity])


def text_of(op: str) -> str:
    """``op`` applied to its arguments, as typed: ``x + y``, ``-x``, ``not x``, ``atan2(y, x)``."""
    spec, names = OPS[op], arguments(op)
    if spec.kind == "infix":
        return f"x {spec.symbol} y"
    if spec.kind == "prefix":
        return f"{spec.symbol}x"
    return f"{op}({', '.join(names)})"


def _ulp(exact: mpmath.mpf) -> mpmath.mpf:
    if exact == 0:
        return TWO ** -1074
    _, e = mpmath.frexp(exact)  # |exact| = m·2^e, m in [0.5, 1)
    return TWO ** (max(int(e) - 1, -1022) - 52)


LARGEST = (2 - TWO ** -52) * TWO ** 1023


def error_ulps(got: float, exact: mpmath.mpf) -> tuple[float, float] | None:
    """The error of ``got`` in ulps of ``exact`` and relatively (0 where ``exact`` is not normal),
    or None where ``exact`` is not a finite double (it overflows)."""
    if abs(exact) > LARGEST + TWO ** 970:  # rounds to inf
        return None
    if not math.isfinite(got):
        return inf, inf
    diff = abs(mpf(got) - exact)
    relative = float(diff / abs(exact)) if abs(exact) >= TWO ** -1022 else 0.0
    return float(diff / _ulp(exact)), relative


@functools.cache
def sweep(op: str) -> Worst:
    """Symad's partials of ``op`` at its sample points against the exact ones."""
    pts = points(op)
    names = arguments(op)
    e = symad.parse(text_of(op), symad.Graph())
    fn = e.compile(names, backend="python")
    with np.errstate(all="ignore"):
        values, grads = fn.value_and_grad({n: pts[:, k].copy() for k, n in enumerate(names)})
    grads = np.asarray(grads).reshape(len(pts), -1)
    worst = Worst()
    choice, known = CHOICES.get(op), KNOWN.get(op)
    with mp.workprec(PREC):
        for p, value, grad in zip(pts.tolist(), np.asarray(values).tolist(), grads.tolist()):
            if choice is not None and choice[0](*p):  # (logaddexp's at -inf, whose value is -inf, too)
                worst.choices += 1
                if grad != list(choice[1]):
                    worst.wrong_choices.append((tuple(p), grad))
                continue
            if not math.isfinite(value) or any(map(math.isnan, p)) and op != "where":
                continue  # outside the domain, or infinite: no derivative to speak of
            for k, rule in enumerate(EXACT[op]):
                try:
                    exact = rule(*map(mpf, p))
                except (ValueError, ZeroDivisionError):
                    continue
                if exact is None or not isinstance(exact, (int, mpmath.mpf)) or mpmath.isnan(exact):
                    continue
                err = error_ulps(grad[k], mpf(exact))
                if err is None:
                    continue
                if known is not None and known[0](k, *p):
                    worst.known += 1
                    if err[0] > worst.known_ulps:
                        worst.known_ulps, worst.known_at = err[0], tuple(p)
                    continue
                worst.compared += 1
                if err[0] > worst.ulps:
                    worst.ulps, worst.relative, worst.at, worst.partial = err[0], err[1], tuple(p), k
                worst.relative = max(worst.relative, err[1])
    return worst


def operations() -> list[str]:
    return [name for name, spec in OPS.items() if spec.arity]
