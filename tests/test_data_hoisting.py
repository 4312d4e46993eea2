"""An objective's row subexpressions the same in every row, computed apart from the loop: those of
the point alone once a call, those of the data alone once (derived columns); the sums are the
bits of the loop computing everything itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symad
from symad.native import jit
from symad.objectives import over_data
from symad.objectives.row_sums import row_parts
from symad.runtime import blocks
from symad.schedule.schedule import Schedule

NEGATIVE_BINOMIAL = ("eta = b0 + b1*x1; r = exp(a); "
                     "-(lgamma(y + r) - lgamma(r) - lgamma(y + 1) + r*a + y*eta - (r + y)*logaddexp(a, eta))")
GAMMA_GLM = "mu = exp(b0 + b1*x1); -(k*log(k/mu) - lgamma(k) + (k - 1)*log(y) - k*y/mu)"  # k a parameter
LOGISTIC = "log(1 + exp(-y*(b0 + b1*x1)))"
CASES = [(NEGATIVE_BINOMIAL, ["b0", "b1", "a"], None), (GAMMA_GLM, ["b0", "b1"], {"k": 2.5}),
         ("lgamma(a) + (x1 - b0)^2*exp(b1) + digamma(y + 2)*b0", ["b0", "b1", "a"], None)]
BACKENDS = ["python"] + (["native", "auto"] if jit.available() else [])


def parts(obj: symad.Objective) -> tuple[list[int], list[int]]:
    """The row's parts of the point alone and of the data alone computed apart, in its value and gradient."""
    g, point = obj.expr.graph, obj._w + obj._p
    return row_parts(g, Schedule.build(g, [obj.expr.id, *obj._gradient()], point + obj._d), point, obj._d)


def data(n: int = 3001) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(34)
    x1 = rng.normal(size=n)
    return {"x1": x1, "y": rng.poisson(np.exp(0.5 + 0.4 * x1)).astype(float) + 0.5}


def everything(obj: symad.Objective, w: np.ndarray, params: dict | None) -> np.ndarray:
    """Every call's result: value and gradient (all rows, a mini-batch), Hessian, its entries, a product."""
    v, g = obj.value_and_grad(w, params)
    bv, bg = obj.value_and_grad(w, params, rows=np.arange(5, 3001, 3))
    parts = [[v, obj.value(w, params), bv], g, bg, obj.hessian(w, params).ravel(), obj.hessian_values(w, params)]
    if params is None:
        parts.append(obj.hessp(w, np.arange(1.0, len(w) + 1)))
    return np.concatenate([np.ravel(p) for p in parts])


