"""The NumPy evaluator of loops (symad.backends.arrays): the canonical order of a sum's terms,
entries read over a range, and a loop's value against its terms computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

import symad
from symad.backends.arrays import BLOCK, ArrayProgram, blocked_sum
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import PointError


def reference_sum(terms: np.ndarray) -> float:
    """The documented order, one float at a time: per block of BLOCK terms two lanes from 0.0
    (even offsets, odd offsets) added left to right, then lane plus lane; the blocks' sums by NumPy."""
    blocks = []
    for start in range(0, len(terms), BLOCK):
        even = odd = 0.0
        for k, t in enumerate(terms[start:start + BLOCK].tolist()):
            if k % 2:
                odd += t
            else:
                even += t
        blocks.append(even + odd)
    if not blocks:
        return 0.0
    return float(np.add.reduce(np.array(blocks))) if len(blocks) > 1 else blocks[0]


SIZES = [0, 1, 2, 3, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5]


@pytest.mark.parametrize("n", SIZES)
def test_blocked_sum_is_the_documented_order_to_the_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    # magnitudes spread over many binades, so that another order gives other bits
    terms = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9, n)
    got = blocked_sum(terms)
    assert type(got) is float
    assert got == reference_sum(terms) or (np.isnan(got) and np.isnan(reference_sum(terms)))


def test_these_terms_tell_orders_apart() -> None:
    # the test above can fail: the same terms left to right, or by NumPy's own sum, give other bits
    n = 3 * BLOCK + 5
    rng = np.random.default_rng(n)
    terms = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9, n)
    plain = 0.0
    for t in terms.tolist():
        plain += t
    assert len({blocked_sum(terms), plain, float(terms.sum())}) == 3


def reference_lanes(terms: np.ndarray, lanes: int) -> float:
    """One block in ``lanes`` lanes, one float at a time: lane l adds the terms at offsets l, l + lanes, ...
    from 0.0, then the lanes as a tree of adjacent pairs."""
    sums = [0.0] * lanes
    for k, t in enumerate(terms.tolist()):
        sums[k % lanes] += t
    while len(sums) > 1:
        sums = [sums[k] + sums[k + 1] for k in range(0, len(sums), 2)]
    return sums[0]


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 15, 16, 17, 1000, BLOCK])
def test_a_sum_inside_a_loop_adds_in_eight_lanes(n: int) -> None:
    rng = np.random.default_rng(n)
    terms = rng.standard_normal((3, n)) * 10.0 ** rng.integers(-8, 9, (3, n))
    got = blocked_sum(terms, 8)
    assert np.array_equal(got, [reference_lanes(row, 8) for row in terms])
    if n >= 1000:  # another count of lanes is another order
        assert not np.array_equal(got, blocked_sum(terms, 2))


def test_blocked_sum_of_special_values() -> None:
    assert blocked_sum(np.array([])) == 0.0
    assert np.isnan(blocked_sum(np.array([1.0, np.nan, 2.0])))
    assert blocked_sum(np.array([np.inf, 1.0])) == np.inf
    with np.errstate(invalid="ignore"):
        assert np.isnan(blocked_sum(np.array([np.inf, -np.inf])))


def _program(text: str) -> tuple[Graph, int, ArrayProgram]:
    graph = Graph()
    root = symad.parse(text, graph).id
    assert binders.is_binder(graph, root) or binders.has_scoped(graph, [root])
    return graph, root, ArrayProgram(graph, [root])


N = 3 * BLOCK + 5  # over UNROLL_MAX_TERMS, so every sum below stays a loop


def test_a_loop_adds_its_terms_in_the_canonical_order() -> None:
    graph, root, program = _program(f"sum(i = 1..{N}, x[i]^2*y + x[i+1])")
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(N + 1), 0.75
    (value,) = program.run({graph.var("y"): y}, {"x": (x, 1)})
    terms = x[:-1] * x[:-1] * y + x[1:]
    assert value == reference_sum(terms)


def test_entries_with_offsets_and_reversed_strides_read_the_right_slices() -> None:
    # sum(i, i * x[i + 2] * x[N + 1 - i]): the index as a number, a shift, stride -1
    graph, root, program = _program(f"sum(i = 1..{N}, i*x[i+2]*x[{N + 1}-i])")
    rng = np.random.default_rng(2)
    x = rng.standard_normal(N + 2)  # x[1..N+2]
    (value,) = program.run({}, {"x": (x, 1)})
    i = np.arange(1, N + 1)
    assert value == reference_sum(i * x[i + 1] * x[N - i])


def test_a_stride_of_two_reads_every_other_entry() -> None:
    graph, root, program = _program(f"sum(i = 1..{N}, x[2*i - 1])")
    x = np.arange(1.0, 2 * N)  # x[1..2N-1] = 1..2N-1
    (value,) = program.run({}, {"x": (x, 1)})
    assert value == reference_sum(x[0::2])


def test_an_each_root_is_an_array_over_its_range() -> None:
    graph = Graph()
    x, y = graph.vector("x"), graph.var("y")
    i = graph.index(0)
    body = graph.make("mul", binders.item(graph, x, graph.make("add", i, graph.const(1.0))), y)
    each = binders.reduce(graph, "each", 0, 5, 20, body)
    values = np.arange(100.0)
    (out,) = ArrayProgram(graph, [each]).run({y: 2.0}, {"x": (values, 0)})
    assert isinstance(out, np.ndarray) and out.tolist() == [2.0 * k for k in range(6, 22)]


def test_an_entry_outside_any_loop_is_a_number() -> None:
    graph, root, program = _program(f"x[3] + sum(i = 1..{N}, x[i])")
    x = np.linspace(0, 1, N)
    (value,) = program.run({}, {"x": (x, 1)})
    assert value == x[2] + reference_sum(x)


def test_a_missing_vector_is_named() -> None:
    graph, root, program = _program(f"sum(i = 1..{N}, x[i]*z[i])")
    with pytest.raises(PointError, match="z"):
        program.run({}, {"x": (np.ones(N), 1)})


def _prod_in_its_order(factors: list[float], block: int = 8192) -> float:
    """The documented order, in plain floats: each block left to right from 1.0, then the blocks'
    products as a tree of adjacent pairs (an odd one out passed up)."""
    products = []
    for start in range(0, len(factors), block):
        p = 1.0
        for f in factors[start:start + block]:
            p = p * f
        products.append(p)
    while len(products) > 1:
        products = [products[k] * products[k + 1] if k + 1 < len(products) else products[k]
                    for k in range(0, len(products), 2)]
    return products[0] if products else 1.0


@pytest.mark.parametrize("n", [N, 8192, 5 * 8192 + 3])
def test_a_prod_kept_as_a_loop_multiplies_in_its_fixed_order(n: int) -> None:
    graph = Graph()
    body = graph.make("add", graph.const(1.0), binders.item(graph, graph.vector("x"), graph.index(0)))
    node = binders.reduce(graph, "prod", 0, 1, n, body)
    x = np.random.default_rng(n).uniform(-0.01, 0.01, n)
    value, = ArrayProgram(graph, [node]).run({}, {"x": (x, 1)})
    assert value.hex() == _prod_in_its_order((1.0 + x).tolist()).hex()
    assert value == pytest.approx(np.prod(1.0 + x), rel=4 * n * np.finfo(float).eps)
