"""Minimise an expression with its exact derivatives: built-in methods and a scipy adapter.

:func:`minimize` runs gradient descent (backtracking Armijo line search),
momentum, Nesterov, Adam, Newton (exact Hessian, line search, shifted when not
positive definite) or a trust-region Newton-CG that uses only Hessian-vector
products.  Every method is a generator of iterates; one driver owns the
stopping rules (gradient norm, step size, iterations, time, callback), the
counters and the result, so a method is just its update rule.

Fixed parameters are substituted into the DAG as constants before compiling
(the optimiser never sees them), and bounds are a box: iterates are projected
onto it and the gradient test uses the projected gradient.

Memory stays linear in the expression: Newton forms the ``n × n`` Hessian only
while ``n`` times the operations of value and gradient is at most
``DENSE_NEWTON_OPS``; beyond, it solves for its direction by conjugate gradients
on Hessian-vector products (Newton-CG), as trust-ncg does.

>>> r = minimize("(x-1)^2 + 10*(y+2)^2", {"x": 0, "y": 0}, method="newton")
>>> r.success, r.x.round(12).tolist(), r.nit
(True, [1.0, -2.0], 1)
"""

from __future__ import annotations

import itertools
import math
import numbers
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .errors import PointError, SymadError, VariableError
from .expr import Expr, check_variables, parse
from .graph import Graph
from .hessian import SecondOrder

Step = tuple[np.ndarray, float, np.ndarray, float]  # x, f, gradient, length of the step tried
Method = Callable[..., Iterator[Step]]


