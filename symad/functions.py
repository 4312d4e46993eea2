"""Every function of the language as a Python function, and NumPy's ufuncs on expressions.

``symad.sin(x)``, ``symad.where(symad.lt(x, 0), -x, x)``, ``symad.logsumexp(a, b, c)``: one
function per name of the op table's :data:`~symad.core.ops.FUNCTIONS`, built from it, so a new
operation is here without a line of this module.  On expressions they build expressions; on
plain numbers they compute the number (as the language folds constants); on symbolic vectors
(:mod:`symad.symbolic_array`) they apply entry by entry.  ``symad.sum`` sums a vector's entries.

Comparisons are functions (``lt``, ``le``, ``gt``, ``ge``, ``eq``, ``ne``) and so are the logical
operators (``and_``, ``or_``, ``not_``): on expressions ``==`` is structural equality (two
expressions are equal when they are the same node) and ``<`` has no meaning, as in SymPy.

NumPy's ufuncs reach the same functions through its dispatch protocol
(:data:`UFUNCS`): ``np.sin(x)``, ``np.maximum(x, y)``, ``np.exp(x) + 1``.  On object arrays
of expressions NumPy calls each element's method of the ufunc's name (``x.sin()``), which
:class:`~symad.expr.Expr` has for each unary ufunc here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from symad.core.dag import Graph
from symad.core.ops import COMPARISONS, FUNCTIONS, OPS
from symad.core.term import Term, as_number, unwrapped


def _first_term(args: tuple) -> Term | None:
    for a in args:
        if isinstance(a, Term):
            return a
    return None


def apply(name: str, *args: Any) -> Any:
    """Function ``name`` of the language (or op of the table) on expressions or numbers
    (:func:`~symad.core.term.as_number`: NumPy's too)."""
    args = tuple(a.term() if _is_index(a) else unwrapped(a) for a in args)  # an index: its value
    for a in args:  # a symbolic array (symad.symbolic_array.Vector): the function entry by entry
        if hasattr(a, "elementwise"):
            return a.elementwise(name, *args)
    first = _first_term(args)
    if first is None and not args:
        raise TypeError(f"{name} takes at least one argument")
    if first is None:  # numbers alone: the number, as the language folds it (in a scratch graph)
        scratch = Graph()
        out = apply(name, *(Term(scratch, scratch.const(as_number(a))) for a in args))
        return float(scratch.data[out.id]) if scratch.op[out.id] == "const" else out  # type: ignore[arg-type]
    graph, kind = first.graph, type(first)
    terms = [a if isinstance(a, Term) else kind(graph, graph.const(as_number(a))) for a in args]
    forms = FUNCTIONS.get(name)
    if forms is None:
        return terms[0].apply(name, *terms[1:])
    if len(args) not in forms:
        least = getattr(forms, "least", None)
        want = f"{least} or more" if least is not None else " or ".join(map(str, sorted(forms)))
        raise TypeError(f"{name} takes {want} argument(s), got {len(args)}")
    return forms[len(args)](*terms)


def _function(name: str) -> Callable[..., Any]:
    def fn(*args: Any) -> Any:
        return apply(name, *args)

    fn.__name__ = fn.__qualname__ = name
    spec = OPS.get(name)
    fn.__doc__ = (spec.doc if spec is not None and spec.doc else f"The language's {name}.") + \
        " On expressions an expression; on numbers a number."
    return fn


def sum_of(array: Any, *body: Any) -> Any:
    """``symad.sum(x)``: the sum of a symbolic vector's entries (:meth:`symad.symbolic_array.Vector.sum`:
    one loop over a long range, the text's nodes over a short one), or of any array's;
    ``symad.sum(i, body)`` with an index (:func:`symad.indices.index`): the text's ``sum(i = a..b, body)``.

    >>> import symad
    >>> print(symad.sum(symad.vector("x", 3, symad.Graph())**2))
    x[1]^2 + x[2]^2 + x[3]^2
    """
    if body or _is_index(array):
        return _bound("sum", array, *body)
    total = getattr(array, "sum", None)
    if total is None:
        raise TypeError(f"symad.sum takes a vector (symad.vector) or an array, not {type(array).__name__}")
    return total()


def prod_of(array: Any, *body: Any) -> Any:
    """``symad.prod(i, body)``: the text's ``prod(i = a..b, body)`` (a loop or written out, as the
    text decides); ``symad.prod(x)`` of a symbolic vector or an array: the product of its entries."""
    if body or _is_index(array):
        return _bound("prod", array, *body)
    total = getattr(array, "prod", None)
    if total is None:
        raise TypeError(f"symad.prod takes an index and a body, or a vector, not {type(array).__name__}")
    return total()


def each_of(over: Any, *body: Any) -> Any:
    """``symad.each(i, body)``: the text's ``each(i = a..b, body)``, a vector of values (one output)."""
    return _bound("each", over, *body)


def index(*args: Any) -> Any:
    """``symad.index("i", 1, n)``: an index from 1 to n for ``symad.sum``/``prod``/``each``
    (:mod:`symad.indices`, loaded on first use: it builds expressions, which import this module)."""
    return importlib.import_module("symad.indices").index(*args)


def indexed(name: str, graph: Graph | None = None) -> Any:
    """``symad.indexed("x")``: the name whose entries ``x[i + 1]``, ``A[i, j]`` bodies use
    (:mod:`symad.indices`)."""
    return importlib.import_module("symad.indices").indexed(name, graph)


def _is_index(value: Any) -> bool:
    return type(value).__name__ == "Index" and type(value).__module__ == "symad.indices"


def _bound(op: str, over: Any, *body: Any) -> Any:
    if len(body) != 1:
        raise TypeError(f"symad.{op} takes an index and one body: symad.{op}(i, x[i]^2)")
    return importlib.import_module("symad.indices").bound(op, over, body[0])


# Python names that are keywords or builtins are spelled with a trailing underscore.
PYTHON_NAMES = {"and": "and_", "or": "or_", "not": "not_"}
NAMES: dict[str, Callable[..., Any]] = {}
for _name in [*FUNCTIONS, *COMPARISONS.values(), "and", "or", "not"]:
    NAMES[PYTHON_NAMES.get(_name, _name)] = _function(_name)
NAMES["sum"] = sum_of  # of an array or over an index (the text's sum(i = a..b, ...) is no function)
NAMES.update(prod=prod_of, each=each_of, index=index, indexed=indexed)

# NumPy ufunc name -> the language's op: each op table entry's NumPy ufuncs (those whose
# semantics symad's match), and three NumPy has that are other ops on expressions.
UFUNCS: dict[str, str | None] = {
    **{ufunc_name: name for name, spec in OPS.items() for ufunc_name in spec.numpy},
    "positive": None, "square": "square", "reciprocal": "reciprocal",
}


def ufunc(name: str, *args: Any) -> Any:
    """NumPy ufunc ``name`` on expressions: the language's function, or NotImplemented."""
    target = UFUNCS.get(name, NotImplemented)
    if target is NotImplemented:
        return NotImplemented
    if target is None:
        return args[0]
    if target == "square":
        return apply("pow", args[0], 2.0)
    if target == "reciprocal":
        return apply("div", 1.0, args[0])
    return apply(target, *args)


def unary_methods() -> dict[str, Callable[[Any], Any]]:
    """Methods named as NumPy's unary ufuncs, which its object arrays call on each element."""
    def method(target: str) -> Callable[[Any], Any]:
        return lambda self: apply(target, self)

    unary = {name for name, forms in FUNCTIONS.items() if 1 in forms} | \
        {name for name, spec in OPS.items() if spec.arity == 1}
    return {np_name: method(target) for np_name, target in UFUNCS.items() if target in unary}


__all__ = sorted(NAMES)
