"""One measurement of the sparse suite in a fresh process, run by :mod:`benchmarks.sparse.suite`.

Tasks (``--task``), each for one ``--peer`` and ``--n``:

* ``hessian``: the sparse Hessian of chained Rosenbrock, ``sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 +
  (1 - x[i])^2)``, from text (or the peer's code) to a ``scipy.sparse`` matrix at a point;
* ``jacobian``: the sparse Jacobian of ``each(i = 1..n-1, x[i+1] - x[i]^2)``, the same way.

Each: the time from this script's first line (imports included) to the first matrix, the peak memory
then, a check against the matrix written by hand with NumPy (the same entries, values to rounding),
and the median time of a warm call (values at a new point, as a matrix).  Prints one JSON object per
line as each phase ends (:func:`benchmarks.harness.emit`).
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

RTOL = 1e-12  # each entry is a few terms: rounding only, relative to the largest

Matrix = Callable[[Any], Any]  # a point -> a scipy.sparse matrix


def hessian_text(n: int) -> str:
    return f"n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"


def jacobian_text(n: int) -> str:
    return f"n = {n}; each(i = 1..n-1, x[i+1] - x[i]^2)"


def start(n: int) -> Any:
    import numpy as np

    return 1.0 + 0.1 * np.sin(np.arange(n))


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ============================================================================ written by hand: the references
def hessian_numpy(n: int) -> Matrix:
    import numpy as np
    import scipy.sparse as sp

    def hess(x: Any) -> Any:
        head = x[:-1]
        diag = np.zeros(n)
        diag[:-1] = 1200.0 * head * head - 400.0 * x[1:] + 2.0
        diag[1:] += 200.0
        off = -400.0 * head
        return sp.diags([off, diag, off], [-1, 0, 1], format="csr")

    return hess


def jacobian_numpy(n: int) -> Matrix:
    import numpy as np
    import scipy.sparse as sp

    def jac(x: Any) -> Any:
        return sp.diags([-2.0 * x[:-1], np.ones(n - 1)], [0, 1], shape=(n - 1, n), format="csr")

    return jac


# ============================================================================ symad
def hessian_symad(n: int) -> Matrix:
    import symad

    return symad.compile(hessian_text(n)).sparse_hessian


def jacobian_symad(n: int) -> Matrix:
    import symad

    return symad.compile(jacobian_text(n)).sparse_jacobian


# ============================================================================ JAX: products along colours, by hand
def _jax() -> Any:
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def hessian_jax(n: int) -> Matrix:
    """Forward over reverse along the three colours of a tridiagonal matrix (``j mod 3``), jitted."""
    jax = _jax()
    import jax.numpy as jnp
    import numpy as np
    import scipy.sparse as sp

    def f(x: Any) -> Any:
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    colours = jnp.asarray((np.arange(n)[None, :] % 3 == np.arange(3)[:, None]).astype(float))

    @jax.jit
    def products(x: Any) -> Any:
        return jax.vmap(lambda d: jax.jvp(jax.grad(f), (x,), (d,))[1])(colours)

    rows = np.arange(n)

    def hess(x: Any) -> Any:
        hd = np.asarray(products(jnp.asarray(x)))
        diag = hd[rows % 3, rows]
        off = hd[rows[:-1] % 3, rows[:-1] + 1]  # H[i+1, i]: column i's colour, row i+1
        return sp.diags([off, diag, off], [-1, 0, 1], format="csr")

    return hess


def jacobian_jax(n: int) -> Matrix:
    """Forward mode along the two colours of a bidiagonal matrix (``j mod 2``), jitted."""
    jax = _jax()
    import jax.numpy as jnp
    import numpy as np
    import scipy.sparse as sp

    def c(x: Any) -> Any:
        return x[1:] - x[:-1] ** 2

    colours = jnp.asarray((np.arange(n)[None, :] % 2 == np.arange(2)[:, None]).astype(float))

    @jax.jit
    def products(x: Any) -> Any:
        return jax.vmap(lambda d: jax.jvp(c, (x,), (d,))[1])(colours)

    rows = np.arange(n - 1)

    def jac(x: Any) -> Any:
        jd = np.asarray(products(jnp.asarray(x)))
        return sp.diags([jd[rows % 2, rows], jd[(rows + 1) % 2, rows]], [0, 1], shape=(n - 1, n), format="csr")

    return jac


# ======================================================================= CasADi SX: its sparse matrices
def hessian_casadi(n: int) -> Matrix:
    import casadi as ca

    x = ca.SX.sym("x", n)
    f = ca.sum1(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    hess, _ = ca.hessian(f, x)
    fn = ca.Function("h", [x], [hess])
    return lambda point: fn(point).sparse()


def jacobian_casadi(n: int) -> Matrix:
    import casadi as ca

    x = ca.SX.sym("x", n)
    fn = ca.Function("j", [x], [ca.jacobian(x[1:] - x[:-1] ** 2, x)])
    return lambda point: fn(point).sparse()


BUILD = {"hessian": {"symad": hessian_symad, "numpy": hessian_numpy, "jax": hessian_jax, "casadi": hessian_casadi},
         "jacobian": {"symad": jacobian_symad, "numpy": jacobian_numpy, "jax": jacobian_jax,
                      "casadi": jacobian_casadi}}
REFERENCE = {"hessian": hessian_numpy, "jacobian": jacobian_numpy}
IMPORTS = {"symad": ("numpy", "scipy.sparse", "symad"), "numpy": ("numpy", "scipy.sparse"),
           "jax": ("numpy", "scipy.sparse", "jax"), "casadi": ("numpy", "scipy.sparse", "casadi")}


def check(matrix: Any, reference: Any) -> dict[str, Any]:
    """The same entries as the matrix written by hand (explicit zeros aside), values to rounding."""
    import numpy as np

    got, want = matrix.tocsr(), reference.tocsr()
    got.eliminate_zeros()
    want.eliminate_zeros()
    same_entries = got.shape == want.shape and got.nnz == want.nnz and (got != want).nnz == 0 or \
        (got.shape == want.shape and abs(got - want).max() <= RTOL * abs(want).max())
    diff = float(abs(got - want).max() / max(abs(want).max(), 1e-300)) if got.shape == want.shape else float("inf")
    ok = same_entries and diff <= RTOL and got.nnz == want.nnz
    return {"check": "ok" if ok else "mismatch", "rel_diff": diff, "nnz": int(matrix.nnz),
            "nnz_reference": int(np.int64(want.nnz))}


def task(args: argparse.Namespace) -> None:
    for module in IMPORTS[args.peer]:
        __import__(module)
    emit(phase="import", import_s=time.perf_counter() - T_START)
    t0 = time.perf_counter()
    build = BUILD[args.task][args.peer](args.n)
    matrix = build(start(args.n))
    t1 = time.perf_counter()
    emit(phase="build", first_s=t1 - T_START, build_s=t1 - t0, peak_first_mib=peak_mib())
    emit(phase="check", **check(matrix, REFERENCE[args.task](args.n)(start(args.n))))
    import numpy as np

    count = max(2, min(TIMING_POINTS, 2_000_000 // args.n))
    wave = np.cos(np.arange(args.n))
    pts = [start(args.n) + 0.01 * k * wave for k in range(1, count + 1)]
    timing = time_calls(build, pts, args.min_time, args.repeats)
    emit(phase="time", call_s=timing["median_s"], call_min_s=timing["min_s"], inner=timing["inner"],
         peak_end_mib=peak_mib())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", choices=sorted(BUILD), required=True)
    ap.add_argument("--peer", choices=sorted(IMPORTS), required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    try:
        task(args)
    except Exception as err:  # reported as a phase with an error; the suite goes on
        emit(error=f"{type(err).__name__}: {err}"[:500], traceback=traceback.format_exc()[-2000:])


if __name__ == "__main__":
    main()
