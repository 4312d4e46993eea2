"""Explain reverse mode over sums kept as loops, step by step, at any depth of loops.

The sweep is shown in three parts.  The top level: each loop one step (``z2 = sum(i = 1..n, ...)``)
of the forward pass and of the backward sweep, where it receives its adjoint z̄2.  Each loop's
body once, at one iteration of its index and of every index around it (``--iteration k``: the
nearest ``k`` in each range, by default each loop's first): its forward pass and its sweep, seeded
with 1 (a sum passes its adjoint to every term), its adjoints for f those times the loop's.  A
*scope* is the top level or one loop's body at one iteration (``i = 3, j = 1``); in it, a loop is
one step (a row ``w3 = sum(j = ...)``) whose body is a scope of its own, one level down.  The rows
are named by depth: ``z`` at the top level, ``w`` in a loop's body, ``v`` in the body of a loop
inside it, and so on; a loop is known by the path of its rows (``z2/w3``: the row ``w3`` of the
body of ``z2``).  The scopes are found with a worklist, never by recursion.  One level of loops is
the case of depth one, and prints as it reads there (no paths in the gather, no nesting keys in
the JSON).

The gather of ``df/dx[k]`` adds, over every scope and every entry of ``x`` it reads (``x[i + 1]``,
``x[j]``), what flows into that entry over every iteration that reads ``x[k]``: one iteration
where the entry's index fixes every index around it (``x[i + c]`` at ``i = k - c``; an iteration
outside the range adds nothing: the edges of the indexed gradient), else a sum over the free ones
(``x[i]`` read in the body of ``sum(j = 1..2000, ...)`` is read by its 2000 iterations).  A term of
one iteration is its body's partial times its loops' adjoints, as the tables have them (the body
of a loop of the top level explained at that iteration if it is not the one shown); any other is
the compiled gradient's: the function with the body's entries each read from a copy of their
vector (only in that body), differentiated along the copies (one function per body).  The partials
printed are :class:`~symad.indexed_function.IndexedFunction`'s (``symad grad``'s), bit for bit.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from symad.ad import products
from symad.backends.arrays import ArrayProgram
from symad.core import binders
from symad.core.dag import BINDERS, Graph
from symad.core.errors import PointError, SymadError
from symad.core.printing import format_number, to_infix
from symad.expr import Expr
from symad.indexed_function import IndexedFunction
from symad.tools.explanation import Explanation, Row, explain, factor_text, finite_json, number_text

LETTERS = "zwvutsrqp"  # the rows' letter at each depth (binders nest at most MAX_NESTING deep)


def has_nested(graph: Graph, root: int) -> bool:
    """Whether some loop of ``root`` has a loop in its body (its captures included)."""
    reach = graph.reachable([root])
    return any(graph.op[n] in BINDERS and any(graph.op[m] in BINDERS for m in graph.reachable([graph.args[n][0]]))
               for n in reach)


@dataclass
class LoopStep:
    """One loop's body at one iteration of its index and of every index around it."""

    name: str  # the loop's path: z2, z2/w3
    parent: str  # the path of the scope whose row it is ("" for the top level)
    text: str  # the loop as text, its indices named as in the body around it
    index: str
    low: int
    high: int
    at: dict[str, int]  # the iteration shown: every index around the body, and its own
    seed: float  # the loop's adjoint in its parent's table (for 1 of the parent's body, or for f at the top)
    scale: float  # the loop's adjoint for f at that iteration: the seeds down its path multiplied
    body: Explanation  # the body at ``at``, its rows named by depth (w1, w2, ... or v1, v2, ...)
    factor: float | None = None  # a prod's: the product of the other factors at ``at`` (in ``scale``)

    @property
    def iteration(self) -> int:
        return self.at[self.index]

    def received(self, bar: str, shown: Callable[[float], str] | None = None) -> str:
        """What the body receives, as a sentence's end: ``each term receives z̄1 = 1``, or for a
        prod ``its factor receives z̄1 = 1 times the product of the other factors, 0.5``."""
        shown = shown or number_text
        if self.factor is None:
            return f"each term receives {bar} = {shown(self.seed)}"
        return f"its factor receives {bar} = {shown(self.seed)} times the product of the other factors, " \
               f"{shown(self.factor)}"


