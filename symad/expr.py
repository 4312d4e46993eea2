"""The user-facing expression: a :class:`~symad.core.term.Term` with derivatives,
compilation, evaluation and pickling; and ``parse`` and ``var`` that make one."""

from __future__ import annotations

import importlib
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from symad import functions
from symad.ad.forward import jvp
from symad.ad.gather import indexed_gradient
from symad.ad.reverse import gradient
from symad.core import binders, document
from symad.core.dag import SCOPED, Graph, natural_key
from symad.core.errors import SymadError, VariableError
from symad.core.latex import latex_block, to_latex
from symad.core.name_rule import checked, checked_all
from symad.core.names import compact, expand_names
from symad.core.ops import OPS
from symad.core.printing import SHARED_MIN_TREE, SHARED_RATIO
from symad.core.term import Term, as_node
from symad.frontend.parser import parse_into, parse_outputs_into
from symad.symbolic_array import Matrix, Vector, length_of, named

if TYPE_CHECKING:
    from symad.function import Function

# The graph that `parse` and `var` build in when given none.  Held weakly: it lives as
# long as an expression or function uses it, so nodes nobody can reach are freed with
# it.  Past DEFAULT_GRAPH_NODES nodes a new default graph starts (an old one lives on
# while something uses it), so a long-lived expression cannot keep every expression
# parsed after it alive.  Expressions of different graphs combine and compare as usual.
DEFAULT_GRAPH_NODES = 50_000
_default: list[weakref.ref[Graph]] = []


def default_graph() -> Graph:
    """The graph ``parse`` and ``var`` use when given none (a new one if the last is gone or full)."""
    graph = _default[0]() if _default else None
    if graph is None or len(graph) > DEFAULT_GRAPH_NODES:
        graph = Graph()
        _default[:] = [weakref.ref(graph)]
    return graph


def forget_default_graph() -> None:
    """Start a new default graph on the next ``parse`` (the old one lives while used)."""
    _default.clear()


