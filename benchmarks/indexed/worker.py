"""One measurement of the indexed suite in a fresh process, run by :mod:`benchmarks.indexed.suite`.

Tasks (``--task``), each for one ``--peer``:

* ``rosen``: chained Rosenbrock over ``--n`` variables: text (or the peer's code) → the first value
  and gradient, timed from this script's first line (imports included), the peak memory then, a check
  against NumPy by hand, and the median time of a warm call.
* ``xax``: ``x'Ax`` with a 2,000 x 2,000 data matrix: the build and first call (the matrix in hand),
  a check against NumPy, and the time of a warm call.
* ``solve``: scipy's L-BFGS-B on Rosenbrock from text to the optimum, timed from the first line.

Prints one JSON object per line as each phase ends (:func:`benchmarks.harness.emit`).  Only the
standard library and the harness are imported before the clock starts: every other import is part
of the figure (Python's own start-up is not, the same for every peer).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import TIMING_POINTS, emit, time_calls  # noqa: E402

T_START = time.perf_counter()  # the benchmark's own machinery is loaded: every later import is a peer's cost

C_SOURCE = ROOT / "benchmarks" / "peers" / "c" / "rosenbrock.c"
XAX_N = 2000
SOLVE_OPTIONS = {"gtol": 1e-8, "maxiter": 10_000, "maxfun": 100_000}  # the same for every peer
EPS = 2.0**-52
GRAD_RTOL = 1e-12  # each partial is a few terms: rounding only, relative to the largest

VG = Callable[[Any], tuple[Any, Any]]


def rosenbrock_text(n: int) -> str:
    return f"n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"


def xax_text(n: int) -> str:
    return f"n = {n}; sum(i = 1..n, x[i]*sum(j = 1..n, A[i,j]*x[j]))"


def start(n: int) -> Any:
    """The point of the first call, the check and the solve's start: near the optimum at 1."""
    import numpy as np

    return 1.0 + 0.1 * np.sin(np.arange(n))


def numpy_rosenbrock(x: Any) -> tuple[float, Any]:
    """Value and gradient written out by hand with NumPy: the reference every peer is checked against."""
    import numpy as np

    head = x[:-1]
    t = x[1:] - head * head
    u = 1.0 - head
    g = np.zeros_like(x)
    g[:-1] = -400.0 * t * head - 2.0 * u
    g[1:] += 200.0 * t
    return float(np.sum(100.0 * t * t + u * u)), g


def peak_mib() -> float:
    """The process's maximum resident set size so far (ru_maxrss), in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ============================================================================ Rosenbrock, one peer each
# A symad function met for the first time serves its first calls on NumPy while its code compiles
# (the code cache is off here): the warm calls are timed once its code serves (`prepare()`).
STEADY: list[Callable[[], Any]] = []


def rosen_symad(n: int) -> VG:
    import symad

    f = symad.compile(rosenbrock_text(n))
    emit(phase="info", form="loop" if isinstance(f, symad.IndexedFunction) else "written out")
    STEADY.append(f.prepare)  # the warm calls are timed on the code, not on NumPy's first calls
    return f.value_and_grad


def rosen_numpy(n: int) -> VG:
    return numpy_rosenbrock


def rosen_jax(n: int) -> VG:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def f(x: Any) -> Any:
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    fvg = jax.jit(jax.value_and_grad(f))

    def vg(x: Any) -> tuple[Any, Any]:
        value, grad = fvg(x)
        return value, grad.block_until_ready()

    return vg


def rosen_c(n: int) -> VG:
    """benchmarks/peers/c/rosenbrock.c's rosen_vg, built with gcc -O3 -march=native (timed: part of its build)."""
    import ctypes
    import subprocess
    import tempfile

    import numpy as np

    out = Path(tempfile.mkdtemp(prefix="symad-bench-c-")) / "rosenbrock.so"
    subprocess.run(["gcc", "-O3", "-march=native", "-shared", "-fPIC", "-o", str(out), str(C_SOURCE)], check=True,
                   capture_output=True)
    lib = ctypes.CDLL(str(out))
    dbl = ctypes.POINTER(ctypes.c_double)
    lib.rosen_vg.restype = ctypes.c_double
    lib.rosen_vg.argtypes = [dbl, ctypes.c_int, dbl]
    c_vg, view = lib.rosen_vg, (ctypes.c_double * n).from_buffer  # a ctypes view costs less than ndarray.ctypes

    def vg(x: Any) -> tuple[float, Any]:
        g = np.empty(n)
        return c_vg(view(x), n, view(g)), g

    return vg