@dataclass
class GatherTerm:
    """What the entry ``entry`` of a scope passes to ``x[k]``, over the iterations that read ``x[k]``."""

    loop: str  # the scope's path, or "" for an entry of the top level
    entry: str  # as the body writes it: x[i], x[j + 1]
    at: dict[str, Any]  # each index: the one value that reads x[k], or [low, high] summed over
    count: int  # iterations that read x[k] (0: none, the term adds nothing)
    value: float
    missed: str = ""  # why no iteration reads x[k]
    where: str = ""  # with several indices in the entry's index, the iterations' condition: i + j = 5

    @property
    def iteration(self) -> int | None:
        """The scope's own index where one iteration reads x[k] (None: none, or several)."""
        last = list(self.at.values())[-1] if self.at else None
        return last if self.count == 1 and isinstance(last, int) else None


@dataclass
class LoopExplanation:
    """The top level's sweep, each loop's body at one iteration, the gathers and the partials."""

    expression: str
    point: dict[str, Any]  # scalars as numbers, vectors as a summary
    top: Explanation
    loops: list[LoopStep]  # a loop before the loops of its body
    gathers: dict[str, list[GatherTerm]]  # entry x[k] -> its contributions
    gradient: dict[str, float]  # the partials shown: the gathered entries' and the scalars'
    nested: bool = False  # whether a loop is inside a loop's body (else each gathered term is of i alone)
    strided: bool = False  # whether an entry reads x[a*i + c] with |a| > 1

    def to_text(self) -> str:
        """The tables for a terminal."""
        lines = [f"forward pass at {_point_text(self.point)}"]
        top = self.top.to_text().splitlines()
        lines += top[1:top.index("")]
        for step in self.loops:
            lines += ["", f"loop {step.name} = {step.text}",
                      f"  its body at {_at_text(step.at)} (of {step.low}..{step.high}):"]
            body = step.body.to_text().splitlines()
            lines += body[1:body.index("")]
        lines += ["", "backward sweep: adjoints z̄ = df/dz, from the output down"]
        sweep = top[top.index("") + 2:]
        lines += sweep[:sweep.index("")]
        for step in self.loops:
            bar = _bar(step.name.rsplit("/", 1)[-1])
            own = not step.parent and step.scale == step.seed and step.factor is None  # z̄1 is already for f
            times = f"times {bar}" if own else f"times {number_text(step.scale)} for f"
            if step.parent:
                whose = f" (in the body of {step.parent}, for 1)"
            elif step.scale != step.seed and step.factor is None:
                whose = f" above, {number_text(step.scale)} with what the bodies that read it pass on"
            else:
                whose = ""
            scaled = "" if step.scale == 1 else f" (the adjoints below are for 1: {times})"
            lines += ["", f"body of {step.name} at {_at_text(step.at)}: {step.received(bar)}{whose}{scaled}"]
            body = step.body.to_text().splitlines()
            sweep = body[body.index("") + 2:]
            lines += sweep[:sweep.index("")]
        if self.gathers:
            lines += ["", _GATHER_TITLE[(self.nested, self.strided)]]
        for entry, terms in self.gathers.items():
            parts = [term_text(t, self.nested) for t in terms]
            numbers = [factor_text(t.value) for t in terms]
            lines.append(f"  df/d{entry} = {' + '.join(parts) or '0'} = {' + '.join(numbers) or '0'} "
                         f"= {number_text(self.gradient[entry])}")
        lines += ["", "gradient: " + ", ".join(f"df/d{k} = {format_number(v, named_constants=False)}"
                                           for k, v in self.gradient.items())]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the top level's, each loop's and the gathers' steps, and the partials.
        With loops inside loops, a loop also says its ``parent``, the iteration ``at`` of every index
        and its adjoint for f (``scale``); a prod the product of its other factors (``factor``) and
        ``scale``; a gathered term its iterations (``at``: a number, or
        ``[low, high]`` summed over), their ``count`` and the condition ``where`` on them."""
        top = self.top.to_dict()

        def nesting(keys: dict[str, Any]) -> dict[str, Any]:
            return keys if self.nested else {}

        loops = []
        for s in self.loops:
            body = s.body.to_dict()
            loops.append({"id": s.name, **nesting({"parent": s.parent}), "loop": s.text, "index": s.index,
                          "range": [s.low, s.high], "iteration": s.iteration, **nesting({"at": s.at}),
                          "seed": s.seed, **nesting({"scale": s.scale}),
                          **({"factor": s.factor, "scale": s.scale} if s.factor is not None else {}),
                          "forward": body["forward"], "sweep": body["sweep"]})
        return {
            "expr": self.expression, "mode": "reverse", "at": self.point,
            "forward": top["forward"], "sweep": top["sweep"], "loops": loops,
            "gather": {entry: [{"loop": t.loop, "entry": t.entry, "iteration": t.iteration,
                                **nesting({"at": t.at, "where": t.where, "count": t.count}), "value": t.value}
                               for t in terms] for entry, terms in self.gathers.items()},
            "gradient": self.gradient,
        }

    def to_json(self) -> str:
        return json.dumps(finite_json(self.to_dict()))


_GATHER_TITLE = {  # (nested, strided) -> the gather's title
    (False, False): "gather: df/dx[k] adds each entry x[i + c]'s adjoint at i = k - c",
    (False, True): "gather: df/dx[k] adds each entry x[a*i + c]'s adjoint at i = (k - c)/a",
    **dict.fromkeys([(True, False), (True, True)], "gather: df/dx[k] adds, for each entry of x a body reads, what it "
                    "passes on (its adjoint times its loops') over the iterations that read x[k]"),
}


def _bar(name: str) -> str:
    return f"{name[0]}\u0304{name[1:]}"


def _point_text(point: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v if isinstance(v, str) else number_text(v)}" for k, v in point.items())


def _at_text(at: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {v[0]}..{v[1]}" if isinstance(v, list) else f"{k} = {v}" for k, v in at.items())


def term_text(t: GatherTerm, paths: bool = True) -> str:
    """A gathered term as text: ``x[j] in z1/w1 at i = 1..3000, j = 5 (3,000 iterations)``; without
    ``paths`` (one level of loops), not saying whose body reads it: ``x[i + 1] at i = 4``."""
    where = f" in {t.loop}" if t.loop and paths else ""
    if not t.loop:
        return t.entry
    if t.count == 0:
        return f"{t.entry}{where} ({t.missed})"
    many = f" ({t.count:,} iterations)" if t.count > 1 else ""
    condition = f" where {t.where}" if t.where else ""
    return f"{t.entry}{where} at {_at_text(t.at)}{condition}{many}"


# ------------------------------------------------------------------ the scopes
@dataclass
class _Scope:
    path: str  # "" for the top level
    depth: int  # 0 for the top level
    node: int | None  # the loop whose body this is (None: the top level)
    root: int  # the body (or the expression)
    at: dict[int, int]  # index level -> the iteration shown
    parent: _Scope | None = None
    explanation: Explanation | None = None
    leaves: dict[str, int] = field(default_factory=dict)  # variable name -> the node it stands for
    scale: float = 1.0
    factor: float | None = None  # a prod's: the product of the other factors at ``at`` (in ``scale``)
    outer: float = 1.0  # ``scale`` without ``factor``: the loop's own adjoint for f


class _Explainer:
    """The function, the point and the scopes' common work."""

    def __init__(self, expr: Expr, point: Mapping[str, Any]):
        self.f = f = IndexedFunction(expr)
        self.graph, self.root = f.graph, f.root
        point = f.named(point, None, {}, strict=True)  # (entries given on their own applied, unknown names refused)
        self.vectors: dict[str, np.ndarray] = {}
        self.given: dict[str, Any] = {}
        for name in (*f.wrt, *f.data):
            if name not in point:
                raise PointError(f"the point has no value for {name}")
            value = point[name]
            if name in f.spans:
                shape = tuple(hi - lo + 1 for lo, hi in f.spans[name])
                array = np.asarray(value, dtype=np.float64)
                self.vectors[name] = np.full(shape, float(array)) if array.ndim == 0 else array
                self.given[name] = self.vectors[name]
            else:
                self.given[name] = float(value)
        self.value, self.grad = f.value_and_grad(self.given)
        taken = {v.partition("[")[0] for v in f.variables}
        self.names = binders.index_names(taken, binders.MAX_NESTING + 1)
        self.lv = binders.levels(self.graph)
        self.taken = set(self.graph.variables([self.root]))

    def text(self, node: int) -> str:
        return to_infix(self.graph, node, index_names=self.names)

    def place(self, item: int, at: Mapping[int, int]) -> tuple[str, tuple[int, ...]]:
        """The vector and the index an entry reads at the iteration ``at``."""
        g = self.graph
        vector, index = g.args[item][0], g.args[item][1:]
        place = []
        for a in index:
            coef, const = binders.affine(g, a)  # type: ignore[misc]
            place.append(const + sum(c * at[lvl] for lvl, c in coef.items()))
        return g.data[vector], tuple(place)  # type: ignore[return-value]

    def entry_value(self, name: str, place: tuple[int, ...]) -> float:
        lows = [lo for lo, _ in self.f.spans[name]]  # type: ignore[index]
        return float(self.vectors[name][tuple(k - lo for k, lo in zip(place, lows))])  # type: ignore[index]

    def closed(self, node: int, at: Mapping[int, int]) -> int:
        """``node`` with the indices around it set to the iteration ``at``."""
        g = self.graph
        mapping = {g.index(lvl): g.const(float(v)) for lvl, v in at.items()}
        return binders.substitute(g, node, mapping) if mapping else node

    def loop_values(self, loops: list[int], at: Mapping[int, int]) -> list[float]:
        g = self.graph
        closed = [self.closed(n, at) for n in loops]
        scalars = {g.var(name): v for name, v in self.given.items() if name not in self.f.spans}
        vectors = {n: (a, tuple(lo for lo, _ in self.f.spans[n])) for n, a in self.vectors.items()}
        return [float(v) for v in ArrayProgram(g, closed).run(scalars, vectors)] if closed else []  # type: ignore[arg-type]

    def explain_scope(self, scope: _Scope) -> list[int]:
        """Explain ``scope`` (its loops and entries as variables, its indices at ``scope.at``); return
        the loops it reads, in the order of its rows."""
        g = self.graph
        found = binders.scope_nodes(g, scope.root, lambda n: g.op[n] not in BINDERS and g.op[n] != "item")
        loops = sorted(n for n in found if g.op[n] in BINDERS)
        items = [n for n in found if g.op[n] == "item"]
        # The sweep's order follows the variables' names: an entry is named by the place it reads
        # (x[4], else its text where two entries read one place), a loop S1, S2, ...; both are
        # then shown as their text (x[i + 1], sum(j = ...)).
        mapping: dict[int, int] = {}
        point: dict[str, float] = {}
        shown: dict[str, str] = {}  # the variable's name -> its text
        for n in items:
            text = self.text(n)
            vector, place = self.place(n, scope.at)
            name = f"{vector}[{', '.join(map(str, place))}]"
            name = text if name in shown or name in self.taken else name
            while name in shown or name in self.taken:  # (x[i] at i = 3 beside x[3])
                name += "_"
            mapping[n] = g.var(name)
            point[name] = self.entry_value(vector, place)
            shown[name] = text
        for k, (n, value) in enumerate(zip(loops, self.loop_values(loops, scope.at)), 1):
            name = f"S{k}"
            while name in self.taken:
                name += "_"
            mapping[n] = g.var(name)
            point[name] = value
            shown[name] = self.text(n)
        scope.leaves.update((shown[g.data[v]], n) for n, v in mapping.items())  # type: ignore[index]
        for lvl, v in scope.at.items():
            mapping[g.index(lvl)] = g.const(float(v))
        local = binders.substitute(g, scope.root, mapping)
        expr = Expr(g, local)
        for var in expr.variables:
            if var not in point:
                point[var] = float(self.given[var])
        if g.op[local] == "const":
            scope.explanation = _constant(g.data[local])  # type: ignore[arg-type]
        else:
            scope.explanation = _shown_as(explain(expr, point), shown)
        if scope.depth:
            _rename(scope.explanation, LETTERS[scope.depth])
        order = {row.expr: k for k, row in enumerate(scope.explanation.rows)}
        return sorted(loops, key=lambda n: order.get(self.text(n), 0))

    def factor_at(self, loop: int, at: Mapping[int, int]) -> float | None:
        """For a prod, ∂loop/∂(its factor) at the iteration ``at`` (the product of the other
        factors); None for a sum."""
        if self.graph.op[loop] != "prod":
            return None
        return self.loop_values([products.factor_partial(self.graph, loop)], at)[0]

    def adjoint(self, loop: int) -> float:
        """df/d``loop`` of a loop of the top level, through every use (in bodies too): compiled."""
        g = self.graph
        name = "loop_sum"
        while name in self.f.variables:
            name += "_"
        stand_in = g.var(name)
        partial = self._partials(binders.substitute(g, self.root, {loop: stand_in}),
                                 {name: self.loop_values([loop], {})[0]})
        return float(partial[name])

    def given_to(self, h: IndexedFunction) -> dict[str, Any]:
        """The point for ``h``, a function of a part of the expression: each vector cut to ``h``'s span."""
        out: dict[str, Any] = {}
        for name in (*h.wrt, *h.data):
            if name in h.spans and name in self.vectors:
                spans = zip(h.spans[name], self.f.spans[name])
                out[name] = self.vectors[name][tuple(slice(lo - old, hi - old + 1) for (lo, hi), (old, _) in spans)]
            elif name in self.given:
                out[name] = self.given[name]
        return out

    def _partials(self, root: int, extra: Mapping[str, Any]) -> dict[str, Any]:
        """The compiled partials of ``root`` (by name: a number or an array) at the point and ``extra``."""
        h = IndexedFunction(Expr(self.graph, root))
        _, grad = h.value_and_grad({**self.given_to(h), **extra})
        out, at = {}, 0
        for name in h.wrt:
            size = h.length(name)
            out[name] = grad[at:at + size] if name in h.spans else float(grad[at])
            at += size
        return out

    def routes(self, chain: list[int], items: Mapping[int, str]) -> dict[str, tuple[np.ndarray, int]]:
        """The compiled partials along copies of the vectors: each item of ``items`` (of the body of
        the last loop of ``chain``) reads its copy, named there, in that body only (not in the loops
        inside it); per copy, its partials and its first index.  One function for the whole body."""
        g = self.graph
        old: int = -1
        new: int = -1
        swaps = {item: binders.item(g, g.vector(copy), *g.args[item][1:]) for item, copy in items.items()}
        for loop in reversed(chain):
            body = _swapped(g, g.args[loop][0], swaps)
            level, low, high = g.data[loop]  # type: ignore[misc]
            old, new = loop, binders.reduce(g, g.op[loop], level, low, high, body)
            swaps = {old: new}
            if self.lv[old] < 0:  # a loop closed in itself (the outermost is) is the same node wherever it is read
                break
        h = IndexedFunction(Expr(g, binders.substitute(g, self.root, {old: new})))
        given = self.given_to(h)
        for item, copy in items.items():
            name = g.data[g.args[item][0]]
            (lo, hi), (first, _) = h.spans[copy][0], self.f.spans[name][0]  # type: ignore[index]
            given[copy] = self.vectors[name][lo - first:hi - first + 1]  # type: ignore[index]
        _, grad = h.value_and_grad(given)
        out, at = {}, 0
        for name in h.wrt:
            if name in items.values():
                out[name] = (grad[at:at + h.length(name)], h.spans[name][0][0])
            at += h.length(name)
        return out


