"""Lowering: a schedule's steps rewritten into the primitive operations every backend runs.

The op table's operations are what users write and what derivative rules build; two of
them are, to every evaluator, something simpler, and this pass is the one place that
says so (the code generators, :mod:`~symad.backends.python_code`, :mod:`~symad.native.ir`,
:mod:`~symad.backends.vm`'s instructions and :mod:`~symad.tools.exporters.straight_line`, read each step's op
in :data:`PRIMITIVES` and special-case none; ``tests/test_architecture.py`` checks it):

* ``x^k`` with a constant ``k`` among ``±2, ±3, ±4, -1`` becomes products,
  ``x^3 = (x*x)*x`` and ``x^-2 = 1.0/(x*x)``: exactly the products of
  :func:`symad.core.semantics.power_product`, which constant folding computes too, so every
  backend gives the same bits, and no ``pow`` call is paid for a square.  A constant base
  is left to ``pow``: the graph folds a constant power whenever its products are finite, so
  one left unfolded overflowed or divided by zero, and there the compiled code has always
  called ``pow``.
* ``where(c, a, b)`` becomes ``select(c, a, b)``, ``a`` where ``c`` is not 0, else ``b``:
  the one step of three operands.  A ``where``'s arms are the derivative's business (the
  adjoint flows into the arm taken); a backend keys on ``select`` alone (the interpreter
  writes it as two instructions, the exported Python computes an arm inside an ``if``).

The pass turns the nodes a schedule needs (children first) into steps ``(node, op,
arguments)``, in one loop: the steps keep their nodes' ids; the products' intermediate
values get new ids past the graph's nodes, and a negative power's ``1.0`` a new constant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from symad.core.dag import Graph
from symad.core.ops import OPS, Op
from symad.core.semantics import small_power

Step = tuple[int, str, tuple[int, ...]]  # (node, op, argument nodes)

SELECT = "select"  # what `where` is lowered to: a if c != 0 else b
LOWERED = frozenset({"pow", "where"})  # the ops :func:`lower` may rewrite (any other is a step as it is)
_LEAVES_AND_LOWERED = LOWERED | {"const", "var"}

# The ops a lowered step may have: the op table's, `where` as `select` (built when this module
# is imported, as the backends' namespaces and opcodes are: an op is defined before that).
PRIMITIVES: dict[str, Op] = {name: spec for name, spec in OPS.items() if spec.arity and name != "where"}
PRIMITIVES[SELECT] = dataclasses.replace(OPS["where"], name=SELECT)


def lower(graph: Graph, order: Sequence[int]) -> tuple[list[Step], dict[int, float], list[int]]:
    """The primitive steps computing the nodes of ``order`` (children first), the constants they
    read (with a ``1.0`` if a negative power needs one) and the variables they read.

    >>> from symad.core.dag import Graph
    >>> g = Graph()
    >>> x = g.var("x")
    >>> cube, pick = g.make("pow", x, g.const(-3.0)), g.make("where", x, x, g.const(2.0))
    >>> steps, consts, variables = lower(g, g.reachable([cube, pick]))
    >>> steps
    [(6, 'mul', (0, 0)), (7, 'mul', (6, 0)), (2, 'div', (5, 7)), (4, 'select', (0, 0, 3))]
    >>> consts, variables
    ({1: -3.0, 5: 1.0, 3: 2.0}, [0])
    """
    op_of, args_of, data = graph.op, graph.args, graph.data
    steps: list[Step] = []
    consts: dict[int, float] = {}
    variables: list[int] = []
    powers: dict[int, int] = {}  # constant nodes that are small integers k: x^k is products
    fresh, one = len(op_of), -1  # new nodes are numbered past the graph's
    append = steps.append
    for node in order:
        op = op_of[node]
        if op not in _LEAVES_AND_LOWERED:  # most steps: one test (a schedule is built often)
            append((node, op, args_of[node]))
        elif op == "pow":
            x, e = args = args_of[node]
            k = powers.get(e) if x not in consts else None
            if k == 2:  # the commonest: one product
                append((node, "mul", (x, x)))
            elif k is None:
                append((node, op, args))
            else:
                if k < 0 and one < 0:
                    one, fresh = fresh, fresh + 1
                    consts[one] = 1.0
                fresh = _products(append, node, x, k, one, fresh)
        elif op == "where":
            append((node, SELECT, args_of[node]))
        elif op == "const":
            consts[node] = value = data[node]  # type: ignore[assignment]
            k = small_power(value)
            if k is not None:
                powers[node] = k
        else:
            variables.append(node)
    return steps, consts, variables


def _products(append: Callable[[Step], None], node: int, x: int, k: int, one: int, fresh: int) -> int:
    """Steps of ``node = x^k`` as :func:`symad.core.semantics.power_product` computes it,
    ``p = x; p = p*x ...; 1.0/p`` (``one``: the node of 1.0); returns the next fresh node."""
    p = x
    for j in range(abs(k) - 1):
        if k > 0 and j == k - 2:  # the last product is the node itself
            dest = node
        else:
            dest, fresh = fresh, fresh + 1
        append((dest, "mul", (p, x)))
        p = dest
    if k < 0:
        append((node, "div", (one, p)))
    return fresh
