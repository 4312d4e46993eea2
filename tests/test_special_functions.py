"""The special functions (symad/core/ops/special.py): values and first two derivatives against
mpmath at 256 bits over each domain, tails included, within the ulps docs/reference/numerics.md
states; their poles and domain edges; and the same bits from native code as from Python."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import symad
from symad.native import jit as native

inf, nan = math.inf, math.nan
mp = mpmath.mp


def _mills(x):
    """S(x) with Φ(x) = φ(x)/(−x)·S(x) for x ≤ −30: Σ (−1)^k (2k−1)!!/x^2k, to 1e-60."""
    return mpmath.fsum((-1) ** k * mpmath.fac2(2 * k - 1) / x ** (2 * k) for k in range(40))


def _log_ndtr(x):
    if x > 5:
        return mpmath.log1p(-mpmath.ncdf(-x))
    if x < -30:
        return -x * x / 2 - mpmath.log(-x) - mpmath.log(2 * mpmath.pi) / 2 + mpmath.log(_mills(x))
    return mpmath.log(mpmath.ncdf(x))


def _phi_ratio(x):
    return -x / _mills(x) if x < -30 else mpmath.npdf(x) / mpmath.ncdf(x)


def _psi(k, x):
    return mpmath.polygamma(k, x)


# name -> (text, (value, first, second derivative) in mpmath)
EXACT = {
    "lgamma": ("lgamma(x)", (lambda x: mpmath.re(mpmath.loggamma(x)), lambda x: _psi(0, x), lambda x: _psi(1, x))),
    "digamma": ("digamma(x)", (lambda x: _psi(0, x), lambda x: _psi(1, x), lambda x: _psi(2, x))),
    "trigamma": ("polygamma(1, x)", (lambda x: _psi(1, x), lambda x: _psi(2, x), lambda x: _psi(3, x))),
    "polygamma3": ("polygamma(3, x)", (lambda x: _psi(3, x), lambda x: _psi(4, x), lambda x: _psi(5, x))),
    "gamma": ("gamma(x)", (mpmath.gamma, lambda x: mpmath.gamma(x) * _psi(0, x),
                           lambda x: mpmath.gamma(x) * (_psi(0, x) ** 2 + _psi(1, x)))),
    "ndtr": ("ndtr(x)", (mpmath.ncdf, mpmath.npdf, lambda x: -x * mpmath.npdf(x))),
    "log_ndtr": ("log_ndtr(x)", (_log_ndtr, _phi_ratio,
                                 lambda x: -_phi_ratio(x) * (x + _phi_ratio(x)))),
    "logit": ("logit(x)", (lambda p: mpmath.log(p / (1 - p)), lambda p: 1 / (p * (1 - p)),
                           lambda p: (2 * p - 1) / (p * (1 - p)) ** 2)),
}

# The points: each function's domain from the subnormals to the largest double, and its
# hard places (zeros, the digamma root, the tails).
_RNG = np.random.default_rng(34)
_POSITIVE = np.concatenate([np.ldexp(_RNG.uniform(1, 2, 91), np.arange(-1070, 1020, 23)), _RNG.uniform(0, 30, 60),
                            1 + np.ldexp(_RNG.uniform(-1, 1, 30), -np.arange(1, 60, 2)),
                            2 + np.ldexp(_RNG.uniform(-1, 1, 30), -np.arange(1, 60, 2)),
                            1.4616321449683622 + np.ldexp(_RNG.uniform(-1, 1, 26), -np.arange(1, 53, 2)),
                            [0.75, 2.5, 10.0, 9.999999999999998, 12.0, 1e300, 170.5],
                            # where the recurrences down to [1.5, 2.5) take one step more
                            np.arange(2.5, 10), np.nextafter(np.arange(2.5, 10), 0)])
_NEGATIVE = -np.concatenate([_RNG.uniform(0, 30, 60), np.ldexp(_RNG.uniform(1, 2, 40), -np.arange(1, 80, 2))])
_NEGATIVE = _NEGATIVE[_NEGATIVE != np.round(_NEGATIVE)]
POINTS = {
    "lgamma": np.concatenate([_POSITIVE, _NEGATIVE]),
    "digamma": np.concatenate([_POSITIVE, _NEGATIVE]),
    "trigamma": np.concatenate([_POSITIVE, _NEGATIVE]),
    "polygamma3": _POSITIVE,
    "gamma": np.concatenate([_POSITIVE[_POSITIVE < 171], _NEGATIVE[_NEGATIVE > -170]]),
    "ndtr": np.concatenate([_RNG.uniform(-38, 8, 200), [-38.0, -37.5, -20.0, -10.0, 0.0, 1e-300]]),
    "log_ndtr": np.concatenate([_RNG.uniform(-60, 30, 200), [-40.0, -1e5, -1e150, -20.0, -19.999999999999996,
                                                             0.0, 5.0, 37.0]]),
    "logit": np.concatenate([_RNG.uniform(0, 1, 200), np.ldexp(1.0, -np.arange(1, 1074, 17)),
                             1 - np.ldexp(1.0, -np.arange(2, 53, 3)), 0.5 + np.ldexp(1.0, -np.arange(2, 53, 3))]),
}
# Where a function, or a derivative, is near a zero of its own inside the reflection x < 0
# (lgamma at −2.457…, digamma at −0.504…, their derivatives' zeros), only an absolute accuracy
# (ulps of the largest term) holds: these points are compared in ulps of that term.
REFLECTED = {"lgamma", "digamma", "trigamma", "gamma"}
# Worst errors in ulp: value, first and second derivative (docs/reference/numerics.md's table)
ULPS = {
    "lgamma": (4, 4, 6), "digamma": (4, 6, 8), "trigamma": (6, 8, 8), "polygamma3": (8, 8, 8),
    "gamma": (8, 12, 16), "ndtr": (4, 4, 4), "log_ndtr": (4, 4, 64), "logit": (4, 4, 4),
}


def _ulp(exact) -> mpmath.mpf:
    e = max(int(mpmath.floor(mpmath.log(abs(exact), 2))), -1022) - 52 if exact else -1074
    return mpmath.mpf(2) ** e


def symad_values(text: str, x: np.ndarray) -> list[np.ndarray]:
    """Value, first and second derivative of ``text`` in x, on a batch (Python code, NumPy)."""
    e = symad.parse(text, symad.Graph())
    d1 = e.diff("x")
    d2 = d1.diff("x")
    out = []
    for f in (e, d1, d2):
        with np.errstate(all="ignore"):
            out.append(np.broadcast_to(np.asarray(f.compile(["x"], backend="python").value({"x": x.copy()}), float),
                                       x.shape))
    return out


def errors(name: str) -> list[tuple[float, float]]:
    """The worst error in ulps of the value and of each derivative, and where."""
    text, exact = EXACT[name]
    x = POINTS[name]
    got = symad_values(text, x)
    worst = []
    with mp.workprec(256):
        for k in range(3):
            w = (0.0, nan)
            for xi, gi in zip(x.tolist(), got[k].tolist()):
                if _documented_nan(name, k, xi):
                    assert math.isnan(gi), (name, k, xi, gi)
                    continue
                want = exact[k](mpmath.mpf(xi))
                if not mpmath.isfinite(want) or not 2.2250738585072014e-308 <= abs(want) <= 1.7976931348623157e308:
                    continue  # (a subnormal result carries fewer digits: compared are normal ones)
                if not math.isfinite(gi):
                    w = max(w, (inf, xi))
                    continue
                scale = abs(want)
                if name in REFLECTED and xi < 0:  # the size of the reflection's terms
                    scale = max(scale, abs(exact[k](1 - mpmath.mpf(xi))), mpmath.pi ** (k + 1) / abs(
                        mpmath.sin(mpmath.pi * xi)) ** (k + 1))
                if name == "log_ndtr" and k == 2 and -20 <= xi < -1:  # −r(x + r) cancels: ulps of r·|x|
                    scale = max(scale, abs(_phi_ratio(mpmath.mpf(xi)) * xi))
                if name == "logit" and k == 2:  # −1/p² + 1/(1 − p)² cancels near ½: ulps of its terms
                    scale = max(scale, 1 / (xi * (1 - mpmath.mpf(xi))) ** 2)
                err = float(abs(mpmath.mpf(gi) - want) / _ulp(scale))
                w = max(w, (err, xi))
            worst.append(w)
    return worst


def _documented_nan(name: str, k: int, x: float) -> bool:
    """polygamma(n, x) is nan for n ≥ 2 and x < −2^−30 (the reflection is written for n ≤ 1)."""
    order = {"digamma": 0, "trigamma": 1, "polygamma3": 3, "lgamma": -1}.get(name)
    return order is not None and order + k >= 2 and x < -(2.0 ** -30)


@pytest.mark.parametrize("name", list(EXACT))
def test_values_and_two_derivatives_against_mpmath(name):
    worst = errors(name)
    for k, ((err, at), bound) in enumerate(zip(worst, ULPS[name])):
        assert err <= bound, f"{name}: derivative {k} is {err:.3g} ulp off at x = {at!r} (bound {bound})"


@pytest.mark.parametrize("text, at, want", [
    ("lgamma(x)", 1e300, "6.897755278982137e+302"), ("lgamma(x)", 1e-300, "690.7755278982137"),
    ("lgamma(x)", 1.0, "0"), ("lgamma(x)", 2.0, "0"), ("log_ndtr(x)", -40.0, "-804.6084420137538"),
    ("ndtr(x)", -38.0, "2.885428360068784e-316"), ("gamma(x)", 9.0, "40320"),
])
def test_the_documented_hard_points(text, at, want):
    """Full relative accuracy where the textbook formula loses it (correctly rounded here)."""
    for backend in ("python", "native") if native.available() else ("python",):
        fn = symad.compile(text, ["x"], backend=backend)
        assert repr(fn.value(x=at)) == repr(float(want)), backend


@pytest.mark.parametrize("text, at, want", [
    ("lgamma(x)", 0.0, inf), ("lgamma(x)", -3.0, inf), ("lgamma(x)", -inf, inf), ("lgamma(x)", inf, inf),
    ("gamma(x)", 0.0, inf), ("gamma(x)", -0.0, -inf), ("gamma(x)", -2.0, nan), ("gamma(x)", 172.0, inf),
    ("digamma(x)", 0.0, -inf), ("digamma(x)", -1.0, nan), ("digamma(x)", inf, inf),
    ("polygamma(1, x)", 0.0, inf), ("polygamma(2, x)", -0.5, nan), ("polygamma(11, x)", 1.0, nan),
    ("polygamma(-1, x)", 1.0, nan), ("polygamma(1.2, x)", 1.0, math.pi ** 2 / 6),
    ("logit(x)", 0.0, -inf), ("logit(x)", 1.0, inf), ("logit(x)", 1.5, nan), ("logit(x)", -0.5, nan),
    ("ndtr(x)", -inf, 0.0), ("ndtr(x)", inf, 1.0), ("log_ndtr(x)", -inf, -inf), ("log_ndtr(x)", inf, 0.0),
    ("xlogy(x, y)", (0.0, 0.0), 0.0), ("xlogy(x, y)", (0.0, -1.0), 0.0), ("xlogy(x, y)", (2.0, 0.0), -inf),
    ("xlog1py(x, y)", (0.0, -1.0), 0.0), ("xlog1py(x, y)", (1.0, -2.0), nan),
])
def test_poles_and_domain_edges_give_the_documented_values(text, at, want):
    e = symad.parse(text, symad.Graph())
    point = dict(zip(e.variables, at if isinstance(at, tuple) else (at,)))
    for backend in ("python", "native") if native.available() else ("python",):
        got = e.compile(list(point), backend=backend).value(point)
        assert got == want or math.isnan(got) and math.isnan(want), (text, at, backend, got)


def test_xlogy_derivatives_stay_finite_where_x_is_zero():
    """∂/∂y of x·log(y) is x/y: 0 where x = 0, also at y = 0 (the Poisson log-likelihood's y·log μ)."""
    fn = symad.compile("xlogy(x, y) + xlog1py(x, y - 1)", ["x", "y"])
    value, grad = fn.value_and_grad([0.0, 0.0])
    assert value == 0.0 and grad[1] == 0.0


def test_polygamma_is_digamma_derivative_to_any_order():
    """digamma' = polygamma(1, x), polygamma(n, x)' = polygamma(n + 1, x): Hessians of lgamma work."""
    e = symad.parse("lgamma(x)", symad.Graph())
    d = e
    for n in range(4):
        d = d.diff("x")
        assert str(d) == ("digamma(x)" if n == 0 else f"polygamma({n}, x)"), str(d)
    h = symad.parse("lgamma(x*y)", symad.Graph()).diff("x").diff("x")
    assert math.isclose(h.evaluate(x=2.0, y=1.5), 1.5 ** 2 * float(mpmath.polygamma(1, 3.0)), rel_tol=1e-14)


@pytest.mark.skipif(not native.available(), reason="needs llvmlite")
@pytest.mark.parametrize("text", ["lgamma(x)", "digamma(x)", "polygamma(y, x)", "gamma(x)", "ndtr(x)",
                                  "log_ndtr(x)", "logit(x)", "xlogy(y, x)", "xlog1py(y, x)", "betaln(x, y)",
                                  "betaln(y, x)", "digamma_diff(x, y)"])
def test_native_code_gives_pythons_bits_on_random_points(text):
    """Value, gradient and Hessian, on random points of many magnitudes: one implementation."""
    rng = np.random.default_rng(5)
    n = 2000
    x = rng.uniform(-1, 1, n) * 10.0 ** rng.choice([-300, -5, -1, 0, 0, 0, 1, 2, 5, 300], n)
    y = rng.choice([0.0, 1.0, 2.0, 3.0, 0.5, -1.0, 7.0], n)
    e = symad.parse(text, symad.Graph())
    names = list(e.variables)
    points = np.column_stack([x, y][: len(names)])
    d = [e.diff("x"), e.diff("x").diff("x")]

    def bits(values):
        a = np.broadcast_to(np.asarray(values, dtype=np.float64), (n,))
        return np.where(np.isnan(a), -1, a.view(np.int64)).tolist()

    with np.errstate(all="ignore"):
        for f in (e, *d):
            py = f.compile(names, backend="python").value(points)
            nat = f.compile(names, backend="native").value(points)
            assert bits(py) == bits(nat), str(f)


def _betaln_points() -> list[tuple[float, float]]:
    """a, b from 1e-300 to 1e300 (log-uniform, both orders) and from 0 to 30, and the hard pairs."""
    rng = np.random.default_rng(341)
    wide = 10.0 ** rng.uniform(-300, 300, (150, 2))
    near = rng.uniform(0, 30, (100, 2))
    one_large = np.column_stack([rng.uniform(0, 12, 80), 10.0 ** rng.uniform(0.5, 300, 80)])
    close = np.column_stack([10.0 ** rng.uniform(-1, 300, 60), 10.0 ** rng.uniform(-300, -1, 60)])
    hard = [(0.1, math.sinh(15)), (10.0, 10.0), (9.999999999999998, 10.0), (5.0, 1e-10), (1e300, 1e300),
            (1e-300, 1e-300), (1e-300, 1e300), (20.0, 1e-12), (1e5, 1e5 + 3)]
    pairs = np.concatenate([wide, near, one_large, close, hard])
    return [(float(a), float(b)) for a, b in np.concatenate([pairs, pairs[:, ::-1]])]


def test_betaln_and_its_partials_against_mpmath_across_scales():
    """log B(a, b) and ψ(a) − ψ(a + b), ψ(b) − ψ(a + b) (its gradient, by digamma_diff) to a few
    ulp where the three lgammas (or two digammas) would cancel: one argument large, or both.
    Near the curve B(a, b) = 1 (where log B crosses 0) only ulps of the terms hold: there the
    scale is lgamma of the smaller argument (or the three lgammas, both below 10)."""
    e = symad.parse("betaln(a, b)", symad.Graph())
    fn = e.compile(["a", "b"], backend="python")
    worst = [(0.0, None)] * 3
    with mp.workprec(1400):  # the oracle's own lgammas cancel ~1,000 bits at 1e300
        for a, b in _betaln_points():
            value, grad = fn.value_and_grad([a, b])
            A, B = mpmath.mpf(a), mpmath.mpf(b)
            x, y = min(A, B), max(A, B)
            lg = [abs(mpmath.loggamma(t)) for t in (x, y, A + B)]
            wants = [mpmath.loggamma(A) + mpmath.loggamma(B) - mpmath.loggamma(A + B),
                     mpmath.digamma(A) - mpmath.digamma(A + B), mpmath.digamma(B) - mpmath.digamma(A + B)]
            for k, (got, want) in enumerate(zip([value, *grad], wants)):
                if not 2.2250738585072014e-308 <= abs(want) <= 1.7976931348623157e308:
                    continue
                scale = abs(want)
                if k == 0:
                    scale = max(scale, lg[0] if y >= 10 else max(lg))
                err = float(abs(mpmath.mpf(got) - want) / _ulp(scale)) if math.isfinite(got) else inf
                worst[k] = max(worst[k], (err, (a, b)))
    for k, (err, at) in enumerate(worst):
        assert err <= 4, f"betaln: derivative {k} is {err:.3g} ulp off at {at} (bound 4)"


@pytest.mark.parametrize("text, at, want", [
    ("betaln(a, b)", (0.1, math.sinh(15)), 0.8220273973214208), ("betaln(a, b)", (3.0, 4.0), math.log(1 / 60)),
    ("beta(a, b)", (2.0, 3.0), 1 / 12), ("betaln(a, b)", (2.0, inf), -inf), ("betaln(a, b)", (0.0, 2.0), inf),
    ("betaln(a, b)", (nan, 2.0), nan), ("digamma_diff(a, b)", (1e300, 1e300), -math.log(2)),
])
def test_betaln_at_its_hard_points_and_edges(text, at, want):
    """Within ulps of lgamma(0.1) (2.25) at the first point: log B crosses 0 near there."""
    e = symad.parse(text, symad.Graph())
    for backend in ("python", "native") if native.available() else ("python",):
        got = e.compile(["a", "b"], backend=backend).value(list(at))
        assert math.isclose(got, want, rel_tol=6e-16) or got == want or math.isnan(got) and math.isnan(want), \
            (text, at, backend, got)
