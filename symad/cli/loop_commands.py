"""The command line over expressions with a sum kept as a loop (over more than
:data:`symad.core.binders.UNROLL_MAX_TERMS` terms): which commands take them, the point's
vectors (whole, or one number for every entry), and ``grad``/``eval``, ``hessian``, ``jacobian``
and ``minimize`` over loops (``explain`` and the exports have modules of their own)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from symad.cli.common import emit, format_number, json_number, parse_point
from symad.core import binders, indexed
from symad.core.errors import PointError, SymadError, VariableError
from symad.core.latex import latex_block, latex_label
from symad.core.printing import to_infix
from symad.expr import Expr

# the commands that take loops; the others say they do not take them yet
COMMANDS = ("grad", "eval", "diff", "postfix", "save", "graph", "stats", "explain", "hessian", "jacobian",
            "minimize", "export-c", "export-py")


def has_loops(expr: Expr | list[Expr] | None) -> bool:
    """Whether ``expr`` (or any of several outputs) has a sum kept as a loop."""
    exprs = expr if isinstance(expr, list) else [] if expr is None else [expr]
    return any(e.graph.scoped and binders.has_scoped(e.graph, [e.id]) for e in exprs)


def refuse(command: str) -> SymadError:
    """The error for a command that does not take loops yet."""
    return SymadError(f"symad {command} does not support sums kept as loops yet (a sum stays a loop past "
                      f"{binders.UNROLL_MAX_TERMS:,} terms or {binders.UNROLL_MAX_STEPS:,} written-out steps); "
                      f"{', '.join(COMMANDS)} and the Python API (symad.compile) do")


def value_and_grad(args: argparse.Namespace, text: str, expr: Expr, with_grad: bool) -> None:
    """``symad grad``/``eval`` of an expression with loops: a vector is given whole, ``x=[...]``, or
    as one number for every entry, ``x=0.5``."""
    make = importlib.import_module("symad.indexed_function").IndexedFunction  # loaded for loops only
    f, held = _holding(args, lambda wrt, prepare: make(expr, wrt=wrt, prepare=prepare))
    value, grad = f.value_and_grad(indexed_point(f, [*args.at, *args.params]))
    names = [name for variable in f.variables for name in _entries(variable)]
    obj: dict = {"expr": text.strip(), **({"params": held} if held else {}), "value": json_number(value)}
    rows = [("f", format_number(value))]
    if with_grad:
        obj["grad"] = {n: json_number(float(g)) for n, g in zip(names, grad)}
        rows += [(f"df/d{n}", format_number(float(g))) for n, g in zip(names, grad)]
    width = max(len(label) for label, _ in rows)
    emit(args, obj, [f"{label.ljust(width)} = {v}" for label, v in rows] if with_grad else [rows[0][1]], [])


def _holding(args: argparse.Namespace, make: Callable[[list[str] | None, bool], Any]) -> tuple[Any, dict[str, Any]]:
    """The function of loops ``make(wrt, prepare)`` with ``--params`` held (given at the call as
    data, not differentiated), and their values: over every variable, or with ``--params`` read
    over every variable (nothing compiled: to learn its variables) and built without the held ones
    (a function of loops costs the size of its loops to build, not of its vectors)."""
    held = parse_point(getattr(args, "params", None) or [], "--params")
    every = make(None, not held)
    if not held:
        return every, {}
    unknown = [k for k in held if k not in every.wrt]
    if unknown:
        raise VariableError(f"--params names {', '.join(unknown)}, which the expression does not differentiate "
                            f"(it differentiates {', '.join(every.wrt)})", tuple(unknown))
    both = [k for k in parse_point(args.at) if k in held]
    if both:
        raise VariableError(f"{', '.join(both)} is given by both --at and --params: give it once")
    return make([w for w in every.wrt if w not in held], True), held


def indexed_point(f: Any, at: list[str]) -> dict[str, Any]:
    """``--at`` for an IndexedFunction ``f``: a vector given whole (``x=[...]``) or as one number
    for every entry (``x=0.5``), then any of its entries on its own (``x=1,x[3]=2``)."""
    # entries written out beside the loops (x[1], x[2] of a short product) from x=[...] or x=0.5
    point = indexed.expand_point([n for n in (*f.wrt, *f.data) if n not in f.spans], parse_point(at))
    for name, given in point.items():
        if name in f.spans and isinstance(given, float):  # every entry, in the name's shape
            point[name] = np.full([hi - lo + 1 for lo, hi in f.spans[name]], given)
    return f.named(point, None, {}, strict=True)  # (entries given on their own applied, unknown names refused)


def hessian(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """``symad hessian`` of an expression with loops: its bands as indexed expressions
    (``d2f/dx[k]dx[k+1] = ...    for k = 1..n-1``), or with ``--at`` the value and the nonzeros of
    the lower triangle, found from the loops' entries (never n x n)."""
    if args.latex and (args.at or args.params):
        raise PointError("--latex prints the Hessian's expressions: leave out --at and --params")
    if args.params and not args.at:
        raise PointError("--params gives values, which the Hessian as expressions (no --at) does not use: "
                         "add --at for the other variables")
    make = importlib.import_module("symad.indexed_function").IndexedFunction  # loaded for loops only
    f, _ = _holding(args, lambda wrt, prepare: make(expr, wrt=wrt, prepare=prepare and bool(args.at)))
    if args.latex:  # its bands, an aligned block (an n x n matrix it is not)
        bands = f.hessian_roots()
        labels = [rf"\frac{{\partial^2 f}}{{\partial {latex_label(row)}^2}}" if row == col else
                  rf"\frac{{\partial^2 f}}{{\partial {latex_label(row)}\,\partial {latex_label(col)}}}"
                  for row, col, _, _ in bands]
        notes = [rf" \qquad k = {span[0]}, \dots, {span[1]}" if span else "" for _, _, _, span in bands]
        block = latex_block(f.graph, [node for _, _, node, _ in bands], labels, free_names=["k"], notes=notes)
        emit(args, {"expr": text.strip(), "variables": list(f.variables), "latex": block}, [block], [])
        return
    if not args.at:
        bands = f.hessian_text()
        lines = [(f"d2f/d{row}2" if row == col else f"d2f/d{row}d{col}") + f" = {body}"
                 + (f"    for k = {span[0]}..{span[1]}" if span else "") for row, col, body, span in bands]
        obj = {"expr": text.strip(), "variables": list(f.variables),
               "hessian": [{"row": row, "col": col, "expr": body, **({"range": list(span)} if span else {})}
                           for row, col, body, span in bands]}
        emit(args, obj, lines, [])
        return
    point = indexed_point(f, [*args.at, *args.params])
    value = f.value(point)
    rows, cols = f.hessian_pattern()
    values = f.hessian_values(point)
    names = [name for variable in f.variables for name in _entries(variable)]
    obj = {"expr": text.strip(), "variables": list(f.variables), "value": json_number(value),
           "hessian": {"rows": rows.tolist(), "cols": cols.tolist(), "values": [json_number(float(v)) for v in values]}}
    lines = [f"f = {format_number(value)}", f"hessian: {len(values):,} nonzeros of the lower triangle"]
    lines += [(f"d2f/d{names[r]}2" if r == c else f"d2f/d{names[r]}d{names[c]}") + f" = {format_number(float(v))}"
              for r, c, v in zip(rows, cols, values)]
    emit(args, obj, lines, [])


