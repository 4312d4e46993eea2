"""Index objects from Python (symad.index with symad.sum, prod, each): the text's own nodes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.properties import property_test

import symad
from symad import SymadError
from symad.core.dag import Graph


def _same(built: symad.Expr, text: str) -> None:
    parsed = symad.parse(text, built.graph)
    assert built.id == parsed.id, (str(built)[:200], str(parsed)[:200])


def test_a_long_sum_is_the_texts_loop_node() -> None:
    g = Graph()
    x, i = symad.indexed("x", g), symad.index("i", 1, 19999)
    built = symad.sum(i, 100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2)
    assert g.op[built.id] == "sum"
    _same(built, "sum(i = 1..19999, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)")


def test_a_short_sum_is_written_out_as_the_text_writes_it() -> None:
    g = Graph()
    x, i = symad.indexed("x", g), symad.index(1, 3)  # named i
    built = symad.sum(i, (x[i + 1] - x[i]) ** 2)
    assert str(built) == "(x[2] - x[1])^2 + (x[3] - x[2])^2 + (x[4] - x[3])^2"
    _same(built, "sum(i = 1..3, (x[i+1] - x[i])^2)")


@pytest.mark.parametrize("build, text", [
    (lambda x, A, i, j: symad.sum(i, x[i] * symad.sum(j, A[i, j] * x[j])),
     "sum(i = 1..2000, x[i]*sum(j = 1..2000, A[i,j]*x[j]))"),
    (lambda x, A, i, j: symad.each(i, x[i] * symad.sum(j, A[i, j] * x[j])),
     "each(i = 1..2000, x[i]*sum(j = 1..2000, A[i,j]*x[j]))"),
    (lambda x, A, i, j: symad.sum(i, symad.sum(j, A[j, i] * x[2 * j - 1]) ** 2 - i),
     "sum(i = 1..2000, sum(j = 1..2000, A[j,i]*x[2*j-1])^2 - i)"),
])
def test_nested_loops_are_the_texts(build, text) -> None:
    g = Graph()
    x, A = symad.indexed("x", g), symad.indexed("A", g)
    i, j = symad.index("i", 1, 2000), symad.index("j", 1, 2000)
    _same(build(x, A, i, j), text)


def test_products_and_functions_of_the_index() -> None:
    g = Graph()
    x = symad.indexed("x", g)
    i, j = symad.index("i", 1, 20000), symad.index("j", 1, 3)
    _same(symad.sum(i, symad.prod(j, x[i + j]) + symad.sin(i)), "sum(i = 1..20000, prod(j = 1..3, x[i+j]) + sin(i))")
    k, m = symad.index("k", 1, 5), symad.index("m", 1, 30)
    _same(symad.prod(k, symad.sum(m, x[k + m] * x[m])), "prod(k = 1..5, sum(m = 1..30, x[k+m]*x[m]))")


def test_an_index_built_loop_computes_the_texts_numbers() -> None:
    x, i = symad.indexed("x"), symad.index("i", 1, 20000)
    f = symad.compile(symad.sum(i, (x[i] - i / 20000) ** 2))
    point = np.linspace(0, 1, 20000)
    want = symad.compile("sum(i = 1..20000, (x[i] - i/20000)^2)").value_and_grad(point)
    value, grad = f.value_and_grad(point)
    assert value == want[0] and np.array_equal(grad, want[1])


def test_an_expression_is_no_sequence_for_numpy() -> None:
    x = symad.var("x")  # entries come from symad.indexed: an expression has no __getitem__ NumPy would read
    with pytest.raises(TypeError):
        x[0]
    assert symad.indexed("x", Graph())[3] == symad.parse("x[3]") and repr(symad.indexed("x")) == "indexed('x')"


def test_symad_sum_of_a_vector_still_sums_its_entries() -> None:
    assert str(symad.sum(symad.vector("x", 2, Graph()) ** 2)) == "x[1]^2 + x[2]^2"


@pytest.mark.parametrize("bounds, message", [
    ((1.5, 3), "whole number"), ((1, float("inf")), "whole number"), ((True, 3), "whole number"),
    ((1, 2**40), "beyond"), (("a", 3), "whole number"),
])
def test_bounds_must_be_whole_numbers(bounds, message) -> None:
    with pytest.raises(SymadError, match=message):
        symad.index("i", *bounds)


def test_an_index_must_be_affine_and_not_a_variable() -> None:
    x, y, i = symad.indexed("x"), symad.var("y"), symad.index("i", 1, 20000)
    with pytest.raises(SymadError, match="affine"):
        x[i * i]
    with pytest.raises(SymadError, match="not a variable"):
        x[y]


def test_an_index_outside_its_sum_is_refused_where_it_is_used() -> None:
    x, i, j = symad.indexed("x"), symad.index("i", 1, 20000), symad.index("j", 1, 3)
    loose = symad.sum(j, x[i + j])  # i is bound by no sum
    assert "outside its sum" in repr(loose)
    for use in (str, lambda e: e.compile(), lambda e: e.grad(), symad.dumps, lambda e: e.latex()):
        with pytest.raises(SymadError, match="the index i is used outside its sum"):
            use(loose)


def test_each_inside_a_sum_is_refused() -> None:
    x, i, j = symad.indexed("x"), symad.index("i", 1, 20000), symad.index("j", 1, 20000)
    with pytest.raises(SymadError, match="whole output"):
        symad.sum(i, symad.each(j, x[i] * x[j]))


# ------------------------------------------------------------------ property: any body, both ways
# A body is a pair: its text and a function building it from index objects (i, j) and variables.
_LEAVES = st.one_of(
    st.integers(-2, 2).map(lambda c: (f"x[i+({c})]", lambda i, j, x, A: x[i + c])),
    st.integers(1, 3).map(lambda a: (f"x[{a}*i]", lambda i, j, x, A: x[a * i])),
    st.just(("i", lambda i, j, x, A: i * 1)),
    st.floats(-3, 3, allow_nan=False).map(lambda v: (repr(v), lambda i, j, x, A: v)),
    st.just(("y", lambda i, j, x, A: symad.var("y", x.graph))),
)


def _combine(children):
    binary = st.tuples(st.sampled_from(["+", "-", "*"]), children, children).map(
        lambda t: (f"({t[1][0]}) {t[0]} ({t[2][0]})",
                   lambda i, j, x, A, t=t: {"+": lambda a, b: a + b, "-": lambda a, b: a - b,
                                            "*": lambda a, b: a * b}[t[0]](t[1][1](i, j, x, A), t[2][1](i, j, x, A))))
    unary = st.tuples(st.sampled_from(["sin", "exp"]), children).map(
        lambda t: (f"{t[0]}({t[1][0]})", lambda i, j, x, A, t=t: getattr(symad, t[0])(t[1][1](i, j, x, A))))
    inner = st.tuples(st.sampled_from([3, 40]), children).map(  # a sum over j inside: written out or a loop
        lambda t: (f"sum(j = 1..{t[0]}, A[i, j]*({t[1][0]}))",
                   lambda i, j, x, A, t=t: symad.sum(j[t[0]], A[i, j[t[0]]] * t[1][1](i, j, x, A))))
    return st.one_of(binary, unary, inner)


BODIES = st.recursive(_LEAVES, _combine, max_leaves=6)


@property_test(60)
@given(BODIES, st.sampled_from([5, 20_000]), st.sampled_from(["sum", "each"]))
def test_any_body_built_with_index_objects_is_the_texts_node(body, n, op) -> None:
    text, build = body
    g = Graph()
    x, A = symad.indexed("x", g), symad.indexed("A", g)
    i = symad.index("i", 1, n)
    j = {m: symad.index("j", 1, m) for m in (3, 40)}
    try:
        parsed = symad.parse(f"{op}(i = 1..{n}, {text})", g)
    except SymadError:
        return  # the text refuses it too (an each's body written out is no vector)
    built = getattr(symad, op)(i, build(i, j, x, A))
    assert built == parsed, (text, str(built)[:300], str(parsed)[:300])  # a body of numbers alone: another graph
