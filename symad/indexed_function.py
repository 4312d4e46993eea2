"""A compiled expression whose sums stay loops: value and gradient over whole vectors.

:func:`symad.compile` returns one for an expression with a sum over more terms than unroll
(:data:`symad.core.binders.UNROLL_MAX_TERMS`).  Its variables are scalars and *vectors*: an
indexed variable ``x`` covers every index from the smallest to the largest its entries use, and
a point gives it as one array.  The gradient is built once, symbolically and still indexed
(:mod:`symad.ad.gather`), and evaluated with NumPy over the ranges (:mod:`symad.backends.arrays`).

>>> import numpy as np, symad
>>> f = symad.compile("n = 20000; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)")
>>> f.variables
('x[1..20000]',)
>>> value, grad = f.value_and_grad(np.ones(20000))
>>> value, float(abs(grad).max())
(0.0, 0.0)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from symad.ad.forward import forward
from symad.ad.gather import dense_coupling, hessian_band_nodes, hessian_bands, indexed_gradient
from symad.ad.sparse_values import Compression, EntryPlaces, band_places
from symad.ad.sparsity import CsrShape, Layout, hessian_pattern, scipy_sparse
from symad.backends.arrays import ArrayProgram
from symad.core import binders
from symad.core.dag import natural_key
from symad.core.errors import PointError, SymadError, VariableError
from symad.core.indexed import as_floats, expand_point, groups
from symad.core.printing import free_index_names, to_infix, to_texts
from symad.runtime import policy
from symad.runtime.loop_tiers import LoopTier, first_program
from symad.runtime.native_loops import WholeProgram, compiled_loops


class IndexedInputs:
    """What functions over loops share: their roots with ``x[k]`` read as the vector's entry, the
    vectors' spans, the variables differentiated (``wrt``; default: every variable and vector of
    one index) and the data (the others, given by name at each call), and how a point becomes
    the programs' inputs."""

    def __init__(self, graph: Any, roots: Sequence[int], wrt: Sequence[str] | None, backend: str):
        # x[k] beside a loop over x, or with x in wrt: the vector's entry (one variable, not two)
        vectors = {graph.data[n] for n in graph.reachable(roots) if graph.op[n] == "vector"}
        self.graph, self.roots = graph, binders.entries_of(graph, list(roots), {*(wrt or ()), *vectors})
        self.spans = binders.index_span(graph, self.roots)
        scalars = [n for n in graph.reachable(self.roots) if graph.op[n] == "var"]
        names = sorted([*(graph.data[n] for n in scalars), *self.spans], key=natural_key)  # type: ignore[misc]
        if wrt is None:  # what has one index or none; a vector of several indices is data
            wrt = [n for n in names if len(self.spans.get(n, ((0, 0),))) == 1]
        unknown = [w for w in wrt if w not in names]
        if unknown:
            raise VariableError(f"{unknown[0]} is not a variable or vector of the expression "
                                f"(it has {', '.join(names)})")
        self.wrt = tuple(sorted(wrt, key=natural_key))
        several = [w for w in self.wrt if len(self.spans.get(w, ())) > 1]
        if several:
            raise VariableError(f"{several[0]} has {len(self.spans[several[0]])} indices: gradients over it are "
                                "not supported yet (it can be data, given at each call)")
        self.data = tuple(n for n in names if n not in self.wrt)
        self._names = {*self.wrt, *self.data}
        self._scalar_nodes = {graph.data[n]: n for n in scalars}
        if backend not in policy.BACKENDS:
            raise SymadError(f"backend must be one of {', '.join(policy.BACKENDS)}, not {backend!r}")
        self.backend = backend
        self.size = sum(self.length(n) for n in self.wrt)
        # what each call reads, worked out once: a vector's shape and first indices, a flat point's runs
        self._shapes = {name: (tuple(high - low + 1 for low, high in dims), tuple(low for low, _ in dims))
                        for name, dims in self.spans.items()}
        self._runs, at = [], 0
        for name in self.wrt:
            self._runs.append((name, at, at + self.length(name), name in self.spans))
            at += self.length(name)

    def compiled(self, roots: list[int]) -> ArrayProgram:
        """The loops' program of ``roots`` (their loops as machine code unless the backend is Python)."""
        program = ArrayProgram(self.graph, roots)
        if self.backend != "python":
            program.runners = compiled_loops(self.graph, program, self._spans_and_tangents())
        return program

    def program(self, roots: list[int]) -> Runnable:
        """``roots``' values in one call of one machine-code function where they compile as a whole
        program (one compile, one call, whatever the number of loops; under ``auto``, a small one
        runs on NumPy while it compiles, :mod:`symad.runtime.loop_tiers`), else :meth:`compiled`'s
        program: each runs as ``run(scalars, vectors)``, with the same bits."""
        if self.backend != "python":
            distinct = list(dict.fromkeys(roots))  # a whole program writes one output a node
            whole = first_program(self.graph, distinct, self._spans_and_tangents(), self.backend)
            if whole is not None:
                return whole if len(distinct) == len(roots) else Repeated(whole, [distinct.index(r) for r in roots])
        return self.compiled(roots)

    def _spans_and_tangents(self) -> dict[str, Any]:
        return {**self.spans, **{name + "'": dims for name, dims in self.spans.items()}}

    def tangents(self) -> dict[int, int]:
        """Each variable's node and its tangent's (``x'``): the directions of forward mode."""
        g = self.graph
        return {(g.vector(name) if name in self.spans else self._scalar_nodes[name]):
                (g.vector(name + "'") if name in self.spans else g.var(name + "'")) for name in self.wrt}

    def inputs_with_direction(self, point: Any, direction: Any, data: Mapping[str, Any] | None,
                        what: str = "the direction") -> tuple[dict[int, float], dict[str, tuple[np.ndarray, tuple]]]:
        """The programs' inputs at ``point`` with ``direction`` (flat, in :attr:`variables` order)
        as the tangents ``x'``."""
        scalars, vectors = self.program_inputs(self.named(point, data, {}))
        flat = as_floats(direction).reshape(-1)
        if flat.shape != (self.size,):
            raise PointError(f"{what} has {flat.size:,} numbers; {', '.join(self.variables)} need {self.size:,}")
        at = 0
        for name in self.wrt:
            n = self.length(name)
            if name in self.spans:
                vectors[name + "'"] = (np.ascontiguousarray(flat[at:at + n]), vectors[name][1])
            else:
                scalars[self.graph.var(name + "'")] = float(flat[at])
            at += n
        return scalars, vectors

    def layout(self) -> Layout:
        """Where each variable sits in the flat vector of :attr:`variables`."""
        scalars, vectors, at = {}, {}, 0
        for name in self.wrt:
            if name in self.spans:
                low, high = self.spans[name][0]
                vectors[name] = (at, low, high)
            else:
                scalars[self._scalar_nodes[name]] = at
            at += self.length(name)
        return Layout(scalars, vectors, at)

    def length(self, name: str) -> int:
        """How many numbers variable ``name`` has in a flat point (a vector's entries, or 1)."""
        span = self.spans.get(name)
        return 1 if span is None else span[0][1] - span[0][0] + 1

    @property
    def variables(self) -> tuple[str, ...]:
        """What is differentiated, in the order of a flat point and of the gradient: a vector
        as ``x[lo..hi]``."""
        return tuple(f"{n}[{self.spans[n][0][0]}..{self.spans[n][0][1]}]" if n in self.spans else n
                     for n in self.wrt)

    def program_inputs(self, given: Mapping[str, Any]) -> tuple[dict[int, float], dict[str, tuple[np.ndarray, tuple]]]:
        """The values by name as the programs take them: scalars by node, vectors by name."""
        scalars: dict[int, float] = {}
        vectors: dict[str, tuple[np.ndarray, tuple[int, ...]]] = {}
        for name in (*self.wrt, *self.data):
            if name not in given:
                if name in self.spans:
                    raise PointError(f"the point has no value for the vector {name}: give "
                                     f"{_described(name, self.spans[name])}")
                raise PointError(f"the point has no value for {name}")
            value = given[name]
            if name in self.spans:
                shape, first = self._shapes[name]
                array = as_floats(value, name)
                if array.ndim == 0:  # one number for every entry, as the command line's x=1
                    array = np.full(shape, float(array))
                if array.shape != shape:
                    raise PointError(f"{name} has {_described(name, self.spans[name])}, not an array of shape "
                                     f"{array.shape}")
                vectors[name] = (array if array.flags.c_contiguous else np.ascontiguousarray(array), first)
            else:
                scalars[self._scalar_nodes[name]] = float(as_floats(value, name))
        return scalars, vectors

    def named(self, point: Any, data: Mapping[str, Any] | None, kwargs: Mapping[str, Any],
              strict: bool = False) -> dict[str, Any]:
        """The values by name, from a flat array in :attr:`variables` order or a mapping; an entry
        given on its own (``{"x": x, "x[3]": 2.0}``) replaces that entry of its vector.  Other names
        the expression does not use are left aside (a mapping of data may hold more), or with
        ``strict`` (the command line's point) refused."""
        given: dict[str, Any] = dict(data or {})
        given.update(kwargs)
        if isinstance(point, Mapping):
            given.update(point)
        elif point is not None:
            flat = as_floats(point).reshape(-1)
            if flat.shape != (self.size,):
                raise PointError(f"the point has {flat.size:,} numbers; {', '.join(self.variables)} "
                                 f"need {self.size:,}")
            for name, start, end, vector in self._runs:
                given[name] = flat[start:end] if vector else flat[start]
        extra = [name for name in given if name not in self._names]
        return self._with_entries(given, extra, strict) if extra else given

    def _with_entries(self, given: dict[str, Any], extra: list[str], strict: bool) -> dict[str, Any]:
        """``given`` with each entry among ``extra`` (``x[3]``) written into a copy of its vector,
        and a base name of entries kept as scalars (``y`` for ``y[1]``, ``y[2]``) spread over them
        as a function without loops does; with ``strict``, any other name refused."""
        spread = groups(sorted((n for n in self._names if n not in self.spans), key=natural_key))
        for name in [n for n in extra if n in spread]:
            twice = [m for m in spread[name] if m in given]
            if twice:
                raise PointError(f"{twice[0]} is given twice: as itself and in {name}")
            given.update(expand_point(spread[name], {name: given.pop(name)}))
            extra.remove(name)
        for name in extra:
            base, _, index = name.partition("[") if isinstance(name, str) else ("", "", "")
            dims = self.spans.get(base)
            if dims is None or len(dims) != 1 or not index.endswith("]") or not index[:-1].lstrip("-").isdigit():
                if strict:
                    raise VariableError(f"unknown variable {name} (the expression uses {', '.join(self.variables)})")
                continue
            (low, high), k = dims[0], int(index[:-1])
            if base not in given:
                raise PointError(f"{name} is given without {base}: give {base} too (one number for every "
                                 f"entry, or all of them), then the entries that differ")
            if not low <= k <= high:
                raise PointError(f"{name} is outside {base}[{low}..{high}]")
            vector = np.array(np.broadcast_to(as_floats(given[base]), (high - low + 1,)), dtype=np.float64)
            vector[k - low] = as_floats(given.pop(name))
            given[base] = vector
        return given


