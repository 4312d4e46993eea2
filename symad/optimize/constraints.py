"""Constraints with exact derivatives, in ``scipy.optimize``'s forms.

A constraint is ``("eq", text)`` (the expression is 0 at a solution) or ``("ineq", text)``
(the expression is ≥ 0, scipy's convention); scipy's own dict form ``{"type": "eq", "fun":
text}`` is read too.  A comparison means what it says
(:func:`~symad.optimize.conditions.as_constraint`): ``x <= 1`` is
``1 - x ≥ 0``, ``a == b`` is ``a - b = 0``; a condition it cannot mean (``<``, ``!=``,
``and``, a kind its relation contradicts) is refused, never read as the 0 or 1 it computes.

All of a problem's constraints compile into one :class:`~symad.vector_function.VectorFunction`
over its free variables (fixed values substituted, parameters passed at each call), whose
values and Jacobian come from one program run per point; the Hessian of ``Σ v_i c_i(x)``,
which ``trust-constr`` asks for, is one :class:`~symad.second_order.SecondOrder` with the
multipliers ``v`` as parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symad.ad.sparsity import csr
from symad.core.dag import Graph
from symad.core.errors import SymadError, VariableError, name_list
from symad.expr import Expr, parse
from symad.optimize.conditions import as_constraint
from symad.optimize.problem import substitute
from symad.optimize.sparse import SparseHessian, symmetric_csr
from symad.second_order import SecondOrder
from symad.vector_function import VectorFunction

KINDS = ("eq", "ineq")


def read_constraints(specs: Any, graph: Graph) -> list[tuple[str, Expr]]:
    """``(kind, expression)`` pairs from ``[("eq", text), ("ineq", text), ...]`` (or scipy's dicts,
    or one pair); texts are parsed into ``graph``."""
    if isinstance(specs, (tuple, Mapping)):
        specs = [specs]
    out = []
    for spec in specs:
        if isinstance(spec, Mapping):
            kind, fun = spec.get("type"), spec.get("fun")
        elif isinstance(spec, (tuple, list)) and len(spec) == 2:
            kind, fun = spec
        else:
            raise SymadError(f"a constraint is (\"eq\" or \"ineq\", expression), not {spec!r:.60}")
        if kind not in KINDS:
            raise SymadError(f"a constraint's kind is \"eq\" (expression = 0) or \"ineq\" (expression >= 0), "
                             f"not {kind!r:.30}")
        if isinstance(fun, str):
            fun = parse(fun, graph)
        elif not isinstance(fun, Expr):
            raise SymadError(f"a constraint's expression is text or an Expr, not {fun!r:.60}")
        out.append(as_constraint(kind, fun))
    if not out:
        raise SymadError("constraints is empty: give at least one, or none at all")
    return out


class Constraints:
    """A problem's constraints compiled over its free variables ``names`` (``fixed`` values
    substituted, ``params`` values passed at each call)."""

    def __init__(self, specs: Any, graph: Graph, names: Sequence[str], fixed: Mapping[str, float] | None = None,
                 params: Mapping[str, float] | None = None, *, background: bool = True):
        pairs = read_constraints(specs, graph)
        self.kinds = [kind for kind, _ in pairs]
        self.names, self.params = list(names), dict(params or {})
        exprs = [substitute(e, fixed) if fixed else e for _, e in pairs]
        known = set(self.names) | set(self.params)
        stray = sorted({v for e in exprs for v in e.variables} - known)
        if stray:
            raise VariableError(f"a constraint uses {name_list(stray)}, which is not a variable of the problem "
                                f"(its variables are {name_list(self.names) or 'none'})", tuple(stray))
        self.exprs = exprs
        self.function = VectorFunction(exprs, wrt=self.names, background=background)
        self.args = self._param_vector(self.function.params)
        self.eq = np.array([k == "eq" for k in self.kinds])
        self._last: tuple[bytes, np.ndarray, np.ndarray] | None = None
        self._lagrangian: SecondOrder | None = None
        self._sparse_hessian: SparseHessian | None = None
        self.nfev = self.njev = self.nhev = 0

    def _param_vector(self, order: Sequence[str]) -> tuple[np.ndarray, ...]:
        return (np.array([self.params[k] for k in order]),) if order else ()

    def __len__(self) -> int:
        return len(self.kinds)

    def value_and_jacobian(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """Every constraint's value and Jacobian at ``x`` (one program run; the last point's
        results are kept, as scipy asks for values and Jacobians at one point in turn)."""
        x = np.ascontiguousarray(x, dtype=float)
        key = x.tobytes()
        if self._last is None or self._last[0] != key:
            self.nfev += 1
            self.njev += 1
            values, jac = self.function.value_and_jacobian(x, *self.args)
            self._last = (key, values, jac)
        return self._last[1], self._last[2]

    def values(self, x: Any) -> np.ndarray:
        return self.value_and_jacobian(x)[0]

    def jacobian(self, x: Any) -> np.ndarray:
        return self.value_and_jacobian(x)[1]

    def lagrangian(self) -> SecondOrder:
        """``Σ v_i c_i(x)`` compiled for its Hessian in ``x``, the multipliers ``v`` among its parameters."""
        if self._lagrangian is None:
            exprs = self.function.exprs  # (in one graph)
            g = exprs[0].graph
            total = g.const(0.0)
            for i, e in enumerate(exprs):
                total = g.make("add", total, g.make("mul", g.var(multiplier_name(i)), e.id))
            fn = SecondOrder(Expr(g, total), wrt=self.names, background=self.function.background)
            # its parameters' order: where each takes its value from (multipliers, or params)
            multiplier = {multiplier_name(i): i for i in range(len(exprs))}
            self._where = [("v", multiplier[k]) if k in multiplier else ("p", k) for k in fn.params]
            self._lagrangian = fn
        return self._lagrangian

    def lagrangian_args(self, v: Any) -> tuple[np.ndarray, ...]:
        """The arguments after the point of :meth:`lagrangian`'s calls for multipliers ``v``."""
        fn = self.lagrangian()
        v = np.asarray(v, dtype=float).reshape(-1)
        values = np.array([v[k] if kind == "v" else self.params[k] for kind, k in self._where])  # type: ignore[index]
        return (values,) if len(fn.params) else ()

    def hess(self, x: Any, v: Any) -> np.ndarray:
        """``Σ v_i ∇²c_i(x)``: the constraints' part of the Hessian of the Lagrangian."""
        self.nhev += 1
        return self.lagrangian().hessian(np.asarray(x, dtype=float), *self.lagrangian_args(v))

    # ------------------------------------------------------------------ sparse forms
    def jacobian_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        """The Jacobian's structural nonzeros ``(rows, cols)`` (IPOPT's and trust-constr's sparse forms)."""
        return self.function.jacobian_pattern()

    def jacobian_values(self, x: Any) -> np.ndarray:
        """The Jacobian's values aligned with :meth:`jacobian_pattern`."""
        self.njev += 1
        return self.function.jacobian_values(np.ascontiguousarray(x, dtype=float), *self.args)

    def sparse_hessian(self) -> SparseHessian:
        """The lower triangle of ``Σ v_i ∇²c_i``: its pattern, values at ``(x, *lagrangian_args(v))``."""
        if self._sparse_hessian is None:
            self._sparse_hessian = SparseHessian(self.lagrangian(), len(self.names))
        return self._sparse_hessian

    def hessian_values(self, x: Any, v: Any) -> np.ndarray:
        """``Σ v_i ∇²c_i(x)``'s lower triangle, aligned with :meth:`sparse_hessian`'s pattern."""
        self.nhev += 1
        return self.sparse_hessian().values(x, *self.lagrangian_args(v))

    # ------------------------------------------------------------------ scipy's forms
    def nonlinear(self, sparse: bool = False) -> list[Any]:
        """One ``scipy.optimize.NonlinearConstraint`` of them all, with ``jac`` and ``hess``
        (``trust-constr``): bounds ``[0, 0]`` for ``eq`` and ``[0, inf)`` for ``ineq``; with
        ``sparse``, both are ``scipy.sparse`` matrices of the structural nonzeros."""
        from scipy.optimize import NonlinearConstraint

        upper = np.where(self.eq, 0.0, np.inf)
        if not sparse:
            return [NonlinearConstraint(self.values, np.zeros(len(self)), upper, jac=self.jacobian, hess=self.hess)]
        n, (rows, cols), hess = len(self.names), self.jacobian_pattern(), self.sparse_hessian()

        def jacobian(x: Any) -> Any:
            return csr(rows, cols, self.jacobian_values(x), (len(self), n))

        def hessian(x: Any, v: Any) -> Any:
            return symmetric_csr(hess.rows, hess.cols, self.hessian_values(x, v), n)

        return [NonlinearConstraint(self.values, np.zeros(len(self)), upper, jac=jacobian, hess=hessian)]

    def dicts(self) -> list[dict[str, Any]]:
        """scipy's dict form, ``{"type", "fun", "jac"}`` for the equalities and for the
        inequalities (``SLSQP``, ``COBYLA``)."""
        out = []
        for kind in KINDS:
            rows = np.flatnonzero(self.eq if kind == "eq" else ~self.eq)
            if len(rows):
                out.append({"type": kind, "fun": lambda x, r=rows: self.values(x)[r],
                            "jac": lambda x, r=rows: self.jacobian(x)[r]})
        return out


def multiplier_name(i: int) -> str:
    """The multiplier of constraint ``i`` in the Lagrangian: a name no parsed text has (the quote)."""
    return f"v{i}'"
