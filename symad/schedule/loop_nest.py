"""What a compiled loop nest computes: a top-level ``sum``/``each`` with loops (sums, products) inside its body.

:class:`LoopNest` is plain data for a code generator (:func:`symad.native.loop_ir.nest_ir`): one
:class:`Scope` per loop, each with the lowered steps of the nodes that depend on its index
(a step may be a loop inside, run as its own scope), the entries it reads and where (an
entry's element offset is affine in the indices: ``x[i + 1]``, ``A[i, j]``, ``A[j, i]``, each
index clamped into its vector's range, as the NumPy evaluator reads past an end), and the
captures it takes from the top level (the same in every row).

A sum inside runs in the canonical order (:func:`symad.backends.arrays.blocked_sum`): blocks of
:data:`BLOCK` terms, each in :data:`INNER_LANES` lanes from 0.0 by the offset modulo their number,
then added as a tree of adjacent pairs; the blocks' sums kept in a stack array and added as NumPy's
pairwise sum adds them.  Its code is the same whatever its range, its memory one array of 8 bytes
a block: ranges up to :data:`INNER_MAX` terms (longer ones stay in NumPy).  A product inside runs
one lane from 1.0, a block of factors at most (the order of
:func:`symad.backends.arrays.blocked_prod` within a block).  A loop inside that would repeat its
work for loops around it whose index it does not read stays in NumPy (:data:`REPEATED_MAX`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from symad.core import binders
from symad.core.dag import BINDERS, Graph
from symad.schedule.lowering import Step, lower

BLOCK = 8192  # terms a block of the canonical order of a sum (the NumPy evaluator's and every loop's)
# A sum inside a loop's body runs a block at a time, each block's sum stored in a stack array that
# the sums at its nesting level share (8 bytes a block: 256 KB a level at most, a thread's stack
# being megabytes), then the blocks' sums added; a longer sum (2^28 terms) stays in NumPy.
INNER_MAX_BLOCKS = 32768
INNER_MAX = BLOCK * INNER_MAX_BLOCKS
# Lanes of a sum inside a loop's body (a top-level sum has two, the row-sum loop's): eight
# independent additions a step, two vector registers of four, so that a dot product of a row
# (``sum(j, A[i,j]*x[j])``) runs at the vector units' pace rather than one addition's latency.
INNER_LANES = 8


# A loop inside a body runs at every iteration of the loops around it, also of those whose index it
# does not read (the partial along y of sum(i, f(x[i])*prod(j, g(x[i], y[j]))) runs prod(j, ...)
# for every k of y[k] and every i), where NumPy computes it once for each value of the indices it
# reads.  Past this factor of repeated work, and this many repeated iterations, NumPy runs it
# (measured: NumPy is faster from about 85 repeats of a body of exp and log, 120 of a dot product;
# sum(i = 1..301, ... sum(j = 1..8192, ...)) took 69 s a call as code, recomputing each inner sum
# 8,192 times, 0.84 s in NumPy).
REPEATED_MAX = 100
REPEATED_WORK_MIN = 1_000_000


class NotCompiled(Exception):
    """The nest has a part the loop code does not take (NumPy runs it)."""


@dataclass
class Entry:
    """An entry read in a scope: ``vector`` (its slot), per dimension the affine index
    ``(coefficients by level, constant)`` and the clamp range, and the dimensions' element strides."""

    node: int
    vector: int
    indices: list[tuple[dict[int, int], int]]
    bounds: list[tuple[int, int]]
    strides: list[int]


@dataclass
class Scope:
    """One loop: its level and range, and what its body computes per index."""

    node: int
    op: str
    level: int
    low: int
    high: int
    body: int
    steps: list[Step]
    consts: dict[int, float]
    entries: list[Entry]
    inner: dict[int, Scope] = field(default_factory=dict)  # a step's node -> the loop computing it
    index_node: int | None = None  # the scope's own index leaf, if its body reads it
    captures: list[int] = field(default_factory=list)  # the values it reads from outside, the same every index


@dataclass
class LoopNest:
    """A top-level binder's loop nest: its scopes, its captures (slots of ``w``) and vectors (slots
    of ``bases``)."""

    root: Scope
    captures: list[int]
    vectors: list[str]

    @functools.cached_property
    def key(self) -> str:
        """Structural: equal for equal nests whatever their graph (what compiled code is cached by)."""
        return _structural_key(self.root, {c: f"c{k}" for k, c in enumerate(self.captures)}, [], "nest")