class OptimizeResult(dict):
    """scipy's ``OptimizeResult`` fields (``x fun jac nit nfev njev nhev success status message``)
    as a dict with attribute access, plus ``variables``, ``point`` (by name, fixed ones
    included), ``grad_norm``, ``method``, ``hessian`` (``"matrix"``, ``"products"`` for
    Hessian-vector products, or None), ``time`` (seconds, iterating), ``setup_time``
    (seconds, parsing and compiling) and, with ``keep_path=True``, ``path``
    and ``path_fun`` (every iterate, the start included)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    __setattr__ = dict.__setitem__  # type: ignore[assignment]

    def __repr__(self) -> str:
        width = max(map(len, self), default=0)
        return "\n".join(f"{k.rjust(width)}: {v!r}" for k, v in self.items() if not k.startswith("path"))


def substitute(expr: Expr, values: Mapping[str, float]) -> Expr:
    """``expr`` with the named variables replaced by numbers (rebuilt, so constants fold)."""
    g = expr.graph
    new: dict[int, int] = {}
    for node in g.reachable([expr.id]):
        op = g.op[node]
        if op == "var":
            name = g.data[node]
            new[node] = g.const(values[name]) if name in values else node  # type: ignore[index]
        elif op == "const":
            new[node] = node
        else:
            new[node] = g.make(op, *(new[a] for a in g.args[node]))
    return Expr(g, new[expr.id])


class Problem:
    """The objective over the free variables: fixed values substituted, box bounds, call counters."""

    def __init__(self, expr: Expr | str | SecondOrder, variables: Sequence[str] | None = None,
                 fixed: Mapping[str, float] | None = None, bounds: Any = None):
        compiled = expr if isinstance(expr, SecondOrder) else None
        if compiled is not None:
            expr, variables = compiled.expr, compiled.variables if variables is None else variables
        expr = parse(expr, Graph()) if isinstance(expr, str) else expr  # text: a graph of its own
        self.all_names = list(expr.variables if variables is None else variables)
        self.fixed = {k: _float(v, k) for k, v in (fixed or {}).items()}
        unknown = [k for k in self.fixed if k not in self.all_names]
        if unknown:
            raise VariableError(f"cannot fix {', '.join(unknown)}: not a variable "
                                f"(the expression uses {', '.join(self.all_names) or 'no variables'})")
        self.names = [v for v in self.all_names if v not in self.fixed]
        self.expr = substitute(expr, self.fixed) if self.fixed else expr
        reuse = compiled is not None and not self.fixed and list(compiled.variables) == self.names
        self.fn = compiled if reuse else SecondOrder(self.expr, self.names)
        self.lower, self.upper = _box(bounds, self.names)
        self.bounded = bool(np.isfinite(self.lower).any() or np.isfinite(self.upper).any())
        self.nfev = self.njev = self.nhev = 0

    def start(self, x0: Any) -> np.ndarray:
        """The start point over the free variables: a dict, or a sequence (free or all variables)."""
        if isinstance(x0, Mapping):
            given = {k: v for k, v in x0.items() if k not in self.fixed}
            check_variables(tuple(self.names), given)
            x = np.array([_float(given[v], v) for v in self.names])
        else:
            try:
                x = np.array(x0, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                raise PointError(f"x0 is not a sequence of numbers: {x0!r:.60}") from None
            if len(x) == len(self.all_names) != len(self.names):
                x = x[[self.all_names.index(v) for v in self.names]]
            if len(x) != len(self.names):
                raise PointError(f"x0 needs {len(self.names)} value(s) ({', '.join(self.names)}), "
                                 f"got {len(x)}")
        return self.project(x)

    def point(self, x: np.ndarray) -> dict[str, float]:
        """Every variable by name, in ``variables`` order, fixed ones included."""
        free = dict(zip(self.names, map(float, x)))
        return {v: self.fixed[v] if v in self.fixed else free[v] for v in self.all_names}

    def fg(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        self.nfev += 1
        self.njev += 1
        return self.fn.value_and_grad(x)

    def dense(self) -> bool:
        """Whether Newton may form the Hessian matrix (see ``DENSE_NEWTON_OPS``)."""
        return len(self.names) * self.fn.operations() <= DENSE_NEWTON_OPS

    def hess(self, x: np.ndarray) -> np.ndarray:
        self.nhev += 1
        return self.fn.hessian(x)

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        self.nhev += 1
        return self.fn.hessp(x, p)

    def project(self, x: np.ndarray) -> np.ndarray:
        return np.clip(x, self.lower, self.upper) if self.bounded else x

    def free(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Mask of variables not held at a bound by the gradient."""
        if not self.bounded:
            return np.ones(len(x), dtype=bool)
        return ~(((x <= self.lower) & (g > 0)) | ((x >= self.upper) & (g < 0)))

    def pgrad(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """The projected gradient: zero exactly at a (box-constrained) stationary point."""
        return x - self.project(x - g) if self.bounded else g


# ---------------------------------------------------------------- methods
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
        step, x, alpha = float(np.linalg.norm(xn - x)), xn, 2 * alpha
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
        step, x = float(np.linalg.norm(xn - x)), xn
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
        step, x = float(np.linalg.norm(xn - x)), xn
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
            gnorm = float(np.linalg.norm(g * free))
            d = _steihaug(_reduced_hessp(p, x, free), g * free, math.inf, min(0.5, math.sqrt(gnorm)) * gnorm)
        if not float(g @ d) < 0:
            d = -g * free
        found = _armijo(p, x, f, g, d, 1.0)
        if found is None:
            return "line search failed: no decrease along the Newton direction (precision loss)"
        xn, f, g, _ = found
        step, x = float(np.linalg.norm(xn - x)), xn
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
        if curvature <= 0 or np.linalg.norm(z + alpha * d) >= radius:
            # Follow d to the boundary: the positive root of |z + τd| = radius.
            a, b, c = float(d @ d), 2 * float(z @ d), float(z @ z) - radius ** 2
            return z + (-b + math.sqrt(max(b * b - 4 * a * c, 0.0))) / (2 * a) * d
        z = z + alpha * d
        r_new = r + alpha * bd
        if np.linalg.norm(r_new) < tol:
            return z
        d = -r_new + float(r_new @ r_new) / float(r @ r) * d
        r = r_new
    return z


def _trust_ncg(p: Problem, x: np.ndarray, f: float, g: np.ndarray, radius: float = 1.0) -> Iterator[Step]:
    """Trust-region Newton-CG: needs only Hessian-vector products (forward over reverse)."""
    while True:
        free = p.free(x, g)
        gnorm = float(np.linalg.norm(g * free))
        s = _steihaug(_reduced_hessp(p, x, free), g * free, radius, min(0.5, math.sqrt(gnorm)) * gnorm)
        xn = p.project(x + s)
        s = xn - x
        predicted = -float(g @ s + 0.5 * s @ p.hessp(x, s))
        fn, gn = p.fg(xn)
        rho = (f - fn) / predicted if predicted > 0 and math.isfinite(fn) else -1.0
        length = float(np.linalg.norm(s))
        if rho < 0.25:
            radius = 0.25 * length
        elif rho > 0.75 and length > 0.99 * radius:
            radius = min(2 * radius, 1e10)
        if rho > 0.15:
            x, f, g = xn, fn, gn
        yield x, f, g, length


METHODS: dict[str, Method] = {"gd": _gd, "momentum": _momentum, "nesterov": _nesterov,
                              "adam": _adam, "newton": _newton, "trust-ncg": _trust_ncg}
ALIASES = {"gradient-descent": "gd", "trust-region": "trust-ncg"}
OPTIONS = {"gd": ("lr",), "momentum": ("lr", "beta"), "nesterov": ("lr", "beta"),
           "adam": ("lr", "beta1", "beta2", "eps"), "newton": (), "trust-ncg": ("radius",)}
SECOND_ORDER = ("newton", "trust-ncg")
# Newton forms the Hessian while n × (operations of value and gradient) is at most this: its
# rows are n reverse sweeps through the gradient, so its DAG and code can be n times the
# gradient's, and it has n² entries.  Beyond, Newton-CG on Hessian-vector products.
DENSE_NEWTON_OPS = 200_000
# Unbounded below: f at or under -UNBOUNDED_F, or f still falling at |x| ≥ EXPLODED_X (there a
# product of two coordinates is near overflow, so no finite minimum is in reach).
UNBOUNDED_F = 1e300
EXPLODED_X = 1e150

STATUS = {
    0: "gradient norm below tolerance",
    1: "stalled: step below xtol*(1+|x|) but gradient norm above tol",
    2: "maximum number of iterations reached",
    3: "time limit reached",
    4: "stopped by the callback",
    5: "non-finite: the value or gradient is not finite (overflow, or outside the domain)",
    6: "line search failed",  # the method's message says along what
    7: "diverged: unbounded below",
}


def _real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _positive(v: Any) -> bool:
    return _real(v) and 0 < v < math.inf


SETTINGS: dict[str, tuple[str, Callable[[Any], bool]]] = {  # name: (what it must be, test)
    "max_iter": ("a positive integer", lambda v: isinstance(v, numbers.Integral) and _real(v) and v >= 1),
    "tol": ("a positive number", _positive),
    "xtol": ("a number >= 0", lambda v: _real(v) and 0 <= v < math.inf),
    "max_time": ("a positive number of seconds", lambda v: _real(v) and v > 0),
    "lr": ("a positive number", _positive),
    "radius": ("a positive number", _positive),
    "eps": ("a positive number", _positive),
    **{b: ("a number in [0, 1)", lambda v: _real(v) and 0 <= v < 1) for b in ("beta", "beta1", "beta2")},
}


def check_settings(settings: Mapping[str, Any], spell: Callable[[str], str] = str) -> None:
    """Raise a SymadError for the first setting out of range (``None``: the default, fine);
    ``spell`` names a setting in the message (e.g. as a command-line flag)."""
    for name, value in settings.items():
        what, ok = SETTINGS[name]
        if value is not None and not ok(value):
            shown = format(value, "g") if isinstance(value, float) else repr(value)
            raise SymadError(f"{spell(name)} must be {what}, got {shown:.60}")


# ---------------------------------------------------------------- the driver
def minimize(fun: Expr | str | SecondOrder, x0: Any, method: str = "newton", *,
             variables: Sequence[str] | None = None,
             fixed: Mapping[str, float] | None = None, bounds: Any = None, tol: float = 1e-8,
             xtol: float = 1e-12, max_iter: int | None = None, max_time: float | None = None,
             callback: Callable[[OptimizeResult], Any] | None = None, keep_path: bool = False,
             **options: float) -> OptimizeResult:
    """Minimise an expression (or its text) from ``x0`` with exact derivatives.

    ``fun`` may also be a :class:`symad.hessian.SecondOrder`, whose compiled programs
    are then reused (no compilation per call, e.g. for many starts).

    ``method``: ``gd``, ``momentum``, ``nesterov``, ``adam``, ``newton`` or ``trust-ncg``;
    options ``lr``, ``beta``, ``beta1``, ``beta2``, ``eps`` or ``radius`` as the method takes.
    ``x0``: a dict, or a sequence in ``variables`` order (default ``expr.variables``);
    ``fixed``: ``{name: value}`` held constant; ``bounds``: ``{name: (lo, hi)}`` or one
    ``(lo, hi)`` per free variable, ``None`` for no bound.  ``tol``, ``lr``, ``radius``,
    ``eps`` must be positive and finite, ``max_iter`` a positive integer (default 1000
    for Newton and trust-ncg, 100000 for first-order methods), ``max_time`` positive
    seconds, ``xtol ≥ 0``, betas in [0, 1): else a SymadError.

    ``success`` means a stationary point: the (projected) gradient's 2-norm is ``≤ tol``
    (``status`` 0), and nothing else.  Otherwise ``status`` says why the run stopped
    (``STATUS`` has the messages): 7 diverged, unbounded below (``f ≤ -1e300``, ``-inf``
    included, or ``f`` still falling at ``|x| ≥ 1e150``); 5 a non-finite value or
    gradient; 1 stalled (a step shorter than ``xtol·(1 + |x|)`` with the gradient norm
    above ``tol``); 2 ``max_iter`` iterations; 3 ``max_time`` seconds; 4
    ``callback(intermediate_result)`` returned True or raised StopIteration; 6 a failed
    line search.
    """
    name = ALIASES.get(method, method)
    if name not in METHODS:
        raise SymadError(f"unknown method {method!r} (known: {', '.join(METHODS)})")
    extra = [k for k in options if k not in OPTIONS[name]]
    if extra:
        takes = ", ".join(OPTIONS[name]) or "no options"
        raise SymadError(f"method {name} does not take {', '.join(extra)} (it takes {takes})")
    check_settings({"max_iter": max_iter, "tol": tol, "xtol": xtol, "max_time": max_time, **options})
    if max_iter is None:
        max_iter = 1000 if name in SECOND_ORDER else 100_000
    t0 = time.perf_counter()
    p = Problem(fun, variables, fixed, bounds)
    x = p.start(x0)
    dense = name == "newton" and p.dense()
    with np.errstate(all="ignore"):  # compile (on first call) before the clock starts
        p.fn.value_and_grad(x)
        if dense:
            p.fn.hessian(x)
        elif name in SECOND_ORDER:
            p.fn.hessp(x, x)
    setup, t0 = time.perf_counter() - t0, time.perf_counter()
    with np.errstate(all="ignore"):  # non-finite values are detected and reported, not warned about
        f, g = p.fg(x)
        gnorm = float(np.linalg.norm(p.pgrad(x, g)))
        nit, status, message = 0, -1, ""
        falling = stalled = False
        path = [(x, f, gnorm)]
        steps = METHODS[name](p, x, f, g, **options)
        while True:
            if f <= -UNBOUNDED_F:
                status, message = 7, f"{STATUS[7]} (f = {f:.3g})"
            elif not (math.isfinite(f) and math.isfinite(gnorm)):
                status, message = 5, STATUS[5]
            elif gnorm <= tol:
                status, message = 0, STATUS[0]
            elif falling and (size := float(np.linalg.norm(x))) >= EXPLODED_X:
                status, message = 7, f"{STATUS[7]} (f still falling at |x| = {size:.3g})"
            elif stalled:
                status, message = 1, STATUS[1]
            elif nit >= max_iter:
                status, message = 2, STATUS[2]
            elif max_time is not None and time.perf_counter() - t0 >= max_time:
                status, message = 3, STATUS[3]
            if status >= 0:
                break
            try:
                x, f_new, g, step = next(steps)
            except StopIteration as stop:
                status, message = 6, str(stop.value)
                break
            nit += 1
            falling, f = f_new < f, f_new
            gnorm = float(np.linalg.norm(p.pgrad(x, g)))
            if keep_path:
                path.append((x, f, gnorm))
            if callback is not None:
                try:
                    stop_now = callback(OptimizeResult(x=x, fun=f, jac=g, nit=nit, grad_norm=gnorm))
                except StopIteration:
                    stop_now = True
                if stop_now is True:
                    status, message = 4, STATUS[4]
                    break
            stalled = step <= xtol * (1.0 + float(np.linalg.norm(x)))
    result = OptimizeResult(
        x=x, fun=f, jac=g, nit=nit, nfev=p.nfev, njev=p.njev, nhev=p.nhev,
        success=status == 0, status=status, message=message,
        variables=list(p.names), point=p.point(x), grad_norm=gnorm, method=name,
        hessian="matrix" if dense else "products" if name in SECOND_ORDER else None,
        time=time.perf_counter() - t0, setup_time=setup)
    if keep_path:
        result.path = np.array([row[0] for row in path]).reshape(len(path), len(x))
        result.path_fun = np.array([row[1] for row in path])
        result.path_grad_norm = np.array([row[2] for row in path])
    return result


# ---------------------------------------------------------------- scipy
class ScipyFunctions:
    """Exact derivatives in the calling conventions of ``scipy.optimize.minimize``.

    ``fun`` (with ``jac=True``: returns ``(f, gradient)``), ``value`` and ``jac``
    (separately), ``hess(x)`` and ``hessp(x, p)``, over the free variables in
    ``variables`` order.  ``x0(point)`` and ``bounds(spec)`` convert dicts by name.

    >>> import scipy.optimize
    >>> s = scipy_functions("100*(y-x^2)^2+(1-x)^2")
    >>> r = scipy.optimize.minimize(s.fun, s.x0({"x": -1.2, "y": 1}), jac=True, hess=s.hess,
    ...                             method="trust-ncg", options={"gtol": 1e-9})
    >>> r.x.round(8).tolist()
    [1.0, 1.0]
    """

    def __init__(self, expr: Expr | str | SecondOrder, variables: Sequence[str] | None = None,
                 fixed: Mapping[str, float] | None = None):
        self.problem = Problem(expr, variables, fixed)
        self.function = self.problem.fn
        self.variables = list(self.problem.names)

    def fun(self, x: Any) -> tuple[float, np.ndarray]:
        return self.function.value_and_grad(np.asarray(x, dtype=float))

    def value(self, x: Any) -> float:
        return self.function.value(np.asarray(x, dtype=float))

    def jac(self, x: Any) -> np.ndarray:
        return self.function.grad(np.asarray(x, dtype=float))

    def hess(self, x: Any) -> np.ndarray:
        return self.function.hessian(np.asarray(x, dtype=float))

    def hessp(self, x: Any, p: Any) -> np.ndarray:
        return self.function.hessp(np.asarray(x, dtype=float), p)

    def x0(self, point: Any) -> np.ndarray:
        """A start point (dict by name, or sequence) as an array in ``variables`` order."""
        return self.problem.start(point)

    def bounds(self, spec: Any) -> list[tuple[float | None, float | None]]:
        """``{name: (lo, hi)}`` as the list of pairs L-BFGS-B takes (``None``: unbounded)."""
        lower, upper = _box(spec, self.variables)
        return [(lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None)
                for lo, hi in zip(lower, upper)]

    def point(self, x: Any) -> dict[str, float]:
        """A solution by name, fixed variables included."""
        return self.problem.point(np.asarray(x, dtype=float))


def scipy_functions(expr: Expr | str | SecondOrder, variables: Sequence[str] | None = None,
                    fixed: Mapping[str, float] | None = None) -> ScipyFunctions:
    """The objective's exact value, gradient, Hessian and Hessian-vector product for scipy."""
    return ScipyFunctions(expr, variables, fixed)


# ---------------------------------------------------------------- helpers
def _float(value: Any, name: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise PointError(f"value for {name} is not a number: {value!r:.60}") from None


def _box(bounds: Any, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Bounds as arrays ``(lower, upper)`` over ``names``; accepts a dict or one pair per name."""
    lower, upper = np.full(len(names), -math.inf), np.full(len(names), math.inf)
    if bounds is None:
        return lower, upper
    if isinstance(bounds, Mapping):
        unknown = [k for k in bounds if k not in names]
        if unknown:
            raise VariableError(f"bounds for {', '.join(unknown)}: not a free variable "
                                f"(free: {', '.join(names) or 'none'})")
        pairs = [bounds.get(v, (None, None)) for v in names]
    else:
        pairs = list(bounds)
        if len(pairs) != len(names):
            raise PointError(f"bounds need one (lo, hi) pair per free variable ({len(names)}), "
                             f"got {len(pairs)}")
    for i, (name, pair) in enumerate(zip(names, pairs)):
        lo, hi = pair
        lower[i] = -math.inf if lo is None else _float(lo, name)
        upper[i] = math.inf if hi is None else _float(hi, name)
        if not lower[i] <= upper[i]:
            raise PointError(f"empty bounds for {name}: {lower[i]:g} > {upper[i]:g}")
    return lower, upper
