"""Constrained minimisation: scipy's ``SLSQP`` and ``trust-constr`` given symad's exact derivatives.

The objective's value and gradient come from one compiled program per point, its Hessian
(``trust-constr``) from another; the constraints' values and Jacobian from one program of
them all (:class:`~symad.optimize.constraints.Constraints`), and ``trust-constr``
also gets the exact Hessian of ``Σ v_i c_i``.  scipy's iterations, symad's result.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from symad.ad.sparsity import csr
from symad.core.errors import SymadError
from symad.expr import Expr
from symad.optimize.constraints import Constraints
from symad.optimize.loops import LoopProblem
from symad.optimize.methods import SCIPY_METHODS
from symad.optimize.nlp import FEASIBLE, constrained_problem, jacobian_t, refuse_variables, violation, with_loops
from symad.optimize.problem import Problem
from symad.optimize.sparse import SparseHessian, symmetric_csr
from symad.second_order import SecondOrder

if TYPE_CHECKING:
    from symad.objectives import Objective

# trust-constr gets the objective's Hessian as a sparse matrix while it has at most this many
# nonzeros a row on average (each compiled as an expression); denser and large, Hessian-vector products.
SPARSE_PER_ROW = 50


def minimize_scipy(fun: Expr | str | SecondOrder | Objective, x0: Any, method: str, constraints: Any, *,
                   variables: Sequence[str] | None, fixed: Mapping[str, float] | None, bounds: Any, tol: float,
                   xtol: float, max_iter: int, max_time: float | None, callback: Callable[[Any], Any] | None,
                   background: bool, params: Mapping[str, float] | None) -> dict[str, Any]:
    """The fields of symad's ``OptimizeResult`` for a scipy-backed run (see ``minimize``)."""
    try:
        import scipy.optimize as so
    except ImportError:
        raise SymadError(f"method {method} runs scipy's: pip install scipy") from None
    pieces = with_loops(fun, constraints)
    if pieces is not None:
        if method != "trust-constr":
            raise SymadError(f"method {method} takes dense matrices: a problem with loops takes method='trust-constr' "
                             f"or 'ipopt' (sparse)")
        refuse_variables(variables)
        return _trust_constr_loops(*pieces, x0, bounds, tol, xtol, max_iter, max_time, callback, fixed, params)
    t0 = time.perf_counter()
    problem, cons = constrained_problem(fun, constraints, variables, fixed, bounds, background, params)
    x = problem.start(x0)
    box = so.Bounds(problem.lower, problem.upper) if problem.bounded else None
    dense = problem.dense()
    with np.errstate(all="ignore"):  # compile before the clock starts, as minimize does
        problem.fn.value_and_grad(x, *problem.args)
        if cons is not None:
            cons.function.value_and_jacobian(x, *cons.args)
    setup, t1 = time.perf_counter() - t0, time.perf_counter()
    stopped: list[str] = []
    check = _stopper(t1, max_time, callback, stopped)

    kwargs: dict[str, Any] = {"jac": True, "bounds": box, "callback": check}
    if method == "slsqp":
        kwargs.update(constraints=cons.dicts() if cons else (), options={"maxiter": max_iter, "ftol": tol})
    else:  # sparse matrices of the structural nonzeros: scipy factorises them as sparse
        kwargs.update(constraints=cons.nonlinear(sparse=True) if cons else (),
                      options={"maxiter": max_iter, "gtol": tol, "xtol": xtol})
        if dense or (hasattr(problem.fn, "hessian_pattern")
                     and problem.fn.hessian_pattern()[0].size <= SPARSE_PER_ROW * len(x)):
            hess, n = SparseHessian(problem.fn, len(x)), len(x)

            def sparse_hess(x: np.ndarray) -> Any:
                problem.nhev += 1
                return symmetric_csr(hess.rows, hess.cols, hess.values(x, *problem.args), n)

            kwargs["hess"] = sparse_hess
        else:
            kwargs["hessp"] = lambda x, p: problem.hessp(x, p)
    with np.errstate(all="ignore"):
        r = so.minimize(problem.fg, x, method=SCIPY_METHODS[method], **kwargs)
        x = np.asarray(r.x, dtype=float)
        f, g = problem.fn.value_and_grad(x, *problem.args)
        values = cons.values(x) if cons is not None else np.zeros(0)
    violation = violation_of(values, cons, x, problem)
    success = bool(r.success) and not stopped and violation <= FEASIBLE
    message = stopped[0] if stopped else str(r.message)
    if r.success and violation > FEASIBLE:
        message += f" (but a constraint is violated by {violation:.3g})"
    out = {
        "x": x, "fun": float(f), "jac": g, "nit": int(r.get("nit", 0)),
        "nfev": problem.nfev, "njev": problem.njev, "nhev": problem.nhev + (cons.nhev if cons else 0),
        "success": success, "status": int(r.status), "message": message,
        "variables": list(problem.names), "point": problem.point(x), "method": method,
        "hessian": None if method == "slsqp" else "products" if "hessp" in kwargs else "sparse",
        "constraints": {"kinds": cons.kinds if cons else [], "values": values, "violation": violation},
        "time": time.perf_counter() - t1, "setup_time": setup,
    }
    multipliers = _multipliers(r, method, cons) if cons is not None else None
    if multipliers is not None:
        out["multipliers"] = multipliers
        # the Lagrangian's (projected) gradient, ∇f - Σ λ_i ∇c_i: zero at a KKT point
        with np.errstate(all="ignore"):
            g = g - cons.jacobian(x).T @ multipliers
    out["grad_norm"] = float(np.linalg.norm(problem.pgrad(x, g)))
    return out


