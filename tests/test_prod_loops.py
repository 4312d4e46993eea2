"""A prod kept as a loop: its value, gradient and Hessian against exact rational arithmetic, with
factors equal to 0 too, inside a sum, from Python and from the command line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from mpmath import mp, mpf
from support.cli_helpers import run

import symad
from symad.core.dag import Graph

EPS = np.finfo(float).eps
N = 350  # past the unrolling threshold: one prod node


def _factors(x: np.ndarray, n: int) -> np.ndarray:
    return x / n + 1.0  # the body's own steps, so the same rounded factors


def _exact_partials(f: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """∂P/∂x_k and ∂²P/∂x_j∂x_k of P = Π (x_i/n + 1) over the rounded factors ``f``, from prefix and
    suffix products at 400 bits (each product at most N roundings of 2^-400: far below a double's
    last bit), rounded to doubles at the end."""
    size = len(f)
    with mp.workprec(400):
        v = [mpf(float(t)) for t in f]
        before = [mpf(1)]
        for t in v:
            before.append(before[-1] * t)
        after = [mpf(1)] * (size + 1)
        for k in range(size - 1, -1, -1):
            after[k] = after[k + 1] * v[k]
        grad = np.array([float(before[k] * after[k + 1] / n) for k in range(size)])
        hess = np.zeros((size, size))
        for j in range(size):
            between = mpf(1)
            for k in range(j + 1, size):
                hess[j, k] = hess[k, j] = float(before[j] * between * after[k + 1] / (n * n))
                between *= v[k]
    return grad, hess


def _close(ours: np.ndarray, want: np.ndarray, terms: int) -> None:
    """Each entry within (terms + 4) rounding errors of the exact value, relative to the largest."""
    bound = (terms + 4) * EPS * np.abs(want).max()
    assert np.abs(ours - want).max() <= bound


@pytest.fixture(scope="module")
def product() -> symad.IndexedFunction:
    f = symad.compile(f"prod(i = 1..{N}, 1 + x[i]/{N})")
    assert f.graph.op[f.root] == "prod"
    return f


def test_value_gradient_and_hessian_are_the_exact_ones_to_rounding(product) -> None:
    x = np.random.default_rng(1).uniform(-40, 40, N)
    f = _factors(x, N)
    value, grad = product.value_and_grad({"x": x})
    exact_grad, exact_hess = _exact_partials(f, N)
    with mp.workprec(400):
        exact_value = float(math.prod((mpf(float(t)) for t in f), start=mpf(1)))
    assert abs(value - exact_value) <= (N + 2) * EPS * abs(value)
    _close(grad, exact_grad, 2 * N)
    hess = product.hessian({"x": x})
    _close(hess, exact_hess, 2 * N)
    p = np.random.default_rng(2).standard_normal(N)
    assert np.abs(product.hessp({"x": x}, p) - hess @ p).max() <= 4 * N * EPS * np.abs(hess).max() * np.abs(p).sum()


@pytest.mark.parametrize("zeros", [(7,), (7, 200), (3, 7, 200)])
def test_factors_equal_to_zero_give_the_exact_gradient_and_hessian(product, zeros) -> None:
    """No 0/0: the product of the other factors, in cases on how many factors are 0; where the
    exact value is 0 the derivative is exactly 0."""
    x = np.random.default_rng(3).uniform(-40, 40, N)
    x[list(zeros)] = -N  # x/N + 1 == 0 exactly
    f = _factors(x, N)
    assert (f == 0).sum() == len(zeros)
    value, grad = product.value_and_grad({"x": x})
    exact_grad, exact_hess = _exact_partials(f, N)
    assert value == 0.0
    _close(grad, exact_grad, 2 * N)
    assert (grad[exact_grad == 0] == 0).all()
    hess = product.hessian({"x": x})
    _close(hess, exact_hess, 2 * N)
    assert (hess[exact_hess == 0] == 0).all()


def test_the_loop_equals_the_written_out_product_to_rounding(product) -> None:
    x = np.random.default_rng(4).uniform(-40, 40, N)
    written = symad.compile("*".join(f"(1 + x{k}/{N})" for k in range(1, N + 1)))
    value, grad = written.value_and_grad([float(v) for v in x])
    ours = product.value_and_grad({"x": x})
    assert ours[0] == pytest.approx(value, rel=2 * N * EPS)
    assert np.abs(ours[1] - grad).max() <= 4 * N * EPS * np.abs(grad).max()


def test_a_prod_inside_a_sum_against_its_gradient_by_hand() -> None:
    text = "sum(j = 1..400, y[j]*prod(i = 1..20, 1 + x[i]*y[j]/20))"
    f = symad.compile(text)
    assert "prod" in f.graph.op
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-1, 1, 20), rng.uniform(-1, 1, 400)
    factors = 1 + np.outer(y, x) / 20  # [j, i]
    p = factors.prod(axis=1)
    others = p[:, None] / factors
    value, grad = f.value_and_grad({"x": x, "y": y})
    assert value == pytest.approx((y * p).sum(), rel=1e-13)
    gx = (y[:, None] * others * y[:, None] / 20).sum(axis=0)
    gy = p + y * (others * x[None, :] / 20).sum(axis=1)
    assert np.allclose(grad[:20], gx, rtol=1e-12, atol=1e-15) and np.allclose(grad[20:], gy, rtol=1e-12, atol=1e-15)


def test_from_python_the_same_node_as_the_text() -> None:
    g = Graph()
    x, i = symad.indexed("x", g), symad.index("i", 1, 1000)
    built = symad.prod(i, 1 + x[i] / 1000)
    text = symad.parse("prod(i = 1..1000, 1 + x[i]/1000)", g)
    assert built.id == text.id and g.op[built.id] == "prod"
    vector = symad.vector("x", 1000)  # NumPy-style: np.prod(1 + x/1000) is the same node
    as_array = np.prod(1 + vector / 1000)
    assert as_array.id == symad.parse("prod(i = 1..1000, 1 + x[i]/1000)", as_array.graph).id


def test_the_command_line_and_explain_show_a_prods_gradient() -> None:
    text = "prod(i = 1..1000, 1 + x[i]/1000)"
    p = run("grad", text, "--at", "x=0.5")
    assert p.returncode == 0, p.stderr
    first = p.stdout.splitlines()
    value = 1.0005 ** 1000
    assert float(first[0].split("=")[1]) == pytest.approx(value, rel=1e-12)
    assert float(first[1].split("=")[1]) == pytest.approx(value / 1.0005 / 1000, rel=1e-12)
    shown = json.loads(run("explain", text, "--at", "x=0.5", "--json").stdout)
    loop, = shown["loops"]
    assert loop["factor"] == pytest.approx(value / 1.0005, rel=1e-12) and loop["scale"] == loop["factor"]
    (term,), = shown["gather"].values()
    assert term["value"] == pytest.approx(value / 1.0005 / 1000, rel=1e-12)
    assert "its factor receives z̄1 = 1 times the product of the other factors" in run("explain", text, "--at",
                                                                                        "x=0.5").stdout


@pytest.mark.parametrize("text", [
    "prod(i = 1..20000, 1 + sin(x[i])/20000) + sum(i = 1..19999, (x[i+1] - x[i])^2)",
    "prod(i = 1..9000, x[i+1]*exp(-x[i]^2/9000))",  # an entry past the loop's first one: a clamped edge
])
def test_a_prods_factors_as_machine_code_give_numpys_bits(text) -> None:
    """A top-level prod's factors run as a compiled map, multiplied in the canonical order: the
    bits of NumPy's evaluation (backend python), value and gradient, with and without a zero."""
    fast, plain = symad.compile(text), symad.compile(text, backend="python")
    x = np.random.default_rng(6).uniform(-1, 1, fast.size)
    for point in (x, np.where(np.arange(fast.size) == 17, 0.0, x)):
        a, b = fast.value_and_grad(point), plain.value_and_grad(point)
        assert a[0].hex() == b[0].hex() and a[1].tobytes() == b[1].tobytes()


