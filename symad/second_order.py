"""Second derivatives: the Hessian as expressions, and Hessian-vector products without it.

The Hessian is *reverse over reverse*: each partial ``∂f/∂x_i`` of the symbolic
gradient is itself an expression of the DAG, so one more reverse sweep from it
gives row ``i``.  Rows are hash-consed into the same graph, so they share every
common subexpression, and the whole of value, gradient and Hessian compiles into
one straight-line :class:`symad.runtime.program.Program`.

A Hessian-vector product ``H p`` is *forward over reverse*: a single forward
(tangent) sweep through the gradient DAG, with the direction's components as
fresh variables, carries the tangent of every gradient component at once.  It
costs a small multiple of one gradient, however many variables there are, and
never builds the ``n × n`` matrix.  Past the size that compiles to native code
(``policy.NATIVE_MAX_OPS`` operations of value and gradient, beyond which a
program is Python code at some 5 KB an operation) the products are interpreted
by a :class:`symad.backends.tape.Tape` of ``∇f·p`` instead: reverse over reverse, in a few
hundred bytes a node.

>>> from symad import parse
>>> f = SecondOrder("x^3*y")
>>> f.hessian(x=1, y=2)
array([[12.,  3.],
       [ 3.,  0.]])
>>> f.hessp([1, 2], [1, 0])
array([12.,  3.])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symad.ad.matrices import direction_names, hessian_nodes, jvp_many
from symad.ad.reverse import gradient
from symad.backends.tape import Tape
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import PointError
from symad.core.name_rule import checked, checked_all
from symad.core.term import as_node
from symad.expr import Expr, parse
from symad.function import Function
from symad.runtime import policy
from symad.runtime.program import Program


def _as_expr(expr: Expr | str, what: str) -> Expr:
    """An Expr as given; text is parsed into a graph of its own (the default graph is left alone).
    A sum kept as a loop is refused: its Hessian is sparse, and the indexed function has it."""
    expr = parse(expr, Graph()) if isinstance(expr, str) else expr
    binders.refuse(expr.graph, [expr.id], what, "symad.compile(...) gives its sparse_hessian, hessian, "
                   "hessian_text and hessp")
    return expr


def hessian(expr: Expr | str, variables: Sequence[str] | None = None) -> list[list[Expr]]:
    """Every second partial derivative, as expressions sharing one DAG.

    >>> from symad import Graph
    >>> [[str(e) for e in row] for row in hessian(parse("x^3*y", Graph()))]
    [['3*y*(2*x)', '3*x^2'], ['3*x^2', '0']]
    """
    expr = _as_expr(expr, "symad.hessian")
    names = list(expr.variables) if variables is None else checked_all(variables, "variables")
    g = expr.graph
    nodes = hessian_nodes(g, expr.id, [g.var(v) for v in names])
    return [[Expr(g, h) for h in row] for row in nodes]


def hvp(expr: Expr | str, direction: Mapping[str, Any],
        variables: Sequence[str] | None = None) -> dict[str, Expr]:
    """The Hessian-vector product ``H·direction`` as expressions (forward over reverse).

    ``direction`` maps variable names to numbers or expressions (of ``expr``'s graph; text is
    parsed into a graph of its own, so give numbers then); missing ones are 0.

    >>> from symad import Graph
    >>> {k: str(v) for k, v in hvp(parse("x^3*y", Graph()), {"x": 1}).items()}
    {'x': 'y*(3*(2*x))', 'y': '3*x^2'}
    """
    expr = _as_expr(expr, "symad.hvp")
    g = expr.graph
    names = list(expr.variables) if variables is None else checked_all(variables, "variables")
    wrt = [g.var(v) for v in names]
    grad = gradient(g, expr.id, wrt)
    tangents = {g.var(checked(k, "a direction")): as_node(g, d) for k, d in direction.items()}
    products = jvp_many(g, [grad[v] for v in wrt], tangents)
    return {v: Expr(g, p) for v, p in zip(names, products)}


# ---------------------------------------------------------------- compiled
class SecondOrder(Function):
    """A compiled expression with value, gradient, Hessian and Hessian-vector products.

    Everything :class:`symad.function.Function` does (points as keywords, dicts,
    sequences or batches of shape ``(n_points, n_vars)``), plus:

    - ``hessian(x)`` and ``value_grad_hess(x)``: one program computing ``f``, ``∇f``
      and the distinct entries of ``∇²f`` (shape ``(n, n)``, or ``(n_points, n, n)``);
    - ``hessp(x, p)``: ``∇²f(x)·p`` from the forward-over-reverse program, whose
      size grows like the gradient's, not like ``n²`` (from a tape when it is large:
      see :meth:`hvp_interpreted`).
    """

    def __init__(self, expr: Any, variables: Sequence[str] | None = None, backend: str = "auto", *,
                 background: bool = True, wrt: Sequence[str] | None = None):
        super().__init__(_as_expr(expr, "SecondOrder"), variables, backend, background=background, wrt=wrt)
        self.wrt_nodes = self.inputs[:len(self.variables)]  # differentiated; the parameters follow
        self._hess: Program | None = None
        self._hess_index: np.ndarray = np.zeros((0, 0), dtype=np.intp)
        self._hvp: Program | None = None
        self._hvp_tape: Tape | None = None
        self._ops: int | None = None
        self._grad: list[int] | None = None

    def hessian_exprs(self) -> list[list[Expr]]:
        """The Hessian as expressions, in ``variables`` order."""
        return hessian(self.expr, self.variables)

    def _gradient(self) -> list[int]:
        """The gradient's nodes in ``variables`` order, built once (a sweep costs as much again)."""
        if self._grad is None:
            grad = gradient(self.expr.graph, self.expr.id, self.wrt_nodes)
            self._grad = [grad[v] for v in self.wrt_nodes]
        return self._grad

    def value_grad_hess_program(self) -> Program:
        """One program: the value, every partial, then each distinct Hessian entry once."""
        if self._hess is None:
            g, n = self.expr.graph, len(self.variables)
            wrt, grad = self.wrt_nodes, self._gradient()
            rows = hessian_nodes(g, self.expr.id, wrt, grad)
            distinct: dict[int, int] = {}
            index = [1 + n + distinct.setdefault(h, len(distinct)) for row in rows for h in row]
            self._hess_index = np.asarray(index, dtype=np.intp).reshape(n, n)
            outputs = [self.expr.id, *grad, *distinct]
            self._hess = Program(g, outputs, self.inputs, self.backend, background=self.background)
        return self._hess

    def hvp_program(self) -> Program:
        """The forward-over-reverse program: inputs ``(x..., parameters..., p...)``, outputs ``H·p``."""
        if self._hvp is None:
            g = self.expr.graph
            directions = [g.var(d) for d in direction_names(self.variables)]
            products = jvp_many(g, self._gradient(), dict(zip(self.wrt_nodes, directions)))
            self._hvp = Program(g, products, self.inputs + directions, self.backend, background=self.background)
        return self._hvp

    def operations(self) -> int:
        """Operations of the value and gradient DAG: what a Hessian or ``H·p`` multiplies."""
        if self._ops is None:
            g = self.expr.graph
            nodes = g.reachable([self.expr.id, *self._gradient()])
            self._ops = sum(1 for node in nodes if g.args[node])
        return self._ops

    def hvp_interpreted(self) -> bool:
        """Whether ``hessp`` runs on a tape: the value and gradient are over
        ``policy.NATIVE_MAX_OPS`` operations, so compiled code would be Python code."""
        return self.operations() > policy.NATIVE_MAX_OPS

    def hvp_tape(self) -> Tape:
        """A tape of ``q = ∇f·p`` over inputs ``(x..., parameters..., p...)``: its gradient in
        ``x`` is ``H·p``."""
        if self._hvp_tape is None:
            g = self.expr.graph
            directions = [g.var(d) for d in direction_names(self.variables)]
            q = g.const(0.0)
            for partial, d in zip(self._gradient(), directions):
                q = g.make("add", q, g.make("mul", partial, d))
            self._hvp_tape = Tape(g, q, self.inputs + directions)
        return self._hvp_tape

    def value_grad_hess(self, point: Any = None, params: Any = None, /,
                        **kwargs: Any) -> tuple[Any, np.ndarray, np.ndarray]:
        """``(value, gradient, Hessian)`` in one pass of one program (in ``variables``; the
        parameters' values, if any, after the point as for ``value_and_grad``)."""
        if self.params or params is not None:
            point, kwargs = self.with_params(point, params, kwargs)
        program = self.value_grad_hess_program()
        out, shape = self.outputs_at(program, point, kwargs)
        n = len(self.variables)
        if shape is None:
            return float(out[0]), out[1:1 + n], out[self._hess_index]
        return (out[:, 0].reshape(shape), out[:, 1:1 + n].reshape(*shape, n),
                out[:, self._hess_index].reshape(*shape, n, n))

    def value_grad_hess_interpreted(self, point: Any = None, params: Any = None, /,
                                    **kwargs: Any) -> tuple[float, np.ndarray, np.ndarray]:
        """``(value, gradient, Hessian)`` at one point with nothing compiled, in the bits of
        :meth:`value_grad_hess`: the value and gradient from the tape, then Hessian row ``i``
        (its entries from column ``i`` on, mirrored) from a tape of ``∂f/∂x_i``, one row at a
        time.  Memory is that of the gradient's DAG and one row's tape, not of ``n`` rows
        compiled into one program (some 5 KB an operation as Python code): what a one-off
        evaluation, as ``symad hessian --at``, wants."""
        if self.params or params is not None:
            point, kwargs = self.with_params(point, params, kwargs)
        x, shape = self.point_array(point, kwargs)
        if shape is not None:
            raise PointError("value_grad_hess_interpreted takes one point; value_grad_hess takes batches")
        xs = [float(v) for v in x]
        value, grad = self.shared_tape().value_and_grad(xs)
        n, g = len(self.variables), self.expr.graph
        hess = np.empty((n, n))
        for i, partial in enumerate(self._gradient()):
            row = Tape(g, partial, self.inputs).value_and_grad(xs)[1]
            hess[i, i:] = row[i:n]
            hess[i:, i] = row[i:n]
        return float(value), np.array(grad[:n], dtype=float), hess

    def hessian(self, point: Any = None, params: Any = None, /, **kwargs: Any) -> np.ndarray:
        """The Hessian matrix at a point (last two axes for a batch)."""
        return self.value_grad_hess(point, params, **kwargs)[2]

    def hessp(self, point: Any, p: Any, params: Any = None) -> np.ndarray:
        """``∇²f(point)·p`` without forming the Hessian; ``point`` and ``p`` may be batches."""
        x, direction = self.with_direction(point, p, params, len(self.variables))
        if self.hvp_interpreted():
            return self._taped_hessp(x, direction)
        return self.outputs_with(self.hvp_program(), x, direction)

    def _taped_hessp(self, xs: np.ndarray, ps: np.ndarray) -> np.ndarray:
        tape, n = self.hvp_tape(), len(self.variables)
        if xs.ndim == 1:
            return np.array(tape.value_and_grad([*map(float, xs), *map(float, ps)])[1][:n])
        columns = [xs[..., k] for k in range(xs.shape[-1])] + [ps[..., k] for k in range(n)]
        grads = tape.value_and_grad(columns)[1][:n]  # an input that q does not use gives a scalar 0
        return np.stack([np.broadcast_to(np.asarray(c, dtype=float), xs.shape[:-1]) for c in grads], axis=-1)

    def sizes(self) -> dict[str, int]:
        """Operations of straight-line code: value+gradient, +Hessian, and the Hessian-vector product."""
        return {"value_grad": self.value_grad_program().size,
                "value_grad_hess": self.value_grad_hess_program().size,
                "hvp": self.hvp_program().size}
