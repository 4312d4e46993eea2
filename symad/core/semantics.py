"""Evaluation with one semantics: the functions of the op table on floats and NumPy arrays.

Every backend gives the same bits (``docs/reference/numerics.md``): IEEE arithmetic, the C
library's functions with C99 Annex F special cases, ``min``/``max`` as IEEE
754-2019 minimum/maximum, and small integer powers as products.  Where Python's
``math`` or NumPy has no such function, or NumPy's differs from the C library's,
it is written here (checked by ``tests/core/test_special_values.py``).
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Callable
from typing import Any


def numpy() -> Any:
    """NumPy, imported on first use: a single point (the command line's) never needs it."""
    return importlib.import_module("numpy")


@functools.lru_cache(maxsize=1)
def numpy_vector_code() -> bool:
    """Whether NumPy runs its own vector code for ``exp``, ``log``, ``pow`` and the like (SVML,
    on a CPU with AVX-512), whose last bits differ from the C library's on some inputs."""
    for module in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            features = importlib.import_module(module).__cpu_features__
        except (ImportError, AttributeError):
            continue
        return bool(features.get("AVX512F") or features.get("AVX512_SKX"))
    return True  # unknown: the C library's bits, element by element


class NumpyFunction:
    """``numpy.<name>``, looked up on its first call; where NumPy runs its own vector code for
    it (:func:`numpy_vector_code`), ``libm`` (the C library's, through ``math``) on each element."""

    __slots__ = ("fn", "libm", "name")

    def __init__(self, name: str, libm: Callable[..., float] | None = None):
        self.name, self.libm, self.fn = name, libm, None

    def __call__(self, *args: Any) -> Any:
        fn = self.fn
        if fn is None:
            fn = getattr(numpy(), self.name)
            if self.libm is not None and numpy_vector_code():
                fn = each_libm(self.libm, fn)
            self.fn = fn
        return fn(*args)

    def __repr__(self) -> str:
        return f"numpy.{self.name}"


def each_libm(fn: Callable[..., float], fallback: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """``fn``, a C library function (through ``math``), on each element (broadcast); where it
    raises (a domain error, an overflow: IEEE gives nan or inf), ``fallback``'s value (NumPy's).

    For ops whose NumPy version is NumPy's own vector code (``tanh``: 1 ulp off libm's on
    ~16% of inputs): 7x slower than it on arrays, but the bits of ``math`` and native code.
    """

    def safe(*xs: float) -> float:
        try:
            return fn(*xs)
        except (ValueError, ArithmeticError):
            return float(fallback(*xs))  # type: ignore[misc]

    one = fn if fallback is None else safe

    def each(*args: Any) -> Any:
        np = numpy()
        if all(np.ndim(a) == 0 for a in args):
            return np.float64(one(*(float(a) for a in args)))
        arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in args))
        columns = [a.ravel().tolist() for a in arrays]
        return np.fromiter(map(one, *columns), np.float64, arrays[0].size).reshape(arrays[0].shape)

    each.__name__ = fn.__name__
    return each


np_exp = NumpyFunction("exp", math.exp)
np_log = NumpyFunction("log", math.log)


# ===================================================================== small integer powers
# x^2 … x^4 and x^-1 … x^-4 with a constant exponent are products, in every evaluator and
# in constant folding: the same bits everywhere, and no call to pow.  The backends get them
# from one lowering pass (symad/schedule/lowering.py); the DAG's evaluators below them
# (constant folding, the sweep's numbers) compute them here.
SMALL_POWERS = (-4, -3, -2, -1, 2, 3, 4)


def small_power(exponent: Any) -> int | None:
    """The k for which ``x^exponent`` is computed as products, or None.

    >>> small_power(3.0), small_power(0.5), small_power(None)
    (3, None, None)
    """
    if type(exponent) is float and exponent in SMALL_POWERS:
        return int(exponent)
    return None


def power_product(x: Any, k: int) -> Any:
    """``x^k`` for a small integer k, as every evaluator computes it: ``(x*x)*x``, ``1.0 / (x*x)``."""
    p = x
    for _ in range(abs(k) - 1):
        p = p * x
    return p if k > 0 else 1.0 / p


# ===================================================================== functions `math` lacks
def py_sign(x: float) -> float:
    return math.copysign(1.0, x) if x != 0 and x == x else (x if x != x else 0.0)


def py_step(x: float) -> float:
    if x != x:
        return x
    return 1.0 if x > 0 else (0.0 if x < 0 else 0.5)


