"""One semantics for signed zeros and special values (``docs/reference/numerics.md``), in every backend.

Every op of the table, at ±0, ±inf, nan, subnormals and a few ordinary numbers, gives the
same bits, value and partials (all nans count as one), in the interpreter (floats and
arrays), Python code (floats, NumPy batches), native code (point, batch) and ``auto``; and
those bits are the documented ones: IEEE arithmetic, the C library's functions (C99 special
cases), IEEE 754-2019 minimum/maximum.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import json
import math
import sys
from typing import Any

import mpmath
import numpy as np
import pytest
from support.cli_helpers import run

import symad
from symad.backends.tape import Tape
from symad.core import semantics
from symad.core.dag import Graph
from symad.core.ops import OPS
from symad.native import ir as llvm_ir
from symad.native import jit as native
from symad.runtime.policy import NATIVE_BATCH_POINTS

inf, nan = math.inf, math.nan
SPECIAL = [0.0, -0.0, inf, -inf, nan, 5e-324, -5e-324, 2.225073858507201e-308, -2.2250738585072014e-308,
           1.0, -1.0, 0.5, -2.5, 3.0, 0.7, 1e300, -1e-300, 710.0]
OPERATIONS = [name for name, spec in OPS.items() if spec.arity]
# Forms the op table alone does not reach: constant exponents (NumPy computes a^0.5 as
# sqrt), small integer powers (products), and signed zeros through min/max.
EXTRA = ["x^0.5", "x^-0.5", "x^1.5", "x^(1/3)", "x^2", "x^3", "x^-1", "x^-2", "2^x", "e^x",
         "1/min(x, y)", "1/max(x, y)", "1/min(y, x) - 1/max(y, x)"]
BACKENDS = ["python", "auto"] + (["native"] if native.available() else [])


def text_of(op: str) -> str:
    spec = OPS[op]
    if spec.kind == "infix":
        return f"x {spec.symbol} y"
    if spec.kind == "prefix":
        return f"{spec.symbol}x"
    return f"{op}({', '.join('xyz'[:spec.arity])})"


def bits(values) -> list:
    """Bit patterns, every nan as one pattern."""
    a = np.asarray(values, dtype=np.float64)
    return np.where(np.isnan(a), -1, a.view(np.int64)).tolist()


def rows(value_and_grad, points: np.ndarray, batch: bool) -> np.ndarray:
    """``[value, *partials]`` at each point: one call per point, or one call for the batch."""
    if not batch:
        return np.array([[v, *d] for v, d in map(value_and_grad, points)])
    v, d = value_and_grad(points)
    columns = d.T if isinstance(d, np.ndarray) else d  # compiled: rows of partials; the tape: columns
    return np.column_stack([np.broadcast_to(c, len(points)) for c in (v, *columns)])


def forms(e: symad.Expr, names: list[str], points: np.ndarray) -> dict[str, np.ndarray]:
    """Rows ``[value, *partials]`` (or ``[value]``) at every point, by every backend and form."""
    tape = Tape(e.graph, e.id, [e.graph.var(n) for n in names])
    got = {"tape point": rows(lambda p: tape.value_and_grad(p.tolist()), points, False),
           "tape batch": rows(lambda ps: tape.value_and_grad(list(ps.T)), points, True)}
    for backend in BACKENDS:
        fn = e.compile(names, backend=backend)
        # auto: interpreted, then compiled in the background; then (prepare) compiled code only
        for name in (backend, "auto compiled") if backend == "auto" else (backend,):
            if name == "auto compiled":
                fn.prepare()
            for batch in (False, True):
                form = f"{name} {'batch' if batch else 'point'}"
                got[form] = rows(fn.value_and_grad, points, batch)
                got[form + " value"] = rows(lambda p, fn=fn: (fn.value(p), ()), points, batch)
    if "auto" in BACKENDS:  # a batch this large compiles native code at once, whatever the size
        big = np.tile(points, (NATIVE_BATCH_POINTS // len(points) + 1, 1))
        got["auto large batch"] = rows(e.compile(names, backend="auto").value_and_grad, big, True)[: len(points)]
    return got


TEXTS = [text_of(op) for op in OPERATIONS] + EXTRA


@pytest.mark.parametrize("text", TEXTS)
def test_every_backend_gives_the_same_bits(text):
    e = symad.parse(text, Graph())
    names = list(e.variables)
    points = np.array(list(itertools.product(SPECIAL, repeat=len(names))))
    got = forms(e, names, points)
    want = got.pop("python point")
    problems = []
    for form, table in got.items():
        for p, row, ref in zip(points.tolist(), table, want):
            if bits(row) != bits(ref[: len(row)]):
                problems.append(f"{form} at {p}: {row.tolist()} != {ref[: len(row)].tolist()}")
    assert not problems, f"{text}: {len(problems)} mismatches, e.g.\n" + "\n".join(problems[:12])


# Terms enough to take a program past llvm_ir.QUICK_OPS, where LLVM's IR passes run at -O2.
PADDING = " + ".join(f"sin(q*{k}.5)" for k in range(70))


@pytest.mark.skipif(not native.available(), reason="needs llvmlite")
@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.slow
def test_optimised_native_code_gives_the_same_bits(text):
    """Inside a large program, LLVM's IR passes rewrote pow(x, 0.5) into sqrt(x) and pow(2, x)
    into exp2(x), 1 ulp off the C library's pow on ~0.1% of inputs.  ``w*op(x, y) + padding``
    at w = 1: the partials are the op's value and partials; special and random points, native
    code at -O2 and -O0 against Python code."""
    g = Graph()
    inner = symad.parse(text, g)
    names = ["w", *inner.variables, "q"]
    fn = symad.parse(f"w*({text}) + {PADDING}", g).compile(names, backend="native")
    program = fn.value_grad_program()
    assert program.size > llvm_ir.QUICK_OPS
    rng = np.random.default_rng(5)
    k = len(inner.variables)
    args = np.vstack([list(itertools.product(SPECIAL, repeat=k)), np.column_stack([
        rng.uniform(-1, 1, 5000) * 10.0 ** rng.choice([-300, -5, -1, 0, 0, 0, 1, 2, 5, 300], 5000)
        for _ in range(k)])])
    points = np.column_stack([np.ones(len(args)), args, np.full(len(args), 0.3)])
    want = bits(symad.compile(fn.expr, names, backend="python").grad(points))
    quick = native.compile(program.schedule, opt=0)
    for name, code in (("-O2", program.native), ("-O0", quick)):
        out = np.empty((len(points), program.n_out))
        code.batch(points.ctypes.data, out.ctypes.data, len(points))
        got = bits(out[:, 1:])
        bad = [(p, a, b) for p, a, b in zip(args.tolist(), got, want) if a != b]
        assert not bad, f"{text} {name}: {len(bad)} points differ, e.g. {bad[:3]}"


# ---------------------------------------------------------------- the semantics itself
def ieee_minimum(a: float, b: float) -> float:
    if a != a or b != b:
        return nan
    if a == b:
        return a if math.copysign(1, a) < 0 else b
    return min(a, b)


def ieee_maximum(a: float, b: float) -> float:
    if a != a or b != b:
        return nan
    if a == b:
        return a if math.copysign(1, a) > 0 else b
    return max(a, b)


def _libm(name: str, arity: int):
    path = ctypes.util.find_library("m")
    if path is None:
        pytest.skip("no C math library found")
    fn = getattr(ctypes.CDLL(path), name)
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double] * arity
    return fn


def reference(op: str):
    """The documented result of ``op``, independent of symad's code."""
    ieee = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "neg": np.negative}
    if op in ieee:
        return lambda *a: float(np.errstate(all="ignore")(ieee[op])(*map(np.float64, a)))
    if op in ("min", "max"):
        return ieee_minimum if op == "min" else ieee_maximum
    if op == "sign":
        return lambda a: a if a != a else float((a > 0) - (a < 0))
    if op == "step":
        return lambda a: a if a != a else (1.0 if a > 0 else 0.0 if a < 0 else 0.5)
    if op in STABLE:
        return STABLE[op]
    if op in CONDITIONS:
        return CONDITIONS[op]
    libm = {"abs": "fabs"}.get(op, op)
    return _libm(libm, OPS[op].arity)


