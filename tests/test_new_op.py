"""Adding an operation is one ``define()``: a new op, ``log2`` lowered as a call of the C
library's ``log2``, defined at run time in a fresh process, goes through every layer from its
entry alone: parse, print, LaTeX, SymPy both ways, differentiate, the tape, the instruction
interpreter, Python code, native code (a point and a batch), pictures, explain, save and load,
and both exports (C compiled and run, Python run), with the same bits everywhere."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

NEW_OP = r'''
import ctypes, math, subprocess, sys, tempfile
from pathlib import Path
import numpy as np
from symad.core import ops, semantics

LN2 = math.log(2.0)
ops.define("log2", 1, math.log2, semantics.NumpyFunction("log2", math.log2), (lambda a, out: 1.0 / (a * LN2),),
           llvm=ops.Call("log2"), domain=((0.7,), (2.5,)), latex=r"\log_{2}", sympy="codegen.cfunctions.log2",
           math_raises="-math.inf if x == 0.0 else math.nan", doc="the base-2 logarithm")

import symad
from symad import Graph
from symad.backends.tape import Tape
from symad.backends.vm import VMProgram
from symad.interop import from_sympy, to_sympy
from symad.tools.exporters import c_source, python_source

g = Graph()
e = symad.parse("log2(x)*y + log2(y)", g)                          # parse
assert e.variables == ("x", "y")
assert [str(t) for t in symad.to_postfix("log2(x)")] == ["x", "log2"]
assert str(e) == "log2(x)*y + log2(y)" and symad.parse(str(e), g) == e, str(e)  # print
assert e.latex() == r"\log_{2}\left(x\right)\,y + \log_{2}\left(y\right)", e.latex()  # LaTeX
s = to_sympy(e)                                                      # SymPy both ways
assert "log2(x)" in str(s), s
assert from_sympy(s, g) == e
d = e.diff("x")                                                      # differentiate
assert "log2" not in str(d) and math.isclose(d.evaluate(x=2.0, y=3.0), 3.0 / (2.0 * LN2), rel_tol=1e-15)

names = ["x", "y"]
point = np.array([2.0, 3.0])
value = math.log2(2.0) * 3.0 + math.log2(3.0)
want = [value, d.evaluate(x=2.0, y=3.0), e.diff("y").evaluate(x=2.0, y=3.0)]
assert math.isclose(want[2], 1.0 + 1.0 / (3.0 * LN2), rel_tol=1e-15)
bits = [v.hex() for v in want]
tape = Tape(g, e.id, [g.var(n) for n in names])                     # the tape
v, grad = tape.value_and_grad([2.0, 3.0])
assert [float(t).hex() for t in (v, *grad)] == bits, (v, grad)
python = e.compile(names, backend="python")                          # Python code
v, grad = python.value_and_grad(point)
assert [float(t).hex() for t in (v, *grad)] == bits
vm = VMProgram(python.value_grad_program().schedule)                 # the instruction interpreter
assert [float(t).hex() for t in vm.point(point)] == bits
native = e.compile(names, backend="native")                          # native code: a point, a batch
v, grad = native.value_and_grad(point)
assert [float(t).hex() for t in (v, *grad)] == bits
batch = np.array([point] * 3000)
values, grads = native.value_and_grad(batch)
assert values.tolist() == [want[0]] * 3000 and grads[-1].tolist() == want[1:]
auto = e.compile(names)
for _ in range(3):                                                   # tiers: first calls, then compiled
    v, grad = auto.value_and_grad(point)
    assert [float(t).hex() for t in (v, *grad)] == bits

dot = symad.to_digraph(e, grad=True, at={"x": 2.0, "y": 3.0}).source  # pictures
assert "log2" in dot
table = symad.explain(e, {"x": 2.0, "y": 3.0})                     # explain
assert "log2" in str(table.rows) and table.result == dict(zip(names, want[1:])), table.result

assert symad.loads(symad.dumps(e)).evaluate(x=2.0, y=3.0) == value   # save and load
loaded = symad.loads(symad.dumps(native))
assert loaded.value_and_grad(point)[1].tolist() == want[1:]

folder = Path(tempfile.mkdtemp())                                    # export-py
(folder / "f.py").write_text(python_source(e, "f", grad=True, variables=names))
sys.path.insert(0, str(folder))
import f as exported
v, grad = exported.f([2.0, 3.0])
assert [float(t).hex() for t in (v, *grad)] == bits
assert exported.f([0.0, 3.0])[0] == -math.inf                         # C's log2(0), where math raises

c_text, h_text = c_source(e, "f", grad=True, variables=names)        # export-c
assert "log2(" in c_text
cc = sys.argv[1]
if cc:
    (folder / "f.c").write_text(c_text)
    (folder / "f.h").write_text(h_text)
    r = subprocess.run([cc, "-std=c99", "-O2", "-ffp-contract=off", "-shared", "-fPIC", "f.c", "-o", "libf.so", "-lm"],
                       cwd=folder, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    P = ctypes.POINTER(ctypes.c_double)
    fn = ctypes.CDLL(str(folder / "libf.so")).f
    fn.restype = ctypes.c_double
    out = np.zeros(2)
    v = fn(point.ctypes.data_as(P), out.ctypes.data_as(P))
    assert [float(t).hex() for t in (v, *out)] == bits
print("ok")
'''


def test_a_new_op_is_one_define_through_every_layer() -> None:
    """One ``define`` call, made in a fresh process before the rest of symad is imported, and
    nothing else: every layer reads the new entry."""
    pytest.importorskip("sympy")
    cc = shutil.which("gcc") or shutil.which("cc") or ""
    p = subprocess.run([sys.executable, "-c", NEW_OP, cc], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr
