"""What a compiled program computes, in order: the schedule every backend runs.

A :class:`Schedule` lists the operations the outputs need (dead code is never
emitted) in topological order: forward values first, then, for gradient
outputs, the adjoint nodes the backward sweep built.  Its steps are lowered
(:mod:`symad.schedule.lowering`: small integer powers as products, ``where`` as a
select) before any backend sees them.  A large schedule is cut
into chunks of ``CHUNK_OPS`` operations by :func:`chunk_plan`, the one plan the
Python and LLVM code generators share: compiling one huge function takes time
and memory growing faster than linearly with its size; in pieces, both grow
linearly.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from symad.core import binders
from symad.core.dag import BINDERS, Graph
from symad.core.errors import SymadError
from symad.core.gcpause import without_gc
from symad.core.limits import LIMITS
from symad.schedule.lowering import Step, lower

# A schedule of over twice this many operations is compiled as functions of this many
# (measured for LLVM at -O2, whose time grows fastest; Python's compile is bounded by it too).
CHUNK_OPS = 1000


@dataclass
class ChunkPlan:
    """A schedule's steps cut into chunks, and the values that cross a chunk boundary."""

    chunks: list[list[Step]]
    chunk_of: dict[int, int]  # node -> the chunk computing it
    slot: dict[int, int]  # node -> its place in the array shared by the chunks (crossing values, outputs)


def chunk_plan(steps: list[Step], outputs: Sequence[int], size: int | None = None) -> ChunkPlan:
    """Cut ``steps`` into chunks of ``size`` (default ``CHUNK_OPS``); a value used by a later
    chunk, or an output, gets a slot of the shared array, in order of first need."""
    size = CHUNK_OPS if size is None else size
    chunks = [steps[i:i + size] for i in range(0, len(steps), size)]
    chunk_of = {node: c for c, chunk in enumerate(chunks) for node, _, _ in chunk}
    slot: dict[int, int] = {}
    for c, chunk in enumerate(chunks):
        for _, _, args in chunk:
            for a in args:
                if chunk_of.get(a, c) < c:
                    slot.setdefault(a, len(slot))
    for node in outputs:
        if node in chunk_of:
            slot.setdefault(node, len(slot))
    return ChunkPlan(chunks, chunk_of, slot)


def _structural_key(inputs: Sequence[int], outputs: Sequence[int], steps: list[Step],
                    consts: dict[int, float]) -> str:
    """A hash of the program with nodes named by position (inputs, steps) or value (constants)."""
    ref: dict[int, str] = {v: f"a{k}" for k, v in enumerate(inputs)}
    ref.update((n, float(c).hex()) for n, c in consts.items())
    # The number of inputs sets the code's layout (a batch's row stride), even where some go unread:
    # ``sin(x)`` over (x) and over (x, y) are different machine code.
    parts = [f"inputs {len(inputs)}"]
    for i, (node, op, args) in enumerate(steps):
        parts.append(f"{op}({','.join([ref[a] for a in args])})")
        ref[node] = f"s{i}"
    parts.append(",".join([ref[n] for n in outputs]))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@dataclass(eq=False)
class Schedule:
    """The operations computing ``outputs`` from ``inputs`` (variable nodes), in order: primitive
    steps (see :mod:`symad.schedule.lowering`), whose new nodes are numbered past the graph's."""

    inputs: list[int]
    outputs: list[int]
    steps: list[Step]
    consts: dict[int, float]

    @classmethod
    @without_gc
    def build(cls, graph: Graph, outputs: Sequence[int], inputs: Sequence[int]) -> Schedule:
        """Schedule the nodes the outputs need, lowered."""
        if any(graph.op[i] != "var" for i in inputs):  # a loop's body: its index, entries and captures are inputs
            order = graph.reachable(outputs, set(inputs))
            binders.refuse(graph, [n for n in order if graph.op[n] in BINDERS], "compiled code of a nested loop")
        else:
            binders.refuse(graph, outputs, "compiled code")
            order = graph.reachable(outputs)
        LIMITS.check_program(len(order))
        steps, consts, variables = lower(graph, order)
        known = set(inputs)
        for node in variables:
            if node not in known:
                raise SymadError(f"no input for variable {graph.data[node]}")
        return cls(list(inputs), list(outputs), steps, consts)

    @functools.cached_property
    def key(self) -> str:
        """Structural: equal for equal programs, whatever their graphs and node ids (computed
        on first use: only compiled code is cached by it)."""
        return _structural_key(self.inputs, self.outputs, self.steps, self.consts)

    @property
    def size(self) -> int:
        """Number of operations."""
        return len(self.steps)

    @property
    def chunked(self) -> bool:
        """Whether the backends compile this schedule in chunks (see :func:`chunk_plan`)."""
        return self.size > 2 * CHUNK_OPS

    def chunks(self) -> ChunkPlan:
        """The chunk plan of this schedule's steps."""
        return chunk_plan(self.steps, self.outputs)