def _trust_constr_loops(fun: Any, constraints: Any, x0: Any, bounds: Any, tol: float, xtol: float, max_iter: int,
                        max_time: float | None, callback: Callable[[Any], Any] | None,
                        fixed: Mapping[str, Any] | None, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """scipy's trust-constr on a problem with loops: the sparse forms IPOPT takes, as scipy.sparse
    matrices; ``fixed`` and ``params``: whole names held at their values."""
    import scipy.optimize as so

    t0 = time.perf_counter()
    nlp = LoopProblem(fun, constraints, bounds, fixed, params)
    x = nlp.start(x0)
    n, m = len(x), nlp.m
    (j_rows, j_cols), union, zeros = nlp.jacobian, nlp.union, np.zeros(nlp.m)
    with np.errstate(all="ignore"):  # compile before the clock starts, as minimize does
        nlp.fg(x)
        nlp.values(x)
        nlp.jacobian_values(x)
        nlp.hessian_values(x, 1.0, np.ones(m))
    setup, t1 = time.perf_counter() - t0, time.perf_counter()
    stopped: list[str] = []
    check = _stopper(t1, max_time, callback, stopped)

    cons = []
    if m:
        cons = [so.NonlinearConstraint(
            nlp.values, np.zeros(m), np.where(nlp.eq, 0.0, np.inf),
            jac=lambda x: csr(j_rows, j_cols, nlp.jacobian_values(x), (m, n)),
            hess=lambda x, v: symmetric_csr(union.rows, union.cols, nlp.hessian_values(x, 0.0, v), n))]
    with np.errstate(all="ignore"):
        r = so.minimize(nlp.fg, x, jac=True, method="trust-constr", constraints=cons, callback=check,
                        hess=lambda x: symmetric_csr(union.rows, union.cols, nlp.hessian_values(x, 1.0, zeros), n),
                        bounds=so.Bounds(nlp.lower, nlp.upper) if nlp.bounded else None,
                        options={"maxiter": max_iter, "gtol": tol, "xtol": xtol})
        x = np.asarray(r.x, dtype=float)
        f, g = nlp.fg(x)
        values = nlp.values(x)
    worst = violation(nlp, x, values)
    success = bool(r.success) and not stopped and worst <= FEASIBLE
    message = stopped[0] if stopped else str(r.message)
    if r.success and worst > FEASIBLE:
        message += f" (but a constraint is violated by {worst:.3g})"
    out = {"x": x, "fun": float(f), "jac": g, "nit": int(r.get("nit", 0)), "nfev": nlp.nfev, "njev": nlp.njev,
           "nhev": nlp.nhev, "success": success, "status": int(r.status), "message": message,
           "variables": list(nlp.names), "point": nlp.point(x), "method": "trust-constr", "hessian": "sparse",
           "constraints": {"kinds": list(nlp.kinds), "values": values, "violation": worst},
           "time": time.perf_counter() - t1, "setup_time": setup}
    if m and r.get("v"):
        out["multipliers"] = -np.asarray(r.v[0], dtype=float)
        g = g - jacobian_t(nlp, x, out["multipliers"])
    out["grad_norm"] = float(np.linalg.norm(nlp.pgrad(x, g)))
    return out


def _multipliers(r: Any, method: str, cons: Constraints) -> np.ndarray | None:
    """The constraints' Lagrange multipliers in their given order, with ``∇f = Σ λ_i ∇c_i`` at a
    solution (so ``λ_i ≥ 0`` for an active inequality); None where scipy gives none."""
    if method == "trust-constr":
        v = r.get("v")  # the one NonlinearConstraint's first; scipy's sign is the opposite
        return None if not v else -np.asarray(v[0], dtype=float)
    given = r.get("multipliers")  # SLSQP: the equalities', then the inequalities' (cons.dicts())
    if given is None or len(given) != len(cons):
        return None
    out = np.empty(len(cons))
    out[np.concatenate([np.flatnonzero(cons.eq), np.flatnonzero(~cons.eq)])] = given
    return out


def violation_of(values: np.ndarray, cons: Constraints | None, x: np.ndarray, problem: Problem) -> float:
    """The largest amount by which a constraint or a bound is not met at ``x`` (0 if all are)."""
    worst = 0.0
    if cons is not None and len(values):
        worst = float(np.max(np.where(cons.eq, np.abs(values), np.maximum(-values, 0.0))))
    if problem.bounded:
        worst = max(worst, float(np.max(np.maximum(problem.lower - x, 0.0), initial=0.0)),
                    float(np.max(np.maximum(x - problem.upper, 0.0), initial=0.0)))
    return worst if math.isfinite(worst) else math.inf


def _stopper(started: float, max_time: float | None, callback: Callable[[Any], Any] | None,
             stopped: list[str]) -> Callable[[Any], None]:
    """scipy's callback for a run started at ``started``: it stops the run (StopIteration, the
    reason appended to ``stopped``) past ``max_time`` or when ``callback`` returns True or raises
    StopIteration."""

    def check(intermediate_result: Any) -> None:
        if max_time is not None and time.perf_counter() - started >= max_time:
            stopped.append("time limit reached")
            raise StopIteration
        if callback is not None:
            try:
                stop = callback(intermediate_result)
            except StopIteration:
                stop = True
            if stop is True:
                stopped.append("stopped by the callback")
                raise StopIteration

    return check
