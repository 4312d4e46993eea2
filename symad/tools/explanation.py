"""Explain automatic differentiation step by step: the forward pass and the sweep, as tables.

Every DAG node gets a name z1…zk in the sweep's canonical order.  Reverse mode lists each
node's adjoint z̄ = ∂f/∂z as the sum of its users' contributions (user's
adjoint × local derivative); forward mode lists each node's tangent ż along a
seed direction.  Both end in the derivative.  The steps are those of the one sweep
(:mod:`symad.ad.trace`), so every number is the gradient's, bit for bit.
"""

from __future__ import annotations

import importlib
import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from symad.ad import trace
from symad.ad.local import local_partial
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import SymadError
from symad.core.latex import latex_name, latex_number, to_latex
from symad.core.ops import OPS, PREC_ATOM
from symad.core.printing import format_number, precedence, to_infix
from symad.expr import Expr
from symad.frontend.parser import parse_into

BAR, DOT = "\u0304", "\u0307"  # combining macron (adjoint z̄) and dot above (tangent ż)
BLOCKED = "0 (branch not taken)"  # a contribution a `where` keeps from its arm not taken
# Text tables align a column only up to this width: a wider cell (a node with
# thousands of users) is printed whole but unpadded, and pads no other row.
ALIGN_MAX = 60


def _tex(text: str, factor: bool = False, condition: bool = False) -> str:
    """A row's text (symad's language over z names) in LaTeX, in parentheses as a factor (unless
    an atom or a product) or, with ``condition``, if a comparison (``z_2 = (z_1 > 0) = 0``)."""
    g = Graph()
    node = parse_into(text, g)
    out = to_latex(g, node)
    least = OPS["mul"].prec if factor else OPS["add"].prec if condition else None
    return f"\\left({out}\\right)" if least is not None and precedence(g, node) < least else out


def _tex_factor(value: float) -> str:
    text = latex_number(value)
    return f"\\left({text}\\right)" if text.startswith("-") else text


def number_text(v: float) -> str:
    """A table's number: six significant digits (``0.333333``), ``nan`` as it is."""
    return format_number(float(f"{v:.6g}"), named_constants=False) if v == v else "nan"


def _width(text: str) -> int:
    """Display width: combining marks (the bar of z̄, the dot of ż) take no column."""
    return len(text) - sum(1 for ch in text if unicodedata.combining(ch))


def _ljust(text: str, width: int) -> str:
    return text + " " * (width - _width(text))


def _column(widths: list[int]) -> int:
    """The width a column aligns to: its widest cell, ignoring cells past ALIGN_MAX."""
    return max((w for w in widths if w <= ALIGN_MAX), default=0)


def factor_text(v: float) -> str:
    """:func:`number_text` in parentheses if negative, as a factor of a product is written."""
    text = number_text(v)
    return f"({text})" if text.startswith("-") else text


@dataclass
class Term:
    """One contribution to a sweep row: ``factor_name * local`` evaluated."""

    source: str  # the z name whose adjoint (reverse) or tangent (forward) flows in
    local: str  # the local derivative, in z names
    factor: float
    local_value: float
    contribution: float  # what the sweep added (0 where blocked, or where the partial is the number 0)
    blocked: bool = False  # through a branch not taken (or a zero adjoint from one): contributes 0

    @property
    def value(self) -> float:
        return self.contribution


@dataclass
class Row:
    """A node: its forward value and, in the sweep, its derivative as a sum of terms."""

    name: str
    expr: str
    value: float
    derivative: float | None = None
    terms: list[Term] = field(default_factory=list)
    seed: bool = False


