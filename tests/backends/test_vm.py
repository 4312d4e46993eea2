"""The instruction interpreter (symad.backends.vm): the bits of compiled code, for every op,
at points and over batches, and the tier that serves a Function's calls after the first."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from support.expressions import expressions
from support.properties import property_test

import symad
from symad import Graph
from symad.ad.reverse import gradient
from symad.backends.vm import InterpretedRows, VMProgram
from symad.core.ops import OPS
from symad.native import ir, jit
from symad.schedule.schedule import Schedule

pytestmark = pytest.mark.skipif(not jit.available(), reason="llvmlite is not installed")

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.5, 1e300, -1e-300, math.inf, -math.inf, math.nan]


def _programs(text: str) -> tuple[VMProgram, object]:
    e = symad.parse(text, Graph())
    native = e.compile(backend="native").value_grad_program()
    return VMProgram(native.schedule), native


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit, signed zeros included; any nan equals any nan (its sign and payload are
    the hardware's, and LLVM's constant folding may choose another)."""
    a, b = np.asarray(a), np.asarray(b)
    nan = np.isnan(a)
    return bool((nan == np.isnan(b)).all() and a[~nan].tobytes() == b[~nan].tobytes())


def test_every_primitive_op_has_an_opcode():
    codes = ir.interpreter_opcodes()
    assert set(codes) == {n for n, s in OPS.items() if s.arity and n != "where"} | {"select", ir.COPY}
    assert len(set(codes.values())) == len(codes)


@pytest.mark.parametrize("op", [n for n, s in OPS.items() if s.arity])
def test_each_op_gives_the_bits_of_compiled_code(op):
    spec = OPS[op]
    text = f"x {spec.symbol} y" if spec.kind == "infix" else f"({spec.symbol}x)" if spec.kind == "prefix" else \
        f"{op}({', '.join('xyz'[:spec.arity])})"
    vm, native = _programs(text + " + x^2 + x^-3 + y^4")  # small powers as products too
    # the copy-and-patch tier too (symad.native.stitch), where this machine has it
    stitched = jit.stitch(vm.schedule) if jit.stitch_available() else None
    n = len(vm.schedule.inputs)
    points = [(a, b, c)[:n] for a in SPECIAL for b in SPECIAL[::3] for c in (SPECIAL[::5] if n > 2 else [0.0])]
    for p in points:
        x = np.array(p, dtype=float)
        want = native.point(x)
        assert _same(vm.point(x), want), (op, p)
        if stitched is not None:
            rest = np.empty(stitched.n_out - 1)
            assert _same(np.array([stitched.call(x, rest), *rest]), want), (op, p)
    rows = np.array(points, dtype=float).reshape(len(points), n)
    want = native.batch(rows)
    assert _same(vm.batch(rows), want)
    if stitched is not None:
        out = np.empty_like(want)
        stitched.batch(rows.ctypes.data, out.ctypes.data, len(rows))
        assert _same(out, want), op


@property_test(40)
@given(expressions(max_depth=4))
def test_random_expressions_give_the_bits_of_compiled_code(text):
    e = symad.parse(text, Graph())
    if not e.variables:
        return
    vm, native = _programs(text)
    rows = np.random.default_rng(5).uniform(-3, 3, (20, len(e.variables)))
    with np.errstate(all="ignore"):
        assert _same(vm.batch(rows), native.batch(rows)), text
        for x in rows[:5]:
            rest_vm, rest_native = np.empty(vm.n_out - 1), np.empty(vm.n_out - 1)
            assert _same(np.array([vm.call(x, rest_vm), *rest_vm]), np.array([native.call(x, rest_native),
                                                                              *rest_native])), text


