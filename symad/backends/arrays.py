"""Expressions with indexed nodes evaluated on NumPy arrays: a loop's body runs once over all its indices.

Outside any loop a node is a float; inside the body of ``sum``/``each`` over ``i = lo..hi`` it is
an array over the range (the index is ``arange(lo, hi+1)``, an entry ``x[i + c]`` a slice of
``x`` read in place).  Each step is the op's lowered primitive (:mod:`symad.schedule.lowering`):
small powers as products, ``where`` as a select, so the numbers are the other backends' own.

A ``sum`` adds its terms in the order every backend uses (:func:`blocked_sum`): blocks of
:data:`BLOCK` terms, each in two lanes (a sum inside a loop's body: eight), then the blocks' sums
by NumPy's pairwise sum.  A ``prod`` multiplies in the order of :func:`blocked_prod`, here in
every backend (a top-level one's factors may come from a compiled map).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symad.core import binders
from symad.core.dag import BINDERS, Graph
from symad.core.errors import PointError, SymadError
from symad.schedule.loop_nest import BLOCK, INNER_LANES
from symad.schedule.lowering import PRIMITIVES, lower


def blocked_sum(terms: np.ndarray, lanes: int = 2) -> Any:
    """``terms`` added along their last axis in the canonical order, the compiled loops': blocks
    of :data:`BLOCK` terms; in a block, ``lanes`` lanes from 0.0, lane ``l`` adding the terms at
    offsets ``l``, ``l + lanes``, ... left to right, then the lanes added as a tree of adjacent
    pairs (two lanes: lane one plus lane two); the blocks' sums pairwise (NumPy's sum).  Blocks
    may so run on any number of cores with the same bits.  A top-level sum has two lanes, a sum
    inside a loop's body :data:`~symad.schedule.loop_nest.INNER_LANES` (vector registers' worth).
    A float for 1-D terms, else an array of the leading shape."""
    lead, n, rows = _rows(terms)
    if n == 0:
        return _filled(lead, 0.0)
    full = n // BLOCK
    sums = []
    if full:
        sums.append(_lanes(rows[:, :full * BLOCK].reshape(-1, BLOCK), lanes).reshape(len(rows), full))
    if n > full * BLOCK:
        sums.append(_lanes(rows[:, full * BLOCK:], lanes).reshape(len(rows), 1))
    blocks = sums[0] if len(sums) == 1 else np.concatenate(sums, axis=1)
    return _shaped(blocks.sum(axis=1) if blocks.shape[1] > 1 else blocks[:, 0], lead)


def _rows(values: Any) -> tuple[tuple[int, ...], int, np.ndarray]:
    """``values`` (a number is one) as rows along its last axis: its leading shape, the rows'
    length and the rows."""
    values = np.asarray(values)
    if values.ndim == 0:
        values = values.reshape(1)
    lead, n = values.shape[:-1], values.shape[-1]
    return lead, n, values.reshape(-1, n) if n else values


def _shaped(out: np.ndarray, lead: tuple[int, ...]) -> Any:
    """A float for no leading shape, else ``out`` in it."""
    return float(out[0]) if not lead else out.reshape(lead)


def _filled(lead: tuple[int, ...], value: float) -> Any:
    """The reduction of nothing: ``value``, a float for no leading shape, else an array of it."""
    return value if not lead else np.full(lead, value)


def _lanes(blocks: np.ndarray, lanes: int) -> np.ndarray:
    """Each row's sum as the compiled loops add it (see :func:`blocked_sum`)."""
    zero = np.zeros((len(blocks), 1))
    sums = [np.cumsum(np.concatenate([zero, blocks[:, lane::lanes]], axis=1), axis=1)[:, -1] for lane in range(lanes)]
    while len(sums) > 1:
        sums = [sums[k] + sums[k + 1] for k in range(0, len(sums), 2)]
    return sums[0]


_PROD_GROUP = 16  # blocks a running product covers at once (scratch: 16 x 8,192 doubles a row)