def py_min(a: float, b: float) -> float:
    """IEEE 754-2019 minimum: nan if either is nan, and −0 < +0 (so it is commutative)."""
    if a < b:
        return a
    if b < a:
        return b
    if a == b:
        return a if math.copysign(1.0, a) < 0 else b
    return math.nan


def py_max(a: float, b: float) -> float:
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
def np_min(a: Any, b: Any) -> Any:
    np = numpy()
    return np.copysign(np.minimum(a, b), np.minimum(np.copysign(1.0, a), np.copysign(1.0, b)))


def np_max(a: Any, b: Any) -> Any:
    np = numpy()
    return np.copysign(np.maximum(a, b), np.maximum(np.copysign(1.0, a), np.copysign(1.0, b)))


def np_step(x: Any) -> Any:
    np = numpy()
    return np.heaviside(x, 0.5)


_each_pow = each_libm(math.pow, NumpyFunction("power"))


def np_pow(a: Any, b: Any) -> Any:
    """``a^b`` by the C library's ``pow``, as ``math.pow`` and native code compute it."""
    np = numpy()
    if numpy_vector_code():
        return _each_pow(a, b)
    if np.ndim(b):
        return np.power(a, b)
    # With one exponent for all bases, NumPy computes a^2, a^-1 and a^0.5 as a*a, 1/a and
    # sqrt(a), 1 ulp off the C library's pow on ~0.1% of inputs (and sqrt(−0) = −0,
    # sqrt(−inf) = nan, where pow gives +0 and inf).  An array of exponents takes its pow loop.
    return np.power(np.reshape(a, -1), np.full(max(1, np.size(a)), b)).reshape(np.shape(a))[()]


# ===================================================================== numerically stable functions
# Each written once as the operations every evaluator performs, in the same order (the
# LLVM lowering in symad.core.ops has the same steps), so that every backend gives the
# same bits; each stays finite where its value is (no exp of a positive argument).
LN2 = math.log(2.0)


def py_log1p(x: float) -> float:
    """log(1 + x), accurate for small x, from the C library's ``log``: Goldberg's formula
    ``log(u) * (x / (u - 1))`` with ``u = 1 + x`` rounded, which cancels the rounding of ``u``
    (within 2 ulp; the C library's ``log1p`` is within 1 but costs twice as much over a batch)."""
    u = 1.0 + x
    if u == 1.0:
        return x
    if u == math.inf:
        return u
    return math.log(u) * (x / (u - 1.0))


def np_log1p(x: Any) -> Any:
    np = numpy()
    u = np.add(1.0, x)
    one = u == 1.0
    q = np.divide(x, np.where(one, 1.0, u - 1.0))
    return np.where(one, x, np.where(u == np.inf, u, np_log(u) * q))[()]


def py_sigmoid(x: float) -> float:
    """1/(1 + e^-x), from e = e^-|x| ≤ 1: ``q = 1/(1 + e)`` where x ≥ 0, else ``e*q`` (no overflow;
    ``sigmoid(-800) = 0``).  The stable functions below share e, 1 + e and q: one ``exp`` and one
    division serve a value and its derivative."""
    e = math.exp(-abs(x))
    q = 1.0 / (1.0 + e)
    return q if x >= 0 else e * q


def np_sigmoid(x: Any) -> Any:
    np = numpy()
    e = np_exp(np.negative(np.abs(x)))
    q = 1.0 / (1.0 + e)
    return np.where(x >= 0, q, e * q)[()]


def py_log1p_unit(e: float) -> float:
    """log1p(e) for e in [0, 1] (an ``e^-|x|``): ``log(u) + (e - (u - 1)) * (1/u)`` with u = 1 + e
    rounded and ``e - (u - 1)`` its rounding error, exact (within 1 ulp; no special cases in [0, 1])."""
    u = 1.0 + e
    return math.log(u) + (e - (u - 1.0)) * (1.0 / u)


def np_log1p_unit(e: Any) -> Any:
    u = 1.0 + e
    return np_log(u) + (e - (u - 1.0)) * (1.0 / u)


def py_sinc(x: float) -> float:
    """sin(x)/x, 1 at 0 (sin(x) is x to full precision near 0, so the quotient needs no series)."""
    return 1.0 if x == 0.0 else math.sin(x) / x


def np_sinc(x: Any) -> Any:
    np = numpy()
    zero = x == 0.0
    return np.where(zero, 1.0, np.sin(x) / np.where(zero, 1.0, x))[()]


SINC_SERIES_BELOW = 1.0  # |x| below which sinc' is its Taylor series (cos(x) - sinc(x) cancels)


def py_softplus(x: float) -> float:
    """log(1 + e^x) as max(x, 0) + log1p(e^-|x|): ``softplus(800) = 800``, ``softplus(-40) ≈ 4.2e-18``."""
    return (x if x > 0 else 0.0) + py_log1p_unit(math.exp(-abs(x)))


