"""Derivatives in the tails (docs/reference/numerics.md, "Derivatives against mpmath"): wherever an op's
true partial is a finite double, symad's is within a few ulp of it, in every backend; where the
op is not differentiable, the documented choice.  One test per defect once found, the sweep of
every op against mpmath (tests/support/derivatives.py), and a property test of the stable
functions at masked (−inf) and extreme arguments."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.derivatives import CHOICES, EXACT, KNOWN, arguments, error_ulps, operations, points, sweep, text_of
from support.properties import property_test

import symad
from symad.backends.tape import Tape
from symad.native import jit as native

inf = math.inf
BACKENDS = ["auto", "python"] + (["native"] if native.available() else [])
BOUND = 4.0  # ulp
BOUNDS = {"cbrt": 7.0}  # the C library's cbrt is within 2.8 ulp, and cbrt' = 1/(3·cbrt²) doubles that


def every_backend(text: str, names: list[str], point: list[float]) -> list[tuple[str, list[float]]]:
    """The gradient at ``point`` from the tape (a one-shot call) and each backend, at a point (its
    first call and a later one) and in a batch."""
    e = symad.parse(text, symad.Graph())
    _, grad = Tape(e.graph, e.id, [e.graph.var(n) for n in names]).value_and_grad(list(point))
    out = [("tape", [float(g) for g in grad])]
    for backend in BACKENDS:
        fn = symad.compile(text, names, backend=backend)
        for form in ("first", "again"):
            out.append((f"{backend} {form}", [float(g) for g in fn.grad(point)]))
        _, batch = fn.value_and_grad(np.array([point, point]))
        out.append((f"{backend} batch", [float(g) for g in batch[1]]))
    return out


def within(got: float, exact: mpmath.mpf, ulps: float = BOUND) -> bool:
    err = error_ulps(got, exact)
    return err is not None and err[0] <= ulps


# ---------------------------------------------------------------- the defects, each in every backend
def test_a_masked_logsumexp_entry_has_gradient_0():
    """logsumexp(-inf, -inf, 1) = 1 had the gradient (nan, nan, 1): logaddexp(-inf, -inf)'s
    partials were sigmoid(nan)."""
    for form, grad in every_backend("logsumexp(x, y, z)", ["x", "y", "z"], [-inf, -inf, 1.0]):
        assert grad == [0.0, 0.0, 1.0], form
    for form, grad in every_backend("logsumexp(x, y, z)", ["x", "y", "z"], [-inf, 1.0, -inf]):
        assert grad == [0.0, 1.0, 0.0], form


@pytest.mark.parametrize("a", [-inf, inf])
def test_logaddexp_of_equal_infinities_splits_evenly(a):
    for form, grad in every_backend("logaddexp(x, y)", ["x", "y"], [a, a]):
        assert grad == [0.5, 0.5], form


@pytest.mark.parametrize("x", [-40.0, -100.0, -700.0, -745.0])
def test_expm1_derivative_below_minus_37(x):
    """expm1' was expm1(x) + 1: 0 where expm1(x) rounds to -1, though exp(x) is a normal float."""
    for form, (g,) in every_backend("expm1(x)", ["x"], [x]):
        assert g == math.exp(x), form


@pytest.mark.parametrize("x", [5.0, -20.0, 40.0, 300.0, -360.0])
def test_tanh_derivative_in_its_tails(x):
    """tanh' was 1 - tanh²: 100 ulp off at 5, 0 beyond |x| ≈ 19 (sech² is normal to 354, subnormal to 372)."""
    with mpmath.workprec(200):
        exact = mpmath.sech(x) ** 2
        for form, (g,) in every_backend("tanh(x)", ["x"], [x]):
            assert within(g, exact), (form, g, exact)


def test_hypot_gradient_at_the_origin_is_0():
    for form, grad in every_backend("hypot(x, y)", ["x", "y"], [0.0, 0.0]):
        assert grad == [0.0, 0.0], form


# (text, variables, point, exact partials in mpmath): each rule lost digits before
TAILS = [
    ("max(x, y, z)", ["x", "y", "z"], [-inf, -inf, 1.0], lambda x, y, z: [0, 0, 1]),  # a masked max: nan
    ("asin(x)", ["x"], [1 - 2.0**-27], lambda x: [1 / mpmath.sqrt(1 - x * x)]),  # 1 - x² cancelled: 1e7 ulp
    ("acos(x)", ["x"], [-1 + 2.0**-30], lambda x: [-1 / mpmath.sqrt(1 - x * x)]),
    ("atan(x)", ["x"], [1e155], lambda x: [1 / (1 + x * x)]),  # 1 + x² overflowed: 0, not 1e-310
    ("erf(x)", ["x"], [26.1], lambda x: [2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x * x)]),  # x² rounded: 300 ulp
    ("erfc(x)", ["x"], [-5.3], lambda x: [-2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x * x)]),
    ("x^(1/3)", ["x"], [1e300], lambda x: [mpmath.mpf(1 / 3) * x ** (mpmath.mpf(1 / 3) - 1)]),  # 1/3 - 1 rounded
    ("x^y", ["x", "y"], [1e-300, 0.1], lambda x, y: [y * x ** (y - 1), x**y * mpmath.log(x)]),
    ("x^y", ["x", "y"], [2.0, -inf], lambda x, y: [mpmath.mpf(0), mpmath.mpf(0)]),  # b·a^(b−1) = −inf·0
    ("logaddexp(x, y)", ["x", "y"], [519.7645601646052, -1.000000001118612],  # a - b rounded: 215 ulp off
     lambda x, y: [1 / (1 + mpmath.exp(y - x)), 1 / (1 + mpmath.exp(x - y))]),
    ("sinc(x)", ["x"], [0.1], lambda x: [(x * mpmath.cos(x) - mpmath.sin(x)) / (x * x)]),  # cancelled: 41 ulp
    ("sinc(x)", ["x"], [0.099], lambda x: [(x * mpmath.cos(x) - mpmath.sin(x)) / (x * x)]),  # series cut: 30
    ("atan2(y, x)", ["x", "y"], [inf, -2.0], lambda x, y: [mpmath.mpf(0), mpmath.mpf(0)]),  # inf/inf
]


