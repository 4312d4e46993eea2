"""Explain reverse mode over an expression with sums kept as loops, step by step.

The sweep is shown in three parts.  The top level: each loop one step (``z2 = sum(i = 1..n, ...)``)
of the forward pass and of the backward sweep, where it receives its adjoint z̄2.  Each loop's
body once, for a generic index ``i`` with the values of one iteration (``--iteration k``, by
default the loop's first): its forward pass and its sweep, seeded with the loop's adjoint (a
sum passes its adjoint to every term).  Then the gather: the partial along an entry ``x[k]`` is
the sum, over the body's entries ``x[i + c]``, of their adjoints at ``i = k - c`` (an iteration
outside the loop's range contributes nothing: the edges of the indexed gradient).  The partials
printed are :class:`~symad.indexed_function.IndexedFunction`'s (``symad grad``'s), bit for bit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from symad.backends.arrays import ArrayProgram
from symad.core import binders
from symad.core.dag import BINDERS
from symad.core.errors import PointError, SymadError
from symad.core.printing import format_number, to_infix
from symad.core.unrolling import rebuilt
from symad.expr import Expr
from symad.indexed_function import IndexedFunction
from symad.tools.explanation import Explanation, explain, factor_text, finite_json, number_text


@dataclass
class LoopStep:
    """One loop of the top level: its body explained at one iteration."""

    name: str  # the loop's z name at the top level
    text: str  # the loop as text
    index: str
    low: int
    high: int
    iteration: int
    seed: float  # the loop's adjoint, which each term of the body receives
    body: Explanation  # of the body at the iteration (z names renamed w1, w2, ...)


@dataclass
class GatherTerm:
    loop: str  # the loop's z name, or "" for an entry outside any loop
    entry: str  # the body's entry, such as x[i + 1]
    iteration: int | None  # where it reads x[k] (None: no iteration does, no contribution)
    value: float
    missed: str = "outside the range"  # why no iteration reads x[k]


@dataclass
class LoopExplanation:
    """The top level's sweep, each loop's body at one iteration, the gathers and the partials."""

    expression: str
    point: dict[str, Any]  # scalars as numbers, vectors as a summary
    top: Explanation
    loops: list[LoopStep]
    gathers: dict[str, list[GatherTerm]]  # entry x[k] -> its contributions
    gradient: dict[str, float]  # the partials shown: the gathered entries' and the scalars'
    loop_names: dict[str, str] = field(default_factory=dict)  # the top level's stand-in variable -> z name
    strided: bool = False  # whether an entry reads x[a*i + c] with |a| > 1

    def to_text(self) -> str:
        """The tables for a terminal."""
        lines = [f"forward pass at {_point_text(self.point)}"]
        top = self.top.to_text().splitlines()
        lines += top[1:top.index("")]
        for step in self.loops:
            lines += ["", f"loop {step.name} = {step.text}", f"  its body at {step.index} = {step.iteration} "
                      f"(of {step.low}..{step.high}):"]
            body = step.body.to_text().splitlines()
            lines += body[1:body.index("")]
        lines += ["", "backward sweep: adjoints z̄ = df/dz, from the output down"]
        sweep = top[top.index("") + 2:]
        lines += sweep[:sweep.index("")]
        for step in self.loops:
            bar = f"{step.name[0]}\u0304{step.name[1:]}"
            scaled = "" if step.seed == 1 else f" (the adjoints below are for 1: times {bar})"
            lines += ["", f"body of {step.name} at {step.index} = {step.iteration}: each term receives {bar} = "
                      f"{number_text(step.seed)}{scaled}"]
            body = step.body.to_text().splitlines()
            sweep = body[body.index("") + 2:]
            lines += sweep[:sweep.index("")]
        if self.gathers and self.strided:
            lines += ["", "gather: df/dx[k] adds each entry x[a*i + c]'s adjoint at i = (k - c)/a"]
        elif self.gathers:
            lines += ["", "gather: df/dx[k] adds each entry x[i + c]'s adjoint at i = k - c"]
        for entry, terms in self.gathers.items():
            parts = [f"{t.entry} at i = {t.iteration}" if t.iteration is not None
                     else f"{t.entry} ({t.missed})" if t.loop else t.entry for t in terms]
            numbers = [factor_text(t.value) for t in terms]
            lines.append(f"  df/d{entry} = {' + '.join(parts) or '0'} = {' + '.join(numbers) or '0'} "
                         f"= {number_text(self.gradient[entry])}")
        lines += ["", "gradient: " + ", ".join(f"df/d{k} = {format_number(v, named_constants=False)}"
                                           for k, v in self.gradient.items())]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the top level's, each loop's and the gathers' steps, and the partials."""
        top = self.top.to_dict()
        return {
            "expr": self.expression, "mode": "reverse", "at": self.point,
            "forward": top["forward"], "sweep": top["sweep"],
            "loops": [{"id": s.name, "loop": s.text, "index": s.index, "range": [s.low, s.high],
                       "iteration": s.iteration, "seed": s.seed,
                       "forward": s.body.to_dict()["forward"], "sweep": s.body.to_dict()["sweep"]}
                      for s in self.loops],
            "gather": {entry: [{"loop": t.loop, "entry": t.entry, "iteration": t.iteration, "value": t.value}
                               for t in terms] for entry, terms in self.gathers.items()},
            "gradient": self.gradient,
        }

    def to_json(self) -> str:
        return json.dumps(finite_json(self.to_dict()))


