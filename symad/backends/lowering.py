"""Lowering: a schedule's steps rewritten into the primitive operations every backend runs.

The op table's operations are what users write and what derivative rules build; two of
them are, to every evaluator, something simpler, and this pass is the one place that
says so (the code generators, :mod:`~symad.backends.python_code`, :mod:`~symad.backends.llvm.ir`,
:mod:`~symad.backends.vm`'s instructions and :mod:`~symad.backends.c_code`, read each step's op
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

The rewritten steps keep the nodes' ids; the products' intermediate values get new ids
from ``fresh`` on (past the graph's nodes), and a negative power's ``1.0`` a new constant.
"""

from __future__ import annotations

import dataclasses

from symad.core.ops import OPS, Op
from symad.core.semantics import small_power

Step = tuple[int, str, tuple[int, ...]]  # (node, op, argument nodes)

SELECT = "select"  # what `where` is lowered to: a if c != 0 else b
LOWERED = frozenset({"pow", "where"})  # the ops :func:`lower` may rewrite (any other step stays as it is)

# The ops a lowered step may have: the op table's, `where` as `select` (built when this module
# is imported, as the backends' namespaces and opcodes are: an op is defined before that).
PRIMITIVES: dict[str, Op] = {name: spec for name, spec in OPS.items() if spec.arity and name != "where"}
PRIMITIVES[SELECT] = dataclasses.replace(OPS["where"], name=SELECT)


def lower(steps: list[Step], consts: dict[int, float], fresh: int) -> list[Step]:
    """The primitive steps computing what ``steps`` compute, in order.

    ``consts`` holds the constant nodes the steps read; a ``1.0`` is added to it (as node
    ``fresh``) if a negative power needs one.  New nodes are numbered from ``fresh``.

    >>> lower([(5, "pow", (0, 1)), (6, "where", (0, 5, 1))], consts := {1: -3.0}, 10)
    [(10, 'mul', (0, 0)), (11, 'mul', (10, 0)), (5, 'div', (12, 11)), (6, 'select', (0, 5, 1))]
    >>> consts
    {1: -3.0, 12: 1.0}
    """
    out: list[Step] = []
    one = -1
    for step in steps:
        op = step[1]
        if op == "pow":
            node, _, (x, e) = step
            k = None if x in consts else small_power(consts.get(e))
            if k is not None:  # x^k as power_product computes it: p = x; p = p*x ...; 1.0/p
                p = x
                for j in range(abs(k) - 1):
                    if k > 0 and j == k - 2:  # the last product is the node itself
                        dest = node
                    else:
                        dest, fresh = fresh, fresh + 1
                    out.append((dest, "mul", (p, x)))
                    p = dest
                if k < 0:
                    if one < 0:
                        one = fresh
                        consts[one] = 1.0
                        fresh += 1
                    out.append((node, "div", (one, p)))
                continue
        elif op == "where":
            step = (step[0], SELECT, step[2])
        out.append(step)
    return out