def test_the_parts_computed_apart_are_the_costly_ones_of_the_point_or_of_the_data_alone():
    obj = symad.objective(NEGATIVE_BINOMIAL, data(), wrt=["b0", "b1", "a"])
    g = obj.expr.graph
    per_call, per_data = parts(obj)
    text = [symad.Expr(g, n).to_text() for n in per_call + per_data]
    # the largest subexpressions of the point alone that the rest of the row reads
    assert {"exp(a)", "lgamma(exp(a))", "digamma(exp(a)) - a"} <= set(text)
    assert [symad.Expr(g, n).to_text() for n in per_data] == ["lgamma(y + 1)"]
    assert not any("x1" in t or "b0" in t for t in text[:len(per_call)])
    # nothing costly of one side alone: everything stays in the loop
    plain = symad.objective(LOGISTIC, data(), wrt=["b0", "b1"])
    assert parts(plain) == ([], [])
    # a whole power is products (stays), another one a call of pow (computed once)
    powers = symad.objective("(a*x1^2 + b - y)^2 + y^0.5*a", data(), wrt=["a", "b"])
    assert [symad.Expr(powers.expr.graph, n).to_text() for n in parts(powers)[1]] == ["y^0.5"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("text, wrt, params", CASES)
def test_computing_parts_apart_gives_the_bits_of_the_loop_computing_them(text, wrt, params, backend, monkeypatch):
    w = np.array([0.3, -0.2, 0.8][:len(wrt)])
    apart = symad.objective(text, data(), wrt=wrt, backend=backend)
    got = everything(apart, w, params)
    assert apart._derived or "lgamma(y" not in text
    monkeypatch.setattr(over_data, "row_parts", lambda *args: ([], []))  # everything in the loop
    whole = symad.objective(text, data(), wrt=wrt, backend=backend)
    want = everything(whole, w, params)
    assert not whole._derived
    np.testing.assert_array_equal(got, want)
    assert apart.operations() == whole.operations()  # the row's operations, wherever they run


def test_derived_columns_are_at_most_as_many_as_the_data_columns():
    d = data()
    many = symad.objective("b0*log(y) + b1*lgamma(y) + exp(y)*b0 + log(x1^2 + 1)*b1", d, wrt=["b0", "b1"])
    texts = [symad.Expr(many.expr.graph, n).to_text() for n in parts(many)[1]]
    assert len(texts) == 2 and "lgamma(y)" in texts  # the costliest kept
    w = [0.1, 0.2]
    got = many.value_and_grad(w)
    assert len(many._derived) == 2
    want = np.sum(0.1 * np.log(d["y"]) + 0.2 * np.vectorize(math.lgamma)(d["y"]) + np.exp(d["y"]) * 0.1
                  + np.log(d["x1"] ** 2 + 1) * 0.2)
    assert got[0] == pytest.approx(want, rel=1e-13)


def test_derived_columns_are_computed_once_for_every_program_and_call(monkeypatch):
    calls = []
    derived = over_data.derived_columns
    monkeypatch.setattr(over_data, "derived_columns", lambda *a: calls.append(len(a[1])) or derived(*a))
    obj = symad.objective(NEGATIVE_BINOMIAL, data(), wrt=["b0", "b1", "a"])
    w = [0.1, 0.2, 0.3]
    first = obj.value_and_grad(w)
    obj.value(w), obj.hessian(w), obj.value_and_grad([0.2, 0.1, 0.4])
    ridge = obj + "lam*a^2"
    ridge.value_and_grad(w, {"lam": 1.0})
    fixed = obj.with_wrt(["b0", "b1"])  # a now a parameter: exp(a) is computed apart still
    fixed.value_and_grad(w[:2], [w[2]])
    assert calls == [1]
    np.testing.assert_array_equal(fixed.value_and_grad(w[:2], [w[2]])[1], first[1][:2])
    # new data: a new objective, its own derived columns
    other = data(500)
    again = symad.objective(NEGATIVE_BINOMIAL, other, wrt=["b0", "b1", "a"])
    assert again.value(w) != obj.value(w) and calls == [1, 1]


def test_a_derived_column_holds_the_subexpression_at_every_row():
    d = data()
    obj = symad.objective(NEGATIVE_BINOMIAL, d, wrt=["b0", "b1", "a"])
    obj.value([0.0, 0.0, 0.0])
    (column,) = obj._derived.values()
    want = np.array([symad.parse("lgamma(y + 1)").compile().value([y]) for y in d["y"][:50]])
    np.testing.assert_array_equal(column[:50], want)
    assert column.shape == (3001,) and column.flags.c_contiguous


def test_blocks_sum_alike_with_a_prelude():
    d = data(2 * blocks.BLOCK + 7)
    obj = symad.objective(NEGATIVE_BINOMIAL, d, wrt=["b0", "b1", "a"], threads=1)
    many = symad.objective(NEGATIVE_BINOMIAL, d, wrt=["b0", "b1", "a"], threads=3)
    w = [0.4, -0.3, 1.1]
    assert obj._row_sums("value_grad").prelude is not None
    np.testing.assert_array_equal(np.concatenate([[obj.value_and_grad(w)[0]], obj.grad(w)]),
                                  np.concatenate([[many.value_and_grad(w)[0]], many.grad(w)]))