class Expr(Term):
    """An expression: node ``id`` of ``graph``.  Equal expressions are the same node.

    >>> e = parse("(x+y)+x*(x+y)")
    >>> e.variables
    ('x', 'y')
    >>> str(e.diff("x"))
    'x + y + (x + 1)'
    """

    __slots__ = ()

    # ------------------------------------------------------------------ Python and NumPy
    def __abs__(self) -> Expr:
        return self.apply("abs")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy's ufuncs on expressions (``np.sin(x)``, ``np.maximum(x, y)``): the language's."""
        if method != "__call__" or kwargs:
            return NotImplemented
        return functions.ufunc(ufunc.__name__, *inputs)

    def _unbound(self) -> str | None:
        """Why this is not an expression yet: it uses an index outside its sum (else None)."""
        if self.graph.scoped and binders.levels(self.graph)[self.id] >= _indices().PLACEHOLDER_BASE:
            return _indices().unbound_message(self.graph, self.id)
        return None

    def _bound(self, what: str) -> None:
        why = self._unbound()
        if why is not None:
            raise SymadError(f"{why}: {what} needs it bound")

    def to_text(self, form: str = "auto") -> str:
        self._bound("printing")
        return super().to_text(form)

    def __repr__(self) -> str:
        why = self._unbound()
        return f"Expr(<{why}>)" if why is not None else super().__repr__()

    def __reduce__(self) -> tuple:
        # Pickled as its document (symad's JSON format), rebuilt in the loading process's default graph.
        return (_rebuilt_expr, (document.dumps(self.to_document()),))

    def latex(self, name: str | None = None) -> str:
        r"""The expression in LaTeX; ``name = ...`` in an aligned block if ``name`` is given or the
        expression is much larger as a tree than as a DAG (its shared parts named ``t_{k}``).

        >>> print(parse("sin(x)^2/sqrt(1+y)").latex())
        \frac{\sin\left(x\right)^{2}}{\sqrt{y + 1}}
        """
        self._bound("LaTeX")
        tree = self.graph.tree_size(self.id)
        if name is None and not (tree > SHARED_MIN_TREE and tree > SHARED_RATIO * len(self.graph.reachable([self.id]))):
            return to_latex(self.graph, self.id)
        return latex_block(self.graph, [self.id], [name or "f"])

    def _repr_latex_(self) -> str:
        """How Jupyter shows an expression: as mathematics."""
        return f"$\\displaystyle {self.latex()}$"

    def to_document(self) -> dict[str, Any]:
        """The expression as a document of symad's file format (:mod:`symad.core.document`)."""
        self._bound("saving")
        return document.to_document(self.graph, [self.id])

    # ------------------------------------------------------------------ derivatives
    def grad(self, wrt: list[str] | None = None) -> dict[str, Expr]:
        """Every partial derivative (reverse mode, one sweep): ``{name: ∂self/∂name}``.  With sums
        kept as loops, a vector's partial is one ``each(k = ..., ...)`` expression, still indexed."""
        g = self.graph
        self._bound("a derivative")
        if g.scoped and binders.has_scoped(g, [self.id]):
            return self._indexed_grad(wrt)
        # a base name stands for every entry x[1], x[2], ... the expression uses (see core.names)
        names = list(self.variables) if wrt is None else expand_names(checked_all(wrt, "wrt"), self.variables)
        nodes = [g.var(str(n)) for n in names]
        partials = gradient(g, self.id, nodes)
        return {n: Expr(g, partials[v]) for n, v in zip(names, nodes)}

    def _indexed_grad(self, wrt: list[str] | None) -> dict[str, Expr]:
        g = self.graph
        scalars, vectors = indexed_gradient(g, self.id)
        by_name = {g.data[v]: Expr(g, d) for v, d in scalars.items()}
        by_name.update((name, Expr(g, p.node)) for name, p in vectors.items())
        names = sorted(by_name, key=natural_key) if wrt is None else checked_all(wrt, "wrt")
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise VariableError(f"{unknown[0]} is not a variable or vector of the expression "
                                f"(it has {', '.join(sorted(by_name, key=natural_key))})", tuple(unknown))
        return {n: by_name[n] for n in names}

    def diff(self, var: str) -> Expr:
        """The partial derivative with respect to one variable."""
        name = checked(var, "diff")
        partials = self.grad([name])
        if name not in partials:
            entries = ", ".join(compact(list(partials)))
            raise VariableError(f"{name} stands for {len(partials)} entries here ({entries}): diff takes one variable, "
                                f"such as {next(iter(partials))}; grad([{name!r}]) gives them all", (name,))
        return partials[name]

    def jvp(self, direction: Mapping[str, Any]) -> Expr:
        """Forward mode: the derivative along ``direction`` (``{name: number or Expr}``)."""
        g = self.graph
        tangents = {g.var(checked(n, "a direction")): as_node(g, d) for n, d in direction.items()}
        return Expr(g, jvp(g, self.id, tangents))

    # ------------------------------------------------------------------ evaluating
    def compile(self, variables: list[str] | None = None, backend: str = "auto", *,
                background: bool = True, wrt: list[str] | None = None) -> Function:
        """A compiled function of value and gradient; see :class:`symad.function.Function`.
        ``wrt``: the variables differentiated; the others are parameters, given at each call."""
        # Imported here: parsing and printing (the command line's one point) never load
        # NumPy and the backends (tests/test_architecture.py lists this import).
        from symad.function import Function

        self._bound("compiling")
        if self.graph.scoped and binders.has_scoped(self.graph, [self.id]):  # a loop: whole vectors
            indexed = importlib.import_module("symad.indexed_function")
            return indexed.IndexedFunction(self, wrt=wrt or variables, backend=backend)
        return Function(self, variables=variables, backend=backend, background=background, wrt=wrt)

    def evaluate(self, point: Any = None, /, **kwargs: Any) -> Any:
        """The value at a point (dict, keywords or sequence in ``.variables`` order)."""
        return self.compile(background=False).value(point, **kwargs)

    def stats(self) -> dict[str, Any]:
        """Sizes: as a tree, as a DAG, what the gradient adds, depth and variables."""
        g = self.graph
        forward = g.reachable([self.id])
        grads = self.grad()
        both = g.reachable([self.id, *(e.id for e in grads.values())])
        return {
            "tree_nodes": g.tree_size(self.id),
            "dag_nodes": len(forward),
            "gradient_nodes": len(both) - len(forward),
            "depth": g.depth(self.id),
            "variables": [*self.variables, *_vector_ranges(g, self.id)],
            "ops": _op_counts(g, forward),
        }



