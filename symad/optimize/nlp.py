"""A constrained problem in the sparse form IPOPT takes: one interface, two kinds of problem.

:class:`WrittenOut` is a problem of written-out expressions (a :class:`~symad.optimize.problem.Problem`
and its :class:`~symad.optimize.constraints.Constraints`: fixed values, parameters, any objective);
:class:`~symad.optimize.loops.LoopProblem` one whose objective or constraints keep loops (sums,
``each`` families).  Both give, over a flat vector ``x`` of ``n`` variables with bounds ``lower``,
``upper``: ``fg(x)`` (the objective's value and gradient), ``values(x)`` (the ``m`` constraints,
``eq`` saying which are equalities, the others ``≥ 0``), the Jacobian's pattern ``jacobian`` and
``jacobian_values(x)``, the Lagrangian Hessian's lower triangle ``union`` and
``hessian_values(x, σ, μ)`` (``σ∇²f + Σ μ_i ∇²c_i``), ``start``, ``point``, ``pgrad`` and counters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from symad.core.dag import Graph
from symad.core.errors import SymadError
from symad.expr import Expr, parse
from symad.optimize.constraints import Constraints, read_constraints
from symad.optimize.loops import LoopProblem
from symad.optimize.problem import DataProblem, Problem, has_loops, is_objective
from symad.optimize.sparse import SparseHessian, Union
from symad.second_order import SecondOrder

if TYPE_CHECKING:
    from symad.objectives import Objective

FEASIBLE = 1e-6  # success also needs every constraint and bound met to this (absolute) tolerance


class WrittenOut:
    """A problem of written-out expressions in the sparse form (see the module)."""

    def __init__(self, problem: Problem, cons: Constraints | None):
        self.problem, self.cons = problem, cons
        self.names = list(problem.names)
        self.lower, self.upper, self.bounded = problem.lower, problem.upper, problem.bounded
        self.m = len(cons) if cons is not None else 0
        self.eq = cons.eq if cons is not None else np.zeros(0, dtype=bool)
        self.kinds = cons.kinds if cons is not None else []
        n = len(self.names)
        self.f_hessian = SparseHessian(problem.fn, n)
        parts = [(self.f_hessian.rows, self.f_hessian.cols)]
        self.jacobian = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        if cons is not None:
            c = cons.sparse_hessian()
            parts.append((c.rows, c.cols))
            self.jacobian = cons.jacobian_pattern()
        self.union = Union(parts, n)

    @property
    def nfev(self) -> int:
        return self.problem.nfev

    @property
    def njev(self) -> int:
        return self.problem.njev

    @property
    def nhev(self) -> int:
        return self.problem.nhev

    def start(self, x0: Any) -> np.ndarray:
        return self.problem.start(x0)

    def point(self, x: np.ndarray) -> dict[str, Any]:
        return self.problem.point(x)

    def pgrad(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        return self.problem.pgrad(x, g)

    def fg(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = self.problem.fg(x)
        return float(f), np.asarray(g, dtype=float)

    def values(self, x: np.ndarray) -> np.ndarray:
        return self.cons.values(x) if self.cons is not None else np.zeros(0)

    def jacobian_values(self, x: np.ndarray) -> np.ndarray:
        return self.cons.jacobian_values(x) if self.cons is not None else np.zeros(0)

    def hessian_values(self, x: np.ndarray, sigma: float, mu: np.ndarray) -> np.ndarray:
        self.problem.nhev += 1
        parts = [sigma * self.f_hessian.values(x, *self.problem.args)]
        if self.cons is not None:
            parts.append(self.cons.hessian_values(x, mu))
        return self.union.combine(parts)


NLP = WrittenOut | LoopProblem


def constrained_problem(fun: Expr | str | SecondOrder | Objective, constraints: Any,
                        variables: Sequence[str] | None, fixed: Mapping[str, float] | None, bounds: Any,
                        background: bool, params: Mapping[str, float] | None) -> tuple[Problem, Constraints | None]:
    """The objective over the free variables and its constraints (None without), compiled."""
    expr = parse(fun, Graph()) if isinstance(fun, str) else fun
    graph = (expr.expr if (isinstance(expr, SecondOrder) or is_objective(expr)) else expr).graph
    pairs = read_constraints(constraints, graph) if constraints is not None else []
    if is_objective(expr):  # over its wrt: a constraint may use those and its parameters
        if variables:
            raise SymadError("an objective's wrt and data name its variables: it takes no variables")
        problem: Problem = DataProblem(expr, bounds, fixed=fixed, params=params)
    else:
        if variables is None and not isinstance(expr, SecondOrder) and pairs:
            # the constraints' variables are the problem's too, though the objective may not use them
            variables = graph.variables([expr.id, *(e.id for _, e in pairs if e.graph is graph)])
        problem = Problem(expr, variables, fixed, bounds, background=background, params=params)
    cons = Constraints(pairs, graph, problem.names, problem.fixed, problem.params,
                       background=background) if pairs else None
    return problem, cons


def build(fun: Any, constraints: Any, variables: Sequence[str] | None, fixed: Mapping[str, float] | None,
          bounds: Any, background: bool, params: Mapping[str, float] | None) -> NLP:
    """The problem in sparse form: with loops (in the objective or a constraint) a
    :class:`~symad.optimize.loops.LoopProblem`, else :class:`WrittenOut`."""
    pieces = with_loops(fun, constraints)
    if pieces is not None:
        refuse_variables(variables)
        return LoopProblem(pieces[0], pieces[1], bounds, fixed, params)
    return WrittenOut(*constrained_problem(fun, constraints, variables, fixed, bounds, background, params))


def refuse_variables(variables: Any) -> None:
    """A problem with loops reads its variables from its texts: a SymadError where they are given."""
    if variables:
        raise SymadError("a problem with loops takes no variables: it reads them from its texts (the vectors' "
                         "ranges too); hold some with fixed={...}")


def with_loops(fun: Any, constraints: Any) -> tuple[Expr, list[tuple[Any, Expr]]] | None:
    """The objective and the constraints, each text parsed into a graph of its own, if one of them
    keeps a loop; else None (and the written-out path reads them again, into one graph)."""
    if is_objective(fun) or not isinstance(fun, (str, Expr)):
        return None
    specs = [] if constraints is None else [constraints] if isinstance(constraints, (tuple, Mapping)) else constraints
    pairs: list[tuple[Any, Any]] = []
    for spec in specs:
        if isinstance(spec, Mapping):
            pairs.append((spec.get("type"), spec.get("fun")))
        elif isinstance(spec, (tuple, list)) and len(spec) == 2:
            pairs.append((spec[0], spec[1]))
        else:
            return None  # the written-out path says what is wrong with it
    try:
        objective = parse(fun, Graph()) if isinstance(fun, str) else fun
        parsed = [(kind, parse(e, Graph()) if isinstance(e, str) else e) for kind, e in pairs]
    except SymadError:
        return None  # (the written-out path reports it)
    exprs = [objective, *(e for _, e in parsed)]
    if not all(isinstance(e, Expr) for e in exprs) or not any(has_loops(e) for e in exprs):
        return None
    return objective, parsed


def loops_in(fun: Any, constraints: Any) -> bool:
    """Whether the objective or a constraint keeps a loop (texts are parsed to see)."""
    return with_loops(fun, constraints) is not None


def violation(nlp: NLP, x: np.ndarray, values: np.ndarray) -> float:
    """The largest amount by which a constraint or a bound is not met at ``x`` (0 if all are)."""
    worst = 0.0
    if len(values):
        worst = float(np.max(np.where(nlp.eq, np.abs(values), np.maximum(-values, 0.0))))
    if nlp.bounded:
        worst = max(worst, float(np.max(np.maximum(nlp.lower - x, 0.0), initial=0.0)),
                    float(np.max(np.maximum(x - nlp.upper, 0.0), initial=0.0)))
    return worst if math.isfinite(worst) else math.inf


def jacobian_t(nlp: NLP, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``Jᵀv`` from the sparse Jacobian at ``x``."""
    out = np.zeros(len(x))
    rows, cols = nlp.jacobian
    np.add.at(out, cols, nlp.jacobian_values(x) * v[rows])
    return out