def _stable() -> dict:
    """The stable functions as docs/reference/numerics.md writes them, on the C library's exp and log."""
    exp, log, sin, ln2 = _libm("exp", 1), _libm("log", 1), _libm("sin", 1), math.log(2.0)

    def log1p(x):  # Goldberg's formula
        u = 1.0 + x
        if u == 1.0 or u == inf:
            return x if u == 1.0 else u
        return log(u) * (x / (u - 1.0))

    def log1p_unit(e):  # e in [0, 1]: log(u) plus u's rounding error over u
        u = 1.0 + e
        return log(u) + (e - (u - 1.0)) * (1.0 / u)

    def sigmoid(x):
        e = exp(-abs(x))
        q = 1.0 / (1.0 + e)
        return q if x >= 0 else e * q

    def logaddexp(a, b):
        if a == b:
            return a + ln2
        d = a - b
        if d != d:
            return nan
        return (a if d > 0 else b) + log1p_unit(exp(-abs(d)))

    return {"sigmoid": sigmoid, "log1p": log1p,
            "softplus": lambda x: (x if x > 0 else 0.0) + log1p_unit(exp(-abs(x))),
            "log_sigmoid": lambda x: (x if x < 0 else 0.0) - log1p_unit(exp(-abs(x))),
            "logaddexp": logaddexp,
            "sinc": lambda x: 1.0 if x == 0 else sin(x) / x}


