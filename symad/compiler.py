"""Compile outputs of the DAG into straight-line Python, once; call it many times.

The generated function computes only the nodes the outputs need (dead code is
never emitted), in topological order: forward values first, then, for
gradient outputs, the adjoint nodes the backward sweep built.  Temporaries are
register-allocated (a register is reused after its last use), which keeps
NumPy batch evaluation from holding one array per node alive.

The source contains only symad's own identifiers and ``repr`` of floats, never
user text, and is compiled once per program.  It runs against two
namespaces: ``math`` functions on plain floats (fast for single points), and
NumPy ufuncs for arrays of points and for IEEE semantics (``1/0 → inf``,
``log(-1) → nan``): a single point whose float evaluation raises is
re-evaluated with NumPy, so results never depend on which path ran.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .errors import PointError, SymadError
from .graph import Graph
from .limits import LIMITS
from .ops import OPS

_PY_NS: dict[str, Any] = {"inf": math.inf, "nan": math.nan}
_NP_NS: dict[str, Any] = {"inf": math.inf, "nan": math.nan}
for _name, _spec in OPS.items():
    if _spec.arity:
        _PY_NS[f"f_{_name}"] = _spec.py
        _NP_NS[f"f_{_name}"] = _spec.np


def _literal(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "(-inf)"
    return repr(value) if value >= 0 or math.copysign(1.0, value) > 0 else f"({value!r})"


class Program:
    """Straight-line code computing ``outputs`` from the variables ``inputs`` (node ids)."""

    def __init__(self, graph: Graph, outputs: Sequence[int], inputs: Sequence[int]):
        self.outputs = list(outputs)
        self.inputs = list(inputs)
        self.source, self.size = self._generate(graph)
        code = compile(self.source, "<symad>", "exec")
        py_ns, np_ns = dict(_PY_NS), dict(_NP_NS)
        exec(code, py_ns)  # generated from the op table, never from user text
        exec(code, np_ns)
        self.run_float = py_ns["program"]
        self.run_numpy = np_ns["program"]

    def _generate(self, graph: Graph) -> tuple[str, int]:
        order = graph.reachable(self.outputs)
        LIMITS.check_program(len(order))
        last_use = {node: p for p, node in enumerate(order)}
        for p, node in enumerate(order):
            for a in graph.args[node]:
                last_use[a] = p
        for node in self.outputs:
            last_use[node] = len(order)
        names: dict[int, str] = {v: f"a{k}" for k, v in enumerate(self.inputs)}
        free: list[str] = []
        n_registers = 0
        lines: list[str] = []
        for p, node in enumerate(order):
            op = graph.op[node]
            if op == "const":
                names[node] = _literal(graph.data[node])  # type: ignore[arg-type]
                continue
            if op == "var":
                if node not in names:
                    raise SymadError(f"no input for variable {graph.data[node]}")
                continue
            spec = OPS[op]
            args = [names[a] for a in graph.args[node]]
            text = spec.code.format(*args) if spec.code else f"f_{op}({', '.join(args)})"
            for a in set(graph.args[node]):
                if last_use[a] == p and names[a].startswith("r"):
                    free.append(names[a])
            if free:
                reg = free.pop()
            else:
                reg = f"r{n_registers}"
                n_registers += 1
            names[node] = reg
            lines.append(f"    {reg} = {text}")
        params = ", ".join(f"a{k}" for k in range(len(self.inputs)))
        result = ", ".join(names[n] for n in self.outputs)
        source = f"def program({params}):\n" + "\n".join(lines) + f"\n    return ({result},)\n"
        return source, len(lines)


class Function:
    """A compiled expression: ``value``, ``grad`` and ``value_and_grad`` at any point.

    A point is a dict or keyword arguments ``{name: value}``, or a sequence in
    ``variables`` order.  Values may be NumPy arrays (broadcast together), or the
    sequence an array of shape ``(n_points, n_vars)``: then every result has one
    entry per point, computed in one vectorised pass.

    >>> from symad import parse
    >>> f = parse("(x+y)+x*(x+y)").compile()
    >>> f.value_and_grad(x=1, y=2)
    (6.0, array([5., 2.]))
    """

    def __init__(self, expr: Any, variables: Sequence[str] | None = None):
        self.expr = expr
        used = expr.variables
        self.variables: tuple[str, ...] = tuple(used if variables is None else variables)
        if len(set(self.variables)) != len(self.variables):
            raise SymadError("variables listed twice")
        missing = [v for v in used if v not in self.variables]
        if missing:
            raise SymadError(f"the expression uses {', '.join(missing)}, which is not in variables")
        self._inputs = [expr.graph.var(v) for v in self.variables]
        self._value: Program | None = None
        self._value_grad: Program | None = None

    # ------------------------------------------------------------------ programs
    def value_program(self) -> Program:
        """The compiled program of the value alone (built on first use)."""
        if self._value is None:
            self._value = Program(self.expr.graph, [self.expr.id], self._inputs)
        return self._value

    def value_grad_program(self) -> Program:
        """The compiled program of the value and every partial (built on first use)."""
        if self._value_grad is None:
            partials = self.expr.grad(list(self.variables))
            outs = [self.expr.id, *(partials[v].id for v in self.variables)]
            self._value_grad = Program(self.expr.graph, outs, self._inputs)
        return self._value_grad

    # ------------------------------------------------------------------ calling
    def value(self, point: Any = None, /, **kwargs: Any) -> Any:
        """The value at a point (a float, or an array for a batch)."""
        return self._run(self.value_program(), point, kwargs)[0]

    __call__ = value

    def grad(self, point: Any = None, /, **kwargs: Any) -> np.ndarray:
        """The gradient, in ``variables`` order (last axis for a batch)."""
        return self.value_and_grad(point, **kwargs)[1]

    def value_and_grad(self, point: Any = None, /, **kwargs: Any) -> tuple[Any, np.ndarray]:
        """``(value, gradient)``: the form ``scipy.optimize.minimize(..., jac=True)`` expects."""
        out = self._run(self.value_grad_program(), point, kwargs)
        if isinstance(out[0], float):
            return out[0], np.array(out[1:], dtype=float)
        return out[0], np.stack(out[1:], axis=-1)

    def _run(self, program: Program, point: Any, kwargs: Mapping[str, Any]) -> list[Any]:
        values, batch = self._arguments(point, kwargs)
        if not batch:
            try:
                return [float(v) for v in program.run_float(*values)]
            except (ArithmeticError, ValueError):
                values = [np.float64(v) for v in values]
        with np.errstate(all="ignore"):
            out = program.run_numpy(*values)
        if not batch:
            return [float(v) for v in out]
        shape = np.broadcast_shapes(*(np.shape(v) for v in values)) if values else ()
        return [np.broadcast_to(np.asarray(v, dtype=float), shape).copy() for v in out]

    def _arguments(self, point: Any, kwargs: Mapping[str, Any]) -> tuple[list[Any], bool]:
        from .expr import check_variables

        if point is None or isinstance(point, Mapping):
            given = dict(point or {}, **kwargs)
            check_variables(self.variables, given)
            values = [_number(given[v], v) for v in self.variables]
        else:
            if kwargs:
                raise PointError("give a point either as a sequence or as keywords, not both")
            arr = _array(point, None)
            n = len(self.variables)
            if arr.ndim == 0 or arr.shape[-1] != n:
                raise PointError(f"a point needs {n} value(s) ({', '.join(self.variables)}), "
                                 f"got shape {arr.shape}")
            if arr.ndim == 1:
                values = [float(v) for v in arr]
            else:
                values = list(np.moveaxis(arr, -1, 0))
        batch = any(isinstance(v, np.ndarray) for v in values)
        return values, batch


def _array(value: Any, name: str | None) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        where = f" for {name}" if name else ""
        raise PointError(f"value{where} is not a number: {value!r:.60}") from None


def _number(value: Any, name: str) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    arr = _array(value, name)
    return float(arr) if arr.ndim == 0 else arr
