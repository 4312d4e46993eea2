"""The objective an optimiser sees: fixed values substituted, box bounds, call counters."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from symad.core import binders, indexed
from symad.core.dag import Graph
from symad.core.errors import PointError, VariableError, check_variables
from symad.expr import Expr, parse
from symad.optimize.conditions import check_objective
from symad.second_order import SecondOrder

if TYPE_CHECKING:
    from symad.objectives import Objective


def is_objective(value: Any) -> bool:
    """Whether ``value`` is an :class:`~symad.objectives.Objective`, without importing objectives
    (and their data machinery) for problems that have none: no objective exists before its
    module is imported."""
    module = sys.modules.get("symad.objectives.over_data")
    return module is not None and isinstance(value, module.Objective)

# Newton forms the Hessian while n × (operations of value and gradient) is at most this: its
# rows are n reverse sweeps through the gradient, so its DAG and code can be n times the
# gradient's, and it has n² entries.  Beyond, Newton-CG on Hessian-vector products.
DENSE_NEWTON_OPS = 200_000


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


def has_loops(expr: Expr) -> bool:
    """Whether ``expr`` keeps a loop (a sum, prod or each that was not written out)."""
    return bool(expr.graph.scoped) and binders.has_scoped(expr.graph, [expr.id])


class Problem:
    """The objective over the free variables: fixed values substituted, parameters' values passed
    at each call, box bounds, call counters."""

    def __init__(self, expr: Expr | str | SecondOrder, variables: Sequence[str] | None = None,
                 fixed: Mapping[str, float] | None = None, bounds: Any = None, *, background: bool = True,
                 params: Mapping[str, float] | None = None):
        compiled = expr if isinstance(expr, SecondOrder) else None
        if compiled is not None:
            expr = compiled.expr
            if variables is None:
                variables = compiled.variables + compiled.params
        expr = parse(expr, Graph()) if isinstance(expr, str) else expr  # text: a graph of its own
        binders.refuse(expr.graph, [expr.id], "symad.optimize", "with f = symad.compile(text), "
                       "scipy.optimize.minimize(f.value_and_grad, x0, jac=True, method='L-BFGS-B') takes them")
        check_objective(expr)
        self.all_names = list(expr.variables if variables is None else variables)
        # Parameters: held at the values given, as fixed ones are, but passed at each call of
        # one compiled function (a SecondOrder compiled with wrt=...) instead of substituted.
        self.fixed, self.params = held_values(self.all_names, fixed or {}, params or {},
                                       f"the expression uses {', '.join(self.all_names) or 'no variables'}")
        if compiled is not None:
            missing = [k for k in compiled.params if k not in self.params and k not in self.fixed]
            if missing:
                raise VariableError(f"missing value for parameter {', '.join(missing)} of the compiled "
                                    f"function: pass params={{...}}")
        self.names = [v for v in self.all_names if v not in self.fixed and v not in self.params]
        self.expr = substitute(expr, self.fixed) if self.fixed else expr
        reuse = (compiled is not None and not self.fixed and list(compiled.variables) == self.names
                 and set(compiled.params) <= set(self.params))
        if reuse:
            self.fn = compiled
        elif self.params:
            self.fn = SecondOrder(self.expr, wrt=self.names, background=background)
        else:
            self.fn = SecondOrder(self.expr, self.names, background=background)
        missing = [k for k in self.fn.params if k not in self.params]
        if missing:
            raise VariableError(f"missing value for parameter {', '.join(missing)}: pass params={{...}}")
        # The values as the vector each call takes, in the compiled function's order, checked
        # once here rather than by name at every call (a name it does not use is dropped).
        self.args = (np.array([self.params[k] for k in self.fn.params]),) if self.fn.params else ()
        self.reset_bounds_and_counters(bounds)

    def result_names(self) -> Sequence[str]:
        """The free variables' names for a result (a copy of its own)."""
        return list(self.names)

    def reset_bounds_and_counters(self, bounds: Any) -> None:
        self.lower, self.upper = box(bounds, self.names)
        self.bounded = bool(np.isfinite(self.lower).any() or np.isfinite(self.upper).any())
        self.nfev = self.njev = self.nhev = 0

    def start(self, x0: Any) -> np.ndarray:
        """The start point over the free variables: a dict, or a sequence (free or all variables)."""
        if isinstance(x0, Mapping):
            given = {k: v for k, v in indexed.expand_point(self.names, x0).items() if k not in self.fixed}
            check_variables(tuple(self.names), given)
            x = np.array([as_float(given[v], v) for v in self.names])
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
        """Every variable by name, in ``variables`` order, fixed ones and parameters included."""
        free = dict(zip(self.names, map(float, x)), **self.params, **self.fixed)
        return {v: free[v] for v in self.all_names}

    def fg(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        self.nfev += 1
        self.njev += 1
        return self.fn.value_and_grad(x, *self.args)

    def fg_into(self, x: np.ndarray, grad: np.ndarray) -> float:
        """:meth:`fg` with the gradient written into ``grad`` (a float64 vector of the variables):
        no array made where the objective is compiled code without parameters; else :meth:`fg`
        itself (a subclass's, which may lay the variables out otherwise)."""
        if self._plain_function():
            self.nfev += 1
            self.njev += 1
            return self.fn.value_and_grad_at(x, grad)
        value, grad[:] = self.fg(x)
        return value

    def point_call(self) -> Any:
        """The objective's compiled ``call(x, grad) -> f`` as it stands (see
        :meth:`symad.function.Function.point_call`), for a caller that counts its evaluations
        itself; None where there is none (then :meth:`fg_into`)."""
        return self.fn.point_call() if self._plain_function() else None

    def _plain_function(self) -> bool:
        """Whether the objective is a compiled function of ``x`` alone (no parameters passed)."""
        return not self.args and isinstance(self.fn, SecondOrder)

    def dense(self) -> bool:
        """Whether Newton may form the Hessian matrix (see ``DENSE_NEWTON_OPS``)."""
        return len(self.names) * self.fn.operations() <= DENSE_NEWTON_OPS

    def hess(self, x: np.ndarray) -> np.ndarray:
        self.nhev += 1
        return self.fn.hessian(x, *self.args)

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        self.nhev += 1
        return self.fn.hessp(x, p, *self.args)

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


def as_float(value: Any, name: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise PointError(f"value for {name} is not a number: {value!r:.60}") from None


def box(bounds: Any, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Bounds as arrays ``(lower, upper)`` over ``names``; accepts a dict or one pair per name."""
    lower, upper = np.full(len(names), -math.inf), np.full(len(names), math.inf)
    if bounds is None:
        return lower, upper
    if isinstance(bounds, Mapping):  # `x: (lo, hi)` bounds every x[k]
        by_base = indexed.groups(names)
        bounds = {member: pair for k, pair in bounds.items()
                  for member in (by_base[k] if k in by_base and k not in names else [indexed.normal(k)])}
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
        lower[i] = -math.inf if lo is None else as_float(lo, name)
        upper[i] = math.inf if hi is None else as_float(hi, name)
        if not lower[i] <= upper[i]:
            raise PointError(f"empty bounds for {name}: {lower[i]:g} > {upper[i]:g}")
    return lower, upper


class DataProblem(Problem):
    """An :class:`~symad.objectives.Objective` as the optimiser sees it: over its ``wrt`` but the
    ``fixed`` ones (held as parameters, so nothing is substituted into the rows' loop), its
    parameters' values from ``params`` (or ``fixed``), every row or (``batch_size``) a fresh
    mini-batch at each evaluation."""

    def __init__(self, objective: Objective, bounds: Any = None, batch_size: int | None = None, seed: int = 0,
                 fixed: Mapping[str, float] | None = None, params: Mapping[str, float] | None = None):
        check_objective(objective.expr)
        self.all_names = list(objective.wrt + objective.params)
        self.fixed, self.params = held_values(
            self.all_names, indexed.expand_point(self.all_names, fixed or {}),
            indexed.expand_point(self.all_names, params or {}),
            f"its wrt and parameters are {', '.join(self.all_names) or 'none'}", " of the objective")
        held = {**self.params, **self.fixed}
        self.names = [v for v in objective.wrt if v not in held]
        if len(self.names) != len(objective.wrt):
            objective = objective.with_wrt(self.names)  # the fixed ones: parameters of the loop
        missing = [k for k in objective.params if k not in held]
        if missing:
            raise VariableError(f"missing value for parameter {', '.join(missing)} of the objective: pass "
                                f"params={{...}}")
        self.args = (np.array([held[k] for k in objective.params]),) if objective.params else ()
        self.expr = objective.expr
        self.fn = _Batches(objective, batch_size, seed)
        self.reset_bounds_and_counters(bounds)


class _Batches:
    """An objective's calls, the value and gradient over a mini-batch of ``batch_size`` rows at
    each call (every row when None): the rows shuffled (seeded) and taken in turn, an epoch at a
    time.  ``value``, ``grad``, ``hessian``, ``hessp`` and ``full`` are over every row."""

    params: tuple[str, ...] = ()

    def __init__(self, objective: Objective, batch_size: int | None, seed: int):
        self.objective, self.batch_size = objective, batch_size
        self.batched = batch_size is not None and batch_size < objective.n_rows
        self._rng = np.random.default_rng(seed)
        self._order: np.ndarray = np.zeros(0, dtype=np.int64)
        self._at = 0

    def _rows(self) -> np.ndarray | None:
        if not self.batched:
            return None
        assert self.batch_size is not None
        if self._at + self.batch_size > len(self._order):
            self._order, self._at = self._rng.permutation(self.objective.n_rows), 0
        rows = self._order[self._at:self._at + self.batch_size]
        self._at += self.batch_size
        return np.sort(rows)  # the same rows, read in memory order

    def value_and_grad(self, x: np.ndarray, *args: Any) -> tuple[float, np.ndarray]:
        return self.objective.value_and_grad(x, *args, rows=self._rows())

    def full(self, x: np.ndarray, *args: Any) -> tuple[float, np.ndarray]:
        """The value and gradient over every row."""
        return self.objective.value_and_grad(x, *args)

    def value(self, x: np.ndarray, *args: Any) -> float:
        return self.objective.value(x, *args)

    def grad(self, x: np.ndarray, *args: Any) -> np.ndarray:
        return self.objective.grad(x, *args)

    def hessian(self, x: np.ndarray, *args: Any) -> np.ndarray:
        return self.objective.hessian(x, *args)

    def hessp(self, x: np.ndarray, p: np.ndarray, *args: Any) -> np.ndarray:
        return self.objective.hessp(x, p, *args)

    def operations(self) -> int:
        """Operations of one row's value and gradient."""
        return self.objective.operations()


def held_values(names: list[str], fixed: Mapping[str, Any], params: Mapping[str, Any], listing: str,
         of: str = "") -> tuple[dict[str, float], dict[str, float]]:
    """``(fixed, params)`` as floats, each name one of ``names`` (``listing`` says which they are)."""
    fixed = {k: as_float(v, k) for k, v in fixed.items()}
    params = {k: as_float(v, k) for k, v in params.items()}
    for what, given in (("fix", fixed), ("give a parameter value for", params)):
        unknown = [k for k in given if k not in names]
        if unknown:
            raise VariableError(f"cannot {what} {', '.join(unknown)}: not a variable{of} ({listing})")
    both = [k for k in params if k in fixed]
    if both:
        raise VariableError(f"{', '.join(both)} is both fixed and a parameter: give it once")
    return fixed, params