def np_softplus(x: Any) -> Any:
    np = numpy()
    return (np.where(x > 0, x, 0.0) + np_log1p_unit(np_exp(np.negative(np.abs(x)))))[()]


def py_log_sigmoid(x: float) -> float:
    """log(sigmoid(x)) = min(x, 0) - log1p(e^-|x|)."""
    return (x if x < 0 else 0.0) - py_log1p_unit(math.exp(-abs(x)))


def np_log_sigmoid(x: Any) -> Any:
    np = numpy()
    return (np.where(x < 0, x, 0.0) - np_log1p_unit(np_exp(np.negative(np.abs(x)))))[()]


def py_logaddexp(a: float, b: float) -> float:
    """log(e^a + e^b) as the larger plus log1p(e^-|a-b|); equal arguments (infinities too) give
    a + log 2, as NumPy's ``logaddexp`` does."""
    if a == b:
        return a + LN2
    d = a - b
    if d > 0:
        return a + py_log1p_unit(math.exp(-d))
    return b + py_log1p_unit(math.exp(d))  # (d is nan: nan)


def np_logaddexp(a: Any, b: Any) -> Any:
    np = numpy()
    d = np.subtract(a, b)
    g = d > 0
    s = np.where(g, a, b) + np_log1p_unit(np_exp(np.where(g, np.negative(d), d)))
    return np.where(np.equal(a, b), np.add(a, LN2), s)[()]


def py_round(x: float) -> float:
    """The C library's ``round``: halfway cases away from zero (Python's ``round`` goes to even)."""
    if not math.isfinite(x):
        return x
    t = float(math.trunc(x))
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return math.copysign(t, x)


def np_round(x: Any) -> Any:
    np = numpy()
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):  # inf - inf: the comparison below is False, as wanted
        away = np.abs(np.subtract(x, t)) >= 0.5
    return np.copysign(np.where(away, t + np.copysign(1.0, x), t), x)[()]


def _integral(fn: Callable[[float], int]) -> Callable[[float], float]:
    """``math.floor``/``math.ceil`` as the C library's: a float, the sign of a zero kept
    (``ceil(-0.5) = -0.0``); infinities and nan raise (callers retry with NumPy)."""

    def integral(x: float) -> float:
        r = float(fn(x))
        return math.copysign(r, x) if r == 0 else r

    integral.__name__ = fn.__name__
    return integral


py_floor, py_ceil = _integral(math.floor), _integral(math.ceil)


def py_hypot(a: float, b: float) -> float:
    """The C library's ``hypot`` (Python's ``math.hypot`` is its own algorithm, other bits)."""
    return _libm_hypot()(a, b)


def _libm_hypot() -> Callable[[float, float], float]:
    if not _HYPOT:
        import ctypes

        fn = ctypes.CDLL(None).hypot
        fn.argtypes, fn.restype = (ctypes.c_double, ctypes.c_double), ctypes.c_double
        _HYPOT.append(fn)
    return _HYPOT[0]


_HYPOT: list[Any] = []


# ----------------------------------------------------------------- conditions and selection
# A condition is true where it is not 0; nan is true (as C and NumPy take it).
def py_comparison(test: Callable[[float, float], bool]) -> Any:
    """The comparison ``test`` (``operator.lt``, ...) on floats, as 1.0 or 0.0."""
    return lambda a, b: 1.0 if test(a, b) else 0.0


def np_comparison(ufunc: str) -> Any:
    """NumPy's comparison ``ufunc`` (``less``, ...) on NumPy values, as float64 ones and zeros."""
    return lambda a, b: getattr(numpy(), ufunc)(a, b) + 0.0


def py_and(a: float, b: float) -> float:
    return 1.0 if a != 0.0 and b != 0.0 else 0.0


def py_or(a: float, b: float) -> float:
    return 1.0 if a != 0.0 or b != 0.0 else 0.0


def py_not(a: float) -> float:
    return 1.0 if a == 0.0 else 0.0


def py_where(c: float, a: float, b: float) -> float:
    return a if c != 0.0 else b


def np_and(a: Any, b: Any) -> Any:
    return numpy().logical_and(a != 0.0, b != 0.0) + 0.0


def np_or(a: Any, b: Any) -> Any:
    return numpy().logical_or(a != 0.0, b != 0.0) + 0.0


def np_not(a: Any) -> Any:
    return numpy().equal(a, 0.0) + 0.0


def np_where(c: Any, a: Any, b: Any) -> Any:
    return numpy().where(c != 0.0, a, b)[()]