@pytest.mark.parametrize("first, second", [(1e-300, 1e-100), (1e300, 1e10), (1e-322, 0.33), (np.inf, 2.0)])
def test_a_product_past_the_normal_doubles_gives_nan_partials_not_wrong_ones(first, second) -> None:
    """P/f_i is the product of the others only while P is a normal double: an underflowed (0),
    overflowed (inf) or subnormal product, or an inf factor, gives NaN, never a wrong number."""
    f = symad.compile("prod(i = 1..400, x[i])")
    x = np.ones(400)
    x[0], x[1] = first, second
    assert np.isnan(f.value_and_grad(x)[1]).all()
    x[0] = 0.5  # a normal product: the others' product
    assert f.value_and_grad(x)[1][:3].tolist() == [second, 0.5, 0.5 * second]


def test_explain_reads_other_iterations_of_a_prod_whose_factor_shown_is_zero() -> None:
    """The iteration shown has the product of the other factors 0 (a zero factor elsewhere) and the
    gather reads the next iteration: its own product of the others, not a division by 0."""
    x = [1, 2, 3, 3, 5, 6, *range(7, 401)]  # x[4] - x[3] = 0: one zero factor
    at = "x=[" + ",".join(map(str, x)) + "]"
    text = "prod(i = 1..399, x[i+1] - x[i])"
    for k in (3, 4, 6):
        p = run("explain", text, "--at", at, "--iteration", str(k), "--json")
        assert p.returncode == 0, p.stderr
        shown = json.loads(p.stdout)
        (entry, terms), = shown["gather"].items()
        assert sum(t["value"] for t in terms) == shown["gradient"][entry]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """The same bits, a NaN matching a NaN (of either sign: the project's cross-backend rule)."""
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    nan = np.isnan(a)
    return bool((nan == np.isnan(b)).all() and a[~nan].tobytes() == b[~nan].tobytes())