def _casadi_buffered(fvg: Any, n: int) -> VG:
    """CasADi's fastest call: Function.buffer over the caller's arrays, no DM conversions."""
    import numpy as np

    buf, run = fvg.buffer()

    def vg(x: Any) -> tuple[float, Any]:
        fx, gx = np.empty(1), np.empty(n)
        buf.set_arg(0, memoryview(x))
        buf.set_res(0, memoryview(fx))
        buf.set_res(1, memoryview(gx))
        run()
        return float(fx[0]), gx

    return vg


def rosen_casadi_sx(n: int) -> VG:
    """The vectorised form on an SX vector: CasADi writes out n scalar expressions."""
    import casadi as ca

    x = ca.SX.sym("x", n)
    f = ca.sum1(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    return _casadi_buffered(ca.Function("vg", [x], [f, ca.gradient(f, x)]), n)


def rosen_casadi_map(n: int) -> VG:
    """One SX term mapped over the n - 1 pairs (serially), summed in MX: the body is built once."""
    import casadi as ca

    a, b = ca.SX.sym("a"), ca.SX.sym("b")
    term = ca.Function("term", [a, b], [100 * (b - a**2) ** 2 + (1 - a) ** 2])
    x = ca.MX.sym("x", n)
    f = ca.sum2(term.map(n - 1, "serial")(x[:-1].T, x[1:].T))
    return _casadi_buffered(ca.Function("vg", [x], [f, ca.gradient(f, x)]), n)


ROSEN = {"symad": rosen_symad, "numpy": rosen_numpy, "jax": rosen_jax, "c": rosen_c,
         "casadi_sx": rosen_casadi_sx, "casadi_map": rosen_casadi_map}
IMPORTS = {"symad": ("numpy", "symad"), "numpy": ("numpy",), "jax": ("numpy", "jax"), "c": ("numpy",),
           "casadi_sx": ("numpy", "casadi"), "casadi_map": ("numpy", "casadi")}


def check(value: float, grad: Any, ref_value: float, ref_grad: Any, terms: int, scale: float) -> dict[str, Any]:
    """Differences from the reference; ``check`` is ok or mismatch.  Rounding only: the value within
    the bound of any order of adding ``terms`` terms whose absolute values add to ``scale``
    (``terms`` x eps x ``scale``), each partial within :data:`GRAD_RTOL` of the largest."""
    import numpy as np

    grad = np.asarray(grad, dtype=float).reshape(-1)
    dv = abs(float(value) - ref_value) / max(scale, 1e-300)
    dg = float(np.max(np.abs(grad - ref_grad))) / max(float(np.max(np.abs(ref_grad))), 1e-300) \
        if grad.shape == ref_grad.shape else float("inf")
    ok = dv <= terms * EPS and dg <= GRAD_RTOL
    return {"check": "ok" if ok else "mismatch", "value_rel_diff": dv, "grad_rel_diff": dg}


def _same(p: Any) -> Any:
    return p


def points(n: int, convert: Callable[[Any], Any]) -> list[Any]:
    """Distinct points for the timing loop, fewer as they grow (a few hundred MB at most)."""
    import numpy as np

    count = max(2, min(TIMING_POINTS, 4_000_000 // n))
    base, wave = start(n), np.cos(np.arange(n))
    return [convert(base + 0.01 * k * wave) for k in range(1, count + 1)]


def task_rosen(args: argparse.Namespace) -> None:
    for module in IMPORTS[args.peer]:
        __import__(module)
    emit(phase="import", import_s=time.perf_counter() - T_START)
    t0 = time.perf_counter()
    vg = ROSEN[args.peer](args.n)
    convert: Callable[[Any], Any] = _same
    if args.peer == "jax":  # JAX's fastest call takes its own arrays
        import jax.numpy as jnp

        convert = jnp.asarray
    value, grad = vg(convert(start(args.n)))
    t1 = time.perf_counter()
    emit(phase="build", first_s=t1 - T_START, build_s=t1 - t0, peak_first_mib=peak_mib())
    ref_value, ref_grad = numpy_rosenbrock(start(args.n))  # every term is positive: they add to the value
    emit(phase="check", value=float(value), **check(value, grad, ref_value, ref_grad, args.n, ref_value))
    for settle in STEADY:
        settle()
    timing = time_calls(vg, points(args.n, convert), args.min_time, args.repeats)
    emit(phase="time", call_s=timing["median_s"], call_min_s=timing["min_s"], inner=timing["inner"],
         peak_end_mib=peak_mib())


# ============================================================================ x'Ax with a data matrix
def xax_data(n: int) -> tuple[Any, Any]:
    import numpy as np

    return np.random.default_rng(0).normal(size=(n, n)), np.random.default_rng(1).normal(size=n)


def task_xax(args: argparse.Namespace) -> None:
    import numpy as np

    if args.peer == "symad":
        import symad
    elif args.peer == "jax":
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
    emit(phase="import", import_s=time.perf_counter() - T_START)
    n = XAX_N
    A, x = xax_data(n)  # the data in hand: not part of any figure
    t0 = time.perf_counter()
    vg: VG
    if args.peer == "symad":
        f = symad.compile(xax_text(n), wrt=["x"])

        def vg(p: Any) -> tuple[Any, Any]:
            return f.value_and_grad({"x": p, "A": A})
    elif args.peer == "numpy":  # as the issue writes it
        def vg(p: Any) -> tuple[Any, Any]:
            return p @ A @ p, (A + A.T) @ p
    elif args.peer == "numpy_matvec":  # A @ x once, and x @ A: two matrix-vector products, no A + A.T
        def vg(p: Any) -> tuple[Any, Any]:
            ax = A @ p
            return p @ ax, ax + p @ A
    elif args.peer == "jax":
        fvg = jax.jit(jax.value_and_grad(lambda p, a: p @ a @ p))
        device_A = jnp.asarray(A)

        def vg(p: Any) -> tuple[Any, Any]:
            value, grad = fvg(p, device_A)
            return value, grad.block_until_ready()

        x = jnp.asarray(x)
    else:
        raise ValueError(f"no peer {args.peer!r} for x'Ax")
    value, grad = vg(x)
    emit(phase="build", build_s=time.perf_counter() - t0, peak_first_mib=peak_mib())
    xs = np.asarray(x)
    scale = float(np.abs(xs) @ np.abs(A) @ np.abs(xs))
    emit(phase="check", value=float(value), **check(value, grad, float(xs @ A @ xs), (A + A.T) @ xs, n * n, scale))
    convert = (lambda p: jnp.asarray(p)) if args.peer == "jax" else (lambda p: p)
    pts = [convert(np.asarray(x) + 0.01 * k) for k in range(1, 9)]
    if args.peer == "symad":
        f.prepare()  # the warm calls are timed on the code (STEADY's note)
    timing = time_calls(vg, pts, args.min_time, args.repeats)
    emit(phase="time", call_s=timing["median_s"], call_min_s=timing["min_s"], inner=timing["inner"],
         peak_end_mib=peak_mib())


# ============================================================================ L-BFGS-B to the optimum
def task_solve(args: argparse.Namespace) -> None:
    import numpy as np
    from scipy.optimize import minimize

    for module in IMPORTS[args.peer]:
        __import__(module)
    emit(phase="import", import_s=time.perf_counter() - T_START)
    t0 = time.perf_counter()
    inner = ROSEN[args.peer](args.n)
    vg: VG = inner
    if args.peer == "jax":
        def vg(p: Any) -> tuple[float, Any]:  # SciPy takes float64 NumPy arrays
            value, grad = inner(p)
            return float(value), np.asarray(grad)
    emit(phase="build", build_s=time.perf_counter() - t0)
    result = minimize(vg, start(args.n), jac=True, method="L-BFGS-B", options=SOLVE_OPTIONS)
    t1 = time.perf_counter()
    emit(phase="solve", total_s=t1 - T_START, solve_s=t1 - t0, nit=int(result.nit), nfev=int(result.nfev),
         fun=float(result.fun), success=bool(result.success), message=str(result.message),
         distance=float(np.max(np.abs(result.x - 1.0))), peak_end_mib=peak_mib())


TASKS = {"rosen": task_rosen, "xax": task_xax, "solve": task_solve}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", choices=sorted(TASKS), required=True)
    ap.add_argument("--peer", required=True)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds a timing loop lasts at least")
    ap.add_argument("--repeats", type=int, default=5, help="timing loops, the median reported")
    args = ap.parse_args(argv)
    try:
        TASKS[args.task](args)
    except Exception as exc:  # reported as the worker's last line: the suite records it and goes on
        emit(error=f"{type(exc).__name__}: {exc}"[:500], traceback=traceback.format_exc()[-2000:])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