STABLE = _stable()
# Conditions as docs/reference/numerics.md states them: 1 or 0; true is not 0 (nan is true); nan compares
# unequal to everything, itself included.
CONDITIONS = {
    "lt": lambda a, b: float(a < b), "le": lambda a, b: float(a <= b), "gt": lambda a, b: float(a > b),
    "ge": lambda a, b: float(a >= b), "eq": lambda a, b: float(a == b), "ne": lambda a, b: float(a != b),
    "and": lambda a, b: float(bool(a) and bool(b)), "or": lambda a, b: float(bool(a) or bool(b)),
    "not": lambda a: float(not a), "where": lambda c, a, b: a if c else b,
}


# The special functions (symad/core/ops/special.py) are no C library function: their documented
# values at the special points are mpmath's (256 bits) within SPECIAL_ULPS, and exactly the
# documented ones at poles, at ±inf, outside the domain (nan) and where the value is 0.
SPECIAL_ULPS = {"lgamma": 16.0}  # (lgamma(−2.5) is next to a negative zero: absolute accuracy there)


def _whole(x: float) -> bool:
    return math.isfinite(x) and x == math.floor(x)


def _polygamma_exact(n: float, x: float):
    k = math.floor(n + 0.5) if math.isfinite(n) else -1
    if not 0 <= k <= 10 or x != x:
        return nan
    if k == 0:
        return _SPECIAL_EXACT["digamma"](x)
    if x == inf:
        return 0.0
    if x < -(2.0 ** -30) and (k > 1 or _whole(x)) or x == -inf:  # (above, the series serves n > 1 too)
        return nan
    if x == 0:
        return (-1) ** (k + 1) * math.copysign(1.0, x) ** (k + 1) * inf
    return mpmath.polygamma(k, x)


