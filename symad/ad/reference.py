"""Reverse mode in plain Python floats: symad's whole idea in one short module.

Read this first; ``docs/reference/reading.md`` walks through it beside the real sweep.  Given a
DAG and a point, :func:`value_and_grad` computes the value and every partial derivative
with floats, reading each op's evaluation and derivative rule from the op table
(:data:`symad.core.ops.OPS`).  It visits the nodes in the real sweep's order
(:func:`symad.ad.sweep.canonical_order`) and evaluates the same partials, so its numbers
are those of symad's compiled gradient, bit for bit, for an expression without branches.

What it leaves out, and the real sweep (:mod:`symad.ad.reverse`) has:

* ``where``: the adjoint flows into the arm taken only, with a *strong zero*
  (:mod:`symad.ad.branches`): here both arms would get it, and ``0 * inf`` would be nan;
* the derivative as an expression: the real gradient is nodes of the DAG, which print,
  compile and differentiate again; here it is numbers at one point;
* NumPy: batches of points, and IEEE results (``inf``, ``nan``) where Python's ``math``
  raises (``1/0``, ``log(-1)``): here the exception goes through;
* the graph's rewrites of a sum or product with a 0 (``0*a -> 0``, ``a + 0 -> a``): here
  the float arithmetic may give a zero of the other sign.

>>> from symad import parse
>>> e = parse("(x+y)+x*(x+y)")
>>> value_and_grad(e.graph, e.id, {"x": 1.0, "y": 2.0})
(6.0, {'x': 5.0, 'y': 2.0})
"""

from __future__ import annotations

from symad.ad.sweep import canonical_order
from symad.core.dag import Graph
from symad.core.ops import OPS
from symad.core.semantics import power_product, small_power
from symad.core.term import Term


def value_and_grad(graph: Graph, root: int, point: dict[str, float]) -> tuple[float, dict[str, float]]:
    """The value of node ``root`` at ``point`` ({variable name: float}) and its gradient
    ({variable name: ∂root/∂variable}), by one forward and one reverse sweep on floats."""
    # Every node the root depends on, children before parents.  The order is a function of
    # the expression alone, so the adjoints below add up in the same order, to the same bits,
    # as symad's own gradient.
    order = canonical_order(graph, [root])

    # Forward sweep: the value of every node.
    values: dict[int, float] = {}
    for node in order:
        values[node] = evaluate_node(graph, node, values, point)

    # Only nodes that depend on a variable carry a derivative.
    active: set[int] = set()
    for node in order:
        if graph.op[node] == "var" or any(arg in active for arg in graph.args[node]):
            active.add(node)

    # Reverse sweep, from the root down: each node passes its adjoint × the local partial to
    # each of its arguments (the chain rule).
    adjoint: dict[int, float] = {root: 1.0}  # ∂root/∂root = 1
    for node in reversed(order):
        if node not in adjoint:  # nothing flows back through this node
            continue
        for k, arg in enumerate(graph.args[node]):
            if arg not in active:
                continue
            local = local_partial(graph, node, k, values, point)
            if local is None:  # the partial is the number 0: this edge carries nothing
                continue
            contribution = adjoint[node] * local
            if arg in adjoint:  # a node used several times: add up what it receives
                adjoint[arg] = adjoint[arg] + contribution
            else:
                adjoint[arg] = contribution

    grad = {graph.data[n]: adjoint.get(n, 0.0) for n in order if graph.op[n] == "var"}
    return values[root], grad  # type: ignore[return-value]


def local_partial(graph: Graph, node: int, k: int, values: dict[int, float],
                  point: dict[str, float]) -> float | None:
    """∂node/∂(its k-th argument) at the point, or None where the rule says it is 0.

    The op table writes a partial once, as expression building on :class:`Term` (so that
    reverse mode, forward mode and Hessians share it): ``sin``'s rule is ``cos(a)``, which
    builds the node ``cos(a)``.  Here that node is built, then evaluated.
    """
    rule = OPS[graph.op[node]].partials[k]
    if isinstance(rule, float):  # a constant partial: 1 for a sum, -1 for a difference
        return None if rule == 0.0 else rule
    terms = [Term(graph, a) for a in graph.args[node]]
    built = rule(*terms, Term(graph, node))  # the rule's arguments: the node's, then the node itself
    if not isinstance(built, Term):  # the rule gave a plain number
        return None if built == 0.0 else float(built)
    if graph.op[built.id] == "const" and graph.data[built.id] == 0.0:  # folded to the number 0
        return None
    return evaluate(graph, built.id, values, point)


def evaluate(graph: Graph, root: int, values: dict[int, float], point: dict[str, float]) -> float:
    """The value of node ``root``, computing (and remembering in ``values``) the nodes it needs.

    Iterative, with an explicit stack: a node's arguments first, then the node.
    """
    stack = [root]
    while stack:
        node = stack[-1]
        if node in values:
            stack.pop()
            continue
        missing = [arg for arg in graph.args[node] if arg not in values]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        values[node] = evaluate_node(graph, node, values, point)
    return values[root]


def evaluate_node(graph: Graph, node: int, values: dict[int, float], point: dict[str, float]) -> float:
    """One node's value from its arguments' values (which ``values`` holds already)."""
    op, args = graph.op[node], graph.args[node]
    if op == "const":
        return graph.data[node]  # type: ignore[return-value]
    if op == "var":
        return float(point[graph.data[node]])  # type: ignore[index]
    if op == "pow" and graph.op[args[1]] == "const":
        k = small_power(graph.data[args[1]])
        if k is not None:  # x^2, x^-3...: products, as every symad evaluator computes them
            return power_product(values[args[0]], k)
    return OPS[op].py(*[values[a] for a in args])  # type: ignore[misc]
