"""symad and its peers, each wrapped to one contract so that they are timed doing the same job.

Per point: ``vg(p) -> (float, 1-D float64 array)`` and ``v(p) -> float`` for a point
``p`` given as a 1-D float64 ndarray in the workload's variable order: what
``scipy.optimize.minimize(f, x0, jac=True)`` passes and expects.  Batch:
``vg(X) -> (values (N,), gradients (N, n))`` for ``X`` of shape ``(N, n)``.
Each wrapper is the thinnest adapter from the library's natural call to that
contract; the conversions it needs are part of what is timed.

``build(workload, variant, batch)`` goes from the text to the callables; the
worker times it together with the first evaluation.  Every peer but symad
reads the text through :func:`benchmarks.peers.translate.fold`.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .translate import fold
from .workloads import Workload


@dataclass
class Impl:
    """A built peer: the callables and what it says about its own size."""

    vg: Callable[[Any], Any]
    v: Callable[[Any], Any]
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Peer:
    """One column of the report: a library in one configuration."""

    name: str  # worker argument
    variant: str  # worker argument ("" for none)
    label: str  # what the report prints
    requires: tuple[str, ...]  # importable modules
    applies: Callable[[Workload], bool] = lambda w: True
    reference_only: bool = False  # hand-written code: shown, but not a peer in the targets
    builds: bool = True  # builds a reusable function (eager autograd re-records its tape at every call)

    @property
    def id(self) -> str:
        return f"{self.name}[{self.variant}]" if self.variant else self.name


def _postfix(text: str, info: dict[str, Any]) -> list[Any]:
    """symad's postfix of ``text``; records the parse time in ``info`` (a cost every peer shares here)."""
    import symad

    t0 = time.perf_counter()
    tokens = symad.to_postfix(text)
    info["parse_s"] = time.perf_counter() - t0
    return tokens


def lazy(factory: Callable[[], Callable[[Any], Any]]) -> Callable[[Any], Any]:
    """A callable built on its first call: the value-only function is not part of the timed build."""
    built: list[Callable[[Any], Any]] = []

    def call(p: Any) -> Any:
        if not built:
            built.append(factory())
        return built[0](p)

    return call


