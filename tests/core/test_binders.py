"""Sums kept as loops in the DAG (symad.core.binders): one node whatever the range, equal bodies
one node, printing round trips, and clear errors for what loops do not take yet."""

from __future__ import annotations

import numpy as np
import pytest

import symad
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import ParseError, SymadError
from symad.core.printing import to_infix
from symad.indexed_function import IndexedFunction

N = 2 * binders.UNROLL_MAX_TERMS  # a range long enough to stay a loop


def test_the_limit_decides_loop_or_unrolled() -> None:
    short = symad.parse(f"sum(i = 1..{binders.UNROLL_MAX_TERMS}, x[i])", Graph())
    long = symad.parse(f"sum(i = 1..{binders.UNROLL_MAX_TERMS + 1}, x[i])", Graph())
    assert not binders.has_scoped(short.graph, [short.id])
    assert long.graph.op[long.id] == "sum"


def test_the_index_name_does_not_matter() -> None:
    g = Graph()
    a = symad.parse(f"sum(i = 1..{N}, (x[i+1] - x[i])^2)", g)
    b = symad.parse(f"sum(j = 1..{N}, (x[1+j] - x[j])^2)", g)
    assert a.id == b.id


def test_other_ranges_or_bodies_are_other_nodes() -> None:
    g = Graph()
    base = symad.parse(f"sum(i = 1..{N}, x[i]^2)", g).id
    others = [f"sum(i = 2..{N}, x[i]^2)", f"sum(i = 1..{N + 1}, x[i]^2)", f"sum(i = 1..{N}, x[i+1]^2)",
              f"sum(i = 1..{N}, y[i]^2)", f"sum(i = 1..{N}, x[i]^3)"]
    ids = {symad.parse(t, g).id for t in others}
    assert base not in ids and len(ids) == len(others)


@pytest.mark.parametrize("n", [N, 10**7, 2**31 - 1])
def test_the_graph_does_not_grow_with_the_range(n: int) -> None:
    g = Graph()
    expr = symad.parse(f"sum(i = 1..{n}, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)", g)
    assert binders.range_of(g, expr.id) == (0, 1, n)
    assert len(g) < 30


def test_entries_are_kept_in_a_normal_affine_form() -> None:
    g = Graph()
    texts = ["x[i + 1]", "x[1 + i]", "x[i - 1 + 2]", "x[2*i - i + 1]", "x[(i + 3) - 2]"]
    ids = {symad.parse(f"sum(i = 1..{N}, {t}*y)", g).id for t in texts}
    assert len(ids) == 1


def test_affine_forms() -> None:
    g = Graph()
    i, j = g.index(0), g.index(1)
    two_i_minus_j = g.make("sub", g.make("mul", g.const(2.0), i), j)
    assert binders.affine(g, g.make("add", two_i_minus_j, g.const(5.0))) == ({0: 2, 1: -1}, 5)
    assert binders.affine(g, g.make("neg", i)) == ({0: -1}, 0)
    assert binders.affine(g, g.make("mul", i, i)) is None
    assert binders.affine(g, g.make("mul", g.const(0.5), i)) is None
    assert binders.affine(g, g.var("y")) is None


def test_captures_are_the_largest_parts_free_of_the_index() -> None:
    g = Graph()
    expr = symad.parse(f"sum(i = 1..{N}, x[i]*sin(y*z) + y)", g)
    body, *caps = g.args[expr.id]
    assert sorted(to_infix(g, c) for c in caps) == ["sin(y*z)", "y"]
    assert binders.captures(g, body, 0) == caps


def test_a_body_free_of_the_index_is_hoisted_and_an_empty_range_is_its_unit() -> None:
    g = Graph()
    y = g.var("y")
    assert to_infix(g, binders.reduce(g, "sum", 0, 1, N, y)) == f"{N}*y"
    assert g.data[binders.reduce(g, "sum", 0, 5, 4, y)] == 0.0
    assert g.data[binders.reduce(g, "prod", 0, 5, 4, y)] == 1.0
    with pytest.raises(SymadError, match="binder"):
        binders.reduce(g, "max", 0, 1, N, y)


@pytest.mark.parametrize("text", [
    f"sum(i = 1..{N}, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)",
    f"sin(y)*sum(i = 3..{N}, x[i-2]*x[{N + 5}-i] + i/7) + x[1]",
    f"sum(i = 1..{N}, where(x[i] > 0, x[i], -x[i])*max(x[i+1], y)) + sum(j = 5..{N + 9}, abs(x[j]))",
    f"sum(i = 1..{N}, x[2*i + 1]*d[i])",
])
def test_printing_parses_back_to_the_same_node(text: str) -> None:
    g = Graph()
    expr = symad.parse(text, g)
    printed = str(expr)
    assert len(printed) < 200
    assert symad.parse(printed, g).id == expr.id
    again = symad.parse(printed, Graph())
    assert str(again) == printed


