"""The user-facing expression: a node of a graph, with arithmetic, derivatives and printing."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import VariableError, name_list
from .graph import Graph, export, rebuild
from .ops import OPS

if TYPE_CHECKING:
    from .function import Function

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


def as_node(graph: Graph, value: Any) -> int:
    """The node id of an Expr or a number, in ``graph`` (an Expr of another graph is copied in)."""
    if isinstance(value, Expr):
        return value.id if value.graph is graph else graph.copy_from(value.graph, [value.id])[0]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return graph.const(float(value))
    raise TypeError(f"cannot use {type(value).__name__} in an expression")


def _home(*values: Any) -> Graph:
    """Where an operation on expressions of several graphs is built: the largest graph
    (copying the others' nodes into it costs least)."""
    graphs = {id(v.graph): v.graph for v in values if isinstance(v, Expr)}
    return max(graphs.values(), key=len)


class Expr:
    """An expression: node ``id`` of ``graph``.  Equal expressions are the same node.

    >>> e = parse("(x+y)+x*(x+y)")
    >>> e.variables
    ('x', 'y')
    >>> str(e.diff("x"))
    'x + y + (1 + x)'
    """

    __slots__ = ("graph", "id")

    def __init__(self, graph: Graph, node: int):
        self.graph = graph
        self.id = node

    # ------------------------------------------------------------------ building
    def apply(self, op: str, *others: Any) -> Expr:
        """``op(self, *others)`` as a new (or existing) node."""
        g = self.graph if all(type(o) is not Expr or o.graph is self.graph for o in others) \
            else _home(self, *others)
        return Expr(g, g.make(op, as_node(g, self), *(as_node(g, o) for o in others)))

    def _binary(self, op: str, other: Any, reflected: bool = False) -> Expr:
        g = self.graph
        if type(other) is Expr and other.graph is not g:
            g = _home(self, other)
            return Expr(g, g.make(op, *((as_node(g, other), as_node(g, self)) if reflected
                                        else (as_node(g, self), as_node(g, other)))))
        try:
            o = as_node(g, other)
        except TypeError:
            return NotImplemented
        return Expr(g, g.make(op, o, self.id) if reflected else g.make(op, self.id, o))

    def __add__(self, o: Any) -> Expr: return self._binary("add", o)
    def __radd__(self, o: Any) -> Expr: return self._binary("add", o, True)
    def __sub__(self, o: Any) -> Expr: return self._binary("sub", o)
    def __rsub__(self, o: Any) -> Expr: return self._binary("sub", o, True)
    def __mul__(self, o: Any) -> Expr: return self._binary("mul", o)
    def __rmul__(self, o: Any) -> Expr: return self._binary("mul", o, True)
    def __truediv__(self, o: Any) -> Expr: return self._binary("div", o)
    def __rtruediv__(self, o: Any) -> Expr: return self._binary("div", o, True)
    def __pow__(self, o: Any) -> Expr: return self._binary("pow", o)
    def __rpow__(self, o: Any) -> Expr: return self._binary("pow", o, True)
    def __neg__(self) -> Expr: return self.apply("neg")
    def __pos__(self) -> Expr: return self

    def __eq__(self, other: object) -> bool:
        """Structural equality: the same node, or an equal expression of another graph."""
        if not isinstance(other, Expr):
            return False
        if other.graph is self.graph:
            return other.id == self.id
        return _same_structure(self.graph, self.id, other.graph, other.id)

    def __hash__(self) -> int:
        return self.graph.digest(self.id)

    def __reduce__(self) -> tuple:
        # Pickled as its DAG (plain data), rebuilt in the default graph of the loading process.
        return (_rebuilt_expr, (export(self.graph, [self.id]),))

    # ------------------------------------------------------------------ inspecting
    @property
    def op(self) -> str:
        """The node's operation name (a key of :data:`symad.ops.OPS`)."""
        return self.graph.op[self.id]

    @property
    def args(self) -> tuple[Expr, ...]:
        """The argument expressions."""
        return tuple(Expr(self.graph, a) for a in self.graph.args[self.id])

    @property
    def variables(self) -> tuple[str, ...]:
        """The variables the expression uses, in natural order (x2 before x10)."""
        return tuple(self.graph.variables([self.id]))

    def __str__(self) -> str:
        return self.to_text()

    def to_text(self, form: str = "auto") -> str:
        """Text that parses back to this node: ``"inline"``, ``"shared"`` or ``"auto"``
        (named shared subexpressions when inline text would be much larger than the DAG)."""
        from .printing import to_text

        return to_text(self.graph, self.id, form)

    def __repr__(self) -> str:
        return f"Expr({str(self)!r})"

    # ------------------------------------------------------------------ derivatives
    def _var_node(self, name: str) -> int:
        if not isinstance(name, str):
            name = str(name)
        node = self.graph._index.get(("var", name))
        if node is None:
            node = self.graph.var(name)
        return node

    def grad(self, wrt: list[str] | None = None) -> dict[str, Expr]:
        """Every partial derivative (reverse mode, one sweep): ``{name: ∂self/∂name}``."""
        from .diff import gradient

        names = list(self.variables if wrt is None else wrt)
        nodes = [self._var_node(n) for n in names]
        partials = gradient(self.graph, self.id, nodes)
        return {n: Expr(self.graph, partials[v]) for n, v in zip(names, nodes)}

    def diff(self, var: str) -> Expr:
        """The partial derivative with respect to one variable."""
        return self.grad([var])[var]

    def jvp(self, direction: Mapping[str, Any]) -> Expr:
        """Forward mode: the derivative along ``direction`` (``{name: number or Expr}``)."""
        from .diff import jvp

        g = self.graph
        tangents = {self._var_node(n): as_node(g, d) for n, d in direction.items()}
        return Expr(g, jvp(g, self.id, tangents))

    # ------------------------------------------------------------------ evaluating
    def compile(self, variables: list[str] | None = None, backend: str = "auto") -> Function:
        """A compiled function of value and gradient; see :class:`symad.function.Function`."""
        from .function import Function

        return Function(self, variables=variables, backend=backend)

    def evaluate(self, point: Any = None, /, **kwargs: Any) -> Any:
        """The value at a point (dict, keywords or sequence in ``.variables`` order)."""
        return self.compile().value(point, **kwargs)

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
            "variables": list(self.variables),
            "ops": _op_counts(g, forward),
        }