_SPECIAL_EXACT = {
    "lgamma": lambda x: nan if x != x else inf if math.isinf(x) or x <= 0 and _whole(x)
    else mpmath.re(mpmath.loggamma(x)),
    "digamma": lambda x: nan if x != x or x == -inf or x < 0 and _whole(x) else inf if x == inf
    else -math.copysign(inf, x) if x == 0 else mpmath.digamma(x),
    "gamma": lambda x: nan if x != x or x == -inf or x < 0 and _whole(x) else inf if x == inf
    else math.copysign(inf, x) if x == 0 else mpmath.gamma(x),
    "polygamma": _polygamma_exact,
    "ndtr": lambda x: mpmath.ncdf(x) if math.isfinite(x) else x if x != x else float(x > 0),
    "log_ndtr": lambda x: mpmath.log(mpmath.ncdf(x)) if math.isfinite(x) else x if x != x else -inf if x < 0 else 0.0,
    "logit": lambda p: nan if not 0 <= p <= 1 else -inf if p == 0 else inf if p == 1 else mpmath.log(p / (1 - p)),
}


def _difference_exact(term, a: float, b: float) -> tuple[Any, float]:
    """term(a) − term(a + b) (betaln: lgamma(a) + lgamma(b) − lgamma(a + b)) where an argument is
    ≤ 0 (the kernel's plain form, a + b rounded): exact where the terms are finite, within 4 ulps
    of the largest term (they may cancel); else the terms' IEEE arithmetic."""
    terms = [term(t) for t in ((a, b, a + b) if term is _SPECIAL_EXACT["lgamma"] else (a, a + b))]
    terms = [t if isinstance(t, float) or abs(t) <= sys.float_info.max else float(t) for t in terms]  # overflow
    signs = (1, 1, -1) if len(terms) == 3 else (1, -1)
    if all(isinstance(t, float) or mpmath.isfinite(t) for t in terms) and not any(isinstance(t, float) for t in terms):
        exact = mpmath.fsum(s * t for s, t in zip(signs, terms))
        return exact, 4.0 * float(max(abs(t) for t in terms) / abs(exact)) if exact else 0.0
    return float(sum(s * float(t) for s, t in zip(signs, terms))), 0.0


def _pair_exact(op: str, a: float, b: float) -> tuple[Any, float]:
    """betaln(a, b) = log|B(a, b)| and digamma_diff(a, b) = ψ(a) − ψ(a + b): mpmath's for a, b > 0
    (4 ulps), −inf where one is +inf; nan with a nan; elsewhere :func:`_difference_exact`."""
    if a != a or b != b:
        return nan, 0.0
    if a > 0 and b > 0:
        if math.inf in (a, b):
            return (0.0 if op == "digamma_diff" and b != inf else -inf), 0.0
        A, B = mpmath.mpf(a), mpmath.mpf(b)
        with mpmath.workprec(1400):  # lgamma(1e300) − lgamma(1e300 + b) cancels ~1,000 bits
            if op == "betaln":  # below 10 and near log B = 0 (B(0.5, 3) = 16/15): ulps of the terms
                terms = [abs(mpmath.loggamma(t)) for t in (min(A, B), max(A, B), A + B)]
                exact = mpmath.loggamma(A) + mpmath.loggamma(B) - mpmath.loggamma(A + B)
                scale = terms[0] if max(a, b) >= 10 else max(terms)
                return +exact, 4.0 * float(max(scale, abs(exact)) / abs(exact)) if exact else 0.0
            return +(mpmath.digamma(A) - mpmath.digamma(A + B)), 4.0
    return _difference_exact(_SPECIAL_EXACT["lgamma" if op == "betaln" else "digamma"], a, b)


def _ulps(got: float, exact) -> float:
    """|got − exact| in ulps of the exact value (of a subnormal: 2^-1074)."""
    exact = mpmath.mpf(exact)
    e = max(int(mpmath.floor(mpmath.log(abs(exact), 2))), -1022) - 52 if exact else -1074
    return float(abs(mpmath.mpf(got) - exact) / mpmath.mpf(2) ** e)