@pytest.mark.parametrize("text", [
    "sum(i = 1..3000, x[i]*prod(j = 1..20, 1 + x[i]*y[j]/20))",
    "sum(i = 1..3000, prod(j = 1..40, x[i] - y[j]))",
    "sum(i = 2..3000, prod(j = 1..30, x[i-1]*y[j] + x[i]))^2",
    "sum(i = 1..200, sin(x[i])*prod(j = 1..8192, 1 + y[j]*x[i]/8192))",  # one whole block of factors
])
def test_a_prod_inside_a_body_as_machine_code_gives_numpys_bits(text) -> None:
    """A product inside a loop's body runs in the body's machine code (it ran in NumPy: 5x slower),
    one lane from 1.0, the order of a block of blocked_prod: NumPy's bits, value and gradient,
    with zero, NaN and inf factors."""
    from symad.core.binders import has_scoped
    from symad.schedule.loop_nest import loop_nest

    e = symad.parse(text, Graph())
    top = next(n for n in e.graph.reachable([e.id]) if e.graph.op[n] == "sum")
    assert has_scoped(e.graph, [e.id]) and loop_nest(e.graph, top, symad.compile(text).spans)  # compiled
    fast, plain = symad.compile(text), symad.compile(text, backend="python")
    rng = np.random.default_rng(4)
    for trial in range(4):
        x = rng.uniform(-1.5, 1.5, fast.size)
        x[::7] = 0.0 if trial == 1 else x[::7]
        x[5] = np.nan if trial == 2 else x[5]
        x[3] = np.inf if trial == 3 else x[3]
        (a, ga), (b, gb) = fast.value_and_grad(x), plain.value_and_grad(x)
        assert _same(a, b) and _same(ga, gb), (text, trial)


def test_a_prod_inside_of_more_than_a_block_of_factors_stays_in_numpy() -> None:
    from symad.schedule.loop_nest import NotCompiled, loop_nest

    text = "sum(i = 1..10, prod(j = 1..8193, 1 + x[i]*y[j]/9000))"
    e = symad.parse(text, Graph())
    top = next(n for n in e.graph.reachable([e.id]) if e.graph.op[n] == "sum")
    with pytest.raises(NotCompiled, match="a product inside of more than 8,192 factors"):
        loop_nest(e.graph, top, symad.compile(text).spans)