def jacobian(args: argparse.Namespace, text: str, outputs: list[Expr]) -> None:
    """``symad jacobian`` of outputs with loops (``each(i = ...)`` families and scalars): each
    family's row as an indexed expression with its partials along its entries, or with ``--at``
    the values and the Jacobian's nonzeros (read from the loops' entries, never unrolled)."""
    if args.params and not args.at:
        raise PointError("--params gives values, which the Jacobian as expressions (no --at) does not use: "
                         "add --at for the other variables")
    if not args.at:
        lines: list[str] = []
        obj: dict[str, Any] = {"exprs": [str(e) for e in outputs], "rows": []}
        for k, e in enumerate(outputs, 1):
            for label, body, span in _row_partials(e, k):
                lines.append(f"{label} = {body}" + (f"    for {span[0]} = {span[1]}..{span[2]}" if span else ""))
                obj["rows"].append({"label": label, "expr": body, **({"range": list(span[1:])} if span else {})})
        emit(args, obj, lines, [])
        return
    make = importlib.import_module("symad.indexed_vector_function").IndexedVectorFunction  # for loops only
    F, _ = _holding(args, lambda wrt, _prepare: make(outputs, wrt=wrt))  # (it compiles at its first call)
    point = indexed_point(F, [*args.at, *args.params])
    values = F.value(point)
    rows, cols = F.jacobian_pattern()
    entries = F.jacobian_values(point)
    labels = []
    for k, (root, (_, count)) in enumerate(zip(F.roots, F.rows), 1):
        if F.graph.op[root] == "each":
            low = F.graph.data[root][1]
            labels += [f"f{k}[{low + r}]" for r in range(count)]
        else:
            labels.append(f"f{k}")
    names = [name for variable in F.variables for name in _entries(variable)]
    obj = {"exprs": [str(e) for e in outputs], "variables": list(F.variables),
           "values": [json_number(float(v)) for v in values],
           "jacobian": {"rows": rows.tolist(), "cols": cols.tolist(),
                        "values": [json_number(float(v)) for v in entries]}}
    lines = [f"{label} = {format_number(float(v))}" for label, v in zip(labels, values)]
    lines.append(f"jacobian: {len(entries):,} nonzeros")
    lines += [f"d{labels[r]}/d{names[c]} = {format_number(float(v))}" for r, c, v in zip(rows, cols, entries)]
    emit(args, obj, lines, [])


