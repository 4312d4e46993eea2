"""NumPy-style symbolic arrays whose operations build loops (indexed nodes), not one node per entry.

A :class:`Vector` of length ``m`` is one *body* node, an expression of the loop index
(``graph.index(0)``), whose entries are the body at positions ``1..m``: ``symad.vector("x", n)`` is
``x[i]`` for ``i = 1..n``; ``x[1:] - x[:-1]**2`` is ``x[i+1] - x[i]^2`` for ``i = 1..n-1``, still one
body; ``.sum()`` is one ``sum`` node over the range (:mod:`symad.core.binders`), or, over at most
:data:`~symad.core.binders.UNROLL_MAX_TERMS` terms, exactly the nodes the text's unrolling builds.
So a model written the way NumPy and JAX users write it stays as small as its text:

>>> from symad.expr import vector
>>> x = vector("x", 5, Graph())
>>> r = x[1:] - x[:-1]**2
>>> r
Vector(x[i + 1] - x[i]^2, i = 1..4)
>>> print((r**2).sum())
(x[2] - x[1]^2)^2 + (x[3] - x[2]^2)^2 + (x[4] - x[3]^2)^2 + (x[5] - x[4]^2)^2

A :class:`Matrix` is two-dimensional data (``A[i, j]`` of the text, given by name at the call):
``A @ x`` is the vector of the sums over ``j`` of ``A[i, j]*x[j]``, so ``x @ A @ x`` is the
quadratic form as two nested loops.  The language's functions apply entry by entry, through
``symad.sin(x)`` or NumPy's ufuncs (``np.sin(x)``); a NumPy array of numbers combines with the
entries (:meth:`Vector.__array__`), one node per entry, as an object array does.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any

from symad import functions
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import NameRuleError, SymadError
from symad.core.name_rule import checked
from symad.core.ops import OPS
from symad.core.printing import to_infix
from symad.core.term import Arithmetic, Term, as_node, unwrapped
from symad.core.unrolling import entries_as_items, rebuilt, settled, summed


def plain_name(name: str, what: str) -> str:
    """``name`` if the name rule admits it and it has no index (the base of indexed variables)."""
    name = checked(name, what)
    if "[" in name:
        raise NameRuleError(f"{what}: the base of indexed variables is a plain name, not {name!r}")
    return name


def length_of(n: Any) -> int:
    """``n`` if it is a whole number ≥ 0 (a length), else a SymadError."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise SymadError(f"the length of a vector is a whole number ≥ 0, not {n!r}")
    return n


def _graph_of(operands: tuple[Any, ...]) -> Graph:
    """Where an operation on arrays and terms of several graphs is built: the largest graph (as
    :class:`~symad.core.term.Term` does)."""
    graphs = {id(o.graph): o.graph for o in operands if isinstance(o, (Vector, Matrix, Term))}
    return max(graphs.values(), key=len)


def _is_array(value: Any) -> bool:
    """Whether ``value`` is a NumPy array of one or more dimensions (numbers or expressions)."""
    return hasattr(value, "__array_interface__") and getattr(value, "ndim", 0) > 0


_NO_ORDER = ("expressions have no order: NumPy's {name} compares the entries; for the largest or smallest "
             "of several write symad.max(a, b, ...) or symad.min(a, b, ...) (of a vector: symad.max(*x)), "
             "and symad.max(x, y) for the larger entry by entry")