def _constant(value: float) -> Explanation:
    """The explanation of a body that is a number at the iteration shown (``x[j]*(i - j)`` at i = j)."""
    row = Row("z1", format_number(value), value, 1.0, seed=True)
    return Explanation(format_number(value), {}, "reverse", [row], [row], {}, {})


def _shown_as(steps: Explanation, shown: Mapping[str, str]) -> Explanation:
    """``steps`` with its variables named as ``shown`` has them (their rows and partials)."""
    for row in steps.rows:
        row.expr = shown.get(row.expr, row.expr) if row.expr in steps.point else row.expr
    steps.point = {shown.get(k, k): v for k, v in steps.point.items()}
    steps.result = {shown.get(k, k): v for k, v in steps.result.items()}
    steps.result_names = {shown.get(k, k): v for k, v in steps.result_names.items()}
    return steps


def _swapped(graph: Graph, root: int, swaps: Mapping[int, int]) -> int:
    """``root`` with each node of ``swaps`` replaced by its image in its own scope: the loops in it
    are kept as they are."""
    op_of, args_of, data_of = graph.op, graph.args, graph.data
    done: dict[int, int] = {}
    for node in binders.scope_nodes(graph, root, lambda n: n not in swaps and op_of[n] not in BINDERS):
        if node in swaps:
            done[node] = swaps[node]
            continue
        args = args_of[node]
        if op_of[node] in BINDERS or not args:
            done[node] = node
            continue
        changed = tuple(done.get(a, a) for a in args)
        if changed == args:
            done[node] = node
        elif op_of[node] == "item":
            done[node] = binders.item(graph, changed[0], *changed[1:])
        else:
            done[node] = graph.build(op_of[node], data_of[node], changed)
    return done[root]


