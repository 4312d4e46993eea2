"""The first tier: value and gradient by interpreting the forward DAG, with no code to build.

A :class:`Tape` is the numeric algebra's recording of the expression (:mod:`symad.ad.numbers`):
the nodes once forward (values) and the one reverse sweep (:func:`symad.ad.reverse.backward`)
backward, as flat steps evaluating the op table's own derivative rules on numbers.  It builds
no gradient expression, adds no node to the graph and compiles nothing, so the first answer
costs a few microseconds per node; a :class:`symad.function.Function` answers its first call
this way and compiles straight-line code only for a function that is called again.

The numbers are those of the compiled code: the same rules, applied in the same
order, with small integer powers expanded into the same products; floats first,
and on an exception (``1/0``, ``log(-1)``) the whole sweep again in NumPy with
IEEE results (``inf``, ``nan``).  The same sweep runs on arrays for a batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from symad.ad.numbers import Recording, run
from symad.core.dag import Graph
from symad.core.gcpause import without_gc
from symad.core.semantics import numpy


class Tape:
    """The nodes of ``root`` in evaluation order, ready to sweep at any point.

    >>> from symad import parse, var
    >>> e = parse("(x+y)+x*(x+y)")
    >>> Tape(e.graph, e.id, [var("x").id, var("y").id]).value_and_grad([1.0, 2.0])
    (6.0, [5.0, 2.0])
    """

    @without_gc
    def __init__(self, graph: Graph, root: int, inputs: Sequence[int]):
        self._steps = steps = Recording(graph, root, inputs)
        self.forward, self.backward = steps.forward, steps.backward  # the flat steps, for tests
        self._floats = steps.floats
        self._np: list[Any] | None = None  # the values template on NumPy scalars, made on first need

    def value(self, point: Sequence[Any]) -> Any:
        """The value at ``point`` (floats, or arrays of one shape for a batch)."""
        return self.sweep(point, False)[0]

    def value_and_grad(self, point: Sequence[Any]) -> tuple[Any, list[Any]]:
        """``(value, [∂/∂input for each input])`` at ``point``."""
        return self.sweep(point, True)

    def sweep(self, point: Sequence[Any], grad: bool) -> tuple[Any, list[Any]]:
        """``(value, partials)`` at ``point``; the partials only if ``grad`` (else ``[]``)."""
        if all(type(x) is float for x in point):
            try:
                return run(self._steps, point, self._floats, 1, grad)
            except (ArithmeticError, ValueError):
                point = [numpy().float64(x) for x in point]
        np = numpy()
        if self._np is None:
            self._np = [np.float64(v) for v in self._floats]
        with np.errstate(all="ignore"):
            return run(self._steps, point, self._np, 2, grad)
