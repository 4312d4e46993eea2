"""Exact derivatives in the calling conventions of ``scipy.optimize``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from symad.core.errors import SymadError
from symad.expr import Expr
from symad.optimize.problem import DataProblem, Problem, box, is_objective
from symad.second_order import SecondOrder

if TYPE_CHECKING:
    from symad.objectives import Objective
    from symad.optimize.constraints import Constraints


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

    def __init__(self, expr: Expr | str | SecondOrder | Objective, variables: Sequence[str] | None = None,
                 fixed: Mapping[str, float] | None = None, params: Mapping[str, float] | None = None):
        if is_objective(expr):  # over its wrt but the fixed ones, every row at each call
            if variables:
                raise SymadError("an objective's wrt and data name its variables: it takes no variables")
            self.problem: Problem = DataProblem(expr, fixed=fixed, params=params)
        else:
            self.problem = Problem(expr, variables, fixed, params=params)
        self.function = self.problem.fn
        self.variables = list(self.problem.names)
        self._args = self.problem.args  # the parameters' values, passed at every call
        if not self._args:
            # scipy calls ``fun`` at every evaluation: without parameters to pass, straight to the
            # function's own (it reads scipy's float arrays in place and converts anything else)
            self.fun = self.function.value_and_grad  # type: ignore[method-assign]
            self.value = self.function.value  # type: ignore[method-assign]

    def fun(self, x: Any) -> tuple[float, np.ndarray]:
        return self.function.value_and_grad(np.asarray(x, dtype=float), *self._args)

    def value(self, x: Any) -> float:
        return self.function.value(np.asarray(x, dtype=float), *self._args)

    def jac(self, x: Any) -> np.ndarray:
        return self.function.grad(np.asarray(x, dtype=float), *self._args)

    def hess(self, x: Any) -> np.ndarray:
        return self.function.hessian(np.asarray(x, dtype=float), *self._args)

    def hessp(self, x: Any, p: Any) -> np.ndarray:
        return self.function.hessp(np.asarray(x, dtype=float), p, *self._args)

    def x0(self, point: Any) -> np.ndarray:
        """A start point (dict by name, or sequence) as an array in ``variables`` order."""
        return self.problem.start(point)

    def bounds(self, spec: Any) -> list[tuple[float | None, float | None]]:
        """``{name: (lo, hi)}`` as the list of pairs L-BFGS-B takes (``None``: unbounded)."""
        lower, upper = box(spec, self.variables)
        return [(lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None)
                for lo, hi in zip(lower, upper)]

    def point(self, x: Any) -> dict[str, float]:
        """A solution by name, fixed variables included."""
        return self.problem.point(np.asarray(x, dtype=float))

    def constraints(self, specs: Any) -> list[Any]:
        """``[("eq", text), ("ineq", text), ...]`` (``eq``: text = 0; ``ineq``: text ≥ 0) as one
        ``scipy.optimize.NonlinearConstraint`` with the exact Jacobian and ``hess(x, v)``, the
        exact Hessian of ``Σ v_i c_i`` (for ``trust-constr``).

        >>> import scipy.optimize
        >>> s = scipy_functions("x^2 + y^2")
        >>> r = scipy.optimize.minimize(s.fun, [2, 0], jac=True, hess=s.hess, method="trust-constr",
        ...                             constraints=s.constraints([("eq", "x + y - 1")]))
        >>> r.x.round(6).tolist()
        [0.5, 0.5]
        """
        return self._constraints(specs).nonlinear()

    def constraint_dicts(self, specs: Any) -> list[dict[str, Any]]:
        """The same constraints in scipy's dict form, with exact ``jac`` (for ``SLSQP`` and ``COBYLA``)."""
        return self._constraints(specs).dicts()

    def _constraints(self, specs: Any) -> Constraints:
        from symad.optimize.constraints import Constraints  # (loaded where constraints are given)

        p = self.problem
        return Constraints(specs, p.expr.graph, p.names, p.fixed, p.params)


def scipy_functions(expr: Expr | str | SecondOrder | Objective, variables: Sequence[str] | None = None,
                    fixed: Mapping[str, float] | None = None,
                    params: Mapping[str, float] | None = None) -> ScipyFunctions:
    """The objective's exact value, gradient, Hessian and Hessian-vector product for scipy
    (``fixed`` values substituted; ``params`` values passed at each call, see ``minimize``);
    ``expr`` may be an :class:`~symad.objectives.Objective`, over every row at each call."""
    return ScipyFunctions(expr, variables, fixed, params)
