"""symad: exact derivatives of expressions typed as text, compiled for repeated evaluation.

>>> import symad
>>> f = symad.parse("(x+y)+x*(x+y)")
>>> f.compile().value_and_grad(x=1, y=2)
(6.0, array([5., 2.]))
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from symad.core import lazy

__version__ = "0.1.0"

# Names are imported on first use (PEP 562): `import symad` costs nothing, so the command
# line starts at once (and a Ctrl-C during start-up lands in its own handler).
_EXPORTS = {
    "Expr": "expr", "parse": "expr", "parse_outputs": "expr", "var": "expr", "vector": "expr", "data": "expr",
    "Vector": "symbolic_array", "Matrix": "symbolic_array", "Function": "function",
    "IndexedFunction": "indexed_function", "IndexedVectorFunction": "indexed_vector_function",
    "VectorFunction": "vector_function", "Graph": "core.dag",
    "SecondOrder": "second_order", "hessian": "second_order", "hvp": "second_order",
    "minimize": "optimize", "objective": "objectives", "Objective": "objectives",
    "explain": "tools.explanation", "explore": "tools.explore", "to_digraph": "tools.viz", "write_picture": "tools.viz",
    "DotNotFoundError": "tools.viz",
    "to_postfix": "frontend.parser", "clear_caches": "caches",
    "save": "persist", "load": "persist", "dumps": "persist", "loads": "persist",
    "to_sympy": "interop", "from_sympy": "interop",
    "LimitError": "core.errors", "NameRuleError": "core.errors", "ParseError": "core.errors",
    "PointError": "core.errors",
    "SymadError": "core.errors", "UnknownFunctionError": "core.errors", "VariableError": "core.errors",
}

if TYPE_CHECKING:
    from symad.caches import clear_caches
    from symad.core.dag import Graph
    from symad.core.errors import (
        LimitError,
        NameRuleError,
        ParseError,
        PointError,
        SymadError,
        UnknownFunctionError,
        VariableError,
    )
    from symad.expr import Expr, data, parse, parse_outputs, var, vector
    from symad.frontend.parser import to_postfix
    from symad.function import Function
    from symad.indexed_function import IndexedFunction
    from symad.indexed_vector_function import IndexedVectorFunction
    from symad.interop import from_sympy, to_sympy
    from symad.objectives import Objective, objective
    from symad.optimize import minimize
    from symad.persist import dumps, load, loads, save
    from symad.second_order import SecondOrder, hessian, hvp
    from symad.symbolic_array import Matrix, Vector
    from symad.tools.explanation import explain
    from symad.tools.explore import explore
    from symad.tools.viz import DotNotFoundError, to_digraph, write_picture
    from symad.vector_function import VectorFunction


__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS, lambda: importlib.import_module(".functions", __name__).NAMES)


def compile(expr: Expr | str | Sequence[Expr | str], variables: list[str] | None = None,  # noqa: A001
            backend: str = "auto", *, background: bool = True,
            wrt: list[str] | None = None) -> Function | VectorFunction | IndexedFunction | IndexedVectorFunction:
    """Compile an expression (or its text) into a :class:`Function` of value and gradient.

    ``wrt`` names the variables differentiated; the expression's other variables are then
    parameters, whose values each call takes after the point and which never cause a recompile:

    >>> f = compile("a*x^2 + b*x", wrt=["x"])
    >>> f.params
    ('a', 'b')
    >>> f.value_and_grad([3.0], {"a": 2, "b": 1})
    (21.0, array([13.]))
    >>> f.value_and_grad([3.0], [1, 0])
    (9.0, array([6.]))

    Several outputs (a list of expressions or texts, or text with outputs separated by ``;``)
    give a :class:`VectorFunction`, with Jacobians:

    >>> compile("x*y; x + y").jacobian([2, 3])
    array([[3., 2.],
           [1., 1.]])

    Outputs with loops (``each(i = a..b, ...)`` families, long sums) give an
    :class:`IndexedVectorFunction`, whose sparse Jacobian is read from the index structure.
    """
    if isinstance(expr, str):
        outputs = __getattr__("parse_outputs")(expr)
        expr = outputs[0] if len(outputs) == 1 else outputs
    if not isinstance(expr, (list, tuple)) and _has_loops(expr):  # a sum kept as a loop: whole vectors
        if expr.graph.op[expr.id] == "each":  # a family of outputs
            return _indexed_vector([expr], wrt or variables, backend)
        indexed = importlib.import_module(".indexed_function", __name__)
        return indexed.IndexedFunction(expr, wrt=wrt or variables, backend=backend)  # type: ignore[return-value]
    if isinstance(expr, (list, tuple)):
        exprs = importlib.import_module(".vector_function", __name__).as_outputs(expr)
        if any(_has_loops(e) for e in exprs):  # families and sums kept as loops among the outputs
            return _indexed_vector(exprs, wrt or variables, backend)
        return __getattr__("VectorFunction")(exprs, variables=variables, backend=backend, background=background,
                                             wrt=wrt)
    return __getattr__("Function")(expr, variables=variables, backend=backend, background=background, wrt=wrt)


def _indexed_vector(exprs: Sequence[Any], wrt: list[str] | None, backend: str) -> Any:
    return importlib.import_module(".indexed_vector_function", __name__).IndexedVectorFunction(exprs, wrt=wrt,
                                                                                               backend=backend)


def _has_loops(expr: Any) -> bool:
    graph = getattr(expr, "graph", None)
    if graph is None or not graph.scoped:  # no loop or vector anywhere in the graph: the common case
        return False
    return importlib.import_module(".core.binders", __name__).has_scoped(graph, [expr.id])


__all__ = [
    "DotNotFoundError", "Expr", "Function", "Graph", "IndexedFunction", "IndexedVectorFunction", "LimitError",
    "Matrix", "NameRuleError", "Objective", "ParseError", "PointError", "SecondOrder", "SymadError",
    "UnknownFunctionError", "VariableError", "Vector", "VectorFunction", "clear_caches", "compile", "data", "dumps",
    "explain", "explore", "from_sympy", "hessian", "hvp", "load", "loads", "minimize", "objective", "parse",
    "parse_outputs", "save", "to_digraph", "to_postfix", "to_sympy", "var", "vector", "write_picture",
]