def _rename(body: Explanation, letter: str) -> None:
    """The body's rows named ``letter``1, ``letter``2, ... (the top level's are z1, z2, ...)."""
    names = {row.name: letter + row.name[1:] for row in body.rows}

    def renamed(text: str) -> str:
        return re.sub(r"\bz\d+\b", lambda m: names.get(m.group(0), m.group(0)), text)

    for row in body.rows:
        row.name = names[row.name]
        row.expr = row.expr if row.expr in body.point else renamed(row.expr)
        for term in row.terms:
            term.source = names.get(term.source, term.source)
            term.local = renamed(term.local)
    body.result_names = {k: names.get(v, v) for k, v in body.result_names.items()}


# ------------------------------------------------------------------ the explanation
def explain_loops(expr: Expr, point: Mapping[str, Any], iteration: int | None = None) -> LoopExplanation:
    """The step-by-step sweep of ``expr`` (with sums kept as loops, inside loops too) at ``point``
    (a number or an array per vector: a number sets every entry): each body at ``iteration`` of its
    index and of the indices around it (the nearest in each range; by default each loop's first),
    and the gathers of the entries ``x[iteration]`` (by default the first loop's first index)."""
    if iteration is not None and (isinstance(iteration, bool) or not isinstance(iteration, numbers.Integral)):
        raise SymadError(f"iteration must be a whole number (an index value), got {iteration!r:.40}")
    ex = _Explainer(expr, point)
    g = ex.graph
    top = _Scope("", 0, None, ex.root, {})
    scopes, steps = [top], []
    owner: dict[int, _Scope] = {}  # each loop: the scope that explains its body (the first that reads it)
    captured: set[int] = set()  # loops of the top level read inside a body too
    todo = [top]
    while todo:  # a worklist: a body's loops are explained after it, one level down
        scope = todo.pop(0)
        loops = ex.explain_scope(scope)
        assert scope.explanation is not None
        here = -1 if scope.node is None else g.data[scope.node][0]  # type: ignore[index]
        for loop in loops:
            if ex.lv[loop] < here:  # captured from around the body: its adjoint here is one of its parts
                if ex.lv[loop] >= 0:
                    raise SymadError(f"symad explain does not show yet a loop that a loop inside its body reads "
                                     f"without its index ({ex.text(loop)}, in the body of {scope.path}); "
                                     "symad grad and diff take it")
                captured.add(loop)
            if loop in owner:
                continue
            level, low, high = g.data[loop]  # type: ignore[misc]
            if scope.depth + 1 >= len(LETTERS):
                raise SymadError(f"symad explain shows loops nested up to {len(LETTERS) - 1} deep, not "
                                 f"{scope.depth + 1}")
            at = dict(scope.at) if ex.lv[loop] >= 0 else {}
            at[level] = low if iteration is None else min(max(iteration, low), high)
            row = scope.explanation.result_names[ex.text(loop)]
            path = f"{scope.path}/{row}" if scope.path else row
            child = _Scope(path, scope.depth + 1, loop, g.args[loop][0], at, scope)
            owner[loop] = child
            seed = scope.explanation.result[ex.text(loop)]
            child.factor = ex.factor_at(loop, at)
            child.outer = seed * scope.scale
            child.scale = child.outer * (1.0 if child.factor is None else child.factor)
            todo.append(child)
            scopes.append(child)
    for child in scopes[1:]:
        assert child.explanation is not None and child.node is not None and child.parent is not None
        if child.node in captured:  # read in a body too: its adjoint through every use
            child.outer = ex.adjoint(child.node)
            child.scale = child.outer * (1.0 if child.factor is None else child.factor)
        level, low, high = g.data[child.node]  # type: ignore[misc]
        parent = child.parent.explanation
        assert parent is not None
        steps.append(LoopStep(child.path, child.parent.path, ex.text(child.node), ex.names[level], low, high,
                                {ex.names[lvl]: v for lvl, v in sorted(child.at.items())},
                                parent.result[ex.text(child.node)], child.scale, child.explanation, child.factor))
    gathers, gradient, strided = _gathers(ex, scopes, iteration)
    summary = {name: (f"[{ex.vectors[name].size:,} numbers]" if name in ex.vectors else ex.given[name])
               for name in ex.given}
    assert top.explanation is not None
    return LoopExplanation(str(expr), summary, top.explanation, steps, gathers, gradient,
                           has_nested(g, ex.root), strided)