@property_test(25)
@given(expressions(max_depth=4))
def test_random_expressions_summed_over_rows_give_the_bits_of_the_compiled_loop(text):
    e = symad.parse(text, Graph())
    if not e.variables:
        return
    g = e.graph
    inputs = [g.var(v) for v in e.variables]
    partials = gradient(g, e.id, inputs)
    schedule = Schedule.build(g, [e.id, *(partials[v] for v in inputs)], inputs)
    # the first variable a parameter w[0], the others data columns (one of them strided)
    sources = [("w", 0)] + [("col", j) for j in range(len(inputs) - 1)]
    rng = np.random.default_rng(7)
    table = rng.uniform(-3, 3, (len(inputs), 41))
    columns = [table[k + 1] for k in range(len(inputs) - 1)]
    if columns:
        columns[0] = np.repeat(columns[0], 2)[::2]
    cols = np.array([c.ctypes.data for c in columns] or [0], dtype=np.uintp)
    strides = np.array([c.strides[0] // 8 for c in columns] or [0], dtype=np.int64)
    w = table[0, :1].copy()
    loops = [InterpretedRows(schedule, sources), jit.compile_rows(schedule, sources)]
    with np.errstate(all="ignore"):
        for start, end, idx in ((0, 41, None), (3, 20, None), (0, 0, None), (0, 7, np.array([5, 1, 1, 40, 0, 9, 3]))):
            outs = []
            for loop in loops:
                out = np.full(len(schedule.outputs), 7.0)
                arg = w if isinstance(loop, InterpretedRows) else w.ctypes.data
                loop.rows(arg, cols.ctypes.data, strides.ctypes.data, None if idx is None else idx.ctypes.data,
                          start, end, out.ctypes.data)
                outs.append(out)
            assert _same(outs[0], outs[1]), (text, start, end)


def test_a_constant_output_and_an_input_output():
    e = symad.parse("x + 0*y", Graph())  # d/dy is the constant 0, d/dx the constant 1
    vm, native = _programs(str(e))
    assert vm.point(np.array([2.0])).tolist() == native.point(np.array([2.0])).tolist() == [2.0, 1.0]


def test_a_bad_point_is_a_point_error():
    vm, _ = _programs("x*y")
    with pytest.raises(symad.PointError):
        vm.point(np.array([1.0, 2.0, 3.0]))


def test_the_second_call_of_a_function_runs_on_instructions():
    text = "+".join(f"(1-x{i})^2 + 100*(x{i + 1}-x{i}^2)^2" for i in range(5))
    f = symad.parse(text, Graph()).compile()
    x = np.linspace(-1, 1, len(f.variables))
    first = f.value_and_grad(x)
    second = f.value_and_grad(x)
    assert f._value_grad.vm is not None and f._value_grad.program is None
    assert first[0] == second[0] and _same(first[1], second[1])
    batch = f.value_and_grad(np.array([x, x]))
    assert _same(batch[1][0], first[1])


def test_instructions_run_level_by_level_grouped_by_opcode():
    """Each instruction reads only inputs, constants and results of instructions before it;
    levels come in order and, within a level, one run per opcode (what makes the interpreter's
    dispatch predictable)."""
    text = "+".join(f"(1-x{i})^2 + 100*(x{i + 1}-x{i}^2)^2" for i in range(30))
    f = symad.parse(text, Graph()).compile()
    f.value_and_grad(np.linspace(-1, 1, len(f.variables)))
    vm = f._value_grad.vm
    first_result = len(vm.values) - vm.size
    ready = set(range(first_result))
    level = dict.fromkeys(ready, 0)
    levels = []
    for opcode, dest, a, b in vm.code.tolist():
        assert a in ready and b in ready, "an instruction reads a value not yet computed"
        level[dest] = max(level[a], level[b]) + 1
        levels.append((level[dest], opcode))
        ready.add(dest)
    assert levels == sorted(levels)
    runs = 1 + sum(x[1] != y[1] for x, y in zip(levels, levels[1:]))
    assert runs <= len({lv for lv, _ in levels}) * len({op for _, op in levels})
    assert runs < vm.size / 10  # Rosenbrock's 30 terms: a handful of runs, not one per instruction
