"""Points that are not real numbers are refused where they enter, naming the variable.

NumPy alone would drop a complex value's imaginary part (with a ComplexWarning), read
``None`` as nan, and raise a bare OverflowError for an integer beyond a double: each of
these is a ``PointError`` saying which variable and what is wrong, in every form a point
takes (keywords, a dict, a sequence, an array, a batch, parameters, directions).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symad
from symad import PointError
from symad.second_order import SecondOrder

F = symad.compile("x^2")
XY = symad.compile("x*y")
PARAMS = symad.compile("a*x^2 + y", wrt=["x", "y"])
INDEXED = symad.compile("sum(i = 1..3, x[i]^2)")
VECTOR = symad.compile("x*y; x + y")
HUGE = 10**400

CASES = [
    # (call, the variable named, the problem)
    (lambda: F.value(np.array([1 + 2j])), "x", "is complex"),
    (lambda: F.value_and_grad(np.array([1 + 2j])), "x", "is complex"),
    (lambda: F.value(np.array([1 + 0j])), "x", "is complex"),
    (lambda: F.value([None]), "x", "is None"),
    (lambda: F.value([HUGE]), "x", "too large for a float"),
    (lambda: F.value(HUGE), "x", "too large for a float"),
    (lambda: F.value(x=None), "x", "is None"),
    (lambda: F.value({"x": 2j}), "x", "is complex"),
    (lambda: F.grad(x=[1.0, HUGE]), "x", "too large"),
    (lambda: XY.value([1.0, None]), "y", "is None"),
    (lambda: XY.value([[1, 2], [3, HUGE]]), "y", "too large"),
    (lambda: XY.value(np.array([[1, 2], [3j, 4]])), "x", "is complex"),
    (lambda: XY.value_and_grad_into([[1, None]], np.empty((1, 3))), "y", "is None"),
    (lambda: PARAMS.value([1.0, 2.0], {"a": None}), "a", "is None"),
    (lambda: PARAMS.value([1.0, 2.0], [1j]), "a", "is complex"),
    (lambda: PARAMS.value([1.0, HUGE], [1.0]), "y", "too large"),
    (lambda: PARAMS.value(x=1, y=2, a=HUGE), "a", "too large"),
    (lambda: INDEXED.value(x=[1, None, 2]), "x[2]", "is None"),
    (lambda: INDEXED.value(x=1j), "x", "is complex"),
    (lambda: VECTOR.value([1, None]), "y", "is None"),
    (lambda: VECTOR.jacobian(x=1j, y=0), "x", "is complex"),
    (lambda: SecondOrder("x^2*y").hessian([1, 2j]), "y", "is complex"),
]


@pytest.mark.parametrize(("call", "name", "problem"), CASES, ids=range(len(CASES)))
def test_a_point_that_is_not_real_numbers_is_refused(call, name, problem):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # never only NumPy's ComplexWarning
        with pytest.raises(PointError, match=problem) as info:
            call()
    assert f"value for {name} " in str(info.value)


def test_directions_are_checked_too():
    with pytest.raises(PointError, match=r"a tangent v is complex \(1j\)"):
        VECTOR.jvp([1, 2], [1j, 0])
    with pytest.raises(PointError, match="is None"):
        SecondOrder("x^2*y").hessp([1, 2], [None, 0])


def test_real_numbers_in_every_form_still_work():
    assert F.value([2]) == 4.0
    assert F.value(np.float32(3)) == 9.0
    assert F.value([2**70]) == float(2**70) ** 2  # a Python int beyond int64 but within a double
    assert F.value(x=True) == 1.0
    assert F.value(np.array([3], dtype=np.int8)) == 9.0
    np.testing.assert_array_equal(XY.value([[1, 2], [3, 4]]), [2.0, 12.0])
    np.testing.assert_array_equal(XY.value(np.array([[1, 2], [3, 4]], dtype=object)), [2.0, 12.0])
    assert PARAMS.value([1.0, 2.0], [3]) == 5.0
    assert np.isnan(F.value([np.nan]))  # nan, written as a number, is a value
