"""scipy's L-BFGS-B judged by symad's stopping rules, for objectives whose sums stay loops (the
command line's ``--method l-bfgs-b``); :func:`symad.optimize.lbfgsb_steps.lbfgsb_steps` gives the
iterates, as it does to :func:`symad.optimize.minimize`."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from symad.optimize.driver import STATUS, UNBOUNDED_F
from symad.optimize.lbfgsb_steps import lbfgsb_steps
from symad.optimize.loops import Layout
from symad.optimize.result import OptimizeResult


def lbfgsb(fn: Any, layout: Layout, x0: np.ndarray, lower: np.ndarray, upper: np.ndarray, *, tol: float,
           xtol: float, max_iter: int, max_time: float | None, callback: Any) -> OptimizeResult:
    """scipy's L-BFGS-B on an indexed function's value and gradient, judged by symad's stopping
    rules: converged when the projected gradient's 2-norm is at most ``tol`` (checked after each
    iteration; scipy's own tests are off), stalled at a step below ``xtol*(1+|x|)``, diverged at
    ``f <= -1e300``; ``max_iter``, ``max_time`` and the callback (a progress bar) stop it too."""
    t0 = time.perf_counter()
    bounded = bool(np.isfinite(lower).any() or np.isfinite(upper).any())
    x = np.clip(x0, lower, upper) if bounded else x0
    with np.errstate(all="ignore"):
        fn.value_and_grad(x)  # compiled before the clock starts, as symad.minimize does
    setup, t1 = time.perf_counter() - t0, time.perf_counter()
    calls = {"nfev": 0, "nit": 0}

    def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
        calls["nfev"] += 1
        f, g = fn.value_and_grad(x)
        return float(f), np.asarray(g, dtype=float)

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

    with np.errstate(all="ignore"):
        f, g = fg(x)
        outcome = judge(x, f, g, math.inf)
        steps = lbfgsb_steps(fg, x, f, g, lower, upper)
        try:
            while outcome is None:
                if calls["nit"] >= max_iter:
                    outcome = 2, STATUS[2]
                    break
                try:
                    x, f, g, step = next(steps)
                except StopIteration as stop:  # a status and its message, or a failed line search's message
                    outcome = stop.value if isinstance(stop.value, tuple) else (6, str(stop.value))
                    break
                calls["nit"] += 1
                outcome = judge(x, f, g, step)
                if outcome is None and max_time is not None and time.perf_counter() - t1 >= max_time:
                    outcome = 3, STATUS[3]
                if outcome is None and callback is not None:
                    callback(OptimizeResult(x=x, fun=f, jac=g, nit=calls["nit"],
                                            grad_norm=float(np.linalg.norm(pgrad(x, g)))))
        finally:
            steps.close()
    status, message = outcome
    return OptimizeResult(
        x=x, fun=f, jac=g, nit=calls["nit"], nfev=calls["nfev"], njev=calls["nfev"], nhev=0,
        success=status == 0, status=status, message=message, point=layout.point(x),
        grad_norm=float(np.linalg.norm(pgrad(x, g))), method="l-bfgs-b", hessian=None,
        time=time.perf_counter() - t1, setup_time=setup)
