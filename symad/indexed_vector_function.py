"""Several outputs over loops: ``each(i = a..b, body)`` families and scalars, as one vector of values,
with sparse Jacobians read from the index structure, never unrolled.

:func:`symad.compile` returns one for text whose outputs use loops (``each``, or a long ``sum``):
constraints as they are written, ``each(i = 1..n-1, x[i+1] - x[i]^2); sum(i = 1..n, x[i]) - 1``.
The outputs are one flat vector: each family's rows in index order, a scalar one row, in the
order written.  The Jacobian's pattern comes from the families' entries (``x[i + c]`` in the
body gives the entry ``(i, i + c)``, :mod:`symad.ad.sparsity`), its values from forward mode
along one direction per colour of the columns (two for a body over ``x[i]`` and ``x[i+1]``,
whatever n), and ``vjp`` from the indexed gradient of ``Σ u_r f_r`` (:mod:`symad.ad.gather`).

>>> import numpy as np, symad
>>> F = symad.compile("n = 20000; each(i = 1..n-1, x[i+1] - x[i]^2)")
>>> F.variables, len(F)
(('x[1..20000]',), 19999)
>>> rows, cols = F.jacobian_pattern()
>>> rows.size, rows[:4], cols[:4]
(39998, array([0, 0, 1, 1]), array([0, 1, 1, 2]))
>>> F.sparse_jacobian(np.full(20000, 2.0))[:2, :3].toarray()
array([[-4.,  1.,  0.],
       [ 0., -4.,  1.]])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symad.ad.forward import forward
from symad.ad.gather import indexed_gradient
from symad.ad.reverse import body_adjoints
from symad.ad.sparse_values import Compression, EntryPlaces
from symad.ad.sparsity import CsrShape, jacobian_pattern
from symad.backends.arrays import ArrayProgram
from symad.core import binders
from symad.core.errors import PointError, SymadError
from symad.core.indexed import as_floats
from symad.expr import Expr
from symad.indexed_function import IndexedFunction, IndexedInputs, Runnable


class IndexedVectorFunction(IndexedInputs):
    """Outputs over loops compiled together: ``value`` (one flat vector: an ``each`` family's rows
    in index order, a scalar output one row), the Jacobian's ``jacobian_pattern``,
    ``jacobian_values`` and ``sparse_jacobian``, and the products ``jvp`` and ``vjp``.  ``wrt``
    names what is differentiated (default: every variable and vector of one index); the others
    are data, given by name at each call as for :class:`~symad.indexed_function.IndexedFunction`."""

    def __init__(self, outputs: Sequence[Any], wrt: Sequence[str] | None = None, backend: str = "auto"):
        exprs = list(outputs)
        if not exprs:
            raise SymadError("a vector function needs at least one output")
        graph = exprs[0].graph
        if any(e.graph is not graph for e in exprs):
            raise SymadError("the outputs of an indexed vector function must share one graph")
        self.exprs = exprs
        super().__init__(graph, [e.id for e in exprs], wrt, backend)
        self.rows: list[tuple[int, int]] = []  # per output, its first row and its number of rows
        at = 0
        for root in self.roots:
            count = 1
            if graph.op[root] == "each":
                level, low, high = graph.data[root]  # type: ignore[misc]
                if level != 0:
                    raise SymadError("an each(...) output must not be inside another loop")
                count = high - low + 1
            self.rows.append((at, count))
            at += count
        self.m = at
        self._program: Runnable | None = None  # the values', built on first use
        self._jvp: ArrayProgram | None = None
        self._vjp: IndexedFunction | None = None
        self._pattern: tuple[np.ndarray, np.ndarray] | None = None
        self._compression: Compression | None = None
        self._csr: CsrShape | None = None
        self._entries: EntryPlaces | None = None
        self._entry_program: Runnable | None = None
        self._both: Runnable | None = None  # values and entries together

    def __len__(self) -> int:
        return self.m

    def __repr__(self) -> str:
        return f"IndexedVectorFunction({self.m:,} outputs; {', '.join(self.variables)})"

    def _flat(self, parts: Sequence[Any]) -> np.ndarray:
        """The outputs' values as one vector (a family constant in its index broadcast to its rows)."""
        return np.concatenate([np.reshape(np.broadcast_to(np.asarray(p, dtype=float), (count,)), -1)
                               for p, (_, count) in zip(parts, self.rows)])

    def value(self, point: Any = None, data: Mapping[str, Any] | None = None, /, **kwargs: Any) -> np.ndarray:
        """The outputs at ``point`` (a flat array in :attr:`variables` order, or a mapping by name),
        as one vector of :func:`len` numbers."""
        if self._program is None:
            self._program = self.program(list(self.roots))
        return self._flat(self._program.run(*self.program_inputs(self.named(point, data, kwargs))))

    __call__ = value

    def jvp(self, point: Any, v: Any, data: Mapping[str, Any] | None = None) -> np.ndarray:
        """``J·v``: each output's derivative along ``v`` (flat, in :attr:`variables` order), from
        one forward sweep through the loops, never the matrix."""
        if self._jvp is None:
            (roots,) = forward(self.graph, list(self.roots), [self.tangents()])
            self._jvp = self.compiled(roots)
        return self._flat(self._jvp.run(*self.inputs_with_direction(point, v, data, "the tangent v")))

    def vjp(self, point: Any, u: Any, data: Mapping[str, Any] | None = None) -> np.ndarray:
        """``uᵀJ`` (one number per variable): the indexed gradient of ``Σ u_r f_r``, a family's
        cotangents a data vector of the sum over its rows; never the matrix."""
        g = self.graph
        if self._vjp is None:
            total = g.const(0.0)
            for k, root in enumerate(self.roots):
                if g.op[root] == "each":
                    level, low, high = g.data[root]  # type: ignore[misc]
                    weight = binders.item(g, g.vector(f"u'{k}"), g.index(level))
                    term = binders.reduce(g, "sum", level, low, high, g.make("mul", weight, g.args[root][0]))
                else:
                    term = g.make("mul", g.var(f"u'{k}"), root)
                total = g.make("add", total, term)
            self._vjp = IndexedFunction(Expr(g, total), wrt=self.wrt, backend=self.backend)
        flat = as_floats(u).reshape(-1)
        if flat.shape != (self.m,):
            raise PointError(f"the cotangent u has {flat.size:,} numbers; the outputs are {self.m:,}")
        given = self.named(point, data, {})
        for k, (at, count) in enumerate(self.rows):
            given[f"u'{k}"] = flat[at:at + count] if self.graph.op[self.roots[k]] == "each" else flat[at]
        return self._vjp.grad(given)

    # ------------------------------------------------------------------ sparse Jacobians
    def jacobian_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        """The Jacobian's structural nonzeros ``(rows, cols)`` (int64, row-major sorted; rows as in
        :meth:`value`, columns in :attr:`variables` order), from each family's entries and offsets:
        ``x[i + c]`` in the body is the entry ``(i, i + c)`` for every ``i``, never unrolled."""
        if self._pattern is None:
            self._pattern = jacobian_pattern(self.graph, self.roots, self.layout())
        return self._pattern

    def jacobian_values(self, point: Any = None, data: Mapping[str, Any] | None = None) -> np.ndarray:
        """The Jacobian's entries at :meth:`jacobian_pattern`'s positions, exact: each family's partials
        along its body's entries, an indexed expression each, computed as loops in one program.
        Where they do not hold every entry (a capture of several variables), :meth:`jvp` along one
        direction per colour of the columns (no row has two columns of one colour), each entry
        read off alone, and a dense row (a sum over a whole vector) from :meth:`vjp`."""
        if self._entries is None:
            self._entries = self._entry_places()
        if self._entries.covers:
            if not self._entries.nodes:
                return np.zeros(self._entries.count)
            if self._entry_program is None:
                self._entry_program = self.program(self._entries.nodes)
            return self._entries.values(self._entry_program.run(*self.program_inputs(self.named(point, data, {}))))
        if self._compression is None:
            self._compression = Compression(*self.jacobian_pattern(), self.size, self.m, lower=False)
        return self._compression.values(lambda v: self.jvp(point, v, data), lambda u: self.vjp(point, u, data))

    def value_and_jacobian_values(self, point: Any = None, data: Mapping[str, Any] | None = None
                                  ) -> tuple[np.ndarray, np.ndarray]:
        """``(value(point), jacobian_values(point))`` from one program run once (one compile, one
        pass over the rows: what an optimizer asks for at each new point), the same numbers."""
        if self._entries is None:
            self._entries = self._entry_places()
        if not (self._entries.covers and self._entries.nodes):
            return self.value(point, data), self.jacobian_values(point, data)
        if self._both is None:
            self._both = self.program([*self.roots, *self._entries.nodes])
        parts = self._both.run(*self.program_inputs(self.named(point, data, {})))
        k = len(self.roots)
        return self._flat(parts[:k]), self._entries.values(parts[k:])

    def _entry_places(self) -> EntryPlaces:
        """The Jacobian's entries as expressions: a family's partial along each of its body's entries
        ``y[a*i + c]`` (and along the scalars it captures) as one ``each`` over its rows, from the
        body's own reverse sweep; a scalar output's row from its indexed gradient."""
        g, layout = self.graph, self.layout()
        out = EntryPlaces(*self.jacobian_pattern(), self.size)
        for root, (at, count) in zip(self.roots, self.rows):
            if g.op[root] != "each":
                scalars, vectors = indexed_gradient(g, root)
                for name, partial in vectors.items():
                    if name in layout.vectors:
                        start, first, _ = layout.vectors[name]
                        cols = start + np.arange(partial.low, partial.high + 1, dtype=np.int64) - first
                        out.add(partial.node, np.full(cols.size, at, dtype=np.int64), cols, cols.size)
                for var, partial in scalars.items():
                    if var in layout.scalars and not g.is_const(partial, 0.0):
                        out.add(partial, np.array([at]), np.array([layout.scalars[var]]), 1)
                continue
            _, low, high = g.data[root]  # type: ignore[misc]
            inner = body_adjoints(g, root)
            body, *caps = g.args[root]
            k = np.arange(low, high + 1, dtype=np.int64)
            rows = at + k - low
            for leaf in [*binders.items(g, body, 0), *caps]:
                partial = inner.get(leaf)
                if partial is None:
                    continue
                if g.op[leaf] == "var":
                    if leaf in layout.scalars:
                        cols = np.full(count, layout.scalars[leaf], dtype=np.int64)
                        out.add(binders.reduce(g, "each", 0, low, high, partial), rows, cols, count)
                    continue
                if g.op[leaf] != "item" or len(g.args[leaf]) != 2:
                    continue  # a capture of several variables: read along colours instead
                place = layout.vectors.get(g.data[g.args[leaf][0]])  # type: ignore[arg-type]
                coef, shift = binders.affine(g, g.args[leaf][1])  # type: ignore[misc]
                if place is None or set(coef) - {0}:
                    continue
                start, first, _ = place
                cols = start + coef.get(0, 0) * k + shift - first
                out.add(binders.reduce(g, "each", 0, low, high, partial), rows, cols, count)
        return out.finish()

    def sparse_jacobian(self, point: Any = None, data: Mapping[str, Any] | None = None) -> Any:
        """The Jacobian as a ``scipy.sparse.csr_matrix`` of shape ``(len(F), n)`` (SciPy:
        ``pip install "symad[scipy]"``)."""
        if self._csr is None:
            self._csr = CsrShape(*self.jacobian_pattern(), (self.m, self.size))
        return self._csr.matrix(self.jacobian_values(point, data))

    def jacobian(self, point: Any = None, data: Mapping[str, Any] | None = None) -> np.ndarray:
        """The Jacobian as a dense ``(len(F), n)`` array (for small sizes; :meth:`sparse_jacobian`
        for large)."""
        rows, cols = self.jacobian_pattern()
        dense = np.zeros((self.m, self.size))
        dense[rows, cols] = self.jacobian_values(point, data)
        return dense
