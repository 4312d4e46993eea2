"""The numeric algebra: adjoints as numbers (floats, or NumPy arrays for a batch).

The reverse sweep (:func:`symad.ad.reverse.backward`) runs once, at recording time, with
:class:`Recorder`: each user's contributions become one flat step ``(slot, argument slots,
(argument slot, rule, ...), guard)``, and :func:`run` replays the steps at any point with no
call per edge beyond the op table's own rules (:class:`Recording`, the tape of
:mod:`symad.backends.tape`).  :class:`Numbers` runs the same sweep eagerly at one point, for
:mod:`symad.ad.trace`.  Either way the numbers are those of the compiled gradient: the same
rules, the same strong zeros and selections (:mod:`symad.ad.branches`), added in the same
canonical order, with small integer powers expanded into the same products.

Nothing is built in the graph: where the symbolic gradient would fold a partial to a number
(constant arguments, ``x - x``), the folded number is found in a scratch graph holding the
op on placeholders (what folds depends only on the op, which arguments are the same node and
the constants' bits), cached per such pattern.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from symad.ad import branches
from symad.ad.local import local_partials
from symad.ad.reverse import Algebra, backward
from symad.ad.sweep import Ks, active, canonical_order
from symad.core import binders
from symad.core.dag import Graph
from symad.core.limits import LIMITS
from symad.core.ops import OPS, Op, difference_error
from symad.core.semantics import SMALL_POWERS, numpy, power_product


def _power(k: int) -> Callable[[Any, Any], Any]:
    """``x^k`` (k small) on a step: the products every evaluator computes."""
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


_FOLDS: dict[tuple[Any, ...], tuple[Op, tuple[float | None, ...]]] = {}


def _folded(op: str, same: bool, constants: tuple[float | None, float | None]) -> tuple[float | None, ...]:
    """The partials of binary ``op`` the symbolic gradient folds to numbers (None: not folded), for
    arguments that are the same node or not and constants (None: not a constant), found in a
    scratch graph: the graph being differentiated gets no node."""
    spec = OPS[op]
    key = (op, same, *(None if c is None else c.hex() for c in constants))
    known = _FOLDS.get(key)
    if known is not None and known[0] is spec:  # an op redefined under its name is asked again
        return known[1]
    g = Graph()
    a, b = (g.var("a") if c is None else g.const(c) for c in constants)
    if same:
        b = a
    node = g.make(op, a, b)
    folded: tuple[float | None, ...] = (None, None)
    if g.op[node] == op and g.args[node] == (a, b):  # else a node the real graph cannot hold either
        partials = local_partials(g, node, (0, 1))
        folded = tuple(p if type(p) is float else float(g.data[p]) if g.op[p] == "const" else None  # type: ignore[arg-type,misc]
                       for p in partials)
    if len(_FOLDS) < 4096:
        _FOLDS[key] = (spec, folded)
    return folded


def _zeros(rules: tuple[Any, ...]) -> tuple[int, ...]:
    """The arguments whose partial is the number 0: their edges carry nothing."""
    return tuple(k for k, rule in enumerate(rules) if type(rule) is float and rule == 0.0)


class Rules:
    """Each node's evaluation and partials on numbers, as the symbolic gradient folds them.

    ``constants`` maps keys (slots or nodes) of constant arguments to their values;
    :meth:`of` takes an op and its arguments' keys and gives ``(py, np, rules, zeros)``.
    """

    def __init__(self, constants: Mapping[Any, float]):
        self.constants = constants
        self._table: dict[str, tuple[Any, Any, tuple[Any, ...], tuple[int, ...]]] = {}
        self._patterns: dict[tuple[Any, ...], tuple[Any, Any, tuple[Any, ...], tuple[int, ...]]] = {}

    def of(self, op: str, args: tuple[Any, ...]) -> tuple[Any, Any, tuple[Any, ...], tuple[int, ...]]:
        if len(args) == 2:
            a0, a1 = args
            consts = self.constants
            if a0 == a1 or a0 in consts or a1 in consts:  # partials the graph may fold to numbers
                # what folds depends on the op, which arguments are the same node and the constants
                # (a constant's key stands for its bits): asked once for each such pattern
                key = (op, a0 == a1, a0 if a0 in consts else None, a1 if a1 in consts else None)
                entry = self._patterns.get(key)
                if entry is None:
                    entry = self._patterns[key] = self._binary(op, a0 == a1, consts.get(a0), consts.get(a1))
                return entry
        entry = self._table.get(op)
        if entry is None:
            spec = OPS[op]
            entry = self._table[op] = (spec.py, spec.np, spec.partials, _zeros(spec.partials))
        return entry

    @staticmethod
    def _binary(op: str, same: bool, c0: float | None, c1: float | None) -> tuple[Any, Any, tuple[Any, ...],
                                                                              tuple[int, ...]]:
        spec = OPS[op]
        py, np_fn, rules = spec.py, spec.np, spec.partials
        if op == "pow" and c1 is not None:
            if c1 in SMALL_POWERS:
                py = np_fn = _POWERS[int(c1)]
            base = _pow_base_partial(c1)
            if base is not None:
                rules = (base, rules[1])
        folded = _folded(op, same, (c0, c1))
        rules = tuple(rule if f is None else f for f, rule in zip(folded, rules))
        return py, np_fn, rules, _zeros(rules)


_ARMS = "arms"  # a guard's kind: the step of a `where`, selecting its adjoint into the arm taken


def _guard(shape: branches.Shape, at: Callable[[int], Any]) -> tuple:
    """A guarded node's step guard: ``(conditions, general)``, the conditions as ``(slot, then)``."""
    conditions = []
    while isinstance(shape, branches.Select):
        conditions.append((at(shape.cond), shape.then))
        shape = shape.inner
    return tuple(conditions), shape is branches.GENERAL


