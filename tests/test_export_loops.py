"""Exports of expressions with sums kept as loops: real loops in C and Python, symad's bits."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from support.cli_helpers import run

import symad
from symad import Graph, SymadError
from symad.tools.exporters import c_source, python_source

CC = shutil.which("gcc") or shutil.which("cc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler on this machine")
P = ctypes.POINTER(ctypes.c_double)
ROSENBROCK = "n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"
MIXED = ("n = {n}; a*sum(i = 1..n, sin(x[i])*exp(-x[i+1]^2/i) + where(x[i] > 0, sqrt(x[i]), x[i+2]/3)) "
         "+ a^2*x[5] + sum(i = 1..n, abs(x[i] - c[i]))")
QUADRATIC = "n = {n}; sum(i = 1..n, x[i]*sum(j = 1..n, A[i,j]*x[j]))"
# a product at the top level (its blocks' products a tree) and inside a sum's body; its gradient's loops
PRODUCT = "n = {n}; prod(i = 1..n, 1 + x[i]/n) + sum(i = 1..n, x[i]*prod(j = 1..20, 1 + x[i]*y[j]/20))"


def bits(values) -> list[str]:
    return [float(v).hex() for v in np.atleast_1d(values)]


def point_and_data(f: symad.IndexedFunction, seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    data = {name: rng.standard_normal(tuple(hi - lo + 1 for lo, hi in f.spans[name])) for name in f.data}
    return rng.standard_normal(f.size), data


def c_library(tmp_path: Path, expr: symad.Expr) -> ctypes.CDLL:
    c_text, h_text = c_source(expr, "f", grad=True)
    (tmp_path / "f.c").write_text(c_text)
    (tmp_path / "f.h").write_text(h_text)
    flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off"]
    r = subprocess.run([CC, *flags, "-shared", "-fPIC", "f.c", "-o", "libf.so", "-lm"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr  # no warning at all
    lib = ctypes.CDLL(str(tmp_path / "libf.so"))
    lib.f.restype = ctypes.c_double
    return lib


@needs_cc
@pytest.mark.parametrize("text, n", [
    (ROSENBROCK, 20_000),  # three blocks of the canonical order
    (ROSENBROCK, 9 * 8192 + 5),  # ten blocks: the pairwise sum's eight partial sums
    (ROSENBROCK, 140 * 8192 - 3),  # 140 blocks: its halves
    (MIXED, 20_000),
    (QUADRATIC, 300),  # a loop inside a loop, data of two indices (loops at any size here)
    (PRODUCT, 5 * 8192 + 7),  # six blocks: a prod's tree of pairs with one left over
])
def test_exported_c_loops_compute_symads_bits(tmp_path: Path, text: str, n: int) -> None:
    expr = symad.parse(text.format(n=n), Graph())
    if not expr.graph.scoped:
        pytest.skip("written out at this size")
    f = symad.compile(expr)
    lib = c_library(tmp_path, expr)
    x, data = point_and_data(f)
    grad = np.empty(f.size)
    args = [x.ctypes.data_as(P), *(np.ascontiguousarray(data[d]).ctypes.data_as(P) for d in f.data)]
    value = lib.f(*args, grad.ctypes.data_as(P))
    want = f.value_and_grad(x, data)
    assert bits(value) == bits(want[0]) and bits(grad) == bits(want[1])
    assert bits(lib.f(*args, None)) == bits(want[0])  # grad NULL: the value alone


def python_function(tmp_path: Path, expr: symad.Expr):
    (tmp_path / "fl.py").write_text(python_source(expr, "f", grad=True))
    spec = importlib.util.spec_from_file_location("fl", tmp_path / "fl.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@pytest.mark.parametrize("text, n", [(ROSENBROCK, 20_000), (MIXED, 20_000), (QUADRATIC, 120), (PRODUCT, 20_000)])
def test_exported_python_loops_compute_symads_bits(tmp_path: Path, text: str, n: int) -> None:
    expr = symad.parse(text.format(n=n), Graph())
    if not expr.graph.scoped:
        pytest.skip("written out at this size")
    f = symad.compile(expr)
    fn = python_function(tmp_path, expr)
    x, data = point_and_data(f, seed=1)
    value, grad = fn(x.tolist(), *(data[d].ravel().tolist() for d in f.data))
    want = f.value_and_grad(x, data)
    assert bits(value) == bits(want[0]) and bits(grad) == bits(want[1])


def test_the_export_is_loops_not_their_unrolling() -> None:
    expr = symad.parse(ROSENBROCK.format(n=1_000_000), Graph())
    c_text, h_text = c_source(expr, "rosen", grad=True)
    assert len(c_text) < 6000 and "for (long i0 = " in c_text and "#define ROSEN_SIZE 1000000" in h_text
    assert "double rosen(const double *x, double *grad);" in h_text
    py = python_source(expr, "rosen")
    assert "for i0 in range(" in py and len(py) < 4000


@pytest.mark.parametrize("reduction", ["sum", "prod"])
def test_a_long_loops_blocks_on_the_heap_are_freed(reduction: str) -> None:
    c_text, _ = c_source(symad.parse(f"{reduction}(i = 1..40000000, x[i])", Graph()), "big")
    assert c_text.count("malloc(") == c_text.count("free(") == 1


def test_what_is_not_exported_says_so() -> None:
    expr = symad.parse(ROSENBROCK.format(n=20_000), Graph())
    with pytest.raises(SymadError, match="--hessian of an expression with sums kept as loops"):
        c_source(expr, hessian=True)
    with pytest.raises(SymadError, match="vector of values"):
        python_source(symad.parse("each(i = 1..20000, x[i]^2)", Graph()))


@needs_cc
def test_cli_export_c_of_a_loop(tmp_path: Path) -> None:
    text = ROSENBROCK.format(n=50_000)
    r = run("export-c", text, "--grad", "-o", str(tmp_path / "rosen.c"), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["variables"] == ["x[1..50000]"] and (tmp_path / "rosen.h").exists()
    r = run("export-py", text, "-o", str(tmp_path / "rosen.py"))
    assert r.returncode == 0 and "x[1..50000]" in r.stdout
