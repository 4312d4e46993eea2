"""symad: exact derivatives of expressions typed as text, compiled for repeated evaluation.

>>> import symad
>>> f = symad.parse("(x+y)+x*(x+y)")
>>> f.compile().value_and_grad(x=1, y=2)
(6.0, array([5., 2.]))
"""

from .errors import LimitError, ParseError, PointError, SymadError, UnknownFunctionError, VariableError
from .expr import Expr, parse, var
from .function import Function
from .graph import Graph
from .optimize import minimize
from .parser import to_postfix

__version__ = "0.1.0"


def compile(expr: Expr | str, variables: list[str] | None = None, backend: str = "auto") -> Function:  # noqa: A001
    """Compile an expression (or its text) into a :class:`Function` of value and gradient."""
    if isinstance(expr, str):
        expr = parse(expr)
    return Function(expr, variables=variables, backend=backend)


__all__ = [
    "Expr", "Function", "Graph", "LimitError", "ParseError", "PointError", "SymadError",
    "UnknownFunctionError", "VariableError", "compile", "minimize", "parse", "to_postfix", "var",
]
