"""C and Python source export: the C compiles with -Werror and computes symad's bits; the Python
needs only the standard library and computes them too; the command line writes both."""

from __future__ import annotations

import ctypes
import importlib.util
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from backends.test_native import EXPRESSIONS
from support.cli_helpers import run
from support.expressions import example, expressions

import symad
from symad import Graph
from symad.second_order import SecondOrder
from symad.tools.exporters import c_source, python_source

CC = shutil.which("gcc") or shutil.which("cc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler on this machine")
CORPUS = " + ".join(f"({e})" for e in EXPRESSIONS)  # every function of the op table
RANDOM = [example(expressions(4, variables=("x", "y"), sums=True), seed,
                  lambda t: symad.parse(t, Graph()).variables == ("x", "y")) for seed in range(12)]
P = ctypes.POINTER(ctypes.c_double)


def compiled(tmp_path: Path, text: str, hessian: bool) -> tuple[ctypes.CDLL, str]:
    e = symad.parse(text, Graph())
    c_text, h_text = c_source(e, "f", grad=True, hessian=hessian)
    (tmp_path / "f.c").write_text(c_text)
    (tmp_path / "f.h").write_text(h_text)
    flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off"]
    r = subprocess.run([CC, *flags, "-shared", "-fPIC", "f.c", "-o", "libf.so", "-lm"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr  # no warning at all: -Werror
    lib = ctypes.CDLL(str(tmp_path / "libf.so"))
    lib.f.restype = ctypes.c_double
    return lib, c_text


def symad_numbers(so: SecondOrder, x: np.ndarray, hessian: bool) -> np.ndarray:
    value, grad = so.value_and_grad(x)
    return np.concatenate([[value], grad, so.hessian(x).ravel() if hessian else []])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return [float(v).hex() for v in a] == [float(v).hex() for v in b]


@needs_cc
@pytest.mark.parametrize("text", [CORPUS, *RANDOM], ids=["every function", *(f"random {k}" for k in range(12))])
def test_exported_c_compiles_cleanly_and_computes_symads_bits(tmp_path: Path, text: str) -> None:
    hessian = text == CORPUS or len(text) < 200
    lib, _ = compiled(tmp_path, text, hessian)
    so = SecondOrder(text)
    rng = np.random.default_rng(0)
    for x in rng.uniform(-2, 2, (40, 2)):
        g, h = np.zeros(2), np.zeros(4)
        v = lib.f(x.ctypes.data_as(P), g.ctypes.data_as(P), h.ctypes.data_as(P) if hessian else None) \
            if hessian else lib.f(x.ctypes.data_as(P), g.ctypes.data_as(P))
        got = np.concatenate([[v], g, h if hessian else []])
        want = symad_numbers(so, x, hessian)
        assert same_bits(got, want), (text, x, got, want)


@needs_cc
def test_grad_and_hess_may_be_null(tmp_path: Path) -> None:
    lib, c_text = compiled(tmp_path, "x^3*y", hessian=True)
    assert "double f(const double *x, double *grad, double *hess)" in c_text
    assert lib.f(np.array([2.0, 3.0]).ctypes.data_as(P), None, None) == 24.0


def _module(source: str, tmp_path: Path):
    path = tmp_path / "exported.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("exported", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("text", [CORPUS, *RANDOM[:6]], ids=["every function", *(f"random {k}" for k in range(6))])
def test_exported_python_computes_symads_bits_everywhere(tmp_path: Path, text: str) -> None:
    """Outside the domain too: where Python's math raises (log(0), 1/0, exp(800)), the export
    gives IEEE's inf or nan, as symad does (it raised on a third of these points)."""
    source = python_source(symad.parse(text, Graph()), "f", hessian=True)
    imports = {line.split()[1] for line in source.splitlines() if line.startswith("import ")}
    assert imports <= {"math", "struct", "ctypes"}
    f = _module(source, tmp_path).f
    so = SecondOrder(text)
    points = np.random.default_rng(1).uniform(-3, 3, (40, 2)).tolist() + [[0.0, 0.0], [-0.0, 1.0], [800.0, -1.0]]
    for x in points:
        value, grad, hess = f(x)
        got = np.concatenate([[value], grad, np.ravel(hess)])
        assert same_bits(got, symad_numbers(so, np.array(x), True)), (text, x)


class _Calls:
    """``math`` for an exported module, counting the calls of each function."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}

    def __getattr__(self, name: str):
        attr = getattr(math, name)
        if not callable(attr):
            return attr

        def counted(*args):
            self.count[name] = self.count.get(name, 0) + 1
            return attr(*args)
        return counted


@pytest.mark.parametrize("grad", [False, True])
def test_exported_python_computes_only_the_arm_taken(tmp_path: Path, grad: bool) -> None:
    """where(x > 0, sqrt(x), 0) raised "math domain error" at half the points: both arms
    were computed.  Now the arm's steps, in the value and in the gradient's sweep, sit in an
    ``if`` on the condition."""
    e = symad.parse("where(x > 0, sqrt(x), 0)", Graph())
    module = _module(python_source(e, "f", hessian=grad), tmp_path)
    module.math = calls = _Calls()
    fn = SecondOrder(e)
    for x in (-1.0, -0.0, 0.0, 4.0, 2.5, math.inf, math.nan):
        calls.count.clear()
        got = module.f([x])
        assert same_bits(np.concatenate([[got[0]], *map(np.ravel, got[1:])]) if grad else [got],
                         symad_numbers(fn, np.array([x]), grad) if grad else [fn.value(np.array([x]))]), x
        assert calls.count.get("sqrt", 0) == (1 if x > 0 else 0), (x, calls.count)


def test_a_step_shared_with_the_unconditional_part_is_computed_once_outside(tmp_path: Path) -> None:
    e = symad.parse("where(x > 1, log(x - 1) * sqrt(x), 0) + sqrt(x)", Graph())
    source = python_source(e, "f", grad=True)
    module = _module(source, tmp_path)
    module.math = calls = _Calls()
    for x, logs in ((3.0, 1), (0.5, 0)):
        calls.count.clear()
        module.f([x])
        assert calls.count.get("sqrt") == 1 and calls.count.get("log", 0) == logs, (x, calls.count)
    body = source[source.index("def f(x):"):].splitlines()
    sqrt_line = next(line for line in body if "sqrt(" in line)
    assert sqrt_line.startswith("    v") and not sqrt_line.startswith("        "), source  # outside the if


def test_nested_selects_and_their_gradients_run_only_the_arms_taken(tmp_path: Path) -> None:
    text = "where(x > 0, where(y > 1, log(y - 1) + sqrt(x), acosh(y + 1) / x), sqrt(-x) + log(-y))"
    e = symad.parse(text, Graph())
    module = _module(python_source(e, "f", hessian=True), tmp_path)
    so = SecondOrder(text)
    for x in np.random.default_rng(3).uniform(-3, 3, (60, 2)):
        value, grad, hess = module.f(x.tolist())
        assert same_bits(np.concatenate([[value], grad, np.ravel(hess)]), symad_numbers(so, x, True)), x


def test_names_are_checked() -> None:
    e = symad.parse("x + 1", Graph())
    for bad in ("int", "2f", "f-g", "symad_bits", "main"):
        with pytest.raises(symad.SymadError, match="the C function's name"):
            c_source(e, bad)
    with pytest.raises(symad.SymadError, match="identifier"):
        python_source(e, "def")


def test_cli_export_c_and_py(tmp_path: Path) -> None:
    r = run("export-c", "100*(y-x^2)^2 + (1-x)^2", "--grad", "-o", str(tmp_path / "rosen.c"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"wrote {tmp_path / 'rosen.h'} and {tmp_path / 'rosen.c'}: f(x, y), value, gradient\n"
    assert '#include "rosen.h"' in (tmp_path / "rosen.c").read_text()
    assert "double f(const double *x, double *grad);" in (tmp_path / "rosen.h").read_text()
    r = run("export-py", "x^3*y", "--hessian", "-o", "-")
    assert r.returncode == 0 and re.search(r"return v\d+, \[v\d+, v\d+\], \[\[v\d+, (v\d+)\], \[\1, 0.0\]\]\n",
                                            r.stdout), r.stdout + r.stderr
    r = run("export-py", "where(x > 0, sqrt(x), 0)", "--grad", "-o", str(tmp_path / "root.py"))
    assert r.returncode == 0, r.stderr
    f = _module((tmp_path / "root.py").read_text(), tmp_path).f
    assert [f([-1.0]), f([4.0])] == [(0.0, [0.0]), (2.0, [0.25])]
    r = run("export-c", "x", "--name", "int", "-o", str(tmp_path / "z.c"))
    assert r.returncode == 2 and "'int' is a C keyword" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------------ function names
BAD_C_NAMES = ["sin", "exp", "memcpy", "size_t", "NULL", "INFINITY", "abort", "sinf", "expl", "sqrtf128", "y0",
               "j1", "isnan", "signbit", "fpclassify", "M_PI", "HUGE_VAL", "FP_NAN", "uint64_t", "int8_t",
               "UINT64_C", "SIZE_MAX", "strlen", "memset", "malloc", "free", "exit", "div", "offsetof",
               "int", "double", "bool", "true", "nullptr", "typeof", "main", "_Foo", "_f", "a__b",
               "symad_bits", "2f", "f-g", "", "a" * 64]
BAD_PY_NAMES = ["math", "struct", "ctypes", "float", "abs", "int", "print", "isinstance", "ValueError", "_div",
                "_pow", "_bits", "def", "None", "ｍａｔｈ", "ｆｌｏａｔ", "ｓtruct", "ﬁ", "2f", ""]


@pytest.mark.parametrize("name", BAD_C_NAMES)
def test_c_names_that_break_the_code_are_refused(name: str) -> None:
    e = symad.parse("x + 1", Graph())
    with pytest.raises(symad.SymadError, match="^the C function's name: .*; choose another"):
        c_source(e, name)


@pytest.mark.parametrize("name", BAD_PY_NAMES)
def test_python_names_that_shadow_the_module_are_refused(name: str) -> None:
    e = symad.parse("x + 1", Graph())
    with pytest.raises(symad.SymadError, match="^the Python function's name: .*; choose another"):
        python_source(e, name)


def test_bad_names_on_the_command_line(tmp_path: Path) -> None:
    r = run("export-c", "x", "--name", "memcpy", "-o", str(tmp_path / "m.c"))
    assert r.returncode == 2 and "'memcpy' is reserved in C" in r.stderr and not list(tmp_path.iterdir())
    r = run("export-py", "x", "--name", "ｍａｔｈ", "-o", str(tmp_path / "m.py"))
    assert r.returncode == 2 and "Python reads 'ｍａｔｈ' as 'math'" in r.stderr and not list(tmp_path.iterdir())


@needs_cc
def test_every_name_the_c_headers_declare_is_refused(tmp_path: Path) -> None:
    """The oracle is the compiler: every identifier of the headers the C file includes (and
    <stdlib.h>, <stddef.h>) that, declared as the exported function, does not compile."""
    headers = "".join(f"#include <{h}>\n" for h in ("math.h", "stdint.h", "string.h", "stdlib.h", "stddef.h"))
    (tmp_path / "h.c").write_text(headers)
    macros = subprocess.run([CC, "-E", "-dM", "h.c"], cwd=tmp_path, capture_output=True, text=True, check=True)
    code = subprocess.run([CC, "-E", "-P", "h.c"], cwd=tmp_path, capture_output=True, text=True, check=True)
    words = {line.split()[1].split("(")[0] for line in macros.stdout.splitlines()}
    words |= set(re.findall(r"\b[A-Za-z_]\w*\b", code.stdout))
    words = sorted(w for w in words if not w.startswith("_"))
    lines = [f"double {w}(const double *x, double *grad);" for w in words]
    (tmp_path / "t.c").write_text(headers + "\n".join(lines) + "\n")
    r = subprocess.run([CC, "-fsyntax-only", "-fmax-errors=0", "-w", "t.c"], cwd=tmp_path, capture_output=True,
                       text=True)
    offset = headers.count("\n") + 1
    broken = {words[int(n) - offset] for n in re.findall(r"^t\.c:(\d+):", r.stderr, re.M)}
    assert len(broken) > 300  # the oracle works: sin, memcpy, NULL, uint64_t...
    from symad.tools.exporters import c_name_problem

    assert sorted(w for w in broken if c_name_problem(w) is None) == []


@needs_cc
def test_accepted_names_compile(tmp_path: Path) -> None:
    e = symad.parse("sin(x)*y + hypot(x, y)", Graph())
    results = set()
    for name in ("f", "rosen", "total", "x", "grad", "hess", "v1", "t3_", "Sin", "F"):
        c_text, h_text = c_source(e, name, grad=True, hessian=True)
        (tmp_path / f"{name}.c").write_text(c_text)
        (tmp_path / f"{name}.h").write_text(h_text)
        r = subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-c", f"{name}.c"], cwd=tmp_path,
                           capture_output=True, text=True)
        assert r.returncode == 0, (name, r.stderr)
        f = getattr(_module(python_source(e, name, grad=True), tmp_path), name)
        value, grad = f([1.0, 2.0])
        results.add((value, *grad))
    assert len(results) == 1  # the name changes nothing else
