"""Every tier's ``call`` is a builtin function (symad.native.fastcall; the stitcher's stub):
the same bits as their ``point`` entries, no reference leaked, a wrong call refused, and a call
held past its program's life still running."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import symad
from symad import Graph
from symad.backends.vm import VMProgram
from symad.native import fastcall, jit
from symad.schedule.schedule import Schedule

pytestmark = pytest.mark.skipif(not jit.available() or fastcall.self_offset() is None,
                                reason="needs llvmlite and CPython's object layout")

TEXT = "sin(x)*y + exp(x - y)/(1 + x^2) + atan2(y, x)*z^3"


def _schedule(text: str = TEXT) -> Schedule:
    return symad.parse(text, Graph()).compile(backend="python").value_grad_program().schedule


def _makers(schedule: Schedule) -> list[tuple[str, Callable[[], Any]]]:
    """Each tier's program of ``schedule``, made when called: stitched code where this machine
    has the stencils, -O2 and -O0 code, the instructions."""
    stitched = [("stitched", lambda: jit.stitch(schedule))] if jit.stitch_available() else []
    return [*stitched, ("-O2", lambda: jit.compile(schedule, opt=2)), ("-O0", lambda: jit.compile(schedule, opt=0)),
            ("instructions", lambda: VMProgram(schedule))]


def _programs() -> list[tuple[str, Any]]:
    return [(name, make()) for name, make in _makers(_schedule())]


def _point_outputs(program: object, x: np.ndarray, n_out: int) -> np.ndarray:
    out = np.empty(n_out)
    if isinstance(program, VMProgram):
        return program.batch(x.reshape(1, -1))[0]
    program.point(x.ctypes.data, out.ctypes.data, out.ctypes.data + 8)  # type: ignore[attr-defined]
    return out


def test_each_tier_is_called_as_a_builtin_with_the_bits_of_its_other_entries() -> None:
    x = np.array([0.3, -1.2, 2.5])
    for name, program in _programs():
        call = program.call  # type: ignore[attr-defined]
        assert type(call).__name__ == "builtin_function_or_method", name
        n_out = program.n_out  # type: ignore[attr-defined]
        rest = np.empty(n_out - 1)
        got = np.array([call(x, rest), *rest])
        assert got.tobytes() == _point_outputs(program, x, n_out).tobytes(), name


def test_a_call_leaks_no_reference_and_a_wrong_call_is_refused() -> None:
    x = np.array([0.3, -1.2, 2.5])
    for name, program in _programs():
        call = program.call  # type: ignore[attr-defined]
        rest = np.empty(program.n_out - 1)  # type: ignore[attr-defined]
        counts = sys.getrefcount(x), sys.getrefcount(rest)
        values = {call(x, rest) for _ in range(1000)}
        assert counts == (sys.getrefcount(x), sys.getrefcount(rest)), name
        (value,) = values
        assert type(value) is float and sys.getrefcount(value) == 3, name  # the set, the name, the argument
        with pytest.raises(SystemError):  # refused, not run on what lies past the arguments
            call(x)


def test_a_call_taken_before_its_program_is_dropped_still_runs() -> None:
    """A caller may hold ``call`` while its program is replaced and dropped: the call keeps the
    machine code and the arrays it reads alive."""
    x = np.array([0.3, -1.2, 2.5])
    for _, make in _makers(_schedule("cos(x)*y^2 - z/(2 + sin(x*z))")):
        program = make()
        call = program.call
        rest = np.empty(program.n_out - 1)
        want = [call(x, rest), *rest]
        del program
        gc.collect()
        np.zeros(1 << 16)  # new allocations where freed memory was
        assert [call(x, rest), *rest] == want


def test_a_function_calls_its_code_through_the_builtin() -> None:
    text = " + ".join(f"100*(x{i + 1} - x{i}^2)^2 + (1 - x{i})^2" for i in range(1, 40))
    f = symad.compile(text)
    f.prepare()
    assert type(f.value_grad_program().call).__name__ == "builtin_function_or_method"
    x = np.linspace(-1.2, 1.3, 40)
    value, grad = f.value_and_grad(x)
    want_value, want_grad = symad.compile(text, backend="python").value_and_grad(x)
    assert value == want_value and grad.tobytes() == want_grad.tobytes()


def test_a_loop_programs_value_and_gradient_call_is_a_builtin_with_the_bits_of_numpy() -> None:
    text = "n = 3000; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"
    f = symad.compile(text, backend="native")
    f.prepare()
    assert type(f._whole._call).__name__ == "builtin_function_or_method"
    x = np.linspace(-1.2, 1.3, 3000)
    value, grad = f.value_and_grad(x)
    want_value, want_grad = symad.compile(text, backend="python").value_and_grad(x)
    assert value == want_value and grad.tobytes() == want_grad.tobytes()