for _name, _method in functions.unary_methods().items():  # x.sin(), ...: what NumPy's object arrays call
    setattr(Expr, _name, _method)

def _op_counts(g: Graph, nodes: list[int]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in nodes:
        counts[g.op[n]] = counts.get(g.op[n], 0) + 1
    order = [*OPS, *sorted(SCOPED)]  # the op table's order, then the nodes of loops
    return dict(sorted(counts.items(), key=lambda kv: order.index(kv[0])))


def _vector_ranges(g: Graph, root: int) -> list[str]:
    """``x[1..n]`` for each vector of an expression with loops (its domain)."""
    if not g.scoped:
        return []
    spans = binders.index_span(g, [root])
    return [f"{name}[{', '.join(f'{lo}..{hi}' for lo, hi in dims)}]" for name, dims in sorted(spans.items())]


def parse(text: str, graph: Graph | None = None) -> Expr:
    """Parse infix text into an expression of ``graph`` (the shared default graph if None).

    >>> parse("x*y") == parse("y*x")
    True
    """
    g = default_graph() if graph is None else graph
    return Expr(g, parse_into(text, g))


def parse_outputs(text: str, graph: Graph | None = None) -> list[Expr]:
    """Parse one or more expressions separated by ``;`` (after any definitions, which they
    share) into ``graph``, as :func:`parse` does one.

    >>> [str(e) for e in parse_outputs("t = x*y; t + 1; t^2")]
    ['x*y + 1', '(x*y)^2']
    """
    g = default_graph() if graph is None else graph
    return [Expr(g, root) for root in parse_outputs_into(text, g)]


def var(name: str, graph: Graph | None = None) -> Expr:
    """The variable ``name`` as an expression (a name the rule of docs/guide/language.md admits,
    else a NameRuleError).

    >>> var("x[ 2 ]")
    Expr('x[2]')
    """
    name = checked(name, "symad.var")
    g = default_graph() if graph is None else graph
    return Expr(g, g.var(name))


def _indices() -> Any:
    return importlib.import_module("symad.indices")


def _rebuilt_expr(text: str) -> Expr:
    return expressions_of(document.loads(text))[0]


def expressions_of(doc: dict[str, Any], graph: Graph | None = None) -> list[Expr]:
    """The outputs of a checked document as expressions of ``graph`` (the default graph if None)."""
    g = default_graph() if graph is None else graph
    return [Expr(g, root) for root in document.build(doc, g)]


def vector(name: str, n: int, graph: Graph | None = None) -> Vector:
    """The indexed variables ``name[1]`` … ``name[n]`` as a symbolic vector (the text's ``x[i]``):
    slices, arithmetic, NumPy's ufuncs, ``.sum()`` and ``@`` build loops over the entries, not one
    node per entry (:mod:`symad.symbolic_array`); ``x[k]`` (0-based) is the variable ``x[k+1]``.

    >>> x = vector("x", 3, Graph())
    >>> x
    Vector(x[i], i = 1..3)
    >>> print(x @ x)
    x[1]*x[1] + x[2]*x[2] + x[3]*x[3]
    >>> print(((x[1:] - x[:-1]**2)**2).sum())
    (x[2] - x[1]^2)^2 + (x[3] - x[2]^2)^2
    """
    g = default_graph() if graph is None else graph
    return named(g, name, length_of(n), Expr, "symad.vector")  # type: ignore[return-value]


def data(name: str, shape: int | tuple[int, ...], graph: Graph | None = None) -> Vector | Matrix:
    """Indexed data ``name[i]`` (``shape`` a length) or ``name[i, j]`` (``shape`` ``(rows, cols)``),
    given as an array by name at each call of the compiled function (leave it out of ``wrt``);
    ``A @ x`` with a vector ``x`` is a vector of sums over ``j`` (:class:`~symad.symbolic_array.Matrix`).

    >>> import numpy as np, symad
    >>> g = Graph()
    >>> A, x = data("A", (2, 2), g), vector("x", 2, g)
    >>> f = symad.compile(x @ A @ x)
    >>> f.variables, f.data
    (('x[1]', 'x[2]'), ('A',))
    >>> f.value_and_grad([1.0, 2.0], {"A": np.array([[1.0, 2.0], [3.0, 4.0]])})
    (27.0, array([12., 21.]))
    """
    g = default_graph() if graph is None else graph
    return named(g, name, shape, Expr, "symad.data")