def special_reference(op: str, p: list[float]) -> tuple[float, float]:
    """The documented value of a special function at ``p`` and the ulps allowed around it."""
    if op == "xlogy":  # x·log(y) by the C library's log, 0 where x = 0
        return (0.0 if p[0] == 0 else float(np.float64(p[0]) * np.float64(_log(p[1])))), 0.0
    if op == "xlog1py":
        return (0.0 if p[0] == 0 else float(np.float64(p[0]) * np.float64(STABLE["log1p"](p[1])))), 0.0
    with mpmath.workprec(256):
        if op in ("betaln", "digamma_diff"):
            return _pair_exact(op, *p)
        exact = _SPECIAL_EXACT[op](*p)
        if isinstance(exact, float):
            return exact, 0.0
        return exact, SPECIAL_ULPS.get(op, 4.0)


def _log(y: float) -> float:
    return nan if y != y or y < 0 else -inf if y == 0 else inf if y == inf else _libm("log", 1)(y)


def _agrees(got: float, exact, ulps: float) -> bool:
    if isinstance(exact, float) and not ulps:
        return bits([got]) == bits([exact]) or exact == 0 and got == 0  # (the sign of a zero: either)
    if abs(exact) > sys.float_info.max:  # it overflows
        return got == math.copysign(inf, exact)
    return math.isfinite(got) and _ulps(got, exact) <= ulps


_PAIRS = ("xlogy", "xlog1py", "betaln", "digamma_diff")


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op in (*_SPECIAL_EXACT, *_PAIRS)])
def test_special_functions_at_the_special_points(op):
    """Poles, ±inf, nan, zeros, subnormals and ordinary points, in every backend (which give the
    same bits: test_every_backend_gives_the_same_bits): mpmath's value within a few ulp, and
    the documented value where it is not a finite nonzero number."""
    e = symad.parse(text_of(op), Graph())
    names = list(e.variables)
    points = np.array(list(itertools.product(SPECIAL, repeat=len(names))))
    fn = e.compile(names, backend="python")
    got = fn.value(points)
    bad = []
    for p, g in zip(points.tolist(), np.asarray(got).tolist()):
        exact, ulps = special_reference(op, p)
        if not _agrees(g, exact, ulps):
            bad.append(f"{op}{tuple(p)} = {g!r}, documented {mpmath.nstr(exact, 17)}")
    assert not bad, "\n".join(bad[:12])


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op not in (*_SPECIAL_EXACT, *_PAIRS)])
def test_values_are_the_documented_ones(op):
    """IEEE arithmetic, C99 functions (``pow(-inf, 0.5) = inf``, ``pow(-0, 0.5) = +0``), and
    IEEE 754-2019 minimum/maximum (``min(+0, -0) = -0``, nan propagates), whatever the order."""
    ref, spec = reference(op), OPS[op]
    e = symad.parse(text_of(op), Graph())
    names = list(e.variables)
    points = np.array(list(itertools.product(SPECIAL, repeat=len(names))))
    want = [ref(*p) for p in points.tolist()]
    for backend in BACKENDS:
        fn = e.compile(names, backend=backend)
        assert bits(fn.value(points)) == bits(want), backend
        assert bits([fn.value(p) for p in points]) == bits(want), backend
        if spec.commutative:  # so the argument order a DAG chooses cannot change a result
            assert bits(fn.value(points[:, ::-1])) == bits(want), backend


def test_min_max_of_signed_zeros_regression():
    """``1/min(0, -0)`` was -inf in Python and +inf in native code; ``max`` alike."""
    g = Graph()
    for text, want in (("1/min(x, y)", -inf), ("1/max(x, y)", inf)):
        e = symad.parse(text, g)
        for backend in BACKENDS:
            fn = e.compile(["x", "y"], backend=backend)
            for x, y in ((0.0, -0.0), (-0.0, 0.0)):
                assert fn.value(x=x, y=y) == want, (text, backend, x, y)
                assert fn.value(x=np.array([x, x]), y=np.array([y, y])).tolist() == [want, want], (text, backend)


