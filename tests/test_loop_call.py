"""The ``call`` entry of a whole program with loops (value and gradient over one vector, the arrays
passed as objects): the same bits as the general entry and as NumPy's evaluation, a fresh gradient
array every call, and safe from several threads at once."""

from __future__ import annotations

import numpy as np
import pytest
from support.loops import parse_looped
from support.threads import assert_threads_agree

from symad import native
from symad.indexed_function import IndexedFunction
from symad.runtime import native_loops

pytestmark = pytest.mark.skipif(not native.available(), reason="needs llvmlite")

ROSENBROCK = "n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i]/i)^2) + sum(i = 3..n-2, x[i-2]*x[i+2])"


def _point(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-3, 3, n)


@pytest.mark.parametrize("n", [5, 100, 8193, 3 * 8192 + 5])
def test_the_call_entry_gives_the_general_entrys_and_numpys_bits(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_loops, "CALL_MAX_ROWS", 10**9)  # sums of several blocks too
    compiled = IndexedFunction(parse_looped(ROSENBROCK.format(n=n)))
    numpy_only = IndexedFunction(parse_looped(ROSENBROCK.format(n=n)), backend="python")
    whole = compiled._whole
    assert whole is not None and whole._call is not None
    x = _point(n, n)
    value, grad = compiled.value_and_grad(x)
    want = numpy_only.value_and_grad(x)
    assert value == want[0] and np.array_equal(grad, want[1])
    whole._call = None  # the general entry: addresses taken in Python, the program's own buffers
    general = compiled.value_and_grad(x)
    assert value == general[0] and np.array_equal(grad, general[1])


def test_a_returned_gradient_is_never_written_again() -> None:
    f = IndexedFunction(parse_looped(ROSENBROCK.format(n=50)))
    first_x, second_x = _point(50, 1), _point(50, 2)
    _, first = f.value_and_grad(first_x)
    kept = first.copy()
    _, second = f.value_and_grad(second_x)
    assert second is not first and np.array_equal(first, kept) and not np.array_equal(first, second)


def test_a_named_or_converted_point_takes_the_same_path() -> None:
    f = IndexedFunction(parse_looped(ROSENBROCK.format(n=30)))
    x = _point(30, 3)
    want = f.value_and_grad(x)
    for given in ({"x": x}, {"x": np.repeat(x, 2)[::2]}, list(x), np.repeat(x, 2)[::2]):  # strided: copied
        value, grad = f.value_and_grad(given)
        assert value == want[0] and np.array_equal(grad, want[1])


def test_calls_from_several_threads_at_once() -> None:
    n = 2000
    f = IndexedFunction(parse_looped(ROSENBROCK.format(n=n)))
    xs = [_point(n, s) for s in range(8)]
    assert_threads_agree(f.value_and_grad, xs, rounds=200)


def test_a_long_program_keeps_the_general_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_loops, "CALL_MAX_ROWS", 10)  # longer: the entry that releases the GIL
    f = IndexedFunction(parse_looped(ROSENBROCK.format(n=40)))
    assert f._whole is not None and f._whole._call is None
    x = _point(40, 4)
    numpy_only = IndexedFunction(parse_looped(ROSENBROCK.format(n=40)), backend="python")
    value, grad = f.value_and_grad(x)
    want = numpy_only.value_and_grad(x)
    assert value == want[0] and np.array_equal(grad, want[1])
