"""The language's functions in Python (symad.sin, symad.where, symad.lt, ...) and NumPy's ufuncs
on expressions (issue #17 §4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symad
from symad import Graph
from symad.core.ops import FUNCTIONS
from symad.functions import NAMES, UFUNCS


@pytest.fixture
def xy():
    g = Graph()
    return symad.var("x", g), symad.var("y", g)


def test_every_function_of_the_language_is_a_module_function():
    assert set(FUNCTIONS) <= set(NAMES) and {"lt", "le", "gt", "ge", "eq", "ne", "and_", "or_", "not_"} <= set(NAMES)
    for name in NAMES:
        assert callable(getattr(symad, name)) and name in dir(symad)


def test_module_functions_build_what_the_text_builds(xy):
    x, y = xy
    g = x.graph
    pairs = [(symad.sin(x), "sin(x)"), (symad.where(symad.lt(x, 0), -x, x), "where(x < 0, -x, x)"),
             (symad.logsumexp(x, y, 1), "logsumexp(x, y, 1)"), (symad.clip(x, 0, 1), "clip(x, 0, 1)"),
             (symad.log(x, 2), "log(x, 2)"), (symad.and_(symad.ge(x, 1), symad.not_(y)), "x >= 1 and not y"),
             (symad.atan2(y, x), "atan2(y, x)"), (symad.pow(x, 3), "x^3")]
    for built, text in pairs:
        assert built == symad.parse(text, g), text


def test_on_numbers_they_compute_the_number():
    assert symad.sin(1.0) == math.sin(1.0)
    assert symad.softplus(800) == 800.0
    assert symad.where(symad.gt(2, 1), 5, 6) == 5.0


@pytest.mark.parametrize("call, message", [
    (lambda x: symad.atan2(x), "atan2 takes 2 argument"),
    (lambda x: symad.logsumexp(), "at least one"),
    (lambda x: symad.sin("x"), "cannot use str"),
])
def test_wrong_calls_are_type_errors(xy, call, message):
    with pytest.raises(TypeError, match=message):
        call(xy[0])


def test_numpy_ufuncs_and_abs_on_expressions(xy):
    x, y = xy
    g = x.graph
    assert np.sin(x) == symad.parse("sin(x)", g)
    assert np.exp(x) + 1 == symad.parse("exp(x) + 1", g)
    assert abs(x) == symad.parse("abs(x)", g)
    assert np.maximum(x, y) == symad.parse("max(x, y)", g)
    assert np.arctan2(y, x) == symad.parse("atan2(y, x)", g)
    assert np.float64(2.0) * x == symad.parse("2*x", g)
    assert np.square(x) == symad.parse("x^2", g) and np.reciprocal(x) == symad.parse("1/x", g)
    assert np.less(x, y) == symad.parse("x < y", g)
    assert set(UFUNCS) >= {"sin", "exp", "log", "sqrt", "absolute", "maximum", "minimum", "power"}


def test_object_arrays_of_expressions(xy):
    x, y = xy
    g = x.graph
    v = np.array([x, y], dtype=object)
    assert list(np.sin(v)) == [symad.parse("sin(x)", g), symad.parse("sin(y)", g)]
    assert np.dot(v, v) == symad.parse("x*x + y*y", g)
    assert np.exp(v).sum() == symad.parse("exp(x) + exp(y)", g)
    f = symad.compile(np.log1p(v @ v), ["x", "y"])
    value, grad = f.value_and_grad([1.0, 2.0])
    assert value == math.log1p(5.0) and np.allclose(grad, [2 / 6, 4 / 6])


def test_a_python_branch_has_the_nan_free_gradient(xy):
    x, _ = xy
    f = symad.compile(symad.where(symad.gt(x, 0), np.sqrt(x), 0))
    assert f.value_and_grad([0.0])[1].tolist() == [0.0]