def test_pow_half_at_minus_inf_regression():
    """``x^0.5`` at -inf was nan in Python batches (NumPy takes it as sqrt), inf elsewhere."""
    e = symad.parse("x^0.5", Graph())
    for backend in BACKENDS:
        fn = e.compile(backend=backend)
        assert fn.value(x=-inf) == inf and fn.value(x=np.array([-inf, -inf])).tolist() == [inf, inf], backend
        assert math.copysign(1, fn.value(x=np.array([-0.0]))[0]) == 1, backend


# ---------------------------------------------------------------- NumPy vs the C library
def sample(rng: np.random.Generator, n: int, op: str) -> np.ndarray:
    if op in ("asin", "acos"):
        return rng.uniform(-1, 1, n)
    scale = 10.0 ** rng.choice([-300, -20, -8, -3, -1, 0, 0, 0, 1, 1, 2, 3, 8, 20, 300], n)
    return rng.uniform(-1, 1, n) * scale * (rng.uniform(0, 3, n) if op == "pow" else 1)


@pytest.mark.parametrize("op", OPERATIONS)
def test_numpy_functions_give_the_c_library_bits(op):
    """Each op's NumPy function (batches, and points redone after a domain error) against its
    ``math`` one (the C library, as native code calls it) on 30000 inputs of many magnitudes,
    contiguous, strided and as scalars.  NumPy's own ``tanh`` is 1 ulp off on ~16% of them; on a
    CPU where NumPy uses other vector code (SVML with AVX-512), this names the ops to change."""
    rng = np.random.default_rng(7)
    spec = OPS[op]
    n = 30000
    args = [sample(rng, n, op) for _ in range(spec.arity)]
    if op == "pow":
        args[0] = np.abs(args[0])  # a negative base with a non-integer exponent: math.pow raises
        args[1] = rng.uniform(-40, 40, n)
    want, ok = [], []
    for xs in zip(*(a.tolist() for a in args)):
        try:
            want.append(spec.py(*xs))
            ok.append(True)
        except (ArithmeticError, ValueError):
            want.append(nan)
            ok.append(False)
    ok = np.array(ok)
    want = np.array(want)[ok]
    with np.errstate(all="ignore"):
        contiguous = np.asarray(spec.np(*args))[ok]
        table = np.stack(args, axis=1)
        strided = np.asarray(spec.np(*(table[:, k] for k in range(spec.arity))))[ok]
        firsts = zip(*(a[:3000].tolist() for a in args))
        scalars = np.array([spec.np(*map(np.float64, xs)) for xs in firsts])[ok[:3000]]
    assert_same_bits(op, [("contiguous", contiguous, want), ("strided", strided, want),
                          ("scalars", scalars, want[: len(scalars)])])


def assert_same_bits(op: str, forms: list) -> None:
    for form, got, ref in forms:
        differ = np.flatnonzero(np.array(bits(got)) != np.array(bits(ref)))
        assert not len(differ), f"{op} ({form}): {len(differ)} of {len(ref)} differ, e.g. " \
            f"{got[differ[0]]!r} != {ref[differ[0]]!r}"