def _op_counts(g: Graph, nodes: list[int]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in nodes:
        counts[g.op[n]] = counts.get(g.op[n], 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: list(OPS).index(kv[0])))


def parse(text: str, graph: Graph | None = None) -> Expr:
    """Parse infix text into an expression of ``graph`` (the shared default graph if None).

    >>> parse("x*y") == parse("y*x")
    True
    """
    from .parser import parse_into

    g = default_graph() if graph is None else graph
    return Expr(g, parse_into(text, g))


def var(name: str, graph: Graph | None = None) -> Expr:
    """The variable ``name`` as an expression."""
    g = default_graph() if graph is None else graph
    return Expr(g, g.var(name))


def check_variables(expected: tuple[str, ...], given: Mapping[str, Any]) -> None:
    """Raise VariableError if ``given`` misses or adds variables."""
    missing = [v for v in expected if v not in given]
    extra = [v for v in given if v not in expected]
    uses = name_list(expected) if expected else "no variables"
    if missing:
        raise VariableError(f"missing value for variable {name_list(missing)} (the expression uses {uses})")
    if extra:
        raise VariableError(f"unknown variable {', '.join(extra)} (the expression uses {uses})", tuple(extra))


def _rebuilt_expr(dag: tuple) -> Expr:
    graph = default_graph()
    return Expr(graph, rebuild(graph, *dag)[0])


def _same_structure(ga: Graph, a: int, gb: Graph, b: int) -> bool:
    """Whether node ``a`` of ``ga`` and node ``b`` of ``gb`` are equal expressions."""
    if ga.digest(a) != gb.digest(b):
        return False
    checked: set[tuple[int, int]] = set()
    stack = [(a, b)]
    while stack:
        pair = stack.pop()
        if pair in checked:
            continue
        checked.add(pair)
        x, y = pair
        op = ga.op[x]
        if op != gb.op[y] or len(ga.args[x]) != len(gb.args[y]):
            return False
        if op == "const":
            if float(ga.data[x]).hex() != float(gb.data[y]).hex():  # type: ignore[arg-type]
                return False
        elif ga.data[x] != gb.data[y]:
            return False
        xs, ys = list(ga.args[x]), list(gb.args[y])
        if OPS[op].commutative:  # argument order follows node ids, which differ between graphs
            xs.sort(key=ga.digest)
            ys.sort(key=gb.digest)
        if [ga.digest(n) for n in xs] != [gb.digest(n) for n in ys]:
            return False
        stack.extend(zip(xs, ys))
    return True