@dataclass
class Explanation:
    """The forward pass and the derivative sweep of an expression at a point."""

    expression: str
    point: dict[str, float]
    mode: str  # "reverse" or "forward"
    rows: list[Row]  # topological order
    sweep: list[Row]  # in sweep order (reverse: from the output down)
    result: dict[str, float]  # gradient (reverse) or {"along": directional derivative}
    result_names: dict[str, str]
    direction: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str) -> str:
        """The derivative symbol of a z name: z̄3 (adjoint) or ż3 (tangent)."""
        return name[0] + (BAR if self.mode == "reverse" else DOT) + name[1:]

    def _sweep_parts(self, row: Row) -> tuple[str, str, str]:
        if row.seed:
            how = "(seed)" if self.mode == "reverse" else "(direction)"
            return self.mark(row.name), how, number_text(row.derivative or 0.0)
        symbolic = " + ".join(f"{self.mark(t.source)}*{t.local}" for t in row.terms)
        numeric = " + ".join(BLOCKED if t.blocked else f"{factor_text(t.factor)}*{factor_text(t.local_value)}"
                             for t in row.terms)
        return self.mark(row.name), f"{symbolic} = {numeric}", number_text(row.derivative or 0.0)

    def to_text(self) -> str:
        """Aligned tables for a terminal (columns align up to ALIGN_MAX characters)."""
        at = ", ".join(f"{k}={number_text(v)}" for k, v in self.point.items())
        lines = [f"forward pass at {at}" if at else "forward pass"]
        width = _column([len(r.expr) for r in self.rows])
        name_width = max(len(r.name) for r in self.rows)
        for r in self.rows:
            lines.append(f"  {r.name.rjust(name_width + 2)} = {r.expr.ljust(width)} = {number_text(r.value)}")
        if self.mode == "reverse":
            lines.append("")
            lines.append("backward sweep: adjoints z̄ = df/dz, from the output down")
        else:
            along = ", ".join(f"{k}={number_text(v)}" for k, v in self.direction.items())
            lines.append("")
            lines.append(f"forward sweep: tangents ż = dz/dt along {along}")
        parts = [self._sweep_parts(r) for r in self.sweep]
        width = _column([_width(p[1]) for p in parts])
        for mark, how, value in parts:
            lines.append(f"  {' ' * (name_width - _width(mark))}  {mark} = {_ljust(how, width)} = {value}")
        lines.append("")
        lines.append(self._result_line())
        return "\n".join(lines)

    def _result_line(self) -> str:
        if self.mode == "reverse":
            items = [f"df/d{v} = {self.mark(self.result_names[v])} = {number_text(g)}" for v, g in self.result.items()]
            return "gradient: " + ", ".join(items) if items else "gradient: (no variables)"
        root = self.rows[-1].name
        return f"directional derivative: df/dt = {self.mark(root)} = {number_text(self.result['along'])}"

    def to_markdown(self) -> str:
        """Markdown tables (for notes and notebooks)."""
        out = [f"**Forward pass** at {', '.join(f'`{k}={number_text(v)}`' for k, v in self.point.items())}", "",
               "| node | operation | value |", "|---|---|---|"]
        out += [f"| {r.name} | `{r.expr}` | {number_text(r.value)} |" for r in self.rows]
        title = "Backward sweep (adjoints z̄ = ∂f/∂z)" if self.mode == "reverse" else "Forward sweep (tangents ż)"
        out += ["", f"**{title}**", "", "| derivative | sum of contributions | value |", "|---|---|---|"]
        for r in self.sweep:
            mark, how, value = self._sweep_parts(r)
            out.append(f"| {mark} | `{how}` | {value} |")
        out += ["", self._result_line()]
        return "\n".join(out)

    def to_latex(self) -> str:
        """The forward pass and the sweep as one LaTeX ``aligned`` block."""
        bar = r"\bar" if self.mode == "reverse" else r"\dot"

        def mark(name: str) -> str:
            return f"{bar}{{z}}_{{{name[1:]}}}"

        at = r",\ ".join(f"{latex_name(k)} = {latex_number(v)}" for k, v in self.point.items())
        lines = [r"&\text{forward pass}" + (f" \\text{{ at }} {at}" if at else "")]
        lines += [f"{_tex(r.name)} &= {_tex(r.expr, condition=True)} = {latex_number(r.value)}" for r in self.rows]
        lines.append(r"&\text{backward sweep: } \bar{z} = \partial f/\partial z" if self.mode == "reverse"
                     else r"&\text{forward sweep: } \dot{z} = dz/dt")
        for r in self.sweep:
            value = latex_number(r.derivative or 0.0)
            if r.seed:
                lines.append(f"{mark(r.name)} &= {value}")
                continue
            terms = [f"{mark(t.source)} \\cdot {_tex(t.local, factor=True)}" for t in r.terms]
            numbers = [r"0\ \text{(branch not taken)}" if t.blocked
                       else f"{_tex_factor(t.factor)} \\cdot {_tex_factor(t.local_value)}" for t in r.terms]
            lines.append(f"{mark(r.name)} &= {' + '.join(terms)} = {' + '.join(numbers)} = {value}")
        return "\\begin{aligned}\n" + " \\\\\n".join(lines) + "\n\\end{aligned}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "expr": self.expression, "mode": self.mode, "at": self.point,
            **({"direction": self.direction} if self.mode == "forward" else {}),
            "forward": [{"id": r.name, "op": r.expr, "value": r.value} for r in self.rows],
            "sweep": [{"id": r.name, "derivative": r.derivative, "seed": r.seed,
                       "terms": [{"from": t.source, "local": t.local, "factor": t.factor,
                                  "local_value": t.local_value, "contribution": t.value,
                                  **({"branch_not_taken": True} if t.blocked else {})} for t in r.terms]}
                      for r in self.sweep],
            ("gradient" if self.mode == "reverse" else "derivative"):
                self.result if self.mode == "reverse" else self.result["along"],
        }

    def to_json(self) -> str:
        """One JSON object (non-finite numbers as strings)."""
        return json.dumps(finite_json(self.to_dict()))


