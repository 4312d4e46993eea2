"""A node of a graph as a value with arithmetic: what derivative rules are written in.

``Term(graph, node)`` supports ``+ - * / ^``, unary minus and ``apply(op, ...)``;
each builds (or finds) a node of the graph.  The derivative rules of
:mod:`symad.core.ops` are written with these operators, so a rule builds its
partial as new nodes.  :class:`symad.expr.Expr`, the user-facing expression,
is a Term with derivatives, compilation and pickling added.
"""

from __future__ import annotations

import sys
from typing import Any

from symad.core.dag import Graph
from symad.core.ops import OPS
from symad.core.printing import to_text


def as_node(graph: Graph, value: Any) -> int:
    """The node id of a Term or a number, in ``graph`` (a Term of another graph is copied in).
    A number is what :func:`as_number` reads as one."""
    if type(value) is float:  # the common cases first: derivative rules build with these
        return graph.const(value)
    if isinstance(value, Term) and value.graph is graph:
        return value.id
    value = unwrapped(value)
    if isinstance(value, Term):
        return value.id if value.graph is graph else graph.copy_from(value.graph, [value.id])[0]
    return graph.const(as_number(value))


def as_number(value: Any) -> float:
    """``value`` as a double, if it is a number: a Python ``int`` or ``float``, a NumPy integer
    or floating scalar, or a 0-d array of one.  A float32 or float16 is its value widened to a
    double (exact: ``np.float32(0.1)`` is 0.10000000149011612, not 0.1); a long double must be
    a double exactly.  Truth values (``bool``, ``np.bool_``) are not numbers, nor are complex
    numbers: a TypeError.

    >>> as_number(3)
    3.0
    >>> as_number(True)
    Traceback (most recent call last):
    ...
    TypeError: cannot use bool in an expression: a truth value is not a number (write 1 or 0)
    """
    value = unwrapped(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    np = sys.modules.get("numpy")  # a NumPy number exists only if NumPy is loaded: never import it here
    name = type(value).__name__
    if np is not None and isinstance(value, (np.integer, np.floating)):
        out = float(value)
        if isinstance(value, np.floating) and value.dtype.itemsize > 8 and value != out:
            raise TypeError(f"cannot use {name} {value} in an expression: it is not a double exactly "
                            f"(round it with float() if that is meant)")
        return out
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        raise TypeError(f"cannot use {name} in an expression: a truth value is not a number (write 1 or 0)")
    raise TypeError(f"cannot use {name} in an expression")


def unwrapped(value: Any) -> Any:
    """The element of a 0-d NumPy array (``np.array(3.0)``, what some NumPy functions return)."""
    np = sys.modules.get("numpy")
    return value[()] if np is not None and isinstance(value, np.ndarray) and value.ndim == 0 else value


def _home(*values: Any) -> Graph:
    """Where an operation on terms of several graphs is built: the largest graph
    (copying the others' nodes into it costs least)."""
    graphs = {id(v.graph): v.graph for v in values if isinstance(v, Term)}
    return max(graphs.values(), key=len)


class Arithmetic:
    """The arithmetic operators, each ``self._binary(op, other, reflected)``: one table for the
    terms of expressions and the symbolic vectors (:mod:`symad.symbolic_array`)."""

    __slots__ = ()

    def _binary(self, op: str, other: Any, reflected: bool = False) -> Any:
        raise NotImplementedError

    def __add__(self, o: Any) -> Any: return self._binary("add", o)
    def __radd__(self, o: Any) -> Any: return self._binary("add", o, True)
    def __sub__(self, o: Any) -> Any: return self._binary("sub", o)
    def __rsub__(self, o: Any) -> Any: return self._binary("sub", o, True)
    def __mul__(self, o: Any) -> Any: return self._binary("mul", o)
    def __rmul__(self, o: Any) -> Any: return self._binary("mul", o, True)
    def __truediv__(self, o: Any) -> Any: return self._binary("div", o)
    def __rtruediv__(self, o: Any) -> Any: return self._binary("div", o, True)
    def __pow__(self, o: Any) -> Any: return self._binary("pow", o)
    def __rpow__(self, o: Any) -> Any: return self._binary("pow", o, True)


class Term(Arithmetic):
    """Node ``id`` of ``graph``.  Equal terms are the same node; terms of different
    graphs combine (in the larger graph) and compare structurally."""

    __slots__ = ("graph", "id")

    def __init__(self, graph: Graph, node: int):
        self.graph = graph
        self.id = node

    # ------------------------------------------------------------------ building
    def apply(self, op: str, *others: Any) -> Any:
        """``op(self, *others)`` as a new (or existing) node."""
        g = self.graph
        if not others:
            return type(self)(g, g.make(op, self.id))
        if len(others) == 1 and type(others[0]) is float:  # x^2.0 in a derivative rule
            return type(self)(g, g.make(op, self.id, g.const(others[0])))
        g = g if all(not isinstance(o, Term) or o.graph is g for o in others) else _home(self, *others)
        return type(self)(g, g.make(op, as_node(g, self), *(as_node(g, o) for o in others)))

    def _binary(self, op: str, other: Any, reflected: bool = False) -> Any:
        g = self.graph
        if isinstance(other, Term) and other.graph is g:  # the common case first
            return type(self)(g, g.make(op, other.id, self.id) if reflected else g.make(op, self.id, other.id))
        if isinstance(other, Term):
            g = _home(self, other)
            return type(self)(g, g.make(op, *((as_node(g, other), as_node(g, self)) if reflected
                                              else (as_node(g, self), as_node(g, other)))))
        try:
            o = as_node(g, other)
        except TypeError:
            return NotImplemented
        return type(self)(g, g.make(op, o, self.id) if reflected else g.make(op, self.id, o))

    def __neg__(self) -> Any: return self.apply("neg")
    def __pos__(self) -> Any: return self

    def __eq__(self, other: object) -> bool:
        """Structural equality: the same node, or an equal term of another graph."""
        if not isinstance(other, Term):
            return False
        if other.graph is self.graph:
            return other.id == self.id
        return same_structure(self.graph, self.id, other.graph, other.id)

    def __hash__(self) -> int:
        return self.graph.digest(self.id)

    def __bool__(self) -> bool:
        # An expression has no truth value until it is evaluated: `if x > 0:`, `a and b` or
        # np.where on expressions would silently pick one branch for every point.
        raise TypeError("an expression has no truth value: for a branch write symad.where(cond, a, b) "
                        "(or 'if c then a else b' in text), for logic symad.and_, symad.or_, symad.not_")

    def _no_order(self, other: Any, symbol: str, name: str) -> Any:
        # `<` on expressions has no truth value either; NumPy's max, min, sort and maximum on
        # object arrays compare elements with it, so say what to write instead.
        raise TypeError(f"expressions have no order: for the comparison {symbol} as an expression write "
                        f"symad.{name}(a, b); for the largest or smallest of several, symad.max(a, b, ...) "
                        f"or symad.min(a, b, ...) (of an array: symad.max(*array))")

    def __lt__(self, o: Any) -> Any: return self._no_order(o, "<", "lt")
    def __le__(self, o: Any) -> Any: return self._no_order(o, "<=", "le")
    def __gt__(self, o: Any) -> Any: return self._no_order(o, ">", "gt")
    def __ge__(self, o: Any) -> Any: return self._no_order(o, ">=", "ge")

    # ------------------------------------------------------------------ inspecting
    @property
    def op(self) -> str:
        """The node's operation name (a key of :data:`symad.core.ops.OPS`)."""
        return self.graph.op[self.id]

    @property
    def args(self) -> tuple[Any, ...]:
        """The argument terms."""
        return tuple(type(self)(self.graph, a) for a in self.graph.args[self.id])

    @property
    def variables(self) -> tuple[str, ...]:
        """The variables the term uses, in natural order (x2 before x10)."""
        return tuple(self.graph.variables([self.id]))

    def __str__(self) -> str:
        return self.to_text()

    def to_text(self, form: str = "auto") -> str:
        """Text that parses back to this node: ``"inline"``, ``"shared"`` or ``"auto"``
        (named shared subexpressions when inline text would be much larger than the DAG)."""
        return to_text(self.graph, self.id, form)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


def same_structure(ga: Graph, a: int, gb: Graph, b: int) -> bool:
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
        spec = OPS.get(op)  # an indexed node (an entry, a loop) is in no op table: its order is structural
        if spec is not None and spec.commutative:  # argument order follows node ids, which differ between graphs
            xs.sort(key=ga.digest)
            ys.sort(key=gb.digest)
        if [ga.digest(n) for n in xs] != [gb.digest(n) for n in ys]:
            return False
        stack.extend(zip(xs, ys))
    return True