def _gathers(ex: _Explainer, scopes: list[_Scope], iteration: int | None) -> tuple[dict, dict, bool]:
    """The gather of ``x[k]`` for each vector ``x`` differentiated, the partials shown, and whether
    an entry of one index reads ``x[a*i + c]`` with ``|a| > 1``."""
    g, f = ex.graph, ex.f
    offsets, at = {}, 0
    for name in f.wrt:
        offsets[name] = at
        at += f.length(name)
    first = next((g.data[s.node][1] for s in scopes if s.node is not None), None)  # type: ignore[index]
    gathers: dict[str, list[GatherTerm]] = {}
    gradient: dict[str, float] = {}
    copies: dict[str, dict[int, str]] = {}  # per body, the entries whose sums are compiled -> their copies' names
    taken = {*f.variables, *f.data}
    pending: list[tuple[GatherTerm, str, int]] = []  # a term, the copy its entry reads, x[k]'s k
    strided = False
    spans = [(name, *f.spans[name][0]) for name in f.wrt if name in f.spans]
    if iteration is not None and spans and not any(lo <= iteration <= hi for _, lo, hi in spans):
        name, lo, hi = spans[0]
        raise SymadError(f"--iteration {iteration}: {name}[{iteration}] is outside {name}[{lo}..{hi}]")
    for name in f.wrt:
        if name not in f.spans:
            gradient[name] = float(ex.grad[offsets[name]])
            continue
        lo, hi = f.spans[name][0]
        # the entry at the iteration asked for, or, past a shorter vector's end, its nearest
        k = min(max(iteration if iteration is not None else first if first is not None else lo, lo), hi)
        entry = f"{name}[{k}]"
        terms = []
        for scope in (*scopes[1:], scopes[0]):  # the entries beside the loops last
            assert scope.explanation is not None
            for text, item in scope.leaves.items():
                if g.op[item] != "item" or g.data[g.args[item][0]] != name or len(g.args[item]) != 2:
                    continue
                if scope.node is None:  # x[3] beside the loops
                    if text == entry:
                        terms.append(GatherTerm("", text, {}, 1, scope.explanation.result[text]))
                    continue
                where, count, missed = _iterations(ex, _chain(ex, scope), item, k)
                condition = ""
                coef = [c for c in binders.affine(g, g.args[item][1])[0].values() if c]  # type: ignore[union-attr]
                if len(coef) > 1:
                    condition = f"{ex.text(g.args[item][1])} = {k}"
                strided = strided or len(coef) == 1 and abs(coef[0]) > 1
                term = GatherTerm(scope.path, text, where, count, 0.0, missed, condition)
                shown = {ex.names[lvl]: v for lvl, v in sorted(scope.at.items())}
                if count == 1 and where == shown:  # the iteration shown: its body's partial times its loops'
                    term.value = scope.scale * scope.explanation.result[text]
                elif count == 1 and scope.depth == 1:  # a loop of the top level: its body at that iteration
                    other = _Scope(scope.path, 1, scope.node, scope.root,
                                   {lvl: v if isinstance(v, int) else v[0] for lvl, v in
                                    zip(sorted(scope.at), where.values())})
                    ex.explain_scope(other)
                    assert other.explanation is not None
                    scale = scope.scale
                    if scope.factor is not None:  # a prod's: the other factors' product at that iteration
                        scale = scope.outer * ex.factor_at(scope.node, other.at)  # type: ignore[operator]
                    term.value = scale * other.explanation.result[text]
                elif count:  # a compiled sum (the copy is not x': the compiled function's tangents are named so)
                    copy = f"{name}_entry{sum(len(c) for c in copies.values()) + 1}"
                    while copy in taken:
                        copy += "_"
                    copies.setdefault(scope.path, {})[item] = copy
                    pending.append((term, copy, k))
                terms.append(term)
        gathers[entry] = terms
        gradient[entry] = float(ex.grad[offsets[name] + k - lo])
    partials: dict[str, tuple[np.ndarray, int]] = {}
    for scope in scopes:  # one compiled function per body: its entries each read a copy of their vector
        if scope.path in copies:
            partials.update(ex.routes(_chain(ex, scope), copies[scope.path]))
    for term, copy, k in pending:
        values, first_copy = partials[copy]
        term.value = float(values[k - first_copy]) if 0 <= k - first_copy < len(values) else 0.0
    return gathers, gradient, strided


