"""Constrained problems written with loops: an objective with sums, constraint families ``each(i=..., c)``.

Each piece is compiled on its own (its text may define its own constants, ``N = 2000; ...``):
the objective (a :class:`~symad.indexed_function.IndexedFunction` when a sum stays a loop, else
a written-out :class:`~symad.function.Function`), each scalar constraint the same way, and each
family ``each(k = lo..hi, c_k)`` twice: an :class:`~symad.indexed_vector_function.IndexedVectorFunction`
gives its values and sparse Jacobian, and its Lagrangian ``sum(k = lo..hi, λ[k]*c_k)``, an indexed
function of the variables with the multipliers ``λ`` as data, its part of the Lagrangian's Hessian
(:meth:`~symad.indexed_function.IndexedFunction.hessian_values`).  Patterns are read off the loops'
entries, never unrolled; values come from Jacobian- and Hessian-vector products along a few colours.

The problem's variables are every scalar and every vector entry the pieces use, a vector
``x`` covering the indices from the smallest to the largest any piece uses, in the order of
their names (``p[1..N+1]``, then ``u[1..N]``, ...); a piece's own variables are a part of them.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from symad.core import binders, names
from symad.core.dag import Graph, natural_key
from symad.core.errors import PointError, SymadError, VariableError
from symad.core.indexed import as_floats
from symad.expr import Expr, parse
from symad.function import Function
from symad.indexed_function import IndexedFunction
from symad.indexed_vector_function import IndexedVectorFunction
from symad.optimize.conditions import as_constraint, check_objective
from symad.optimize.constraints import KINDS
from symad.optimize.held import Held, reads
from symad.optimize.problem import Problem, box, has_loops, substitute
from symad.optimize.sparse import Union

_LABEL = re.compile(r"(?P<base>[^\[\]]+)\[(?P<lo>-?\d+)(?:\.\.(?P<hi>-?\d+))?\]")
MULTIPLIERS = "lam'"  # the family's multipliers in its Lagrangian: a name no parsed text has (the quote)


def _ranges(labels: Sequence[str]) -> list[tuple[str, int, int] | tuple[str, None, None]]:
    """A compiled function's variables (``x[1..5]``, ``x[3]``, ``y``) as ``(base, lo, hi)``, a
    scalar as ``(name, None, None)``."""
    out: list[tuple[str, int, int] | tuple[str, None, None]] = []
    for label in labels:
        m = _LABEL.fullmatch(label)
        if m is None:
            out.append((label, None, None))
        else:
            lo = int(m["lo"])
            out.append((m["base"], lo, int(m["hi"]) if m["hi"] is not None else lo))
    return out


class Layout:
    """The problem's flat vector of variables: each scalar once, each vector as one run of its
    entries from the smallest index any piece uses to the largest."""

    def __init__(self, label_lists: Sequence[Sequence[str]]):
        spans: dict[str, list[int]] = {}
        scalars: set[str] = set()
        for labels in label_lists:
            for base, lo, hi in _ranges(labels):
                if lo is None:
                    scalars.add(base)
                else:
                    span = spans.setdefault(base, [lo, hi])  # type: ignore[list-item]
                    span[0], span[1] = min(span[0], lo), max(span[1], hi)  # type: ignore[type-var]
        both = sorted(scalars & set(spans))
        if both:
            raise VariableError(f"{both[0]} is both a scalar and a vector ({both[0]}[...]) in the problem")
        self.offsets: dict[str, int] = {}
        self.spans = {b: (lo, hi) for b, (lo, hi) in spans.items()}
        at = 0
        for base in sorted([*scalars, *spans], key=natural_key):
            self.offsets[base] = at
            at += spans[base][1] - spans[base][0] + 1 if base in spans else 1
        self.size = at

    def positions(self, labels: Sequence[str]) -> np.ndarray:
        """The positions of a piece's flat variables (in its own order) in the problem's vector."""
        parts = []
        for base, lo, hi in _ranges(labels):
            start = self.offsets[base]
            if lo is None:
                parts.append(np.array([start], dtype=np.int64))
            else:
                first = start + lo - self.spans[base][0]
                parts.append(np.arange(first, first + hi - lo + 1, dtype=np.int64))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    @property
    def bases(self) -> list[str]:
        return list(self.offsets)

    def labels(self) -> list[str]:
        """Every variable's name, ``x[k]`` for a vector's entries, in the flat order."""
        return list(self.each_label())

    def each_label(self) -> Iterator[str]:
        """:meth:`labels` one at a time."""
        for base in self.offsets:
            if base in self.spans:
                lo, hi = self.spans[base]
                yield from (f"{base}[{k}]" for k in range(lo, hi + 1))
            else:
                yield base

    def described(self) -> str:
        """``p[1..2001], u[1..2000], T``."""
        return ", ".join(f"{b}[{self.spans[b][0]}..{self.spans[b][1]}]" if b in self.spans else b
                         for b in self.offsets)

    def values(self, given: Mapping[str, Any] | Any, what: str) -> np.ndarray:
        """A vector over the layout from ``{base: number or array, name: number, "x[3]": number}``,
        or a flat sequence; every variable must be given (``what`` says which argument this is)."""
        if not isinstance(given, Mapping):
            flat = as_floats(given, what=what).reshape(-1)
            if flat.shape != (self.size,):
                raise PointError(f"{what} needs {self.size:,} numbers ({self.described()}), got {flat.size:,}")
            return flat.copy()
        out = np.full(self.size, math.nan)
        done = np.zeros(self.size, dtype=bool)
        for name, value in given.items():
            key = name.strip()
            entry = _LABEL.fullmatch(key)
            if key in self.spans:
                lo, hi = self.spans[key]
                arr = as_floats(value, key, what=what)
                if arr.ndim > 1 or (arr.ndim == 1 and arr.size != hi - lo + 1):
                    raise PointError(f"{what}: {key} has {hi - lo + 1:,} entries ({key}[{lo}] to {key}[{hi}]), "
                                     f"not {arr.size:,} numbers")
                at = slice(self.offsets[key], self.offsets[key] + hi - lo + 1)
            elif key in self.offsets:
                arr, at = as_floats(value, key, what=what), slice(self.offsets[key], self.offsets[key] + 1)
            elif entry is not None and entry["base"] in self.spans and entry["hi"] is None:
                base, k = entry["base"], int(entry["lo"])
                lo, hi = self.spans[base]
                if not lo <= k <= hi:
                    raise VariableError(f"{what}: {key} is outside {base}[{lo}..{hi}]")
                arr = as_floats(value, key, what=what)
                at = slice(self.offsets[base] + k - lo, self.offsets[base] + k - lo + 1)
            else:
                raise VariableError(f"{what}: {key} is not a variable of the problem ({self.described()})")
            out[at] = arr
            done[at] = True
        if not done.all():
            missing = self.labels()[int(np.flatnonzero(~done)[0])]
            raise PointError(f"{what} has no value for {missing} (the problem's variables: {self.described()})")
        return out

    def point(self, x: np.ndarray) -> dict[str, Any]:
        """The solution by name: a vector's entries as one array, a scalar as a float."""
        out: dict[str, Any] = {}
        for base, at in self.offsets.items():
            if base in self.spans:
                lo, hi = self.spans[base]
                out[base] = x[at:at + hi - lo + 1].copy()
            else:
                out[base] = float(x[at])
        return out

    def where(self, name: str, what: str = "bounds") -> slice:
        """The positions of a variable, a whole vector or one entry ``x[3]`` in the flat vector
        (``what`` names the argument in the error for any other name)."""
        key = names.normal(name)
        if key in self.offsets:
            lo, hi = self.spans.get(key, (0, 0))
            return slice(self.offsets[key], self.offsets[key] + hi - lo + 1)
        m = _LABEL.fullmatch(key)
        if m is not None and m["hi"] is None and m["base"] in self.spans:
            lo, hi = self.spans[m["base"]]
            k = int(m["lo"])
            if lo <= k <= hi:
                return slice(self.offsets[m["base"]] + k - lo, self.offsets[m["base"]] + k - lo + 1)
        raise VariableError(f"{what}: {key} is not a variable of the problem ({self.described()})")

    def label(self, position: int) -> str:
        """The name of the variable at ``position`` of the flat vector (``x[7]`` or ``y``)."""
        for base, at in self.offsets.items():
            lo, hi = self.spans.get(base, (0, 0))
            if at <= position <= at + hi - lo:
                return f"{base}[{lo + position - at}]" if base in self.spans else base
        raise IndexError(position)

    def box(self, bounds: Any, what: str = "bounds") -> tuple[np.ndarray, np.ndarray]:
        """Bounds as arrays ``(lower, upper)`` over the flat vector, filled by slices: from
        ``{name: (lo, hi)}`` (``None``: no bound), where a vector's name bounds each of its entries
        and ``x[3]`` one entry (over its vector's bound, whatever the order given), or from one
        ``(lo, hi)`` pair per variable in the flat order."""
        if bounds is not None and not isinstance(bounds, Mapping):
            return box(bounds, self.labels())
        lower, upper = np.full(self.size, -math.inf), np.full(self.size, math.inf)
        for name, pair in sorted((bounds or {}).items(), key=lambda item: "[" in item[0]):
            at = self.where(name, what)
            lo, hi = pair
            lower[at] = -math.inf if lo is None else float(as_floats(lo, name))
            upper[at] = math.inf if hi is None else float(as_floats(hi, name))
        bad = np.flatnonzero(~(lower <= upper))
        if bad.size:
            k = int(bad[0])
            raise PointError(f"{what}: empty for {self.label(k)}: {lower[k]:g} > {upper[k]:g}")
        return lower, upper


