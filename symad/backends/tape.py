"""The first tier: value and gradient by interpreting the forward DAG, with no code to build.

A :class:`Tape` walks the expression's nodes once forward (values) and once
backward (adjoints, accumulated where a node is shared), evaluating the op
table's own derivative rules on numbers.  It builds no gradient expression and
compiles nothing, so the first answer costs a few microseconds per node; a
:class:`symad.function.Function` answers its first call this way and compiles
straight-line code only for a function that is called again.

The numbers are those of the compiled code: the same rules, applied in the same
order, with small integer powers expanded into the same products; floats first,
and on an exception (``1/0``, ``log(-1)``) the whole sweep again in NumPy with
IEEE results (``inf``, ``nan``).  The same sweep runs on arrays for a batch.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from symad.ad import branches
from symad.ad.local import local_partials
from symad.ad.sweep import active, canonical_order, reverse_nodes
from symad.core.gcpause import without_gc
from symad.core.graph import Graph
from symad.core.limits import LIMITS
from symad.core.ops import OPS, difference_error
from symad.core.semantics import SMALL_POWERS, numpy, power_product


def _power(k: int) -> Callable[[Any, Any], Any]:
    """``x^k`` (k small) on a tape step: the products every evaluator computes."""
    return lambda x, _k: power_product(x, k)


_POWERS = {k: _power(k) for k in SMALL_POWERS}


def _constant_power(e: float) -> Callable[[Any], Any]:
    """``a^e`` for a constant e, as the graph builds and every evaluator computes it."""
    if e == 1.0:
        return lambda a: a
    expand = _POWERS.get(int(e)) if e.is_integer() else None
    if expand is not None:
        return lambda a: expand(a, None)
    py, np_fn = OPS["pow"].py, OPS["pow"].np
    return lambda a: py(a, e) if type(a) is float else np_fn(a, e)


@functools.lru_cache(maxsize=256)
def _pow_base_partial(k: float) -> Callable[..., Any] | None:
    """∂(a^k)/∂a for a finite constant k, as the symbolic rule builds it (``k * a^s * a^e``, s = k − 1
    rounded and e its rounding error, folded: ``k * a^s`` where e = 0); None for inf or nan (the rule)."""
    if not math.isfinite(k):
        return None
    s = k - 1.0
    e = difference_error(k, 1.0, s)
    first = _constant_power(s)
    if e == 0.0 or e != e:
        return lambda a, b, out: k * first(a)
    second = _constant_power(e)
    return lambda a, b, out: k * first(a) * second(a)


def _folded_partial(graph: Graph, node: int, k: int) -> float | None:
    """The k-th partial as the number the graph folds it to (as the symbolic gradient builds
    it: constant folding, ``x - x → 0``, ``0*a → 0``), or None; a zero one then drops its term
    even where the adjoint is inf or nan, as in the symbolic gradient."""
    local = local_partials(graph, node, [k])[0]
    if isinstance(local, float):
        return local
    return float(graph.data[local]) if graph.op[local] == "const" else None  # type: ignore[arg-type]


def _zeros(rules: tuple[Any, ...]) -> tuple[int, ...]:
    """The arguments whose partial is the number 0: their edges carry nothing."""
    return tuple(k for k, rule in enumerate(rules) if type(rule) is float and rule == 0.0)


_ARMS = "arms"  # a guard's kind: the step of a `where`, selecting its adjoint into the arm taken


def _guard(shape: branches.Shape, at: Callable[[int], int]) -> tuple:
    """A guarded node's step guard: ``(conditions, general)``, the conditions as ``(slot, then)``."""
    conditions = []
    while isinstance(shape, branches.Select):
        conditions.append((at(shape.cond), shape.then))
        shape = shape.inner
    return tuple(conditions), shape is branches.GENERAL