@pytest.mark.parametrize("k", [0.5, 2.0, -1.0, -0.5, 1 / 3, 1.5, 3.0])
def test_numpy_pow_with_one_exponent_gives_the_c_library_bits(k):
    """NumPy computes a^2, a^-1, a^0.5 with one exponent for all bases as a*a, 1/a, sqrt(a):
    1 ulp off pow on ~0.1% of inputs.  Python batches raise a whole column to a constant
    power that way, and points redone in NumPy a number to a variable one."""
    x = np.abs(sample(np.random.default_rng(8), 30000, "exp"))
    c_pow = _libm("pow", 2)
    want = np.array([c_pow(v, k) for v in x.tolist()])
    with np.errstate(all="ignore"):
        column = np.stack([x, x], axis=1)[:, 0]
        assert_same_bits(f"pow(x, {k})", [
            ("array", OPS["pow"].np(x, k), want), ("strided", OPS["pow"].np(column, k), want),
            ("scalars", [OPS["pow"].np(np.float64(v), np.float64(k)) for v in x[:3000].tolist()], want[:3000])])


# ---------------------------------------------------------------- atan2's partials at tiny and huge points
def atan2_partials(x: float, y: float) -> tuple[float, float]:
    mpmath.mp.prec = 200
    X, Y = mpmath.mpf(x), mpmath.mpf(y)
    return float(-Y / (X * X + Y * Y)), float(X / (X * X + Y * Y))


def close(got: float, want: float, ulps: int = 4) -> bool:
    return got == want or abs(got - want) <= ulps * math.ulp(want)


ATAN2_POINTS = [(3e-170, 4e-170), (1.0, 1e200), (-2e300, 1e300), (5e-324, 1e-320), (1e-200, 3.0)]


@pytest.mark.parametrize("x, y", ATAN2_POINTS)
def test_atan2_partials_do_not_overflow(x, y):
    """x/(x² + y²) computed as is overflowed (-inf at x=3e-170, y=4e-170) or underflowed (-0 at
    x=1, y=1e200); scaled as hypot scales, the partials are within a few ulps of the exact ones."""
    want = atan2_partials(x, y)
    e = symad.parse("atan2(y, x)", Graph())
    for backend in BACKENDS:
        fn = e.compile(backend=backend)
        v, grad = fn.value_and_grad(x=x, y=y)
        assert v == math.atan2(y, x)
        assert all(map(close, grad, want)), (backend, grad.tolist(), want)
        _, grads = fn.value_and_grad(x=np.array([x] * 3), y=np.array([y] * 3))
        assert all(bits(row) == bits(grad) for row in grads), backend


@pytest.mark.parametrize("x, y", ATAN2_POINTS[:2])
@pytest.mark.slow
def test_atan2_partials_on_the_command_line(x, y):
    p = run("grad", "atan2(y, x)", "--at", f"x={x!r},y={y!r}", "--json")
    assert p.returncode == 0, p.stderr
    obj = json.loads(p.stdout)
    got = [float(obj["grad"]["x"]), float(obj["grad"]["y"])]
    assert all(map(close, got, atan2_partials(x, y))), (got, atan2_partials(x, y))
    assert not obj.get("warnings")


def test_the_c_library_element_by_element_where_numpy_runs_its_own_vector_code(monkeypatch):
    """With AVX-512 NumPy's ``exp``, ``log``, ``pow``... are SVML's, not the C library's: there symad
    calls ``math`` on each element, and NumPy's IEEE result where ``math`` raises."""
    monkeypatch.setattr(semantics, "numpy_vector_code", lambda: True)
    log = semantics.NumpyFunction("log", math.log)
    xs = np.array([-1.0, 0.0, -0.0, 1.0, 2.5, 1e-310, inf, nan])
    with np.errstate(all="ignore"):
        got = log(xs)
        assert bits(got) == bits([nan, -inf, -inf, 0.0, math.log(2.5), math.log(1e-310), inf, nan])
        assert isinstance(log(2.5), np.float64) and log(2.5) == math.log(2.5)
        assert log(xs.reshape(2, 4)).shape == (2, 4)
        powers = semantics._each_pow(np.array([0.0, -8.0, 10.0, 2.0, -2.0]), np.array([-1.0, 1 / 3, 400.0, 0.5, 3.0]))
    assert bits(powers) == bits([inf, nan, inf, math.pow(2.0, 0.5), -8.0])