def _chain(ex: _Explainer, scope: _Scope) -> list[int]:
    """The loops around a body, outermost first, its own last (from the innermost loop closed in
    itself: the loops around that one do not change it)."""
    chain = []
    while scope.node is not None:
        chain.append(scope.node)
        if ex.lv[scope.node] < 0:
            break
        scope = scope.parent  # type: ignore[assignment]
    return chain[::-1]


def _iterations(ex: _Explainer, chain: list[int], item: int, k: int) -> tuple[dict[str, Any], int, str]:
    """The iterations of the loops of ``chain`` where ``item`` reads entry ``k``: per index, the one
    value or the range summed over; their count; why none does."""
    g = ex.graph
    ranges = {g.data[n][0]: (g.data[n][1], g.data[n][2]) for n in chain}  # type: ignore[index]
    coef, const = binders.affine(g, g.args[item][1])  # type: ignore[misc]
    coef = {lvl: c for lvl, c in coef.items() if c}
    at: dict[str, Any] = {}
    for lvl, (low, high) in sorted(ranges.items()):
        if lvl not in coef:
            at[ex.names[lvl]] = [low, high]
    if not coef:  # x[3] in a body: every iteration reads it, or none
        if const != k:
            return at, 0, "a fixed entry"
        count = 1
    elif len(coef) == 1:
        (lvl, a), = coef.items()
        low, high = ranges[lvl]
        if (k - const) % a:
            return at, 0, f"{a} does not divide {k - const}"
        i = (k - const) // a
        if not low <= i <= high:
            return at, 0, "outside the range"
        at[ex.names[lvl]] = i
        count = 1
    else:  # several indices: count the solutions, the first index running over its range
        levels = sorted(coef)
        grid = np.zeros(1, dtype=np.int64) + (k - const)
        for lvl in levels[:-1]:
            low, high = ranges[lvl]
            grid = (grid[:, None] - coef[lvl] * np.arange(low, high + 1)[None, :]).reshape(-1)
        last = levels[-1]
        low, high = ranges[last]
        a = coef[last]
        ok = (grid % a == 0) & (low <= grid // a) & (grid // a <= high)
        count = int(ok.sum())
        if not count:
            return at, 0, "no iteration reads it"
    count *= math.prod(high - low + 1 for lvl, (low, high) in ranges.items() if lvl not in coef)
    for lvl in coef if len(coef) > 1 else ():
        at[ex.names[lvl]] = list(ranges[lvl])
    at = {ex.names[lvl]: at[ex.names[lvl]] for lvl in sorted(ranges)}
    return at, count, ""