def _guarded_term(g: Any, rule: Any, values: list[Any], guard: tuple, v: list[Any], which: int) -> Any:
    """What a guarded step passes along one edge, as :mod:`symad.ad.branches` builds it."""
    if guard[0] is _ARMS:
        c = v[guard[1]]
        then = rule == 1.0
        if which == 1:
            return g if (c != 0.0) == then else 0.0
        np = numpy()
        return np.where(c != 0.0, g, 0.0) if then else np.where(c != 0.0, 0.0, g)
    conditions, general = guard
    if which == 1:  # on floats: a branch not taken, or a zero adjoint, never computes the partial
        for slot, then in conditions:
            if (v[slot] != 0.0) != then:
                return 0.0
        if type(rule) is float:  # a number times a zero adjoint is 0: no test (as symad.ad.branches)
            return g * rule
        if general and g == 0.0:
            return 0.0
        return g * rule(*values)
    np = numpy()
    term = g * rule if type(rule) is float else g * rule(*values)
    keep = g != 0.0 if general and type(rule) is not float else True
    for slot, then in conditions:
        keep = np.logical_and(keep, (v[slot] != 0.0) == then)
    return np.where(keep, term, 0.0)


class Tape:
    """The nodes of ``root`` in evaluation order, ready to sweep at any point.

    >>> from symad import parse, var
    >>> e = parse("(x+y)+x*(x+y)")
    >>> Tape(e.graph, e.id, [var("x").id, var("y").id]).value_and_grad([1.0, 2.0])
    (6.0, [5.0, 2.0])
    """

    @without_gc
    def __init__(self, graph: Graph, root: int, inputs: Sequence[int]):
        order = canonical_order(graph, [root])  # the symbolic gradient's order of additions
        LIMITS.check_program(sum(1 for n in order if graph.args[n]))
        slot = {node: i for i, node in enumerate(order)}
        self.root = slot[root]
        self.inputs = [slot.get(v, -1) for v in inputs]  # -1: a variable the expression does not use
        consts = {slot[n]: float(graph.data[n]) for n in order if graph.op[n] == "const"}  # type: ignore[arg-type]
        self._floats: list[Any] = [0.0] * len(order)
        for i, c in consts.items():
            self._floats[i] = c
        self._np: list[Any] | None = None  # the values template on NumPy scalars, made on first need
        fixed = consts.keys() - set(self.inputs)  # constants that no input overrides
        # Forward steps (slot, py, np, a0, a1); backward steps (slot, args, (arg slot, rule, ...)),
        # a rule being the op's partial or a number.  Flat tuples: the tape's memory is the build's peak.
        self.forward: list[tuple[int, Any, Any, int, int]] = []
        self.backward: list[tuple[int, tuple[int, ...], tuple[Any, ...]]] = []
        at, args_of, op_of, forward = slot.__getitem__, graph.args, graph.op, self.forward.append
        args_at: list[Any] = [None] * len(order)  # per slot, for the backward steps: argument slots
        rules_at: list[Any] = [None] * len(order)  # and the partials' rules
        dead: dict[int, tuple[int, ...]] = {}  # user -> arguments whose partial is the number 0
        table: dict[str, tuple[Any, Any, tuple[Any, ...], tuple[int, ...]]] = {}  # op -> its OPS entry
        folds: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # argument pattern -> folded partials (False: none)
        for i, node in enumerate(order):
            op = op_of[node]
            if op == "const" or op == "var":
                continue
            entry = table.get(op)
            if entry is None:
                spec = OPS[op]
                entry = table[op] = (spec.py, spec.np, spec.partials, _zeros(spec.partials))
            py, np_fn, rules, zeros = entry
            args = tuple(map(at, args_of[node]))
            if len(args) == 3:  # where(c, a, b): its forward step carries its third argument
                forward((i, py, np_fn, args[0], -2, args[1], args[2]))
            elif len(args) == 2:
                a0, a1 = args
                if op == "pow" and a1 in consts:
                    k = consts[a1]
                    if k in SMALL_POWERS:
                        py = np_fn = _POWERS[int(k)]
                    base = _pow_base_partial(k)
                    if base is not None:
                        rules = (base, rules[1])
                if a0 == a1 or a0 in fixed or a1 in fixed:  # partials the graph may fold to numbers
                    # What the graph folds a partial to depends on the op, which arguments are
                    # the same node, and the constants' values (bits: -0 is not 0), not on which
                    # non-constant nodes the others are: asked once for each such pattern.
                    pattern = (op, a0 == a1, *(consts[a].hex() if a in fixed else None for a in args))
                    folded = folds.get(pattern)
                    if folded is None:
                        folded = folds[pattern] = tuple(_folded_partial(graph, node, j) for j in range(2))
                    rules = tuple(rule if f is None else f for f, rule in zip(folded, rules))
                if rules is not entry[2]:
                    zeros = _zeros(rules)
                forward((i, py, np_fn, a0, a1))
            else:
                forward((i, py, np_fn, args[0], -1))
            args_at[i], rules_at[i] = args, rules
            # A partial that is the number 0 carries nothing back (sign, step, 1^x), as the symbolic
            # gradient drops its term: the arguments' rules then never run, and cannot raise.
            if zeros:
                dead[node] = zeros
        # The backward steps are the reverse sweep's edges, output first, each with its rule.
        # A step from a `where` or from a node its adjoint reached has a guard: the branches'
        # conditions and strong zero of symad.ad.branches, decided as the symbolic sweep decides.
        sources = {v for v in inputs if v in slot}
        step = self.backward.append
        reached = {root}
        shapes = branches.Shapes(graph) if branches.any_branch(graph, order) else None
        for node, ks in reverse_nodes(graph, order, active(graph, order, sources, dead), dead):
            if not ks or node not in reached:
                continue
            i = at(node)
            args, rules = args_at[i], rules_at[i]
            own = shapes.of.get(node) if shapes is not None else None
            guard: tuple | None = None
            if OPS[op_of[node]].arms:
                guard = (_ARMS, args[0])
                rules = tuple(float(k) for k in range(len(rules)))  # the arm's position, for the select
            elif own is not None:
                guard = _guard(own, at)
            for k in ks:
                arg = args_of[node][k]
                reached.add(arg)
                if shapes is not None:
                    shapes.pass_on(node, k, arg)
            if len(ks) == 2:
                k, j = ks
                step((i, args, (args[k], rules[k], args[j], rules[j]), guard))
            elif len(ks) == 1:
                k = ks[0]
                step((i, args, (args[k], rules[k]), guard))
            else:
                step((i, args, tuple(x for k in ks for x in (args[k], rules[k])), guard))

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
                return self._run(point, self._floats, 1, grad)
            except (ArithmeticError, ValueError):
                point = [numpy().float64(x) for x in point]
        np = numpy()
        if self._np is None:
            self._np = [np.float64(v) for v in self._floats]
        with np.errstate(all="ignore"):
            return self._run(point, self._np, 2, grad)

    def _run(self, point: Sequence[Any], template: list[Any], which: int, grad: bool) -> tuple[Any, list[Any]]:
        v = template.copy()
        for i, x in zip(self.inputs, point):
            if i >= 0:
                v[i] = x
        for step in self.forward:
            i, fn, a0, a1 = step[0], step[which], step[3], step[4]
            if a1 >= 0:
                v[i] = fn(v[a0], v[a1])
            elif a1 == -1:
                v[i] = fn(v[a0])
            else:
                v[i] = fn(v[a0], v[step[5]], v[step[6]])
        value = v[self.root]
        if not grad:
            return value, []
        adj: list[Any] = [None] * len(v)
        adj[self.root] = 1.0
        for i, args, wanted, guard in self.backward:
            g = adj[i]
            if g is None:
                continue
            values = [v[a] for a in args]
            values.append(v[i])
            for j in range(0, len(wanted), 2):
                a, rule = wanted[j], wanted[j + 1]
                if guard is not None:
                    term = _guarded_term(g, rule, values, guard, v, which)
                elif type(rule) is float:  # never 0: zero partials are left off the tape
                    term = g if rule == 1.0 else -g if rule == -1.0 else g * rule
                else:
                    term = g * rule(*values)
                prev = adj[a]
                adj[a] = term if prev is None else prev + term
        zero = 0.0 if which == 1 else numpy().float64(0.0)
        return value, [zero if i < 0 or adj[i] is None else adj[i] for i in self.inputs]