class Labels(Sequence[str]):
    """A layout's variable names in the flat order (``x[k]`` for a vector's entries), each made
    when asked for: a list of a million of them is 60 MB a problem never reads."""

    def __init__(self, layout: Layout):
        self._layout = layout

    def __len__(self) -> int:
        return self._layout.size

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self._layout.label(i) for i in range(*k.indices(len(self)))]
        k = operator.index(k)
        if not -len(self) <= k < len(self):
            raise IndexError(k)
        return self._layout.label(k % len(self))

    def __iter__(self) -> Iterator[str]:
        return self._layout.each_label()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (Labels, list, tuple)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Labels({self._layout.described()})"


class Scalar:
    """A scalar piece (the objective, or one constraint): value, gradient and Hessian over its
    own variables, at its ``take`` positions of the problem's vector; loops kept, or written out
    (:class:`~symad.function.Function`, the held values substituted)."""

    def __init__(self, expr: Expr, held: Held | None = None):
        self.args: tuple[Any, ...] = ()  # what each call passes after the point: the held values it reads
        if not has_loops(expr):
            self.fn: Any = Function(substitute(expr, held.entries(expr.variables)) if held else expr)
        else:
            reader = reads(expr)
            mine = held.names_in(reader) if held else []
            self.fn = IndexedFunction(expr, wrt=[w for w in reader.wrt if w not in mine]) if mine else \
                IndexedFunction(expr)
            self.args = (held.data_for(reader),) if held and mine else ()
        self.labels = list(self.fn.variables)

    def place(self, layout: Layout) -> None:
        self.take = layout.positions(self.labels)
        rows, cols = self.fn.hessian_pattern()
        self.h_rows, self.h_cols = self.take[rows], self.take[cols]  # take is increasing: still lower

    def fg(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = self.fn.value_and_grad(np.ascontiguousarray(x[self.take]), *self.args)
        return float(f), np.asarray(g, dtype=float)

    def hessian_values(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.fn.hessian_values(np.ascontiguousarray(x[self.take]), *self.args), dtype=float)


class Family:
    """A constraint family ``each(k = lo..hi, c_k)``: its values and sparse Jacobian from an
    :class:`~symad.indexed_vector_function.IndexedVectorFunction`, its part of the Lagrangian's
    Hessian from its Lagrangian ``sum(k, λ[k]*c_k)``, an indexed function of the variables with
    ``λ`` as data (and the held values it reads)."""

    def __init__(self, expr: Expr, held: Held | None = None):
        g: Graph = expr.graph
        level, lo, hi = binders.range_of(g, expr.id)
        body = binders.body_of(g, expr.id)
        if binders.levels(g)[body] < level:
            raise SymadError(f"each(...) of a body without its index is {hi - lo + 1} copies of one "
                             f"constraint: give it once")
        reader = reads(expr)
        mine = held.names_in(reader) if held else []
        self.data = held.data_for(reader) if held and mine else {}
        self.fn = IndexedVectorFunction([expr], wrt=[w for w in reader.wrt if w not in mine] if mine else None)
        self.m = len(self.fn)
        self.labels = list(self.fn.variables)
        weight = binders.item(g, g.vector(MULTIPLIERS), g.index(level))
        lagrangian = binders.reduce(g, "sum", level, lo, hi, g.make("mul", weight, body))
        # (only its Hessian is asked for: its value and gradient compile if ever called)
        self.lagrangian = IndexedFunction(Expr(g, lagrangian), wrt=list(self.fn.wrt), prepare=False)
        self._last: tuple[bytes, np.ndarray, np.ndarray] | None = None  # (point, values, Jacobian's)

    def place(self, layout: Layout, row: int) -> None:
        """Where the family's variables sit in the problem's vector, its rows from ``row`` on."""
        self.take = layout.positions(self.labels)
        rows, cols = self.fn.jacobian_pattern()
        self.j_rows, self.j_cols = rows + row, self.take[cols]
        rows, cols = self.lagrangian.hessian_pattern()
        take = layout.positions(list(self.lagrangian.variables))
        hr, hc = take[rows], take[cols]
        self.h_rows, self.h_cols = np.maximum(hr, hc), np.minimum(hr, hc)
        self._take_l = take

    def _at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values and the Jacobian's at ``x``, from one program, kept for the last point (an
        optimizer asks for both at each new point, one after the other)."""
        own = np.ascontiguousarray(x[self.take])
        key = own.tobytes()  # (the bits: -0.0 is not 0.0 to every function)
        if self._last is None or self._last[0] != key:
            values, jacobian = self.fn.value_and_jacobian_values(own, self.data or None)
            self._last = (key, np.asarray(values, dtype=float), np.asarray(jacobian, dtype=float))
        return self._last[1], self._last[2]

    def values(self, x: np.ndarray) -> np.ndarray:
        return self._at(x)[0].copy()

    def jacobian_values(self, x: np.ndarray) -> np.ndarray:
        return self._at(x)[1].copy()

    def hessian_values(self, x: np.ndarray, mu: np.ndarray) -> np.ndarray:
        return np.asarray(self.lagrangian.hessian_values(np.ascontiguousarray(x[self._take_l]),
                                                         {MULTIPLIERS: mu, **self.data}), dtype=float)


class LoopProblem:
    """A constrained problem with loops, as IPOPT and trust-constr take it: the objective's value,
    gradient and Hessian, the constraints' values and sparse Jacobian, the Lagrangian's sparse
    Hessian, over :class:`Layout`'s flat vector.  ``fixed`` and ``params`` (``{name: value}``):
    whole names held at their values (:mod:`symad.optimize.held`), given to each piece that reads
    them as data."""

    def __init__(self, fun: str | Expr, constraints: Any, bounds: Any, fixed: Mapping[str, Any] | None = None,
                 params: Mapping[str, Any] | None = None):
        objective = parse(fun, Graph()) if isinstance(fun, str) else fun
        check_objective(objective)
        read = _read(constraints)
        values = None
        if fixed or params:
            pieces = [objective, *(e for _, e in read)]
            values = Held({**(fixed or {}), **(params or {})}, [reads(e) for e in pieces if has_loops(e)],
                          written=[v for e in pieces if not has_loops(e) for v in e.variables])
        self.objective = Scalar(objective, values)
        self.kinds: list[str] = []
        self.pieces: list[Scalar | Family] = []
        for kind, expr in read:
            self.kinds.append(kind)
            self.pieces.append(Family(expr, values) if expr.op == "each" else Scalar(expr, values))
        self.layout = Layout([self.objective.labels, *(p.labels for p in self.pieces)])
        self.names = self.layout.labels()
        self.objective.place(self.layout)
        row = 0
        self.rows: list[slice] = []
        for piece in self.pieces:
            m = piece.m if isinstance(piece, Family) else 1
            if isinstance(piece, Family):
                piece.place(self.layout, row)
            else:
                piece.place(self.layout)
            self.rows.append(slice(row, row + m))
            row += m
        self.m = row
        self.eq = np.zeros(self.m, dtype=bool)
        for kind, rows in zip(self.kinds, self.rows):
            self.eq[rows] = kind == "eq"
        self.lower, self.upper = self.layout.box(bounds)
        self.bounded = bool(np.isfinite(self.lower).any() or np.isfinite(self.upper).any())
        self.union = Union([(self.objective.h_rows, self.objective.h_cols),
                            *((p.h_rows, p.h_cols) for p in self.pieces)], self.layout.size)
        j_rows, j_cols = [], []
        for piece, rows in zip(self.pieces, self.rows):
            if isinstance(piece, Family):
                j_rows.append(piece.j_rows)
                j_cols.append(piece.j_cols)
            else:
                j_rows.append(np.full(piece.take.size, rows.start, dtype=np.int64))
                j_cols.append(piece.take)
        self.jacobian = (np.concatenate(j_rows) if j_rows else np.zeros(0, dtype=np.int64),
                         np.concatenate(j_cols) if j_cols else np.zeros(0, dtype=np.int64))
        self.nfev = self.njev = self.nhev = 0

    # ------------------------------------------------------------------ what the solvers call
    def start(self, x0: Any) -> np.ndarray:
        x = self.layout.values(x0, "x0")
        return np.clip(x, self.lower, self.upper) if self.bounded else x

    def point(self, x: np.ndarray) -> dict[str, Any]:
        return self.layout.point(x)

    def fg(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        self.nfev += 1
        self.njev += 1
        f, g_local = self.objective.fg(x)
        g = np.zeros(self.layout.size)
        g[self.objective.take] = g_local
        return f, g

    def values(self, x: np.ndarray) -> np.ndarray:
        out = np.empty(self.m)
        for piece, rows in zip(self.pieces, self.rows):
            out[rows] = piece.values(x) if isinstance(piece, Family) else piece.fg(x)[0]
        return out

    def jacobian_values(self, x: np.ndarray) -> np.ndarray:
        parts = [p.jacobian_values(x) if isinstance(p, Family) else p.fg(x)[1] for p in self.pieces]
        return np.concatenate(parts) if parts else np.zeros(0)

    def hessian_values(self, x: np.ndarray, sigma: float, mu: np.ndarray) -> np.ndarray:
        """``σ∇²f + Σ μ_i ∇²c_i`` on :attr:`union`'s pattern (IPOPT's convention for ``μ``)."""
        self.nhev += 1
        parts = [sigma * self.objective.hessian_values(x)]
        for piece, rows in zip(self.pieces, self.rows):
            if isinstance(piece, Family):
                parts.append(piece.hessian_values(x, np.ascontiguousarray(mu[rows])))
            else:
                parts.append(float(mu[rows.start]) * piece.hessian_values(x))
        return self.union.combine(parts)

    def pgrad(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        return x - np.clip(x - g, self.lower, self.upper) if self.bounded else g


def _read(specs: Any) -> list[tuple[str, Expr]]:
    """``(kind, expression)`` pairs, each text parsed into a graph of its own."""
    if specs is None:
        return []
    if isinstance(specs, (tuple, Mapping)):
        specs = [specs]
    out = []
    for spec in specs:
        kind, fun = (spec.get("type"), spec.get("fun")) if isinstance(spec, Mapping) else spec
        if kind not in KINDS:
            raise SymadError(f"a constraint's kind is \"eq\" (expression = 0) or \"ineq\" (expression >= 0), "
                             f"not {kind!r:.30}")
        expr = parse(fun, Graph()) if isinstance(fun, str) else fun
        out.append(as_constraint(kind, expr))
    return out


class LoopObjective(Problem):
    """An objective whose sums stay loops, for symad's own methods (``newton`` by Hessian-vector
    products, ``trust-ncg``, ``gd``, ``adam`` ...): the value, gradient and Hessian-vector products
    of its :class:`~symad.indexed_function.IndexedFunction`, over :class:`Layout`'s flat vector.
    ``fixed`` and ``params`` (``{name: value}``, a vector's value an array or one number for every
    entry) are held: given to the loops as data at each call, not variables of the problem."""

    def __init__(self, expr: Expr, bounds: Any, fixed: Mapping[str, Any] | None = None,
                 params: Mapping[str, Any] | None = None):
        check_objective(expr)
        self.expr = expr
        self.data: dict[str, Any] = {}
        if fixed or params:
            reader = reads(expr)
            held = Held({**(fixed or {}), **(params or {})}, [reader], "the objective")
            self.fn = IndexedFunction(expr, wrt=[w for w in reader.wrt if w not in held.values])
            self.data = held.data_for(reader)
        else:
            self.fn = IndexedFunction(expr)
        self.layout = Layout([self.fn.variables])
        self.take = self.layout.positions(list(self.fn.variables))
        self.in_order = bool(np.array_equal(self.take, np.arange(self.layout.size)))
        self.names = self.all_names = Labels(self.layout)
        self.fixed, self.params = dict(fixed or {}), dict(params or {})
        self.args = (self.data,) if self.data else ()  # what the driver passes its calls of self.fn
        self.lower, self.upper = self.layout.box(bounds)  # by slices: no entry a variable of a dict
        self.bounded = bool(np.isfinite(self.lower).any() or np.isfinite(self.upper).any())
        self.nfev = self.njev = self.nhev = 0

    def start(self, x0: Any) -> np.ndarray:
        """The start point: a flat sequence, or ``{"x": array or number, "x[3]": number, "a": number}``."""
        return self.project(self.layout.values(x0, "x0"))  # (a number for a vector covers its entries)

    def point(self, x: np.ndarray) -> dict[str, Any]:  # type: ignore[override]
        return self.layout.point(x)

    def _own(self, v: np.ndarray) -> np.ndarray:
        return v if self.in_order else np.ascontiguousarray(v[self.take])

    def _flat(self, v: Any) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        if self.in_order:
            return v
        out = np.zeros(self.layout.size)
        out[self.take] = v
        return out

    def fg(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        self.nfev += 1
        self.njev += 1
        f, g = self.fn.value_and_grad(self._own(x), *self.args)
        return float(f), self._flat(g)

    def dense(self) -> bool:
        return False  # Hessian-vector products, never the n x n matrix

    def result_names(self) -> Sequence[str]:
        return self.names  # made when read

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        self.nhev += 1
        return self._flat(self.fn.hessp(self._own(x), self._own(p), *self.args))
