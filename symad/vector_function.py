"""Several outputs compiled together: their values, the Jacobian, and its products with vectors."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from symad.ad.matrices import cotangent_names, direction_names, jacobian_nodes, jvp_nodes, vjp_nodes
from symad.ad.sparse_values import partial_entries
from symad.ad.sparsity import CsrShape, Layout, jacobian_pattern
from symad.core import document
from symad.core.dag import Graph
from symad.core.errors import SymadError
from symad.core.term import Term, as_node
from symad.expr import Expr, default_graph, expressions_of, parse_outputs
from symad.function import Function, Inputs, check_backend
from symad.runtime.policy import BACKENDS
from symad.runtime.tiering import TieredProgram


def as_outputs(outputs: Any) -> list[Expr]:
    """Outputs as expressions of one graph: text (one or more outputs separated by ``;``), or
    a sequence of expressions, texts and numbers.  Texts are parsed into the graph of the
    expressions given (else the default graph); expressions of other graphs are copied in."""
    items = [outputs] if isinstance(outputs, (str, Term)) else list(outputs)
    if not items:
        raise SymadError("a vector function needs at least one output")
    terms = [item for item in items if isinstance(item, Term)]
    graph: Graph = max((t.graph for t in terms), key=len) if terms else default_graph()
    exprs: list[Expr] = []
    for item in items:
        if isinstance(item, str):
            exprs += parse_outputs(item, graph)
        else:
            try:
                exprs.append(Expr(graph, as_node(graph, item)))
            except TypeError:
                raise SymadError(f"an output is an expression, its text or a number, not {item!r:.60}") from None
    return exprs


class VectorFunction(Inputs):
    """Outputs ``f_1 … f_m`` of one DAG compiled together: ``value`` (their vector),
    ``jacobian`` (the ``m × n`` matrix ``∂f_i/∂x_j``), ``value_and_jacobian``, and the
    products ``vjp`` (``uᵀJ``) and ``jvp`` (``J·v``) without the matrix.

    Points as :class:`~symad.function.Function` takes them: a dict, keywords or a sequence
    in ``variables`` order, with ``params`` after the point for a function compiled with
    ``wrt``; a batch (rows, or arrays that broadcast) gives results with its leading axes.
    The outputs share their subexpressions and so do their derivatives: each is computed once.
    The Jacobian's expressions come from a reverse sweep per output when there are no more
    outputs than variables, else from one forward sweep with a tangent per variable.

    >>> import symad
    >>> F = symad.compile(["x*y", "x + sin(y)"])
    >>> F.value([2, 0])
    array([0., 2.])
    >>> F.jacobian(x=2, y=0)
    array([[0., 2.],
           [1., 1.]])
    >>> F.vjp([2, 0], [1, 1])
    array([1., 3.])
    """

    def __init__(self, outputs: Any, variables: Sequence[str] | None = None, backend: str = "auto", *,
                 background: bool = True, wrt: Sequence[str] | None = None):
        check_backend(backend)
        self.exprs = as_outputs(outputs)
        graph = self.exprs[0].graph
        self.roots = [e.id for e in self.exprs]
        super().__init__(graph, graph.variables(self.roots), variables, wrt)
        self.graph, self.backend, self.background = graph, backend, background
        self.wrt_nodes = self.inputs[:len(self.variables)]
        self._lock = threading.Lock()
        self._tiers: dict[str, TieredProgram] = {}
        self._jacobian: list[list[int]] | None = None
        self._jacobian_index = np.zeros((0, 0), dtype=np.intp)

    def __len__(self) -> int:
        return len(self.roots)

    def __repr__(self) -> str:
        """``VectorFunction([x*y, x + y], variables=('x', 'y'), backend='auto')``."""
        return self.described(self.graph, self.roots, True)

    def to_document(self) -> dict[str, Any]:
        """The function as a document of symad's file format: its outputs, variables,
        parameters and backend (loading compiles it again)."""
        return self.document_of(self.roots, "vector_function")

    def __reduce__(self) -> tuple:
        # Pickled as its document (symad's JSON format): compiled again on load.
        return (_rebuilt, (type(self), document.dumps(self.to_document())))

    # ------------------------------------------------------------------ expressions and programs
    def jacobian_nodes(self) -> list[list[int]]:
        """The Jacobian's node ids, ``[output][variable]`` (built once)."""
        with self._lock:
            if self._jacobian is None:
                self._jacobian = jacobian_nodes(self.graph, self.roots, self.wrt_nodes)
            return self._jacobian

    def jacobian_exprs(self) -> list[list[Expr]]:
        """The Jacobian as expressions, ``[output][variable]``."""
        return [[Expr(self.graph, node) for node in row] for row in self.jacobian_nodes()]

    def _program(self, kind: str) -> TieredProgram:
        """The tiers of one program: ``value``, ``jacobian`` (values, then each distinct
        entry once), ``vjp`` or ``jvp`` (inputs followed by the vector's components)."""
        with self._lock:
            tiers = self._tiers.get(kind)
            if tiers is not None:
                return tiers
        graph, roots, wrt = self.graph, self.roots, self.wrt_nodes
        inputs = self.inputs
        if kind == "value":
            def outputs() -> list[int]:
                return roots
        elif kind == "jacobian":
            rows = self.jacobian_nodes()
            distinct: dict[int, int] = {}
            index = [len(roots) + distinct.setdefault(h, len(distinct)) for row in rows for h in row]
            self._jacobian_index = np.asarray(index, dtype=np.intp).reshape(len(roots), len(wrt))

            def outputs() -> list[int]:
                return [*roots, *distinct]
        elif kind == "sparse_jacobian":
            rows, cols = self.jacobian_pattern()

            def outputs() -> list[int]:
                return partial_entries(graph, roots, wrt, rows, cols) or [graph.const(0.0)]
        elif kind == "vjp":
            vector = [graph.var(u) for u in cotangent_names(len(roots))]
            inputs = inputs + vector

            def outputs() -> list[int]:
                return vjp_nodes(graph, roots, wrt, vector)
        else:
            vector = [graph.var(d) for d in direction_names(self.variables)]
            inputs = inputs + vector

            def outputs() -> list[int]:
                return jvp_nodes(graph, roots, wrt, vector)
        made = TieredProgram(graph, outputs, inputs, self.backend, tape=None, with_grad=False,
                             background=self.background)
        with self._lock:
            return self._tiers.setdefault(kind, made)

    def prepare(self) -> VectorFunction:
        """Compile the value and Jacobian programs now and wait for them (``vjp`` and ``jvp``
        compile on first use)."""
        for kind in ("value", "jacobian"):
            self._program(kind).prepare()
        return self

    # ------------------------------------------------------------------ calling
    def value(self, point: Any = None, params: Any = None, /, **kwargs: Any) -> np.ndarray:
        """The outputs at a point (shape ``(m,)``, or the batch's shape followed by ``m``)."""
        if self.params or params is not None:
            point, kwargs = self.with_params(point, params, kwargs)
        out, shape = self.outputs_at(self._program("value"), point, kwargs)
        return out if shape is None else out.reshape(*shape, len(self.roots))

    __call__ = value

    def value_and_jacobian(self, point: Any = None, params: Any = None, /,
                           **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(values, Jacobian)`` from one program: shapes ``(m,)`` and ``(m, n)`` (after the
        batch's shape for a batch), the Jacobian's columns in ``variables`` order."""
        if self.params or params is not None:
            point, kwargs = self.with_params(point, params, kwargs)
        tiers = self._program("jacobian")
        out, shape = self.outputs_at(tiers, point, kwargs)
        m, index = len(self.roots), self._jacobian_index
        if shape is None:
            return out[:m], out[index]
        return out[:, :m].reshape(*shape, m), out[:, index].reshape(*shape, *index.shape)

    def jacobian(self, point: Any = None, params: Any = None, /, **kwargs: Any) -> np.ndarray:
        """The Jacobian ``∂f_i/∂x_j`` at a point, shape ``(m, n)`` (last two axes for a batch)."""
        return self.value_and_jacobian(point, params, **kwargs)[1]

    def jacobian_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        """The Jacobian's structural nonzeros ``(rows, cols)`` (int64, row-major sorted; an output
        per row, a variable per column in ``variables`` order), read off the DAG
        (:mod:`symad.ad.sparsity`): an entry may happen to be 0 at a point, none is missed.

        >>> import symad
        >>> F = symad.compile("x1*x2 - 1; x2 + sin(x3); 4")
        >>> F.jacobian_pattern()
        (array([0, 0, 1, 1]), array([0, 1, 1, 2]))
        >>> F.jacobian_values([1, 2, 0])
        array([2., 1., 1., 1.])
        >>> F.sparse_jacobian([1, 2, 0]).toarray()
        array([[2., 1., 0.],
               [0., 1., 1.],
               [0., 0., 0.]])
        """
        with self._lock:
            pattern = getattr(self, "_pattern", None)
        if pattern is None:
            pattern = jacobian_pattern(self.graph, self.roots, Layout.of_scalars(self.wrt_nodes))
            with self._lock:
                self._pattern = pattern
        return pattern

    def jacobian_values(self, point: Any = None, params: Any = None, /, **kwargs: Any) -> np.ndarray:
        """The Jacobian's entries at :meth:`jacobian_pattern`'s positions (each entry's symbolic
        partial, compiled once into one program; a batch gives its shape followed by the entries)."""
        if self.params or params is not None:
            point, kwargs = self.with_params(point, params, kwargs)
        size = self.jacobian_pattern()[0].size
        out, shape = self.outputs_at(self._program("sparse_jacobian"), point, kwargs)
        if shape is None:
            return np.array(out[:size], dtype=float)
        return out[:, :size].reshape(*shape, size)

    def sparse_jacobian(self, point: Any = None, params: Any = None, /, **kwargs: Any) -> Any:
        """The Jacobian at one point as a ``scipy.sparse.csr_matrix`` of shape ``(m, n)`` (SciPy:
        ``pip install "symad[scipy]"``)."""
        values = self.jacobian_values(point, params, **kwargs)
        if values.ndim != 1:
            raise SymadError("sparse_jacobian takes one point (jacobian_values takes batches)")
        shape = getattr(self, "_jacobian_csr", None)
        if shape is None:
            shape = self._jacobian_csr = CsrShape(*self.jacobian_pattern(), (len(self.roots), len(self.variables)))
        return shape.matrix(values)

    def vjp(self, point: Any, u: Any, params: Any = None) -> np.ndarray:
        """``uᵀJ`` (``n`` numbers: the gradient of ``Σ u_i f_i``) without forming ``J``;
        ``point`` and ``u`` may be batches."""
        x, d = self.with_direction(point, u, params, len(self.roots), "a cotangent u")
        return self.outputs_with(self._program("vjp"), x, d)

    def jvp(self, point: Any, v: Any, params: Any = None) -> np.ndarray:
        """``J·v`` (``m`` numbers: each output's derivative along ``v``) without forming ``J``;
        ``point`` and ``v`` may be batches."""
        x, d = self.with_direction(point, v, params, len(self.variables), "a tangent v")
        return self.outputs_with(self._program("jvp"), x, d)


def function_of(doc: dict[str, Any], cls: type) -> Any:
    """The compiled function (of class ``cls``: Function or VectorFunction) a checked document holds."""
    variables, params = document.names(doc, "variables"), document.names(doc, "params") or ()
    backend = doc.get("backend", "auto")
    if variables is None or backend not in BACKENDS:
        raise document.DocumentError(f"a {doc.get('kind')} document needs its variables and a backend "
                                     f"({', '.join(BACKENDS)})")
    exprs = expressions_of(doc)
    fn = cls.rebuilt(exprs[0] if cls is Function else exprs, variables, bool(params), backend)
    if fn.params != params:
        raise document.DocumentError(f"the document's parameters {list(params)} are not its expression's other "
                                     f"variables {list(fn.params)}")
    return fn


def _rebuilt(cls: type, text: str) -> VectorFunction:
    """A pickled vector function (its document's text) compiled again."""
    return function_of(document.loads(text), cls)
