"""Gradients of sums kept as loops (symad.ad.gather) against the same text unrolled.

Each text is read twice: with the unrolling limit lowered, so its 40-term sum stays one loop
node whose gradient is one indexed ``each`` node, and with the default limit, so the sum is
written out and differentiated by the scalar sweep.  Values and gradients must agree to
rounding, bounded by the magnitudes of the terms added (:mod:`support.loops`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.loops import (
    assert_loop_matches_unrolled,
    loop_bodies,
    loop_value_and_grad,
    looping,
    parse_looped,
    term_scales,
)

import symad
from symad.ad.gather import indexed_gradient
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import SymadError
from symad.indexed_function import IndexedFunction

LOW, HIGH = 3, 42  # 40 terms: a loop under the lowered limit, written out under the default one
SPAN = (1, 46)  # every entry the bodies below reach: i-2 .. i+2, and 48-i .. (x[k] for k in SPAN)


def _point(seed: int, **extra: float) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    low, high = SPAN
    return {"x": (rng.uniform(-1.5, 1.5, high - low + 1), low), "y": float(rng.uniform(-2, 2)), **extra}


def _check(body: Callable[[str], str], seed: int, outside: str = "", outer: str = "", outer_bound: float = 1.0,
           point: dict[str, object] | None = None) -> None:
    """``{outer}sum(i = LOW..HIGH, body(i)){outside}`` looped and unrolled agree at a random point;
    ``outer_bound`` bounds the size of what multiplies the sum."""
    point = point or _point(seed)
    text = f"{outer}sum(i = {LOW}..{HIGH}, {body('i')}){outside}"
    value_scale, grad_scale = term_scales(body, LOW, HIGH, point)
    scaled = {name: outer_bound * s for name, s in grad_scale.items()}
    if "y" in point:  # a partial along a capture such as y is a second sum, of ∂term/∂y
        scaled["y"] = scaled.get("y", 0.0) + value_scale
    assert_loop_matches_unrolled(text, point, outer_bound * value_scale + 1.0 * bool(outside), scaled)


# Bodies with the references the gradient gathers: offsets, a reversed stride, captures, the index.
BODIES: dict[str, Callable[[str], str]] = {
    "offsets": lambda i: f"(x[{i}+1] - x[{i}-1])^2 + x[{i}+2]*x[{i}]",
    "rosenbrock": lambda i: f"100*(x[{i}+1] - x[{i}]^2)^2 + (1 - x[{i}])^2",
    "reversed": lambda i: f"x[48-{i}]*x[{i}] + sin(x[47-{i}])",
    "scalar capture": lambda i: f"sin(y)*x[{i}] + y^2*x[{i}+1]^2",
    "index as a number": lambda i: f"(x[{i}] - {i}/10)^2",
    "branches": lambda i: f"where(x[{i}] > 0, x[{i}+1], -x[{i}-1])*max(x[{i}], x[{i}+2]) + abs(x[{i}-2])",
    "smooth functions": lambda i: f"exp(-x[{i}]^2)*tanh(x[{i}+1]) + log(1 + x[{i}-1]^2)",
}


@pytest.mark.parametrize("name", list(BODIES))
def test_a_loop_and_its_unrolled_form_agree(name: str) -> None:
    for seed in range(3):
        _check(BODIES[name], seed)


def test_a_scalar_outside_and_an_entry_beside_the_sum() -> None:
    _check(BODIES["offsets"], 7, outer="sin(y)*", outside=" + x[1]*y + x[46]")


def test_two_sums_over_different_ranges_share_a_vector() -> None:
    point = _point(11)
    text = ("sum(i = 3..42, (x[i+1] - x[i])^2) + y*sum(i = 10..45, x[i]*x[i-9]) "
            "+ sum(i = 2..30, x[i]^3)")
    value, grad, f = loop_value_and_grad(text, point)
    assert f.spans["x"] == [(1, 45)]
    three = [lambda i: f"(x[{i}+1] - x[{i}])^2", lambda i: f"x[{i}]*x[{i}-9]", lambda i: f"x[{i}]^3"]
    ranges = [(3, 42), (10, 45), (2, 30)]
    value_scale, grad_scale = 0.0, {}
    for body, (low, high) in zip(three, ranges):
        v, g = term_scales(body, low, high, point)
        value_scale += 2 * v
        for name, s in g.items():
            grad_scale[name] = grad_scale.get(name, 0.0) + 2 * s
    grad_scale["y"] = value_scale
    assert_loop_matches_unrolled(text, point, value_scale, grad_scale)


def test_data_vectors_are_given_by_name_and_not_differentiated() -> None:
    rng = np.random.default_rng(5)
    point = _point(5)
    point["d"] = (rng.uniform(0.5, 2, 40), LOW)
    body = lambda i: f"d[{i}]*(x[{i}+1] - x[{i}])^2 + y*x[{i}]"  # noqa: E731
    value_scale, grad_scale = term_scales(body, LOW, HIGH, point)
    grad_scale["y"] = value_scale
    text = f"sum(i = {LOW}..{HIGH}, {body('i')})"
    assert_loop_matches_unrolled(text, point, value_scale, grad_scale, wrt=["x"])
    _, grad, f = loop_value_and_grad(text, point, wrt=["x"])
    assert f.wrt == ("x",) and set(f.data) == {"d", "y"}
    assert not any(name.startswith("d[") or name == "y" for name in grad)


# ---------------------------------------------------------------- random bodies from a small grammar

@settings(max_examples=100)
@given(body=loop_bodies(), seed=st.integers(0, 2**16))
def test_random_bodies_looped_and_unrolled_agree(body: Callable[[str], str], seed: int) -> None:
    with looping():
        expr = symad.parse(f"sum(i = 1..40, {body('i')})", Graph())
    assume(expr.graph.op[expr.id] == "sum")  # else the body simplified to something free of i
    _check(body, seed)


def test_a_capture_in_a_branch_arm() -> None:
    # once a KeyError: the branch shapes looked the loop node up in the op table
    _check(lambda i: f"where(x[{i}] > 0, x[{i}+1]*y, x[{i}])", 3)


def test_a_capture_inside_another_capture() -> None:
    # once counted twice: the body's sweep ran on from the capture sin(y) to the capture y
    _check(lambda i: f"sin(y) + x[{i}]*y", 3)


# ---------------------------------------------------------------- the gradient's own structure


def test_the_gradient_is_one_each_node_with_guards_at_the_edges() -> None:
    expr = parse_looped("sum(i = 3..42, x[i+1]*x[i-1])")
    graph = expr.graph
    scalars, vectors = indexed_gradient(graph, expr.id)
    assert scalars == {}
    part = vectors["x"]
    assert (part.low, part.high) == (2, 43)
    assert graph.op[part.node] == "each" and binders.range_of(graph, part.node) == (0, 2, 43)
    from symad.core.printing import to_infix
    text = to_infix(graph, binders.body_of(graph, part.node), index_names=["k"])
    # x[i+1] reaches k = 4..43, so i = k-1 needs 4 <= k; x[i-1] reaches k = 2..41
    assert text == "where(4 <= k, x[k - 2], 0) + where(k <= 41, x[k + 2], 0)"


def test_a_gradient_node_does_not_grow_with_the_range() -> None:
    sizes = []
    for n in (20_000, 2_000_000):
        g = Graph()
        expr = symad.parse(f"sum(i = 1..{n}, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)", g)
        indexed_gradient(g, expr.id)
        sizes.append(len(g))
    assert sizes[0] == sizes[1] < 200


# Entries at a stride: iteration i reaches x[k] where a divides k - c (the extended Rosenbrock
# function reads its pairs x[2i-1], x[2i]); 40 terms at strides up to 3 reach x[1..122].
STRIDED: dict[str, Callable[[str], str]] = {
    "extended rosenbrock": lambda i: f"100*(x[2*{i}] - x[2*{i}-1]^2)^2 + (1 - x[2*{i}-1])^2",
    "three interleaved": lambda i: f"x[3*{i}]*x[3*{i}-1] - x[3*{i}-2]^2*({i}/10) + sin(y*x[3*{i}+1])",
    "finer and coarser": lambda i: f"exp(x[2*{i}+1]/4 - x[4*{i}]/8)",  # x[4i]'s term reads x[2i+1]: refused
    "reversed": lambda i: f"x[122-2*{i}]^2*x[121-2*{i}]",
    "beside a unit stride": lambda i: f"x[2*{i}]^2 + (x[{i}+1] - x[{i}])^2",
}


@pytest.mark.parametrize("name", [n for n in STRIDED if n != "finer and coarser"])
def test_entries_at_a_stride_gather_where_the_stride_divides(name: str) -> None:
    rng = np.random.default_rng(7)
    point = {"x": (rng.uniform(-1.5, 1.5, 170), 1), "y": 0.7}
    text = f"sum(i = {LOW}..{HIGH}, {STRIDED[name]('i')})"
    value_scale, grad_scale = term_scales(STRIDED[name], LOW, HIGH, point)
    if "y" in STRIDED[name]("i"):
        grad_scale["y"] = grad_scale.get("y", 0.0) + value_scale
    assert_loop_matches_unrolled(text, point, value_scale, grad_scale)


def test_a_strided_gradient_is_one_indexed_line_and_its_hessian_is_banded() -> None:
    expr = parse_looped("sum(i = 1..40, 100*(x[2*i] - x[2*i-1]^2)^2 + (1 - x[2*i-1])^2)")
    _, vectors = indexed_gradient(expr.graph, expr.id)
    assert (vectors["x"].low, vectors["x"].high) == (1, 80)
    f = IndexedFunction(expr)
    ((label, body, span),) = f.gradient_text()
    assert (label, span) == ("x[k]", (1, 80)) and "floor" in body
    rows, cols = f.hessian_pattern()
    assert rows.size == 80 + 40  # the diagonal and each pair's x[2i-1], x[2i]: no entry across pairs
    x = np.linspace(-1, 1, 80)
    dense = f.hessian({"x": x})
    odd, even = x[0::2], x[1::2]  # x[2i-1], x[2i]
    want = np.zeros((80, 80))
    want[0::2, 0::2][np.diag_indices(40)] = 1200 * odd**2 - 400 * even + 2
    want[1::2, 1::2][np.diag_indices(40)] = 200
    want[np.arange(0, 80, 2), np.arange(1, 80, 2)] = want[np.arange(1, 80, 2), np.arange(0, 80, 2)] = -400 * odd
    np.testing.assert_allclose(dense, want, rtol=1e-13, atol=1e-12)


def test_a_stride_the_others_do_not_share_is_refused_with_the_reason() -> None:
    expr = parse_looped(f"sum(i = 1..40, {STRIDED['finer and coarser']('i')})")
    with pytest.raises(SymadError, match=r"x\[4\*i\] \(a stride of 4\) needs the other entries of i in its term at "
                                         r"strides that 4 divides: x\[\.\.\.\] is at a stride of 2"):
        indexed_gradient(expr.graph, expr.id)


def _inner_stride(a: np.ndarray, x: np.ndarray) -> tuple[float, np.ndarray]:
    """sum(i = 1..10, sum(j = 1..20, A[i, 2*j]*x[2*j]^2*x[i + 60])) and its gradient, by hand
    (a and x indexed from 1 at position 1: a[i, c] is A[i, c])."""
    value, grad = 0.0, np.zeros_like(x)
    for i in range(1, 11):
        for j in range(1, 21):
            c = a[i, 2 * j]
            value += c * x[2 * j] ** 2 * x[i + 60]
            grad[2 * j] += 2 * c * x[2 * j] * x[i + 60]
            grad[i + 60] += c * x[2 * j] ** 2
    return value, grad


def _outer_stride(a: np.ndarray, x: np.ndarray) -> tuple[float, np.ndarray]:
    """sum(i = 1..10, sum(j = 1..20, A[2*i, j]*x[2*i]*x[2*i - 1]*x[j + 60])), by hand."""
    value, grad = 0.0, np.zeros_like(x)
    for i in range(1, 11):
        for j in range(1, 21):
            c = a[2 * i, j]
            value += c * x[2 * i] * x[2 * i - 1] * x[j + 60]
            grad[2 * i] += c * x[2 * i - 1] * x[j + 60]
            grad[2 * i - 1] += c * x[2 * i] * x[j + 60]
            grad[j + 60] += c * x[2 * i] * x[2 * i - 1]
    return value, grad


@pytest.mark.parametrize("text, by_hand", [
    ("sum(i = 1..10, sum(j = 1..20, A[i, 2*j]*x[2*j]^2*x[i + 60]))", _inner_stride),  # the stride inside
    ("sum(i = 1..10, sum(j = 1..20, A[2*i, j]*x[2*i]*x[2*i - 1]*x[j + 60]))", _outer_stride),  # outside
], ids=["inner", "outer"])
def test_a_stride_inside_nested_loops_keeps_the_other_indices(text: str, by_hand) -> None:
    """The entry solved for k is rewritten whole: its other indices (the other loop's, renamed
    for the gradient's sums) must follow, or A[i, 2*j] would read A[k, ...]."""
    rng = np.random.default_rng(3)
    x = np.concatenate([[np.nan], rng.uniform(-1, 1, 81)])  # x[k] at position k
    a = np.full((61, 61), np.nan)
    a[1:, 1:] = rng.uniform(-1, 1, (60, 60))
    with looping(4):  # both sums loops (the inner one past binders.UNROLL_INSIDE_LOOP terms)
        expr = symad.parse(text, Graph())
    assert [expr.graph.op[n] for n in expr.graph.reachable([expr.id])].count("sum") == 2
    f = symad.compile(expr, wrt=["x"])  # A is data, given by name
    (xl, xh), = f.spans["x"]
    (al, ah), (bl, bh) = f.spans["A"]
    value, grad = f.value_and_grad({"x": x[xl:xh + 1], "A": a[al:ah + 1, bl:bh + 1]})
    want_value, want_grad = by_hand(a, x)
    assert value == pytest.approx(want_value, rel=1e-13)
    np.testing.assert_allclose(grad, want_grad[xl:xh + 1], rtol=1e-13, atol=1e-13)


def test_a_stride_beside_an_entry_of_a_loop_inside_its_term_is_refused_clearly() -> None:
    """Solving for the inner of two loops renames the levels; an entry that also reads a third
    loop's index, inside the term, would be left at a stale level (a KeyError deep in the code
    generator before this check)."""
    with looping(4):
        expr = symad.parse("sum(i = 1..10, sum(j = 1..20, x[2*j]*sum(l = 1..20, A[2*j, l]*x[l + 60])*x[i + 80]))",
                           Graph())
    with pytest.raises(SymadError, match="beside an entry that also uses the index of a loop inside the term"):
        indexed_gradient(expr.graph, expr.id)
