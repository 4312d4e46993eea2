"""The loops of x'Ax take the shape LLVM's vectorisers want: the rows' dot products (a sum inside a
loop, in eight lanes) and the gradient's column sums (computed with the loops swapped) come out of
LLVM's passes as vector instructions, and the program computes each dot product once for the value
and the gradient."""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.loops import looping, parse_looped

from symad import native
from symad.indexed_function import IndexedFunction
from symad.native import codegen, loop_ir
from symad.schedule.loop_nest import loop_program

pytestmark = pytest.mark.skipif(not native.available(), reason="needs llvmlite")


def _program(n: int) -> tuple[str, str]:
    with looping(0):
        f = IndexedFunction(parse_looped(f"sum(i = 1..{n}, x[i]*sum(j = 1..{n}, A[i,j]*x[j]))"), wrt=["x"])
    text = loop_ir.program_ir(loop_program(f.graph, f._outputs, f.spans))
    optimised = str(codegen.optimized_module(text, codegen.new_target_machine(2), 2, 10**6))
    return text, optimised


def test_xax_computes_its_sums_inside_once_each_and_vectorised() -> None:
    text, optimised = _program(64)
    arrays = re.findall(r"%(\w+) = alloca double, i64 (\d+)", text)
    # one array of the rows' dot products (value and gradient share it), eight lanes of column sums
    assert sorted(int(size) for name, size in arrays if not name.endswith("acc")) == [64, 8 * 64]
    vector_adds = re.findall(r"fadd <(\d+) x double>", optimised)
    assert vector_adds and all(int(width) >= 2 for width in vector_adds)
    assert "vector.body" in optimised  # the loop vectoriser took the swapped loop (unit stride over rows)


def test_past_the_stack_budget_a_sum_inside_runs_inside_its_loop(monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.setattr(loop_ir, "HOIST_STACK_BYTES", 8 * 64)  # the dot products' array, not the columns' lanes
    text, _ = _program(64)
    assert [size for name, size in re.findall(r"%(\w+) = alloca double, i64 (\d+)", text)
            if not name.endswith("acc")] == ["64"]
    rng = np.random.default_rng(3)
    x, A = rng.uniform(-1, 1, 64), rng.uniform(-1, 1, (64, 64))
    with looping(0):
        expr = parse_looped("sum(i = 1..64, x[i]*sum(j = 1..64, A[i,j]*x[j]))")
        compiled = IndexedFunction(expr, wrt=["x"])
        numpy_only = IndexedFunction(expr, wrt=["x"], backend="python")
    got = compiled.value_and_grad({"x": x, "A": A})
    want = numpy_only.value_and_grad({"x": x, "A": A})
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
