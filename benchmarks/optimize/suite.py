"""Exact derivatives (symad) versus finite differences (scipy) on Rosenbrock problems.

For Rosenbrock 2-D and the chained Rosenbrock in 100 variables, each from the
classic start (-1.2, 1, -1.2, 1, ...), it runs in one process:

* scipy's optimisers on symad's exact gradient, Hessian and Hessian-vector
  product (through :func:`symad.optimize.scipy_functions`);
* symad's own Newton and trust-region Newton-CG (:func:`symad.optimize.minimize`);
* scipy's L-BFGS-B and BFGS with ``jac=None``: gradients by 2-point finite
  differences of the *same* compiled symad value function, so only the
  derivatives differ.

It reports iterations, calls of the objective (value, or value+gradient), Hessian
(or Hessian-vector) calls, the median wall time of ``--repeat`` runs (compilation
excluded and reported once), time relative to finite-difference L-BFGS-B, the
final value and the distance to the minimiser (1, ..., 1).

    python -m benchmarks.optimize              # writes optimize.json and optimize.md here
    python -m benchmarks.optimize --no-write   # prints the page only
"""

from __future__ import annotations

import os

# Small problems: a BLAS thread pool only adds wake-up latency (30x slower L-BFGS-B
# on a busy 2-core machine). One thread for every run, symad's and scipy's alike.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.optimize as so  # noqa: E402

import symad  # noqa: E402
from symad.optimize import minimize, scipy_functions  # noqa: E402
from symad.second_order import SecondOrder  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import harness  # noqa: E402
from benchmarks.optimize import report  # noqa: E402


def chained_rosenbrock(n: int) -> str:
    """``sum_i 100*(x{i+1}-x{i}^2)^2 + (1-x{i})^2`` as text."""
    return " + ".join(f"100*(x{i + 1}-x{i}^2)^2+(1-x{i})^2" for i in range(1, n))


PROBLEMS = [
    ("Rosenbrock 2-D", "100*(y-x^2)^2+(1-x)^2", 2),
    ("chained Rosenbrock n=100", chained_rosenbrock(100), 100),
]
LIMITS = {"maxiter": 100_000, "maxfun": 10_000_000}  # let finite differences finish


class Counted:
    """Wrap a function and count its calls."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn, self.calls = fn, 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.fn(*args)


def scipy_run(s: Any, x0: np.ndarray, method: str, derivatives: str) -> dict[str, Any]:
    fun = Counted(s.fun if derivatives != "finite differences" else s.value)
    hess = Counted(s.hess)
    hessp = Counted(s.hessp)
    kwargs: dict[str, Any] = {"jac": derivatives != "finite differences"}
    if kwargs["jac"] is False:
        kwargs["jac"] = None  # scipy's default: 2-point finite differences
    if "Hessian-vector" in derivatives:
        kwargs["hessp"] = hessp
    elif "Hessian" in derivatives:
        kwargs["hess"] = hess
    options = dict(LIMITS) if method == "L-BFGS-B" else {"maxiter": LIMITS["maxiter"]}
    r = so.minimize(fun, x0, method=method, options=options, **kwargs)
    return {"x": r.x, "fun": float(r.fun), "nit": r.nit, "calls": fun.calls,
            "second": hess.calls + hessp.calls, "success": bool(r.success)}


def symad_run(f: SecondOrder, x0: np.ndarray, method: str) -> dict[str, Any]:
    r = minimize(f, x0, method=method)
    return {"x": r.x, "fun": float(r.fun), "nit": r.nit, "calls": r.nfev, "second": r.nhev,
            "success": bool(r.success)}


RUNS: list[tuple[str, str, str]] = [  # (label, derivatives, how)
    ("scipy L-BFGS-B", "symad gradient", "scipy:L-BFGS-B"),
    ("scipy BFGS", "symad gradient", "scipy:BFGS"),
    ("scipy trust-ncg", "symad gradient + Hessian", "scipy:trust-ncg"),
    ("scipy Newton-CG", "symad gradient + Hessian-vector", "scipy:Newton-CG"),
    ("symad newton", "symad gradient + Hessian", "symad:newton"),
    ("symad trust-ncg", "symad gradient + Hessian-vector", "symad:trust-ncg"),
    ("scipy L-BFGS-B", "finite differences", "scipy:L-BFGS-B"),
    ("scipy BFGS", "finite differences", "scipy:BFGS"),
]


def bench(repeat: int) -> tuple[list[str], list[list[str]]]:
    notes: list[str] = []
    rows: list[list[str]] = []
    for title, text, n in PROBLEMS:
        x0 = np.array([-1.2 if i % 2 == 0 else 1.0 for i in range(n)])
        t = time.perf_counter()
        s = scipy_functions(text)
        s.fun(x0)
        t_grad = time.perf_counter() - t
        t = time.perf_counter()
        s.hess(x0)
        t_hess = time.perf_counter() - t
        t = time.perf_counter()
        s.hessp(x0, x0)
        t_hvp = time.perf_counter() - t
        s.value(x0)
        sizes = s.function.sizes()
        notes.append(f"{title}: compiling value+gradient {t_grad * 1e3:.0f} ms ({sizes['value_grad']} ops), "
                     f"+Hessian {t_hess * 1e3:.0f} ms ({sizes['value_grad_hess']} ops), "
                     f"Hessian-vector product {t_hvp * 1e3:.0f} ms ({sizes['hvp']} ops), "
                     "once per expression.")
        results = []
        for label, derivatives, how in RUNS:
            kind, method = how.split(":")
            times, out = [], {}
            for _ in range(repeat):
                t = time.perf_counter()
                out = (scipy_run(s, x0, method, derivatives) if kind == "scipy"
                       else symad_run(s.function, x0, method))
                times.append(time.perf_counter() - t)
            results.append((label, derivatives, out, statistics.median(times)))
        reference = next(t for label, d, _, t in results
                         if label == "scipy L-BFGS-B" and d == "finite differences")
        for label, derivatives, out, seconds in results:
            error = float(np.abs(out["x"] - 1).max())
            rows.append([title, label, derivatives, str(out["nit"]), f"{out['calls']:,}",
                         f"{out['second']:,}" if out["second"] else "–", _ms(seconds),
                         f"{seconds / reference:.2f}", f"{out['fun']:.2g}", f"{error:.1e}"])
    return notes, rows


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.optimize", description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell; the median time is shown")
    parser.add_argument("--no-write", action="store_true", help="print the page, write nothing")
    args = parser.parse_args(argv)
    notes, rows = bench(args.repeat)
    meta = {"command": harness.command_line("python -m benchmarks.optimize", sys.argv[1:] if argv is None else argv),
            "date": harness.now(), "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "symad": symad.__version__, "cpus": os.cpu_count(), "repeat": args.repeat,
            "revision": harness.revision()}
    data = {"meta": meta, "notes": notes, "rows": rows}
    page = report.render(data)
    print(page)
    if not args.no_write:
        harness.write(Path(__file__).resolve().parent, "optimize", data, page)
    return 0

