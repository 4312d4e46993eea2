"""The optimisation methods: each a generator of iterates, just its update rule.

A method takes the :class:`~symad.optimize.problem.Problem`, the start
``x`` with its value ``f`` and gradient ``g``, and its options, and yields
``(x, f, g, step length)``; it returns (ends) with a message when its line
search fails.  :func:`symad.optimize.driver.minimize` owns the stopping rules.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator

import numpy as np

from symad.optimize.lbfgs import lbfgs_steps
from symad.optimize.lbfgsb_steps import MEMORY, lbfgsb_steps
from symad.optimize.problem import Problem
from symad.optimize.vectors import norm

Step = tuple[np.ndarray, float, np.ndarray, float]  # x, f, gradient, length of the step tried
Method = Callable[..., Iterator[Step]]


def _armijo(p: Problem, x: np.ndarray, f: float, g: np.ndarray, d: np.ndarray,
            alpha: float) -> tuple[np.ndarray, float, np.ndarray, float] | None:
    """Projected backtracking: halve ``alpha`` until ``f(P(x+αd)) ≤ f + 1e-4·g·(P(x+αd) − x)``.

    Where ``f`` is flat to rounding error the test cannot see a decrease, so a step
    that keeps ``f`` within rounding is judged by the slope at its end instead (the
    approximate Wolfe condition of Hager & Zhang, 2005): not overshooting the minimum
    along the step by more than a factor 1.8 on a quadratic.
    """
    noise = 1e-12 * abs(f)
    while alpha > 1e-20:
        xn = p.project(x + alpha * d)
        slope = float(g @ (xn - x))
        fn, gn = p.fg(xn)
        if fn <= f + 1e-4 * slope and (fn < f or slope == 0):  # False for nan: backtrack
            return xn, fn, gn, alpha
        if fn <= f + noise and float(gn @ (xn - x)) <= -0.8 * slope:
            return xn, fn, gn, alpha
        alpha *= 0.5
    return None


def _gd(p: Problem, x: np.ndarray, f: float, g: np.ndarray, lr: float = 1.0) -> Iterator[Step]:
    """Steepest descent with a backtracking line search; the next trial step doubles the last."""
    alpha = lr
    while True:
        found = _armijo(p, x, f, g, -g, alpha)
        if found is None:
            return "line search failed: no decrease along the gradient (precision loss)"
        xn, f, g, alpha = found
        step, x, alpha = norm(xn - x), xn, 2 * alpha
        yield x, f, g, step


def _momentum(p: Problem, x: np.ndarray, f: float, g: np.ndarray, lr: float = 1e-3,
              beta: float = 0.9, nesterov: bool = False) -> Iterator[Step]:
    """Heavy ball ``v ← βv − lr·g, x ← x + v``; Nesterov in the look-ahead form of
    Bengio et al. (2013), so the gradient is taken at the iterate itself: one evaluation a step."""
    v = np.zeros_like(x)
    while True:
        v = beta * v - lr * g
        target = x + (beta * v - lr * g if nesterov else v)
        xn = p.project(target)
        v[xn != target] = 0.0  # a bound stops the motion along it
        f, g = p.fg(xn)
        step, x = norm(xn - x), xn
        yield x, f, g, step


def _nesterov(p: Problem, x: np.ndarray, f: float, g: np.ndarray, lr: float = 1e-3,
              beta: float = 0.9) -> Iterator[Step]:
    return _momentum(p, x, f, g, lr, beta, nesterov=True)


def _adam(p: Problem, x: np.ndarray, f: float, g: np.ndarray, lr: float = 1e-2, beta1: float = 0.9,
          beta2: float = 0.999, eps: float = 1e-8) -> Iterator[Step]:
    """Adam (Kingma & Ba 2015) with bias correction."""
    m, s = np.zeros_like(x), np.zeros_like(x)
    for t in itertools.count(1):
        m = beta1 * m + (1 - beta1) * g
        s = beta2 * s + (1 - beta2) * g * g
        xn = p.project(x - lr * (m / (1 - beta1 ** t)) / (np.sqrt(s / (1 - beta2 ** t)) + eps))
        f, g = p.fg(xn)
        step, x = norm(xn - x), xn
        yield x, f, g, step
    return None  # unreachable: Adam stops only by the driver's rules


def _newton_direction(h: np.ndarray, g: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Solve ``(H + τI) d = −g`` on the free variables, with the smallest τ ≥ 0 (doubling)
    that makes a Cholesky factorisation succeed (Nocedal & Wright, Algorithm 3.3)."""
    d = np.zeros_like(g)
    idx = np.flatnonzero(free)
    a, b = h[np.ix_(idx, idx)], -g[idx]
    if not np.isfinite(a).all():
        d[idx] = b
        return d
    floor = 1e-3 * max(1.0, float(np.abs(a).max(initial=0.0)))
    diag = np.diag(a)
    tau = 0.0 if diag.size == 0 or diag.min() > 0 else floor - diag.min()
    for _ in range(100):
        try:
            low = np.linalg.cholesky(a + tau * np.eye(len(idx)))
            d[idx] = np.linalg.solve(low.T, np.linalg.solve(low, b))
            return d
        except np.linalg.LinAlgError:
            tau = max(2 * tau, floor)
    d[idx] = b
    return d


