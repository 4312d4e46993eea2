"""Minimise an expression with its exact derivatives: the driver of the built-in methods.

:func:`minimize` runs gradient descent (backtracking Armijo line search),
momentum, Nesterov, Adam, Newton (exact Hessian, line search, shifted when not
positive definite) or a trust-region Newton-CG that uses only Hessian-vector
products, symad's L-BFGS (``l-bfgs``: its iteration in machine code), or scipy's L-BFGS-B
driven an iterate at a time (``l-bfgs-b``, its bounds its own).  Every method is a generator
of iterates; one driver owns the stopping rules (gradient norm, step size, iterations, time, callback), the
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

import math
import numbers
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from symad.core.dag import Graph
from symad.core.errors import SymadError
from symad.expr import Expr, parse
from symad.optimize.lbfgs import Stops
from symad.optimize.methods import ALIASES, METHODS, OPTIONS, SCIPY_METHODS, SECOND_ORDER, TOLD_STOPS
from symad.optimize.problem import DataProblem, Problem, has_loops, is_objective
from symad.optimize.result import OptimizeResult
from symad.optimize.vectors import norm
from symad.second_order import SecondOrder

if TYPE_CHECKING:
    from symad.objectives import Objective

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
    "memory": ("an integer from 1 to 1000", lambda v: isinstance(v, numbers.Integral) and _real(v) and 1 <= v <= 1000),
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


def minimize(fun: Expr | str | SecondOrder | Objective, x0: Any, method: str | None = None, *,
             variables: Sequence[str] | None = None,
             fixed: Mapping[str, float] | None = None, bounds: Any = None, tol: float = 1e-8,
             xtol: float = 1e-12, max_iter: int | None = None, max_time: float | None = None,
             callback: Callable[[OptimizeResult], Any] | None = None, keep_path: bool = False,
             background: bool = True, params: Mapping[str, float] | None = None,
             batch_size: int | None = None, seed: int = 0, constraints: Any = None,
             **options: float) -> OptimizeResult:
    """Minimise an expression (or its text) from ``x0`` with exact derivatives.

    ``fun`` may also be a :class:`symad.second_order.SecondOrder`, whose compiled programs
    are then reused (no compilation per call, e.g. for many starts), or an
    :class:`~symad.objectives.Objective` (a loss summed over data), minimised over its
    ``wrt``, with ``fixed`` and ``params`` (its parameters' values) as for an expression, and
    ``constraints``.  With an objective, ``batch_size`` makes ``momentum``, ``nesterov`` and
    ``adam`` stochastic: each step's gradient is over a fresh mini-batch of that many rows (the
    rows shuffled with ``seed`` and taken in turn, an epoch at a time), so ``success`` judges
    the mini-batch's gradient (``batch_fun``, ``batch_jac``, ``batch_grad_norm``: the last
    one's), while ``fun``, ``jac`` and ``grad_norm`` are over every row at the result; bound
    the run with ``max_iter`` or ``max_time``.

    ``method``: ``gd``, ``momentum``, ``nesterov``, ``adam``, ``newton`` (the default),
    ``trust-ncg``, ``l-bfgs`` (symad's L-BFGS: L-BFGS-B's iteration without bounds, in machine
    code; no bounds) or ``l-bfgs-b`` (also ``L-BFGS-B``: scipy's routine, its BLAS on one thread),
    with options ``lr``, ``beta``, ``beta1``, ``beta2``, ``eps``, ``radius`` or ``memory`` (the
    corrections L-BFGS and L-BFGS-B keep, 10) as the method takes; or scipy's ``slsqp`` or
    ``trust-constr`` given exact derivatives, which take ``constraints``:
    ``[("eq", "x + y - 1"), ("ineq", "1 - x^2 - y^2")]`` (``eq``: the expression is 0; ``ineq``:
    it is ≥ 0, scipy's convention), ``slsqp`` by default when there are constraints.  Their
    result also has ``constraints`` (kinds, values, ``violation``: the most any constraint or
    bound is missed by) and ``multipliers`` where scipy gives them; ``success`` needs scipy's
    success and a violation of at most 1e-6.  ``ipopt`` runs IPOPT (``pip install
    "symad[ipopt]"``) on the exact sparse Jacobian and Lagrangian Hessian, its own options in
    ``options={name: value}``; its result adds ``ipopt_status``, ``ipopt_message`` and
    ``bound_multipliers``.  With ``trust-constr`` or ``ipopt``, the objective may keep sums as
    loops and a constraint may be a family ``each(k = lo..hi, c_k)`` (docs/guide/optimize.md).
    ``x0``: a dict, or a sequence in ``variables`` order (default ``expr.variables``);
    ``fixed``: ``{name: value}`` held constant (substituted: compiled for these values; with
    loops, whole names given to every piece's loops as data);
    ``params``: ``{name: value}`` held constant too, but passed at each call to one compiled
    function, so a :class:`~symad.second_order.SecondOrder` compiled with ``wrt=`` is reused for
    new values without compiling again; ``bounds``: ``{name: (lo, hi)}`` or one ``(lo, hi)`` per
    free variable, ``None`` for no bound.  ``tol``, ``lr``, ``radius``, ``eps`` must be positive
    and finite, ``max_iter`` a positive integer (default 1000 for Newton and trust-ncg, 100000
    for first-order methods), ``max_time`` positive seconds, ``xtol ≥ 0``, betas in [0, 1): else
    a SymadError.

    ``success`` means a stationary point: the (projected) gradient's 2-norm is ``≤ tol``
    (``status`` 0), and nothing else.  Otherwise ``status`` says why the run stopped
    (``STATUS`` has the messages): 7 diverged, unbounded below (``f ≤ -1e300``, ``-inf``
    included, or ``f`` still falling at ``|x| ≥ 1e150``); 5 a non-finite value or
    gradient; 1 stalled (a step shorter than ``xtol·(1 + |x|)`` with the gradient norm
    above ``tol``); 2 ``max_iter`` iterations; 3 ``max_time`` seconds; 4
    ``callback(intermediate_result)`` returned True or raised StopIteration; 6 a failed
    line search.

    ``background=False`` interprets calls instead of compiling code in a background
    thread for later ones (for one-shot runs, such as the command line's).
    """
    if method is None:
        method = "newton" if constraints is None else "slsqp"
    name = ALIASES.get(method, method)
    if name == "ipopt":
        ipopt_options = options.pop("options", None)
        if options:
            raise SymadError(f"method ipopt does not take {', '.join(options)} (IPOPT's own options go in "
                             f"options={{name: value}})")
        if batch_size is not None:
            raise SymadError("method ipopt takes the whole objective: batch_size is for "
                             f"{', '.join(STOCHASTIC)}")
        check_settings({"max_iter": max_iter, "tol": tol, "max_time": max_time})
        from symad.optimize.ipopt import minimize_ipopt  # (the constrained solvers load on first use)

        return OptimizeResult(minimize_ipopt(
            fun, x0, constraints, variables=variables, fixed=fixed, bounds=bounds, tol=tol,
            max_iter=3000 if max_iter is None else max_iter, max_time=max_time, callback=callback,
            background=background, params=params, options=ipopt_options))
    if name in SCIPY_METHODS:
        if options:
            raise SymadError(f"method {name} does not take {', '.join(options)}")
        if batch_size is not None:
            raise SymadError(f"method {name} takes the whole objective: batch_size is for "
                             f"{', '.join(STOCHASTIC)}")
        check_settings({"max_iter": max_iter, "tol": tol, "xtol": xtol, "max_time": max_time})
        from symad.optimize.constrained import minimize_scipy

        return OptimizeResult(minimize_scipy(
            fun, x0, name, constraints, variables=variables, fixed=fixed, bounds=bounds, tol=tol, xtol=xtol,
            max_iter=1000 if max_iter is None else max_iter, max_time=max_time, callback=callback,
            background=background, params=params))
    if name not in METHODS:
        raise SymadError(f"unknown method {method!r} (known: {', '.join([*METHODS, *SCIPY_METHODS, 'ipopt'])})")
    if constraints is not None:
        raise SymadError(f"method {name} takes no constraints: use method='slsqp', 'trust-constr' or 'ipopt'")
    extra = [k for k in options if k not in OPTIONS[name]]
    if extra:
        takes = ", ".join(OPTIONS[name]) or "no options"
        raise SymadError(f"method {name} does not take {', '.join(extra)} (it takes {takes})")
    check_settings({"max_iter": max_iter, "tol": tol, "xtol": xtol, "max_time": max_time, **options})
    if max_iter is None:
        max_iter = 1000 if name in SECOND_ORDER else 100_000
    t0 = time.perf_counter()
    p = _problem(fun, name, variables, fixed, bounds, background, params, batch_size, seed)
    x = p.start(x0)
    dense = name == "newton" and p.dense()
    with np.errstate(all="ignore"):  # compile (on first call) before the clock starts
        p.fn.value_and_grad(x, *p.args)
        if dense:
            p.fn.hessian(x, *p.args)
        elif name in SECOND_ORDER:
            p.fn.hessp(x, x, *p.args)
    setup, t0 = time.perf_counter() - t0, time.perf_counter()
    with np.errstate(all="ignore"):  # non-finite values are detected and reported, not warned about
        f, g = p.fg(x)
        gnorm = norm(p.pgrad(x, g))
        nit, status, message = 0, -1, ""
        falling = stalled = False
        path = [(x, f, gnorm)]
        told = {"stops": Stops(tol, xtol, max_iter, callback is not None or keep_path or max_time is not None)}
        steps = METHODS[name](p, x, f, g, **(told if name in TOLD_STOPS else {}), **options)
        try:
            while True:
                if f <= -UNBOUNDED_F:
                    status, message = 7, f"{STATUS[7]} (f = {f:.3g})"
                elif not (math.isfinite(f) and math.isfinite(gnorm)):
                    status, message = 5, STATUS[5]
                elif gnorm <= tol:
                    status, message = 0, STATUS[0]
                elif falling and (size := norm(x)) >= EXPLODED_X:
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
                    x, f_new, g, step, *taken = next(steps)  # (a count where a method yields some iterates only)
                except StopIteration as stop:  # a message (a failed line search), or a status and its message
                    status, message = stop.value if isinstance(stop.value, tuple) else (6, str(stop.value))
                    break
                nit += taken[0] if taken else 1
                falling, f = f_new < f, f_new
                gnorm = norm(p.pgrad(x, g))
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
                stalled = step <= xtol * (1.0 + norm(x))
        finally:
            steps.close()  # a method's resources (L-BFGS-B's hold on BLAS threads), even on an error
    batch: dict[str, Any] = {}
    if isinstance(p, DataProblem) and p.fn.batched:
        # the run saw mini-batches; the result reports the objective over every row at x (one pass)
        batch = {"batch_fun": f, "batch_jac": g, "batch_grad_norm": gnorm}
        with np.errstate(all="ignore"):
            f, g = p.fn.full(x, *p.args)
        p.nfev += 1
        p.njev += 1
        gnorm = norm(p.pgrad(x, g))
    result = OptimizeResult(
        x=x, fun=f, jac=g, nit=nit, nfev=p.nfev, njev=p.njev, nhev=p.nhev,
        success=status == 0, status=status, message=message,
        variables=p.result_names(), point=p.point(x), grad_norm=gnorm, method=name,
        hessian="matrix" if dense else "products" if name in SECOND_ORDER else None,
        time=time.perf_counter() - t0, setup_time=setup, **batch)
    if keep_path:
        result.path = np.array([row[0] for row in path]).reshape(len(path), len(x))
        result.path_fun = np.array([row[1] for row in path])
        result.path_grad_norm = np.array([row[2] for row in path])
    return result


STOCHASTIC = ("momentum", "nesterov", "adam")  # one gradient a step: a mini-batch each


def _problem(fun: Any, method: str, variables: Sequence[str] | None, fixed: Mapping[str, float] | None,
             bounds: Any, background: bool, params: Mapping[str, float] | None, batch_size: int | None,
             seed: int) -> Problem:
    if not is_objective(fun):
        if batch_size is not None:
            raise SymadError("batch_size is for an objective over data (symad.objective(...)), not an expression")
        if isinstance(fun, (str, Expr)):
            fun = parse(fun, Graph()) if isinstance(fun, str) else fun  # text: a graph of its own
            if has_loops(fun):  # whole vectors: value, gradient and Hessian-vector products as loops
                from symad.optimize.loops import LoopObjective
                from symad.optimize.nlp import refuse_variables

                refuse_variables(variables)
                return LoopObjective(fun, bounds, fixed, params)
        return Problem(fun, variables, fixed, bounds, background=background, params=params)
    if variables:
        raise SymadError("an objective's wrt and data name its variables: it takes no variables (hold some "
                         "with fixed={...})")
    if batch_size is not None:
        if not (isinstance(batch_size, numbers.Integral) and batch_size >= 1):
            raise SymadError(f"batch_size must be a positive integer, got {batch_size!r:.60}")
        if method not in STOCHASTIC:
            raise SymadError(f"batch_size is for the stochastic methods {', '.join(STOCHASTIC)} (one gradient "
                             f"a step); {method} needs the whole sum")
    return DataProblem(fun, bounds, batch_size, seed, fixed, params)