def test_an_index_prints_as_a_name_no_variable_uses() -> None:
    g = Graph()
    expr = symad.parse(f"sum(j = 1..{N}, i*x[j])", g)  # i is a variable here
    printed = str(expr)
    assert "i*x[j]" in printed.replace(" ", "") or "x[j]*i" in printed.replace(" ", "")
    assert symad.parse(printed, g).id == expr.id


def test_a_hoisted_inner_sum_is_the_same_node_as_written_alone() -> None:
    g = Graph()
    nested = symad.parse(f"sum(i = 1..{N}, sum(j = 1..{N}, x[j]))", g)
    alone = symad.parse(f"{N}*sum(j = 1..{N}, x[j])", g)
    assert nested.id == alone.id


# ---------------------------------------------------------------- errors


def test_a_non_affine_index_points_at_the_entry() -> None:
    text = f"y +\n  sum(i = 1..{N}, x[i^2])"
    with pytest.raises(ParseError, match="affine") as caught:
        symad.parse(text, Graph())
    error = caught.value
    assert (error.line, error.column) == (2, text.splitlines()[1].index("x[i^2]") + 1)
    lines = str(error).splitlines()
    caret = lines[-1]
    assert caret.strip() == "^" and lines[-2].strip() == text.splitlines()[1].strip()
    assert lines[-2][caret.index("^")] == "x"


@pytest.mark.parametrize("body", ["x[i*i]", "x[y]", "x[sin(i)]", "x[i/2]"])
def test_other_bad_indices_are_parse_errors(body: str) -> None:
    with pytest.raises(ParseError):
        symad.parse(f"sum(i = 1..{N}, {body})", Graph())


def test_a_loop_index_as_a_range_bound_is_refused() -> None:
    with pytest.raises(ParseError, match="stays a loop"):
        symad.parse(f"sum(i = 1..{N}, sum(j = 1..i, x[j]))", Graph())


def test_nested_loops_whose_entries_use_the_outer_index_are_differentiated() -> None:
    from support.loops import looping, parse_looped, unrolled_value_and_grad

    rng = np.random.default_rng(3)
    n = 7
    x = rng.uniform(-1, 1, 2 * n)
    a = rng.uniform(-1, 1, (n, n))
    for text, point in ((f"sum(i = 1..{n}, sum(j = 1..{n}, x[i + j]*x[i]))", {"x": x}),
                        (f"sum(i = 1..{n}, x[i]*sum(j = 1..{n}, A[i, j]*x[j]))", {"x": x[:n], "A": a})):
        with looping(3):
            f = IndexedFunction(parse_looped(text), wrt=["x"])
        value, grad = f.value_and_grad(point)
        if "A" in point:  # x'Ax and its gradient (A + A')x
            assert value == pytest.approx(x[:n] @ a @ x[:n], rel=1e-13)
            assert np.allclose(grad, (a + a.T) @ x[:n], rtol=1e-13, atol=1e-14)
            continue
        named = {f"x[{k + 1}]": v for k, v in enumerate(x)}
        want, partials = unrolled_value_and_grad(text, named)
        assert value == pytest.approx(want, rel=1e-13)
        ((low, high),) = f.spans["x"]
        assert np.allclose(grad, [partials.get(f"x[{k}]", 0.0) for k in range(low, high + 1)], rtol=1e-13)


def test_a_range_past_the_largest_bound_points_at_the_sum() -> None:
    with pytest.raises(ParseError, match="beyond") as caught:
        symad.parse("y + sum(i = 1..10^12, x[i])", Graph())
    assert (caught.value.line, caught.value.column) == (1, 5)


def test_a_long_prod_stays_one_loop_node_as_a_sum_does() -> None:
    """A prod past the unrolling threshold is one node whatever its length, from the text and from
    Python, inside a sum too; below it, written out as before."""
    e = symad.parse("prod(i = 1..20000000, 1 + x[i])", Graph())
    assert e.graph.op[e.id] == "prod" and len(e.graph.reachable([e.id])) < 10
    e = symad.parse("sum(k = 1..2000, prod(i = 1..1000, x[i] + y[k]))", Graph())
    assert sum(op == "prod" for op in e.graph.op) == 1
    g = Graph()
    x, i = symad.indexed("x", g), symad.index("i", 1, 100_001)
    p = symad.prod(i, 1 + x[i])
    assert p.graph.op[p.id] == "prod" and p.graph.data[p.id][1:] == (1, 100_001)
    short = symad.parse("prod(i = 1..4, x[i])", Graph())
    assert "prod" not in short.graph.op and str(short) == "x[1]*x[2]*x[3]*x[4]"


def test_loops_nest_at_most_max_nesting_deep() -> None:
    depth = binders.MAX_NESTING + 1
    text = "x[1]"
    for level in range(depth):
        text = f"sum(i{level} = 1..{N}, {text})"
    with pytest.raises(ParseError, match="nest at most"):
        symad.parse(text, Graph())