def blocked_prod(factors: np.ndarray) -> Any:
    """``factors`` multiplied along their last axis in one fixed order: blocks of :data:`BLOCK`
    factors, each block's product left to right, then the blocks' products as a tree of adjacent
    pairs (an odd one out passed up as it is).  Only elementwise products and running products
    (``cumprod``), never NumPy's reduction, whose order depends on the processor's vector width;
    a few blocks at a time, so the scratch memory stays bounded.  A float for 1-D factors, else an
    array of the leading shape."""
    lead, n, rows = _rows(factors)
    if n == 0:
        return _filled(lead, 1.0)
    starts = range(0, n, BLOCK)
    level = []
    for group in range(0, len(starts), _PROD_GROUP):  # (a group's blocks, cumprod'd at once)
        first, last = starts[group], min(n, starts[group] + _PROD_GROUP * BLOCK)
        whole = (last - first) // BLOCK
        if whole:
            chunk = rows[:, first:first + whole * BLOCK].reshape(len(rows), whole, BLOCK)
            running = np.cumprod(chunk, axis=2)
            level += [running[:, b, -1] for b in range(whole)]
        if first + whole * BLOCK < last:  # the last block, shorter
            level.append(np.cumprod(rows[:, first + whole * BLOCK:last], axis=1)[:, -1])
    while len(level) > 1:
        level = [level[k] * level[k + 1] if k + 1 < len(level) else level[k] for k in range(0, len(level), 2)]
    return _shaped(level[0], lead)


class _Scope:
    """The steps of one scope: the top level, or a binder's body over its range."""

    def __init__(self, graph: Graph, nodes: Sequence[int], leaves: Sequence[int]):
        op_of, leaf = graph.op, set(leaves)  # (a set: a long list of leaves made this quadratic)
        order = [n for n in nodes if op_of[n] not in ("index", "item", "vector") and n not in leaf]
        steps, self.consts, _ = lower(graph, order)  # (its variables are read from the point)
        self.steps = [(node, op, args, None if op in BINDERS else PRIMITIVES[op].np) for node, op, args in steps]


