"""Every operation of the op table through both exports: the C and the Python give symad's
bits, value and gradient, on the op's domain points and on special values (zeros, ±1, poles,
overflow, ±inf, nan), also where an arm of a ``where`` not taken would be a domain error.

The operations are read from the table, so an operation added later is covered too (one
lowered as a C library function the Python export does not know is refused by name)."""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import itertools
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symad
from symad import Graph
from symad.core.ops import OPS
from symad.tools.exporters import c_source, python_source

CC = shutil.which("gcc") or shutil.which("cc")
OPERATIONS = [name for name, spec in OPS.items() if spec.arity]
SPECIALS = (0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 5e-324, 710.0, -710.0, 1e300, math.inf, -math.inf, math.nan)
P = ctypes.POINTER(ctypes.c_double)


def expressions(op: str) -> dict[str, symad.Expr]:
    """``op`` on variables a, b, ...; and under a select, ``where(s > 0, op(a, ...), s)``."""
    g = Graph()
    args = [symad.var(v, g) for v in "abc"[:OPS[op].arity]]
    plain = args[0].apply(op, *args[1:])
    s = symad.var("s", g)
    return {"plain": plain, "guarded": s.apply("gt", 0.0).apply("where", plain, s)}


def points(op: str) -> np.ndarray:
    """Each argument over the special values and the op's domain points' coordinates."""
    spec = OPS[op]
    values = sorted({*SPECIALS, *(c for p in spec.domain for c in p)}, key=lambda v: (math.isnan(v), v))
    values = values if spec.arity < 3 else [0.0, -0.0, 1.0, -2.5, 1e300, math.inf, -math.inf, math.nan]
    return np.array(list(itertools.product(values, repeat=spec.arity)), dtype=float)


def variables(e: symad.Expr, op: str) -> list[str]:
    return ["s", *"abc"[:OPS[op].arity]] if "s" in e.variables else list("abc"[:OPS[op].arity])


def hexes(values) -> list[str]:
    return [float(v).hex() for v in values]


@pytest.fixture(scope="module")
def c_library(tmp_path_factory: pytest.TempPathFactory):
    """Every op's exported C, plain and guarded, compiled as one file (one compiler process;
    a static helper two files define is kept once) into one shared library."""
    if CC is None:
        return None
    root = tmp_path_factory.mktemp("ops_c")
    lines: list[str] = []
    for op in OPERATIONS:
        for kind, e in expressions(op).items():
            name = f"{kind}_{op}"
            c_text, h_text = c_source(e, name, grad=True, variables=variables(e, op))
            (root / f"{name}.h").write_text(h_text)
            lines += [line for line in c_text.splitlines() if not (line.startswith("static ") and line in lines)]
    (root / "ops.c").write_text("\n".join(lines) + "\n")
    flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off", "-shared", "-fPIC"]
    r = subprocess.run([CC, *flags, "ops.c", "-o", "libops.so", "-lm"], cwd=root, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return ctypes.CDLL(str(root / "libops.so"))


def python_module(source: str, path: Path):
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def python_function(source: str, path: Path):
    return python_module(source, path).f


@pytest.mark.parametrize("op", OPERATIONS)
def test_both_exports_compute_symads_bits_for_every_operation(op: str, c_library, tmp_path: Path) -> None:
    base = points(op)
    for kind, e in expressions(op).items():
        names = variables(e, op)
        at = base if kind == "plain" else np.array([[s, *p] for s in (1.0, -1.0) for p in base])
        values, grads = e.compile(names, backend="native").value_and_grad(at)
        f = python_function(python_source(e, "f", grad=True, variables=names), tmp_path / f"{kind}_{op}.py")
        c = None
        if c_library is not None:
            c = getattr(c_library, f"{kind}_{op}")
            c.restype = ctypes.c_double
        wrong = []
        for x, value, grad in zip(at, values, grads):
            want = hexes([value, *grad])
            try:
                got_value, got_grad = f(x.tolist())
                python = hexes([got_value, *got_grad])
            except Exception as err:  # noqa: BLE001 - any exception is a failure, named below
                python = [type(err).__name__]
            if python != want:
                wrong.append(f"Python at {x.tolist()}: {python}, symad {want}")
            if c is not None:
                g = np.zeros(len(names))
                got = hexes([c(np.ascontiguousarray(x).ctypes.data_as(P), g.ctypes.data_as(P)), *g])
                if got != want:
                    wrong.append(f"C at {x.tolist()}: {got}, symad {want}")
        assert not wrong, f"{op} ({kind}, {len(wrong)} of {2 * len(at)}):\n" + "\n".join(wrong[:8])


NEW_OP = """
import math, numpy as np, pytest
from symad.core import ops
ops.define("bessel_j0", 1, math.sin, np.sin, (lambda a, out: a,), llvm=ops.Call("j0"))
import symad
from symad.tools.exporters import c_source, python_source
e = symad.parse("bessel_j0(x) + 1")
assert "j0(x[0])" in c_source(e)[0]
with pytest.raises(symad.SymadError, match="no Python for the C library function 'j0'"):
    python_source(e)
"""


def test_a_c_library_function_the_python_export_does_not_know_is_refused_by_name() -> None:
    """A new op lowered as a call of the C library's j0 exports to C as it is; the Python
    export names the function (it wrote ``j0(x[0])``, a NameError when run).  In a process of
    its own, defined before the other modules load, as a new op is."""
    r = subprocess.run([sys.executable, "-c", NEW_OP], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_python_exports_c_library_functions_give_the_c_librarys_bits(tmp_path: Path) -> None:
    """Each function of the C library the Python export knows, on the special values, against
    the C library itself: ``math``'s where it does not raise, the helpers' where it does."""
    from symad.tools.exporters.straight_line import PYTHON

    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m"))
    except OSError:
        pytest.skip("no C library to load")
    called = {c: py for c, py in PYTHON.functions.items() if c not in ("symad_bits", "symad_double")}
    binary = {"atan2", "pow", "hypot"}
    source = "\n\n".join(["import ctypes", "import math", *PYTHON.helpers.values(), "FUNCTIONS = {" + ", ".join(
        f"{c!r}: {py}" for c, py in called.items()) + "}"])
    functions = python_module(source + "\n", tmp_path / "library.py").FUNCTIONS
    wrong = []
    for c, fn in functions.items():
        want = getattr(libm, c)
        want.argtypes, want.restype = (ctypes.c_double,) * (2 if c in binary else 1), ctypes.c_double
        for args in itertools.product(SPECIALS, repeat=2 if c in binary else 1):
            try:
                got = fn(*args).hex()
            except Exception as err:  # noqa: BLE001
                got = type(err).__name__
            if got != want(*args).hex():
                wrong.append(f"{c}{args}: {got}, the C library {want(*args).hex()}")
    assert not wrong, "\n".join(wrong[:10])