def _reduced_hessp(p: Problem, x: np.ndarray, free: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """``v ↦ H v`` with the Hessian restricted to the free variables."""
    mask = free.astype(float)
    return lambda v: p.hessp(x, v * mask) * mask


def _newton(p: Problem, x: np.ndarray, f: float, g: np.ndarray) -> Iterator[Step]:
    """Newton's method with a backtracking line search from the full step.

    The direction solves ``H d = −g`` with the exact Hessian (shifted where not positive
    definite) or, when ``p.dense()`` is false, by conjugate gradients on Hessian-vector
    products, stopped at negative curvature (Newton-CG: Nocedal & Wright, Algorithm 7.1).
    """
    dense = p.dense()
    while True:
        free = p.free(x, g)
        if dense:
            d = _newton_direction(p.hess(x), g, free)
        else:
            gnorm = norm(g * free)
            d = _steihaug(_reduced_hessp(p, x, free), g * free, math.inf, min(0.5, math.sqrt(gnorm)) * gnorm)
        if not float(g @ d) < 0:
            d = -g * free
        found = _armijo(p, x, f, g, d, 1.0)
        if found is None:
            return "line search failed: no decrease along the Newton direction (precision loss)"
        xn, f, g, _ = found
        step, x = norm(xn - x), xn
        yield x, f, g, step


def _steihaug(hessp: Callable[[np.ndarray], np.ndarray], g: np.ndarray, radius: float,
              tol: float) -> np.ndarray:
    """Conjugate gradients on the model ``g·s + ½ s·Hs`` within ``|s| ≤ radius`` (Steihaug 1983).

    With ``radius = inf`` (Newton-CG) negative curvature ends the iteration instead, with the
    step so far, or with ``−g`` if there is none.
    """
    z, r = np.zeros_like(g), g.copy()
    d = -r
    for k in range(2 * len(g) + 10):
        bd = hessp(d)
        curvature = float(d @ bd)
        if not curvature > 0 and math.isinf(radius):
            return z if k else -g
        alpha = float(r @ r) / curvature if curvature > 0 else math.inf
        if curvature <= 0 or norm(z + alpha * d) >= radius:
            # Follow d to the boundary: the positive root of |z + τd| = radius.
            a, b, c = float(d @ d), 2 * float(z @ d), float(z @ z) - radius ** 2
            return z + (-b + math.sqrt(max(b * b - 4 * a * c, 0.0))) / (2 * a) * d
        z = z + alpha * d
        r_new = r + alpha * bd
        if norm(r_new) < tol:
            return z
        d = -r_new + float(r_new @ r_new) / float(r @ r) * d
        r = r_new
    return z


def _trust_ncg(p: Problem, x: np.ndarray, f: float, g: np.ndarray, radius: float = 1.0) -> Iterator[Step]:
    """Trust-region Newton-CG: needs only Hessian-vector products (forward over reverse)."""
    while True:
        free = p.free(x, g)
        gnorm = norm(g * free)
        s = _steihaug(_reduced_hessp(p, x, free), g * free, radius, min(0.5, math.sqrt(gnorm)) * gnorm)
        xn = p.project(x + s)
        s = xn - x
        predicted = -float(g @ s + 0.5 * s @ p.hessp(x, s))
        fn, gn = p.fg(xn)
        rho = (f - fn) / predicted if predicted > 0 and math.isfinite(fn) else -1.0
        length = norm(s)
        if rho < 0.25:
            radius = 0.25 * length
        elif rho > 0.75 and length > 0.99 * radius:
            radius = min(2 * radius, 1e10)
        if rho > 0.15:
            x, f, g = xn, fn, gn
        yield x, f, g, length


def _lbfgsb(p: Problem, x: np.ndarray, f: float, g: np.ndarray, memory: int = MEMORY) -> Iterator[Step]:
    """scipy's L-BFGS-B (its compiled routine, driven an iterate at a time), ``memory`` corrections
    kept; bounds are its own (the Cauchy point and subspace minimisation), not a projection."""
    return (yield from lbfgsb_steps(p.fg, x, f, g, p.lower, p.upper, memory))


METHODS: dict[str, Method] = {"gd": _gd, "momentum": _momentum, "nesterov": _nesterov, "adam": _adam,
                              "newton": _newton, "trust-ncg": _trust_ncg, "l-bfgs": lbfgs_steps, "l-bfgs-b": _lbfgsb}
ALIASES = {"gradient-descent": "gd", "trust-region": "trust-ncg", "L-BFGS-B": "l-bfgs-b", "lbfgsb": "l-bfgs-b",
           "L-BFGS": "l-bfgs", "lbfgs": "l-bfgs"}
OPTIONS = {"gd": ("lr",), "momentum": ("lr", "beta"), "nesterov": ("lr", "beta"),
           "adam": ("lr", "beta1", "beta2", "eps"), "newton": (), "trust-ncg": ("radius",), "l-bfgs": ("memory",),
           "l-bfgs-b": ("memory",)}
SCIPY_METHODS = {"slsqp": "SLSQP", "trust-constr": "trust-constr"}  # scipy's, given exact derivatives
TOLD_STOPS = ("l-bfgs",)  # given the driver's stopping rules (Stops): it yields only where they may hold
SECOND_ORDER = ("newton", "trust-ncg")