def _guarded_term(g: Any, rule: Any, values: Sequence[Any], guard: tuple, v: Any, which: int) -> Any:
    """What a guarded step passes along one edge (``which``: 1 on floats, 2 on NumPy values), as
    :mod:`symad.ad.branches` builds it symbolically; ``v[key]`` the conditions' values."""
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


class Recorder(Algebra):
    """The numeric algebra at recording time: each user's contributions become one flat step.

    An adjoint here only says "reached"; a term is the partial's rule, run by :func:`run`.
    """

    def __init__(self, at: Callable[[int], int], args_at: list[Any], rules_at: list[Any]):
        self.at, self.args_at, self.rules_at = at, args_at, rules_at
        self.steps: list[tuple[int, tuple[int, ...], tuple[Any, ...], tuple | None]] = []

    def seed(self) -> bool:
        return True

    def add(self, previous: bool, term: Any) -> bool:
        return True

    def terms(self, node: int, ks: Ks, adjoint: bool, shape: branches.Shape) -> list[Any]:
        i = self.at(node)
        rules, args = self.rules_at[i], self.args_at[i]
        guard = None if shape is None else _guard(shape, self.at)
        # never the number 0: those edges are dead, left out of the sweep (_step, inlined: one per node)
        if len(ks) == 2:
            k, j = ks
            self.steps.append((i, args, (args[k], rules[k], args[j], rules[j]), guard))
            return [rules[k], rules[j]]
        if len(ks) == 1:
            k = ks[0]
            self.steps.append((i, args, (args[k], rules[k]), guard))
            return [rules[k]]
        wanted = [rules[k] for k in ks]
        self._step(i, ks, wanted, guard)
        return wanted

    def selected(self, node: int, ks: Ks, adjoint: bool) -> list[Any]:
        i = self.at(node)
        wanted = [float(k) for k in ks]  # the arm's position, for the step's selection
        self._step(i, ks, wanted, (_ARMS, self.args_at[i][0]))
        return wanted

    def _step(self, i: int, ks: Ks, rules: list[Any], guard: tuple | None) -> None:
        args = self.args_at[i]
        if len(ks) == 2:
            self.steps.append((i, args, (args[ks[0]], rules[0], args[ks[1]], rules[1]), guard))
        elif len(ks) == 1:
            self.steps.append((i, args, (args[ks[0]], rules[0]), guard))
        else:
            self.steps.append((i, args, tuple(x for k, r in zip(ks, rules) for x in (args[k], r)), guard))


class Recording:
    """An expression's value and reverse sweep as flat steps over slots, recorded once.

    ``forward``: ``(slot, py, np, a0, a1[, a1', a2])`` (a1 -1 for one argument, -2 for
    three); ``backward``: the :class:`Recorder`'s steps; ``floats``: the constants, by slot.
    """

    def __init__(self, graph: Graph, root: int, inputs: Sequence[int]):
        binders.refuse(graph, [root], "a tape")
        order = canonical_order(graph, [root])  # the symbolic gradient's order of additions
        LIMITS.check_program(sum(1 for n in order if graph.args[n]))
        slot = {node: i for i, node in enumerate(order)}
        self.root = slot[root]
        self.inputs = [slot.get(v, -1) for v in inputs]  # -1: a variable the expression does not use
        consts = {slot[n]: float(graph.data[n]) for n in order if graph.op[n] == "const"}  # type: ignore[arg-type]
        self.floats: list[Any] = [0.0] * len(order)
        for i, c in consts.items():
            self.floats[i] = c
        for i in self.inputs:
            consts.pop(i, None)  # a constant an input overrides folds nothing
        self.forward: list[tuple[Any, ...]] = []
        at, args_of, op_of, forward = slot.__getitem__, graph.args, graph.op, self.forward.append
        args_at: list[Any] = [None] * len(order)  # per slot, for the backward steps: argument slots
        rules_at: list[Any] = [None] * len(order)  # and the partials' rules
        dead: dict[int, tuple[int, ...]] = {}  # user -> arguments whose partial is the number 0
        rules_of = Rules(consts).of
        for i, node in enumerate(order):
            op = op_of[node]
            if op == "const" or op == "var":
                continue
            args = tuple(map(at, args_of[node]))
            py, np_fn, rules, zeros = rules_of(op, args)
            if len(args) == 3:  # where(c, a, b): its forward step carries its third argument
                forward((i, py, np_fn, args[0], -2, args[1], args[2]))
            elif len(args) == 2:
                forward((i, py, np_fn, args[0], args[1]))
            else:
                forward((i, py, np_fn, args[0], -1))
            args_at[i], rules_at[i] = args, rules
            # A partial that is the number 0 carries nothing back (sign, step, 1^x), as the symbolic
            # gradient drops its term: the arguments' rules then never run, and cannot raise.
            if zeros:
                dead[node] = zeros
        recorder = Recorder(at, args_at, rules_at)
        sources = {v for v in inputs if v in slot}
        backward(graph, order, root, recorder, active(graph, order, sources, dead), dead)
        self.backward = recorder.steps