def _row_partials(expr: Expr, k: int) -> list[tuple[str, str, tuple[str, int, int] | None]]:
    """Output ``k`` and its partials as text: an ``each`` family's row in ``i`` and its partial along
    each entry ``x[i + c]``; a scalar with loops its indexed gradient (in ``k``); a scalar without
    loops its partials."""
    g = expr.graph
    if g.op[expr.id] != "each":
        if not has_loops(expr):
            return [(f"f{k}", str(expr), None), *((f"df{k}/d{v}", str(d), None) for v, d in expr.grad().items())]
        f = importlib.import_module("symad.indexed_function").IndexedFunction(expr)
        return [(f"f{k}", str(expr), None),
                *((f"df{k}/d{label}", body, ("k", *span) if span else None) for label, body, span in f.gradient_text())]
    _, low, high = g.data[expr.id]  # type: ignore[misc]
    body = g.args[expr.id][0]
    if any(g.op[n] in ("sum", "prod", "each") for n in g.reachable([body])):
        raise SymadError("the rows of an each(...) with a loop inside are printed at a point only: add --at")
    # its entries x[i + c], then what it reads the same for every i: scalars (y), fixed entries (x[5])
    level = binders.levels(g)
    entries = binders.items(g, body, 0)
    entries += [n for n in g.reachable([body]) if (g.op[n] == "var" or (g.op[n] == "item" and level[n] < 0))
                and n not in entries]
    stand_in = {item: g.var(f"entry'{n}") for n, item in enumerate(entries)}
    flat = binders.substitute(g, body, stand_in)
    partials = importlib.import_module("symad.ad.reverse").gradient(g, flat, list(stand_in.values()))
    back = {v: item for item, v in stand_in.items()}
    out = [(f"f{k}[i]", to_infix(g, body, index_names=["i"]), ("i", low, high))]
    for item, v in stand_in.items():
        partial = binders.substitute(g, partials[v], back)
        out.append((f"df{k}[i]/d{to_infix(g, item, index_names=['i'])}", to_infix(g, partial, index_names=["i"]),
                    ("i", low, high)))
    return out


def _entries(variable: str) -> list[str]:
    """``x[1..3]`` -> ``x[1], x[2], x[3]``; a scalar's name (or an entry's, ``x[3]``) as it is."""
    base, bracket, rest = variable.partition("[")
    if not bracket or ".." not in rest:  # a scalar, or an entry written out beside the loops (x[3])
        return [variable]
    low, high = (int(v) for v in rest[:-1].split(".."))
    return [f"{base}[{k}]" for k in range(low, high + 1)]