@pytest.mark.parametrize("text, names, point, exact", TAILS, ids=[f"{t[0]} at {t[2]}" for t in TAILS])
def test_partials_keep_their_digits_in_the_tails(text, names, point, exact):
    with mpmath.workprec(300):
        want = exact(*map(mpmath.mpf, point))
        for form, grad in every_backend(text, names, point):
            assert all(within(g, w) for g, w in zip(grad, want)), (form, grad, [float(w) for w in want])


# ---------------------------------------------------------------- every op against mpmath
def test_every_op_has_exact_partials_in_the_sweep():
    assert set(EXACT) == set(operations()), set(EXACT) ^ set(operations())
    assert set(CHOICES) | set(KNOWN) <= set(operations())


@pytest.mark.parametrize("op", operations())
def test_every_op_within_a_few_ulp_over_its_domain(op):
    worst = sweep(op)
    assert worst.compared >= 100, worst
    assert worst.ulps <= BOUNDS.get(op, BOUND), f"{op}: {worst.ulps:.3g} ulp at {worst.at} (partial {worst.partial})"
    assert not worst.wrong_choices, f"{op}: not the documented choice at {worst.wrong_choices[:3]}"
    assert op not in CHOICES or worst.choices, f"{op}: the sweep never reached a point of its choice"


def bits(values) -> list:
    a = np.asarray(values, dtype=np.float64)
    return np.where(np.isnan(a), -1, a.view(np.int64)).tolist()


@pytest.mark.parametrize("op", operations())
def test_every_backend_gives_the_sweeps_bits(op):
    """The sweep runs Python code on NumPy batches; the tape (floats, then arrays) and native code
    give its bits at every one of its points, so the table holds for every backend."""
    names, pts = arguments(op), points(op)
    e = symad.parse(text_of(op), symad.Graph())
    with np.errstate(all="ignore"):
        _, want = symad.compile(e, names, backend="python").value_and_grad(pts)
        tape = Tape(e.graph, e.id, [e.graph.var(n) for n in names])
        _, columns = tape.value_and_grad(list(pts.T))
        got = {"tape batch": np.column_stack([np.broadcast_to(c, len(pts)) for c in columns])}
        got["tape point"] = np.array([tape.value_and_grad(p)[1] for p in pts[::7].tolist()])
        if native.available():
            got["native"] = symad.compile(e, names, backend="native").value_and_grad(pts)[1]
    for form, grads in got.items():
        ref = want[::7] if form == "tape point" else want
        assert bits(grads) == bits(ref), form


# ---------------------------------------------------------------- masked and extreme stable functions
def _logsumexp(*xs: mpmath.mpf) -> mpmath.mpf:
    return mpmath.log(mpmath.fsum(mpmath.exp(x) for x in xs))


entry = st.one_of(st.just(-inf), st.floats(-800, 800, allow_nan=False, allow_infinity=False))


@property_test(max_examples=60)
@given(st.lists(entry, min_size=2, max_size=5).filter(lambda xs: any(x > -inf for x in xs)))
def test_masked_logsumexp_against_mpmath(xs):
    """The gradient of logsumexp with some entries -inf (masked): exactly 0 for those, and
    exp(x_i - logsumexp) for the others, against mpmath at 300 bits (exact far below an ulp).

    The bound is float64's, not the oracle's: logsumexp of n entries is a fold of n - 1
    logaddexps, each partial within 4 ulp, and each fold's value rounded, by up to |v|/2 ulp,
    which moves a small partial exp(x_i - v) by as much relatively."""
    names = [f"x{i}" for i in range(len(xs))]
    fn = symad.compile(f"logsumexp({', '.join(names)})", names, backend="python")
    value, grad = fn.value_and_grad(xs)
    n, scale = len(xs), max(1.0, *(abs(x) for x in xs if x > -inf))
    with mpmath.workprec(300):
        total = _logsumexp(*(mpmath.mpf(x) for x in xs if x > -inf))
        assert abs(value - total) <= n * scale * 2.0**-52, (xs, value, total)
        for x, g in zip(xs, grad.tolist()):
            if x == -inf:
                assert g == 0.0, (xs, grad)
            else:
                assert within(g, mpmath.exp(mpmath.mpf(x) - total), n * (BOUND + scale)), (xs, grad)


extreme = st.one_of(st.sampled_from([-inf, inf, -800.0, 800.0, -745.0, 709.0, -40.0, 40.0]),
                    st.floats(-800, 800, allow_nan=False))


@property_test(max_examples=80)
@given(extreme, st.sampled_from(["sigmoid", "softplus", "log_sigmoid", "tanh", "erf", "expm1"]))
def test_stable_functions_at_extreme_arguments_against_mpmath(x, op):
    fn = symad.compile(f"{op}(x)", ["x"], backend="python")
    value, (g,) = fn.value_and_grad([x])
    if not math.isfinite(value):
        return
    with mpmath.workprec(300):
        exact = EXACT[op][0](mpmath.mpf(x))
        assert within(float(g), mpmath.mpf(exact)), (op, x, float(g), exact)