def _point_text(point: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v if isinstance(v, str) else number_text(v)}" for k, v in point.items())


def explain_loops(expr: Expr, point: Mapping[str, Any], iteration: int | None = None) -> LoopExplanation:
    """The step-by-step sweep of ``expr`` (with sums kept as loops) at ``point`` (a number or an
    array per vector: a number sets every entry), each loop's body at ``iteration`` (the nearest
    in its range) and the gathers of the entries ``x[iteration]`` (by default the first loop's
    first index)."""
    f = IndexedFunction(expr)
    graph, root = f.graph, f.root
    vectors: dict[str, np.ndarray] = {}
    given: dict[str, Any] = {}
    for name in (*f.wrt, *f.data):
        if name not in point:
            raise PointError(f"the point has no value for {name}")
        value = point[name]
        if name in f.spans:
            shape = tuple(hi - lo + 1 for lo, hi in f.spans[name])
            array = np.asarray(value, dtype=np.float64)
            vectors[name] = np.full(shape, float(array)) if array.ndim == 0 else array
            given[name] = vectors[name]
        else:
            given[name] = float(value)
    value, grad = f.value_and_grad(given)
    lv = binders.levels(graph)
    reach = graph.reachable([root])
    loops = [n for n in reach if graph.op[n] in BINDERS and lv[n] < 0]
    for loop in loops:
        if any(graph.op[n] in BINDERS for n in graph.reachable([graph.args[loop][0]]) if n != loop):
            raise SymadError("symad explain shows one level of loops: a loop inside a loop's body is not "
                             "explained yet (symad grad and diff take it)")
    taken = set(graph.variables([root]))
    stand_in = {}
    for k, loop in enumerate(loops, 1):
        name = f"S{k}"
        while name in taken:
            name += "_"
        stand_in[loop] = name
    firsts = {name: f.spans[name][0][0] for name in f.spans}
    mapping = {loop: graph.var(name) for loop, name in stand_in.items()}
    for n in reach:  # x[3] beside a loop: the variable x[3] at the top level
        if graph.op[n] == "item" and lv[n] < 0:
            vector, at = graph.args[n]
            mapping[n] = graph.var(f"{graph.data[vector]}[{int(graph.data[at])}]")
    top_root = binders.substitute(graph, root, mapping)
    scalars = {graph.var(name): given[name] for name in given if name not in f.spans}
    loop_values = ArrayProgram(graph, loops).run(scalars, {n: (a, (firsts[n],) if a.ndim == 1 else
                                                               tuple(lo for lo, _ in f.spans[n]))
                                                          for n, a in vectors.items()}) if loops else []
    top_point = {name: given[name] for name in given if name not in f.spans}
    top_point.update((stand_in[loop], float(v)) for loop, v in zip(loops, loop_values))
    top_expr = Expr(graph, top_root)
    for var in top_expr.variables:
        if var not in top_point:
            base, _, rest = var.partition("[")
            top_point[var] = float(vectors[base][int(rest[:-1]) - firsts[base]])
    top = explain(top_expr, top_point)
    shown = {stand_in[loop]: top.result_names[stand_in[loop]] for loop in loops}
    for row in top.rows:
        for loop in loops:
            if row.expr == stand_in[loop]:
                row.expr = str(Expr(graph, loop))

    def body_at(loop: int, i: int) -> tuple[Explanation, dict[str, str]]:
        """The body of ``loop`` at index ``i``, explained; its entries' names -> their generic text."""
        body = graph.args[loop][0]
        inst = Expr(graph, rebuilt(graph, body, graph.const(float(i)), 0, entries=True))
        generic = {}
        for it in binders.items(graph, body, 0):
            vector, at = graph.args[it][0], graph.args[it][1:]
            name = graph.data[vector]
            forms = [binders.affine(graph, a) for a in at]
            place = [const + sum(c * i for c in coef.values()) for coef, const in forms]  # type: ignore[misc]
            generic[f"{name}[{', '.join(map(str, place))}]"] = to_infix(graph, it, index_names=["i"])
        pt = {}
        for var in inst.variables:
            if var in given and var not in f.spans:
                pt[var] = given[var]
                continue
            base, _, rest = var.partition("[")
            index = tuple(int(p) for p in rest[:-1].split(","))
            array = vectors[base]
            pt[var] = float(array[tuple(k - lo for k, (lo, _) in zip(index, f.spans[base]))])
        return explain(inst, pt), generic

    steps = []
    for loop in loops:
        _, low, high = graph.data[loop]  # type: ignore[misc]
        k = low if iteration is None else min(max(iteration, low), high)  # the nearest iteration of the loop
        body, generic = body_at(loop, k)
        _rename(body, generic)
        steps.append(LoopStep(shown[stand_in[loop]], str(Expr(graph, loop)), "i", low, high, k,
                              top.result[stand_in[loop]], body))

    # the gathers: the entry x[k] of each vector, k the iteration shown (or the first entry)
    offsets, at = {}, 0
    for name in f.wrt:
        offsets[name] = at
        at += f.spans[name][0][1] - f.spans[name][0][0] + 1 if name in f.spans else 1
    gathers: dict[str, list[GatherTerm]] = {}
    gradient: dict[str, float] = {}
    strided = False
    for name in f.wrt:
        if name not in f.spans:
            gradient[name] = float(grad[offsets[name]])
            continue
        lo, hi = f.spans[name][0]
        k = iteration if iteration is not None else min(max(graph.data[loops[0]][1] if loops else lo, lo), hi)
        if not lo <= k <= hi:
            raise SymadError(f"--iteration {k}: {name}[{k}] is outside {name}[{lo}..{hi}]")
        entry = f"{name}[{k}]"
        terms = []
        for loop in loops:
            _, low, high = graph.data[loop]  # type: ignore[misc]
            zname = shown[stand_in[loop]]
            for it in binders.items(graph, graph.args[loop][0], 0):
                vector, index = graph.args[it][0], graph.args[it][1:]
                if graph.data[vector] != name or len(index) != 1:
                    continue
                coef, const = binders.affine(graph, index[0])  # type: ignore[misc]
                a = coef.get(0, 0)
                strided = strided or abs(a) > 1
                text = to_infix(graph, it, index_names=["i"])
                i = (k - const) // a if a and (k - const) % a == 0 else None
                if i is None or not low <= i <= high:
                    missed = "outside the range" if i is not None or not a else f"{a} does not divide {k - const}"
                    terms.append(GatherTerm(zname, text, None, 0.0, missed))
                    continue
                sub, _ = body_at(loop, i)
                terms.append(GatherTerm(zname, text, i, top.result[stand_in[loop]] * sub.result.get(entry, 0.0)))
        if entry in top.result:
            terms.append(GatherTerm("", entry, None, top.result[entry]))
        gathers[entry] = terms
        gradient[entry] = float(grad[offsets[name] + k - lo])
    summary = {name: (f"[{vectors[name].size:,} numbers]" if name in vectors else given[name]) for name in given}
    out = LoopExplanation(str(expr), summary, top, steps, gathers, gradient, shown, strided)
    out.top.point = top_point
    return out


def _rename(body: Explanation, generic: Mapping[str, str]) -> None:
    """The body's rows named w1, w2, ... (the top level's are z1, z2, ...), its entries generic."""
    names = {row.name: "w" + row.name[1:] for row in body.rows}

    def renamed(text: str) -> str:
        return re.sub(r"\bz\d+\b", lambda m: names.get(m.group(0), m.group(0)), text)

    for row in body.rows:
        row.name = names[row.name]
        row.expr = generic.get(row.expr) or renamed(row.expr)
        for term in row.terms:
            term.source = names.get(term.source, term.source)
            term.local = renamed(term.local)
    body.result_names = {k: names.get(v, v) for k, v in body.result_names.items()}
