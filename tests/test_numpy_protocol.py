"""Python's and NumPy's protocols on expressions (issue #29 §4): NumPy scalars and 0-d arrays
are numbers, truth values are not; an expression has no truth value and no order; ``min`` and
``max`` take any number of arguments."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.expressions import expressions
from support.properties import property_test

import symad
from symad import Graph
from symad.cli.main import EPILOG
from symad.core import term
from symad.core.ops import signatures


@pytest.fixture
def xy():
    g = Graph()
    return symad.var("x", g), symad.var("y", g)


# ---------------------------------------------------------------- NumPy numbers
@pytest.mark.parametrize("build, text", [
    (lambda x: x * np.int64(2), "x*2"),
    (lambda x: np.int64(2) * x, "2*x"),
    (lambda x: x * np.float32(2.5), "x*2.5"),
    (lambda x: np.float64(1) + x, "1 + x"),
    (lambda x: x ** np.int32(2), "x^2"),
    (lambda x: np.uint8(3) ** x, "3^x"),
    (lambda x: np.array(3.0) * x, "3*x"),
    (lambda x: x * np.array(3), "x*3"),
    (lambda x: x / np.float16(0.5), "x/0.5"),
    (lambda x: x - np.longdouble(1.5), "x - 1.5"),
    (lambda x: symad.max(x, np.int64(3)), "max(x, 3)"),
    (lambda x: symad.sin(x) + np.array(np.float32(1)), "sin(x) + 1"),
    (lambda x: np.maximum(x, np.float32(0)), "max(x, 0)"),
])
def test_numpy_scalars_and_0d_arrays_are_numbers(xy, build, text):
    x, _ = xy
    assert build(x) == symad.parse(text, x.graph)


def test_a_float32_is_its_value_widened_exactly(xy):
    x, _ = xy
    e = x * np.float32(0.1)
    assert e == symad.parse("x*0.10000000149011612", x.graph)
    assert symad.compile(e).value([1.0]) == float(np.float32(0.1)) != 0.1
    assert term.as_number(np.float32(0.1)) == float(np.float32(0.1))


def test_numpy_scalars_alone_compute_the_number():
    assert symad.sin(np.float32(1.5)) == math.sin(float(np.float32(1.5)))
    assert symad.max(np.int64(1), np.int64(5), 3) == 5.0


@pytest.mark.parametrize("value, message", [
    (np.bool_(True), "truth value is not a number"),
    (True, "truth value is not a number"),
    (np.array(False), "truth value is not a number"),
    (np.complex128(1), "cannot use complex128"),
    (np.longdouble(1) / 3, "not a double exactly"),
    (np.array([1.0, 2.0]), "cannot use ndarray"),
])
def test_what_is_not_a_number_is_refused(xy, value, message):
    x, _ = xy
    with pytest.raises(TypeError, match=message):
        term.as_number(value)
    with pytest.raises(TypeError):
        x * value
    with pytest.raises(TypeError, match=message):
        symad.max(x, value)


def test_numpy_reductions_of_expression_arrays():
    w = symad.vector("w", 4)
    at = np.array([1.0, -2.0, 3.0, 0.5])
    cases = [
        (np.mean(w), at.mean()),
        (np.sum(w * np.float32(2)), 2 * at.sum()),
        (np.dot(w, np.arange(4, dtype=np.int64)), at @ np.arange(4.0)),
        (w @ np.arange(4, dtype=np.float32), at @ np.arange(4.0)),
        (np.prod(w), at.prod()),
        (np.linalg.norm(w), np.linalg.norm(at)),
        (np.mean(w ** np.int64(2)), np.mean(at**2)),
    ]
    for expr, expected in cases:
        f = symad.compile(expr, [f"w[{k}]" for k in range(1, 5)])
        assert f.value(at) == pytest.approx(expected, rel=1e-15), str(expr)


@pytest.mark.parametrize("reduce", [np.max, np.min, np.maximum.reduce, sorted])
def test_orderings_of_expression_arrays_say_what_to_write(reduce):
    # NumPy's max of an array compares elements: an expression has no order.
    with pytest.raises(TypeError, match=r"no order.*symad\.max\(a, b, \.\.\.\)"):
        reduce(symad.vector("w", 3))


def test_numpy_maximum_of_a_vector_is_max_entry_by_entry():
    # A symbolic vector takes NumPy's ufuncs entry by entry, np.maximum as the language's max.
    w = symad.vector("w", 3, Graph())
    assert np.maximum(w, 0) == symad.max(w, 0) == symad.max(0, w)
    assert [str(e) for e in np.maximum(w, 0)] == ["max(0, w[1])", "max(0, w[2])", "max(0, w[3])"]


@pytest.mark.parametrize("compare", [lambda x: x < 1, lambda x: 1 <= x, lambda x: x > x, lambda x: x >= 0])
def test_comparison_operators_point_at_the_functions(xy, compare):
    with pytest.raises(TypeError, match=r"no order: for the comparison .* write symad\.(lt|le|gt|ge)\(a, b\)"):
        compare(xy[0])


# ---------------------------------------------------------------- truth value
def _if(x):
    if x:
        return 1
    return 0


@pytest.mark.parametrize("use", [
    _if,
    lambda x: np.where(symad.gt(x, 0), np.sqrt(x), 0),
    lambda x: x and symad.var("y", x.graph),
    lambda x: x or 1,
    lambda x: not x,
    lambda x: bool(symad.gt(x, 0)),
])
def test_an_expression_has_no_truth_value(xy, use):
    with pytest.raises(TypeError, match=r"no truth value: for a branch write symad\.where\(cond, a, b\)"):
        use(xy[0])


def test_equality_stays_structural(xy):
    x, y = xy
    assert (x == x) is True and (x == y) is False and x != y
    assert x in [y, x] and len({x, symad.parse("x", x.graph)}) == 1


# ---------------------------------------------------------------- min and max of any arity
def _gradient_by_differences(f, point, h=1e-6):
    out = []
    for k in range(len(point)):
        up, down = np.array(point, float), np.array(point, float)
        up[k] += h
        down[k] -= h
        out.append((f.value(up) - f.value(down)) / (2 * h))
    return np.array(out)


@pytest.mark.parametrize("name, reduce", [("max", max), ("min", min)])
def test_min_and_max_of_several_arguments(xy, name, reduce):
    x, y = xy
    g = x.graph
    z = symad.var("z", g)
    text = symad.parse(f"{name}(x, y, z, 0.5)", g)
    built = getattr(symad, name)(x, y, z, 0.5)
    assert text == built == symad.parse(f"{name}({name}({name}(x, y), z), 0.5)", g)
    assert getattr(symad, name)(3, -1, 7, 2) == reduce(3, -1, 7, 2)
    f = symad.compile(text, ["x", "y", "z"])
    rng = np.random.default_rng(29)
    for point in rng.normal(size=(20, 3)):
        assert f.value(point) == reduce(*point, 0.5)
        assert np.allclose(f.grad(point), _gradient_by_differences(f, point), atol=1e-8)


def test_a_tie_of_several_splits_the_derivative_into_a_subgradient(xy):
    # max(x, y, z) is max(max(x, y), z): at x = y = z the tie convention (step(0) = 0.5 at each
    # binary max) gives each argument a share, the shares adding up to 1.
    x, y = xy
    f = symad.compile(symad.max(x, y, symad.var("z", x.graph)), ["x", "y", "z"])
    assert f.grad([1.0, 1.0, 1.0]).tolist() == [0.25, 0.25, 0.5]
    assert f.grad([1.0, 1.0, 0.0]).tolist() == [0.5, 0.5, 0.0]


def test_wrong_arities_of_min_and_max(xy):
    with pytest.raises(TypeError, match="max takes 2 or more argument"):
        symad.max(xy[0])
    with pytest.raises(symad.ParseError, match="min takes 2 or more argument"):
        symad.parse("min(x)")


def test_the_help_lists_min_and_max_of_any_arity():
    assert "min(a, b, ...)" in signatures() and "max(a, b, ...)" in signatures()
    assert "min(a, b, ...) max(a, b, ...)" in " ".join(EPILOG.split())  # the help wraps where it likes


# ---------------------------------------------------------------- property: a NumPy number is its double
NUMPY_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64,
               np.float16, np.float32, np.float64, np.longdouble]


def _numpy_number(kind, value: float):
    if issubclass(kind, np.integer):
        info = np.iinfo(kind)
        return kind(min(max(round(value), info.min), info.max))
    return kind(value)


@pytest.mark.slow
def test_numpy_numbers_build_what_their_doubles_build(property_tally):
    tally = property_tally("random expressions with NumPy scalars and 0-d arrays: the double's nodes")

    @property_test(200)
    @given(text=expressions(3), kind=st.sampled_from(NUMPY_TYPES), value=st.floats(-1e4, 1e4),
           zero_d=st.booleans(), op=st.sampled_from(["add", "sub", "mul", "div", "pow", "max", "atan2"]))
    def check(text, kind, value, zero_d, op):
        tally.tried += 1
        g = Graph()
        e = symad.parse(text, g)
        number = _numpy_number(kind, value)
        given_ = np.array(number) if zero_d else number
        exact = float(number)
        build = {"add": lambda a, b: a + b, "sub": lambda a, b: b - a, "mul": lambda a, b: b * a,
                 "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "max": symad.max,
                 "atan2": symad.atan2}[op]
        got, want = build(e, given_), build(e, exact)
        tally.compared_with([] if got == want else [f"{got} vs {want}"], f"{op}({text}, {kind.__name__}({value}))")

    check()