class ArrayProgram:
    """Value of ``roots`` (floats, or arrays for ``each`` roots) at a point given as scalars by
    variable node and vectors by name: ``run(scalars, vectors)``."""

    def __init__(self, graph: Graph, roots: Sequence[int]):
        self.graph, self.roots = graph, list(roots)
        lv = binders.levels(graph)
        op_of, args_of = graph.op, graph.args
        everything = graph.reachable(self.roots)
        self.top = _Scope(graph, [n for n in everything if lv[n] < 0], [])
        self.top_items = [n for n in everything if op_of[n] == "item" and lv[n] < 0]
        self.loops: dict[int, tuple[_Scope, list[int]]] = {}
        for node in everything:
            if op_of[node] not in BINDERS:
                continue
            level = graph.data[node][0]  # type: ignore[index]
            body, *caps = args_of[node]
            inside = _body_nodes(graph, body, level)
            self.loops[node] = (_Scope(graph, inside, caps),
                                [n for n in inside if op_of[n] == "item"])
        self.top_numeric = any(fn is not None for _, _, _, fn in self.top.steps)  # steps other than loops
        self.depth = 1 + max((graph.data[n][0] for n in self.loops), default=0)  # type: ignore[index]
        # compiled code for some binders (:mod:`symad.runtime.native_loops`): node -> runner(captures, vectors)
        self.runners: dict[int, Any] = {}

    def run(self, scalars: Mapping[int, float], vectors: Mapping[str, tuple[np.ndarray, int]]) -> list[Any]:
        """The roots' values; ``vectors[name] = (array, index of its first entry)``."""
        values: dict[int, Any] = dict(scalars)
        for node in self.top_items:
            values[node] = self._items(node, None, vectors)
        if self.top_numeric or len(self.runners) < len(self.loops):
            with np.errstate(all="ignore"):  # NumPy's steps: 1/0 is inf, quietly, as compiled code has it
                self._run_scope(self.top, values, vectors, {})
        else:  # only compiled loops: nothing NumPy would warn about
            self._run_scope(self.top, values, vectors, {})
        return [values[r] for r in self.roots]

    def _run_scope(self, scope: _Scope, values: dict[int, Any], vectors: Mapping[str, tuple[np.ndarray, int]],
                   ranges: dict[int, np.ndarray]) -> None:
        values.update(scope.consts)
        for node, _op, args, fn in scope.steps:
            if fn is not None:
                values[node] = fn(*[values[a] for a in args])
            else:
                values[node] = self._loop(node, values, vectors, ranges)

    def _loop(self, node: int, outer: dict[int, Any], vectors: Mapping[str, tuple[np.ndarray, Any]],
              ranges: dict[int, np.ndarray]) -> Any:
        graph = self.graph
        runner = self.runners.get(node)
        if runner is not None:
            return runner([outer[c] for c in graph.args[node][1:]], vectors)
        level, low, high = graph.data[node]  # type: ignore[misc]
        scope, items = self.loops[node]
        body, *caps = graph.args[node]
        # the index along axis `level` of `depth` axes: each loop's values broadcast along its own axis
        shape = [1] * self.depth
        shape[level] = high - low + 1
        index = np.arange(low, high + 1, dtype=np.float64).reshape(shape)
        inner_ranges = {**ranges, level: index}
        values: dict[int, Any] = {c: outer[c] for c in caps}
        values[graph.index(level)] = index
        for item in items:
            values[item] = self._items(item, inner_ranges, vectors)
        self._run_scope(scope, values, vectors, inner_ranges)
        result = values[body]
        result = np.broadcast_to(result, np.broadcast_shapes(np.shape(result), index.shape))
        op = graph.op[node]
        if op in ("sum", "prod"):  # along the loop's own axis, in the canonical order
            along = np.moveaxis(result, level, -1)
            reduced = blocked_sum(along, 2 if level == 0 else INNER_LANES) if op == "sum" else blocked_prod(along)
            total = np.expand_dims(reduced, level)
            return float(total.reshape(())) if level == 0 else total
        if op == "each" and level == 0:
            return np.array(result.reshape(-1))
        raise SymadError(f"{op}(...) over more than {binders.UNROLL_MAX_TERMS:,} terms is not evaluated yet")

    def _items(self, node: int, ranges: dict[int, np.ndarray] | None,
               vectors: Mapping[str, tuple[np.ndarray, Any]]) -> Any:
        """The entries ``x[a*i + b, ...]`` over the ranges (a float outside any loop).  Past an end
        of ``x`` an entry reads the nearest one: only a guarded term (``where``) reads there."""
        graph = self.graph
        vector, *ats = graph.args[node]
        name = graph.data[vector]
        given = vectors.get(name)  # type: ignore[arg-type]
        if given is None:
            raise PointError(f"the point has no value for the vector {name}")
        array, firsts = given
        firsts = (firsts,) if isinstance(firsts, int) else firsts
        forms = [binders.affine(graph, at) for at in ats]
        if len(ats) == 1:  # the common case: a slice, read in place
            coef, shift = forms[0]  # type: ignore[misc]
            if not coef:
                return float(array[min(max(shift - firsts[0], 0), len(array) - 1)])
            if len(coef) == 1:
                (level, a), = coef.items()
                index = ranges[level]  # type: ignore[index]
                n = index.size
                start = a * int(index.reshape(-1)[0]) + shift - firsts[0]
                stop = start + a * (n - 1)
                if 0 <= min(start, stop) and max(start, stop) < len(array):
                    end = stop + (1 if a > 0 else -1)
                    return array[start:end if end >= 0 else None:a].reshape(index.shape)
        positions = []
        for d, (coef, shift) in enumerate(forms):  # type: ignore[misc]
            at: Any = shift - firsts[d]
            for level, c in coef.items():
                at = at + c * ranges[level].astype(np.int64)  # type: ignore[index]
            positions.append(np.clip(at, 0, array.shape[d] - 1))
        picked = array[tuple(positions)]
        return float(picked) if np.ndim(picked) == 0 else picked


def _body_nodes(graph: Graph, body: int, level: int) -> list[int]:
    """The nodes of a binder's body computed per index (they depend on its level), in topological
    order, and the constants they read; nested binders' bodies left to them."""
    lv, op_of = binders.levels(graph), graph.op
    return [n for n in binders.scope_nodes(graph, body, lambda n: lv[n] >= level)
            if lv[n] >= level or op_of[n] == "const"]
