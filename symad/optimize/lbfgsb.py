"""scipy's L-BFGS-B judged by symad's stopping rules, for objectives whose sums stay loops."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from symad.core.errors import SymadError
from symad.optimize.driver import STATUS, UNBOUNDED_F
from symad.optimize.loops import Layout
from symad.optimize.result import OptimizeResult

# How L-BFGS-B stopped, with its own tests off (gtol = ftol = 0): 0 f no longer decreases, 1 its limits.
_LBFGSB_STOPS = {0: (1, "stalled: f no longer decreases, but the gradient norm is above tol"), 1: (2, STATUS[2])}


def lbfgsb(fn: Any, layout: Layout, x0: np.ndarray, lower: np.ndarray, upper: np.ndarray, *, tol: float,
           xtol: float, max_iter: int, max_time: float | None, callback: Any) -> OptimizeResult:
    """scipy's L-BFGS-B on an indexed function's value and gradient, judged by symad's stopping
    rules: converged when the projected gradient's 2-norm is at most ``tol`` (checked after each
    iteration; scipy's own tests are off), stalled at a step below ``xtol*(1+|x|)``, diverged at
    ``f <= -1e300``; ``max_iter``, ``max_time`` and the callback (a progress bar) stop it too."""
    try:
        import scipy.optimize as so
    except ImportError:
        raise SymadError("--method l-bfgs-b runs scipy's: pip install scipy") from None
    t0 = time.perf_counter()
    bounded = bool(np.isfinite(lower).any() or np.isfinite(upper).any())
    x = np.clip(x0, lower, upper) if bounded else x0
    with np.errstate(all="ignore"):
        fn.value_and_grad(x)  # compiled before the clock starts, as symad.minimize does
    setup, t1 = time.perf_counter() - t0, time.perf_counter()
    calls = {"nfev": 0, "nit": 0}
    last: list[Any] = [None, math.nan, None]  # the point last evaluated, its value and gradient
    outcome: list[tuple[int, str]] = []

    def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
        calls["nfev"] += 1
        f, g = fn.value_and_grad(x)
        last[:] = [x.copy(), float(f), np.asarray(g, dtype=float)]
        return last[1], last[2]

    def pgrad(x: np.ndarray, g: np.ndarray) -> np.ndarray:
        return x - np.clip(x - g, lower, upper) if bounded else g

    def judge(x: np.ndarray, f: float, g: np.ndarray, step: float) -> tuple[int, str] | None:
        gnorm = float(np.linalg.norm(pgrad(x, g)))
        if f <= -UNBOUNDED_F:
            return 7, f"{STATUS[7]} (f = {f:.3g})"
        if not (math.isfinite(f) and math.isfinite(gnorm)):
            return 5, STATUS[5]
        if gnorm <= tol:
            return 0, STATUS[0]
        if step <= xtol * (1.0 + float(np.linalg.norm(x))):
            return 1, STATUS[1]
        return None

    previous = [x]

    def check(intermediate_result: Any) -> None:
        calls["nit"] += 1
        xk = np.array(intermediate_result.x, dtype=float)  # a copy: scipy updates its array in place
        f, g = (last[1], last[2]) if np.array_equal(last[0], xk) else fg(xk)
        verdict = judge(xk, f, g, float(np.linalg.norm(xk - previous[0])))
        previous[0] = xk
        if verdict is None and max_time is not None and time.perf_counter() - t1 >= max_time:
            verdict = 3, STATUS[3]
        if verdict is None and callback is not None:
            callback(OptimizeResult(x=xk, fun=f, jac=g, nit=calls["nit"],
                                    grad_norm=float(np.linalg.norm(pgrad(xk, g)))))
        if verdict is not None:
            outcome.append(verdict)
            raise StopIteration

    with np.errstate(all="ignore"):
        f, g = fg(x)
        outcome_at_start = judge(x, f, g, math.inf)
        if outcome_at_start is not None:
            outcome.append(outcome_at_start)
        else:
            r = so.minimize(fg, x, jac=True, method="L-BFGS-B", callback=check,
                            bounds=so.Bounds(lower, upper) if bounded else None,
                            options={"maxiter": max_iter, "maxfun": 10 * max_iter, "gtol": 0.0, "ftol": 0.0})
            x = np.asarray(r.x, dtype=float)
            f, g = (last[1], last[2]) if np.array_equal(last[0], x) else fg(x)
            if not outcome:  # scipy stopped: its limits, or a line search that found no lower point
                verdict = judge(x, f, g, math.inf)
                outcome.append(verdict or _LBFGSB_STOPS.get(r.status, (6, f"{STATUS[6]} (L-BFGS-B: {r.message})")))
    status, message = outcome[0]
    return OptimizeResult(
        x=x, fun=f, jac=g, nit=calls["nit"], nfev=calls["nfev"], njev=calls["nfev"], nhev=0,
        success=status == 0, status=status, message=message, point=layout.point(x),
        grad_norm=float(np.linalg.norm(pgrad(x, g))), method="l-bfgs-b", hessian=None,
        time=time.perf_counter() - t1, setup_time=setup)