def _split(out: Any, n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """A list of per-output results (scalars broadcast) → (values (N,), gradients (N, n))."""
    cols = [np.broadcast_to(np.asarray(o, dtype=float), (n_points,)) for o in out]
    return np.array(cols[0]), np.stack(cols[1:], axis=1)


# ============================================================================ symad
def symad_backends() -> list[str]:
    """The backends ``symad.Function`` accepts by keyword, if it has that keyword (else none)."""
    import typing

    import symad

    params = inspect.signature(symad.Function.__init__).parameters
    if "backend" not in params:
        return []
    import sys

    declared = getattr(sys.modules[symad.Function.__module__], "BACKENDS", None) or getattr(
        getattr(symad, "compiler", None), "BACKENDS", None
    )
    if declared:
        names = list(declared)
    else:
        names = [a for a in typing.get_args(params["backend"].annotation) if isinstance(a, str)]
        names = names or ["python", "numpy", "native"]
    return [b for b in names if b not in ("auto", None)]


def build_symad(w: Workload, variant: str, batch: bool) -> Impl:
    import symad

    t0 = time.perf_counter()
    expr = symad.parse(w.text)
    parse_s = time.perf_counter() - t0
    fn = symad.Function(expr, backend=variant) if variant else symad.compile(expr)
    return Impl(fn.value_and_grad, fn.value, {"expr": expr, "function": fn, "parse_s": parse_s})


# ============================================================================ SymPy
def build_sympy(w: Workload, variant: str, batch: bool) -> Impl:
    import sympy as sp

    from .translate import sympy_dialect

    xs = sp.symbols(w.variables)
    info: dict[str, Any] = {}
    f = fold(_postfix(w.text, info), sympy_dialect(), dict(zip(w.variables, xs, strict=True)))
    grads = [sp.diff(f, x) for x in xs]
    cse = variant == "cse"
    if batch:
        fvg = sp.lambdify(xs, [f, *grads], modules="numpy", cse=cse)
        n_points = w.batch

        def value_batch() -> Callable[[Any], Any]:
            fv = sp.lambdify(xs, f, modules="numpy", cse=cse)
            return lambda X: np.broadcast_to(np.asarray(fv(*X.T), dtype=float), (n_points,))

        return Impl(lambda X: _split(fvg(*X.T), n_points), lazy(value_batch), info)
    fvg = sp.lambdify(xs, [f, *grads], modules="math", cse=cse)

    def vg(p: np.ndarray) -> tuple[float, np.ndarray]:
        out = fvg(*p)
        return float(out[0]), np.array(out[1:], dtype=float)

    def value() -> Callable[[Any], Any]:
        fv = sp.lambdify(xs, f, modules="math", cse=cse)
        return lambda p: float(fv(*p))

    return Impl(vg, lazy(value), info)


# ============================================================================ SymEngine
def _symengine_backend() -> str:
    import symengine as se

    try:
        x = se.Symbol("x")
        se.Lambdify([x], [x + 1], backend="llvm")
        return "llvm"
    except Exception:  # noqa: BLE001 - a SymEngine built without LLVM raises various errors
        return "lambda"


def build_symengine(w: Workload, variant: str, batch: bool) -> Impl:
    import symengine as se

    from .translate import symengine_dialect

    xs = se.symbols(w.variables) if len(w.variables) > 1 else [se.Symbol(w.variables[0])]
    xs = list(xs)
    info: dict[str, Any] = {}
    f = fold(_postfix(w.text, info), symengine_dialect(), dict(zip(w.variables, xs, strict=True)))
    grads = [f.diff(x) for x in xs]
    backend = _symengine_backend()
    cse = variant == "cse"
    fvg = se.Lambdify(xs, [f, *grads], backend=backend, cse=cse, real=True)

    def value() -> Callable[[Any], Any]:
        fv = se.Lambdify(xs, [f], backend=backend, cse=cse, real=True)
        return (lambda X: fv(X)[:, 0]) if batch else (lambda p: float(fv(p)[0]))

    info["backend"] = backend
    if batch:

        def vgb(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            out = fvg(X)
            return out[:, 0], out[:, 1:]

        return Impl(vgb, lazy(value), info)

    def vg(p: np.ndarray) -> tuple[float, np.ndarray]:
        out = fvg(p)
        return float(out[0]), out[1:]

    return Impl(vg, lazy(value), info)


# ============================================================================ CasADi
def build_casadi(w: Workload, variant: str, batch: bool) -> Impl:
    import casadi as ca

    from .translate import casadi_dialect

    n = len(w.variables)
    x = ca.SX.sym("x", n)
    info: dict[str, Any] = {}
    f = fold(_postfix(w.text, info), casadi_dialect(), dict(zip(w.variables, ca.vertsplit(x), strict=True)))
    g = ca.gradient(f, x)
    opts = {"cse": variant == "cse"}
    fvg = ca.Function("vg", [x], [f, g], opts)
    info.update(instructions_vg=int(fvg.n_instructions()))

    def value() -> Callable[[Any], Any]:
        fv = ca.Function("v", [x], [f], opts)
        if batch:
            mv = fv.map(w.batch)
            return lambda X: mv(X.T).full().ravel()
        return lambda p: float(fv(p))

    if batch:
        mvg = fvg.map(w.batch)

        def vgb(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            fx, gx = mvg(X.T)
            return fx.full().ravel(), gx.full().T

        return Impl(vgb, lazy(value), info)

    if not hasattr(fvg, "buffer"):  # CasADi < 3.6

        def vg(p: np.ndarray) -> tuple[float, np.ndarray]:
            fx, gx = fvg(p)
            return float(fx), gx.full().ravel()

        return Impl(vg, lazy(value), info)
    # Function.buffer is CasADi's low-overhead call (about ten times faster than fvg(p) here).
    buf, run = fvg.buffer()
    info["call"] = "Function.buffer"

    def vg_buffer(p: np.ndarray) -> tuple[float, np.ndarray]:
        fx, gx = np.empty(1), np.empty(n)
        buf.set_arg(0, memoryview(p))
        buf.set_res(0, memoryview(fx))
        buf.set_res(1, memoryview(gx))
        run()
        return float(fx[0]), gx

    def value_buffer() -> Callable[[Any], Any]:
        vbuf, vrun = ca.Function("v", [x], [f], opts).buffer()

        def v(p: np.ndarray) -> float:
            fx = np.empty(1)
            vbuf.set_arg(0, memoryview(p))
            vbuf.set_res(0, memoryview(fx))
            vrun()
            return float(fx[0])

        return v

    return Impl(vg_buffer, lazy(value_buffer), info)


# ============================================================================ JAX
def build_jax(w: Workload, variant: str, batch: bool) -> Impl:
    import jax

    jax.config.update("jax_enable_x64", True)
    from .translate import jax_dialect

    info: dict[str, Any] = {}
    tokens, dialect, names = _postfix(w.text, info), jax_dialect(), w.variables

    def f(x: Any) -> Any:
        return fold(tokens, dialect, {name: x[i] for i, name in enumerate(names)})

    if batch:
        fvg = jax.jit(jax.vmap(jax.value_and_grad(f)))
        fv = jax.jit(jax.vmap(f))

        def vgb(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            fx, gx = fvg(X)
            return np.asarray(fx), np.asarray(gx)

        return Impl(vgb, lambda X: np.asarray(fv(X)), info)
    fvg, fv = jax.jit(jax.value_and_grad(f)), jax.jit(f)

    def vg(p: np.ndarray) -> tuple[float, np.ndarray]:
        fx, gx = fvg(p)
        return float(fx), np.asarray(gx)

    return Impl(vg, lambda p: float(fv(p)), info)


# ============================================================================ PyTorch
def build_torch(w: Workload, variant: str, batch: bool) -> Impl:
    """Eager autograd: the tape is recorded anew at every call, as PyTorch users do."""
    import torch

    from .translate import torch_dialect

    info: dict[str, Any] = {}
    tokens, dialect, names = _postfix(w.text, info), torch_dialect(), w.variables

    def run(x: Any, axis: int) -> Any:
        return fold(tokens, dialect, dict(zip(names, x.unbind(axis), strict=True)))

    def vg(p: np.ndarray) -> tuple[Any, np.ndarray]:
        x = torch.from_numpy(p).requires_grad_()
        y = run(x, x.dim() - 1)
        if batch:
            y.backward(torch.ones_like(y))
            return y.detach().numpy(), x.grad.numpy()
        y.backward()
        return y.item(), x.grad.numpy()

    def v(p: np.ndarray) -> Any:
        with torch.no_grad():
            x = torch.from_numpy(p)
            y = run(x, x.dim() - 1)
            return y.numpy() if batch else y.item()

    return Impl(vg, v, info)


# ============================================================================ HIPS autograd
def build_autograd(w: Workload, variant: str, batch: bool) -> Impl:
    import autograd

    from .translate import autograd_dialect

    info: dict[str, Any] = {}
    tokens, dialect, names = _postfix(w.text, info), autograd_dialect(), w.variables
    if batch:

        def fb(X: Any) -> Any:
            return fold(tokens, dialect, {name: X[:, i] for i, name in enumerate(names)})

        def vgb(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            vjp, fx = autograd.make_vjp(fb)(X)
            return fx, vjp(np.ones(len(X)))

        return Impl(vgb, fb, info)

    def f(x: Any) -> Any:
        return fold(tokens, dialect, {name: x[i] for i, name in enumerate(names)})

    fvg = autograd.value_and_grad(f)

    def vg(p: np.ndarray) -> tuple[float, np.ndarray]:
        fx, gx = fvg(p)
        return float(fx), gx

    return Impl(vg, lambda p: float(f(p)), info)


# ============================================================================ hand-written
def build_numpy(w: Workload, variant: str, batch: bool) -> Impl:
    """Rosenbrock 2-D over a batch, vectorised by hand."""

    def vg(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x1, x2 = X[:, 0], X[:, 1]
        t = x2 - x1 * x1
        u = 1.0 - x1
        g = np.empty_like(X)
        g[:, 0] = -400.0 * t * x1 - 2.0 * u
        g[:, 1] = 200.0 * t
        return 100.0 * t * t + u * u, g

    def v(X: np.ndarray) -> np.ndarray:
        x1, x2 = X[:, 0], X[:, 1]
        t = x2 - x1 * x1
        u = 1.0 - x1
        return 100.0 * t * t + u * u

    return Impl(vg, v)


def build_c(w: Workload, variant: str, batch: bool) -> Impl:
    """Chained Rosenbrock written in C (benchmarks/peers/c/rosenbrock.c), compiled with gcc, called by ctypes."""
    import ctypes

    source = Path(__file__).with_name("c") / "rosenbrock.c"
    out = Path(tempfile.mkdtemp(prefix="symad-bench-c-")) / "rosenbrock.so"
    subprocess.run(
        ["gcc", "-O3", "-march=native", "-shared", "-fPIC", "-o", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    lib = ctypes.CDLL(str(out))
    ptr, c_int, c_long, c_double = ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_double
    lib.rosen_vg.restype = lib.rosen_v.restype = c_double
    lib.rosen_vg.argtypes = [ptr, c_int, ptr]
    lib.rosen_v.argtypes = [ptr, c_int]
    lib.rosen_vg_batch.argtypes = [ptr, c_long, c_int, ptr, ptr]
    lib.rosen_v_batch.argtypes = [ptr, c_long, c_int, ptr]
    n = len(w.variables)
    if batch:

        def vgb(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            X = np.ascontiguousarray(X)
            f, g = np.empty(len(X)), np.empty_like(X)
            lib.rosen_vg_batch(X.ctypes.data, len(X), n, f.ctypes.data, g.ctypes.data)
            return f, g

        def vb(X: np.ndarray) -> np.ndarray:
            X = np.ascontiguousarray(X)
            f = np.empty(len(X))
            lib.rosen_v_batch(X.ctypes.data, len(X), n, f.ctypes.data)
            return f

        return Impl(vgb, vb)
    # ndarray.ctypes costs microseconds per call; a ctypes array over the same memory costs little.
    dbl = ctypes.POINTER(ctypes.c_double)
    lib.rosen_vg.argtypes = [dbl, c_int, dbl]
    lib.rosen_v.argtypes = [dbl, c_int]
    c_vg, c_v, view = lib.rosen_vg, lib.rosen_v, (ctypes.c_double * n).from_buffer

    def vg(p: np.ndarray) -> tuple[float, np.ndarray]:
        g = np.empty(n)
        return c_vg(view(p), n, view(g)), g

    return Impl(vg, lambda p: c_v(view(p), n))


BUILDERS: dict[str, Callable[[Workload, str, bool], Impl]] = {
    "symad": build_symad,
    "sympy": build_sympy,
    "symengine": build_symengine,
    "casadi": build_casadi,
    "jax": build_jax,
    "torch": build_torch,
    "autograd": build_autograd,
    "numpy": build_numpy,
    "c": build_c,
}


def _is_rosenbrock(w: Workload) -> bool:
    return w.name in ("rosenbrock", "rosenbrock2d_batch")


def peers() -> list[Peer]:
    """Every peer configuration, symad's own backends first (if ``Function`` takes ``backend=``)."""
    out = [Peer("symad", "", "symad", ("symad",))]
    out += [Peer("symad", b, f"symad backend={b}", ("symad",)) for b in symad_backends()]
    out += [
        Peer("sympy", "", "SymPy lambdify", ("sympy",)),
        Peer("sympy", "cse", "SymPy lambdify cse", ("sympy",)),
        Peer("symengine", "", "SymEngine Lambdify", ("symengine",)),
        Peer("symengine", "cse", "SymEngine Lambdify cse", ("symengine",)),
        Peer("casadi", "", "CasADi SX", ("casadi",)),
        Peer("casadi", "cse", "CasADi SX cse", ("casadi",)),
        Peer("jax", "", "JAX jit", ("jax", "jaxlib")),
        Peer("torch", "", "PyTorch eager", ("torch",), builds=False),
        Peer("autograd", "", "HIPS autograd", ("autograd",), builds=False),
        Peer("numpy", "", "hand-written NumPy", ("numpy",), lambda w: w.batch > 0, reference_only=False),
        Peer("c", "", "hand-written C (ctypes)", (), _is_rosenbrock, reference_only=True),
    ]
    return out


def available(peer: Peer) -> str | None:
    """None if the peer can run here, else why not."""
    for mod in peer.requires:
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed (pip install '.[bench]')"
    if peer.name == "c" and not any(
        os.access(os.path.join(d, "gcc"), os.X_OK) for d in os.environ.get("PATH", "").split(os.pathsep)
    ):
        return "gcc is not installed"
    return None


def versions() -> dict[str, str]:
    """Installed versions of symad and the peers (without importing them)."""
    from importlib import metadata

    out = {}
    for dist in [
        "symad",
        "numpy",
        "sympy",
        "symengine",
        "casadi",
        "jax",
        "jaxlib",
        "torch",
        "autograd",
        "lark",
    ]:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    try:
        cc = subprocess.run(["gcc", "--version"], capture_output=True, text=True, timeout=10).stdout
        out["gcc"] = cc.splitlines()[0] if cc else ""
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def now() -> float:
    return time.perf_counter()