class Repeated:
    """A program of distinct roots run for a list of roots with repeats (two partials that are one
    node): ``run`` gives each position its root's value, a repeated array as a copy of its own."""

    def __init__(self, program: WholeProgram | LoopTier, at: list[int]):
        self.program, self.at = program, at

    def run(self, scalars: Mapping[int, float], vectors: Mapping[str, Any]) -> list[Any]:
        parts = self.program.run(scalars, vectors)
        out, seen = [], set()
        for k in self.at:
            part = parts[k]
            out.append(part.copy() if k in seen and isinstance(part, np.ndarray) else part)
            seen.add(k)
        return out


Runnable = WholeProgram | LoopTier | ArrayProgram | Repeated  # what IndexedInputs.program gives: run(scalars, vectors)


class IndexedFunction(IndexedInputs):
    """Value and gradient of an expression with indexed sums; ``wrt`` names what is differentiated
    (default: every variable and vector); the others are data, given by name at each call.
    The value and gradient compile at construction, or with ``prepare=False`` at the first call
    (a function asked only for its Hessian never compiles them)."""

    def __init__(self, expr: Any, wrt: Sequence[str] | None = None, backend: str = "auto", *,
                 prepare: bool = True):
        self.expr = expr
        super().__init__(expr.graph, [expr.id], wrt, backend)
        graph, (root,) = self.graph, self.roots
        self.root = root
        if graph.op[root] == "each":
            raise SymadError("each(...) is a vector of values: symad.compile gives it as an "
                             "IndexedVectorFunction, with Jacobians")
        partials, vectors = indexed_gradient(graph, root)
        outputs = [root]
        for name in self.wrt:
            outputs.append(vectors[name].node if name in self.spans else partials[self._scalar_nodes[name]])
        self._outputs = outputs
        self._first: WholeProgram | LoopTier | None = None  # value and gradient in one whole program, where it compiles
        self._loops: ArrayProgram | None = None  # the same, each loop on its own: where no whole program compiles
        self._run: Callable[..., list[Any]] | None = None
        if prepare:  # (else compiled at the first call: a Lagrangian only asked for its Hessian never is)
            self._prepare()
        self._hvp: ArrayProgram | None = None  # Hessian-vector products, built on first use
        self._pattern: tuple[np.ndarray, np.ndarray] | None = None  # the Hessian's, on first use
        self._compression: Compression | None = None
        self._bands: EntryPlaces | None = None
        self._csr: CsrShape | None = None
        self._band_program: Runnable | None = None
        one = self.wrt[0] if len(self.wrt) == 1 and not self.data and self.wrt[0] in self.spans else None
        self._one_vector, self._one_first = one, (self.spans[one][0][0],) if one else None

    def _prepare(self) -> Callable[..., list[Any]]:
        """The value and gradient's program: one machine-code function where it compiles (the
        loops' program only where it does not)."""
        if self._run is None:
            program = self.program(self._outputs)
            self._first = program.program if isinstance(program, Repeated) else \
                program if isinstance(program, (WholeProgram, LoopTier)) else None
            if isinstance(program, ArrayProgram):
                self._loops = program
            self._run = program.run
        return self._run

    def prepare(self) -> IndexedFunction:
        """Build the value and gradient's program now and wait for its machine code (under
        ``auto`` a program met for the first time otherwise serves its first calls on NumPy
        arrays while the code compiles: the same numbers, more slowly)."""
        self._prepare()
        self._whole  # noqa: B018 - waited for
        return self

    @property
    def _whole(self) -> WholeProgram | None:
        """The value and gradient's whole program of machine code, if one compiles (waiting for a
        compile in the background)."""
        first = self._first
        return first.settled() if isinstance(first, LoopTier) else first

    @property
    def _program(self) -> ArrayProgram:
        """The value and gradient's loops' program (each loop compiled on its own), built on first use:
        it runs only where no whole program compiles."""
        if self._loops is None:
            self._loops = self.compiled(self._outputs)
        return self._loops

    def hessp(self, point: Any, direction: Any, data: Mapping[str, Any] | None = None) -> np.ndarray:
        """The Hessian times ``direction`` (flat, in :attr:`variables` order) at ``point``: forward
        mode over the indexed gradient (each vector's row of products one ``each`` node again),
        never the n x n matrix.  For ``scipy.optimize.minimize(..., hessp=f.hessp)``."""
        if self._hvp is None:
            (roots,) = forward(self.graph, self._outputs[1:], [self.tangents()])
            self._hvp = self.compiled(roots)
        parts = self._hvp.run(*self.inputs_with_direction(point, direction, data))
        return np.concatenate([np.reshape(np.broadcast_to(p, (self.length(w),)), -1) for p, w in zip(parts, self.wrt)])

    # ------------------------------------------------------------------ sparse Hessians
    def hessian_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        """The Hessian's structural nonzeros, lower triangle: ``(rows, cols)`` int64 arrays with
        ``rows >= cols``, row-major sorted, positions in the flat vector of :attr:`variables`; read
        from each loop's entries and their offsets (a band for Rosenbrock), never unrolled.

        >>> import symad
        >>> f = symad.compile("n = 20000; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)")
        >>> rows, cols = f.hessian_pattern()
        >>> rows.size, rows[:5], cols[:5]
        (39999, array([0, 1, 1, 2, 2]), array([0, 0, 1, 1, 2]))
        """
        if self._pattern is None:
            self._pattern = hessian_pattern(self.graph, self.root, self.layout())
        return self._pattern

    def hessian_values(self, point: Any = None, data: Mapping[str, Any] | None = None) -> np.ndarray:
        """The Hessian's entries at :meth:`hessian_pattern`'s positions, exact.  The bands of
        :meth:`hessian_text` (an indexed expression each) computed as loops, all in one program;
        where they do not hold every entry (loops nested in the gradient's body), forward over
        reverse (:meth:`hessp`) along one direction per colour of the columns (three for a
        tridiagonal Hessian, whatever n; a variable met by a whole vector one of its own).
        ``data``: as for :meth:`value_and_grad`."""
        if self._bands is None:
            bands = hessian_band_nodes(self.graph, self.wrt, self.spans, dict(zip(self.wrt, self._outputs[1:])),
                                       self._scalar_nodes)
            self._bands = band_places(self.graph, bands, self.layout(), *self.hessian_pattern())
            if self._bands.covers:
                self._band_program = self.program(self._bands.nodes) if self._bands.nodes else None
        if self._bands.covers:
            if self._band_program is None:
                return np.zeros(self._bands.count)
            return self._bands.values(self._band_program.run(*self.program_inputs(self.named(point, data, {}))))
        if self._compression is None:
            self._compression = Compression(*self.hessian_pattern(), self.size, self.size, lower=True)
        return self._compression.values(lambda d: self.hessp(point, d, data))

    def sparse_hessian(self, point: Any = None, data: Mapping[str, Any] | None = None) -> Any:
        """The Hessian as a ``scipy.sparse.csr_matrix``, full and symmetric (SciPy:
        ``pip install "symad[scipy]"``)."""
        scipy_sparse()
        if self._csr is None:
            self._csr = CsrShape(*self.hessian_pattern(), (self.size, self.size), mirrored=True)
        return self._csr.matrix(self.hessian_values(point, data))

    def hessian(self, point: Any = None, data: Mapping[str, Any] | None = None) -> np.ndarray:
        """The Hessian as a dense ``n x n`` array (for small n; :meth:`sparse_hessian` for large)."""
        rows, cols = self.hessian_pattern()
        values = self.hessian_values(point, data)
        dense = np.zeros((self.size, self.size))
        dense[rows, cols] = values
        dense[cols, rows] = values
        return dense

    def hessian_text(self) -> list[tuple[str, str, str, tuple[int, int] | None]]:
        """The Hessian as a few indexed expressions, ``(row, column, text, range)`` each:
        ``("x[k]", "x[k+1]", "...", (1, n-1))`` is ∂²f/∂x[k]∂x[k+1] for k = 1..n-1 (the range's
        edges as explicit cases in the text, as in :meth:`gradient_text`); a scalar's row or column
        is its name and a range None when no index runs.  Each pair once: a vector with itself
        from the diagonal up (offsets >= 0), two variables in :attr:`variables` order.  A Hessian
        that is not bands (``sum(i = 1..n, x[i])^2``, a product's: every entry coupled with every
        other) is refused with a SymadError, never printed in part.

        >>> import symad
        >>> f = symad.compile("n = 20000; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)")
        >>> [(row, col, rng) for row, col, _, rng in f.hessian_text()]
        [('x[k]', 'x[k]', (1, 20000)), ('x[k]', 'x[k+1]', (1, 19999))]
        """
        bands = self.hessian_roots()
        _, texts = to_texts(self.graph, [node for _, _, node, _ in bands], "inline", index_names=["k"])
        return [(row, col, text, span) for (row, col, _, span), text in zip(bands, texts)]

    def hessian_roots(self) -> list[tuple[str, str, int, tuple[int, int] | None]]:
        """The rows of :meth:`hessian_text` with each band's node (in ``self.graph``, index ``k``
        free where a range runs) in place of its text; a SymadError where a row is not bands."""
        partials = dict(zip(self.wrt, self._outputs[1:]))
        dense = dense_coupling(self.graph, self.wrt, self.spans, partials)
        if dense is not None:
            name, loop = dense
            loop_text = to_infix(self.graph, loop, index_names=free_index_names(self.graph, loop, ["k"]))
            raise SymadError(f"the Hessian is not a few bands: df/d{name}[k] holds {loop_text}, "
                             f"which couples {name}[k] with every entry it reads (a dense block); Hessian-vector "
                             "products (hessp) use it without the matrix, and its nonzeros at a point "
                             "(hessian_values; symad hessian --at) are computed where they are not too many")
        bands = hessian_bands(self.graph, self.wrt, self.spans, partials, self._scalar_nodes)
        if not bands:  # f is linear: its Hessian is 0, said as each variable's diagonal (not as nothing)
            zero = self.graph.const(0.0)
            bands = [(f"{name}[k]", f"{name}[k]", zero, self.spans[name][0]) if name in self.spans
                     else (name, name, zero, None) for name in self.wrt]
        return bands

    def __repr__(self) -> str:
        return f"IndexedFunction({', '.join(self.variables)})"

    def value(self, point: Any = None, data: Mapping[str, Any] | None = None, /, **kwargs: Any) -> float:
        """The value at ``point`` (a flat array, or a mapping by name)."""
        return self.value_and_grad(point, data, **kwargs)[0]

    def grad(self, point: Any = None, data: Mapping[str, Any] | None = None, /, **kwargs: Any) -> np.ndarray:
        """The gradient at ``point``, flat, in :attr:`variables` order."""
        return self.value_and_grad(point, data, **kwargs)[1]

    def value_and_grad(self, point: Any = None, data: Mapping[str, Any] | None = None, /,
                       **kwargs: Any) -> tuple[float, np.ndarray]:
        """``(value, gradient)``: the gradient flat, each vector's partials in index order."""
        run = self._run or self._prepare()
        if (self._one_vector is not None and data is None and not kwargs and type(point) is np.ndarray
                and point.dtype == np.float64 and point.shape == (self.size,) and point.flags.c_contiguous):
            # what an optimizer passes, a flat float64 array over one vector: read as it is
            value, *partials = run({}, {self._one_vector: (point, self._one_first)})
        else:
            scalars, vectors = self.program_inputs(self.named(point, data, kwargs))
            value, *partials = run(scalars, vectors)
        if len(partials) == 1 and isinstance(partials[0], np.ndarray):  # one vector: its array, not a copy
            return float(value), partials[0]
        return float(value), np.concatenate([np.reshape(p, -1) for p in partials]) if partials else np.empty(0)

    def gradient_text(self) -> list[tuple[str, str, tuple[int, int] | None]]:
        """``(label, text, range)`` of each partial: ``("x[k]", "...", (1, n))`` for a vector, still
        indexed (``k`` runs over the range), ``("y", "...", None)`` for a scalar."""
        return self.gradient_listing("inline")[1]

    def gradient_listing(self, form: str = "auto", rows: Sequence[tuple[str, int, tuple[int, int] | None]] | None
                         = None) -> tuple[list[tuple[str, str]], list[tuple[str, str, tuple[int, int] | None]]]:
        """The partials printed together, as ``symad diff`` lists them: ``(definitions, rows)``,
        the parts they share named once (``("_1", "prod(i = 1..n, x[i])")``, where ``form`` is
        ``"auto"`` and a loop would print more than once, or the text would be much larger than
        the DAG: :func:`symad.core.printing.to_texts`) and a row of :meth:`gradient_text` a
        partial, using those names.  ``rows``: the partials to print, as :meth:`gradient_roots`
        gives them (default: every one)."""
        rows = self.gradient_roots() if rows is None else rows
        definitions, texts = to_texts(self.graph, [root for _, root, _ in rows], form, index_names=["k"])
        return definitions, [(label, text, span) for (label, _, span), text in zip(rows, texts)]

    def entry_partial(self, name: str, index: int) -> int:
        """``∂f/∂name[index]`` as a node of ``self.graph``: the vector's indexed partial at
        ``k = index``, folded (0 outside the vector's range)."""
        node = dict(zip(self.wrt, self._outputs[1:]))[name]
        level, low, high = self.graph.data[node]  # type: ignore[misc]
        if not low <= index <= high:
            return self.graph.const(0.0)
        body = self.graph.args[node][0]
        own = [n for n in self.graph.reachable([body]) if self.graph.op[n] == "index" and self.graph.data[n] == level]
        return binders.substitute(self.graph, body, {own[0]: self.graph.const(float(index))}) if own else body

    def gradient_roots(self) -> list[tuple[str, int, tuple[int, int] | None]]:
        """``(label, node, range)`` of each partial, in ``self.graph``: a vector's partial as the
        body of its ``each`` (index ``k`` free, running over the range), a scalar's as itself."""
        rows: list[tuple[str, int, tuple[int, int] | None]] = []
        for name, node in zip(self.wrt, self._outputs[1:]):  # the partials, built once with the function
            if name in self.spans:
                _, low, high = self.graph.data[node]  # type: ignore[misc]
                rows.append((f"{name}[k]", self.graph.args[node][0], (low, high)))
            else:
                rows.append((name, node, None))
        return rows


def _described(name: str, dims: Sequence[tuple[int, int]]) -> str:
    """``20,000 entries (x[1] to x[20000])``, or the shape of a vector of several indices."""
    if len(dims) == 1:
        ((low, high),) = dims
        return f"{high - low + 1:,} entries ({name}[{low}] to {name}[{high}])"
    shape = " x ".join(f"{high - low + 1:,}" for low, high in dims)
    first = ", ".join(str(low) for low, _ in dims)
    last = ", ".join(str(high) for _, high in dims)
    return f"{shape} entries ({name}[{first}] to {name}[{last}])"