def run(tape: Recording, point: Sequence[Any], template: list[Any], which: int,
        grad: bool) -> tuple[Any, list[Any]]:
    """``(value, partials)`` of a recording at ``point`` (``which``: 1 on floats, 2 on NumPy values,
    ``template`` the constants by slot in that kind); the partials only if ``grad``."""
    v = template.copy()
    for i, x in zip(tape.inputs, point):
        if i >= 0:
            v[i] = x
    for step in tape.forward:
        i, fn, a0, a1 = step[0], step[which], step[3], step[4]
        if a1 >= 0:
            v[i] = fn(v[a0], v[a1])
        elif a1 == -1:
            v[i] = fn(v[a0])
        else:
            v[i] = fn(v[a0], v[step[5]], v[step[6]])
    value = v[tape.root]
    if not grad:
        return value, []
    adj: list[Any] = [None] * len(v)
    adj[tape.root] = 1.0
    for i, args, wanted, guard in tape.backward:
        g = adj[i]
        if g is None:
            continue
        values = [v[a] for a in args]
        values.append(v[i])
        for j in range(0, len(wanted), 2):
            a, rule = wanted[j], wanted[j + 1]
            if guard is not None:
                term = _guarded_term(g, rule, values, guard, v, which)
            elif type(rule) is float:  # Numbers.times, inlined: never 0 (zero partials are left off)
                term = g if rule == 1.0 else -g if rule == -1.0 else g * rule
            else:
                term = g * rule(*values)
            prev = adj[a]
            adj[a] = term if prev is None else prev + term
    zero = 0.0 if which == 1 else numpy().float64(0.0)
    return value, [zero if i < 0 or adj[i] is None else adj[i] for i in tape.inputs]


class Numbers(Algebra):
    """The numeric algebra run eagerly at one point, NumPy scalars with IEEE results: the
    recorded steps' arithmetic, edge by edge (for :mod:`symad.ad.trace`).

    ``values`` are the nodes' values (:meth:`evaluate`); a partial is its rule, a number
    or a function of no arguments computing it at the point (:meth:`value` of it).
    """

    def __init__(self, graph: Graph, order: list[int], point: Mapping[str, float]):
        np = numpy()
        self.graph = graph
        self.values: dict[int, Any] = {}
        self.rules: dict[int, tuple[Any, ...]] = {}
        consts = {n: float(graph.data[n]) for n in order if graph.op[n] == "const"}  # type: ignore[arg-type]
        rules_of = Rules(consts).of
        v, args_of, op_of = self.values, graph.args, graph.op
        with np.errstate(all="ignore"):
            for node in order:
                op = op_of[node]
                if op == "const":
                    v[node] = np.float64(consts[node])
                elif op == "var":
                    v[node] = np.float64(point[graph.data[node]])  # type: ignore[index]
                else:
                    args = args_of[node]
                    _, np_fn, self.rules[node], _ = rules_of(op, args)
                    v[node] = np_fn(*(v[a] for a in args))

    @staticmethod
    def value(partial: Any) -> Any:
        """A partial's number at the point."""
        return partial if type(partial) is float else partial()

    def seed(self) -> float:
        return 1.0

    def partials(self, node: int, ks: Ks) -> list[Any]:
        rules, v = self.rules[node], self.values
        values = [v[a] for a in self.graph.args[node]]
        values.append(v[node])
        return [rules[k] if type(rules[k]) is float else functools.partial(rules[k], *values) for k in ks]

    def times(self, adjoint: Any, partial: Any, shape: branches.Shape) -> Any:
        if type(partial) is float and partial == 0.0:
            return None
        if shape is not None:
            return _guarded_term(adjoint, partial, (), _guard(shape, lambda n: n), self.values, 1)
        if type(partial) is float:
            return adjoint if partial == 1.0 else -adjoint if partial == -1.0 else adjoint * partial
        return adjoint * partial()

    def select(self, node: int, k: int, adjoint: Any) -> Any:
        return _guarded_term(adjoint, float(k), (), (_ARMS, self.graph.args[node][0]), self.values, 1)

    def add(self, previous: Any, term: Any) -> Any:
        return previous + term