@dataclass
class LoopProgram:
    """A whole expression with loops: the top level's steps (``top``, a scope of level -1 whose inner
    scopes are the loops at the top), the variables it reads (slots of ``w``), the vectors (slots of
    ``bases``), and its outputs with their kinds (``value``: a number; ``each``: an array).
    ``call_entry``: set on a program that :attr:`takes_call` (a function's value and gradient over
    one vector), the code has a ``call(x, g)`` entry too (:func:`symad.native.loop_ir.program_ir`).
    ``tiled``: set on a program that is :attr:`tileable`, its loops at the top run block by block
    together, the blocks shared among threads (:func:`symad.native.loop_ir.program_ir`)."""

    top: Scope
    variables: list[int]
    vectors: list[str]
    outputs: list[int]
    kinds: list[str]
    call_entry: bool = False
    tiled: bool = False

    @functools.cached_property
    def key(self) -> str:
        """Structural: equal for equal programs whatever their graph (what compiled code is cached by)."""
        return _structural_key(self.top, {v: f"w{k}" for k, v in enumerate(self.variables)}, self.outputs,
                               f"program {self.kinds} {self.call_entry} {self.tiled}")

    @property
    def sums(self) -> list[int]:
        """The sums at the top, in the order of their steps (a tiled program's slots of block sums)."""
        return [node for node, _, _ in self.top.steps if node in self.top.inner and self.top.inner[node].op == "sum"]

    @property
    def blocks(self) -> int:
        """The most blocks of :data:`BLOCK` rows of a loop at the top (a tiled program's blocks)."""
        return max((-(-(s.high - s.low + 1) // BLOCK) for s in self.top.inner.values()), default=0)

    @property
    def tileable(self) -> bool:
        """Whether the loops at the top can run block by block together: sums and maps, none of
        which reads what another computes (their captures come before every loop)."""
        after = set(self.top.inner)  # the loops, and the steps reading one
        for node, _, args in self.top.steps:
            looped = node in self.top.inner
            if any(a in after for a in (args[1:] if looped else args)):
                if looped:
                    return False
                after.add(node)
        return all(s.op in ("sum", "each") for s in self.top.inner.values())

    @property
    def takes_call(self) -> bool:
        """Whether the program has the shape of the ``call(x, g)`` entry: one vector, no variable,
        a value then one array."""
        return len(self.vectors) == 1 and not self.variables and self.kinds == ["value", "each"]


def _structural_key(root: Scope, refs: dict[int, str], outputs: Sequence[int], head: str) -> str:
    """A hash of the code with every node named by what it is, never by its id: inputs by slot,
    constants by value, entries by their reading, indices by level, steps by position."""
    refs = dict(refs)
    parts = [head]
    count = 0
    started: set[int] = set()
    todo: list[tuple[Scope, int]] = [(root, 0)]  # (scope, its next step); a loop inside is walked first
    while todo:
        scope, at = todo.pop()
        if id(scope) not in started:
            started.add(id(scope))
            parts.append(f"{scope.op}{scope.level}:{scope.low}..{scope.high}")
            refs.update((n, float(c).hex()) for n, c in scope.consts.items())
            if scope.index_node is not None:
                refs[scope.index_node] = f"i{scope.level}"
            refs.update((e.node, f"e{e.vector}{e.indices}{e.bounds}{e.strides}") for e in scope.entries)
        if at == len(scope.steps):
            parts.append(f"= {refs[scope.body]}")
            continue
        node, op, args = scope.steps[at]
        inner = scope.inner.get(node)
        if inner is not None and node not in refs:
            refs[node] = ""  # being walked: come back to this step once the loop inside is written
            todo += [(scope, at), (inner, 0)]
            continue
        if inner is None:
            parts.append(f"{op}({','.join(refs[a] for a in args)})")
        refs[node] = f"s{count}"
        count += 1
        todo.append((scope, at + 1))
    parts.extend(refs[o] for o in outputs)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def loop_program(graph: Graph, roots: Sequence[int], spans: Mapping[str, Sequence[tuple[int, int]]]) -> LoopProgram:
    """The whole program computing ``roots`` (numbers, or ``each`` arrays), its loops inside it.
    Raises :class:`NotCompiled` for what the loop code does not take."""
    op_of, args_of = graph.op, graph.args
    nodes: set[int] = set()
    for root in roots:
        nodes.update(binders.scope_nodes(graph, root, lambda n: op_of[n] != "item"))
    order = sorted(nodes)
    vectors: list[str] = []
    entries = []
    for n in order:
        if op_of[n] == "item":
            if any(binders.affine(graph, at)[0] for at in args_of[n][1:]):  # type: ignore[index]
                raise NotCompiled("an entry at an index outside any loop")
            entries.append(_entry(graph, n, spans, vectors))
    variables = [n for n in order if op_of[n] == "var"]
    steps, consts, _ = lower(graph, [n for n in order if op_of[n] not in ("index", "item", "vector")])
    top = Scope(-1, "top", -1, 0, -1, roots[0], steps, consts, entries)
    for n in order:
        if op_of[n] in BINDERS:
            top.inner[n] = _scope(graph, n, spans, vectors, nodes)
    kinds = ["each" if op_of[r] == "each" else "value" for r in roots]
    return LoopProgram(top, variables, vectors, list(roots), kinds)


def _entry(graph: Graph, n: int, spans: Mapping[str, Sequence[tuple[int, int]]], vectors: list[str]) -> Entry:
    """Entry ``n``'s reading: its vector's slot, affine indices, clamp ranges and strides."""
    name = graph.data[graph.args[n][0]]
    if name not in vectors:
        vectors.append(name)  # type: ignore[arg-type]
    dims = spans[name]  # type: ignore[index]
    forms = [binders.affine(graph, at) for at in graph.args[n][1:]]
    strides = [1] * len(dims)
    for d in range(len(dims) - 2, -1, -1):
        strides[d] = strides[d + 1] * (dims[d + 1][1] - dims[d + 1][0] + 1)
    return Entry(n, vectors.index(name), forms, list(dims), strides)  # type: ignore[arg-type]


def loop_nest(graph: Graph, node: int, spans: Mapping[str, Sequence[tuple[int, int]]]) -> LoopNest:
    """The nest of top-level binder ``node``; ``spans`` are the vectors' domains (their shapes).
    Raises :class:`NotCompiled` for what the loop code does not take."""
    captures = list(graph.args[node][1:])
    vectors: list[str] = []
    root = _scope(graph, node, spans, vectors, set(captures))
    return LoopNest(root, captures, vectors)


def _scope(graph: Graph, node: int, spans: Mapping[str, Sequence[tuple[int, int]]], vectors: list[str],
           outer: set[int], around: tuple[tuple[int, int], ...] = ()) -> Scope:
    """``node``'s scope; ``around``: the (level, range) of each loop around it (none at the top)."""
    op = graph.op[node]
    if op not in ("sum", "each") and not (around and op == "prod"):  # a product: inside a body only
        raise NotCompiled(op)
    level, low, high = graph.data[node]  # type: ignore[misc]
    body = graph.args[node][0]
    nodes = _own_nodes(graph, body, level, outer)
    op_of = graph.op
    entries = [_entry(graph, n, spans, vectors) for n in nodes if op_of[n] == "item"]
    inner_loops = [n for n in nodes if op_of[n] in BINDERS]
    order = [n for n in nodes if op_of[n] not in ("index", "item", "vector")]
    steps, consts, variables = lower(graph, order)
    if variables:
        raise NotCompiled("a variable inside the body")  # captures cover them: not expected
    own = [n for n in nodes if op_of[n] == "index"]
    scope = Scope(node, op, level, low, high, body, steps, consts, entries, index_node=own[0] if own else None,
                  captures=list(graph.args[node][1:]))
    known = outer | set(nodes)
    enclosing = (*around, (level, max(0, high - low + 1)))
    for inside in inner_loops:
        _, lo, hi = graph.data[inside]  # type: ignore[misc]
        _check_repeated(graph, inside, enclosing)
        if graph.op[inside] not in ("sum", "prod"):
            raise NotCompiled("a loop inside that is not a sum or a product")
        if hi - lo + 1 > INNER_MAX:
            raise NotCompiled(f"a sum inside of more than {INNER_MAX:,} terms")
        if graph.op[inside] == "prod" and hi - lo + 1 > BLOCK:  # (its blocks' products: a tree, in NumPy)
            raise NotCompiled(f"a product inside of more than {BLOCK:,} factors")
        scope.inner[inside] = _scope(graph, inside, spans, vectors, known, enclosing)
    return scope


def _check_repeated(graph: Graph, inside: int, enclosing: tuple[tuple[int, int], ...]) -> None:
    """NotCompiled where the loop ``inside`` would repeat its work more than :data:`REPEATED_MAX`
    times over, and :data:`REPEATED_WORK_MIN` iterations in all, for loops around it whose index it
    does not read (NumPy computes it once for each value of the indices it reads)."""
    own = graph.data[inside][0]  # type: ignore[index]
    read = {graph.data[n] for n in graph.reachable([inside]) if graph.op[n] == "index" and graph.data[n] < own}
    repeats = needed = 1
    for level, count in enclosing:
        if level in read:
            needed *= count
        else:
            repeats *= count
    _, lo, hi = graph.data[inside]  # type: ignore[misc]
    if repeats > REPEATED_MAX and (repeats - 1) * needed * max(0, hi - lo + 1) > REPEATED_WORK_MIN:
        raise NotCompiled(f"a loop inside repeated {repeats:,} times over for loops whose index it does not read")


def _own_nodes(graph: Graph, body: int, level: int, outer: set[int]) -> list[int]:
    """The nodes of a scope: reachable from ``body`` without entering loops inside (their captures
    are) or passing the nodes already known outside; constants included, in topological order."""
    op_of = graph.op
    return [n for n in binders.scope_nodes(graph, body, lambda n: n not in outer and op_of[n] != "item")
            if n not in outer]