class Vector(Arithmetic):
    """A symbolic vector: ``body`` (a node of ``graph``, an expression of ``index(0)``) at the
    positions ``1..length``.  Entries, sums and dot products are expressions of class ``kind``.
    Sums inside the body (``A @ x``) are loop nodes until the vector is summed or indexed, when
    each is kept or written out as the text decides (:mod:`symad.core.unrolling`).

    >>> from symad.expr import vector
    >>> x = vector("x", 3, Graph())
    >>> len(x), x.shape, x[0], x[-1]
    (3, (3,), Expr('x[1]'), Expr('x[3]'))
    >>> print(x @ x)
    x[1]*x[1] + x[2]*x[2] + x[3]*x[3]
    """

    __slots__ = ("graph", "body", "length", "kind")
    ndim = 1

    def __init__(self, graph: Graph, body: int, length: int, kind: type = Term):
        self.graph, self.body, self.length, self.kind = graph, body, length, kind

    # ------------------------------------------------------------------ shape and entries
    @property
    def shape(self) -> tuple[int]:
        return (self.length,)

    @property
    def size(self) -> int:
        return self.length

    def __len__(self) -> int:
        return self.length

    def body_in(self, graph: Graph) -> int:
        """The body as a node of ``graph`` (copied in from another graph)."""
        return self.body if graph is self.graph else graph.copy_from(self.graph, [self.body])[0]

    def at(self, position: int) -> Any:
        """The entry at ``position`` (1-based, as the text counts), an expression."""
        graph = self.graph
        node = rebuilt(graph, self.body, graph.const(float(position)), entries=True)
        return self.kind(graph, settled(graph, node))

    def __getitem__(self, key: Any) -> Any:
        """``x[k]`` (0-based, negative from the end) is an entry, an expression: ``x[0]`` is the
        text's ``x[1]``; a slice (any step but 0) is a vector, its body the same with the index
        moved: ``x[1:]`` is ``x[i + 1]`` for ``i = 1..n-1``, ``x[::2]`` is ``x[2*i - 1]``."""
        if isinstance(key, tuple) and len(key) == 1:
            key = key[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(self.length)
            length = len(range(start, stop, step))
            graph = self.graph
            if step == 1 and start == 0:
                return Vector(graph, self.body, length, self.kind)
            # position p of the slice is position step*p + (start + 1 - step) of this vector
            index = graph.index(0)
            scaled = index if step == 1 else graph.make("mul", graph.const(float(step)), index)
            position = graph.make("add", scaled, graph.const(float(start + 1 - step)))
            return Vector(graph, rebuilt(graph, self.body, position), length, self.kind)
        return self.at(_position(key, self.length))

    def __iter__(self) -> Iterator[Any]:
        for position in range(1, self.length + 1):
            yield self.at(position)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        """The entries as a NumPy object array (what ``np.asarray`` gives): NumPy's functions
        that this class does not keep as loops (``np.dot`` with numbers, ``np.linalg.norm``) work
        on them entry by entry, one node each, as on any array of expressions."""
        import numpy as np

        if dtype is not None and np.dtype(dtype) != np.dtype(object):
            raise TypeError(f"a symbolic vector has expressions, not numbers of {np.dtype(dtype)}: "
                            "compile it (symad.compile) to compute numbers")
        out = np.empty(self.length, dtype=object)
        out[:] = list(self)
        return out

    def __repr__(self) -> str:
        taken = [*self.graph.variables([self.body]), *binders.vectors(self.graph, [self.body])]
        index_names = binders.index_names(taken, binders.MAX_NESTING + 1)
        text = to_infix(self.graph, self.body, index_names=index_names)
        return f"Vector({text}, {index_names[0]} = 1..{self.length})"

    # ------------------------------------------------------------------ entry by entry
    def elementwise(self, name: str, *args: Any) -> Vector:
        """The language's function or op ``name`` of ``args`` (vectors entry by entry, numbers
        and expressions as they are), a vector: what ``symad.sin(x)`` and ``x + 1`` build."""
        return self._map(lambda *terms: functions.apply(name, *terms), args)

    def _map(self, build: Callable[..., Any], args: tuple[Any, ...]) -> Vector:
        args = tuple(unwrapped(a) for a in args)
        for a in args:
            if isinstance(a, Vector) and a.length != self.length:
                raise ValueError(f"operands could not be broadcast together with shapes {self.shape} {a.shape}")
            if isinstance(a, Matrix):
                raise TypeError("a vector and a matrix combine only by @ (matrix products)")
        graph = _graph_of(args)
        terms = [Term(graph, a.body_in(graph) if isinstance(a, Vector) else as_node(graph, a)) for a in args]
        out = build(*terms)
        if out is NotImplemented:
            return NotImplemented  # type: ignore[no-any-return]
        return Vector(graph, out.id, self.length, self.kind)

    def _binary(self, name: str, other: Any, reflected: bool = False) -> Any:
        other = unwrapped(other)
        if _is_array(other):  # NumPy's arrays: entry by entry, as an object array, by the op's ufunc
            import numpy as np

            ufunc = getattr(np, OPS[name].numpy[0])
            return ufunc(other, self.__array__()) if reflected else ufunc(self.__array__(), other)
        try:
            return self.elementwise(name, *((other, self) if reflected else (self, other)))
        except TypeError:
            if isinstance(other, (Vector, Matrix, Term)):
                raise
            return NotImplemented

    def __neg__(self) -> Vector: return self.elementwise("neg", self)
    def __pos__(self) -> Vector: return self
    def __abs__(self) -> Vector: return self.elementwise("abs", self)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy's ufuncs: the language's function entry by entry (``np.sin(x)``, ``np.maximum(x, 0)``,
        the names of :data:`symad.functions.UFUNCS`); ``np.add.reduce`` is :meth:`sum`."""
        name = ufunc.__name__
        if method == "reduce":
            if name in ("maximum", "minimum"):
                raise TypeError(_NO_ORDER.format(name=f"{name}.reduce"))
            if name == "add" and kwargs.get("axis", 0) in (0, -1, None) and kwargs.get("out") is None:
                return inputs[0].sum()
            if name == "multiply" and kwargs.get("axis", 0) in (0, -1, None) and kwargs.get("out") is None:
                return inputs[0].prod()
        if method != "__call__" or kwargs:
            raise TypeError(f"NumPy's {name}.{method}{' with ' + ', '.join(kwargs) if kwargs else ''} "
                            "is not supported on a symbolic vector")
        if any(_is_array(unwrapped(i)) for i in inputs):  # with arrays of numbers: entry by entry
            return ufunc(*(i.__array__() if isinstance(i, Vector) else i for i in inputs))
        if name == "matmul":
            return operator.matmul(*inputs)
        if name not in functions.UFUNCS:
            known = ", ".join(sorted(functions.UFUNCS))
            raise TypeError(f"NumPy's {name} has no counterpart among symad's functions; the ufuncs that "
                            f"apply to symbolic vectors are: {known}")
        return self._map(lambda *terms: functions.ufunc(name, *terms), inputs)

    # ------------------------------------------------------------------ reductions and products
    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        """The sum of the entries, an expression: the nodes of the text's ``sum(i = 1..n, ...)``, one
        ``sum`` node past :data:`~symad.core.binders.UNROLL_MAX_TERMS` terms (counting those of the
        sums inside), else written out (:func:`symad.core.unrolling.summed`).  ``axis``, ``dtype``
        and ``out`` are NumPy's (``np.sum(x)`` calls this), and only their defaults are taken."""
        _only_defaults("sum", axis, dtype, out)
        return self.kind(self.graph, entries_as_items(self.graph, summed(self.graph, self.body, 0, 1, self.length)))

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        """The sum of the entries over their number (what ``np.mean(x)`` calls)."""
        _only_defaults("mean", axis, dtype, out)
        return self.sum() / self.length

    def prod(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        """The product of the entries, an expression: the nodes of the text's ``prod(i = 1..n, ...)``,
        one ``prod`` node past the threshold a sum has, else written out left to right."""
        _only_defaults("prod", axis, dtype, out)
        graph = self.graph
        return self.kind(graph, entries_as_items(graph, summed(graph, self.body, 0, 1, self.length, op="prod")))

    def __matmul__(self, other: Any) -> Any:
        """``x @ y``: the dot product (the sum of ``x*y``); ``x @ A`` with a :class:`Matrix`: the vector
        of the sums over ``i`` of ``x[i]*A[i, j]``."""
        other = unwrapped(other)
        if isinstance(other, Matrix):
            return other.transposed_product(self)
        if isinstance(other, Vector):
            if other.length != self.length:
                raise ValueError(f"matmul: shapes {self.shape} and {other.shape} do not match")
            return (self * other).sum()
        if _is_array(other):
            return self.__array__() @ other
        return NotImplemented

    def __rmatmul__(self, other: Any) -> Any:
        other = unwrapped(other)
        if _is_array(other):
            return other @ self.__array__()
        return NotImplemented

    def dot(self, other: Any) -> Any:
        """``self @ other``."""
        return self @ other

    # ------------------------------------------------------------------ Python's protocols
    def __eq__(self, other: object) -> bool:
        """Structural equality, as for expressions: the same length and the same body."""
        if not isinstance(other, Vector) or other.length != self.length:
            return False
        if other.graph is self.graph:
            return other.body == self.body
        # another graph: equal digests are checked by building the other body here (hash-consed)
        return self.graph.digest(self.body) == other.graph.digest(other.body) and other.body_in(self.graph) == self.body

    def __hash__(self) -> int:
        return hash((self.length, self.graph.digest(self.body)))

    def __bool__(self) -> bool:
        raise TypeError("a vector has no truth value: for a branch entry by entry write symad.where(cond, a, b)")

    def _no_order(self, symbol: str, name: str) -> Any:
        raise TypeError(f"vectors have no order: for the comparison {symbol} entry by entry write "
                        f"symad.{name}(a, b)")

    def __lt__(self, o: Any) -> Any: return self._no_order("<", "lt")
    def __le__(self, o: Any) -> Any: return self._no_order("<=", "le")
    def __gt__(self, o: Any) -> Any: return self._no_order(">", "gt")
    def __ge__(self, o: Any) -> Any: return self._no_order(">=", "ge")


def _only_defaults(what: str, axis: Any, dtype: Any, out: Any) -> None:
    if axis not in (None, 0, -1, (0,)) or dtype is not None or out is not None:
        raise TypeError(f"{what} of a symbolic vector takes no axis but 0, no dtype and no out")


class Matrix:
    """Two-dimensional data ``name[i, j]`` (``i = 1..rows``, ``j = 1..cols``, the text's ``A[i, j]``),
    given as an array by name at the call; ``transposed`` swaps its indices (:attr:`T`).  It enters
    expressions through ``@`` with a :class:`Vector` and through its entries, rows and columns.

    >>> from symad.expr import data, vector
    >>> g = Graph()
    >>> A, x = data("A", (2, 3), g), vector("x", 3, g)
    >>> A @ x
    Vector(sum(j = 1..3, x[j]*A[i, j]), i = 1..2)
    >>> print((A @ x).sum())
    x[1]*A[1, 1] + x[2]*A[1, 2] + x[3]*A[1, 3] + (x[1]*A[2, 1] + x[2]*A[2, 2] + x[3]*A[2, 3])
    >>> A[1], A[0, 2]
    (Vector(A[2, i], i = 1..3), Expr('A[1, 3]'))
    """

    __slots__ = ("graph", "name", "shape", "transposed", "kind")
    ndim = 2

    def __init__(self, graph: Graph, name: str, shape: tuple[int, int], transposed: bool = False,
                 kind: type = Term):
        self.graph, self.name, self.shape, self.transposed, self.kind = graph, name, shape, transposed, kind

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def T(self) -> Matrix:  # noqa: N802 (NumPy's name)
        """The transpose: the same data with its indices swapped."""
        return Matrix(self.graph, self.name, (self.shape[1], self.shape[0]), not self.transposed, self.kind)

    def entry(self, graph: Graph, row: int, col: int) -> int:
        """The node of entry ``(row, col)`` (index nodes of ``graph``, 1-based)."""
        indices = (col, row) if self.transposed else (row, col)
        return binders.item(graph, graph.vector(self.name), *indices)

    def __matmul__(self, other: Any) -> Any:
        """``A @ x``: the vector of the sums over ``j`` of ``A[i, j]*x[j]`` (a loop at the second level,
        kept or written out once the vector is summed or indexed)."""
        other = unwrapped(other)
        if not isinstance(other, Vector):
            raise TypeError(f"a data matrix multiplies a symbolic vector (A @ x), not {type(other).__name__}")
        rows, cols = self.shape
        if other.length != cols:
            raise ValueError(f"matmul: shapes {self.shape} and {other.shape} do not match")
        graph = _graph_of((self, other))
        j = graph.index(1)
        at = rebuilt(graph, other.body_in(graph), j, deeper=1)  # x[j], its own loops one level deeper
        term = graph.make("mul", self.entry(graph, graph.index(0), j), at)
        return Vector(graph, binders.reduce(graph, "sum", 1, 1, cols, term), rows, other.kind)

    def transposed_product(self, vector: Vector) -> Vector:
        """``x @ A``: the vector of the sums over ``i`` of ``x[i]*A[i, j]``."""
        return self.T @ vector

    def __getitem__(self, key: Any) -> Any:
        """``A[i, j]`` (0-based) is an entry, ``A[i]`` and ``A[i, :]`` a row, ``A[:, j]`` a column."""
        keys = key if isinstance(key, tuple) else (key,)
        if len(keys) > 2:
            raise IndexError(f"a matrix takes at most 2 indices, not {len(keys)}")
        row, col = (*keys, slice(None))[:2]
        graph = self.graph
        whole = [isinstance(k, slice) for k in (row, col)]
        if all(whole):
            if row == slice(None) and col == slice(None):
                return self
            raise TypeError("a data matrix is sliced by one axis at a time (A[i, 1:], A[:, j])")
        fixed = [None if w else _position(k, n) for k, w, n in zip((row, col), whole, self.shape)]
        if not any(whole):
            return self.kind(graph, self.entry(graph, *(graph.const(float(p)) for p in fixed)))  # type: ignore[arg-type]
        index = graph.index(0)
        if whole[1]:
            line = Vector(graph, self.entry(graph, graph.const(float(fixed[0])), index), self.shape[1], self.kind)
            return line[col]
        line = Vector(graph, self.entry(graph, index, graph.const(float(fixed[1]))), self.shape[0], self.kind)
        return line[row]

    def __repr__(self) -> str:
        first, second = binders.index_names([self.name], 2)
        at = f"{second}, {first}" if self.transposed else f"{first}, {second}"
        return f"Matrix({self.name}[{at}], {first} = 1..{self.shape[0]}, {second} = 1..{self.shape[1]})"


def _position(key: Any, length: int) -> int:
    """The 1-based position of the 0-based (or negative) integer index ``key`` into ``length``."""
    if isinstance(key, bool) or not hasattr(key, "__index__"):
        raise TypeError(f"an index is an integer or a slice, not {type(key).__name__}")
    k = operator.index(key)
    if not -length <= k < length:
        raise IndexError(f"index {k} is out of range for length {length}")
    return k % length + 1


def named(graph: Graph, name: str, shape: Any, kind: type, what: str) -> Vector | Matrix:
    """The vector ``name[i]`` (``shape`` a length or ``(n,)``) or the matrix ``name[i, j]``
    (``shape`` ``(rows, cols)``) of ``graph``, its expressions of class ``kind``; ``what`` names the
    entry point in errors."""
    name = plain_name(name, what)
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if len(dims) not in (1, 2):
        raise SymadError(f"{what}: a shape has 1 or 2 lengths, not {len(dims)}")
    dims = tuple(length_of(n) for n in dims)
    if len(dims) == 2:
        return Matrix(graph, name, dims, kind=kind)  # type: ignore[arg-type]
    return Vector(graph, binders.item(graph, graph.vector(name), graph.index(0)), dims[0], kind)