def finite_json(obj: Any) -> Any:
    """``obj`` (numbers, dicts, lists) with non-finite numbers as text, for JSON."""
    if isinstance(obj, float) and obj != obj or obj in (float("inf"), float("-inf")):
        return format_number(obj) if isinstance(obj, float) else obj
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [finite_json(v) for v in obj]
    return obj


def explain(expr: Expr, point: Mapping[str, Any], mode: str = "reverse",
            direction: Mapping[str, float] | None = None, iteration: int | None = None) -> Any:
    """The step-by-step tables of ``mode`` ("reverse" or "forward") at ``point``.  An expression
    with sums kept as loops is explained in reverse mode, each loop's body at ``iteration``
    (:func:`symad.tools.loop_explanation.explain_loops`, loops inside loops too; a vector given
    whole or as one number).

    >>> from symad import parse
    >>> print(explain(parse("(x+y)+x*(x+y)"), {"x": 1, "y": 2}).to_text().splitlines()[-1])
    gradient: df/dx = z̄1 = 5, df/dy = z̄2 = 2
    """
    if mode not in ("reverse", "forward"):
        raise ValueError("mode must be 'reverse' or 'forward'")
    g, root = expr.graph, expr.id
    if g.scoped and binders.has_scoped(g, [root]):
        if mode != "reverse":
            raise SymadError("forward mode is not explained over sums kept as loops yet: use reverse mode")
        return importlib.import_module("symad.tools.loop_explanation").explain_loops(expr, point, iteration)
    if g.op[root] == "const":
        raise SymadError(f"nothing to explain: the expression is the number {format_number(g.data[root])} "
                         "(no variable, no step, no derivative)")
    point = {v: float(point[v]) for v in expr.variables}
    if mode == "reverse":
        steps = trace.reverse(g, root, point)
    else:
        along = {v: float((direction or {}).get(v, 0.0)) for v in expr.variables}
        steps = trace.forward(g, root, point, along)
    order = [n for n in steps.order if g.op[n] != "const"]  # numbers print inline
    names = {node: f"z{k + 1}" for k, node in enumerate(order)}
    rows = {node: Row(names[node], _describe(g, node, names), steps.values[node]) for node in order}
    for node, derivative in steps.derivative.items():
        rows[node].derivative = derivative

    def local(node: int, k: int) -> str:
        d = local_partial(g, node, k)  # its text only: the number is the sweep's
        text = to_infix(g, d, names) if d not in names else names[d]
        if d not in names and g.op[d] != "var" and precedence(g, d) < PREC_ATOM or text.startswith("-"):
            text = f"({text})"
        return text

    for e in steps.edges:
        to, source = (e.arg, e.user) if mode == "reverse" else (e.user, e.arg)
        rows[to].terms.append(Term(names[source], local(e.user, e.k), e.factor, e.partial,
                                   0.0 if e.term is None else e.term, e.blocked))
    var_nodes = {g.data[n]: n for n in order if g.op[n] == "var"}
    if mode == "reverse":
        rows[root].seed = True
        sweep = [rows[n] for n in reversed(order) if n in steps.derivative]
        result = {v: steps.derivative.get(var_nodes[v], 0.0) for v in expr.variables}
        result_names = {v: names[var_nodes[v]] for v in expr.variables}
        along = {}
    else:
        for v, n in var_nodes.items():
            rows[n].derivative, rows[n].seed = along[v], True  # type: ignore[index]
        sweep = [rows[n] for n in order if n in steps.derivative or g.op[n] == "var"]
        result = {"along": steps.derivative.get(root, 0.0)}
        result_names = {}
    return Explanation(str(expr), point, mode, [rows[n] for n in order], sweep, result, result_names, along)


def _describe(g: Any, node: int, names: dict[int, str]) -> str:
    if g.op[node] == "var":
        return str(g.data[node])
    if g.op[node] == "const":
        return format_number(g.data[node])
    return to_infix(g, node, names)  # the root itself always prints as its operation
